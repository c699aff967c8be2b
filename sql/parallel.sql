-- parallel.sql: parallel sequential scans of pkmerge tables.  The key space
-- is split at the block indexes of the runs; every participant merges all
-- runs over its chunks.  Results must equal the serial scan's and a heap
-- copy's, for one run, for several overlapping runs with deletes, and for
-- runs with disjoint key ranges (a bulk load that spilled).
-- A transaction's own buffered writes are not visible to workers: such
-- scans stay out of parallel plans, or the leader scans alone.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE pa (id int PRIMARY KEY, grp int, v text) USING pkmerge;
INSERT INTO pa SELECT g, g % 7, md5(g::text) FROM generate_series(1, 100000) g;
CREATE TABLE pa_heap AS SELECT * FROM pa;
ANALYZE pa, pa_heap;
-- what a scan returned: rows, and a digest of them in key order
CREATE FUNCTION pa_digest(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	EXECUTE format('SELECT count(*) || '' '' || md5(string_agg(id || '':'' || grp || '':'' || v, '','' ORDER BY id)) FROM (%s) x', q) INTO r;
	RETURN r;
END $$;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT grp, count(*), sum(id) FROM pa GROUP BY grp;
SELECT count(*) FROM pk_runs('pa') WHERE kind = 'data';
SELECT grp, count(*), sum(id) FROM pa GROUP BY grp ORDER BY grp;
SELECT pa_digest('SELECT * FROM pa') = pa_digest('SELECT * FROM pa_heap') AS same_as_heap;

-- several runs: overwrites, deletes and new keys on both sides of the
-- largest run's key range
INSERT INTO pa SELECT g, g % 7 + 100, 'new ' || g FROM generate_series(-500, 100, 3) g;
INSERT INTO pa SELECT g, -1, 'upd ' || g FROM generate_series(1, 100000, 97) g;
DELETE FROM pa WHERE id % 1000 = 1;
INSERT INTO pa SELECT g, 0, 'tail ' || g FROM generate_series(99990, 101000) g;
INSERT INTO pa_heap SELECT g, g % 7 + 100, 'new ' || g FROM generate_series(-500, 0, 3) g;
UPDATE pa_heap SET grp = x.grp, v = x.v
FROM (SELECT g AS id, g % 7 + 100 AS grp, 'new ' || g AS v FROM generate_series(1, 100, 3) g) x
WHERE pa_heap.id = x.id;
UPDATE pa_heap SET grp = -1, v = 'upd ' || id WHERE id % 97 = 1 AND id BETWEEN 1 AND 100000;
DELETE FROM pa_heap WHERE id % 1000 = 1;
DELETE FROM pa_heap WHERE id >= 99990;
INSERT INTO pa_heap SELECT g, 0, 'tail ' || g FROM generate_series(99990, 101000) g;
SELECT count(*) FROM pk_runs('pa') WHERE kind = 'data';
EXPLAIN (COSTS OFF) SELECT * FROM pa;
SELECT pa_digest('SELECT * FROM pa') = pa_digest('SELECT * FROM pa_heap') AS same_as_heap;
SELECT grp, count(*), sum(id) FROM pa GROUP BY grp ORDER BY grp;
SET max_parallel_workers_per_gather = 0;
SELECT grp, count(*), sum(id) FROM pa GROUP BY grp ORDER BY grp;
SET max_parallel_workers_per_gather = 2;

-- runs side by side: chunks come from each run's index, every row once
CREATE TABLE pd (id int PRIMARY KEY, grp int, v text) USING pkmerge;
INSERT INTO pd SELECT g, g % 5, md5(g::text) FROM generate_series(1, 30000) g;
INSERT INTO pd SELECT g, g % 5, md5(g::text) FROM generate_series(30001, 70000) g;
INSERT INTO pd SELECT g, g % 5, md5(g::text) FROM generate_series(90001, 90010) g;
INSERT INTO pd SELECT g, g % 5, md5(g::text) FROM generate_series(70001, 90000) g;
INSERT INTO pd SELECT g, g % 5, 'x' FROM generate_series(-5, 0) g;
SELECT count(*) AS runs, min(min_key::int), max(max_key::int) FROM pk_runs('pd') WHERE kind = 'data';
EXPLAIN (COSTS OFF) SELECT * FROM pd;
SELECT pa_digest('SELECT * FROM pd') =
	pa_digest('SELECT g AS id, g % 5 AS grp, CASE WHEN g > 0 THEN md5(g::text) ELSE ''x'' END AS v FROM generate_series(-5, 90010) g')
	AS all_rows_once;
SELECT grp, count(*), sum(id) FROM pd GROUP BY grp ORDER BY grp;
DROP TABLE pd;

-- own writes: no parallel plan while they are buffered
BEGIN;
UPDATE pa SET v = 'mine' WHERE id BETWEEN 50000 AND 50010;
DELETE FROM pa WHERE id BETWEEN 60000 AND 60004;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pa;
SELECT count(*), count(*) FILTER (WHERE v = 'mine') FROM pa;
-- also with debug_parallel_query's Gather on top (PostgreSQL 15: force_parallel_mode)
SELECT current_setting('server_version_num')::int >= 160000 AS pg16 \gset
\if :pg16
SET LOCAL debug_parallel_query = on;
\else
SET LOCAL force_parallel_mode = on;
\endif
SELECT count(*), count(*) FILTER (WHERE v = 'mine') FROM pa;
ROLLBACK;

-- a table the transaction has written stays out of parallel plans even
-- when its buffer is empty again (workers only know that it was written)
BEGIN;
SAVEPOINT s;
UPDATE pa SET v = 'gone' WHERE id = 7;
ROLLBACK TO s;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pa;
SELECT count(*), count(*) FILTER (WHERE v = 'gone') FROM pa;
COMMIT;

-- a plan made before the writes: the leader scans alone and sees them
SET plan_cache_mode = force_generic_plan;
PREPARE pa_count AS SELECT count(*), count(*) FILTER (WHERE v = 'mine') FROM pa;
EXPLAIN (COSTS OFF) EXECUTE pa_count;
BEGIN;
UPDATE pa SET v = 'mine' WHERE id BETWEEN 50000 AND 50010;
EXECUTE pa_count;
-- without the leader taking part, workers refuse rather than miss the writes
SET parallel_leader_participation = off;
EXECUTE pa_count;
ROLLBACK;
RESET parallel_leader_participation;
DEALLOCATE pa_count;
RESET plan_cache_mode;

RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE pa, pa_heap;

-- The planner gives a table parallel workers by its pages: a pkmerge table
-- counts the pages its rows would take in heap, not its compressed ones,
-- and gets the workers a heap table of the same rows gets.  These rows
-- compress to a small fraction of heap's pages, fewer than the threshold
-- for one worker.
CREATE TABLE pc (id int PRIMARY KEY, grp int, v text) USING pkmerge;
INSERT INTO pc SELECT g, g % 7, repeat('x', 100) FROM generate_series(1, 100000) g;
CREATE TABLE pc_heap (id int PRIMARY KEY, grp int, v text);
INSERT INTO pc_heap SELECT * FROM pc;
ANALYZE pc, pc_heap;
CREATE FUNCTION pc_workers(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
	RETURN coalesce((plan->0->'Plan'->>'Workers Planned')::int,
					(plan->0->'Plan'->'Plans'->0->>'Workers Planned')::int, 0);
END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = '2MB';
SET max_parallel_workers_per_gather = 8;
SELECT pg_relation_size('pc') < 2 * 1024 * 1024 AS compressed_below_threshold,
	pg_relation_size('pc_heap') >= 3 * 2 * 1024 * 1024 AS heap_two_workers;
SELECT pc_workers('SELECT sum(grp), count(*) FROM pc') AS pkmerge_workers,
	pc_workers('SELECT sum(grp), count(*) FROM pc_heap') AS heap_workers;
-- lookups by key stay index scans; a filter on another column is a
-- parallel sequential scan
EXPLAIN (COSTS OFF) SELECT * FROM pc WHERE id = 7;
EXPLAIN (COSTS OFF) SELECT * FROM pc WHERE id BETWEEN 10 AND 20;
EXPLAIN (COSTS OFF) SELECT * FROM pc WHERE grp = 3;
SELECT sum(grp), count(*) FROM pc;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE pc, pc_heap;
DROP FUNCTION pc_workers(text);
DROP FUNCTION pa_digest(text);
