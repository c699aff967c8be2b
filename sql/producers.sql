-- producers.sql: the change stream of each changelog producer (DESIGN §2)
-- on the motivating incident and on the edge cases: insert then update in
-- one transaction, several writes of one key in one commit, delete of a
-- key that never existed, re-insert after delete, key-column updates,
-- rollback and savepoints, changelog_row_deduplicate, pk_write, TRUNCATE,
-- and lookup's commit of many keys over runs at two levels.
-- Streams are read with pk_changes; check_changelog (loaded from
-- test/setup/changelog_checker.sql) replays them against the table.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all

CREATE FUNCTION make_orders(producer text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE orders_%s (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
					USING pkmerge WITH (changelog_producer = %L)', replace(producer, '-', '_'), producer);
END $$;
SELECT make_orders(p) FROM unnest(ARRAY['none', 'input', 'lookup', 'full-compaction']) p;

-- the incident: 100, then 80
INSERT INTO orders_none VALUES (1001, 10, 100);
INSERT INTO orders_input VALUES (1001, 10, 100);
INSERT INTO orders_lookup VALUES (1001, 10, 100);
INSERT INTO orders_full_compaction VALUES (1001, 10, 100);
SELECT pk_compact('orders_full_compaction', true);
UPDATE orders_none SET amount = 80 WHERE order_id = 1001;
UPDATE orders_input SET amount = 80 WHERE order_id = 1001;
UPDATE orders_lookup SET amount = 80 WHERE order_id = 1001;
UPDATE orders_full_compaction SET amount = 80 WHERE order_id = 1001;
-- full-compaction says nothing until the next full compaction
SELECT count(*) AS before_full_compaction FROM pk_changes('orders_full_compaction', 2);
SELECT pk_compact('orders_full_compaction', true);

SELECT 'none' AS producer, * FROM pk_changes('orders_none')
UNION ALL SELECT 'input', * FROM pk_changes('orders_input')
UNION ALL SELECT 'lookup', * FROM pk_changes('orders_lookup')
UNION ALL SELECT 'full-compaction', * FROM pk_changes('orders_full_compaction');

-- what a naive downstream SUM(amount) GROUP BY store_id computes from each
SELECT p AS producer, sum(CASE WHEN c.rowkind IN ('+I', '+U') THEN (c.row->>'amount')::numeric
							   ELSE -(c.row->>'amount')::numeric END) AS store_10_total
FROM unnest(ARRAY['orders_none', 'orders_input', 'orders_lookup', 'orders_full_compaction']) p,
	 pk_changes(p::regclass) c
GROUP BY p ORDER BY p;

SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count FROM pk_snapshots('orders_lookup');
SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count FROM pk_snapshots('orders_full_compaction');

-- the edge cases, the same statements on every table
CREATE FUNCTION on_all(stmt text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE p text;
BEGIN
	FOREACH p IN ARRAY ARRAY['none', 'input', 'lookup', 'full_compaction'] LOOP
		EXECUTE replace(stmt, '{T}', 'orders_' || p);
	END LOOP;
END $$;
-- mark() notes each table's last snapshot; stream() is what came after
CREATE TABLE marks (p text PRIMARY KEY, snap bigint);
CREATE FUNCTION mark() RETURNS void LANGUAGE sql AS $$
	DELETE FROM marks;
	INSERT INTO marks SELECT p, (SELECT max(snapshot_id) FROM pk_snapshots(('orders_' || p)::regclass))
	FROM unnest(ARRAY['none', 'input', 'lookup', 'full_compaction']) p;
$$;
CREATE FUNCTION stream() RETURNS TABLE (producer text, rowkind text, "row" jsonb)
LANGUAGE sql AS $$
	SELECT m.p, c.rowkind, c.row FROM marks m,
		LATERAL pk_changes(('orders_' || m.p)::regclass, m.snap) c
	ORDER BY array_position(ARRAY['none', 'input', 'lookup', 'full_compaction'], m.p), c.snapshot_id
$$;

-- insert then update in one transaction; several writes of one key (none:
-- the insert of the final row, as the transaction's net change)
SELECT mark();
BEGIN;
SELECT on_all('INSERT INTO {T} VALUES (2001, 20, 5)');
SELECT on_all('UPDATE {T} SET amount = 6 WHERE order_id = 2001');
SELECT on_all('UPDATE {T} SET amount = 7 WHERE order_id = 2001');
COMMIT;
SELECT pk_compact('orders_full_compaction', true) IS NOT NULL AS compacted;
SELECT * FROM stream();

-- delete of a key that never existed; re-insert after delete
SELECT mark();
SELECT on_all('DELETE FROM {T} WHERE order_id = 9999');
SELECT on_all($$SELECT pk_write('{T}', '-D', ROW(9998, 1, 1)::{T})$$);
SELECT on_all('DELETE FROM {T} WHERE order_id = 2001');
SELECT on_all('INSERT INTO {T} VALUES (2001, 20, 8)');
SELECT pk_compact('orders_full_compaction', true) IS NOT NULL AS compacted;
SELECT * FROM stream();

-- an update of the key: the old key goes, the new one comes
SELECT mark();
SELECT on_all('UPDATE {T} SET order_id = 3001 WHERE order_id = 2001');
SELECT pk_compact('orders_full_compaction', true) IS NOT NULL AS compacted;
SELECT * FROM stream();

-- rollback and savepoints leave nothing of what they undid
SELECT mark();
BEGIN;
SELECT on_all('INSERT INTO {T} VALUES (4001, 40, 1)');
SAVEPOINT a;
SELECT on_all('UPDATE {T} SET amount = 99 WHERE order_id = 4001');
SELECT on_all('DELETE FROM {T} WHERE order_id = 1001');
ROLLBACK TO a;
SELECT on_all('UPDATE {T} SET amount = 2 WHERE order_id = 4001');
COMMIT;
BEGIN;
SELECT on_all('DELETE FROM {T} WHERE order_id = 4001');
ROLLBACK;
SELECT pk_compact('orders_full_compaction', true) IS NOT NULL AS compacted;
SELECT * FROM stream();

-- an upserting INSERT over an existing key, and pk_write's RowKinds
SELECT mark();
SELECT on_all('INSERT INTO {T} VALUES (1001, 10, 70)');
SELECT on_all($$SELECT pk_write('{T}', '+U', ROW(5001, 50, 1)::{T})$$);
SELECT pk_compact('orders_full_compaction', true) IS NOT NULL AS compacted;
SELECT * FROM stream();

-- lookup and full-compaction streams are valid retract streams that replay
-- to the table; input keeps what the writers gave, here pk_write's -D of a
-- key that never existed, which no retract stream has
SELECT p, check_changelog(('orders_' || p)::regclass)
FROM unnest(ARRAY['lookup', 'full_compaction']) p;
SELECT check_changelog('orders_input') AS input_stream_as_written;

-- changelog_row_deduplicate: an update to an equal row says nothing
CREATE TABLE dedup (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup', changelog_row_deduplicate = true);
CREATE TABLE nodedup (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO dedup VALUES (1, 1), (2, 2);
INSERT INTO nodedup VALUES (1, 1), (2, 2);
UPDATE dedup SET v = v * 1;
UPDATE nodedup SET v = v * 1;
INSERT INTO dedup VALUES (2, 20);
INSERT INTO nodedup VALUES (2, 20);
SELECT 'dedup' AS t, * FROM pk_changes('dedup') UNION ALL SELECT 'nodedup', * FROM pk_changes('nodedup');

-- TRUNCATE: the snapshots before it expire with the old storage; lookup
-- retracts every row it removed (-D) and then sees every key absent
INSERT INTO dedup VALUES (3, 3);
BEGIN;
TRUNCATE dedup;
INSERT INTO dedup VALUES (1, 100);
COMMIT;
SELECT * FROM pk_changes('dedup', (SELECT max(snapshot_id) - 1 FROM pk_snapshots('dedup')));
SELECT check_changelog('dedup');

-- producer none records the TRUNCATE itself, then the rows written after
-- it in its transaction
CREATE TABLE trunc_none (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO trunc_none VALUES (1, 1);
BEGIN;
TRUNCATE trunc_none;
INSERT INTO trunc_none VALUES (2, 2), (3, 3);
COMMIT;
SELECT snapshot_id, commit_kind, changelog_record_count FROM pk_snapshots('trunc_none');
SELECT * FROM pk_changes('trunc_none');
SELECT snapshot_id, commit_kind, changelog_record_count FROM pk_snapshots('dedup');
DROP TABLE trunc_none;

-- pk_changes ranges: (from, to]
SELECT snapshot_id, rowkind FROM pk_changes('nodedup', 1, 2);
SELECT count(*) FROM pk_changes('nodedup', 3);
SELECT count(*) FROM pk_changes('nodedup', 0, 0);
SELECT count(*) FROM pk_changes(NULL);

-- lookup, a commit of many keys (more than a small commit's 64: looked
-- up in key order, each run read forward once) over runs at two levels:
-- a key's newest version in one run and older ones in another, tombstones
-- over older rows, keys between a run's keys and beyond every run's last,
-- runs of many blocks.  Its stream holds each written key's value before
-- the commit and after it; a heap twin given the same writes says which.
CREATE TABLE lk (id int PRIMARY KEY, v text) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE lk_twin (id int PRIMARY KEY, v text);
CREATE FUNCTION lk_write(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('INSERT INTO lk %s', sql);
	EXECUTE format('INSERT INTO lk_twin %s ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v', sql);
END $$;
SELECT lk_write($$SELECT g, 'loaded ' || g || repeat('x', g % 50) FROM generate_series(2, 20000, 2) g$$);
SELECT pk_compact('lk', true) IS NOT NULL AS compacted;
SELECT lk_write($$SELECT g, 'updated ' || g FROM generate_series(6, 20000, 6) g$$);
DELETE FROM lk WHERE id % 14 = 0;
DELETE FROM lk_twin WHERE id % 14 = 0;
SELECT level, kind, record_count FROM pk_runs('lk') ORDER BY level, run_id;
CREATE TABLE lk_before AS SELECT * FROM lk_twin;
BEGIN;
SELECT lk_write($$SELECT g, 'written ' || g FROM generate_series(1, 24000, 3) g$$);
DELETE FROM lk WHERE id % 11 = 0 AND id <= 4000;
DELETE FROM lk_twin WHERE id % 11 = 0 AND id <= 4000;
COMMIT;
CREATE TABLE lk_expected AS
	SELECT k.rowkind, k.id, k.v
	FROM (SELECT g AS id FROM generate_series(1, 24000, 3) g
		  UNION SELECT g FROM generate_series(11, 4000, 11) g) w
	LEFT JOIN lk_before b USING (id)
	LEFT JOIN lk_twin a USING (id)
	CROSS JOIN LATERAL (VALUES ('+I', w.id, a.v, b.v IS NULL AND a.v IS NOT NULL),
							   ('-D', w.id, b.v, b.v IS NOT NULL AND a.v IS NULL),
							   ('-U', w.id, b.v, b.v IS NOT NULL AND a.v IS NOT NULL),
							   ('+U', w.id, a.v, b.v IS NOT NULL AND a.v IS NOT NULL)) k(rowkind, id, v, emitted)
	WHERE k.emitted;
CREATE TABLE lk_stream AS
	SELECT rowkind, (row->>'id')::int AS id, row->>'v' AS v
	FROM pk_changes('lk', (SELECT max(snapshot_id) - 1 FROM pk_snapshots('lk')));
SELECT rowkind, count(*) FROM lk_stream GROUP BY rowkind ORDER BY rowkind;
SELECT (SELECT count(*) FROM (TABLE lk_expected EXCEPT ALL TABLE lk_stream) e) AS missing,
	   (SELECT count(*) FROM (TABLE lk_stream EXCEPT ALL TABLE lk_expected) e) AS extra;
SELECT check_changelog('lk');
DROP TABLE lk, lk_twin, lk_before, lk_expected, lk_stream;
DROP FUNCTION lk_write(text);

DROP TABLE orders_none, orders_input, orders_lookup, orders_full_compaction, dedup, nodedup;
DROP FUNCTION make_orders(text), on_all(text), mark(), stream();
DROP TABLE marks;
