-- indexes.sql: secondary indexes on a pkmerge table (DESIGN §6).  Every
-- index access method that indexes TIDs, kept through every kind of write,
-- savepoints, spills, compaction, VACUUM, TRUNCATE, VACUUM FULL and
-- REINDEX.  After each step, each predicate is answered three ways on the
-- pkmerge table (by index scans, by bitmap scans, by a sequential scan) and
-- once on a heap table given the same writes: ix_check shows the four
-- counts, which must agree.
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE ix (id int PRIMARY KEY, cust int, ts timestamptz, tags text[],
				 note text, doc jsonb, pt point, pad text) USING pkmerge
	WITH (changelog_producer = 'lookup', write_buffer_size = '1MB');
CREATE TABLE ix_heap (id int PRIMARY KEY, cust int, ts timestamptz, tags text[],
					  note text, doc jsonb, pt point, pad text);
CREATE FUNCTION ix_fill(lo int, hi int, tab regclass) RETURNS void LANGUAGE sql AS $$
	INSERT INTO ix SELECT g, g % 50, timestamptz '2026-01-01 00:00+00' + g * interval '1 hour',
		ARRAY['t' || (g % 7)], 'note ' || g, jsonb_build_object('k', g % 5),
		point(g % 100, g / 100), ''
	FROM generate_series(lo, hi) g WHERE tab = 'ix'::regclass;
	INSERT INTO ix_heap SELECT g, g % 50, timestamptz '2026-01-01 00:00+00' + g * interval '1 hour',
		ARRAY['t' || (g % 7)], 'note ' || g, jsonb_build_object('k', g % 5),
		point(g % 100, g / 100), ''
	FROM generate_series(lo, hi) g WHERE tab = 'ix_heap'::regclass;
$$;
SELECT ix_fill(1, 5000, 'ix'), ix_fill(1, 5000, 'ix_heap');

-- the predicates, each served by one of the indexes below
CREATE TABLE ix_preds (name text PRIMARY KEY, pred text);
INSERT INTO ix_preds VALUES
	('btree', 'cust = 7'),
	('btree range', 'cust BETWEEN 10 AND 12'),
	('multi-column', 'cust = 3 AND ts < ''2026-04-01'''),
	('expression', 'lower(note) = ''note 42'''),
	('partial', 'cust = 7 AND ts > ''2026-03-01'''),
	('hash', 'id % 13 = 5 AND cust = 11'),
	('gin array', 'tags @> ARRAY[''t3'']'),
	('gin jsonb', 'doc @> ''{"k": 2}'''),
	('gist', 'pt <@ box ''((0,0),(10,10))'''),
	('spgist', 'note ^@ ''note 12''');

-- the four counts of each predicate: index scans, bitmap scans, sequential
-- scan, and the heap table's
CREATE FUNCTION ix_check() RETURNS TABLE (name text, by_index bigint, by_bitmap bigint,
										  by_seqscan bigint, heap bigint, agree boolean)
LANGUAGE plpgsql AS $$
DECLARE
	p record;
	q text;
BEGIN
	FOR p IN SELECT * FROM ix_preds ORDER BY ix_preds.name LOOP
		q := 'SELECT count(*) FROM ix WHERE ' || p.pred;
		PERFORM set_config('enable_seqscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE q INTO by_index;
		PERFORM set_config('enable_indexscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'on', true);
		EXECUTE q INTO by_bitmap;
		PERFORM set_config('enable_seqscan', 'on', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE q INTO by_seqscan;
		EXECUTE 'SELECT count(*) FROM ix_heap WHERE ' || p.pred INTO heap;
		PERFORM set_config('enable_indexscan', 'on', true);
		PERFORM set_config('enable_bitmapscan', 'on', true);
		name := p.name;
		agree := by_index = heap AND by_bitmap = heap AND by_seqscan = heap;
		RETURN NEXT;
	END LOOP;
END $$;

-- every kind of index; the first gives the table row ids
CREATE INDEX ix_cust ON ix (cust);
SELECT count(*) AS has_row_ids FROM pkchangelog.row_ids WHERE relid = 'ix'::regclass;
CREATE INDEX ix_cust_ts ON ix (cust, ts) INCLUDE (note);
CREATE INDEX ix_lower ON ix (lower(note));
CREATE INDEX ix_partial ON ix (ts) WHERE cust = 7;
CREATE INDEX ix_hash ON ix USING hash (cust);
CREATE INDEX ix_tags ON ix USING gin (tags);
CREATE INDEX ix_doc ON ix USING gin (doc jsonb_path_ops);
CREATE INDEX ix_pt ON ix USING gist (pt);
-- (once the table has row ids, an index can be built CONCURRENTLY)
CREATE INDEX CONCURRENTLY ix_note ON ix USING spgist (note);
\d ix
SELECT * FROM ix_check();

-- the plans use them
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix WHERE cust = 7;
EXPLAIN (COSTS OFF) SELECT note FROM ix WHERE lower(note) = 'note 42';
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix WHERE tags @> ARRAY['t3'];
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix WHERE pt <@ box '((0,0),(10,10))';
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, note FROM ix WHERE cust = 3 AND ts < '2026-01-10' ORDER BY ts;
SELECT id, note FROM ix WHERE cust = 3 AND ts < '2026-01-10' ORDER BY ts;
RESET enable_bitmapscan;
RESET enable_seqscan;
SELECT id, cust, note FROM ix WHERE cust = 7 AND ts > '2026-07-26' ORDER BY ts;

-- writes of every kind, to both tables
UPDATE ix SET cust = 7 WHERE id BETWEEN 100 AND 120;
UPDATE ix_heap SET cust = 7 WHERE id BETWEEN 100 AND 120;
UPDATE ix SET pad = 'touched' WHERE id % 10 = 0;
UPDATE ix_heap SET pad = 'touched' WHERE id % 10 = 0;
UPDATE ix SET id = id + 100000 WHERE id BETWEEN 200 AND 210;
UPDATE ix_heap SET id = id + 100000 WHERE id BETWEEN 200 AND 210;
DELETE FROM ix WHERE id BETWEEN 300 AND 399;
DELETE FROM ix_heap WHERE id BETWEEN 300 AND 399;
-- an INSERT of an existing key replaces its row (an upsert)
INSERT INTO ix (id, cust, note, tags) VALUES (400, 11, 'NOTE 42', ARRAY['t3']);
DELETE FROM ix_heap WHERE id = 400;
INSERT INTO ix_heap (id, cust, note, tags) VALUES (400, 11, 'NOTE 42', ARRAY['t3']);
INSERT INTO ix (id, cust, note) VALUES (401, 7, 'x'), (6001, 7, 'y')
	ON CONFLICT (id) DO UPDATE SET cust = excluded.cust, note = excluded.note;
INSERT INTO ix_heap (id, cust, note) VALUES (401, 7, 'x'), (6001, 7, 'y')
	ON CONFLICT (id) DO UPDATE SET cust = excluded.cust, note = excluded.note;
MERGE INTO ix t USING (SELECT g AS id FROM generate_series(495, 505) g) s ON t.id = s.id
	WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET cust = 12
	WHEN MATCHED THEN DELETE
	WHEN NOT MATCHED THEN INSERT (id, cust) VALUES (s.id, 12);
MERGE INTO ix_heap t USING (SELECT g AS id FROM generate_series(495, 505) g) s ON t.id = s.id
	WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET cust = 12
	WHEN MATCHED THEN DELETE
	WHEN NOT MATCHED THEN INSERT (id, cust) VALUES (s.id, 12);
COPY ix (id, cust, tags, doc, pt, note) FROM stdin;
7001	7	{t3}	{"k": 2}	(1,1)	note 1299
7002	11	{t3,t4}	{"k": 9}	(50,50)	copied
\.
COPY ix_heap (id, cust, tags, doc, pt, note) FROM stdin;
7001	7	{t3}	{"k": 2}	(1,1)	note 1299
7002	11	{t3,t4}	{"k": 9}	(50,50)	copied
\.
SELECT pk_write('ix', '+U', ROW(7003, 7, NULL, ARRAY['t3'], 'note 12x', NULL, NULL, NULL)::ix);
INSERT INTO ix_heap VALUES (7003, 7, NULL, ARRAY['t3'], 'note 12x', NULL, NULL, NULL);
SELECT * FROM ix_check();

-- a transaction sees its own writes through the indexes, and a rolled
-- back savepoint's writes are gone from them
BEGIN;
UPDATE ix SET cust = 11 WHERE id BETWEEN 1000 AND 1010;
UPDATE ix_heap SET cust = 11 WHERE id BETWEEN 1000 AND 1010;
SAVEPOINT s;
UPDATE ix SET cust = 11, tags = ARRAY['t3'] WHERE id BETWEEN 1100 AND 1200;
DELETE FROM ix WHERE cust = 7;
ROLLBACK TO SAVEPOINT s;
INSERT INTO ix (id, cust, tags) VALUES (8000, 7, ARRAY['t3']);
INSERT INTO ix_heap (id, cust, tags) VALUES (8000, 7, ARRAY['t3']);
SELECT * FROM ix_check();
COMMIT;

-- a transaction whose writes outgrow its buffer spills them into runs,
-- which keep the rows' ids
BEGIN;
UPDATE ix SET pad = repeat('p', 1000), cust = cust + 1 WHERE id % 3 = 0;
UPDATE ix_heap SET pad = repeat('p', 1000), cust = cust + 1 WHERE id % 3 = 0;
SELECT count(*) > 0 AS spilled FROM pk_runs('ix') WHERE created_snapshot = 0;
SELECT * FROM ix_check();
COMMIT;
SELECT * FROM ix_check();

-- compaction moves rows into new runs under the same ids; VACUUM then
-- takes out the entries of the versions no run holds
SELECT pk_compact('ix', true) > 0 AS compacted;
SELECT * FROM ix_check();
VACUUM ix;
SELECT * FROM ix_check();
-- the runs of the snapshots still retained (small commits keep theirs in
-- their snapshot's row) keep their versions' entries until they expire
ALTER TABLE ix SET (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
SELECT pk_expire_snapshots('ix') > 0 AS expired;
VACUUM ix;
SELECT c.relname, c.reltuples = (SELECT count(*) FROM ix) AS one_entry_per_row
FROM pg_class c WHERE c.relname IN ('ix_cust', 'ix_hash', 'ix_pt') ORDER BY 1;
SELECT c.relname, c.reltuples = (SELECT count(*) FROM ix WHERE cust = 7) AS one_entry_per_row
FROM pg_class c WHERE c.relname = 'ix_partial';
SELECT * FROM ix_check();

-- columns added and dropped; REINDEX; an index dropped
ALTER TABLE ix ADD COLUMN extra int DEFAULT 5;
ALTER TABLE ix_heap ADD COLUMN extra int DEFAULT 5;
CREATE INDEX ix_extra ON ix (extra) WHERE extra <> 5;
UPDATE ix SET extra = 6 WHERE id < 50;
UPDATE ix_heap SET extra = 6 WHERE id < 50;
INSERT INTO ix_preds VALUES ('added column', 'extra <> 5');
REINDEX TABLE ix;
DROP INDEX ix_hash;
SELECT * FROM ix_check();

-- VACUUM FULL rewrites the table and builds its indexes again
VACUUM FULL ix;
SELECT * FROM ix_check();

-- TRUNCATE empties the indexes with the table; ids go on from where they were
TRUNCATE ix;
TRUNCATE ix_heap;
SELECT * FROM ix_check() WHERE by_index <> 0 OR NOT agree;
SELECT ix_fill(1, 300, 'ix'), ix_fill(1, 300, 'ix_heap');
SELECT * FROM ix_check();

-- REINDEX ... CONCURRENTLY builds the secondary indexes again beside the
-- old ones (the key index has no entries: refused alone, left out of a
-- table's)
REINDEX TABLE CONCURRENTLY ix;
SELECT * FROM ix_check();
REINDEX INDEX CONCURRENTLY ix_cust;
SELECT * FROM ix_check() WHERE name LIKE 'btree%';
SELECT count(*) AS invalid_left_behind FROM pg_index WHERE indrelid = 'ix'::regclass AND NOT indisvalid;
-- as on heap, an exclusion constraint's index is left out with a warning
-- (the index form refuses it), and the other indexes are built again
CREATE TABLE ix_excl (id int PRIMARY KEY, r int4range, v int,
					  EXCLUDE USING gist (r WITH &&)) USING pkmerge;
CREATE INDEX ix_excl_v ON ix_excl (v);
INSERT INTO ix_excl VALUES (1, '[1,2)', 1), (2, '[3,4)', 2);
SELECT 'ix_excl_v'::regclass::oid AS v_before \gset
REINDEX TABLE CONCURRENTLY ix_excl;
SELECT 'ix_excl_v'::regclass::oid <> :v_before AS v_built_again;
SET enable_seqscan = off;
SELECT id FROM ix_excl WHERE v = 2;
RESET enable_seqscan;
INSERT INTO ix_excl VALUES (3, '[1,5)', 3);
DROP TABLE ix_excl;

-- the key index alone: a copy (no entries to build) takes its place, its
-- name and its constraint
SELECT 'ix_pkey'::regclass::oid AS pkey_before \gset
REINDEX INDEX CONCURRENTLY ix_pkey;
SELECT i.indexrelid <> :pkey_before AS replaced, i.indisprimary, i.indisvalid, c.conname
FROM pg_index i JOIN pg_constraint c ON c.conindid = i.indexrelid
WHERE i.indexrelid = 'ix_pkey'::regclass;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE id = 7;
RESET enable_seqscan;
-- a schema's tables, as PostgreSQL chooses them
CREATE SCHEMA ix_schema;
CREATE TABLE ix_schema.t (id int PRIMARY KEY, v int) USING pkmerge;
CREATE INDEX t_v ON ix_schema.t (v);
CREATE TABLE ix_schema.h (id int PRIMARY KEY, v int);
INSERT INTO ix_schema.t SELECT g, g % 5 FROM generate_series(1, 50) g;
SELECT 'ix_schema.t_v'::regclass::oid AS tv_before \gset
REINDEX SCHEMA CONCURRENTLY ix_schema;
SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relnamespace = 'ix_schema'::regnamespace ORDER BY 1;
SELECT 'ix_schema.t_v'::regclass::oid <> :tv_before AS t_v_built_again;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM ix_schema.t WHERE v = 3;
RESET enable_seqscan; RESET enable_bitmapscan;
DROP SCHEMA ix_schema CASCADE;

-- a table's first index CONCURRENTLY (beside writers: the spec
-- index_first_concurrently) gives the table row ids; not in a transaction
-- block, where nothing changes
CREATE TABLE ix_cic (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO ix_cic SELECT g, g % 5 FROM generate_series(1, 500) g;
INSERT INTO ix_cic VALUES (501, 9);
BEGIN;
CREATE INDEX CONCURRENTLY ix_cic_v ON ix_cic (v);
ROLLBACK;
SELECT count(*) AS with_row_ids FROM pkchangelog.row_ids WHERE relid = 'ix_cic'::regclass;
CREATE INDEX CONCURRENTLY ix_cic_v ON ix_cic (v);
SELECT count(*) AS with_row_ids FROM pkchangelog.row_ids WHERE relid = 'ix_cic'::regclass;
SELECT indisvalid, indisready FROM pg_index WHERE indexrelid = 'ix_cic_v'::regclass;
INSERT INTO ix_cic VALUES (502, 9);
UPDATE ix_cic SET v = 9 WHERE id = 1;
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ix_cic WHERE v = 9;
SELECT id FROM ix_cic WHERE v = 9 ORDER BY id;
RESET enable_seqscan; RESET enable_bitmapscan;
-- a build that fails (a duplicate) leaves an invalid index; writes go on
CREATE UNIQUE INDEX CONCURRENTLY ix_cic_u ON ix_cic (v) WHERE id IN (7, 12);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ix_cic_u'::regclass;
INSERT INTO ix_cic VALUES (503, 9);
DROP INDEX ix_cic_u;
SELECT count(*) FROM ix_cic WHERE v = 9;
DROP TABLE ix_cic;

-- what the indexes cannot be, and when they cannot be built (unique
-- indexes: unique.sql)
CREATE INDEX ON ix USING brin (ts);
-- a table's first index in the transaction that wrote its rows (a restore
-- in one transaction): the buffered rows take ids; not in a subtransaction
CREATE TABLE ix_new (id int PRIMARY KEY, v int) USING pkmerge;
BEGIN;
INSERT INTO ix_new SELECT g, g % 3 FROM generate_series(1, 30) g;
SAVEPOINT s;
CREATE INDEX ON ix_new (v);
ROLLBACK TO SAVEPOINT s;
RELEASE SAVEPOINT s;
UPDATE ix_new SET v = 7 WHERE id <= 4;
CREATE INDEX ix_new_v ON ix_new (v);
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT v, count(*) FROM ix_new WHERE v IN (0, 7) GROUP BY v ORDER BY v;
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT v, count(*) FROM ix_new WHERE v IN (0, 7) GROUP BY v ORDER BY v;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE ix_new;
BEGIN;
INSERT INTO ix (id, cust, pad) VALUES (9000, 1, 'in the transaction');
CREATE INDEX ix_pad ON ix (pad);
SET LOCAL enable_seqscan = off;
SELECT id, cust FROM ix WHERE pad = 'in the transaction';
ROLLBACK;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'ix'::regclass;

-- a cursor resting on a row it read through the key index: the row is its
-- fetch's only; a scan of another index (after an UPDATE through it) sees
-- the version its own snapshot sees
CREATE TABLE hc (k int PRIMARY KEY, v int) USING pkmerge;
CREATE INDEX hc_v ON hc (v);
INSERT INTO hc SELECT i, i FROM generate_series(1, 5) i;
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE c CURSOR FOR SELECT * FROM hc WHERE k >= 2 ORDER BY k;
FETCH 1 FROM c;
UPDATE hc SET v = 20 WHERE v = 2;
SELECT * FROM hc WHERE v = 2;
SELECT * FROM hc WHERE v = 20;
FETCH 1 FROM c;
COMMIT;
DROP TABLE hc;

-- a table's row ids go with it
SELECT 'ix'::regclass::oid AS ix_oid \gset
DROP TABLE ix;
SELECT count(*) AS row_ids_rows FROM pkchangelog.row_ids WHERE relid = :ix_oid;
DROP TABLE ix_heap, ix_preds;
DROP FUNCTION ix_check(), ix_fill(int, int, regclass);
