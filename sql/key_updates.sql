-- key_updates.sql: an UPDATE of key columns acts on exactly the rows it
-- matched, as on a heap table with a deferrable primary key: shifting keys
-- up or down, swapping them, moving them onto free keys changes every
-- matched row once, whatever order the rows come in; a row matched twice
-- is changed once; a row moved onto a key no matched row held overwrites
-- the row there (the upsert rule); and every producer's change stream
-- agrees with the result.  The same statements run on a heap twin with a
-- deferrable key and on a table of each producer.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE TABLE ku_heap (k int PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, g int, pad text);
CREATE TABLE ku_none (k int PRIMARY KEY, g int, pad text) USING pkmerge;
CREATE TABLE ku_input (k int PRIMARY KEY, g int, pad text) USING pkmerge
	WITH (changelog_producer = 'input');
CREATE TABLE ku_lookup (k int PRIMARY KEY, g int, pad text) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE TABLE ku_fc (k int PRIMARY KEY, g int, pad text) USING pkmerge
	WITH (changelog_producer = 'full-compaction');

-- run stmt (%I: the table) on every table; the rows each statement changed
CREATE FUNCTION ku(stmt text) RETURNS TABLE (tab text, affected bigint)
LANGUAGE plpgsql AS $$
BEGIN
	FOREACH tab IN ARRAY ARRAY['ku_heap', 'ku_none', 'ku_input', 'ku_lookup', 'ku_fc'] LOOP
		EXECUTE format(stmt, tab);
		GET DIAGNOSTICS affected = ROW_COUNT;
		RETURN NEXT;
	END LOOP;
END $$;

-- the tables whose contents differ from the heap twin's
CREATE FUNCTION ku_differ() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	tab text;
	d bigint;
BEGIN
	FOREACH tab IN ARRAY ARRAY['ku_none', 'ku_input', 'ku_lookup', 'ku_fc'] LOOP
		EXECUTE format('SELECT count(*) FROM ((SELECT k, g, pad FROM ku_heap EXCEPT ALL SELECT k, g, pad FROM %I)
					   UNION ALL (SELECT k, g, pad FROM %I EXCEPT ALL SELECT k, g, pad FROM ku_heap)) x', tab, tab)
			INTO d;
		IF d > 0 THEN
			RETURN NEXT tab;
		END IF;
	END LOOP;
END $$;

SELECT * FROM ku('INSERT INTO %I SELECT i, i, ''p'' FROM generate_series(1, 5) i');

-- shift up over keys 1..5 into free key 6: rows come in key order, so
-- each moves onto the key of a row still to come
SELECT * FROM ku('UPDATE %I SET k = k + 1 WHERE k BETWEEN 1 AND 5');
SELECT string_agg(k || ':' || g, ' ' ORDER BY k) AS ku_lookup FROM ku_lookup;
SELECT * FROM ku_differ();

-- shift down again, and a swap
SELECT * FROM ku('UPDATE %I SET k = k - 1 WHERE k BETWEEN 2 AND 6');
SELECT * FROM ku('UPDATE %I SET k = 3 - k WHERE k IN (1, 2)');
SELECT string_agg(k || ':' || g, ' ' ORDER BY k) AS ku_lookup FROM ku_lookup;
SELECT * FROM ku_differ();

-- a row matched twice in one statement is moved once (heap: "updated by
-- the current command", skipped); MERGE refuses as on heap
SELECT * FROM ku('UPDATE %I SET k = k + 10 FROM (VALUES (1), (1)) v(x) WHERE k = v.x');
SELECT * FROM ku('MERGE INTO %I USING (VALUES (2), (2)) v(x) ON k = v.x WHEN MATCHED THEN UPDATE SET k = k + 10');
SELECT * FROM ku_differ();

-- in a savepoint rolled back, then for real, with an index scan driving it
BEGIN;
SAVEPOINT s;
SELECT * FROM ku('UPDATE %I SET k = k + 1 WHERE k >= 3');
ROLLBACK TO s;
SET enable_seqscan = off;
SELECT * FROM ku('UPDATE %I SET k = k + 1 WHERE k >= 3');
RESET enable_seqscan;
COMMIT;
SELECT string_agg(k || ':' || g, ' ' ORDER BY k) AS ku_lookup FROM ku_lookup;
SELECT * FROM ku_differ();

-- a big shift (wide rows, beyond write_buffer_size): the statement keeps
-- its records in the buffer while it runs, and spills after
ALTER TABLE ku_none SET (write_buffer_size = '1MB');
ALTER TABLE ku_input SET (write_buffer_size = '1MB');
ALTER TABLE ku_lookup SET (write_buffer_size = '1MB');
ALTER TABLE ku_fc SET (write_buffer_size = '1MB');
SELECT * FROM ku('INSERT INTO %I SELECT i, i, repeat(''w'', 1000) FROM generate_series(100, 2100) i');
BEGIN;
SELECT * FROM ku('UPDATE %I SET k = k + 1, pad = repeat(''v'', 1000) WHERE k >= 100');
SELECT * FROM ku('UPDATE %I SET g = -g WHERE k %% 100 = 0');
SELECT count(*) > 0 AS spilled FROM pk_runs('ku_lookup') WHERE created_snapshot = 0;
COMMIT;
SELECT count(*), sum(g), min(k), max(k) FROM ku_lookup;
SELECT * FROM ku_differ();

-- a row moved onto a key that no matched row held overwrites the row
-- there: heap raises a unique violation instead
SELECT * FROM ku('INSERT INTO %I VALUES (50, 50, ''p''), (51, 51, ''p'')');
UPDATE ku_heap SET k = 51 WHERE k = 50;
UPDATE ku_lookup SET k = 51 WHERE k = 50;
SELECT k, g FROM ku_lookup WHERE k IN (50, 51);

-- every stream replays to its table as a retract stream (input: its
-- records are SQL DML only here, and it did not take the overwrite, whose
-- record would be an insert without retraction, as for an upserting INSERT)
SELECT pk_compact('ku_fc', true) IS NOT NULL AS compacted;
SELECT check_changelog('ku_lookup') AS lookup, check_changelog('ku_fc') AS full_compaction,
	   check_changelog('ku_input') AS input;

DROP FUNCTION ku(text);
DROP FUNCTION ku_differ();
DROP TABLE ku_heap, ku_none, ku_input, ku_lookup, ku_fc;
