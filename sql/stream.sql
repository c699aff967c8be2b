-- stream.sql: what a consumer of pk_changes relies on.  Every snapshot
-- pk_snapshots lists keeps its changes until it expires, across producer
-- switches in either direction, and each change names the producer that
-- made it; a range is read whole or refused (expired, beyond the newest
-- snapshot, negative, reversed), never partly; a TRUNCATE is in the
-- stream: the -D of every row it removed for the producers that retract
-- (lookup, full-compaction: as their stream told the rows), one TRUNCATE
-- record for none and input; rows show in the table's current shape.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all

-- producer switches keep every listed snapshot's changes
CREATE TABLE sw (k int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO sw VALUES (1, 1);
INSERT INTO sw VALUES (2, 2);
INSERT INTO sw VALUES (3, 3);
ALTER TABLE sw SET (changelog_producer = 'lookup');
INSERT INTO sw VALUES (4, 4);
INSERT INTO sw VALUES (1, 10);
SELECT pk_compact('sw', true) IS NOT NULL AS compacted;
-- into full-compaction and out again: each switch compacts fully under the
-- producer it leaves, so nothing is lost or told twice
ALTER TABLE sw SET (changelog_producer = 'full-compaction');
INSERT INTO sw VALUES (2, 20);
UPDATE sw SET v = 21 WHERE k = 2;
ALTER TABLE sw SET (changelog_producer = 'input');
DELETE FROM sw WHERE k = 3;
ALTER TABLE sw SET (changelog_producer = 'none');
INSERT INTO sw VALUES (5, 5);
SELECT pk_compact('sw', true) IS NOT NULL AS compacted;
SELECT snapshot_id, commit_kind, producer, changelog_record_count FROM pk_snapshots('sw');
SELECT * FROM pk_changes('sw');

-- ranges: (from, to]; NULL from: from the oldest retained; NULL to: up to
-- the newest (pk_current_snapshot)
SELECT pk_current_snapshot('sw');
SELECT count(*) FROM pk_changes('sw', 3, 5);
SELECT count(*) FROM pk_changes('sw', NULL, 2);
SELECT count(*) FROM pk_changes('sw', pk_current_snapshot('sw'));
SELECT * FROM pk_changes('sw', 5, 4);
SELECT * FROM pk_changes('sw', -1);
SELECT * FROM pk_changes('sw', 0, -2);
-- a position beyond the newest snapshot: another numbering (the table was
-- created anew, e.g. restored from a dump)
SELECT * FROM pk_changes('sw', 99);
-- expired snapshots: a range reaching into them is refused, never cut
ALTER TABLE sw SET (snapshot_num_retained_min = 1, snapshot_num_retained_max = 3,
					snapshot_time_retained = '1ms');
SELECT pk_expire_snapshots('sw') > 0 AS expired;
SELECT min(snapshot_id) AS oldest FROM pk_snapshots('sw') \gset
SELECT count(*) AS changes FROM pk_changes('sw', :oldest - 1);
SELECT * FROM pk_changes('sw', :oldest - 2);
SELECT * FROM pk_changes('sw', 0);
SELECT count(*) AS changes FROM pk_changes('sw');
DROP TABLE sw;

-- TRUNCATE, for every producer, with rows written before and after it in
-- its transaction, and a spill after it
CREATE TABLE tr_none (k int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE TABLE tr_input (k int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (changelog_producer = 'input', write_buffer_size = '1MB');
CREATE TABLE tr_lookup (k int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (changelog_producer = 'lookup', write_buffer_size = '1MB');
CREATE TABLE tr_fc (k int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (changelog_producer = 'full-compaction', write_buffer_size = '1MB');
CREATE FUNCTION tr_all(stmt text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['tr_none', 'tr_input', 'tr_lookup', 'tr_fc'] LOOP
		EXECUTE format(stmt, t);
	END LOOP;
END $$;
SELECT tr_all('INSERT INTO %I VALUES (1, 1, ''a''), (2, 2, ''a''), (3, 3, ''a'')');
SELECT pk_compact('tr_fc', true) IS NOT NULL AS compacted;
-- full-compaction has told (2, 2); (2, 22) is not told yet
SELECT tr_all('UPDATE %I SET v = 22 WHERE k = 2');
BEGIN;
SELECT tr_all('INSERT INTO %I VALUES (4, 4, ''before'')');
SELECT tr_all('TRUNCATE %I');
SELECT tr_all('INSERT INTO %I VALUES (2, 200, ''after'')');
SELECT tr_all('INSERT INTO %I SELECT i, i, repeat(''s'', 1000) FROM generate_series(10, 2000) i');
SELECT count(*) > 0 AS spilled FROM pk_runs('tr_lookup') WHERE created_snapshot = 0 AND kind = 'data';
COMMIT;
SELECT snapshot_id, rowkind, row->>'k' AS k, row->>'v' AS v
FROM pk_changes('tr_lookup', (SELECT min(snapshot_id) - 1 FROM pk_snapshots('tr_lookup')))
WHERE (row->>'k')::int < 10 OR row IS NULL ORDER BY 1, 2 DESC, 3;
SELECT snapshot_id, rowkind, row->>'k' AS k, row->>'v' AS v
FROM pk_changes('tr_fc', (SELECT min(snapshot_id) - 1 FROM pk_snapshots('tr_fc')))
WHERE (row->>'k')::int < 10 OR row IS NULL;
SELECT t, (SELECT string_agg(rowkind, ',') FROM (SELECT rowkind FROM pk_changes(t::regclass)
		   WHERE row IS NULL OR (row->>'k')::int < 10) x) AS first_changes
FROM unnest(ARRAY['tr_none', 'tr_input']) t;
SELECT pk_compact('tr_fc', true) IS NOT NULL AS compacted;
SELECT check_changelog('tr_input') AS input, check_changelog('tr_lookup') AS lookup,
	   check_changelog('tr_fc') AS full_compaction;
SELECT snapshot_id, commit_kind, changelog_record_count FROM pk_snapshots('tr_lookup');

-- a TRUNCATE rolled back to a savepoint leaves no trace; two in one
-- transaction retract the committed rows once
BEGIN;
SAVEPOINT s;
TRUNCATE tr_lookup;
ROLLBACK TO s;
INSERT INTO tr_lookup VALUES (5, 5, 'x');
COMMIT;
SELECT rowkind, count(*) FROM pk_changes('tr_lookup', pk_current_snapshot('tr_lookup') - 1) GROUP BY 1;
BEGIN;
TRUNCATE tr_lookup;
INSERT INTO tr_lookup VALUES (6, 6, 'y');
TRUNCATE tr_lookup;
INSERT INTO tr_lookup VALUES (7, 7, 'z');
COMMIT;
SELECT rowkind, count(*) FROM pk_changes('tr_lookup') GROUP BY 1 ORDER BY 1;
SELECT check_changelog('tr_lookup') AS lookup;
DROP FUNCTION tr_all(text);
DROP TABLE tr_none, tr_input, tr_lookup, tr_fc;

-- the rows a TRUNCATE removes, beyond work_mem, are in a temporary file
-- that lasts until the commit, through a savepoint released or rolled back
CREATE TABLE tr_big (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
SET work_mem = '64kB';
INSERT INTO tr_big SELECT i, repeat(md5(i::text), 40) FROM generate_series(1, 200) i;
BEGIN;
SAVEPOINT s;
TRUNCATE tr_big;
ROLLBACK TO s;
COMMIT;
BEGIN;
SAVEPOINT s;
TRUNCATE tr_big;
RELEASE s;
INSERT INTO tr_big VALUES (0, 'after');
COMMIT;
SELECT rowkind, count(*) FROM pk_changes('tr_big', pk_current_snapshot('tr_big') - 1) GROUP BY 1 ORDER BY 1;
RESET work_mem;
DROP TABLE tr_big;

-- rows show in the table's current shape: a renamed column by its new
-- name, a dropped one left out, an added one null (or its default)
CREATE TABLE shape (k int PRIMARY KEY, a int, b int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO shape VALUES (1, 1, 1);
ALTER TABLE shape RENAME COLUMN a TO alpha;
ALTER TABLE shape DROP COLUMN b;
ALTER TABLE shape ADD COLUMN c int DEFAULT 7;
ALTER TABLE shape ADD COLUMN d int;
INSERT INTO shape VALUES (2, 2);
SELECT * FROM pk_changes('shape');
DROP TABLE shape;

-- a long range is read a batch of snapshots at a time (in bounded
-- memory): read whole, it is the stream read snapshot by snapshot, across
-- the batches' edges, a larger commit's snapshot row and a compaction
CREATE TABLE lr (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE PROCEDURE lr_commits() LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..2100 LOOP
		INSERT INTO lr VALUES (i % 50, i);
		COMMIT;
		IF i = 1000 THEN
			INSERT INTO lr SELECT g, -g FROM generate_series(100, 3099) g;
			COMMIT;
		END IF;
		IF i = 1500 THEN
			PERFORM pk_compact('lr', true);
			COMMIT;
		END IF;
	END LOOP;
END $$;
CALL lr_commits();
SELECT pk_current_snapshot('lr') > 2 * 1024 AS three_batches,
	   (SELECT count(*) FROM pk_snapshots('lr') WHERE commit_kind = 'COMPACT') > 1 AS compacted,
	   (SELECT count(*) FROM pkchangelog.log_snapshots('lr')) > 1024 AS in_the_log;
WITH whole AS (
	SELECT n, snapshot_id, rowkind, "row"::text AS r
	  FROM pk_changes('lr') WITH ORDINALITY AS c(snapshot_id, rowkind, "row", producer, n)),
one AS (
	SELECT row_number() OVER (ORDER BY s, i) AS n, c.snapshot_id, c.rowkind, c."row"::text AS r
	  FROM generate_series(1, pk_current_snapshot('lr')) s,
		   LATERAL pk_changes('lr', s - 1, s) WITH ORDINALITY AS c(snapshot_id, rowkind, "row", producer, i))
SELECT count(w.n) AS whole, count(o.n) AS one_by_one,
	   count(*) FILTER (WHERE (w.snapshot_id, w.rowkind, w.r) IS DISTINCT FROM
								(o.snapshot_id, o.rowkind, o.r)) AS differ
  FROM whole w FULL JOIN one o USING (n);
SELECT check_changelog('lr');
-- pk_runs reads the commits' runs a batch of snapshots at a time too,
-- merged with the runs of pkchangelog.runs: in order, each once, a
-- changelog run per commit
WITH r AS (
	SELECT *, (level, created_snapshot, run_id) <
			  (lag(level) OVER w, lag(created_snapshot) OVER w, lag(run_id) OVER w) AS back
	  FROM pk_runs('lr') WITH ORDINALITY AS r(run_id, level, kind, record_count, size_bytes,
											   min_key, max_key, created_snapshot, n)
	WINDOW w AS (ORDER BY n))
SELECT count(*) > 2 * 1024 AS runs_in_three_batches,
	   count(*) FILTER (WHERE back) AS out_of_order,
	   count(*) - count(DISTINCT run_id) AS repeated,
	   count(*) FILTER (WHERE kind = 'changelog') =
		 (SELECT count(*) FROM pk_snapshots('lr') WHERE changelog_record_count > 0)
		 AS changelog_runs_all_there
  FROM r;
DROP TABLE lr;
DROP PROCEDURE lr_commits();
