/* pkchangelog 0.8 -> 0.9: a small commit leaves its table's row as it is */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.9'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.9') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.9',
			pkchangelog.library_version();
	END IF;
END $$;

-- A commit's small data run goes in its snapshot's row, as its changelog
-- run does since 0.8: the run's id is minus the snapshot's id (run ids need
-- only be unique per table), so a reader finds it by the snapshots' key,
-- and a small commit writes one catalog row.  data_seq is the sequence
-- number of its rows.  Expiration moves such a run, if still read by
-- queries, into a row of pkchangelog.runs of the same id first.
ALTER TABLE pkchangelog.snapshots ADD COLUMN data bytea,
	ADD COLUMN data_seq bigint, ADD COLUMN data_min_key text,
	ADD COLUMN data_max_key text;
ALTER TABLE pkchangelog.snapshots ALTER COLUMN data SET STORAGE MAIN;
COMMENT ON COLUMN pkchangelog.snapshots.data IS
	'the bytes of the commit''s data run kept in this row, run id minus snapshot_id (its rows: not readable by PUBLIC)';
COMMENT ON COLUMN pkchangelog.snapshots.data_seq IS
	'the sequence number of the rows of the data run kept in this row (NULL: none here)';
COMMENT ON COLUMN pkchangelog.snapshots.data_min_key IS
	'the first key of the data run kept in this row (a value of the table''s rows: not readable by PUBLIC; pk_runs shows it to those who may read the key)';
COMMENT ON COLUMN pkchangelog.snapshots.data_max_key IS
	'the last key of the data run kept in this row (not readable by PUBLIC)';
GRANT SELECT (data_seq) ON pkchangelog.snapshots TO PUBLIC;

-- Such a commit, when it adds nothing else, no longer writes its table's
-- row of pkchangelog.tables (up to 15 in a row): its snapshot's row, past
-- the table row's last snapshot, says what it changed.  The row's counters
-- and run list are as of its last write.
COMMENT ON TABLE pkchangelog.tables IS
	'a pkmerge table''s counters and data runs as of the row''s last write (every compaction, TRUNCATE or larger commit, at least every 16th commit); the commits since are the rows of pkchangelog.snapshots past last_snapshot_id with data_seq set: each adds its data run (run id minus its snapshot id), its snapshot, its rows and one commit';

-- pk_stats counts those commits, and the data runs kept in snapshot rows.
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
	tb AS (SELECT tb.commits + f.n AS commits,
				  greatest(tb.last_snapshot_id, f.last) AS last_snapshot_id,
				  tb.data_runs || f.ids AS data_runs
		   FROM pkchangelog.tables tb JOIN t USING (relid),
				LATERAL (SELECT count(*) AS n, max(s.snapshot_id) AS last,
								coalesce(array_agg(-s.snapshot_id), '{}') AS ids
						 FROM pkchangelog.snapshots s
						 WHERE s.relid = tb.relid AND s.snapshot_id > tb.last_snapshot_id
							   AND s.data_seq IS NOT NULL) f),
	s AS (SELECT s.snapshot_id, s.commit_kind, s.duration_ms, s.changelog_record_count,
				 s.delta_record_count, s.changelog_run_id, s.data_seq, s.producer
		  FROM pkchangelog.snapshots s JOIN t USING (relid)),
	c AS (SELECT * FROM s WHERE commit_kind <> 'COMPACT'),
	k AS (SELECT * FROM s WHERE commit_kind = 'COMPACT'),
	r AS (SELECT r.level,
				 CASE WHEN r.kind = 'data' AND r.from_commit
						   AND r.created_snapshot BETWEEN 1 AND tb.last_snapshot_id
						   AND r.run_id <> ALL (tb.data_runs)
					  THEN 'delta' ELSE r.kind END AS kind
		  FROM pkchangelog.runs r JOIN t USING (relid) LEFT JOIN tb ON true
		  UNION ALL
		  -- data runs kept in snapshot rows; one replaced by compaction is
		  -- a delta of producer none, and no run under the others
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
