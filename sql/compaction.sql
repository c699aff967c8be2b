-- compaction.sql: universal compaction (DESIGN §7) as pk_compact and the
-- writers' stop trigger run it: COMPACT snapshots, the same rows before and
-- after, tombstones dropped only into the bottom level, output runs split at
-- target_run_size, writers compacting inline at num_sorted_run_stop_trigger.
-- (The background worker: t/014_worker.pl.)  Tables with
-- compaction_small_run_ratio = 0 pick exactly as Paimon; the last part
-- shows small runs merged among themselves first.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE TABLE c (id int PRIMARY KEY, v text) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 4,
		  num_levels = 3, changelog_producer = 'lookup', compaction_small_run_ratio = 0);
INSERT INTO c SELECT g, 'a' || g FROM generate_series(1, 100) g;
INSERT INTO c SELECT g, 'b' || g FROM generate_series(50, 150) g;
DELETE FROM c WHERE id <= 10;
SELECT level, record_count, min_key, max_key FROM pk_runs('c') WHERE kind = 'data' ORDER BY created_snapshot, run_id;
SELECT count(*), min(id), max(id), sum(length(v)) FROM c;
-- three sorted runs reach the trigger: universal compaction picks them
SELECT pk_compact('c') AS snapshot;
SELECT level, record_count, min_key, max_key FROM pk_runs('c') WHERE kind = 'data';
SELECT count(*), min(id), max(id), sum(length(v)) FROM c;
SELECT snapshot_id, commit_kind, delta_record_count FROM pk_snapshots('c') WHERE commit_kind = 'COMPACT';
-- nothing due: NULL
SELECT pk_compact('c') AS nothing_to_do;
-- the writers' stop trigger: a commit that would make the fourth sorted run
-- first compacts the three committed ones, then adds its own
DELETE FROM c WHERE id = 20;
INSERT INTO c VALUES (1000, 'x');
SELECT count(*) AS data_runs_before FROM pk_runs('c') WHERE kind = 'data';
INSERT INTO c VALUES (1001, 'y');
SELECT count(*) AS data_runs, count(*) < 4 AS under_stop_trigger FROM pk_runs('c') WHERE kind = 'data';
SELECT count(*) FILTER (WHERE id = 20) AS deleted_key, count(*) AS rows FROM c;
INSERT INTO c VALUES (1002, 'z');
-- a full compaction writes everything into the bottom level, tombstones gone
SELECT pk_compact('c', true) IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('c') WHERE kind = 'data';
SELECT pk_compact('c', true) AS nothing_left;
SELECT check_changelog('c');

-- a merge above the bottom level keeps tombstones: they must still hide
-- the key's rows below
CREATE TABLE tb (id int PRIMARY KEY, v text) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 10, num_levels = 3,
		  compaction_small_run_ratio = 0);
INSERT INTO tb SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SELECT pk_compact('tb', true) IS NOT NULL AS compacted;
DELETE FROM tb WHERE id = 5;
INSERT INTO tb VALUES (30001, 'x');
INSERT INTO tb VALUES (30002, 'y');
SELECT pk_compact('tb') IS NOT NULL AS compacted;
SELECT level, record_count, min_key, max_key FROM pk_runs('tb') WHERE kind = 'data' ORDER BY level;
SELECT count(*) FILTER (WHERE id = 5) AS deleted_key, count(*) AS rows FROM tb;
-- into the bottom the tombstone goes
SELECT pk_compact('tb', true) IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('tb') WHERE kind = 'data';
SELECT count(*) FILTER (WHERE id = 5) AS deleted_key, count(*) AS rows FROM tb;

-- output runs are split at target_run_size
CREATE TABLE s (id int PRIMARY KEY, v text) USING pkmerge WITH (target_run_size = '64kB');
INSERT INTO s SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SELECT count(*) AS runs_before FROM pk_runs('s') WHERE kind = 'data';
SELECT pk_compact('s', true) IS NOT NULL AS compacted;
SELECT count(*) > 1 AS split, bool_and(size_bytes <= 64 * 1024 + 32 * 1024) AS near_target,
	   sum(record_count) AS records
FROM pk_runs('s') WHERE kind = 'data';
-- the pieces cover disjoint key ranges in order
SELECT bool_and(min_key::int > prev_max) AS disjoint
FROM (SELECT min_key, lag(max_key::int) OVER (ORDER BY min_key::int) AS prev_max
	  FROM pk_runs('s') WHERE kind = 'data') r WHERE prev_max IS NOT NULL;
SELECT count(*), sum(hashtext(v)) = (SELECT sum(hashtext(md5(g::text))) FROM generate_series(1, 20000) g) AS same_rows FROM s;
SELECT * FROM s WHERE id = 12345;

-- no compaction outputs to level 0 (as in Paimon): merging the two young
-- 1-row runs alone would stay at level 0 beside the large level-0 run, so
-- the pick takes that one in too, and everything goes to the bottom
CREATE TABLE l0 (id int PRIMARY KEY, v text) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 20, num_levels = 4,
		  compaction_small_run_ratio = 0);
INSERT INTO l0 SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO l0 VALUES (20001, 'a');
INSERT INTO l0 VALUES (20002, 'b');
SELECT pk_compact('l0') IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('l0') WHERE kind = 'data';
-- small runs above the bottom merge into the level above it
INSERT INTO l0 VALUES (20003, 'c');
INSERT INTO l0 VALUES (20004, 'd');
INSERT INTO l0 VALUES (20005, 'e');
SELECT pk_compact('l0') IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('l0') WHERE kind = 'data' ORDER BY level;
SELECT count(*), max(id) FROM l0;

-- small runs (compaction_small_run_ratio, 16 by default: level-0 runs 16
-- times smaller than the largest sorted run) do not count towards the
-- compaction trigger (eight count as one sorted run towards the stop
-- trigger), so fifteen 1-row commits beside a 20000-row run neither make
-- a compaction due nor make writers compact first ...
CREATE TABLE sm (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO sm SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SELECT pk_compact('sm', true) IS NOT NULL AS compacted;
SELECT run_id AS bottom_run FROM pk_runs('sm') WHERE kind = 'data' \gset
INSERT INTO sm VALUES (20001, 'a');
UPDATE sm SET v = 'b' WHERE id = 2;
DELETE FROM sm WHERE id = 3;
INSERT INTO sm VALUES (20002, 'c');
INSERT INTO sm VALUES (20003, 'd');
UPDATE sm SET v = 'e' WHERE id = 20001;
INSERT INTO sm VALUES (20004, 'f');
SELECT pk_compact('sm') AS seven_small_runs_not_due;
INSERT INTO sm VALUES (20005, 'g');
INSERT INTO sm VALUES (20006, 'h');
INSERT INTO sm VALUES (20007, 'i');
INSERT INTO sm VALUES (20008, 'j');
INSERT INTO sm VALUES (20009, 'k');
INSERT INTO sm VALUES (20010, 'l');
INSERT INTO sm VALUES (20011, 'm');
INSERT INTO sm VALUES (20012, 'n');
SELECT pk_compact('sm') AS fifteen_small_runs_not_due;
INSERT INTO sm VALUES (20013, 'o');
SELECT count(*) AS small_runs FROM pk_runs('sm') WHERE kind = 'data' AND level = 0;
-- ... but once sixteen of similar sizes are there (a tier: the size ratio
-- takes the youngest of similar sizes, all sixteen), they merge among
-- themselves into one level-0 run, keeping the delete's tombstone; the
-- 20000-row run is untouched
SELECT pk_compact('sm') IS NOT NULL AS compacted;
SELECT level, record_count, run_id = :bottom_run AS same_bottom_run
  FROM pk_runs('sm') WHERE kind = 'data' ORDER BY level, record_count;
SELECT count(*) AS rows, count(*) FILTER (WHERE id = 3) AS deleted_key,
	   string_agg(v, ',' ORDER BY id) FILTER (WHERE id = 2 OR id > 20000) AS changed
  FROM sm;
-- a newer commit stays the youngest run: its version of a key wins
UPDATE sm SET v = 'z' WHERE id = 20001;
SELECT v FROM sm WHERE id = 20001;
SELECT pk_compact('sm', true) IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('sm') WHERE kind = 'data';
SELECT v FROM sm WHERE id = 20001;
SELECT check_changelog('sm');

-- small runs merge by tiers of their rows: sixteen of fewer than sixteen
-- rows (above), then twelve of 16-191 rows, twelve of 192-2303 and so on,
-- so a row is rewritten about once per twelvefold growth of its run.
-- Eleven 20-row runs and a younger 1-row run are not due ...
CREATE TABLE tr (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO tr SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SELECT pk_compact('tr', true) IS NOT NULL AS compacted;
SELECT run_id AS bottom_run FROM pk_runs('tr') WHERE kind = 'data' \gset
SELECT format('UPDATE tr SET v = %L WHERE id BETWEEN %s AND %s', 'u' || g, g * 20 + 1, g * 20 + 20)
  FROM generate_series(1, 11) g \gexec
UPDATE tr SET v = 'one' WHERE id = 1;
SELECT pk_compact('tr') AS eleven_runs_of_a_tier_not_due;
SELECT level, count(*), sum(record_count) FROM pk_runs('tr') WHERE kind = 'data'
  GROUP BY level ORDER BY level;
-- ... the twelfth fills the tier: the twelve merge into one level-0 run,
-- the 1-row run between them going along, the bottom untouched
UPDATE tr SET v = 'u12' WHERE id BETWEEN 241 AND 260;
SELECT pk_compact('tr') IS NOT NULL AS compacted;
SELECT level, record_count, run_id = :bottom_run AS same_bottom_run
  FROM pk_runs('tr') WHERE kind = 'data' ORDER BY level, record_count;
-- a backlog of a tier (the worker busy elsewhere) merges as one run: the
-- twenty 1-row runs there, not sixteen of them
SELECT format('UPDATE tr SET v = %L WHERE id = %s', 'b' || g, g)
  FROM generate_series(1001, 1020) g \gexec
SELECT count(*) AS small_runs FROM pk_runs('tr') WHERE kind = 'data' AND level = 0
  AND record_count = 1;
SELECT pk_compact('tr') IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('tr') WHERE kind = 'data' ORDER BY level, record_count;
SELECT count(*) AS rows, count(*) FILTER (WHERE v = 'one') AS one,
	   count(*) FILTER (WHERE v ~ '^u[0-9]+$') AS updated,
	   count(*) FILTER (WHERE v ~ '^b[0-9]+$') AS backlog
  FROM tr;

-- every level holding a run leaves small runs alone: with levels 1 and 2
-- occupied (the trigger 2 reached by them alone, not exceeded), a 1-row
-- commit makes no compaction due, and pk_compact merges nothing (were the
-- small run counted as a sorted run, the run count would force a merge of
-- every level into the bottom at each small commit)
CREATE TABLE lv (id int PRIMARY KEY, v text) USING pkmerge
	WITH (num_levels = 3, num_sorted_run_compaction_trigger = 2,
		  num_sorted_run_stop_trigger = 8);
INSERT INTO lv SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SELECT pk_compact('lv', true) IS NOT NULL AS compacted;
INSERT INTO lv SELECT g, md5(g::text) FROM generate_series(20001, 22000) g;
INSERT INTO lv SELECT g, md5(g::text) FROM generate_series(22001, 24000) g;
SELECT pk_compact('lv') IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('lv') WHERE kind = 'data' ORDER BY level;
UPDATE lv SET v = 'x' WHERE id = 1;
SELECT pk_compact('lv') AS nothing_due;
SELECT level, record_count FROM pk_runs('lv') WHERE kind = 'data' ORDER BY level;
SELECT count(*), v FROM lv WHERE id IN (1, 24000) GROUP BY v ORDER BY v;
-- with the stop trigger at the compaction trigger, small runs alone can
-- reach it: they count there only beyond sixteen (where the worker is
-- asked to merge them), eight to one sorted run.  The 17th small commit
-- merges the sixteen before it first
ALTER TABLE lv SET (num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 3);
SELECT format('UPDATE lv SET v = %L WHERE id = %s', 'y' || g, g)
  FROM generate_series(2, 16) g \gexec
SELECT level, count(*), sum(record_count) FROM pk_runs('lv') WHERE kind = 'data'
  GROUP BY level ORDER BY level;
UPDATE lv SET v = 'z' WHERE id = 17;
SELECT level, record_count FROM pk_runs('lv') WHERE kind = 'data' ORDER BY level, record_count;
SELECT id, v FROM lv WHERE id <= 18 ORDER BY id;

-- each table's row in pkchangelog.tables names exactly its data runs
SELECT t, check_data_runs(t) FROM unnest('{c,tb,s,l0,sm,tr,lv}'::regclass[]) t;
DROP TABLE c, s, tb, l0, sm, tr, lv;

-- a commit's run that compaction keeps as a delta (producer none) is left
-- as it is when it is in its catalog row (no version of the tables row
-- names it any more, which makes it a delta); one on pages is retired, a
-- HOT update of its catalog row (no index covers a column it changes).
-- A transaction that compacted reads its data runs without the cache:
-- those its version of the tables row names and the ones it added
CREATE TABLE hr (id int PRIMARY KEY, v text) USING pkmerge
  WITH (changelog_producer = 'none');
INSERT INTO hr VALUES (1, 'a');
INSERT INTO hr SELECT g, 'b' FROM generate_series(2, 400) g;
SELECT (SELECT count(data_seq) FROM pkchangelog.log_snapshots('hr')) AS in_record,
	   count(*) FILTER (WHERE nblocks > 0 AND kind = 'data') AS on_pages
  FROM pkchangelog.runs WHERE relid = 'hr'::regclass;
DELETE FROM hr WHERE id > 2;
BEGIN;
INSERT INTO hr VALUES (3, 'c');
-- (the pending counts are flushed between transactions only, so they hold
-- earlier transactions' too: the compaction's are the difference)
SELECT n_tup_upd AS upd_before, n_tup_hot_upd AS hot_before
  FROM pg_stat_xact_user_tables WHERE relid = 'pkchangelog.runs'::regclass \gset
SELECT pk_compact('hr', true) IS NOT NULL AS compacted;
SELECT n_tup_upd - :upd_before AS runs_updated, n_tup_hot_upd - :hot_before AS by_hot_update
  FROM pg_stat_xact_user_tables WHERE relid = 'pkchangelog.runs'::regclass;
SELECT string_agg(id || v, ',' ORDER BY id) AS rows_in_compacting_xact FROM hr;
UPDATE hr SET v = 'd' WHERE id = 1;
SELECT string_agg(id || v, ',' ORDER BY id) AS rows_after_update FROM hr;
COMMIT;
SELECT string_agg(id || v, ',' ORDER BY id) AS rows_committed FROM hr;
SELECT kind, record_count FROM pk_runs('hr') ORDER BY created_snapshot, run_id;
SELECT runs_per_kind, runs_per_level FROM pk_stats('hr');
SELECT check_data_runs('hr');
DROP TABLE hr;
-- ... and when every run it replaces is such a delta (no run row written),
-- the transaction's commit still names the compaction's output, not the
-- runs it replaced
CREATE TABLE hr2 (id int PRIMARY KEY, v text) USING pkmerge
  WITH (changelog_producer = 'none');
INSERT INTO hr2 VALUES (1, 'a');
INSERT INTO hr2 VALUES (2, 'b');
BEGIN;
INSERT INTO hr2 VALUES (3, 'c');
SELECT pk_compact('hr2', true) IS NOT NULL AS compacted;
COMMIT;
SELECT level, kind, record_count FROM pk_runs('hr2') ORDER BY created_snapshot, run_id;
SELECT check_data_runs('hr2');
SELECT string_agg(id || v, ',' ORDER BY id) AS rows_committed FROM hr2;
DROP TABLE hr2;
-- A cursor opened before a compaction of its own transaction reads on
-- from the runs it started with (small ones, kept in their snapshots'
-- rows): its key lookups (a nested loop's inner index scan, rescanned
-- for each row) take the run list once.  The backend's run list cache
-- hands out runs that share their bytes with it, and keeps the runs the
-- compaction replaced until the transaction ends (freed at once, they
-- were read from freed memory: "corrupt block" in an assert-enabled
-- build).  Then a compaction rolled back to a savepoint (its list
-- dropped from the cache), and the next transaction, on the new runs.
CREATE TABLE cur (id int PRIMARY KEY, v text) USING pkmerge
  WITH (changelog_producer = 'input');
INSERT INTO cur VALUES (1, 'one'), (2, 'two');
INSERT INTO cur VALUES (3, 'three');
INSERT INTO cur VALUES (4, 'four');
UPDATE cur SET v = v || '!' WHERE id = 2;
SELECT level, kind, record_count FROM pk_runs('cur') ORDER BY run_id;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
BEGIN;
DECLARE c1 CURSOR FOR
  SELECT g, (SELECT v FROM cur WHERE id = g) FROM generate_series(1, 5) g;
FETCH 1 FROM c1;
SELECT pk_compact('cur', true) IS NOT NULL AS compacted;
SELECT level, record_count FROM pk_runs('cur') WHERE kind = 'data';
FETCH ALL FROM c1;
COMMIT;
INSERT INTO cur VALUES (5, 'five');
INSERT INTO cur VALUES (6, 'six');
BEGIN;
DECLARE c2 CURSOR FOR
  SELECT g, (SELECT v FROM cur WHERE id = g) FROM generate_series(1, 7) g;
FETCH 2 FROM c2;
SAVEPOINT s;
SELECT pk_compact('cur', true) IS NOT NULL AS compacted;
ROLLBACK TO SAVEPOINT s;
FETCH ALL FROM c2;
COMMIT;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT string_agg(id || v, ',' ORDER BY id) AS rows_next_xact FROM cur;
SELECT level, kind, record_count FROM pk_runs('cur') ORDER BY run_id;
SELECT check_data_runs('cur');
DROP TABLE cur;
