-- equal_keys.sql: keys that are equal but not identical (numeric 10 and
-- 10.00, 'a' and 'A' under a nondeterministic ICU collation, float8 0 and
-- -0).  A record that replaces a row replaces it whole, key value
-- included (DESIGN §3), on every write path: INSERT, pk_write's +I and
-- +U, MERGE's UPDATE and INSERT, UPDATE of the key, COPY, spilled runs,
-- compaction; the changelog's -U carries the value the row held and its
-- +U the new one, in pk_changes and in logical decoding.  The paths run
-- from test/setup/equal_keys_paths.sql, once per key shape.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\getenv abs_srcdir PG_ABS_SRCDIR
\set paths :abs_srcdir '/test/setup/equal_keys_paths.sql'
\set stream :abs_srcdir '/test/setup/equal_keys_stream.sql'
CREATE COLLATION ek_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT 'a' = 'A' COLLATE ek_ci AS a_equals_A, '10'::numeric = '10.00' AS ten_equals,
	'-0'::float8 = '0' AS zeros_equal;

-- stmt (format: %1$s the table, %2$s the key type) with $1 = a, $2 = b,
-- on each table in turn; the rows it processed in all
CREATE FUNCTION ek_each(stmt text, a anyelement, b anyelement) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	p text;
	n bigint;
	total bigint := 0;
BEGIN
	FOREACH p IN ARRAY ARRAY['none', 'input', 'lookup', 'full'] LOOP
		EXECUTE format(stmt, 'ek_' || p, pg_typeof(a)) USING a, b;
		GET DIAGNOSTICS n = ROW_COUNT;
		total := total + n;
	END LOOP;
	RETURN total;
END $$;
-- each table holds (a, 1) for the key
CREATE FUNCTION ek_reset(a anyelement) RETURNS bigint
LANGUAGE sql AS $$
	SELECT ek_each('DELETE FROM %s WHERE k = $1', a, a);
	SELECT ek_each('INSERT INTO %s VALUES ($1, 1)', a, a);
$$;
-- each table's row found by x, the key as stored
CREATE FUNCTION ek_show(x anyelement) RETURNS TABLE (producer text, k text, g int)
LANGUAGE plpgsql AS $$
DECLARE
	p text;
BEGIN
	FOREACH p IN ARRAY ARRAY['none', 'input', 'lookup', 'full'] LOOP
		RETURN QUERY EXECUTE format('SELECT %L, k::text, g FROM ek_%s WHERE k = $1', p, p)
			USING x;
	END LOOP;
END $$;
-- the data runs each table's transaction has spilled so far
CREATE FUNCTION ek_spilled() RETURNS TABLE (producer text, spilled_runs bigint)
LANGUAGE sql AS $$
	SELECT p, (SELECT count(*) FROM pk_runs(('ek_' || p)::regclass)
			   WHERE kind = 'data' AND created_snapshot = 0)
	FROM unnest(ARRAY['none', 'input', 'lookup', 'full']) p;
$$;
CREATE FUNCTION ek_runs() RETURNS TABLE (producer text, data_runs bigint, top_level int)
LANGUAGE sql AS $$
	SELECT p, count(*), max(level)
	FROM unnest(ARRAY['none', 'input', 'lookup', 'full']) p,
		 pk_runs(('ek_' || p)::regclass)
	WHERE kind = 'data'
	GROUP BY p ORDER BY array_position(ARRAY['none', 'input', 'lookup', 'full'], p);
$$;
-- the changes of each table since ek_mark(), snapshot ids counted from it
-- (pk_changes' row is jsonb, whose numbers are numeric: a float8 -0 shows
-- as 0 there; logical decoding prints the value as stored)
CREATE TABLE ek_marks (producer text, snapshot_id bigint);
CREATE FUNCTION ek_mark() RETURNS bigint
LANGUAGE sql AS $$
	DELETE FROM ek_marks;
	INSERT INTO ek_marks SELECT p, pk_current_snapshot(('ek_' || p)::regclass)
	FROM unnest(ARRAY['none', 'input', 'lookup', 'full']) p;
	SELECT count(*) FROM ek_marks;
$$;
CREATE FUNCTION ek_changes() RETURNS TABLE (producer text, snapshot bigint, rowkind text,
											k text, g text)
LANGUAGE sql AS $$
	SELECT m.producer, c.snapshot_id - m.snapshot_id, c.rowkind, c.row->>'k', c.row->>'g'
	FROM ek_marks m,
		 pk_changes(('ek_' || m.producer)::regclass, m.snapshot_id) WITH ORDINALITY c
	ORDER BY array_position(ARRAY['none', 'input', 'lookup', 'full'], m.producer), c.ordinality;
$$;
-- what test_decoding decoded for the tables
CREATE VIEW ek_decoded AS
SELECT data FROM pg_logical_slot_get_changes('ek_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1')
WHERE data ~ '^table public\.ek_(none|input|lookup|full):';

-- numeric: 10 and 10.00
\set ty numeric
\set coll ''
\set a '''10'''
\set b '''10.00'''
\i :paths
-- COPY
SELECT ek_reset(:ka);
COPY ek_none (k, g) FROM STDIN;
10.00	13
\.
COPY ek_input (k, g) FROM STDIN;
10.00	13
\.
COPY ek_lookup (k, g) FROM STDIN;
10.00	13
\.
COPY ek_full (k, g) FROM STDIN;
10.00	13
\.
SELECT * FROM ek_show(:ka);
\i :stream

-- text under a case-insensitive collation: 'a' and 'A'
\set ty text
\set coll 'COLLATE ek_ci'
\set a '''a'''
\set b '''A'''
\i :paths
-- COPY
SELECT ek_reset(:ka);
COPY ek_none (k, g) FROM STDIN;
A	13
\.
COPY ek_input (k, g) FROM STDIN;
A	13
\.
COPY ek_lookup (k, g) FROM STDIN;
A	13
\.
COPY ek_full (k, g) FROM STDIN;
A	13
\.
SELECT * FROM ek_show(:ka);
\i :stream

-- float8: 0 and -0
\set ty float8
\set coll ''
\set a '''0'''
\set b '''-0'''
\i :paths
-- COPY
SELECT ek_reset(:ka);
COPY ek_none (k, g) FROM STDIN;
-0	13
\.
COPY ek_input (k, g) FROM STDIN;
-0	13
\.
COPY ek_lookup (k, g) FROM STDIN;
-0	13
\.
COPY ek_full (k, g) FROM STDIN;
-0	13
\.
SELECT * FROM ek_show(:ka);
\i :stream

-- changelog_row_deduplicate skips a -U/+U pair only for rows identical to
-- the last bit: a key or a value stored differently is a change
CREATE TABLE ek_dedup (k numeric PRIMARY KEY, v numeric) USING pkmerge
	WITH (changelog_producer = 'lookup', changelog_row_deduplicate = true);
INSERT INTO ek_dedup VALUES (10, 1);
INSERT INTO ek_dedup VALUES (10.0, 1);
INSERT INTO ek_dedup VALUES (10.0, 1.0);
INSERT INTO ek_dedup VALUES (10.0, 1.0);
SELECT snapshot_id, rowkind, row->>'k' AS k, row->>'v' AS v FROM pk_changes('ek_dedup');
