-- stats.sql: pk_stats reports commits and compactions over the table's
-- life (expiration does not lower them), commit latency percentiles and
-- compaction durations in milliseconds rounded to microseconds, data runs
-- per level and live runs per kind, changelog records, the table's own
-- point-lookup block cache counters summed over every session, the bytes
-- on disk and in the catalog, the write amplification and the bytes the
-- retained history takes per commit.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE st (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
SELECT commits, commit_latency_p50_ms, compactions, runs_per_level, changelog_records,
	   bytes_on_disk, runs_per_kind
FROM pk_stats('st');
INSERT INTO st SELECT g, g FROM generate_series(1, 1000) g;
UPDATE st SET v = v + 1 WHERE id <= 10;
DELETE FROM st WHERE id = 1000;
SELECT pk_compact('st', true) IS NOT NULL AS compacted;
INSERT INTO st VALUES (2000, 1);
-- runs_per_level: the data runs (the merge tree); runs_per_kind: every
-- live run, the lookup producer's changelog runs (one per commit) included
SELECT commits, compactions, runs_per_level, runs_per_kind, changelog_records,
	   bytes_on_disk = pg_relation_size('st') AS bytes_ok,
	   commit_latency_p50_ms > 0 AND commit_latency_p50_ms <= commit_latency_p95_ms
		   AND commit_latency_p95_ms <= commit_latency_p99_ms AS latencies_ordered,
	   compaction_avg_ms > 0 AND compaction_avg_ms <= compaction_max_ms AS compaction_times_ok
FROM pk_stats('st');
SELECT kind, level, count(*) FROM pk_runs('st') GROUP BY kind, level ORDER BY kind, level;

-- latencies are the percentiles of the retained snapshots' durations,
-- rounded to 3 decimals: those of the commits' rows set by hand to known
-- values here (the small commits' snapshots, records of the commit log,
-- keep theirs: the percentiles over all are computed beside)
UPDATE pkchangelog.snapshots
SET duration_ms = CASE snapshot_id WHEN 1 THEN 1 WHEN 4 THEN 0.0104999 END
WHERE relid = 'st'::regclass;
SELECT snapshot_id, commit_kind, duration_ms FROM pkchangelog.snapshots
WHERE relid = 'st'::regclass ORDER BY snapshot_id;
SELECT snapshot_id FROM pkchangelog.log_snapshots('st');
WITH d AS (SELECT duration_ms FROM pkchangelog.snapshots
		   WHERE relid = 'st'::regclass AND commit_kind <> 'COMPACT'
		   UNION ALL SELECT duration_ms FROM pkchangelog.log_snapshots('st')),
	 p AS (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS p50,
				  round(percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS p95,
				  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS p99
		   FROM d)
SELECT commit_latency_p50_ms = p50 AS p50_ok, commit_latency_p95_ms = p95 AS p95_ok,
	   commit_latency_p99_ms = p99 AS p99_ok,
	   compaction_avg_ms, compaction_max_ms, pg_typeof(commit_latency_p50_ms)
FROM pk_stats('st'), p;

-- commits and compactions count over the table's life: expiring every
-- snapshot but the newest leaves them as they were; the durations and
-- changelog records are those of the retained snapshots
ALTER TABLE st SET (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
SELECT pk_expire_snapshots('st') AS expired;
SELECT snapshot_id, commit_kind FROM pk_snapshots('st');
SELECT commits, compactions,
	   commit_latency_p50_ms = (SELECT round(duration_ms::numeric, 3)
								FROM pkchangelog.log_snapshots('st')) AS latency_of_retained,
	   compaction_avg_ms, changelog_records, runs_per_kind
FROM pk_stats('st');
UPDATE st SET v = 0 WHERE id = 2000;
SELECT pk_compact('st', true) IS NOT NULL AS compacted;
SELECT commits, compactions FROM pk_stats('st');

-- write amplification: rows written to data runs by commits and
-- compactions per row committed, over the retained snapshots (four
-- commits of 100 rows, then a full compaction rewriting the 400: 2)
CREATE TABLE wa (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO wa SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO wa SELECT g, g FROM generate_series(101, 200) g;
INSERT INTO wa SELECT g, g FROM generate_series(201, 300) g;
INSERT INTO wa SELECT g, g FROM generate_series(301, 400) g;
SELECT write_amplification FROM pk_stats('wa');
SELECT pk_compact('wa', true) IS NOT NULL AS compacted;
SELECT write_amplification FROM pk_stats('wa');

-- space: the table's catalog rows and, per retained commit, the history:
-- small commits' snapshots, with their runs, are commit log records, so
-- eight 1-row lookup commits take one log page of the file (8 kB, its run
-- row in the catalog) and no catalog row each
CREATE TABLE sp (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup', num_sorted_run_compaction_trigger = 20);
INSERT INTO sp SELECT g, 0 FROM generate_series(1, 1000) g;
SELECT bytes_on_disk AS file_before, catalog_bytes AS catalog_before FROM pk_stats('sp') \gset
UPDATE sp SET v = v + 1 WHERE id = 1;
UPDATE sp SET v = v + 1 WHERE id = 2;
UPDATE sp SET v = v + 1 WHERE id = 3;
UPDATE sp SET v = v + 1 WHERE id = 4;
UPDATE sp SET v = v + 1 WHERE id = 5;
UPDATE sp SET v = v + 1 WHERE id = 6;
UPDATE sp SET v = v + 1 WHERE id = 7;
UPDATE sp SET v = v + 1 WHERE id = 8;
SELECT bytes_on_disk - :file_before AS file_growth,
	   catalog_bytes - :catalog_before BETWEEN 100 AND 512 AS one_catalog_row,
	   catalog_bytes = (SELECT all_bytes FROM pkchangelog.catalog_bytes('sp'::regclass)) AS catalog_bytes_ok
FROM pk_stats('sp');
-- the history per commit (9 commits: the 1000-row one's changelog too)
SELECT retained_bytes_per_commit BETWEEN 200 AND 2048 AS per_commit_ok,
	   retained_bytes_per_commit =
		   round((SELECT history_bytes FROM pkchangelog.catalog_bytes('sp'::regclass)) / 9.0, 0)
		   AS is_history_per_commit
FROM pk_stats('sp');
DROP TABLE wa, sp;

-- producer none: its compacted commits' data stays as delta runs
CREATE TABLE st_none (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO st_none VALUES (1, 1);
INSERT INTO st_none VALUES (2, 2);
SELECT pk_compact('st_none', true) IS NOT NULL AS compacted;
SELECT commits, compactions, runs_per_level, runs_per_kind, changelog_records
FROM pk_stats('st_none');

-- point lookups go through the block cache: a repeated one hits it (the
-- first one in a run also reads the run's last block, to learn its key
-- range: two misses); the counters are the table's (another table's
-- lookups do not count) ...
SELECT lookup_cache_hits AS hits, lookup_cache_misses AS misses FROM pk_stats('st') \gset before_
SELECT lookup_cache_hits AS hits, lookup_cache_misses AS misses FROM pk_stats('st_none') \gset none_
SELECT v FROM st WHERE id = 500;
SELECT v FROM st WHERE id = 500;
SELECT lookup_cache_misses - :before_misses AS new_misses,
	   lookup_cache_hits - :before_hits AS new_hits
FROM pk_stats('st');
SELECT lookup_cache_misses - :none_misses AS none_new_misses,
	   lookup_cache_hits - :none_hits AS none_new_hits
FROM pk_stats('st_none');
-- ... and every session's: a new session sees this one's, and adds its
-- own: one hit, the block this session decompressed, in the server's
-- shared block cache (the run's index, with its last key, is in the
-- shared index cache: its last block is not read again)
\c
SELECT lookup_cache_misses - :before_misses AS new_misses,
	   lookup_cache_hits - :before_hits AS new_hits
FROM pk_stats('st');
SELECT v FROM st WHERE id = 500;
SELECT lookup_cache_misses - :before_misses AS new_misses,
	   lookup_cache_hits - :before_hits AS new_hits
FROM pk_stats('st');
-- a 1-row UPDATE by key of a lookup table asks for its key's newest
-- version three times: the scan, the check that the version it read is
-- still the newest, and the commit, for the changelog's -U.  With no
-- commit between them the runs are the same, and so is the answer: the
-- first one serves all three.  Two block reads, the lookup's and the
-- UPDATE's fetch of the row it read by TID (four without the reuse)
SELECT lookup_cache_hits + lookup_cache_misses AS reads FROM pk_stats('st') \gset before_
UPDATE st SET v = v + 1 WHERE id = 500;
SELECT lookup_cache_hits + lookup_cache_misses - :before_reads AS update_block_reads
FROM pk_stats('st');
SELECT v FROM st WHERE id = 500;
SELECT rowkind, row FROM pk_changes('st')
WHERE snapshot_id = (SELECT max(snapshot_id) FROM pk_snapshots('st'))
ORDER BY row->>'v';

-- a new connection's first query of a table by key reads from the
-- catalogs what a heap table's reads: the key type's default btree and hash
-- classes come from shared memory (the type cache would scan pg_opclass
-- for them), the widths of fixed-length columns from their types (not
-- from pg_statistic: the query names id alone), and whether the table has
-- row ids is not asked (pkchangelog.row_ids is not read)
CREATE TABLE st_heap (id int PRIMARY KEY, v int);
INSERT INTO st_heap SELECT g, g FROM generate_series(1, 1000) g;
ANALYZE st, st_heap;
\c
BEGIN;
SELECT id FROM st_heap WHERE id = 500;
SELECT sum(idx_scan + seq_scan) FILTER (WHERE relname = 'pg_opclass') AS opclass_reads,
	   sum(idx_scan + seq_scan) FILTER (WHERE relname = 'pg_statistic') AS statistic_reads
FROM pg_stat_xact_sys_tables \gset heap_
COMMIT;
\c
BEGIN;
SELECT id FROM st WHERE id = 500;
SELECT sum(idx_scan + seq_scan) FILTER (WHERE relname = 'pg_opclass') = :heap_opclass_reads
		   AS same_opclass_reads,
	   sum(idx_scan + seq_scan) FILTER (WHERE relname = 'pg_statistic') = :heap_statistic_reads
		   AS same_statistic_reads
FROM pg_stat_xact_sys_tables;
SELECT idx_scan + seq_scan AS row_ids_reads FROM pg_stat_xact_all_tables
WHERE relid = 'pkchangelog.row_ids'::regclass;
COMMIT;
DROP TABLE st_heap;

-- the widths of variable-length columns come from ANALYZE's statistics,
-- read for the whole table in one scan of pg_statistic (a syscache entry
-- per column would also detoast each column's histogram): the planner's
-- widths are heap's, and a change of the statistics is seen at once
CREATE TABLE st_text (id int PRIMARY KEY, a text, b text, c text) USING pkmerge;
CREATE TABLE st_text_heap (id int PRIMARY KEY, a text, b text, c text);
INSERT INTO st_text SELECT g, md5(g::text), repeat('b', g % 50), 'c' FROM generate_series(1, 2000) g;
INSERT INTO st_text_heap SELECT * FROM st_text;
ANALYZE st_text, st_text_heap;
CREATE FUNCTION st_plan_width(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Plan Width')::int;
END $$;
\c
BEGIN;
SELECT id FROM st_text_heap WHERE id = 500;
SELECT sum(idx_scan + seq_scan) AS statistic_reads FROM pg_stat_xact_sys_tables
WHERE relname = 'pg_statistic' \gset heap_
COMMIT;
\c
BEGIN;
SELECT id FROM st_text WHERE id = 500;
-- heap's read of id's statistics, and one scan for the three text columns
SELECT sum(idx_scan + seq_scan) - :heap_statistic_reads AS more_statistic_reads
FROM pg_stat_xact_sys_tables WHERE relname = 'pg_statistic';
COMMIT;
SELECT st_plan_width('SELECT * FROM st_text') AS pkmerge_width,
	   st_plan_width('SELECT * FROM st_text_heap') AS heap_width;
UPDATE st_text SET b = repeat('b', 300) WHERE id % 2 = 0;
UPDATE st_text_heap SET b = repeat('b', 300) WHERE id % 2 = 0;
ANALYZE st_text, st_text_heap;
SELECT st_plan_width('SELECT * FROM st_text') AS pkmerge_width,
	   st_plan_width('SELECT * FROM st_text_heap') AS heap_width;
DROP TABLE st_text, st_text_heap;
DROP FUNCTION st_plan_width(text);

-- a block of wide rows (two rows of 7 kB: more than a small slot holds)
-- takes one of the shared cache's large slots: a new session finds it
CREATE TABLE st_wide (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO st_wide SELECT g, repeat(md5(g::text), 220) FROM generate_series(1, 40) g;
SELECT lookup_cache_hits AS hits, lookup_cache_misses AS misses FROM pk_stats('st_wide') \gset wide_
SET enable_seqscan = off;
SELECT length(v) FROM st_wide WHERE id = 7;
\c
SET enable_seqscan = off;
SELECT length(v) FROM st_wide WHERE id = 7;
SELECT lookup_cache_misses - :wide_misses AS wide_misses,
	   lookup_cache_hits - :wide_hits AS wide_hits
FROM pk_stats('st_wide');
DROP TABLE st_wide;

SELECT * FROM pk_stats('nosuchtable');
DROP TABLE st, st_none;
