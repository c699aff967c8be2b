-- ddl_keys.sql: a pkmerge table has its key index however its key is
-- given: PRIMARY KEY, the primary_key option alone (as a pg_dump restore
-- gives it, adding the constraint afterwards with ALTER TABLE ... ADD
-- PRIMARY KEY), or copied by CREATE TABLE ... (LIKE src INCLUDING
-- INDEXES); and a heap copy of a pkmerge table gets a btree key.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

-- the option alone builds the key index PRIMARY KEY would: NOT NULL key
-- columns, key lookups, ON CONFLICT (key)
CREATE TABLE by_opt (v int, w text) USING pkmerge WITH (primary_key = 'v');
\d by_opt
INSERT INTO by_opt VALUES (1, 'a'), (2, 'b'), (3, 'c');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM by_opt WHERE v = 2;
SELECT * FROM by_opt WHERE v = 2;
RESET enable_seqscan;
INSERT INTO by_opt VALUES (1, 'x') ON CONFLICT (v) DO NOTHING;
INSERT INTO by_opt VALUES (2, 'y') ON CONFLICT (v) DO UPDATE SET w = excluded.w || '!';
SELECT * FROM by_opt ORDER BY v;
INSERT INTO by_opt VALUES (NULL, 'no key');
-- a composite key with a quoted name
CREATE TABLE by_opt2 ("A" int, b text, c int) USING pkmerge WITH (primary_key = '"A", b');
\d by_opt2
INSERT INTO by_opt2 VALUES (1, 'x', 1) ON CONFLICT ("A", b) DO UPDATE SET c = by_opt2.c + 1;
INSERT INTO by_opt2 VALUES (1, 'x', 1) ON CONFLICT ("A", b) DO UPDATE SET c = by_opt2.c + 1;
SELECT * FROM by_opt2;

-- ALTER TABLE ... ADD PRIMARY KEY of the key the table has, as a restore of
-- pg_dump's output runs it: the key index takes the constraint's name and
-- deferrability (heap would raise "multiple primary keys")
ALTER TABLE by_opt ADD CONSTRAINT by_opt_key PRIMARY KEY (v);
SELECT conname, condeferrable, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'by_opt'::regclass AND contype <> 'n';
ALTER TABLE by_opt ADD PRIMARY KEY (v) DEFERRABLE;
SELECT conname, condeferrable, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'by_opt'::regclass AND contype <> 'n';
ALTER TABLE by_opt ADD CONSTRAINT by_opt_key PRIMARY KEY (v);
SELECT conname, condeferrable, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'by_opt'::regclass AND contype <> 'n';
-- another key is refused; the key cannot be dropped, DEFERRABLE or not
ALTER TABLE by_opt ADD PRIMARY KEY (w);
ALTER TABLE by_opt ADD PRIMARY KEY (v) DEFERRABLE;
ALTER TABLE by_opt DROP CONSTRAINT by_opt_pkey;
ALTER TABLE by_opt ADD CONSTRAINT by_opt_key PRIMARY KEY (v);
ALTER TABLE by_opt DROP CONSTRAINT by_opt_key;
\d by_opt
-- the rows are untouched and the table works as before
INSERT INTO by_opt VALUES (3, 'z') ON CONFLICT (v) DO UPDATE SET w = excluded.w;
SELECT * FROM by_opt ORDER BY v;

-- LIKE ... INCLUDING INDEXES (or ALL) copies the primary key, as
-- PostgreSQL copies it: into a pkmerge table as its key index, out of a
-- pkmerge table into a heap table as a btree
CREATE TABLE src_pk (id bigint PRIMARY KEY, note text DEFAULT 'n' CHECK (note <> ''))
	USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE src_heap (id bigint, line int, qty int NOT NULL, PRIMARY KEY (id, line) DEFERRABLE);
CREATE TABLE copy_pk (LIKE src_pk INCLUDING ALL) USING pkmerge;
\d copy_pk
-- table options are not copied (no storage parameter is)
SELECT key, value FROM pk_options('copy_pk') WHERE key IN ('primary_key', 'changelog_producer');
INSERT INTO copy_pk VALUES (1, 'a'), (1, 'b');
INSERT INTO copy_pk VALUES (1, 'c') ON CONFLICT (id) DO UPDATE SET note = excluded.note || '!';
INSERT INTO copy_pk (id) VALUES (2);
INSERT INTO copy_pk VALUES (3, '');
SELECT * FROM copy_pk ORDER BY id;
CREATE TABLE copy_heap (LIKE src_pk INCLUDING ALL);
\d copy_heap
INSERT INTO copy_heap VALUES (1, 'a');
INSERT INTO copy_heap VALUES (1, 'b');
CREATE TABLE copy_of_heap (LIKE src_heap INCLUDING INDEXES) USING pkmerge;
\d copy_of_heap
SELECT value FROM pk_options('copy_of_heap') WHERE key = 'primary_key';
INSERT INTO copy_of_heap VALUES (1, 1, 10), (1, 1, 11), (1, 2, 20);
SELECT * FROM copy_of_heap ORDER BY id, line;
-- a copy of the copy, back into heap
CREATE TABLE copy_back (LIKE copy_of_heap INCLUDING ALL);
\d copy_back
-- the option may name the copied key again, not another one
CREATE TABLE copy_opt_same (LIKE src_heap INCLUDING INDEXES) USING pkmerge WITH (primary_key = 'id, line');
CREATE TABLE copy_bad (LIKE src_heap INCLUDING INDEXES) USING pkmerge WITH (primary_key = 'id');
-- without INCLUDING INDEXES nothing copies a key (INCLUDING CONSTRAINTS
-- copies CHECK constraints only, as in PostgreSQL): the table has none
-- until ALTER TABLE adds it
CREATE TABLE copy_keyless (LIKE src_pk) USING pkmerge;
CREATE TABLE copy_keyless2 (LIKE src_pk INCLUDING CONSTRAINTS) USING pkmerge;
SELECT count(*) AS key_indexes FROM pg_index WHERE indrelid IN ('copy_keyless'::regclass, 'copy_keyless2'::regclass);
DROP TABLE copy_keyless, copy_keyless2;
CREATE TABLE copy_given (LIKE src_pk INCLUDING CONSTRAINTS, PRIMARY KEY (id)) USING pkmerge;
CREATE TABLE copy_opt (LIKE src_pk) USING pkmerge WITH (primary_key = 'id');
\d copy_opt
-- a heap source's other indexes come along, unique ones too
CREATE INDEX src_heap_qty ON src_heap (qty);
CREATE TABLE copy_idx (LIKE src_heap INCLUDING ALL) USING pkmerge;
SELECT c.relname, a.amname, i.indisprimary, i.indisunique
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE i.indrelid = 'copy_idx'::regclass ORDER BY c.relname;
CREATE UNIQUE INDEX src_heap_qty_id ON src_heap (qty, id);
CREATE TABLE copy_uniq (LIKE src_heap INCLUDING ALL) USING pkmerge;
SELECT c.relname, a.amname, i.indisprimary, i.indisunique
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE i.indrelid = 'copy_uniq'::regclass ORDER BY c.relname;
CREATE TABLE copy_no_index (LIKE src_heap INCLUDING ALL EXCLUDING INDEXES, PRIMARY KEY (id, line)) USING pkmerge;
SELECT count(*) AS copy_bad_tables FROM pg_class WHERE relname = 'copy_bad';

DROP TABLE by_opt, by_opt2, src_pk, src_heap, copy_pk, copy_heap, copy_of_heap,
	copy_back, copy_opt_same, copy_given, copy_opt, copy_no_index, copy_idx, copy_uniq;
