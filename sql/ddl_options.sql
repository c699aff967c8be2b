-- ddl_options.sql: CREATE TABLE ... USING pkmerge with options, their
-- validation (names, Paimon aliases, values, combinations), storage in
-- reloptions, ALTER TABLE SET/RESET, the primary key as a pkmerge_key
-- index, and the DDL that is refused.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

-- the primary key makes a pkmerge_key index and is recorded as an option
CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'lookup', "num-sorted-run.compaction-trigger" = 3);
\d orders
SELECT reloptions FROM pg_class WHERE oid = 'orders'::regclass;
SELECT * FROM pk_options('orders');

-- a composite key, given as a table constraint, and by option alone
CREATE TABLE lines (order_id int, line int, qty int, PRIMARY KEY (order_id, line)) USING pkmerge;
SELECT value FROM pk_options('lines') WHERE key = 'primary_key';
CREATE TABLE by_option (a int NOT NULL, b text) USING pkmerge WITH (primary_key = 'a');
SELECT value FROM pk_options('by_option') WHERE key = 'primary_key';
INSERT INTO by_option VALUES (1, 'one'), (1, 'uno');
SELECT * FROM by_option;
-- the key option and the constraint must agree
CREATE TABLE disagree (a int PRIMARY KEY, b int) USING pkmerge WITH (primary_key = 'b');
-- quoted column names survive
CREATE TABLE quoted ("Key Col" int PRIMARY KEY, v int) USING pkmerge;
SELECT value FROM pk_options('quoted') WHERE key = 'primary_key';
INSERT INTO quoted VALUES (1, 1), (1, 2);
SELECT * FROM quoted;

-- every spelling of an option: canonical, hyphenated, Paimon's
CREATE TABLE spellings (k int PRIMARY KEY) USING pkmerge WITH (
	"changelog-producer" = 'full-compaction',
	"changelog-producer.row-deduplicate" = true,
	"full-compaction.delta-commits" = 4,
	"target-file-size" = '64MB',
	"file.compression" = 'none',
	"file.compression.zstd-level" = 3,
	"snapshot.time-retained" = '30min',
	"changelog.num-retained.max" = 50,
	"write-buffer-size" = '16MB');
SELECT * FROM pk_options('spellings') WHERE value IS DISTINCT FROM (SELECT value FROM pk_options('orders') o WHERE o.key = pk_options.key);

-- bad names, values and combinations
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (fillfactor = 50);
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (changelog_producer = 'sometimes');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (merge_engine = 'partial-update');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (num_sorted_run_compaction_trigger = 0);
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (num_sorted_run_compaction_trigger = 'many');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (write_buffer_size = '1kB');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (write_buffer_size = 'lots');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (snapshot_time_retained = '1 fortnight');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (changelog_row_deduplicate = 'maybe');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (compression = 'lz4');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (changelog_producer = 'none', "changelog-producer" = 'input');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (num_sorted_run_compaction_trigger = 6, num_sorted_run_stop_trigger = 5);
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (snapshot_num_retained_min = 20, snapshot_num_retained_max = 10);
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (primary_key = 'nosuchcolumn');
CREATE TABLE bad (k int PRIMARY KEY) USING pkmerge WITH (primary_key = ',');
SELECT count(*) AS bad_tables FROM pg_class WHERE relname = 'bad';

-- a table created without a key (as migration tools and Citus's
-- alter_table_set_access_method do: the table first, the key second)
-- holds no rows and refuses writes until ALTER TABLE adds its key
CREATE TABLE nokey (a int NOT NULL, b text, p point) USING pkmerge;
SELECT * FROM nokey;
INSERT INTO nokey VALUES (1, 'one');
COPY nokey (a, b) FROM stdin;
1	one
\.
SELECT pk_write('nokey', '+I', ROW(1, 'one', NULL)::nokey);
UPDATE nokey SET b = 'x';
DELETE FROM nokey;
TRUNCATE nokey;
SELECT count(*) AS snapshots FROM pk_snapshots('nokey');
SELECT count(*) AS catalog_rows FROM pkchangelog.tables WHERE relid = 'nokey'::regclass;
-- the key comes with ADD PRIMARY KEY, not as the option
ALTER TABLE nokey SET (primary_key = 'a');
ALTER TABLE nokey ADD PRIMARY KEY (p);
INSERT INTO nokey VALUES (1, 'one');
-- only the owner adds it, checked before the lock
CREATE ROLE regress_nokey_other;
SET ROLE regress_nokey_other;
ALTER TABLE nokey ADD PRIMARY KEY (a);
RESET ROLE;
DROP ROLE regress_nokey_other;
ALTER TABLE nokey ADD CONSTRAINT nokey_key PRIMARY KEY (a);
\d nokey
SELECT value FROM pk_options('nokey') WHERE key = 'primary_key';
INSERT INTO nokey VALUES (1, 'one'), (2, 'two'), (1, 'uno');
SELECT a, b FROM nokey ORDER BY a;
SELECT snapshot_id, commit_kind, delta_record_count FROM pk_snapshots('nokey');
ALTER TABLE nokey ADD PRIMARY KEY (b);
-- a key of several columns, added in the same transaction as the table
BEGIN;
CREATE TABLE nokey2 (a int, b int, v text) USING pkmerge WITH (changelog_producer = 'lookup');
ALTER TABLE nokey2 ADD PRIMARY KEY (b, a);
INSERT INTO nokey2 VALUES (1, 2, 'x'), (2, 1, 'y');
COMMIT;
UPDATE nokey2 SET v = 'z' WHERE a = 1 AND b = 2;
SELECT rowkind, row FROM pk_changes('nokey2') ORDER BY snapshot_id, rowkind, row::text;
DROP TABLE nokey, nokey2;

-- what a pkmerge table cannot have
CREATE TABLE parted (a int PRIMARY KEY) PARTITION BY RANGE (a);
CREATE TABLE part1 PARTITION OF parted FOR VALUES FROM (0) TO (10) USING pkmerge;
CREATE TABLE ctas USING pkmerge AS SELECT 1 AS a;

-- default_table_access_method reaches the same code
SET default_table_access_method = pkmerge;
CREATE TABLE via_default (id int PRIMARY KEY, v text);
SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'via_default';
CREATE TABLE via_default_nokey (v text);
RESET default_table_access_method;

-- ALTER TABLE SET / RESET
ALTER TABLE orders SET (changelog_producer = 'input', "snapshot.num-retained.min" = 20);
SELECT key, value FROM pk_options('orders') WHERE key IN ('changelog_producer', 'snapshot_num_retained_min', 'num_sorted_run_compaction_trigger');
ALTER TABLE orders RESET (changelog_producer, "num-sorted-run.compaction-trigger");
SELECT key, value FROM pk_options('orders') WHERE key IN ('changelog_producer', 'snapshot_num_retained_min', 'num_sorted_run_compaction_trigger', 'num_sorted_run_stop_trigger');
ALTER TABLE orders SET (autovacuum_enabled = false);
ALTER TABLE orders SET (changelog_producer = 'never');
ALTER TABLE orders SET (num_sorted_run_stop_trigger = 2);
ALTER TABLE orders SET (primary_key = 'store_id');
ALTER TABLE orders SET (primary_key = 'order_id');
ALTER TABLE orders RESET (primary_key);
SELECT key, value FROM pk_options('orders') WHERE key IN ('changelog_producer', 'num_sorted_run_stop_trigger', 'primary_key');

-- supported and refused column changes
ALTER TABLE orders ADD COLUMN note text DEFAULT 'none';
-- a default evaluated once (stable) needs no rewrite; one evaluated per row
-- does (rewrites.sql)
ALTER TABLE orders ADD COLUMN created timestamptz DEFAULT now();
ALTER TABLE orders DROP COLUMN created;
ALTER TABLE orders ALTER COLUMN amount TYPE numeric(20,2);
ALTER TABLE orders DROP COLUMN order_id;
ALTER TABLE orders DROP CONSTRAINT orders_pkey;
ALTER TABLE orders SET ACCESS METHOD heap;
ALTER TABLE orders SET UNLOGGED;
ALTER TABLE orders RENAME COLUMN order_id TO id;
SELECT value FROM pk_options('orders') WHERE key = 'primary_key';
INSERT INTO orders (id, store_id, amount) VALUES (1, 10, 100), (1, 10, 80);
SELECT * FROM orders;
ALTER TABLE orders DROP COLUMN note;
SELECT * FROM orders;
VACUUM FULL orders;
CLUSTER orders USING orders_pkey;
CLUSTER orders;
ALTER TABLE orders CLUSTER ON orders_pkey;

-- pk_* functions refuse tables of other access methods, and other
-- relations; an index is taken for its table often enough to name it
CREATE TABLE plain (a int PRIMARY KEY);
SELECT * FROM pk_options('plain');
SELECT * FROM pk_snapshots('plain');
SELECT * FROM pk_changes('orders_pkey');
SELECT * FROM pk_runs('plain_pkey');
CREATE VIEW plain_view AS SELECT * FROM plain;
SELECT pk_compact('plain_view');

-- pkmerge options given to a table of another access method
CREATE TABLE plain_opts (a int) WITH (changelog_producer = 'lookup');
CREATE TABLE plain_opts (a int) WITH (fillfactor = 50, "file.compression" = 'none');
CREATE TABLE plain_opts WITH ("snapshot.time-retained" = '1h') AS SELECT 1 AS a;
ALTER TABLE plain SET (changelog_producer = 'lookup');
ALTER TABLE plain SET (fillfactor = 50);
ALTER TABLE IF EXISTS no_such_table SET (changelog_producer = 'lookup');
CREATE TABLE IF NOT EXISTS plain (a int) WITH (changelog_producer = 'lookup');
DROP VIEW plain_view;
DROP TABLE plain;

DROP TABLE orders, lines, by_option, quoted, spellings, via_default, via_default_nokey;

-- worker_enabled, pkchangelog's own option (no Paimon spelling): whether
-- the background worker maintains the table; pkchangelog.default_worker_enabled
-- (off since this suite's start) gives it to tables created without it
SET pkchangelog.default_worker_enabled = on;
CREATE TABLE w_default (k int PRIMARY KEY) USING pkmerge;
CREATE TABLE w_off (k int PRIMARY KEY) USING pkmerge WITH ("worker-enabled" = false);
SET pkchangelog.default_worker_enabled = off;
CREATE TABLE w_session (k int PRIMARY KEY) USING pkmerge;
CREATE TABLE w_given (k int PRIMARY KEY) USING pkmerge WITH (worker_enabled);
SELECT c.relname, c.reloptions, o.value AS worker_enabled
FROM pg_class c, pk_options(c.oid) o
WHERE c.relname IN ('w_default', 'w_off', 'w_session', 'w_given') AND o.key = 'worker_enabled'
ORDER BY c.relname;
ALTER TABLE w_default SET (worker_enabled = false);
ALTER TABLE w_off RESET (worker_enabled);
SELECT c.relname, o.value AS worker_enabled
FROM pg_class c, pk_options(c.oid) o
WHERE c.relname IN ('w_default', 'w_off') AND o.key = 'worker_enabled' ORDER BY c.relname;
CREATE TABLE w_bad (k int PRIMARY KEY) USING pkmerge WITH (worker_enabled = 'sometimes');
CREATE TABLE w_bad (k int PRIMARY KEY) USING pkmerge
	WITH (worker_enabled = true, "worker-enabled" = false);
DROP TABLE w_default, w_off, w_session, w_given;
