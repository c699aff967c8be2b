/* pkchangelog 0.5 -> 0.6: pk_stats shows what small commits cost */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.6'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.6') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.6',
			pkchangelog.library_version();
	END IF;
END $$;

-- Small data runs now live in their catalog rows too (no catalog change:
-- the stream column of 0.5 holds them).  pk_stats gains three columns:
-- catalog_bytes (the table's rows in pkchangelog.runs and
-- pkchangelog.snapshots, runs kept in their rows included: space
-- pg_relation_size does not show), write_amplification (rows written to
-- data runs by commits and compactions per row committed, over the
-- retained snapshots) and retained_bytes_per_commit (what the retained
-- history takes per commit: snapshot rows, changelog and delta runs).
CREATE FUNCTION pkchangelog.catalog_bytes(relid oid, OUT all_bytes bigint, OUT history_bytes bigint)
	AS 'MODULE_PATHNAME', 'pk_catalog_bytes' LANGUAGE C STRICT STABLE;
COMMENT ON FUNCTION pkchangelog.catalog_bytes(oid) IS
	'bytes of a pkmerge table''s rows in pkchangelog.runs and pkchangelog.snapshots (runs kept in their rows included), and of those the retained history''s (snapshot rows, changelog and delta runs with their pages): what pk_stats shows';

DROP FUNCTION pk_stats(regclass);
CREATE FUNCTION pk_stats(rel regclass,
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
			FROM r),
		   cb.all_bytes,
		   (SELECT round(sum(delta_record_count)::numeric /
						 nullif(sum(delta_record_count) FILTER (WHERE commit_kind <> 'COMPACT'), 0), 2)
			FROM s),
		   (SELECT round(cb.history_bytes::numeric / nullif(count(*), 0), 0) FROM c)
	FROM t, pkchangelog.lookup_cache_stats(t.relid) b, pkchangelog.catalog_bytes(t.relid) cb
$$;

COMMENT ON FUNCTION pk_stats(regclass) IS
	'statistics of a pkmerge table. commits, compactions: over the table''s life; latencies (ms, rounded to microseconds) and changelog_records: over the retained snapshots; runs_per_level: data runs by level; runs_per_kind: live runs by kind; lookup_cache_*: point-lookup block cache, all backends since server start; bytes_on_disk: pg_relation_size; catalog_bytes: the table''s rows in pkchangelog.runs and pkchangelog.snapshots (runs kept in their rows included); write_amplification: rows written to data runs by commits and compactions per row committed, over the retained snapshots; retained_bytes_per_commit: bytes of the retained snapshots'' rows and their changelog and delta runs, per retained commit';
