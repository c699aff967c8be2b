-- consume.sql: consumer positions.  pk_consume returns the changes after a
-- consumer's position, at most max_snapshots snapshots of them, and moves
-- the position in the caller's transaction (a rollback delivers them
-- again); a new consumer starts at the oldest retained snapshot;
-- pk_consumers lists positions; expiration keeps what a consumer has yet
-- to read, unless the consumer was idle for consumer_expiration_time; a
-- position before the oldest retained snapshot is an error, never a gap,
-- until pk_consumer_drop forgets the consumer; wrong arguments are refused.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE co (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup', snapshot_num_retained_min = 1,
		  snapshot_num_retained_max = 2);
INSERT INTO co VALUES (1, 1), (2, 2);
UPDATE co SET v = 10 WHERE k = 1;

-- a new consumer starts at the oldest retained snapshot; max_snapshots
SELECT * FROM pk_consume('co', 'etl', 1);
SELECT * FROM pk_consume('co', 'etl');
SELECT * FROM pk_consume('co', 'etl');
SELECT consumer_id, next_snapshot_id FROM pk_consumers('co');

-- rollback delivers again, commit never
DELETE FROM co WHERE k = 2;
BEGIN;
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'etl');
ROLLBACK;
BEGIN;
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'etl');
COMMIT;
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'etl');
-- max_snapshots 0 reads nothing and keeps the position
SELECT count(*) FROM pk_consume('co', 'etl', 0);
SELECT consumer_id, next_snapshot_id FROM pk_consumers('co');

-- expiration keeps what a consumer has yet to read: 'slow' starts at the
-- oldest retained snapshot (1) and holds it; retention alone would keep 2
SELECT count(*) FROM pk_consume('co', 'slow', 0);
INSERT INTO co VALUES (5, 5);
INSERT INTO co VALUES (6, 6);
INSERT INTO co VALUES (7, 7);
SELECT pk_expire_snapshots('co');
SELECT min(snapshot_id), max(snapshot_id) FROM pk_snapshots('co');
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'slow', 2);
SELECT pk_expire_snapshots('co');
SELECT min(snapshot_id) FROM pk_snapshots('co');
SELECT consumer_id, next_snapshot_id FROM pk_consumers('co');

-- consumer_expiration_time: consumers idle that long hold nothing (they
-- stay listed)
ALTER TABLE co SET (consumer_expiration_time = '10ms');
SELECT key, value FROM pk_options('co') WHERE key = 'consumer_expiration_time';
SELECT pg_sleep(0.05);
SELECT pk_expire_snapshots('co');
SELECT min(snapshot_id), max(snapshot_id) FROM pk_snapshots('co');
SELECT consumer_id, next_snapshot_id, last_consumed < now() AS idle FROM pk_consumers('co');
ALTER TABLE co RESET (consumer_expiration_time);

-- a position before the oldest retained snapshot is an error, never a gap:
-- 'etl' read up to snapshot 3, and 4 expired since
SELECT * FROM pk_consume('co', 'etl');
-- pk_consumer_drop forgets it: it starts again at the oldest retained
SELECT pk_consumer_drop('co', 'etl'), pk_consumer_drop('co', 'no such consumer');
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'etl');
-- a TRUNCATE takes the snapshots before it with the old storage: a
-- consumer that had not read them all finds its position gone
SELECT count(*) FROM pk_consume('co', 'late', 1);
TRUNCATE co;
INSERT INTO co VALUES (8, 8);
SELECT * FROM pk_consume('co', 'late');
-- one that had reads the TRUNCATE (lookup: the -D of every row) and on
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'etl');

-- wrong arguments
SELECT * FROM pk_consume('co', NULL);
SELECT pk_consumer_drop('co', NULL);
SELECT * FROM pk_consume('co', 'etl', -1);
SELECT * FROM pk_consume('no_such_table', 'etl');
SELECT * FROM pk_consume(NULL, 'etl');
CREATE TABLE co_heap (k int PRIMARY KEY);
SELECT * FROM pk_consume('co_heap', 'etl');
ALTER TABLE co SET (consumer_expiration_time = 'soon');

-- SELECT on the table is needed, checked before its lock; positions are
-- table-level metadata
CREATE ROLE co_reader;
CREATE ROLE co_stranger;
GRANT SELECT ON co TO co_reader;
SET ROLE co_stranger;
SELECT * FROM pk_consume('co', 'x');
SELECT pk_consumer_drop('co', 'etl');
SELECT consumer_id, next_snapshot_id FROM pk_consumers('co');
SET ROLE co_reader;
SELECT snapshot_id, rowkind, row FROM pk_consume('co', 'reader');
RESET ROLE;

-- DROP TABLE drops its consumers
SELECT 'co'::regclass::oid AS co_oid \gset
DROP TABLE co, co_heap;
SELECT count(*) FROM pkchangelog.consumers WHERE relid = :co_oid;
DROP ROLE co_reader, co_stranger;
