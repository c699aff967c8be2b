-- on_conflict.sql: INSERT ... ON CONFLICT on pkmerge tables gives heap's
-- results and row counts, through the pkmerge_key index as arbiter (never
-- PostgreSQL's btree-only error).  Each statement is run on a heap table
-- too, and the two tables must agree.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE TABLE pk (id int PRIMARY KEY, a int, b text) USING pkmerge;
CREATE TABLE hp (id int PRIMARY KEY, a int, b text);
INSERT INTO pk VALUES (1, 10, 'x'), (2, 20, 'y');
INSERT INTO hp VALUES (1, 10, 'x'), (2, 20, 'y');

-- the sink-style upsert over all non-key columns
INSERT INTO pk VALUES (1, 11, 'xx'), (3, 30, 'z')
	ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b;
INSERT INTO hp VALUES (1, 11, 'xx'), (3, 30, 'z')
	ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b;

-- DO NOTHING, with and without a conflict target
INSERT INTO pk VALUES (1, 99, 'no'), (4, 40, 'w') ON CONFLICT DO NOTHING;
INSERT INTO hp VALUES (1, 99, 'no'), (4, 40, 'w') ON CONFLICT DO NOTHING;
INSERT INTO pk VALUES (2, 99, 'no') ON CONFLICT (id) DO NOTHING RETURNING *;
INSERT INTO hp VALUES (2, 99, 'no') ON CONFLICT (id) DO NOTHING RETURNING *;

-- DO UPDATE reading the existing row, with WHERE and RETURNING
INSERT INTO pk VALUES (2, 5, 'q') ON CONFLICT (id) DO UPDATE SET a = pk.a + EXCLUDED.a RETURNING *;
INSERT INTO hp VALUES (2, 5, 'q') ON CONFLICT (id) DO UPDATE SET a = hp.a + EXCLUDED.a RETURNING *;
INSERT INTO pk VALUES (3, 1, 'skip') ON CONFLICT (id) DO UPDATE SET b = EXCLUDED.b WHERE pk.a > 100 RETURNING *;
INSERT INTO hp VALUES (3, 1, 'skip') ON CONFLICT (id) DO UPDATE SET b = EXCLUDED.b WHERE hp.a > 100 RETURNING *;

-- the arbiter named by constraint
INSERT INTO pk VALUES (4, 41, 'w2') ON CONFLICT ON CONSTRAINT pk_pkey DO UPDATE SET a = EXCLUDED.a;
INSERT INTO hp VALUES (4, 41, 'w2') ON CONFLICT ON CONSTRAINT hp_pkey DO UPDATE SET a = EXCLUDED.a;

-- a key written earlier in the same transaction is a conflict too
BEGIN;
INSERT INTO pk VALUES (5, 50, 'new');
INSERT INTO pk VALUES (5, 51, 'again') ON CONFLICT (id) DO UPDATE SET a = pk.a + 1;
COMMIT;
BEGIN;
INSERT INTO hp VALUES (5, 50, 'new');
INSERT INTO hp VALUES (5, 51, 'again') ON CONFLICT (id) DO UPDATE SET a = hp.a + 1;
COMMIT;

-- the same key twice in one statement: the error heap gives
INSERT INTO pk VALUES (6, 1, 'a'), (6, 2, 'b') ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a;
INSERT INTO hp VALUES (6, 1, 'a'), (6, 2, 'b') ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a;

-- a key the same transaction deleted, or moved away by a key update, is
-- absent to ON CONFLICT: both forms insert, under READ COMMITTED and
-- REPEATABLE READ, also when the delete went out with a spill
BEGIN;
DELETE FROM pk WHERE id = 1;
INSERT INTO pk VALUES (1, 12, 'back') ON CONFLICT DO NOTHING;
UPDATE pk SET id = id + 100 WHERE id = 2;
INSERT INTO pk VALUES (2, 22, 'back') ON CONFLICT (id) DO UPDATE SET a = -1;
COMMIT;
BEGIN;
DELETE FROM hp WHERE id = 1;
INSERT INTO hp VALUES (1, 12, 'back') ON CONFLICT DO NOTHING;
UPDATE hp SET id = id + 100 WHERE id = 2;
INSERT INTO hp VALUES (2, 22, 'back') ON CONFLICT (id) DO UPDATE SET a = -1;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
DELETE FROM pk WHERE id = 3;
INSERT INTO pk VALUES (3, 33, 'back') ON CONFLICT (id) DO NOTHING;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
DELETE FROM hp WHERE id = 3;
INSERT INTO hp VALUES (3, 33, 'back') ON CONFLICT (id) DO NOTHING;
COMMIT;
CREATE TABLE pk_big (id int PRIMARY KEY, pad text) USING pkmerge WITH (write_buffer_size = '1MB');
INSERT INTO pk_big SELECT i, repeat('x', 1000) FROM generate_series(1, 2000) i;
BEGIN;
DELETE FROM pk_big;
SELECT count(*) > 0 AS spilled FROM pk_runs('pk_big') WHERE created_snapshot = 0;
INSERT INTO pk_big VALUES (7, 'back') ON CONFLICT DO NOTHING;
COMMIT;
SELECT * FROM pk_big;
DROP TABLE pk_big;

SELECT * FROM pk ORDER BY id;
-- both tables hold the same rows
SELECT count(*) AS differing FROM (
	(SELECT * FROM pk EXCEPT SELECT * FROM hp) UNION ALL (SELECT * FROM hp EXCEPT SELECT * FROM pk)) d;

DROP TABLE pk, hp;
