-- savepoints.sql: ROLLBACK TO discards exactly the writes made since the
-- savepoint (nested ones too), RELEASE keeps them, a TRUNCATE inside a
-- rolled-back savepoint is undone, and a transaction whose writes were all
-- rolled back commits no run and no snapshot.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE TABLE t (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO t VALUES (1, 'committed'), (2, 'committed');

BEGIN;
INSERT INTO t VALUES (3, 'kept');
SAVEPOINT a;
INSERT INTO t VALUES (4, 'rolled back');
UPDATE t SET v = 'rolled back' WHERE id = 1;
SAVEPOINT b;
DELETE FROM t WHERE id = 2;
ROLLBACK TO b;
SELECT * FROM t ORDER BY id;
ROLLBACK TO a;
SELECT * FROM t ORDER BY id;
SAVEPOINT c;
UPDATE t SET v = 'released' WHERE id = 2;
SAVEPOINT d;
INSERT INTO t VALUES (5, 'released too');
RELEASE d;
RELEASE c;
SAVEPOINT e;
INSERT INTO t VALUES (6, 'rolled back');
ROLLBACK TO e;
COMMIT;
SELECT * FROM t ORDER BY id;

-- an error inside a savepoint
BEGIN;
INSERT INTO t VALUES (7, 'kept');
SAVEPOINT s;
INSERT INTO t VALUES (8, 'lost');
INSERT INTO t VALUES (NULL, 'error');
ROLLBACK TO s;
INSERT INTO t VALUES (9, 'kept');
COMMIT;
SELECT * FROM t WHERE id >= 7 ORDER BY id;

-- TRUNCATE in a savepoint, undone, then done (the committed TRUNCATE
-- expires the snapshots before it)
BEGIN;
SAVEPOINT s;
TRUNCATE t;
INSERT INTO t VALUES (100, 'after truncate');
SELECT * FROM t;
ROLLBACK TO s;
SELECT count(*) FROM t;
TRUNCATE t;
INSERT INTO t VALUES (101, 'after truncate');
COMMIT;
SELECT * FROM t;

-- nothing left to commit: no snapshot
SELECT max(snapshot_id) AS before FROM pk_snapshots('t') \gset
BEGIN;
SAVEPOINT s;
INSERT INTO t VALUES (200, 'x');
ROLLBACK TO s;
COMMIT;
BEGIN;
SELECT * FROM t;
COMMIT;
SELECT max(snapshot_id) = :before AS no_new_snapshot FROM pk_snapshots('t');
SELECT snapshot_id, commit_kind, delta_record_count, total_record_count FROM pk_snapshots('t');

DROP TABLE t;

-- a buffer longer than one segment of its log (4096 records each): reads of
-- own writes, updates found through the buffer, and a rollback to a
-- savepoint that cuts the log in another segment
CREATE TABLE big (id int PRIMARY KEY, v int) USING pkmerge;
BEGIN;
INSERT INTO big SELECT g, 0 FROM generate_series(1, 10000) g;
UPDATE big SET v = 1 WHERE id % 1000 = 0;
SELECT count(*), sum(v), min(id), max(id) FROM big;
SAVEPOINT s;
INSERT INTO big SELECT g, 2 FROM generate_series(10001, 13000) g;
UPDATE big SET v = 3 WHERE id BETWEEN 4090 AND 4100;
SELECT count(*), sum(v) FROM big;
ROLLBACK TO s;
SELECT count(*), sum(v), count(*) FILTER (WHERE v = 3) AS rolled_back_updates FROM big;
INSERT INTO big SELECT g, 4 FROM generate_series(12001, 12500) g;
SELECT count(*), sum(v) FROM big;
COMMIT;
SELECT count(*), sum(v), count(DISTINCT id) FROM big;
SELECT commit_kind, delta_record_count, total_record_count FROM pk_snapshots('big');
DROP TABLE big;

-- a statement failing in a savepoint leaves nothing behind that a later
-- statement reads: here a MERGE that matched a row twice (21000) had
-- handed rows of its key index scan to the table's fetch, and the UPDATE
-- after the rollback fetches the same TIDs (with writes spilled before)
CREATE TABLE t8 (k int PRIMARY KEY, s text) USING pkmerge WITH (write_buffer_size = '1MB');
INSERT INTO t8 SELECT 22, string_agg(md5(i::text), '') FROM generate_series(1, 3125) i;
INSERT INTO t8 VALUES (10, 'ten');
BEGIN;
INSERT INTO t8 SELECT i, repeat(md5(i::text), 100) FROM generate_series(1031, 1676) i;
SAVEPOINT s;
MERGE INTO t8 USING (VALUES (10), (1228), (10)) x(k) ON t8.k = x.k WHEN MATCHED THEN DELETE;
ROLLBACK TO SAVEPOINT s;
UPDATE t8 SET s = NULL WHERE k = 22 OR k = 10;
SELECT k, s IS NULL AS cleared, length(s) FROM t8 WHERE k IN (10, 22, 1228) ORDER BY k;
COMMIT;
SELECT count(*), count(s), sum(k) FROM t8;

-- the same with a cursor whose fetch fails in a savepoint, and its portal
-- dropped by the rollback while its scan was open
BEGIN;
SAVEPOINT s;
DECLARE c CURSOR FOR SELECT k, 1 / (k - 1228) AS boom FROM t8 WHERE k >= 1226 ORDER BY k;
FETCH 2 FROM c;
FETCH 1 FROM c;
ROLLBACK TO SAVEPOINT s;
UPDATE t8 SET s = 'x' WHERE k = 1227 OR k = 1226;
SELECT k, left(s, 4), length(s) FROM t8 WHERE k BETWEEN 1226 AND 1228 ORDER BY k;
COMMIT;
DROP TABLE t8;

-- a compaction rolled back with its savepoint: the versions of the
-- table's row it wrote went with it, and neither this backend's next
-- commits (which write the table's row: a run of its own) nor another
-- session take its run list as the table's
CREATE TABLE t9 (k int PRIMARY KEY, v text) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2);
INSERT INTO t9 VALUES (1, 'a');
INSERT INTO t9 VALUES (2, 'b');
BEGIN;
SAVEPOINT s;
SELECT pk_compact('t9') IS NOT NULL AS compacted;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS data_runs FROM pk_runs('t9') WHERE kind = 'data';
INSERT INTO t9 SELECT g, repeat('x', 100) FROM generate_series(3, 200) g;
SELECT count(*), sum(k) FROM t9;
\c
SELECT count(*), sum(k) FROM t9;
INSERT INTO t9 VALUES (201, 'c');
SELECT count(*), sum(k), count(*) FILTER (WHERE v = 'c') AS c FROM t9;
SELECT count(*) AS data_runs FROM pk_runs('t9') WHERE kind = 'data';
DROP TABLE t9;
