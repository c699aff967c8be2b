/* pkchangelog 0.11 -> 0.12: pk_stats reads the retained snapshots once */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.12'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.12') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.12',
			pkchangelog.library_version();
	END IF;
END $$;

-- pk_stats gives what it gave, from one pass over the retained snapshots
-- (the rows of pkchangelog.snapshots, then the commit log's records),
-- aggregated as they stream by, instead of keeping them all to read eight
-- times over and sorting the commits' durations once per percentile: an
-- hour of small commits keeps millions of snapshots.
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
	tb AS MATERIALIZED (
		  SELECT tb.commits, tb.last_snapshot_id, tb.data_runs
		  FROM pkchangelog.tables tb JOIN t USING (relid)),
	-- one pass over the retained snapshots (rows, then commit log
	-- records); folded: a small commit after the table's row
	s AS (
		  SELECT count(*) FILTER (WHERE folded) AS folded,
				 max(snapshot_id) FILTER (WHERE folded) AS folded_last,
				 percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms)
					 FILTER (WHERE commit_kind <> 'COMPACT') AS latency,
				 count(*) FILTER (WHERE commit_kind <> 'COMPACT') AS ncommits,
				 avg(duration_ms) FILTER (WHERE commit_kind = 'COMPACT') AS compaction_avg,
				 max(duration_ms) FILTER (WHERE commit_kind = 'COMPACT') AS compaction_max,
				 coalesce(sum(changelog_record_count), 0)::bigint AS changelog_records,
				 count(changelog_run_id) AS changelog_runs,
				 sum(delta_record_count) AS delta_records,
				 sum(delta_record_count) FILTER (WHERE commit_kind <> 'COMPACT') AS committed_records,
				 -- data runs kept in snapshot rows and log records; one
				 -- replaced by compaction is a delta of producer none, and
				 -- no run under the others
				 count(*) FILTER (WHERE data_seq IS NOT NULL AND NOT replaced) AS data_runs,
				 count(*) FILTER (WHERE data_seq IS NOT NULL AND replaced
								  AND producer = 'none') AS delta_runs
		  FROM (SELECT a.*,
					   a.snapshot_id > tb.last_snapshot_id
						   AND a.data_seq IS NOT NULL AS folded,
					   coalesce(a.snapshot_id <= tb.last_snapshot_id
								AND -a.snapshot_id <> ALL (tb.data_runs), false) AS replaced
				FROM (SELECT s.snapshot_id, s.commit_kind, s.duration_ms,
							 s.changelog_record_count, s.delta_record_count,
							 s.changelog_run_id, s.data_seq, s.producer
					  FROM pkchangelog.snapshots s JOIN t USING (relid)
					  UNION ALL
					  SELECT l.snapshot_id, l.commit_kind, l.duration_ms,
							 l.changelog_record_count, l.delta_record_count,
							 l.changelog_run_id, l.data_seq, l.producer
					  FROM pkchangelog.log_snapshots(rel) l) a
					 LEFT JOIN tb ON true) x),
	r AS (SELECT r.level,
				 CASE WHEN r.kind = 'data' AND r.from_commit
						   AND r.created_snapshot BETWEEN 1 AND tb.last_snapshot_id
						   AND r.run_id <> ALL (tb.data_runs)
					  THEN 'delta' ELSE r.kind END AS kind
		  FROM pkchangelog.runs r JOIN t USING (relid) LEFT JOIN tb ON true)
	SELECT coalesce((SELECT tb.commits + s.folded FROM tb), 0),
		   round(s.latency[1]::numeric, 3),
		   round(s.latency[2]::numeric, 3),
		   round(s.latency[3]::numeric, 3),
		   coalesce((SELECT greatest(tb.last_snapshot_id, s.folded_last)
							- (tb.commits + s.folded) FROM tb), 0),
		   round(s.compaction_avg::numeric, 3),
		   round(s.compaction_max::numeric, 3),
		   (SELECT coalesce(jsonb_object_agg(l.level, l.n), '{}')
			FROM (SELECT level, sum(n)::bigint AS n
				  FROM (SELECT level, count(*) AS n FROM r WHERE kind = 'data' GROUP BY level
						UNION ALL
						SELECT 0, s.data_runs WHERE s.data_runs > 0) u
				  GROUP BY level) l),
		   s.changelog_records,
		   b.hits, b.misses,
		   pg_relation_size(rel),
		   (SELECT jsonb_build_object('data', count(*) FILTER (WHERE kind = 'data') + s.data_runs,
									  'changelog', count(*) FILTER (WHERE kind = 'changelog')
										  + s.changelog_runs,
									  'delta', count(*) FILTER (WHERE kind = 'delta') + s.delta_runs)
			FROM r),
		   cb.all_bytes,
		   round(s.delta_records::numeric / nullif(s.committed_records, 0), 2),
		   round(cb.history_bytes::numeric / nullif(s.ncommits, 0), 0)
	FROM t, s, pkchangelog.lookup_cache_stats(t.relid) b, pkchangelog.catalog_bytes(t.relid) cb
$$;
