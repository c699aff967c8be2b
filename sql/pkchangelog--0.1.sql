/* pkchangelog 0.1: catalog schema and SQL surface */

\echo Use "CREATE EXTENSION pkchangelog" to load this file. \quit

-- The catalog lives in its own schema whatever schema the extension's
-- functions are created in, so tools can find it by name.
CREATE SCHEMA pkchangelog;
REVOKE ALL ON SCHEMA pkchangelog FROM PUBLIC;
GRANT USAGE ON SCHEMA pkchangelog TO PUBLIC;

-- The library's version.  Creating (and calling) it loads the library, so a
-- server without shared_preload_libraries = 'pkchangelog' fails here, at
-- CREATE EXTENSION, with the error and hint of _PG_init.
CREATE FUNCTION pkchangelog.library_version() RETURNS text
	AS 'MODULE_PATHNAME', 'pk_library_version'
	LANGUAGE C STRICT IMMUTABLE;
DO $$
BEGIN
	IF pkchangelog.library_version() OPERATOR(pg_catalog.<>) '0.1' THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.1',
			pkchangelog.library_version();
	END IF;
END $$;

-- ---------------------------------------------------------------------------
-- Catalog.  Plain heap tables, so that the visibility of runs and snapshots
-- *is* PostgreSQL MVCC.  The C code reads and writes them directly; the
-- column order is fixed by the Anum_* constants in src/catalog.h.
-- ---------------------------------------------------------------------------

-- One row per pkmerge table: the counters its commits advance, and its data
-- runs.  Updated only under the table's commit lock, by every commit and
-- compaction, so the version of the row a snapshot sees names the data
-- runs it sees (readers cache run lists by that version).
CREATE TABLE pkchangelog.tables (
	relid oid PRIMARY KEY,
	last_snapshot_id bigint NOT NULL DEFAULT 0,	-- ids are dense from 1
	last_seq bigint NOT NULL DEFAULT 0,			-- sequence numbers of rows
	total_record_count bigint NOT NULL DEFAULT 0,	-- records in live data runs
	last_full_compaction bigint NOT NULL DEFAULT 0,	-- snapshot of the last compaction into the bottom
	data_runs bigint[] NOT NULL DEFAULT '{}'	-- run_id of every data run
);

-- One row per table snapshot (one per committing transaction).
CREATE TABLE pkchangelog.snapshots (
	relid oid NOT NULL,
	snapshot_id bigint NOT NULL,
	commit_kind text NOT NULL CHECK (commit_kind IN ('APPEND', 'COMPACT', 'OVERWRITE')),
	commit_time timestamptz NOT NULL,
	commit_user name NOT NULL,
	commit_xid xid8 NOT NULL,
	total_record_count bigint NOT NULL,
	delta_record_count bigint NOT NULL,
	changelog_record_count bigint NOT NULL,
	producer text NOT NULL,		-- changelog_producer in force at the commit
	duration_ms float8 NOT NULL,	-- of the commit step / the compaction
	PRIMARY KEY (relid, snapshot_id)
);

-- One row per live run.  A run is blocks [start_block, start_block + nblocks)
-- of the relation's main fork (relfilenode, so that a TRUNCATE's new storage
-- is told apart) and row numbers [row_base, row_base + record_count).
-- kind: 'data' (read by queries), 'changelog' (RowKind records of one
-- snapshot, in production order), 'delta' (a commit's data run that
-- compaction replaced, kept while its snapshot is retained: the change
-- stream of producer none).  from_commit: written by a commit (its
-- created_snapshot is an APPEND or OVERWRITE one), not by compaction.
CREATE TABLE pkchangelog.runs (
	relid oid NOT NULL,
	run_id bigint NOT NULL,
	relfilenode oid NOT NULL,
	level int NOT NULL,
	kind text NOT NULL CHECK (kind IN ('data', 'changelog', 'delta')),
	from_commit boolean NOT NULL,
	start_block bigint NOT NULL,
	nblocks int NOT NULL,
	record_count bigint NOT NULL,
	size_bytes bigint NOT NULL,
	row_base bigint NOT NULL,
	min_seq bigint NOT NULL,
	max_seq bigint NOT NULL,
	index_offset bigint NOT NULL,	-- byte offsets in the run's stream
	bloom_offset bigint NOT NULL,
	created_snapshot bigint NOT NULL,
	min_key text,
	max_key text,
	PRIMARY KEY (relid, run_id)
);

-- readers look up a table's data runs only: changelog and delta runs of
-- retained snapshots can be many.  (Not a partial index: the C code inserts
-- with CatalogTupleInsert, which does not evaluate index predicates.)
-- run_id makes every entry distinct: with (relid, kind) alone, btree
-- deduplication packs a table's data runs into posting lists, and every
-- retired run leaves a dead TID in them that each reader walks over again
-- (_bt_killitems cannot mark part of a posting list dead).
CREATE INDEX runs_kind ON pkchangelog.runs (relid, kind, run_id);

-- expiration and the change stream look up the runs of a few snapshots:
-- without this index each lookup reads every run of the table (a 'none'
-- table keeps a delta run per retained commit, so expiring a backlog would
-- read them all once per expired snapshot).  run_id keeps entries distinct.
CREATE INDEX runs_snapshot ON pkchangelog.runs (relid, created_snapshot, run_id);

-- Every commit inserts runs and snapshot rows and updates its tables row;
-- every compaction deletes runs rows.  Vacuum them early, so that readers
-- do not step over many dead entries (runs_kind has one key per table and
-- kind), and leave room on the tables pages for HOT updates.
ALTER TABLE pkchangelog.tables SET (fillfactor = 50,
	autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
	autovacuum_vacuum_cost_delay = 0);
ALTER TABLE pkchangelog.runs SET (autovacuum_vacuum_scale_factor = 0,
	autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE pkchangelog.snapshots SET (autovacuum_vacuum_scale_factor = 0.05,
	autovacuum_vacuum_cost_delay = 0);

CREATE SEQUENCE pkchangelog.run_id_seq;

-- ---------------------------------------------------------------------------
-- Access methods
-- ---------------------------------------------------------------------------

CREATE FUNCTION pkmerge_tableam_handler(internal) RETURNS table_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;
CREATE ACCESS METHOD pkmerge TYPE TABLE HANDLER pkmerge_tableam_handler;
COMMENT ON ACCESS METHOD pkmerge IS 'primary-key rows in merge-tree sorted runs';

CREATE FUNCTION pkmerge_key_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;
CREATE ACCESS METHOD pkmerge_key TYPE INDEX HANDLER pkmerge_key_handler;
COMMENT ON ACCESS METHOD pkmerge_key IS 'virtual primary-key index of a pkmerge table';

-- pkmerge_key orders keys exactly as btree does, so its operator classes are
-- btree's default ones, copied: same families, same operators and strategy
-- numbers (1 <, 2 <=, 3 =, 4 >=, 5 >, cross-type members included), and the
-- comparison function as support 1.  Created in the extension's schema
-- (target).  The copying runs with search_path pinned to pg_catalog: the
-- script's own search_path is the extension's schema, where another role's
-- functions or operators (a better-matching format(), say) would otherwise
-- run with the rights of the role creating the extension.
CREATE FUNCTION pkchangelog.copy_btree_opclasses(target name) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	fam record;
	opc record;
	m record;
	items text;
BEGIN
	FOR fam IN
		SELECT f.oid, f.opfname, n.nspname
		FROM pg_opfamily f JOIN pg_namespace n ON n.oid = f.opfnamespace
		WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')
		  AND EXISTS (SELECT 1 FROM pg_opclass c
					  WHERE c.opcfamily = f.oid AND c.opcdefault)
	LOOP
		EXECUTE format('CREATE OPERATOR FAMILY %I.%I USING pkmerge_key', target, fam.opfname);
		FOR opc IN
			SELECT c.opcname, c.opcintype
			FROM pg_opclass c
			WHERE c.opcfamily = fam.oid AND c.opcdefault
		LOOP
			SELECT string_agg(format('OPERATOR %s %s (%s, %s)', o.amopstrategy,
									 (SELECT format('%I.%s', opn.nspname, op.oprname) FROM pg_operator op JOIN pg_namespace opn ON opn.oid = op.oprnamespace WHERE op.oid = o.amopopr),
									 o.amoplefttype::regtype, o.amoprighttype::regtype),
							  ', ' ORDER BY o.amopstrategy)
				|| ', ' ||
				   (SELECT string_agg(format('FUNCTION 1 %s', p.amproc::regprocedure), ', ')
					FROM pg_amproc p
					WHERE p.amprocfamily = fam.oid AND p.amprocnum = 1
					  AND p.amproclefttype = opc.opcintype
					  AND p.amprocrighttype = opc.opcintype)
			INTO items
			FROM pg_amop o
			WHERE o.amopfamily = fam.oid
			  AND o.amoplefttype = opc.opcintype AND o.amoprighttype = opc.opcintype;
			EXECUTE format('CREATE OPERATOR CLASS %I.%I DEFAULT FOR TYPE %s USING pkmerge_key FAMILY %I.%I AS %s',
						   target, opc.opcname, opc.opcintype::regtype, target, fam.opfname, items);
		END LOOP;
		-- cross-type members, so that "bigint_col = 42" (int8 = int4) can use the index
		FOR m IN
			SELECT o.amopstrategy, o.amopopr, o.amoplefttype, o.amoprighttype
			FROM pg_amop o
			WHERE o.amopfamily = fam.oid AND o.amoplefttype <> o.amoprighttype
		LOOP
			EXECUTE format('ALTER OPERATOR FAMILY %I.%I USING pkmerge_key ADD OPERATOR %s %s (%s, %s)',
						   target, fam.opfname, m.amopstrategy, (SELECT format('%I.%s', opn.nspname, op.oprname) FROM pg_operator op JOIN pg_namespace opn ON opn.oid = op.oprnamespace WHERE op.oid = m.amopopr),
						   m.amoplefttype::regtype, m.amoprighttype::regtype);
		END LOOP;
		FOR m IN
			SELECT p.amproc, p.amproclefttype, p.amprocrighttype
			FROM pg_amproc p
			WHERE p.amprocfamily = fam.oid AND p.amprocnum = 1
			  AND p.amproclefttype <> p.amprocrighttype
		LOOP
			EXECUTE format('ALTER OPERATOR FAMILY %I.%I USING pkmerge_key ADD FUNCTION 1 (%s, %s) %s',
						   target, fam.opfname, m.amproclefttype::regtype, m.amprocrighttype::regtype,
						   m.amproc::regprocedure);
		END LOOP;
	END LOOP;
END $$;
SELECT pkchangelog.copy_btree_opclasses(pg_catalog.current_schema());
DROP FUNCTION pkchangelog.copy_btree_opclasses(name);

-- ---------------------------------------------------------------------------
-- SQL surface (DESIGN §8)
-- ---------------------------------------------------------------------------

-- Who may read what.  The catalog's table-level metadata (counters,
-- snapshots, run sizes and levels) is readable by every role, as
-- pg_stat_user_tables is.  The first and last keys of runs are values of
-- the tables' rows: they are not granted, and pk_runs shows them only to
-- roles that may read the key columns (as pg_stats shows column values).
GRANT SELECT ON pkchangelog.tables, pkchangelog.snapshots TO PUBLIC;
GRANT SELECT (relid, run_id, relfilenode, level, kind, from_commit, start_block,
	nblocks, record_count, size_bytes, row_base, min_seq, max_seq, index_offset,
	bloom_offset, created_snapshot) ON pkchangelog.runs TO PUBLIC;

-- SQL-language functions run with search_path pinned to pg_catalog: an
-- unqualified call (percentile_cont, jsonb_object_agg, an operator) must
-- never resolve to another role's object in a schema on the caller's
-- search_path.

CREATE FUNCTION pkchangelog.pkmerge_relid(rel regclass) RETURNS oid
	AS 'MODULE_PATHNAME', 'pk_pkmerge_relid' LANGUAGE C STRICT STABLE;

CREATE FUNCTION pk_options(rel regclass, OUT key text, OUT value text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_options' LANGUAGE C STRICT STABLE;

CREATE FUNCTION pk_snapshots(rel regclass,
	OUT snapshot_id bigint, OUT commit_kind text, OUT commit_time timestamptz,
	OUT commit_user name, OUT commit_xid xid8, OUT total_record_count bigint,
	OUT delta_record_count bigint, OUT changelog_record_count bigint)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS MATERIALIZED (SELECT pkchangelog.pkmerge_relid(rel) AS relid)
	SELECT s.snapshot_id, s.commit_kind, s.commit_time, s.commit_user, s.commit_xid,
		   s.total_record_count, s.delta_record_count, s.changelog_record_count
	FROM pkchangelog.snapshots s JOIN t ON s.relid = t.relid
	ORDER BY s.snapshot_id
$$;

CREATE FUNCTION pk_runs(rel regclass,
	OUT run_id bigint, OUT level int, OUT kind text, OUT record_count bigint,
	OUT size_bytes bigint, OUT min_key text, OUT max_key text,
	OUT created_snapshot bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_runs' LANGUAGE C STRICT STABLE;

CREATE FUNCTION pk_write(rel regclass, rowkind text, r anyelement) RETURNS void
	AS 'MODULE_PATHNAME', 'pk_write' LANGUAGE C VOLATILE;

CREATE FUNCTION pk_compact(rel regclass, "full" boolean DEFAULT false) RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_compact' LANGUAGE C VOLATILE;

CREATE FUNCTION pk_changes(rel regclass, from_snapshot bigint DEFAULT 0,
	to_snapshot bigint DEFAULT NULL,
	OUT snapshot_id bigint, OUT rowkind text, OUT "row" jsonb)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_changes' LANGUAGE C STABLE;

-- max_snapshots: expire at most that many (the oldest), so that a backlog
-- can be drained in transactions of bounded size; NULL: all that are due
CREATE FUNCTION pk_expire_snapshots(rel regclass, max_snapshots bigint DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_expire_snapshots' LANGUAGE C VOLATILE;

CREATE FUNCTION pkchangelog.block_cache_stats(OUT hits bigint, OUT misses bigint)
	AS 'MODULE_PATHNAME', 'pk_block_cache_stats' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION pk_stats(rel regclass,
	OUT commits bigint, OUT commit_latency_p50_ms float8,
	OUT commit_latency_p95_ms float8, OUT commit_latency_p99_ms float8,
	OUT compactions bigint, OUT compaction_avg_ms float8, OUT compaction_max_ms float8,
	OUT runs_per_level jsonb, OUT changelog_records bigint,
	OUT lookup_cache_hits bigint, OUT lookup_cache_misses bigint,
	OUT bytes_on_disk bigint)
	LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS MATERIALIZED (SELECT pkchangelog.pkmerge_relid(rel) AS relid),
	s AS (SELECT s.* FROM pkchangelog.snapshots s JOIN t USING (relid)),
	c AS (SELECT * FROM s WHERE commit_kind <> 'COMPACT'),
	k AS (SELECT * FROM s WHERE commit_kind = 'COMPACT'),
	r AS (SELECT r.level FROM pkchangelog.runs r JOIN t USING (relid) WHERE r.kind = 'data')
	SELECT (SELECT count(*) FROM c),
		   (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FROM c),
		   (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FROM c),
		   (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) FROM c),
		   (SELECT count(*) FROM k),
		   (SELECT avg(duration_ms) FROM k),
		   (SELECT max(duration_ms) FROM k),
		   (SELECT coalesce(jsonb_object_agg(level, n), '{}')
			FROM (SELECT level, count(*) AS n FROM r GROUP BY level) l),
		   (SELECT coalesce(sum(changelog_record_count), 0)::bigint FROM s),
		   b.hits, b.misses,
		   pg_relation_size(rel)
	FROM pkchangelog.block_cache_stats() b
$$;
COMMENT ON FUNCTION pk_stats(regclass) IS
	'statistics of a pkmerge table over its retained snapshots; the lookup cache counters are the calling backend''s';
