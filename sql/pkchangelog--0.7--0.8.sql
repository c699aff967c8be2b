/* pkchangelog 0.7 -> 0.8: a commit's small changelog run is kept in its
 * snapshot's row; a small delta is not retired */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.8'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.8') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.8',
			pkchangelog.library_version();
	END IF;
END $$;

-- A commit's changelog run (input, lookup) lives exactly as long as the
-- commit's snapshot: when small (stored compact, at most 1.5 kB) its bytes
-- go in the snapshot's row instead of a row of pkchangelog.runs of its
-- own, with its run id.  A small commit of those producers so writes one
-- catalog row (and two index entries) fewer, and expiration deletes the
-- run with the snapshot's row.
ALTER TABLE pkchangelog.snapshots ADD COLUMN changelog_run_id bigint,
	ADD COLUMN changelog bytea;
ALTER TABLE pkchangelog.snapshots ALTER COLUMN changelog SET STORAGE MAIN;
COMMENT ON COLUMN pkchangelog.snapshots.changelog_run_id IS
	'the run id of the changelog run kept in this row (NULL: none here; a changelog run of pkchangelog.runs, if any)';
COMMENT ON COLUMN pkchangelog.snapshots.changelog IS
	'the bytes of the changelog run kept in this row (its changes: not readable by PUBLIC)';

-- The changes are values of the table's rows: PUBLIC reads every column
-- but that one (as with pkchangelog.runs' keys and bytes).
REVOKE SELECT ON pkchangelog.snapshots FROM PUBLIC;
GRANT SELECT (relid, snapshot_id, commit_kind, commit_time, commit_user, commit_xid,
	total_record_count, delta_record_count, changelog_record_count, producer,
	duration_ms, changelog_run_id) ON pkchangelog.snapshots TO PUBLIC;

COMMENT ON COLUMN pkchangelog.runs.kind IS 'data: rows read by queries; changelog: the change records of one snapshot, in production order; delta: a commit''s data run that compaction replaced, kept as producer none''s change stream while its snapshot is retained (one kept in its row still says data here: the table''s row no longer naming it makes it a delta, as pk_runs shows)';

-- A compacted commit's run kept for producer none's stream (a delta) in
-- its catalog row is no longer retired: its row keeps saying data, and no
-- version of the table's row names it from the compaction on, which makes
-- it a delta (pk_runs shows it so).  pk_stats works the kind out the same
-- way, names the columns it reads, and counts the changelog runs kept in
-- snapshot rows among the live runs by kind.
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
	tb AS (SELECT tb.commits, tb.last_snapshot_id, tb.data_runs
		   FROM pkchangelog.tables tb JOIN t USING (relid)),
	s AS (SELECT s.commit_kind, s.duration_ms, s.changelog_record_count,
				 s.delta_record_count, s.changelog_run_id
		  FROM pkchangelog.snapshots s JOIN t USING (relid)),
	c AS (SELECT * FROM s WHERE commit_kind <> 'COMPACT'),
	k AS (SELECT * FROM s WHERE commit_kind = 'COMPACT'),
	r AS (SELECT r.level,
				 CASE WHEN r.kind = 'data' AND r.from_commit
						   AND r.created_snapshot BETWEEN 1 AND tb.last_snapshot_id
						   AND r.run_id <> ALL (tb.data_runs)
					  THEN 'delta' ELSE r.kind END AS kind
		  FROM pkchangelog.runs r JOIN t USING (relid) LEFT JOIN tb ON true)
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
