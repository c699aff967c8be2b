-- changelog_checker.sql: the changelog checker (test/setup/
-- changelog_checker.sql: check_stream, check_changelog, check_data_runs)
-- catches broken streams and catalogs.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all

-- the checker itself: a valid stream passes, each broken one is named
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-U","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS valid;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS missing_retraction;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+I","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS double_insert;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-U","row":{"id":1,"v":9}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS wrong_retraction;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-D","row":{"id":1,"v":1}}]',
					'{id}', '{"1":{"id":1,"v":1}}') AS replay_differs;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"-U","row":{"id":1,"v":1}}]',
					'{id}', '{}') AS dangling;
-- check_data_runs: a table's row, with the commits made since its last
-- write, agrees with its runs; a run left out, or one named that is not a
-- data run, is reported
CREATE TABLE dr (id int PRIMARY KEY) USING pkmerge;
INSERT INTO dr VALUES (1);
INSERT INTO dr VALUES (2);
SELECT check_data_runs('dr') AS agrees;
-- (the first small commit wrote the row as it opened the table's commit
-- log; the second did not: its run is past it)
SELECT last_snapshot_id, data_runs FROM pkchangelog.tables WHERE relid = 'dr'::regclass;
BEGIN;
UPDATE pkchangelog.tables SET last_snapshot_id = 2 WHERE relid = 'dr'::regclass;
SELECT check_data_runs('dr') LIKE 'a data run, not named: %' AS left_out;
ROLLBACK;
BEGIN;
UPDATE pkchangelog.tables SET data_runs = data_runs || -7::bigint WHERE relid = 'dr'::regclass;
SELECT check_data_runs('dr') AS not_a_run;
ROLLBACK;
DROP TABLE dr;
