-- foreign_keys.sql: foreign keys referencing pkmerge tables (DESIGN §6),
-- from heap and pkmerge tables, through PostgreSQL's own checks and
-- actions: a reference needs its row, a row keeps its references (NO
-- ACTION, RESTRICT) or takes them along (CASCADE, SET NULL, SET DEFAULT),
-- checked at statement end or at commit (DEFERRABLE).  An upsert of a
-- referenced key replaces the row and keeps its references.  (Concurrent
-- writers: isolation specs fk_locks and fk_prepared.)
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE orders (order_id int PRIMARY KEY, store_id int, amount int) USING pkmerge;
INSERT INTO orders SELECT g, g % 3, g * 10 FROM generate_series(1, 6) g;
-- the key index has btree's operator classes, and stays the key's index
SELECT c.relname, a.amname, (SELECT string_agg(o.opcname || ' ' || oa.amname, ', ')
	FROM pg_opclass o JOIN pg_am oa ON oa.oid = o.opcmethod WHERE o.oid = ANY (i.indclass)) AS classes
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE i.indrelid = 'orders'::regclass;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE order_id = 3;
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE order_id > 3 ORDER BY order_id;
RESET enable_seqscan;
-- heap referencing tables, each action
CREATE TABLE items (item_id int PRIMARY KEY, order_id int REFERENCES orders);
CREATE TABLE notes (note_id int PRIMARY KEY,
					order_id int REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE);
CREATE TABLE tags (tag_id int PRIMARY KEY,
				   order_id int DEFAULT 1 REFERENCES orders ON DELETE SET DEFAULT ON UPDATE SET NULL);
CREATE TABLE holds (hold_id int PRIMARY KEY,
					order_id int REFERENCES orders ON DELETE RESTRICT);
\d items
SELECT conname, confrelid::regclass, conindid::regclass, confdeltype, confupdtype
FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
INSERT INTO items VALUES (1, 1), (2, 2), (3, NULL);
INSERT INTO items VALUES (4, 99);
INSERT INTO notes VALUES (1, 2), (2, 3), (3, 3);
INSERT INTO tags VALUES (1, 4), (2, 5);
INSERT INTO holds VALUES (1, 6);
-- NO ACTION and RESTRICT: the row stays while referenced
DELETE FROM orders WHERE order_id = 1;
UPDATE orders SET order_id = 100 WHERE order_id = 1;
-- (PostgreSQL 18 words RESTRICT's error as its own, 23001)
DO $$
BEGIN
	DELETE FROM orders WHERE order_id = 6;
EXCEPTION WHEN foreign_key_violation OR restrict_violation THEN
	RAISE NOTICE 'RESTRICT: order 6 is still referenced from holds';
END $$;
-- an upsert of a referenced key, a non-key update: the references stay
INSERT INTO orders VALUES (1, 9, 999);
UPDATE orders SET amount = amount + 1 WHERE order_id = 2;
INSERT INTO orders VALUES (2, 9, 0) ON CONFLICT (order_id) DO UPDATE SET amount = excluded.amount;
SELECT * FROM orders ORDER BY order_id;
-- CASCADE, SET NULL, SET DEFAULT
DELETE FROM orders WHERE order_id = 3;
UPDATE orders SET order_id = 20 WHERE order_id = 2;
SELECT * FROM items ORDER BY item_id;
UPDATE items SET order_id = NULL WHERE item_id = 2;
UPDATE orders SET order_id = 20 WHERE order_id = 2;
SELECT * FROM notes ORDER BY note_id;
UPDATE orders SET order_id = 40 WHERE order_id = 4;
DELETE FROM orders WHERE order_id = 5;
SELECT * FROM tags ORDER BY tag_id;
SELECT * FROM orders ORDER BY order_id;
-- MERGE, COPY and pk_write go through the same checks
MERGE INTO orders o USING (VALUES (20)) s(id) ON o.order_id = s.id
	WHEN MATCHED THEN DELETE;
SELECT * FROM notes ORDER BY note_id;
COPY items FROM stdin;
5	40
\.
COPY items FROM stdin;
6	77
\.
INSERT INTO items VALUES (7, 20);
SELECT pk_write('orders', '-D', ROW(40, NULL, NULL)::orders);
SELECT pk_write('orders', '+U', ROW(40, 8, 80)::orders);
SELECT * FROM orders ORDER BY order_id;
-- a deferred check: the reference may come before its row, in a transaction
CREATE TABLE lines (line_id int PRIMARY KEY,
					order_id int REFERENCES orders DEFERRABLE INITIALLY DEFERRED) USING pkmerge;
BEGIN;
INSERT INTO lines VALUES (1, 50);
INSERT INTO orders VALUES (50, 1, 500);
COMMIT;
BEGIN;
INSERT INTO lines VALUES (2, 51);
COMMIT;
BEGIN;
DELETE FROM orders WHERE order_id = 50;
INSERT INTO orders VALUES (50, 2, 5000);
COMMIT;
BEGIN;
SET CONSTRAINTS ALL IMMEDIATE;
INSERT INTO lines VALUES (3, 52);
ROLLBACK;
-- a savepoint's delete, rolled back, leaves the row referenceable
INSERT INTO orders VALUES (7, 1, 70);
BEGIN;
SAVEPOINT s;
DELETE FROM orders WHERE order_id = 7;
ROLLBACK TO s;
INSERT INTO items VALUES (8, 7);
COMMIT;
SELECT * FROM lines ORDER BY line_id;
-- ALTER TABLE ADD FOREIGN KEY checks the rows there, NOT VALID then VALIDATE
CREATE TABLE later (id int PRIMARY KEY, order_id int) USING pkmerge;
INSERT INTO later VALUES (1, 40), (2, 404);
ALTER TABLE later ADD FOREIGN KEY (order_id) REFERENCES orders;
ALTER TABLE later ADD CONSTRAINT later_fk FOREIGN KEY (order_id) REFERENCES orders NOT VALID;
ALTER TABLE later VALIDATE CONSTRAINT later_fk;
DELETE FROM later WHERE id = 2;
ALTER TABLE later VALIDATE CONSTRAINT later_fk;
INSERT INTO later VALUES (3, 404);
-- a pkmerge referencing table, CASCADE through it, and a self-reference
CREATE TABLE parts (part_id int PRIMARY KEY, parent int REFERENCES parts ON DELETE CASCADE,
					order_id int REFERENCES orders ON DELETE CASCADE) USING pkmerge;
INSERT INTO parts VALUES (1, NULL, 50), (2, 1, 50), (3, 2, 40), (4, 3, 40), (5, NULL, 50);
INSERT INTO parts VALUES (6, 9, 50);
DELETE FROM parts WHERE part_id = 2;
SELECT * FROM parts ORDER BY part_id;
DELETE FROM lines;
DELETE FROM orders WHERE order_id = 50;
SELECT * FROM parts ORDER BY part_id;
-- a compaction rewrites the rows, not the references
SELECT pk_compact('orders', full => true) IS NOT NULL AS compacted;
DELETE FROM orders WHERE order_id = 40;
INSERT INTO items VALUES (9, 40);
INSERT INTO items VALUES (10, 50);
-- a composite key, and keys equal but not identical (numeric scale)
CREATE TABLE acct (region text, n numeric, PRIMARY KEY (region, n)) USING pkmerge;
INSERT INTO acct VALUES ('eu', 1.0), ('us', 2);
CREATE TABLE acct_ref (id int PRIMARY KEY, region text, n numeric,
					   FOREIGN KEY (region, n) REFERENCES acct ON UPDATE CASCADE);
INSERT INTO acct_ref VALUES (1, 'eu', 1.00), (2, 'us', 2.000);
INSERT INTO acct_ref VALUES (3, 'eu', 2);
UPDATE acct SET n = 1.000 WHERE region = 'eu';
SELECT * FROM acct_ref ORDER BY id;
DELETE FROM acct WHERE region = 'eu';
-- TRUNCATE needs the referencing tables truncated too
TRUNCATE orders;
TRUNCATE acct, acct_ref;
SELECT count(*) FROM acct_ref;
-- the referenced key needs REFERENCES privilege
CREATE ROLE regress_fk_user;
CREATE TABLE regress_fk_user_t (id int, order_id int);
ALTER TABLE regress_fk_user_t OWNER TO regress_fk_user;
SET ROLE regress_fk_user;
ALTER TABLE regress_fk_user_t ADD FOREIGN KEY (order_id) REFERENCES orders;
RESET ROLE;
GRANT REFERENCES ON orders TO regress_fk_user;
SET ROLE regress_fk_user;
ALTER TABLE regress_fk_user_t ADD FOREIGN KEY (order_id) REFERENCES orders;
RESET ROLE;
DROP TABLE regress_fk_user_t;
REVOKE REFERENCES ON orders FROM regress_fk_user;
DROP ROLE regress_fk_user;
DROP TABLE items, notes, tags, holds, lines, later, parts, acct, acct_ref, orders;
