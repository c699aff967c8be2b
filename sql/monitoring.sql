-- monitoring.sql: what monitoring tools read about a pkmerge table is
-- true: the cumulative statistics count inserts, updates, deletes and
-- scans as for heap; VACUUM reports live tuples and its time, and under
-- VERBOSE what it did to the table; the planner's size of the table is
-- its data runs' records and pages, whatever else the file holds.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE mon (k int PRIMARY KEY, v int) USING pkmerge;
CREATE FUNCTION plan_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
	RETURN (plan->0->'Plan'->>'Plan Rows')::float8;
END $$;
COPY mon (k) FROM PROGRAM 'seq 1 10000';
UPDATE mon SET v = 1 WHERE k <= 100;
DELETE FROM mon WHERE k <= 10;
SELECT count(*) FROM mon;
SET enable_seqscan = off;
SELECT v FROM mon WHERE k = 5000;
RESET enable_seqscan;
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins, n_tup_upd, n_tup_del, seq_scan, idx_scan, n_live_tup
FROM pg_stat_user_tables WHERE relname = 'mon';
SELECT pk_compact('mon', true) IS NOT NULL AS compacted;
SELECT reltuples >= 0 AS analyzed_before FROM pg_class WHERE relname = 'mon';
SELECT plan_rows('SELECT * FROM mon') AS estimated_rows;
-- VACUUM frees the compaction's inputs once no transaction can see their
-- catalog rows: wait (at most 30 s) until no other backend of this
-- database, an autovacuum ANALYZE say, holds a snapshot
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity
							  WHERE datname = current_database()
								AND pid <> pg_backend_pid()
								AND backend_xmin IS NOT NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
VACUUM VERBOSE mon;
SELECT vacuum_count, last_vacuum IS NOT NULL AS vacuumed, n_live_tup
FROM pg_stat_user_tables WHERE relname = 'mon';
-- an estimate that follows the table, not the file: after ANALYZE, more
-- rows and a compaction's leftovers in the file
ANALYZE mon;
INSERT INTO mon SELECT g, 0 FROM generate_series(10001, 15000) g;
SELECT plan_rows('SELECT * FROM mon') AS estimated_rows;
DROP TABLE mon;
DROP FUNCTION plan_rows(text);
