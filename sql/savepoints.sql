-- savepoints.sql: ROLLBACK TO discards exactly the writes made since the
-- savepoint (nested ones too), RELEASE keeps them, a TRUNCATE inside a
-- rolled-back savepoint is undone, and a transaction whose writes were all
-- rolled back commits no run and no snapshot.

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

-- TRUNCATE in a savepoint, undone, then done
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
