-- errors.sql: every bad input to pkmerge gets a precise error with the
-- right SQLSTATE, and leaves the table unchanged.
\set VERBOSITY sqlstate
CREATE TABLE t (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO t VALUES (1, 'one');

-- NULL key: 23502
INSERT INTO t VALUES (NULL, 'x');
UPDATE t SET id = NULL WHERE id = 1;
SELECT pk_write('t', '+I', ROW(NULL, 'x')::t);
-- pk_write: bad RowKind 22023, wrong row type 42804, NULL row 23502, not pkmerge 42809
SELECT pk_write('t', '+X', ROW(2, 'x')::t);
SELECT pk_write('t', NULL, ROW(2, 'x')::t);
SELECT pk_write('t', '+I', ROW(2, 'x'));
SELECT pk_write('t', '+I', NULL::t);
CREATE TABLE heap_t (id int PRIMARY KEY, v text);
SELECT pk_write('heap_t', '+I', ROW(2, 'x')::heap_t);
SELECT * FROM pk_runs('heap_t');
-- unsupported: 0A000
CREATE INDEX ON t (v);
ALTER TABLE t ALTER COLUMN v TYPE varchar(10);
SELECT * FROM t TABLESAMPLE SYSTEM (50);
BEGIN;
INSERT INTO t VALUES (3, 'prepared');
PREPARE TRANSACTION 'pk_prep';
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'pk_prep';
-- bad options: 42704 unknown, 22023 bad value
ALTER TABLE t SET (no_such_option = 1);
ALTER TABLE t SET (compression_level = 99);
-- a catalog of another build (here: a column gone) is refused, 55000,
-- never read past a row's end
BEGIN;
ALTER TABLE pkchangelog.tables DROP COLUMN data_runs;
INSERT INTO t VALUES (9, 'other catalog');
COMMIT;
-- so are runs and snapshots of another shape (a column more, a column of
-- another type), whether rows are read (pk_changes reads both) or written
-- (a commit)
BEGIN;
SAVEPOINT other_shape;
ALTER TABLE pkchangelog.runs ADD COLUMN extra int;
SELECT * FROM pk_changes('t');
ROLLBACK TO other_shape;
ALTER TABLE pkchangelog.snapshots ADD COLUMN extra int;
SELECT * FROM pk_changes('t');
ROLLBACK;
BEGIN;
ALTER TABLE pkchangelog.runs ALTER COLUMN level TYPE bigint;
UPDATE t SET v = 'other catalog' WHERE id = 1;
COMMIT;
BEGIN;
ALTER TABLE pkchangelog.snapshots ALTER COLUMN duration_ms TYPE numeric;
DELETE FROM t WHERE id = 1;
COMMIT;
-- nothing above changed the table
\set VERBOSITY default
SELECT * FROM t ORDER BY id;
SELECT count(*) AS snapshots FROM pk_snapshots('t');
DROP TABLE t, heap_t;
