-- expiration.sql: pk_expire_snapshots keeps the newest
-- snapshot_num_retained_min snapshots, expires beyond
-- snapshot_num_retained_max or older than snapshot_time_retained, keeps ids
-- dense, and takes the expired snapshots' changes with them.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE e (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup', snapshot_num_retained_min = 2,
		  snapshot_num_retained_max = 3);
INSERT INTO e VALUES (1, 1);
UPDATE e SET v = 2;
UPDATE e SET v = 3;
UPDATE e SET v = 4;
UPDATE e SET v = 5;
UPDATE e SET v = 6;
SELECT count(*) AS changelog_runs,
	   (SELECT count(changelog_run_id) FROM pkchangelog.log_snapshots('e')) AS in_log_records
  FROM pk_runs('e') WHERE kind = 'changelog';
SELECT pk_expire_snapshots('e') AS expired;
SELECT snapshot_id FROM pk_snapshots('e');
SELECT count(*) AS changelog_runs,
	   (SELECT count(changelog_run_id) FROM pkchangelog.log_snapshots('e')) AS in_log_records
  FROM pk_runs('e') WHERE kind = 'changelog';
-- the stream now starts at the first retained snapshot
SELECT snapshot_id, rowkind, "row" FROM pk_changes('e');
SELECT pk_expire_snapshots('e') AS expired_again;
-- time: everything older than 0 ms beyond the newest min goes
ALTER TABLE e SET (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms', snapshot_num_retained_max = 100);
SELECT pk_expire_snapshots('e') AS expired_by_time;
SELECT snapshot_id FROM pk_snapshots('e');
SELECT * FROM e;
-- the changelog retention counts too: the longer one wins
ALTER TABLE e SET (changelog_num_retained_min = 5);
UPDATE e SET v = 7;
UPDATE e SET v = 8;
SELECT pk_expire_snapshots('e') AS expired_with_changelog_min_5;
SELECT snapshot_id FROM pk_snapshots('e');
-- a producer none table keeps compacted commits' data as deltas until then
CREATE TABLE d (id int PRIMARY KEY, v int) USING pkmerge WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
INSERT INTO d VALUES (1, 1);
INSERT INTO d VALUES (2, 2);
SELECT pk_compact('d', true);
SELECT kind, count(*) FROM pk_runs('d') GROUP BY kind ORDER BY kind;
SELECT count(*) AS run_rows FROM pkchangelog.runs WHERE relid = 'd'::regclass AND kind <> 'log';
SELECT snapshot_id, rowkind, "row" FROM pk_changes('d');
SELECT pk_expire_snapshots('d') AS expired;
SELECT kind, count(*) FROM pk_runs('d') GROUP BY kind ORDER BY kind;
SELECT count(*) AS run_rows FROM pkchangelog.runs WHERE relid = 'd'::regclass AND kind <> 'log';
SELECT * FROM d ORDER BY id;
-- a commit whose snapshot expired while its run was still a data run: the
-- compaction that replaces the run deletes it rather than keeping a delta
-- that no expiration would ever remove
INSERT INTO d VALUES (3, 3);
INSERT INTO d VALUES (4, 4);
SELECT pk_expire_snapshots('d') AS expired;
SELECT kind, created_snapshot FROM pk_runs('d') ORDER BY created_snapshot;
SELECT pk_compact('d', true);
SELECT kind, created_snapshot FROM pk_runs('d') ORDER BY created_snapshot;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('d');
SELECT pk_expire_snapshots('d') AS expired;
SELECT kind, created_snapshot FROM pk_runs('d') ORDER BY created_snapshot;
SELECT * FROM d ORDER BY id;
-- max_snapshots: at most that many, the oldest first; NULL: all that are due
ALTER TABLE d SET (snapshot_time_retained = '1h');
INSERT INTO d VALUES (5, 5);
INSERT INTO d VALUES (6, 6);
INSERT INTO d VALUES (7, 7);
ALTER TABLE d SET (snapshot_time_retained = '0ms');
SELECT snapshot_id FROM pk_snapshots('d');
SELECT pk_expire_snapshots('d', 2) AS expired_at_most_2;
SELECT snapshot_id FROM pk_snapshots('d');
SELECT pk_expire_snapshots('d', 0) AS expired_at_most_0;
SELECT pk_expire_snapshots('d', NULL) AS expired_all_due;
SELECT snapshot_id FROM pk_snapshots('d');
SELECT pk_expire_snapshots('d', -1);
SELECT pk_expire_snapshots(NULL) AS no_table;
DROP TABLE e, d;

-- An expiration searches from where this session's committed ones left
-- off (the expired snapshots' index entries stay until the catalog is
-- vacuumed: they are not stepped over again).  Here thousands are expired
-- by every 64th commit, and the rest by the last expiration.  One rolled
-- back, whole or in a savepoint, is not remembered: what it expired is
-- expired again, and none is skipped.
CREATE TABLE x (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
DO $$ BEGIN
	FOR i IN 1..4000 LOOP
		INSERT INTO x VALUES (i, i);
		COMMIT;
	END LOOP;
	-- a few commits past the last one that expired (compactions take ids too)
	WHILE pk_current_snapshot('x') % 64 < 4 LOOP
		INSERT INTO x VALUES (-pk_current_snapshot('x'), 0);
		COMMIT;
	END LOOP;
END $$;
SELECT count(*) < 64 AS few_left FROM pk_snapshots('x');
SELECT pk_expire_snapshots('x') > 0 AS expired_the_rest;
SELECT count(*) AS retained, max(snapshot_id) = pk_current_snapshot('x') AS the_last
FROM pk_snapshots('x');
ALTER TABLE x SET (snapshot_time_retained = '1h');
UPDATE x SET v = v + 1 WHERE id = 1;
UPDATE x SET v = v + 1 WHERE id = 2;
UPDATE x SET v = v + 1 WHERE id = 3;
ALTER TABLE x SET (snapshot_time_retained = '0ms');
SELECT pk_expire_snapshots('x') AS learns_where_to_start;
SELECT count(*) AS retained FROM pk_snapshots('x');
ALTER TABLE x SET (snapshot_time_retained = '1h');
UPDATE x SET v = v + 1 WHERE id = 4;
UPDATE x SET v = v + 1 WHERE id = 5;
ALTER TABLE x SET (snapshot_time_retained = '0ms');
SELECT count(*) AS retained FROM pk_snapshots('x');
BEGIN;
SAVEPOINT s;
SELECT pk_expire_snapshots('x') AS expired_in_savepoint;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS retained_after_savepoint_rollback FROM pk_snapshots('x');
BEGIN;
SELECT pk_expire_snapshots('x', 1) AS expired_one;
-- this search sees the first one's delete: nothing is learnt from it
SELECT pk_expire_snapshots('x', 1) AS expired_another;
ROLLBACK;
SELECT count(*) AS retained_after_rollback FROM pk_snapshots('x');
SELECT pk_expire_snapshots('x') AS expired_again;
SELECT count(*) AS retained FROM pk_snapshots('x');
SELECT count(*), sum(v) FROM x;
DROP TABLE x;

-- A commit whose own transaction settled the table's row first (an
-- expiration that takes folded commits into it) and the small commits
-- after it, past the 64 a row may have folded after it (no compaction
-- writes the row in between): each takes the next id and the row's count,
-- and the row follows them.
CREATE TABLE fx (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_num_retained_max = 1,
		  snapshot_time_retained = '0ms',
		  num_sorted_run_compaction_trigger = 100,
		  num_sorted_run_stop_trigger = 101);
INSERT INTO fx VALUES (1, 1);
INSERT INTO fx VALUES (2, 1);
INSERT INTO fx VALUES (3, 1);
INSERT INTO fx VALUES (4, 1);
BEGIN;
INSERT INTO fx VALUES (5, 1);
SELECT pk_expire_snapshots('fx') AS expired_before_commit;
COMMIT;
DO $$
BEGIN
	FOR g IN 6..140 LOOP
		INSERT INTO fx VALUES (g, 1);
		COMMIT;
	END LOOP;
END $$;
SELECT count(*) AS retained, min(snapshot_id) AS oldest, max(snapshot_id) AS newest,
	   max(snapshot_id) - min(snapshot_id) + 1 = count(*) AS dense
FROM pk_snapshots('fx');
SELECT total_record_count FROM pk_snapshots('fx') ORDER BY snapshot_id DESC LIMIT 1;
SELECT commits FROM pk_stats('fx');
SELECT pk_current_snapshot('fx') - last_snapshot_id < 64 AS row_follows
FROM pkchangelog.tables WHERE relid = 'fx'::regclass;
SELECT count(*), sum(v) FROM fx;
DROP TABLE fx;

-- Writers expire at every 64th commit (no compactions here: the trigger is
-- out of reach).  A backend that found the oldest snapshot kept remembers
-- it and searches no more until that one is due: by the number of newer
-- snapshots (70 here) ...
CREATE TABLE w (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_num_retained_max = 70,
		  num_sorted_run_compaction_trigger = 500);
-- n 1-row commits to tbl
CREATE PROCEDURE small_commits(tbl regclass, n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		EXECUTE format('INSERT INTO %s VALUES ($1, $2)', tbl) USING i % 10, i;
		COMMIT;
	END LOOP;
END $$;
-- at 64 the oldest is kept (63 newer); at 128, 1..58 go; at 192, up to 122
CALL small_commits('w', 200);
SELECT count(*) AS retained, min(snapshot_id) AS oldest, max(snapshot_id) AS newest
FROM pk_snapshots('w');
-- ... or by its age (3 s here): at 64 the oldest is kept; at 128, the 64
-- made before the pause go
CREATE TABLE wt (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '3s',
		  num_sorted_run_compaction_trigger = 500);
CALL small_commits('wt', 64);
SELECT count(*) AS retained, min(snapshot_id) AS oldest FROM pk_snapshots('wt');
SELECT pg_sleep(3.1);
CALL small_commits('wt', 64);
SELECT count(*) AS retained, min(snapshot_id) AS oldest, max(snapshot_id) AS newest
FROM pk_snapshots('wt');
DROP TABLE w, wt;
DROP PROCEDURE small_commits;
