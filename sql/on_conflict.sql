-- on_conflict.sql: INSERT ... ON CONFLICT on pkmerge tables gives heap's
-- results and row counts, through the pkmerge_key index as arbiter (never
-- PostgreSQL's btree-only error).  Each statement is run on a heap table
-- too, and the two tables must agree.

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

SELECT * FROM pk ORDER BY id;
-- both tables hold the same rows
SELECT count(*) AS differing FROM (
	(SELECT * FROM pk EXCEPT SELECT * FROM hp) UNION ALL (SELECT * FROM hp EXCEPT SELECT * FROM pk)) d;

DROP TABLE pk, hp;
