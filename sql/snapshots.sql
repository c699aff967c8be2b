-- snapshots.sql: one APPEND snapshot per committing transaction that wrote
-- the table (dense ids from 1), OVERWRITE for TRUNCATE, none for a
-- transaction that wrote nothing; the counts pk_snapshots reports; the runs
-- pk_runs lists; and DROP TABLE removes every catalog row of the table.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2)) USING pkmerge;
SELECT count(*) FROM pk_snapshots('orders');
SELECT count(*) FROM pk_runs('orders');

INSERT INTO orders VALUES (1001, 10, 100);
UPDATE orders SET amount = 80 WHERE order_id = 1001;
BEGIN;
INSERT INTO orders VALUES (1002, 10, 1), (1003, 20, 2);
INSERT INTO orders VALUES (1002, 10, 3);
DELETE FROM orders WHERE order_id = 1003;
COMMIT;
-- a read-only transaction and a failed one commit nothing
SELECT count(*) FROM orders;
INSERT INTO orders VALUES (NULL, 1, 1);
-- DELETE of an absent key writes nothing; pk_write of -D is a write (a tombstone)
DELETE FROM orders WHERE order_id = 5555;
SELECT pk_write('orders', '-D', ROW(5555, 0, 0)::orders);

SELECT snapshot_id, commit_kind, commit_user = current_user AS by_me,
	   commit_xid IS NOT NULL AS has_xid, commit_time <= now() AS in_past,
	   total_record_count, delta_record_count, changelog_record_count
FROM pk_snapshots('orders');
-- snapshot times and xids increase with ids
SELECT bool_and(commit_time >= prev_time AND commit_xid > prev_xid) AS ordered
FROM (SELECT commit_time, commit_xid, lag(commit_time) OVER w AS prev_time, lag(commit_xid) OVER w AS prev_xid
	  FROM pk_snapshots('orders') WINDOW w AS (ORDER BY snapshot_id)) s
WHERE prev_time IS NOT NULL;

SELECT level, kind, record_count, size_bytes > 0 AS has_bytes, min_key, max_key, created_snapshot
FROM pk_runs('orders') ORDER BY created_snapshot;

-- TRUNCATE: the snapshots before it expire (their changes were in the old
-- storage); ids go on
TRUNCATE orders;
INSERT INTO orders VALUES (7, 7, 7);
SELECT snapshot_id, commit_kind, total_record_count, delta_record_count FROM pk_snapshots('orders');
SELECT level, record_count, min_key, max_key, created_snapshot FROM pk_runs('orders');

-- The first small commit opens the table's commit log (a page of its
-- file), which writes the table's row; after it, a commit of one small run
-- leaves the row as it is while fewer than 64 commits are folded after
-- it: the 65th commit, the 64th after the row, writes it (no compaction
-- here; expiration, which every 64th commit runs, keeps every snapshot,
-- and writes the row only before it expires one folded after it).  The
-- state is the row
-- and the commits past it, whichever reads it: ids stay dense, pk_stats
-- counts every commit, the rows are all there, and a TRUNCATE writes them
-- into the row before it removes their runs (ids go on).
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE TABLE folds (id int PRIMARY KEY, v int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 100, num_sorted_run_stop_trigger = 101);
DO $$
BEGIN
	FOR g IN 1..70 LOOP
		INSERT INTO folds VALUES (g, g);
		COMMIT;
	END LOOP;
END $$;
SELECT last_snapshot_id AS row_snapshot, commits AS row_commits,
	   cardinality(data_runs) AS row_runs, total_record_count AS row_records
FROM pkchangelog.tables WHERE relid = 'folds'::regclass;
SELECT max(snapshot_id) AS last, count(*) AS snapshots FROM pk_snapshots('folds');
SELECT commits, runs_per_kind FROM pk_stats('folds');
SELECT pk_current_snapshot('folds'), count(*), sum(v) FROM folds;
SELECT check_data_runs('folds');
UPDATE folds SET v = v + 1 WHERE id = 70;
SELECT max(snapshot_id) AS last FROM pk_snapshots('folds');
TRUNCATE folds;
INSERT INTO folds VALUES (1, 1);
SELECT snapshot_id, commit_kind FROM pk_snapshots('folds');
SELECT last_snapshot_id AS row_snapshot, commits AS row_commits
FROM pkchangelog.tables WHERE relid = 'folds'::regclass;
SELECT commits FROM pk_stats('folds');
DROP TABLE folds;


-- DROP removes the table's catalog rows, in its transaction
SELECT 'orders'::regclass::oid AS relid \gset
BEGIN;
DROP TABLE orders;
ROLLBACK;
SELECT (SELECT count(*) FROM pkchangelog.tables WHERE relid = :relid) AS tables,
	   (SELECT count(*) FROM pkchangelog.snapshots WHERE relid = :relid) AS snapshots,
	   (SELECT count(*) FROM pkchangelog.runs WHERE relid = :relid) AS runs;
DROP TABLE orders;
SELECT (SELECT count(*) FROM pkchangelog.tables WHERE relid = :relid) AS tables,
	   (SELECT count(*) FROM pkchangelog.snapshots WHERE relid = :relid) AS snapshots,
	   (SELECT count(*) FROM pkchangelog.runs WHERE relid = :relid) AS runs;

-- created, written and dropped in one transaction: nothing remains
BEGIN;
CREATE TABLE brief (id int PRIMARY KEY) USING pkmerge;
INSERT INTO brief VALUES (1);
DROP TABLE brief;
COMMIT;
SELECT count(*) AS orphans FROM pkchangelog.runs r WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = r.relid);

-- a Citus distributed table's own table on the coordinator holds no rows
-- (its shards do): the pk_* functions say so instead of showing an empty
-- history.  Citus's catalog is imitated here: the extension does not
-- depend on Citus, it looks for pg_catalog.pg_dist_partition.
CREATE TABLE dist (id int PRIMARY KEY, v int) USING pkmerge;
CREATE TABLE shard_102008 (id int PRIMARY KEY, v int) USING pkmerge;
SET allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass NOT NULL, partmethod "char" NOT NULL);
RESET allow_system_table_mods;
SELECT count(*) AS not_listed_yet FROM pk_snapshots('dist');
INSERT INTO pg_catalog.pg_dist_partition VALUES ('dist', 'h');
SELECT * FROM pk_snapshots('dist');
SELECT * FROM pk_changes('dist');
SELECT * FROM pk_consume('dist', 'c');
SELECT pk_write('dist', '+I', ROW(1, 1)::dist);
SELECT pk_current_snapshot('dist');
-- whatever the plan: one that reads the table's (no) snapshots or
-- consumers before anything else still checks the argument
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT * FROM pk_snapshots('dist');
RESET enable_nestloop;
RESET enable_mergejoin;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT * FROM pk_consumers('dist');
RESET enable_indexscan;
RESET enable_bitmapscan;
-- a shard is not listed: its functions work
INSERT INTO shard_102008 VALUES (1, 1);
SELECT snapshot_id, rowkind, row FROM pk_changes('shard_102008');
SET allow_system_table_mods = on;
DROP TABLE pg_catalog.pg_dist_partition;
RESET allow_system_table_mods;
SELECT count(*) AS no_catalog_no_check FROM pk_snapshots('dist');
DROP TABLE dist, shard_102008;

-- A small commit's snapshot is a record on a commit log page; the records
-- after a page's first are written against it (their commit time from its
-- time, their role left out when it is its role).  Each reads back its own
-- role, and a commit time between its statement's and the next one's:
-- t1, whose page begins with the superuser's commit, and t2, whose page
-- begins with another role's.
CREATE ROLE regress_snap_writer;
CREATE TABLE byrole_t1 (k int PRIMARY KEY, at timestamptz) USING pkmerge;
CREATE TABLE byrole_t2 (k int PRIMARY KEY, at timestamptz) USING pkmerge;
GRANT SELECT, INSERT ON byrole_t1, byrole_t2 TO regress_snap_writer;
-- each insert a commit of its own, by the role its step names
SELECT CASE WHEN by_writer THEN 'SET ROLE regress_snap_writer' ELSE 'RESET ROLE' END,
	   format('INSERT INTO %I VALUES (%s, clock_timestamp())', t, k)
FROM (VALUES (1, 'byrole_t1', 1, false), (2, 'byrole_t1', 2, true),
			 (3, 'byrole_t2', 1, true), (4, 'byrole_t1', 3, false),
			 (5, 'byrole_t2', 2, false), (6, 'byrole_t1', 4, true),
			 (7, 'byrole_t2', 3, true), (8, 'byrole_t2', 4, false),
			 (9, 'byrole_t1', 5, false), (10, 'byrole_t2', 5, false))
	 AS v(step, t, k, by_writer)
ORDER BY step \gexec
RESET ROLE;
SELECT r.t, s.snapshot_id,
	   CASE WHEN s.commit_user = current_user THEN 'me' ELSE s.commit_user END AS by,
	   r.at <= s.commit_time AND
	   s.commit_time <= coalesce(lead(r.at) OVER (PARTITION BY r.t ORDER BY r.k), now())
	   AS time_in_place
FROM (SELECT 'byrole_t1'::regclass AS t, * FROM byrole_t1
	  UNION ALL SELECT 'byrole_t2'::regclass, * FROM byrole_t2) r,
	 LATERAL pk_snapshots(r.t) s
WHERE s.snapshot_id = r.k
ORDER BY 1, 2;
DROP TABLE byrole_t1, byrole_t2;
DROP ROLE regress_snap_writer;
