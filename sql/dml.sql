-- dml.sql: every write form on a pkmerge table and what reads see after it.
-- INSERT is an upsert (last write wins, no unique violation); UPDATE,
-- DELETE, MERGE, COPY, multi-row and INSERT ... SELECT behave as on heap;
-- an update of the key is a delete of the old key plus an insert of the
-- new one; a command never sees its own writes, later commands do.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2)) USING pkmerge;

-- upsert: the second row for 1001 replaces the first, within one statement too
INSERT INTO orders VALUES (1001, 10, 100.00);
INSERT INTO orders VALUES (1001, 10, 80.00), (1002, 20, 5.00), (1002, 20, 6.00);
SELECT * FROM orders ORDER BY order_id;
SELECT store_id, sum(amount) FROM orders GROUP BY store_id ORDER BY store_id;

-- RETURNING sees the rows as written
INSERT INTO orders VALUES (1003, 10, 1.50) RETURNING *, tableoid::regclass;

-- UPDATE: plain, computed from the old value, with RETURNING, no match
UPDATE orders SET amount = amount * 2 WHERE store_id = 10 RETURNING order_id, amount;
UPDATE orders SET amount = 0 WHERE order_id = 9999;
SELECT * FROM orders ORDER BY order_id;

-- Halloween: every row is updated exactly once although the updated rows
-- sort after the ones still to be visited
UPDATE orders SET order_id = order_id + 1000;
SELECT * FROM orders ORDER BY order_id;
UPDATE orders SET order_id = order_id - 1000 RETURNING order_id;

-- updating the key onto an existing key overwrites that row (upsert)
UPDATE orders SET order_id = 1001 WHERE order_id = 1003;
SELECT * FROM orders ORDER BY order_id;

-- DELETE: by key, by other column, with RETURNING, of nothing
DELETE FROM orders WHERE order_id = 1002 RETURNING *;
DELETE FROM orders WHERE store_id = 999;
SELECT * FROM orders ORDER BY order_id;
-- re-insert after delete
INSERT INTO orders VALUES (1002, 20, 7.00);
SELECT * FROM orders ORDER BY order_id;

-- INSERT ... SELECT from itself does not see its own rows
INSERT INTO orders SELECT order_id + 10, store_id, amount FROM orders;
SELECT count(*) FROM orders;

-- COPY goes through the batched insert path
COPY orders FROM stdin;
2001	30	1.00
2002	30	2.00
2001	30	3.00
\.
SELECT * FROM orders WHERE store_id = 30 ORDER BY order_id;

-- MERGE with all three actions
MERGE INTO orders o
USING (VALUES (2001::bigint, 10.00), (2002, NULL), (2003, 4.00)) AS v(id, amount)
ON o.order_id = v.id
WHEN MATCHED AND v.amount IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET amount = o.amount + v.amount
WHEN NOT MATCHED THEN INSERT VALUES (v.id, 30, v.amount);
SELECT * FROM orders WHERE store_id = 30 ORDER BY order_id;

-- MERGE's INSERT action is an INSERT, so an upsert: a new key inserted
-- twice by one MERGE is one row, the one written last in the order the
-- plan met the source rows (heap raises a unique violation)
MERGE INTO orders o
USING (VALUES (2101::bigint, 1.00), (2101, 2.00)) AS v(id, amount)
ON o.order_id = v.id
WHEN NOT MATCHED THEN INSERT VALUES (v.id, 31, v.amount);
SELECT order_id, count(*), min(amount) IN (1.00, 2.00) AS one_of_them
FROM orders WHERE store_id = 31 GROUP BY order_id;

-- a transaction sees its own earlier commands; other commands' writes stay
-- invisible to the command that makes them
BEGIN;
INSERT INTO orders VALUES (3001, 40, 1.00);
SELECT * FROM orders WHERE order_id = 3001;
UPDATE orders SET amount = amount + 1 WHERE order_id = 3001;
UPDATE orders SET amount = amount + 1 WHERE order_id = 3001;
SELECT * FROM orders WHERE order_id = 3001;
DELETE FROM orders WHERE order_id = 3001;
SELECT count(*) FROM orders WHERE order_id = 3001;
INSERT INTO orders VALUES (3001, 40, 9.00);
COMMIT;
SELECT * FROM orders WHERE order_id = 3001;

-- a rolled back transaction leaves nothing
BEGIN;
INSERT INTO orders VALUES (4001, 50, 1.00);
DELETE FROM orders WHERE order_id = 1001;
ROLLBACK;
SELECT count(*) FILTER (WHERE order_id = 4001) AS inserted, count(*) FILTER (WHERE order_id = 1001) AS kept FROM orders;

-- wide rows are stored whole, compressed (no TOAST table)
CREATE TABLE docs (id int PRIMARY KEY, body text) USING pkmerge;
INSERT INTO docs SELECT g, repeat(md5(g::text), 20000) FROM generate_series(1, 3) g;
INSERT INTO docs VALUES (4, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 40000) g));
SELECT id, length(body), md5(body) = CASE WHEN id < 4 THEN md5(repeat(md5(id::text), 20000))
	ELSE (SELECT md5(string_agg(md5(g::text), '')) FROM generate_series(1, 40000) g) END AS intact
FROM docs ORDER BY id;
SELECT reltoastrelid = 0 AS no_toast_table FROM pg_class WHERE oid = 'docs'::regclass;

-- NULLs in non-key columns, all types of keys
CREATE TABLE typed (k text PRIMARY KEY, n numeric, d date, u uuid) USING pkmerge;
INSERT INTO typed VALUES ('b', NULL, '2026-01-01', NULL), ('a', 1.5, NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), ('B', 2, NULL, NULL);
SELECT * FROM typed ORDER BY k COLLATE "C";
UPDATE typed SET n = 0 WHERE k = 'a';
SELECT * FROM typed WHERE k = 'a';

DROP TABLE orders, docs, typed;
