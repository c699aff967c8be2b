/* pkchangelog 0.1: catalog schema and SQL surface */

\echo Use "CREATE EXTENSION pkchangelog" to load this file. \quit

-- The catalog lives in its own schema whatever schema the extension's
-- functions are created in, so tools can find it by name.
CREATE SCHEMA pkchangelog;
REVOKE ALL ON SCHEMA pkchangelog FROM PUBLIC;
GRANT USAGE ON SCHEMA pkchangelog TO PUBLIC;

-- The library's version.  Creating (and calling) it loads the library, so a
-- server without shared_preload_libraries = 'pkchangelog' fails here, at
-- CREATE EXTENSION, with the error and hint of _PG_init.  The library
-- accepts the catalog of its own version and of every version it can be
-- updated from (a newer library runs this script, then the update scripts).
CREATE FUNCTION pkchangelog.library_version() RETURNS text
	AS 'MODULE_PATHNAME', 'pk_library_version'
	LANGUAGE C STRICT IMMUTABLE;
CREATE FUNCTION pkchangelog.library_accepts(script_version text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'pk_library_accepts'
	LANGUAGE C STRICT IMMUTABLE;
DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.1') THEN
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
	data_runs bigint[] NOT NULL DEFAULT '{}',	-- run_id of every data run
	commits bigint NOT NULL DEFAULT 0	-- APPEND and OVERWRITE snapshots ever
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

-- NULL arguments: a function is STRICT (NULL in, NULL or no rows out, as
-- PostgreSQL's own functions) unless NULL means something for one of its
-- arguments: pk_changes' from_snapshot (from the oldest retained snapshot)
-- and to_snapshot (to the latest), pk_expire_snapshots' max_snapshots (all
-- that are due); a NULL table then still gives no rows or NULL.  pk_write refuses every NULL
-- argument: a record dropped without an error would be lost.

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
	OUT delta_record_count bigint, OUT changelog_record_count bigint,
	OUT producer text)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS MATERIALIZED (SELECT pkchangelog.pkmerge_relid(rel) AS relid)
	SELECT s.snapshot_id, s.commit_kind, s.commit_time, s.commit_user, s.commit_xid,
		   s.total_record_count, s.delta_record_count, s.changelog_record_count,
		   s.producer
	FROM pkchangelog.snapshots s JOIN t ON s.relid = t.relid
	ORDER BY s.snapshot_id
$$;

-- the newest snapshot id the caller's MVCC snapshot sees (0: none yet), to
-- poll pk_changes from
CREATE FUNCTION pk_current_snapshot(rel regclass) RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_current_snapshot' LANGUAGE C STABLE STRICT;

CREATE FUNCTION pk_runs(rel regclass,
	OUT run_id bigint, OUT level int, OUT kind text, OUT record_count bigint,
	OUT size_bytes bigint, OUT min_key text, OUT max_key text,
	OUT created_snapshot bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_runs' LANGUAGE C STRICT STABLE;

CREATE FUNCTION pk_write(rel regclass, rowkind text, r anyelement) RETURNS void
	AS 'MODULE_PATHNAME', 'pk_write' LANGUAGE C VOLATILE;

CREATE FUNCTION pk_compact(rel regclass, "full" boolean DEFAULT false) RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_compact' LANGUAGE C STRICT VOLATILE;

-- from_snapshot NULL: from the oldest retained snapshot on; to_snapshot
-- NULL: up to the newest
CREATE FUNCTION pk_changes(rel regclass, from_snapshot bigint DEFAULT NULL,
	to_snapshot bigint DEFAULT NULL,
	OUT snapshot_id bigint, OUT rowkind text, OUT "row" jsonb, OUT producer text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_changes' LANGUAGE C STABLE;

-- max_snapshots: expire at most that many (the oldest), so that a backlog
-- can be drained in transactions of bounded size; NULL: all that are due
CREATE FUNCTION pk_expire_snapshots(rel regclass, max_snapshots bigint DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_expire_snapshots' LANGUAGE C VOLATILE;

CREATE FUNCTION pkchangelog.lookup_cache_stats(relid oid, OUT hits bigint, OUT misses bigint)
	AS 'MODULE_PATHNAME', 'pk_lookup_cache_stats' LANGUAGE C STRICT VOLATILE;

-- Counts over the table's life come from its tables row (compactions are
-- the snapshots that are not commits), durations from the retained
-- snapshots; milliseconds are rounded to microseconds, the precision
-- they are measured with.
CREATE FUNCTION pk_stats(rel regclass,
	OUT commits bigint, OUT commit_latency_p50_ms numeric,
	OUT commit_latency_p95_ms numeric, OUT commit_latency_p99_ms numeric,
	OUT compactions bigint, OUT compaction_avg_ms numeric, OUT compaction_max_ms numeric,
	OUT runs_per_level jsonb, OUT changelog_records bigint,
	OUT lookup_cache_hits bigint, OUT lookup_cache_misses bigint,
	OUT bytes_on_disk bigint, OUT runs_per_kind jsonb)
	LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS MATERIALIZED (SELECT pkchangelog.pkmerge_relid(rel) AS relid),
	tb AS (SELECT tb.commits, tb.last_snapshot_id FROM pkchangelog.tables tb JOIN t USING (relid)),
	s AS (SELECT s.* FROM pkchangelog.snapshots s JOIN t USING (relid)),
	c AS (SELECT * FROM s WHERE commit_kind <> 'COMPACT'),
	k AS (SELECT * FROM s WHERE commit_kind = 'COMPACT'),
	r AS (SELECT r.level, r.kind FROM pkchangelog.runs r JOIN t USING (relid))
	SELECT coalesce((SELECT commits FROM tb), 0),
		   (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) FROM c),
		   (SELECT round(percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) FROM c),
		   (SELECT round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) FROM c),
		   coalesce((SELECT last_snapshot_id - commits FROM tb), 0),
		   (SELECT round(avg(duration_ms)::numeric, 3) FROM k),
		   (SELECT round(max(duration_ms)::numeric, 3) FROM k),
		   (SELECT coalesce(jsonb_object_agg(level, n), '{}')
			FROM (SELECT level, count(*) AS n FROM r WHERE kind = 'data' GROUP BY level) l),
		   (SELECT coalesce(sum(changelog_record_count), 0)::bigint FROM s),
		   b.hits, b.misses,
		   pg_relation_size(rel),
		   (SELECT jsonb_build_object('data', count(*) FILTER (WHERE kind = 'data'),
									  'changelog', count(*) FILTER (WHERE kind = 'changelog'),
									  'delta', count(*) FILTER (WHERE kind = 'delta'))
			FROM r)
	FROM t, pkchangelog.lookup_cache_stats(t.relid) b
$$;

-- ---------------------------------------------------------------------------
-- Descriptions (\dn+, \d+, \df+): every object of the extension has one
-- ---------------------------------------------------------------------------

COMMENT ON SCHEMA pkchangelog IS 'catalog of the pkmerge tables: their counters, snapshots and runs';

COMMENT ON TABLE pkchangelog.tables IS 'one row per pkmerge table that has committed: the counters its commits advance and its data runs';
COMMENT ON COLUMN pkchangelog.tables.relid IS 'the pkmerge table';
COMMENT ON COLUMN pkchangelog.tables.last_snapshot_id IS 'id of the table''s latest snapshot (ids are dense from 1)';
COMMENT ON COLUMN pkchangelog.tables.last_seq IS 'sequence number of the newest committed records (the newest of a key''s versions has the highest)';
COMMENT ON COLUMN pkchangelog.tables.total_record_count IS 'records in the live data runs: a key held by several runs counts once per run until compaction merges them';
COMMENT ON COLUMN pkchangelog.tables.last_full_compaction IS 'snapshot id of the last compaction into the bottom level, 0 if none (the full-compaction producer''s schedule counts the commits since)';
COMMENT ON COLUMN pkchangelog.tables.data_runs IS 'run_id of every live data run: the runs a reader that sees this version of the row reads';
COMMENT ON COLUMN pkchangelog.tables.commits IS 'commits that wrote the table over its life (APPEND and OVERWRITE snapshots, expired ones included); its other snapshots are compactions';

COMMENT ON TABLE pkchangelog.snapshots IS 'one row per retained snapshot of a pkmerge table: each commit that wrote it, each compaction';
COMMENT ON COLUMN pkchangelog.snapshots.relid IS 'the pkmerge table';
COMMENT ON COLUMN pkchangelog.snapshots.snapshot_id IS 'dense per table from 1, in commit order';
COMMENT ON COLUMN pkchangelog.snapshots.commit_kind IS 'APPEND: a transaction''s writes; OVERWRITE: a transaction that truncated the table; COMPACT: a compaction';
COMMENT ON COLUMN pkchangelog.snapshots.commit_time IS 'when the snapshot was committed';
COMMENT ON COLUMN pkchangelog.snapshots.commit_user IS 'role that committed it (the table''s owner for the background worker''s compactions)';
COMMENT ON COLUMN pkchangelog.snapshots.commit_xid IS 'transaction that committed it';
COMMENT ON COLUMN pkchangelog.snapshots.total_record_count IS 'records in the live data runs after this snapshot (a key held by several runs counts once per run); on COMPACT, after the compaction';
COMMENT ON COLUMN pkchangelog.snapshots.delta_record_count IS 'APPEND and OVERWRITE: records the commit wrote, one per key it changed; COMPACT: records the compaction wrote into its output runs';
COMMENT ON COLUMN pkchangelog.snapshots.changelog_record_count IS 'records of the changelog run this snapshot made (input and lookup: at commits; full-compaction: at compactions into the bottom level; none: 0, its stream is each commit''s data)';
COMMENT ON COLUMN pkchangelog.snapshots.producer IS 'changelog_producer in force when the snapshot was made';
COMMENT ON COLUMN pkchangelog.snapshots.duration_ms IS 'milliseconds of the commit step pkmerge adds to a commit (APPEND, OVERWRITE), or of the whole compaction (COMPACT)';

COMMENT ON TABLE pkchangelog.runs IS 'one row per live run of a pkmerge table: a sorted run of rows, or of change records';
COMMENT ON COLUMN pkchangelog.runs.relid IS 'the pkmerge table';
COMMENT ON COLUMN pkchangelog.runs.run_id IS 'unique in the database, never reused (pkchangelog.run_id_seq)';
COMMENT ON COLUMN pkchangelog.runs.relfilenode IS 'the table storage the run''s blocks are in (a TRUNCATE gives the table new storage)';
COMMENT ON COLUMN pkchangelog.runs.level IS 'merge-tree level: 0 for runs written by commits, up to num_levels - 1 (the bottom) for compaction output';
COMMENT ON COLUMN pkchangelog.runs.kind IS 'data: rows read by queries; changelog: the change records of one snapshot, in production order; delta: a commit''s data run that compaction replaced, kept as producer none''s change stream while its snapshot is retained';
COMMENT ON COLUMN pkchangelog.runs.from_commit IS 'written by a commit (an APPEND or OVERWRITE snapshot), not by a compaction';
COMMENT ON COLUMN pkchangelog.runs.start_block IS 'first block of the run in the table''s main fork';
COMMENT ON COLUMN pkchangelog.runs.nblocks IS 'consecutive blocks the run takes';
COMMENT ON COLUMN pkchangelog.runs.record_count IS 'records in the run (rows, and tombstones of deleted keys)';
COMMENT ON COLUMN pkchangelog.runs.size_bytes IS 'bytes of the pages the run''s records take';
COMMENT ON COLUMN pkchangelog.runs.row_base IS 'row number of the run''s first record (row numbers make the TIDs of its rows)';
COMMENT ON COLUMN pkchangelog.runs.min_seq IS 'lowest sequence number of the run''s records';
COMMENT ON COLUMN pkchangelog.runs.max_seq IS 'highest sequence number of the run''s records';
COMMENT ON COLUMN pkchangelog.runs.index_offset IS 'byte offset of the run''s block index in its byte stream';
COMMENT ON COLUMN pkchangelog.runs.bloom_offset IS 'byte offset of the run''s bloom filter of keys in its byte stream';
COMMENT ON COLUMN pkchangelog.runs.created_snapshot IS 'snapshot that made the run; 0 for a spilled run of a transaction not yet committed';
COMMENT ON COLUMN pkchangelog.runs.min_key IS 'first key of the run, as text (readable through pk_runs by roles that may read the key)';
COMMENT ON COLUMN pkchangelog.runs.max_key IS 'last key of the run, as text (readable through pk_runs by roles that may read the key)';
COMMENT ON SEQUENCE pkchangelog.run_id_seq IS 'run ids of pkchangelog.runs';

COMMENT ON FUNCTION pkchangelog.library_version() IS
	'version of the loaded pkchangelog library';
COMMENT ON FUNCTION pkchangelog.library_accepts(text) IS
	'whether the loaded pkchangelog library works with the catalog of an extension version, as it is or after ALTER EXTENSION UPDATE';
COMMENT ON FUNCTION pkchangelog.pkmerge_relid(regclass) IS
	'the oid of a pkmerge table (an error for any other relation): the SQL functions'' check of their argument';
COMMENT ON FUNCTION pkchangelog.lookup_cache_stats(oid) IS
	'point-lookup block cache hits and misses of a pkmerge table, summed over all backends since server start';
COMMENT ON FUNCTION pkmerge_tableam_handler(internal) IS
	'table access method handler of pkmerge';
COMMENT ON FUNCTION pkmerge_key_handler(internal) IS
	'index access method handler of pkmerge_key';
COMMENT ON FUNCTION pk_options(regclass) IS
	'the pkmerge options of a table, defaults included';
COMMENT ON FUNCTION pk_snapshots(regclass) IS
	'retained snapshots of a pkmerge table, oldest first. total_record_count: records in the live data runs after the snapshot (a key held by several runs counts once per run until compaction merges them); delta_record_count: records the commit wrote, one per key, or on COMPACT the records the compaction wrote; changelog_record_count: records of the changelog run it made; producer: the changelog producer it was made under';
COMMENT ON FUNCTION pk_runs(regclass) IS
	'live runs of a pkmerge table (data, changelog, delta); min_key and max_key are NULL unless the caller may read the key columns';
COMMENT ON FUNCTION pk_write(regclass, text, anyelement) IS
	'write one record with its RowKind (+I, +U, -U, -D) as the SQL statement it amounts to; the record keeps the RowKind given';
COMMENT ON FUNCTION pk_compact(regclass, boolean) IS
	'compact a pkmerge table now (full: into the bottom level); the new COMPACT snapshot id, or NULL if there was nothing to compact';
COMMENT ON FUNCTION pk_changes(regclass, bigint, bigint) IS
	'the change stream of a pkmerge table: snapshot_id, RowKind, row (jsonb) and producer of every change in snapshots (from_snapshot, to_snapshot], in commit then production order; NULL from: the oldest retained, NULL to: the newest; a range reaching into expired snapshots or past the newest is refused';
COMMENT ON FUNCTION pk_current_snapshot(regclass) IS
	'the newest snapshot id of a pkmerge table the caller sees (0: none yet), where a poller of pk_changes reads up to';
COMMENT ON FUNCTION pk_expire_snapshots(regclass, bigint) IS
	'expire the snapshots of a pkmerge table due under its retention options (at most max_snapshots, the oldest first; NULL: all due), with their changes; the number expired';
COMMENT ON FUNCTION pk_stats(regclass) IS
	'statistics of a pkmerge table. commits, compactions: over the table''s life; latencies (ms, rounded to microseconds) and changelog_records: over the retained snapshots; runs_per_level: data runs by level; runs_per_kind: live runs by kind; lookup_cache_*: point-lookup block cache, all backends since server start; bytes_on_disk: pg_relation_size';
