-- Materialized aggregates: pk_materialize, pk_reconcile, pk_materializations
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
SET client_min_messages = warning;
CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id int, amount numeric,
	region text, qty int)
	USING pkmerge WITH (changelog_producer = lookup);
INSERT INTO orders VALUES (1001, 10, 100, 'north', 1), (1002, 10, 50, 'north', 2),
	(1003, 20, 7, 'south', NULL);

-- the mission's aggregate, and one of every kind
SELECT pk_materialize('store_sales',
	'SELECT store_id, sum(amount) AS total, count(*) AS n FROM orders GROUP BY store_id');
SELECT pk_materialize('store_all',
	'SELECT store_id, region, count(*) AS n, count(qty) AS n_qty, sum(qty) AS qty,
		avg(amount) AS avg_amount, min(amount) AS lo, max(amount) AS hi,
		min(region) AS first_region, max(qty) AS max_qty
	 FROM orders WHERE amount > 5 GROUP BY store_id, region');
-- no GROUP BY: one row, always
SELECT pk_materialize('public.order_totals',
	'SELECT count(*) AS n, sum(amount) AS total, max(amount) AS hi FROM orders');
-- a GROUP BY expression
SELECT pk_materialize('by_size',
	'SELECT amount >= 50 AS big, count(*) AS n FROM orders GROUP BY amount >= 50');

CREATE FUNCTION mat_show() RETURNS TABLE (agg text, contents text)
LANGUAGE sql AS $$
	SELECT 'store_sales', string_agg(format('%s:%s/%s', store_id, total, n), ' ' ORDER BY store_id)
	FROM store_sales
	UNION ALL
	SELECT 'store_all', string_agg(format('%s,%s:%s/%s/%s/%s/%s/%s-%s/%s/%s', store_id, region, n,
		n_qty, qty, round(avg_amount, 2), lo, hi, first_region, max_qty, ''), ' '
		ORDER BY store_id, region)
	FROM store_all
	UNION ALL
	SELECT 'order_totals', string_agg(format('%s/%s/%s', n, total, hi), ' ') FROM order_totals
	UNION ALL
	SELECT 'by_size', string_agg(format('%s:%s', big, n), ' ' ORDER BY big) FROM by_size
$$;
-- every aggregate equal to its query (pk_reconcile returns the differences)
CREATE FUNCTION mat_exact() RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(name::text || '=' || (SELECT count(*) FROM pk_reconcile(name::text)),
		' ' ORDER BY name::text)
	FROM pk_materializations WHERE source = 'orders'::regclass
$$;
SELECT * FROM mat_show();
SELECT mat_exact();

-- the motivating update: 100 -> 80 is a retraction of 100, not a second row
UPDATE orders SET amount = 80 WHERE order_id = 1001;
SELECT * FROM mat_show();
-- the current max (80 of store 10) retracted: the next one comes from the
-- value counts, not from the source
DELETE FROM orders WHERE order_id = 1001;
SELECT * FROM mat_show();
-- a group that reaches no rows disappears; an update moves a row between groups
DELETE FROM orders WHERE order_id = 1003;
UPDATE orders SET store_id = 30, region = NULL WHERE order_id = 1002;
SELECT * FROM mat_show();
-- NULL inputs: count(col), sum and avg skip them; a group of NULL
INSERT INTO orders VALUES (2001, NULL, NULL, NULL, NULL), (2002, 30, 60, NULL, NULL);
SELECT * FROM mat_show();
SELECT mat_exact();
-- blind overwrites (INSERT of an existing key), key-column updates, MERGE
INSERT INTO orders VALUES (2002, 40, 61, 'west', 3);
UPDATE orders SET order_id = order_id + 1000 WHERE order_id >= 2000;
MERGE INTO orders o USING (VALUES (3002, 41, 9), (5000, 50, 500)) v(id, s, a)
	ON o.order_id = v.id
	WHEN MATCHED THEN UPDATE SET store_id = v.s, amount = v.a
	WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.s, v.a, 'east', 5);
SELECT * FROM mat_show();
SELECT mat_exact();
-- an update of a column no aggregate reads writes no group row
SELECT xmin AS before_xmin FROM store_sales WHERE store_id = 50 \gset
UPDATE orders SET qty = qty WHERE order_id = 5000;
SELECT xmin = :'before_xmin'::xid AS unchanged FROM store_sales WHERE store_id = 50;

-- rollback and savepoints: only what commits reaches the aggregates
BEGIN;
INSERT INTO orders VALUES (6000, 60, 1, 'x', 1);
SAVEPOINT s;
UPDATE orders SET amount = 1000 WHERE order_id = 5000;
ROLLBACK TO s;
DELETE FROM orders WHERE order_id = 6000;
INSERT INTO orders VALUES (6001, 60, 2, 'x', 1);
COMMIT;
BEGIN;
DELETE FROM orders;
ROLLBACK;
SELECT * FROM mat_show();
SELECT mat_exact();

-- TRUNCATE: lookup retracts every row
TRUNCATE orders;
SELECT * FROM mat_show();
INSERT INTO orders SELECT g, g % 3, g, 'r' || (g % 2), g % 4 FROM generate_series(1, 300) g;
SELECT * FROM mat_show();
SELECT mat_exact();

-- a corrupted aggregate is found, and repaired
UPDATE store_sales SET total = total + 1 WHERE store_id = 1;
DELETE FROM store_sales WHERE store_id = 2;
SELECT * FROM pk_reconcile('store_sales');
SELECT count(*) FROM pk_reconcile('store_sales', repair => true);
SELECT count(*) FROM pk_reconcile('store_sales');
-- a maintained group out of step with its source is an error, not a guess
DELETE FROM store_sales WHERE store_id = 0;
DELETE FROM orders WHERE order_id = 3;
SELECT count(*) FROM pk_reconcile('store_sales', repair => true);
DELETE FROM orders WHERE order_id = 3;
SELECT mat_exact();

-- pk_materializations
SELECT name, source, exact_as_of = pk_current_snapshot('orders') AS current
FROM pk_materializations ORDER BY name::text;
SELECT query FROM pk_materializations WHERE name = 'store_sales'::regclass;
-- the view's query follows renames of the source and its columns
ALTER TABLE orders RENAME COLUMN amount TO price;
SELECT query FROM pk_materializations WHERE name = 'store_sales'::regclass;
UPDATE orders SET price = price + 1 WHERE order_id = 1;
ALTER TABLE orders RENAME COLUMN price TO amount;
SELECT mat_exact();

-- a catalog row another PostgreSQL major wrote (its tree tagged PG99, as
-- pg_upgrade would carry one): the query comes from the trigger's SQL, and
-- maintenance goes on; a rename makes the row this major's first.  A row's
-- tree is tagged with the major writing it.
SELECT left(query, 5) = 'PG' || current_setting('server_version_num')::int / 10000 || ' '
	AS own_tag
FROM pkchangelog.materializations WHERE aggregate = 'store_sales'::regclass;
UPDATE pkchangelog.materializations SET query = 'PG99 {QUERY :commandType 99}'
WHERE aggregate = 'store_sales'::regclass;
SELECT query FROM pk_materializations WHERE name = 'store_sales'::regclass;
UPDATE orders SET amount = amount + 1 WHERE order_id = 2;
SELECT mat_exact();
ALTER TABLE orders RENAME COLUMN amount TO price;
SELECT query FROM pk_materializations WHERE name = 'store_sales'::regclass;
ALTER TABLE orders RENAME COLUMN price TO amount;
SELECT left(query, 5) = 'PG' || current_setting('server_version_num')::int / 10000 || ' '
	AS own_tag
FROM pkchangelog.materializations WHERE aggregate = 'store_sales'::regclass;
SELECT mat_exact();

-- refusals: 0A000 naming the part
\set VERBOSITY default
SELECT pk_materialize('bad', 'SELECT o.store_id, count(*) AS n FROM orders o JOIN orders p USING (order_id) GROUP BY 1');
SELECT pk_materialize('bad', 'SELECT DISTINCT store_id FROM orders');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders GROUP BY store_id HAVING count(*) > 1');
SELECT pk_materialize('bad', 'SELECT store_id, sum(amount) OVER () AS s FROM orders');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders WHERE amount > random() GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders WHERE now() > ''2020-01-01'' GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, string_agg(region, '','') AS r FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(DISTINCT region) AS r FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) FILTER (WHERE qty > 1) AS r FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, sum(amount) / count(*) AS r FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id + 1 AS s, count(*) AS n FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT count(*) AS n FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders GROUP BY store_id ORDER BY 1');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders GROUP BY ROLLUP (store_id)');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders WHERE order_id IN (SELECT 1) GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n FROM orders GROUP BY store_id LIMIT 1');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) FROM orders GROUP BY store_id UNION SELECT 1, 1');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS __pk_n FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, count(*) AS n, count(*) AS n FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT store_id, 1 + count(*) FROM orders GROUP BY store_id');
SELECT pk_materialize('bad', 'SELECT order_id FROM orders');
SELECT pk_materialize('bad', 'SELECT 1; SELECT 2');
SELECT pk_materialize('bad', 'DELETE FROM orders');
SELECT pk_materialize('bad', 'SELECT count(*) AS n FROM pg_class');
SELECT pk_materialize('bad', 'SELECT point(1, 1) AS p, count(*) AS n FROM orders GROUP BY 1');
SELECT pk_materialize('store_sales', 'SELECT store_id, count(*) AS n FROM orders GROUP BY store_id');
-- producers: none is refused, input warns
CREATE TABLE events (id int PRIMARY KEY, kind text, v int) USING pkmerge;
SELECT pk_materialize('bad', 'SELECT kind, sum(v) AS v FROM events GROUP BY kind');
ALTER TABLE events SET (changelog_producer = input);
SET client_min_messages = notice;
SELECT pk_materialize('event_kinds', 'SELECT kind, sum(v) AS v, count(*) AS n FROM events GROUP BY kind');
SET client_min_messages = warning;
ALTER TABLE orders SET (changelog_producer = none);
ALTER TABLE orders RESET (changelog_producer);
SELECT pk_options FROM pk_options('orders') WHERE key = 'changelog_producer';
\set VERBOSITY terse

-- input: SQL DML carries old rows; TRUNCATE is one record that empties it
INSERT INTO events VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 3);
UPDATE events SET kind = 'b' WHERE id = 1;
INSERT INTO events VALUES (2, 'a', 20) ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, v = EXCLUDED.v;
DELETE FROM events WHERE id = 3;
SELECT kind, v, n FROM event_kinds ORDER BY kind;
BEGIN;
INSERT INTO events VALUES (4, 'c', 4);
TRUNCATE events;
INSERT INTO events VALUES (5, 'd', 5);
COMMIT;
SELECT kind, v, n FROM event_kinds ORDER BY kind;
SELECT count(*) FROM pk_reconcile('event_kinds');

-- full-compaction: exact as of the last full compaction, then catches up
CREATE TABLE fc (id int PRIMARY KEY, g int, v int) USING pkmerge
	WITH (changelog_producer = 'full-compaction', full_compaction_delta_commits = 1000);
INSERT INTO fc VALUES (1, 1, 10), (2, 1, 20);
SELECT pk_materialize('fc_sums', 'SELECT g, sum(v) AS v, max(v) AS hi FROM fc GROUP BY g');
SELECT g, v, hi FROM fc_sums ORDER BY g;
UPDATE fc SET v = 5 WHERE id = 2;
INSERT INTO fc VALUES (3, 2, 30);
SELECT g, v, hi FROM fc_sums ORDER BY g;
SELECT exact_as_of < pk_current_snapshot('fc') AS lagging FROM pk_materializations
WHERE name = 'fc_sums'::regclass;
SELECT pk_compact('fc', true) IS NOT NULL AS compacted;
SELECT g, v, hi FROM fc_sums ORDER BY g;
SELECT exact_as_of = pk_current_snapshot('fc') AS caught_up FROM pk_materializations
WHERE name = 'fc_sums'::regclass;
SELECT count(*) FROM pk_reconcile('fc_sums');

-- a switch to full-compaction in a transaction that wrote the table: its
-- writes reach the aggregate at the next full compaction, which
-- pk_reconcile runs first; a switch back applies at commit again
CREATE TABLE sw (id int PRIMARY KEY, g int, v int) USING pkmerge
	WITH (changelog_producer = lookup);
INSERT INTO sw VALUES (1, 1, 10), (2, 1, 20);
SELECT pk_materialize('sw_sums', 'SELECT g, sum(v) AS v, count(*) AS n FROM sw GROUP BY g');
BEGIN;
UPDATE sw SET g = 2 WHERE id = 1;
ALTER TABLE sw SET (changelog_producer = 'full-compaction');
COMMIT;
SELECT g, v, n FROM sw_sums ORDER BY g;
SELECT * FROM pk_reconcile('sw_sums');
SELECT g, v, n FROM sw_sums ORDER BY g;
BEGIN;
UPDATE sw SET v = 5 WHERE id = 2;
ALTER TABLE sw SET (changelog_producer = 'lookup');
COMMIT;
UPDATE sw SET v = 7 WHERE id = 1;
SELECT g, v, n FROM sw_sums ORDER BY g;
SELECT count(*) FROM pk_reconcile('sw_sums');
DROP TABLE sw CASCADE;

-- writes of the source before pk_materialize in one transaction: refused
BEGIN;
INSERT INTO fc VALUES (9, 9, 9);
SELECT pk_materialize('bad', 'SELECT g, count(*) AS n FROM fc GROUP BY g');
ROLLBACK;

-- privileges: creating needs SELECT on what the query reads; writers of
-- the source need no right on the aggregate; its owner's trigger runs as
-- the owner, not as the writer
CREATE ROLE mat_owner;
CREATE ROLE mat_writer;
CREATE ROLE mat_nobody;
CREATE SCHEMA mats AUTHORIZATION mat_owner;
GRANT USAGE ON SCHEMA mats TO mat_writer, mat_nobody;
GRANT SELECT, INSERT, UPDATE, DELETE ON orders TO mat_writer;
SET ROLE mat_nobody;
SELECT pk_materialize('mats.secret', 'SELECT store_id, sum(amount) AS s FROM orders GROUP BY store_id');
RESET ROLE;
GRANT SELECT (store_id, amount) ON orders TO mat_owner;
SET ROLE mat_owner;
SELECT pk_materialize('mats.owned', 'SELECT store_id, sum(amount) AS s FROM orders GROUP BY store_id');
-- a column it may not read
SELECT pk_materialize('mats.owned2', 'SELECT region, count(*) AS n FROM orders GROUP BY region');
CREATE TABLE mats.audit (who name, store int);
CREATE FUNCTION mats.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mats.audit VALUES (current_user, NEW.store_id);
	RETURN NEW;
END $$;
CREATE TRIGGER note AFTER UPDATE ON mats.owned FOR EACH ROW EXECUTE FUNCTION mats.note();
RESET ROLE;
SET ROLE mat_writer;
UPDATE orders SET amount = amount + 1 WHERE order_id = 2;
SELECT * FROM mats.owned;
RESET ROLE;
SELECT * FROM mats.audit;
SELECT tableowner FROM pg_tables WHERE schemaname = 'mats' AND tablename = 'owned';
SET ROLE mat_writer;
SELECT count(*) FROM pk_reconcile('mats.owned');
RESET ROLE;
SELECT count(*) FROM pk_reconcile('mats.owned');
-- a full compaction run by a superuser, as the background worker's is,
-- writes the aggregate as its owner: the owner's trigger runs as the owner
GRANT SELECT ON fc TO mat_owner;
SET ROLE mat_owner;
SELECT pk_materialize('mats.fc_owned', 'SELECT g, sum(v) AS v FROM fc GROUP BY g');
CREATE FUNCTION mats.note_g() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mats.audit VALUES (current_user, NEW.g);
	RETURN NEW;
END $$;
CREATE TRIGGER note_g AFTER INSERT OR UPDATE ON mats.fc_owned
	FOR EACH ROW EXECUTE FUNCTION mats.note_g();
RESET ROLE;
DELETE FROM mats.audit;
UPDATE fc SET v = v + 1 WHERE id = 1;
INSERT INTO fc VALUES (7, 7, 7);
SELECT count(*) FROM mats.audit;
SELECT pk_compact('fc', true) IS NOT NULL AS compacted;
SELECT who, store FROM mats.audit ORDER BY store;
SELECT count(*) FROM pk_reconcile('mats.fc_owned');

-- a trigger on an aggregate may not write to a pkmerge table (its write
-- would come after that table's commit step): the commit fails whole.
-- (Maintenance runs with search_path pg_catalog, pg_temp: a trigger there
-- names its tables with their schema.)
CREATE TABLE side_log (id int PRIMARY KEY, note text) USING pkmerge;
CREATE FUNCTION log_to_pkmerge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.side_log VALUES (NEW.store_id, 'changed');
	RETURN NEW;
END $$;
CREATE TRIGGER log_it AFTER UPDATE ON store_sales FOR EACH ROW EXECUTE FUNCTION log_to_pkmerge();
SELECT amount FROM orders WHERE order_id = 4;
UPDATE orders SET amount = amount + 1 WHERE order_id = 4;
SELECT amount FROM orders WHERE order_id = 4;
SELECT count(*) FROM side_log;
DROP TRIGGER log_it ON store_sales;
DROP TABLE side_log;
DROP FUNCTION log_to_pkmerge();

-- the columns pk_materialize made in an aggregate and its value tables are
-- the maintaining statements': changing them is refused; other ALTER TABLE
-- forms, and columns added later, work and keep the aggregate maintained
ALTER TABLE store_all ALTER COLUMN qty TYPE int;
ALTER TABLE store_all DROP COLUMN hi;
ALTER TABLE store_all RENAME COLUMN n TO orders;
ALTER TABLE store_all_hi_values RENAME COLUMN __pk_value TO v;
ALTER TABLE store_all_hi_values DROP COLUMN __pk_count;
ALTER TABLE store_all RENAME TO store_all_renamed;
ALTER TABLE store_all_renamed ADD COLUMN note text DEFAULT 'kept';
CREATE INDEX ON store_all_renamed (qty);
UPDATE orders SET amount = amount + 2 WHERE order_id = 4;
SELECT store_id, region, n, qty, hi, note FROM store_all_renamed ORDER BY 1, 2;
SELECT mat_exact();
ALTER TABLE store_all_renamed DROP COLUMN note;
ALTER TABLE store_all_renamed RENAME TO store_all;

-- The tables maintenance writes (the aggregate's and its value tables)
-- take no deferrable trigger or constraint: maintenance runs at the
-- source's commit in a security-restricted operation, where triggers
-- cannot be deferred.  Checks that are not deferrable run there.
CREATE TABLE dstores (store_id int PRIMARY KEY);
INSERT INTO dstores SELECT DISTINCT store_id FROM store_all WHERE store_id IS NOT NULL;
CREATE FUNCTION mat_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER later AFTER INSERT OR UPDATE ON store_all
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mat_noop();
ALTER TABLE store_all ADD CONSTRAINT known_store FOREIGN KEY (store_id) REFERENCES dstores
	DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE store_all_hi_values ADD CONSTRAINT one_value
	UNIQUE (store_id, region, __pk_value) DEFERRABLE;
ALTER TABLE store_all ADD CONSTRAINT known_store FOREIGN KEY (store_id) REFERENCES dstores;
ALTER TABLE store_all ALTER CONSTRAINT known_store DEFERRABLE;
CREATE CONSTRAINT TRIGGER now_ AFTER INSERT OR UPDATE ON store_all
	FOR EACH ROW EXECUTE FUNCTION mat_noop();
INSERT INTO orders VALUES (1100, (SELECT min(store_id) FROM dstores), 50, NULL, 1);
SELECT mat_exact();
-- a store dstores lacks: the foreign key refuses the aggregate's new group
-- at the commit, which fails
INSERT INTO orders VALUES (1101, 99, 50, 'north', 1);
SELECT count(*) FROM orders WHERE order_id = 1101;
DROP TRIGGER now_ ON store_all;
ALTER TABLE store_all DROP CONSTRAINT known_store;
DELETE FROM orders WHERE order_id = 1100;
SELECT mat_exact();
DROP TABLE dstores;
DROP FUNCTION mat_noop();

-- dependencies: the aggregate goes with its table; the source stays until
-- its aggregates go, or takes them with CASCADE; the value tables only go
-- with their aggregate
DROP TABLE store_all_hi_values;
ALTER TABLE orders DROP COLUMN amount;
ALTER TABLE orders DROP COLUMN qty;
DROP TABLE orders;
DROP TABLE store_all;
SELECT count(*) FROM pg_class WHERE relname LIKE 'store_all%';
UPDATE orders SET amount = 3 WHERE order_id = 3;
SELECT mat_exact();
DROP TABLE orders CASCADE;
SELECT count(*) FROM pkchangelog.materializations m
WHERE NOT EXISTS (SELECT FROM pg_class WHERE oid = m.aggregate);
SELECT name FROM pk_materializations ORDER BY name::text;

DROP TABLE events, fc CASCADE;
DROP FUNCTION mat_show(), mat_exact();
DROP SCHEMA mats CASCADE;
DROP ROLE mat_owner, mat_writer, mat_nobody;
