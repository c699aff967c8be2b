/* pkchangelog 0.10 -> 0.11: small commits' snapshots in a commit log */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.11'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.11') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.11',
			pkchangelog.library_version();
	END IF;
END $$;

-- A small commit's snapshot (an APPEND that keeps its runs in its
-- snapshot's row and adds nothing else) is no longer a row of
-- pkchangelog.snapshots: it is a record of the table's commit log, pages
-- of the table's own file (runs of kind 'log'), appended with one WAL
-- record instead of a catalog row and its index entry.  The table's row
-- names the page commits append to.
ALTER TABLE pkchangelog.runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE pkchangelog.runs ADD CONSTRAINT runs_kind_check
	CHECK (kind IN ('data', 'changelog', 'delta', 'log'));
COMMENT ON COLUMN pkchangelog.runs.kind IS
	'data (read by queries), changelog (a snapshot''s RowKind records), delta (a commit''s data run that compaction replaced, kept for producer none), log (a page of the table''s commit log: created_snapshot is its first snapshot, min_seq the first one not expired)';
ALTER TABLE pkchangelog.tables ADD COLUMN log_run bigint NOT NULL DEFAULT 0,
	ADD COLUMN log_block bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN pkchangelog.tables.log_run IS
	'the run id of the commit log page small commits append to (0: none yet)';
COMMENT ON COLUMN pkchangelog.tables.log_block IS
	'the block of that page in the table''s file';

-- The small commits' snapshots, as rows of pkchangelog.snapshots would
-- show them (without their runs' bytes and keys: their sizes instead).
CREATE FUNCTION pkchangelog.log_snapshots(rel regclass,
	OUT relid oid, OUT snapshot_id bigint, OUT commit_kind text,
	OUT commit_time timestamptz, OUT commit_user text, OUT commit_xid xid8,
	OUT total_record_count bigint, OUT delta_record_count bigint,
	OUT changelog_record_count bigint, OUT producer text,
	OUT duration_ms float8, OUT changelog_run_id bigint, OUT data_seq bigint,
	OUT data_bytes int, OUT changelog_bytes int)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_log_snapshots' LANGUAGE C STRICT STABLE;
COMMENT ON FUNCTION pkchangelog.log_snapshots(regclass) IS
	'the small commits'' snapshots of a pkmerge table, kept in its commit log, as rows of pkchangelog.snapshots (without their runs'' bytes and keys: data_bytes and changelog_bytes are their sizes): pk_snapshots and pk_stats read them';

CREATE OR REPLACE FUNCTION pk_snapshots(rel regclass,
	OUT snapshot_id bigint, OUT commit_kind text, OUT commit_time timestamptz,
	OUT commit_user name, OUT commit_xid xid8, OUT total_record_count bigint,
	OUT delta_record_count bigint, OUT changelog_record_count bigint,
	OUT producer text)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pkchangelog.pkmerge_relid(rel);
	SELECT s.snapshot_id, s.commit_kind, s.commit_time, s.commit_user::name, s.commit_xid,
		   s.total_record_count, s.delta_record_count, s.changelog_record_count,
		   s.producer
	FROM (SELECT s.snapshot_id, s.commit_kind, s.commit_time, s.commit_user, s.commit_xid,
				 s.total_record_count, s.delta_record_count, s.changelog_record_count,
				 s.producer
		  FROM pkchangelog.snapshots s
		  WHERE s.relid = rel::oid
		  UNION ALL
		  SELECT l.snapshot_id, l.commit_kind, l.commit_time, l.commit_user, l.commit_xid,
				 l.total_record_count, l.delta_record_count, l.changelog_record_count,
				 l.producer
		  FROM pkchangelog.log_snapshots(rel) l) s
	ORDER BY s.snapshot_id
$$;

-- pk_stats reads the small commits' snapshots from the commit log too.
CREATE OR REPLACE FUNCTION pk_stats(rel regclass,
	OUT commits bigint, OUT commit_latency_p50_ms numeric,
	OUT commit_latency_p95_ms numeric, OUT commit_latency_p99_ms numeric,
	OUT compactions bigint, OUT compaction_avg_ms numeric, OUT compaction_max_ms numeric,
	OUT runs_per_level jsonb, OUT changelog_records bigint,
	OUT lookup_cache_hits bigint, OUT lookup_cache_misses bigint,
	OUT bytes_on_disk bigint, OUT runs_per_kind jsonb,
	OUT catalog_bytes bigint, OUT write_amplification numeric,
	OUT retained_bytes_per_commit numeric)
	LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS MATERIALIZED (SELECT pkchangelog.pkmerge_relid(rel) AS relid),
	s AS MATERIALIZED (
		  SELECT s.snapshot_id, s.commit_kind, s.duration_ms, s.changelog_record_count,
				 s.delta_record_count, s.changelog_run_id, s.data_seq, s.producer
		  FROM pkchangelog.snapshots s JOIN t USING (relid)
		  UNION ALL
		  SELECT l.snapshot_id, l.commit_kind, l.duration_ms, l.changelog_record_count,
				 l.delta_record_count, l.changelog_run_id, l.data_seq, l.producer
		  FROM pkchangelog.log_snapshots(rel) l),
	tb AS (SELECT tb.commits + f.n AS commits,
				  greatest(tb.last_snapshot_id, f.last) AS last_snapshot_id,
				  tb.data_runs || f.ids AS data_runs
		   FROM pkchangelog.tables tb JOIN t USING (relid),
				LATERAL (SELECT count(*) AS n, max(s.snapshot_id) AS last,
								coalesce(array_agg(-s.snapshot_id), '{}') AS ids
						 FROM s
						 WHERE s.snapshot_id > tb.last_snapshot_id
							   AND s.data_seq IS NOT NULL) f),
	c AS (SELECT * FROM s WHERE commit_kind <> 'COMPACT'),
	k AS (SELECT * FROM s WHERE commit_kind = 'COMPACT'),
	r AS (SELECT r.level,
				 CASE WHEN r.kind = 'data' AND r.from_commit
						   AND r.created_snapshot BETWEEN 1 AND tb.last_snapshot_id
						   AND r.run_id <> ALL (tb.data_runs)
					  THEN 'delta' ELSE r.kind END AS kind
		  FROM pkchangelog.runs r JOIN t USING (relid) LEFT JOIN tb ON true
		  UNION ALL
		  -- data runs kept in snapshot rows and log records; one replaced
		  -- by compaction is a delta of producer none, and no run under the
		  -- others
		  SELECT 0, x.kind
		  FROM (SELECT s.producer,
					   CASE WHEN s.snapshot_id <= tb.last_snapshot_id
								 AND -s.snapshot_id <> ALL (tb.data_runs)
							THEN 'delta' ELSE 'data' END AS kind
				FROM s LEFT JOIN tb ON true
				WHERE s.data_seq IS NOT NULL) x
		  WHERE x.kind = 'data' OR x.producer = 'none')
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
									  'changelog', count(*) FILTER (WHERE kind = 'changelog')
										  + (SELECT count(changelog_run_id) FROM s),
									  'delta', count(*) FILTER (WHERE kind = 'delta'))
			FROM r),
		   cb.all_bytes,
		   (SELECT round(sum(delta_record_count)::numeric /
						 nullif(sum(delta_record_count) FILTER (WHERE commit_kind <> 'COMPACT'), 0), 2)
			FROM s),
		   (SELECT round(cb.history_bytes::numeric / nullif(count(*), 0), 0) FROM c)
	FROM t, pkchangelog.lookup_cache_stats(t.relid) b, pkchangelog.catalog_bytes(t.relid) cb
$$;
