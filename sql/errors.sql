-- errors.sql: every bad input to pkmerge gets a precise error with the
-- right SQLSTATE, and leaves the table unchanged.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
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
CREATE INDEX ON t USING brin (v);
ALTER TABLE t ALTER COLUMN v TYPE varchar(10);
SELECT * FROM t TABLESAMPLE SYSTEM (50);
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
-- NULL arguments, one rule for every function: STRICT (a NULL argument
-- gives no rows, or NULL) unless NULL means something for that argument:
-- pk_changes' from_snapshot (from the oldest retained snapshot) and
-- to_snapshot (to the latest), pk_expire_snapshots' max_snapshots (all that
-- are due), where a NULL table still gives no rows or NULL; pk_write refuses every NULL
-- (22004, and 23502 for the row, above).  The catalog says which
-- functions are STRICT.
SELECT p.oid::regprocedure AS function, p.proisstrict AS strict
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pkchangelog')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT count(*) AS options FROM pk_options(NULL);
SELECT count(*) AS snapshots FROM pk_snapshots(NULL);
SELECT count(*) AS runs FROM pk_runs(NULL);
SELECT pk_stats(NULL) IS NULL AS stats_null, (SELECT count(*) FROM pk_stats(NULL)) AS stats_rows;
SELECT pkchangelog.pkmerge_relid(NULL) IS NULL AS relid_null;
SELECT count(*) AS changes FROM pk_changes(NULL);
SELECT count(*) AS changes FROM pk_changes(NULL, 0, 1);
SELECT * FROM pk_changes('t', NULL);
SELECT * FROM pk_changes('t', NULL, NULL);
SELECT * FROM pk_changes('t', 0, NULL);
SELECT pk_compact(NULL) IS NULL AS compact_null, pk_compact(NULL, true) IS NULL AS compact_full_null,
	   pk_compact('t', NULL) IS NULL AS compact_t_null;
SELECT pk_expire_snapshots(NULL) IS NULL AS expire_null, pk_expire_snapshots(NULL, 5) IS NULL AS expire_5_null,
	   pk_expire_snapshots('t', NULL) AS expired_t;
SELECT pk_write(NULL, '+I', ROW(2, 'x')::t);
SELECT pk_write(NULL, NULL, NULL::t);

-- nothing above changed the table
\set VERBOSITY default
SELECT * FROM t ORDER BY id;
SELECT count(*) AS snapshots FROM pk_snapshots('t');
DROP TABLE t, heap_t;
