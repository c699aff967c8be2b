-- spill.sql: a write buffer that outgrows write_buffer_size spills into
-- runs of the writing transaction (DESIGN §4), which later commands see,
-- savepoints roll back, and the commit makes part of its one snapshot.
-- Rows carry 2000 bytes of padding, so 1MB holds about 500 of them.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE TABLE sp (id int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'input');
CREATE VIEW sp_runs AS
	SELECT count(*) FILTER (WHERE kind = 'data') AS data_runs,
		   count(*) FILTER (WHERE kind = 'changelog') AS changelog_runs,
		   sum(record_count) FILTER (WHERE kind = 'data') AS data_records,
		   count(*) FILTER (WHERE created_snapshot = 0) AS uncommitted
	FROM pk_runs('sp');

-- one statement, 3MB: runs spilled while it ran are there for the next one
BEGIN;
INSERT INTO sp SELECT i, i, repeat('x', 2000) FROM generate_series(1, 1500) i;
SELECT * FROM sp_runs;
SELECT count(*), sum(v) FROM sp;
SELECT id, v, length(pad) FROM sp WHERE id IN (1, 700, 1500) ORDER BY id;
-- read-modify-writes of spilled rows, spilling again
UPDATE sp SET v = v + 1 WHERE id % 2 = 0;
SELECT count(*), sum(v) FROM sp;
DELETE FROM sp WHERE id > 1400;
SELECT count(*), sum(v), max(id) FROM sp;
COMMIT;
-- one APPEND snapshot, counting the records of every run of the commit
-- (a key spilled twice counts twice)
SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count
FROM pk_snapshots('sp') WHERE commit_kind = 'APPEND';
SELECT * FROM sp_runs;
SELECT count(*), sum(v), max(id) FROM sp;
-- the input producer's stream is the transaction's records, in order per key
SELECT count(*) AS changes FROM pk_changes('sp');
SELECT check_changelog('sp') AS input_stream;

-- ROLLBACK TO discards the runs spilled since the savepoint
BEGIN;
INSERT INTO sp VALUES (5000, 1, 'kept');
SAVEPOINT s1;
INSERT INTO sp SELECT i, 0, repeat('y', 2000) FROM generate_series(2001, 3500) i;
SELECT count(*) FROM sp;
ROLLBACK TO s1;
SELECT count(*), sum(v) FROM sp;
INSERT INTO sp VALUES (5001, 1, 'kept too');
COMMIT;
SELECT count(*), sum(v) FROM sp;
SELECT snapshot_id, commit_kind, delta_record_count FROM pk_snapshots('sp')
WHERE commit_kind = 'APPEND' ORDER BY snapshot_id DESC LIMIT 1;
SELECT * FROM sp_runs;
SELECT check_changelog('sp') AS input_stream;

-- a row updated twice by one command is updated once, as on heap, even
-- when the first update went out with a spill (TM_SelfModified)
CREATE TABLE sp_heap (id int PRIMARY KEY, v int, pad text);
INSERT INTO sp_heap SELECT id, v, pad FROM sp;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
UPDATE sp SET v = sp.v + 1
FROM (SELECT CASE WHEN g = 1501 THEN 1 ELSE g END AS id
	  FROM generate_series(1, 1501) g) s
WHERE sp.id = s.id;
UPDATE sp SET v = sp.v + 1
FROM (SELECT CASE WHEN g = 1501 THEN 1 ELSE g END AS id
	  FROM generate_series(1, 1501) g) s
WHERE sp.id = s.id;
UPDATE sp_heap SET v = sp_heap.v + 1
FROM (SELECT CASE WHEN g = 1501 THEN 1 ELSE g END AS id
	  FROM generate_series(1, 1501) g) s
WHERE sp_heap.id = s.id;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_seqscan;
SELECT (SELECT sum(v) FROM sp) AS pkmerge, (SELECT sum(v) FROM sp_heap) AS heap,
	   (SELECT v FROM sp WHERE id = 1) AS pkmerge_1, (SELECT v FROM sp_heap WHERE id = 1) AS heap_1;
SELECT check_changelog('sp') AS input_stream;

-- a key written again by a later command wins over its spilled version;
-- a key an earlier command left in the buffer stays there, newest (lookup
-- makes the changelog of these upserts)
CREATE TABLE sp_over (id int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'lookup');
INSERT INTO sp_over SELECT i, 0, 'small' FROM generate_series(1, 10) i;
BEGIN;
UPDATE sp_over SET v = -1 WHERE id = 1;
INSERT INTO sp_over SELECT i, 10, repeat('z', 2000) FROM generate_series(1, 1500) i;
INSERT INTO sp_over SELECT i, 20, repeat('z', 2000) FROM generate_series(1, 1500) i WHERE i % 3 = 0;
SELECT v, count(*) FROM sp_over WHERE id <= 1500 GROUP BY v ORDER BY v;
COMMIT;
SELECT v, count(*) FROM sp_over WHERE id <= 1500 GROUP BY v ORDER BY v;
SELECT pk_compact('sp_over', true) > 0 AS compacted;
SELECT v, count(*) FROM sp_over WHERE id <= 1500 GROUP BY v ORDER BY v;
SELECT check_changelog('sp_over') AS lookup_stream;

-- ON CONFLICT checks its proposed rows against each other: its command
-- does not spill, so a duplicate far down still fails as on heap
INSERT INTO sp SELECT CASE WHEN g = 1501 THEN 1 ELSE g END, 0, repeat('o', 2000)
FROM generate_series(1, 1501) g
ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
SELECT count(*), sum(v) FROM sp;

-- lookup: the values before the commit against the values after, whether
-- they were spilled or not
CREATE TABLE sp_lookup (id int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'lookup');
INSERT INTO sp_lookup SELECT i, i, 'small' FROM generate_series(1, 1000) i;
BEGIN;
UPDATE sp_lookup SET v = v * 10, pad = repeat('u', 2000);
DELETE FROM sp_lookup WHERE id % 10 = 0;
INSERT INTO sp_lookup SELECT i, 0, repeat('n', 2000) FROM generate_series(1001, 1400) i;
UPDATE sp_lookup SET v = 7 WHERE id = 5;
SELECT count(*) FILTER (WHERE created_snapshot = 0) > 0 AS spilled FROM pk_runs('sp_lookup');
COMMIT;
SELECT count(*), sum(v) FROM sp_lookup;
SELECT rowkind, count(*) FROM pk_changes('sp_lookup', 1) GROUP BY rowkind ORDER BY rowkind;
SELECT check_changelog('sp_lookup') AS lookup_stream;

-- AFTER ROW triggers name rows by TID until their statement ends: such a
-- table spills between statements only, and every event finds its row
CREATE TABLE sp_log (id int, v int);
CREATE FUNCTION sp_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO sp_log VALUES (NEW.id, NEW.v);
	RETURN NULL;
END $$;
CREATE TABLE sp_trig (id int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE TRIGGER sp_trig_after AFTER INSERT OR UPDATE ON sp_trig
	FOR EACH ROW EXECUTE FUNCTION sp_log_row();
BEGIN;
INSERT INTO sp_trig SELECT i, i, repeat('t', 2000) FROM generate_series(1, 1500) i;
SELECT count(*) AS runs_after_statement FROM pk_runs('sp_trig');
UPDATE sp_trig SET v = -v WHERE id <= 600;
COMMIT;
SELECT count(*), sum(v) FROM sp_log;
SELECT count(*), sum(v) FROM sp_trig;

-- TRUNCATE after spills: their runs go with the old storage; rolled back
-- to a savepoint before it, they are all there again
CREATE TABLE sp_tr (id int PRIMARY KEY, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB');
BEGIN;
INSERT INTO sp_tr SELECT i, repeat('a', 2000) FROM generate_series(1, 1500) i;
SELECT count(*) > 0 AS spilled FROM pk_runs('sp_tr') WHERE created_snapshot = 0;
SAVEPOINT before_truncate;
TRUNCATE sp_tr;
INSERT INTO sp_tr VALUES (1, 'after');
SELECT count(*), max(pad) FROM sp_tr;
ROLLBACK TO before_truncate;
SELECT count(*), sum(length(pad)) FROM sp_tr;
TRUNCATE sp_tr;
INSERT INTO sp_tr SELECT i, repeat('b', 2000) FROM generate_series(1, 1200) i;
COMMIT;
SELECT count(*), min(pad) = max(pad) AS all_b FROM sp_tr;
SELECT snapshot_id, commit_kind, total_record_count FROM pk_snapshots('sp_tr');

-- COPY spills as INSERT does
CREATE TABLE sp_copy (id int PRIMARY KEY, pad text DEFAULT repeat('c', 2000)) USING pkmerge
	WITH (write_buffer_size = '1MB');
BEGIN;
COPY sp_copy (id) FROM PROGRAM 'seq 1 3000';
SELECT count(*) > 0 AS spilled FROM pk_runs('sp_copy') WHERE created_snapshot = 0;
SELECT count(*), sum(id) FROM sp_copy;
COMMIT;
SELECT count(*), sum(id), min(length(pad)) FROM sp_copy;

-- a cursor opened before a spilling statement keeps its snapshot of the
-- transaction's writes: it sees the rows before, not the ones after
BEGIN;
INSERT INTO sp_copy SELECT i, 'early' FROM generate_series(5001, 5100) i;
DECLARE cur CURSOR FOR SELECT id, left(pad, 5) AS pad FROM sp_copy WHERE id > 2990 AND id % 50 = 0;
FETCH 1 FROM cur;
INSERT INTO sp_copy SELECT i, repeat('d', 2000) FROM generate_series(6001, 8000) i;
SELECT count(*) > 0 AS spilled FROM pk_runs('sp_copy') WHERE created_snapshot = 0;
FETCH ALL FROM cur;
CLOSE cur;
SELECT count(*) FROM sp_copy WHERE id > 2990 AND id % 50 = 0;
COMMIT;

-- spills out of a log longer than one segment (4096 records): keys the
-- first statement holds stay in the buffer and move down across segments
CREATE TABLE sp_seg (id int PRIMARY KEY, v int) USING pkmerge
	WITH (write_buffer_size = '1MB');
BEGIN;
INSERT INTO sp_seg SELECT g, 1 FROM generate_series(1, 5000) g;
INSERT INTO sp_seg SELECT g, 2 FROM generate_series(20000, 1, -1) g;
SELECT count(*) AS spilled_runs, sum(record_count) AS spilled_records
FROM pk_runs('sp_seg') WHERE created_snapshot = 0;
SELECT count(*), sum(v), count(DISTINCT id), count(*) FILTER (WHERE v = 1) AS first_versions
FROM sp_seg;
UPDATE sp_seg SET v = 3 WHERE id % 7 = 0;
SELECT count(*), sum(v) FROM sp_seg;
COMMIT;
SELECT count(*), sum(v), count(DISTINCT id) FROM sp_seg;

-- a statement whose data-modifying WITH writes the table another part of
-- it writes too keeps its records in the buffer until it ends: here each
-- row moves to its key with '_' appended while the rows already at those
-- keys move on, about 1.5 MB of records.  Spilled halfway, the insert of 'k1_'
-- (from 'k1') made the delete of the old 'k1_' find it "already changed by
-- this command": 'k1_' was neither deleted nor returned, and its row was
-- lost.  The heap twin, with a deferrable key, says what is right (the
-- records spill once the statement has ended)
CREATE TABLE sp_cte (s text PRIMARY KEY, v text) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE TABLE sp_cte_heap (s text PRIMARY KEY DEFERRABLE, v text);
INSERT INTO sp_cte_heap
SELECT 'k' || g || suffix, (SELECT string_agg(md5((g * 100 + j)::text || suffix), '')
							FROM generate_series(1, 80) j)
FROM generate_series(1, 150) g, unnest('{"", "_"}'::text[]) suffix;
INSERT INTO sp_cte SELECT * FROM sp_cte_heap;
WITH d AS (DELETE FROM sp_cte_heap WHERE s >= 'k' AND s < 'l' RETURNING *)
INSERT INTO sp_cte_heap SELECT s || '_', v FROM d;
BEGIN;
WITH d AS (DELETE FROM sp_cte WHERE s >= 'k' AND s < 'l' RETURNING *)
INSERT INTO sp_cte SELECT s || '_', v FROM d;
SELECT count(*) AS spilled_runs FROM pk_runs('sp_cte') WHERE created_snapshot = 0;
COMMIT;
SELECT count(*) AS rows, count(*) FILTER (WHERE s LIKE '%\_\_') AS moved_twice,
	   (SELECT count(*) FROM (SELECT * FROM sp_cte EXCEPT SELECT * FROM sp_cte_heap) a) AS not_in_heap,
	   (SELECT count(*) FROM (SELECT * FROM sp_cte_heap EXCEPT SELECT * FROM sp_cte) b) AS not_in_pkmerge
FROM sp_cte;
-- a statement writing it large without such a WITH still spills
BEGIN;
UPDATE sp_cte SET v = v || 'x';
SELECT count(*) > 0 AS spilled FROM pk_runs('sp_cte') WHERE created_snapshot = 0;
ROLLBACK;

-- each table's row in pkchangelog.tables names exactly its data runs
-- (spilled runs join it at their commit; a TRUNCATE starts it anew)
SELECT t, check_data_runs(t)
FROM unnest('{sp,sp_over,sp_lookup,sp_trig,sp_tr,sp_copy,sp_seg,sp_cte}'::regclass[]) t;
DROP TABLE sp_tr, sp_copy, sp_seg, sp_cte, sp_cte_heap;
DROP VIEW sp_runs;
DROP TABLE sp, sp_heap, sp_over, sp_lookup, sp_trig, sp_log;
DROP FUNCTION sp_log_row();
