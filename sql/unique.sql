-- unique.sql: unique indexes, UNIQUE and EXCLUDE constraints on non-key
-- columns of a pkmerge table (DESIGN §6), with PostgreSQL's answers: every
-- write path checks them, a version its key's newer version replaced (in
-- the same statement, transaction, or compacted away) holds its value no
-- longer, and ON CONFLICT takes them as arbiters.  (Concurrent writers:
-- isolation specs unique_wait and unique_prepared.)
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE acct (id int PRIMARY KEY, email text UNIQUE, ext text, v int,
				   CONSTRAINT acct_ext UNIQUE NULLS NOT DISTINCT (ext)) USING pkmerge;
\d acct
INSERT INTO acct VALUES (1, 'a@x', 'e1', 1), (2, 'b@x', 'e2', 2);
-- a second row with a value: refused, by INSERT, UPDATE, COPY and MERGE
INSERT INTO acct VALUES (3, 'a@x', 'e3', 3);
UPDATE acct SET email = 'b@x' WHERE id = 1;
COPY acct FROM stdin;
4	c@x	e4	4
5	c@x	e5	5
\.
MERGE INTO acct USING (VALUES (6, 'b@x')) s(id, email) ON acct.id = s.id
	WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.email, 'e6', 6);
-- NULLS NOT DISTINCT: one NULL; email's NULLs are distinct
INSERT INTO acct VALUES (7, NULL, NULL, 7), (8, NULL, 'e8', 8);
INSERT INTO acct VALUES (9, 'i@x', NULL, 9);
SELECT * FROM acct ORDER BY id;
-- a row written again with its own values (an upsert), or with the value
-- another row gives up in the same statement
INSERT INTO acct VALUES (1, 'a@x', 'e1', 10);
UPDATE acct SET email = CASE id WHEN 1 THEN 'z@x' ELSE 'a@x' END WHERE id IN (1, 2);
SELECT * FROM acct ORDER BY id;
-- an upsert that would take another row's value
INSERT INTO acct VALUES (1, 'a@x', 'e1', 11);
-- values freed by UPDATE, DELETE, a rolled-back savepoint, within the
-- transaction and after it
BEGIN;
UPDATE acct SET email = 'y@x' WHERE id = 1;
INSERT INTO acct VALUES (10, 'z@x', 'e10', 10);
DELETE FROM acct WHERE id = 2;
INSERT INTO acct VALUES (11, 'a@x', 'e11', 11);
SAVEPOINT s;
INSERT INTO acct VALUES (12, 'q@x', 'e12', 12);
ROLLBACK TO s;
INSERT INTO acct VALUES (13, 'q@x', 'e13', 13);
COMMIT;
SELECT * FROM acct ORDER BY id;
-- after a compaction, and after VACUUM took the replaced versions' entries
UPDATE acct SET email = 'moved@x' WHERE id = 13;
SELECT pk_compact('acct', true) > 0 AS compacted;
INSERT INTO acct VALUES (14, 'q@x', 'e14', 14);
INSERT INTO acct VALUES (15, 'moved@x', 'e15', 15);
VACUUM acct;
UPDATE acct SET email = 'back@x' WHERE id = 14;
INSERT INTO acct VALUES (16, 'q@x', 'e16', 16);
SELECT * FROM acct ORDER BY id;
-- the indexes answer as a heap table's would
SET enable_seqscan = off;
SELECT id FROM acct WHERE email = 'q@x';
SELECT id FROM acct WHERE ext IS NULL;
RESET enable_seqscan;

-- ON CONFLICT on a unique index of other columns
INSERT INTO acct VALUES (20, 'q@x', 'e20', 20) ON CONFLICT (email) DO NOTHING;
INSERT INTO acct VALUES (21, 'q@x', 'e21', 21) ON CONFLICT (email) DO UPDATE SET v = acct.v + excluded.v
	RETURNING *;
INSERT INTO acct VALUES (22, 'r@x', NULL, 22) ON CONFLICT ON CONSTRAINT acct_ext DO UPDATE SET v = -1
	RETURNING *;
-- without a target, every unique index is an arbiter, the key's too
INSERT INTO acct VALUES (23, 'a@x', 'e23', 23), (16, 's@x', 'e16b', 16), (24, 't@x', 'e24', 24)
	ON CONFLICT DO NOTHING;
-- a command's own row is its conflict, once
INSERT INTO acct VALUES (25, 'u@x', 'e25', 25), (26, 'u@x', 'e26', 26) ON CONFLICT (email) DO NOTHING;
INSERT INTO acct VALUES (27, 'w@x', 'e27', 27), (28, 'w@x', 'e28', 28)
	ON CONFLICT (email) DO UPDATE SET v = 0;
-- arbiters that leave out the key: an insert of a key that has a row
-- replaces it, as a plain INSERT into a pkmerge table does
INSERT INTO acct VALUES (24, 'tt@x', 'e24', 240) ON CONFLICT (email) DO NOTHING;
-- a value conflicting in an index that is not an arbiter: an error
INSERT INTO acct VALUES (29, 'a@x', 'e29', 29) ON CONFLICT (ext) DO NOTHING;
SELECT * FROM acct ORDER BY id;

-- unique indexes built on rows already there: partial, expression,
-- multi-column with INCLUDE; and one the rows break
CREATE UNIQUE INDEX acct_v_big ON acct (v) WHERE v > 100;
CREATE UNIQUE INDEX acct_lower ON acct (lower(email));
CREATE UNIQUE INDEX acct_ext_v ON acct (ext, v) INCLUDE (email);
CREATE UNIQUE INDEX acct_v ON acct (v);
INSERT INTO acct VALUES (30, 'A@X', 'e30', 30);
INSERT INTO acct VALUES (31, 'big@x', 'e31', 240);
INSERT INTO acct VALUES (31, 'big@x', 'e31', 99), (32, 'big2@x', 'e32', 99);
ALTER TABLE acct ADD CONSTRAINT acct_v_unique UNIQUE (v);
ALTER TABLE acct ADD COLUMN code int UNIQUE;
INSERT INTO acct VALUES (33, 'c33@x', 'e33', 33, 1), (34, 'c34@x', 'e34', 34, 1);
SELECT indexrelid::regclass, indisunique FROM pg_index WHERE indrelid = 'acct'::regclass ORDER BY indexrelid::regclass::text;

-- a deferred constraint checks at commit (or SET CONSTRAINTS)
CREATE TABLE seat (id int PRIMARY KEY, pos int UNIQUE DEFERRABLE INITIALLY DEFERRED) USING pkmerge;
INSERT INTO seat VALUES (1, 1), (2, 2), (3, 3);
BEGIN;
UPDATE seat SET pos = pos + 1;
UPDATE seat SET pos = 1 WHERE id = 3;
COMMIT;
SELECT * FROM seat ORDER BY id;
BEGIN;
UPDATE seat SET pos = 3 WHERE id = 1;
SET CONSTRAINTS ALL IMMEDIATE;
ROLLBACK;
BEGIN;
INSERT INTO seat VALUES (4, 2);
COMMIT;
SELECT * FROM seat ORDER BY id;

-- EXCLUDE constraints: GiST over ranges, and btree
CREATE TABLE booking (id int PRIMARY KEY, room int, during int4range,
					  EXCLUDE USING gist (during WITH &&),
					  EXCLUDE USING btree (room WITH =)) USING pkmerge;
INSERT INTO booking VALUES (1, 101, '[1,5)'), (2, 102, '[5,9)');
INSERT INTO booking VALUES (3, 103, '[4,6)');
INSERT INTO booking VALUES (3, 101, '[20,30)');
UPDATE booking SET during = '[2,6)' WHERE id = 1;
-- a booking moved: its old range is free
UPDATE booking SET during = '[10,12)' WHERE id = 1;
INSERT INTO booking VALUES (3, 103, '[1,5)');
INSERT INTO booking VALUES (1, 101, '[40,41)');
SELECT * FROM booking ORDER BY id;

-- a statement moving every key (k = k + 1) while a cursor rests on a row it
-- read through the key index: each row's old version gives its value up
CREATE TABLE shift (k int PRIMARY KEY, g int, v text, UNIQUE (v, g)) USING pkmerge;
INSERT INTO shift SELECT i, i % 7, 'v' || i FROM generate_series(1, 5) i;
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM shift ORDER BY k;
FETCH 2 FROM c;
UPDATE shift SET k = k + 1;
UPDATE shift SET k = k + 10;
COMMIT;
SELECT * FROM shift ORDER BY k;

DROP TABLE acct, seat, booking, shift;
