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
