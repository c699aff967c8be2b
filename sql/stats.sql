-- stats.sql: pk_stats reports commits and their latency percentiles,
-- compactions and their durations, runs per level, changelog records,
-- this backend's lookup block-cache counters and the bytes on disk.
CREATE TABLE st (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
SELECT commits, commit_latency_p50_ms, compactions, runs_per_level, changelog_records, bytes_on_disk
FROM pk_stats('st');
INSERT INTO st SELECT g, g FROM generate_series(1, 1000) g;
UPDATE st SET v = v + 1 WHERE id <= 10;
DELETE FROM st WHERE id = 1000;
SELECT pk_compact('st', true) IS NOT NULL AS compacted;
INSERT INTO st VALUES (2000, 1);
SELECT commits, compactions, runs_per_level, changelog_records,
	   bytes_on_disk = pg_relation_size('st') AS bytes_ok,
	   commit_latency_p50_ms > 0 AND commit_latency_p50_ms <= commit_latency_p95_ms
		   AND commit_latency_p95_ms <= commit_latency_p99_ms AS latencies_ordered,
	   compaction_avg_ms > 0 AND compaction_avg_ms <= compaction_max_ms AS compaction_times_ok
FROM pk_stats('st');
-- point lookups go through the block cache: a repeated one hits it
SELECT * FROM pkchangelog.block_cache_stats() \gset before_
SELECT v FROM st WHERE id = 500;
SELECT v FROM st WHERE id = 500;
SELECT lookup_cache_misses - :before_misses AS new_misses,
	   lookup_cache_hits - :before_hits >= 1 AS hit_again
FROM pk_stats('st');
SELECT * FROM pk_stats('nosuchtable');
DROP TABLE st;
