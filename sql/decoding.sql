-- decoding.sql: pkmerge changes reach logical decoding as row changes of
-- the table (test_decoding: INSERT, UPDATE with old-key for a -U/+U pair,
-- DELETE, TRUNCATE), for each producer as its stream says, in commit order,
-- never for rolled-back work; the pkchangelog output plugin renders them as
-- RowKinds (text and json), heap tables too; origin filtering and
-- fast-forward hold for pkmerge changes; the decoded stream is
-- pk_changes' stream; other plugins than pkchangelog receive old rows as
-- the replica identity gives them; the extension's catalog is never
-- decoded nor published.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
CREATE VIEW td AS
SELECT data FROM pg_logical_slot_get_changes('td_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
SELECT 'init' FROM pg_create_logical_replication_slot('td_slot', 'test_decoding');

-- lookup: the complete stream
CREATE TABLE lk (k int PRIMARY KEY, g int, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO lk VALUES (1, 10, 'one'), (2, 20, NULL);
INSERT INTO lk VALUES (1, 10, 'uno');             -- blind overwrite: an UPDATE
UPDATE lk SET g = 21 WHERE k = 2;
UPDATE lk SET k = 3 WHERE k = 2;                  -- key moved: DELETE + INSERT
DELETE FROM lk WHERE k = 1;
INSERT INTO lk VALUES (1, 11, 'again');           -- re-insert after delete
SELECT * FROM td;

-- rolled back: nothing; a savepoint rolled back: only what stayed
BEGIN;
INSERT INTO lk VALUES (50, 50, 'gone');
ROLLBACK;
BEGIN;
INSERT INTO lk VALUES (60, 60, 'kept');
SAVEPOINT s;
INSERT INTO lk VALUES (61, 61, 'rolled back');
UPDATE lk SET v = 'rolled back too' WHERE k = 60;
ROLLBACK TO SAVEPOINT s;
UPDATE lk SET g = 600 WHERE k = 1;
COMMIT;
SELECT * FROM td;

-- several writes of a key in one transaction fold into its net change
BEGIN;
UPDATE lk SET g = 1 WHERE k = 60;
UPDATE lk SET g = 2 WHERE k = 60;
INSERT INTO lk VALUES (70, 70, 'x');
DELETE FROM lk WHERE k = 70;
COMMIT;
SELECT * FROM td;

-- TRUNCATE is PostgreSQL's own TRUNCATE change, not a DELETE per row;
-- rows written after it in the transaction follow it
BEGIN;
TRUNCATE lk;
INSERT INTO lk VALUES (5, 5, 'after');
COMMIT;
SELECT * FROM td;

-- none: what was written; an upsert of an existing key is an INSERT, an
-- UPDATE has no old row, a DELETE carries the key
CREATE TABLE nn (k int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO nn VALUES (1, 1), (2, 2);
INSERT INTO nn VALUES (1, 100);
UPDATE nn SET v = 20 WHERE k = 2;
DELETE FROM nn WHERE k = 1;
TRUNCATE nn;
SELECT * FROM td;

-- input: SQL UPDATE supplies the old row, an overwriting INSERT does not
CREATE TABLE inp (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'input');
INSERT INTO inp VALUES (1, 1);
UPDATE inp SET v = 2 WHERE k = 1;
INSERT INTO inp VALUES (1, 3);
SELECT pk_write('inp', '-U', ROW(1, 3)::inp);
SELECT * FROM td;

-- full-compaction: nothing at commit; the compaction's transaction
-- carries the net changes since the previous full compaction
CREATE TABLE fc (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'full-compaction');
INSERT INTO fc VALUES (1, 1), (2, 2), (3, 3);
SELECT * FROM td;
SELECT pk_compact('fc', true) IS NOT NULL AS compacted;
SELECT * FROM td;
UPDATE fc SET v = v * 10 WHERE k = 1;
UPDATE fc SET v = v * 100 WHERE k = 1;
DELETE FROM fc WHERE k = 2;
INSERT INTO fc VALUES (4, 4);
SELECT pk_compact('fc', true) IS NOT NULL AS compacted;
SELECT * FROM td;

-- TOAST-sized values are decoded whole (pkmerge stores rows whole)
CREATE TABLE big (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO big VALUES (1, repeat('x', 100000));
UPDATE big SET v = repeat('y', 300000);
SELECT length(data), data LIKE '%old-key: k[integer]:1 v[text]:''xxx%' AS old_row,
	data LIKE '%new-tuple: k[integer]:1 v[text]:''yyy%' AS new_row,
	data LIKE '%unchanged-toast-datum%' AS toast_pointer
FROM td;

-- origin filtering: test_decoding's only-local leaves out changes written
-- under a replication origin (as an apply worker writes them)
SELECT 'origin' FROM pg_replication_origin_create('dec_origin');
SELECT 'session' FROM pg_replication_origin_session_setup('dec_origin');
INSERT INTO big VALUES (2, 'from elsewhere');
SELECT pg_replication_origin_session_reset();
INSERT INTO big VALUES (3, 'local');
SELECT data FROM pg_logical_slot_peek_changes('td_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1', 'only-local', '1')
WHERE data LIKE 'table public.big%';
SELECT data FROM td WHERE data LIKE 'table public.big%';
SELECT pg_replication_origin_drop('dec_origin');

-- fast-forward (pg_replication_slot_advance) passes pkmerge changes by
UPDATE big SET v = 'skipped' WHERE k = 3;
SELECT 'advanced' FROM pg_replication_slot_advance('td_slot', pg_current_wal_lsn());
INSERT INTO big VALUES (4, 'after the advance');
SELECT * FROM td;

SELECT 'stop' FROM pg_drop_replication_slot('td_slot');

-- the pkchangelog output plugin
SELECT 'init' FROM pg_create_logical_replication_slot('pk_slot', 'pkchangelog');
CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(10,2))
	USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO orders VALUES (1001, 10, 100), (1002, 11, 5);
UPDATE orders SET amount = 80 WHERE order_id = 1001;
DELETE FROM orders WHERE order_id = 1002;
CREATE TABLE heap_plain (id int PRIMARY KEY, v text, n numeric);
INSERT INTO heap_plain VALUES (1, 'it''s', 'NaN');
UPDATE heap_plain SET v = 'b';                    -- no old row in WAL
UPDATE heap_plain SET id = 2;                     -- old key only
DELETE FROM heap_plain;                           -- key only
CREATE TABLE heap_full (id int PRIMARY KEY, ok bool, j jsonb);
ALTER TABLE heap_full REPLICA IDENTITY FULL;
INSERT INTO heap_full VALUES (1, true, '{"a": [1, null]}');
UPDATE heap_full SET ok = false;
DELETE FROM heap_full;
TRUNCATE orders, heap_plain;
SELECT data FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'include-xids', 'off',
	'skip-empty-xacts', '1');
SELECT data FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL,
	'format', 'json', 'include-xids', '0', 'skip-empty-xacts', 'on');
-- include-timestamp; skip-empty-xacts leaves out transactions that only
-- wrote the catalog or nothing decodable
SELECT regexp_replace(data, '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.+-]+', 'TIME') AS data
FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'include-xids', 'no',
	'include-timestamp', 'yes', 'skip-empty-xacts', 'on')
WHERE data LIKE 'COMMIT%' LIMIT 2;
-- (autovacuum's transactions come and go: count only what must be there)
SELECT count(*) FILTER (WHERE data = 'BEGIN' AND next = 'COMMIT') > 0 AS empty_transactions
FROM (SELECT data, lead(data) OVER (ORDER BY n) AS next
	  FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'include-xids', '0')
		   WITH ORDINALITY AS c(lsn, xid, data, n)) x;
SELECT count(*) FILTER (WHERE data = 'BEGIN') AS begins,
	count(*) FILTER (WHERE data = 'BEGIN' AND next = 'COMMIT') AS empty_transactions
FROM (SELECT data, lead(data) OVER (ORDER BY n) AS next
	  FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'include-xids', '0',
		  'skip-empty-xacts', '1') WITH ORDINALITY AS c(lsn, xid, data, n)) x;
-- bad options: the valid ones are listed
SELECT data FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'fromat', 'json');
SELECT data FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'format', 'xml');
SELECT data FROM pg_logical_slot_peek_changes('pk_slot', NULL, NULL, 'include-xids', 'maybe');
SELECT count(*) > 0 AS consumed FROM pg_logical_slot_get_changes('pk_slot', NULL, NULL);

-- the decoded stream is pk_changes' stream, record for record, in order,
-- for every producer (with a spill and a compaction in between): all of
-- it but the TRUNCATE, which is PostgreSQL's own change
CREATE TABLE eq_none (k int PRIMARY KEY, g int, v text) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE TABLE eq_input (LIKE eq_none INCLUDING ALL) USING pkmerge
	WITH (changelog_producer = 'input', write_buffer_size = '1MB');
CREATE TABLE eq_lookup (LIKE eq_none INCLUDING ALL) USING pkmerge
	WITH (changelog_producer = 'lookup', write_buffer_size = '1MB');
CREATE TABLE eq_full (LIKE eq_none INCLUDING ALL) USING pkmerge
	WITH (changelog_producer = 'full-compaction', write_buffer_size = '1MB');
CREATE FUNCTION eq_round(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('INSERT INTO %s SELECT i, i %% 7, repeat(md5(i::text), 4) FROM generate_series(1, 2000) i', t);
	EXECUTE format('UPDATE %s SET g = g + 1 WHERE k %% 3 = 0', t);
	EXECUTE format('DELETE FROM %s WHERE k %% 5 = 0', t);
	EXECUTE format('UPDATE %s SET k = k + 5000 WHERE k %% 11 = 1', t);
END $$;
SELECT eq_round(t) FROM unnest('{eq_none,eq_input,eq_lookup,eq_full}'::regclass[]) t;
SELECT pk_compact(t, true) IS NOT NULL AS compacted
FROM unnest('{eq_none,eq_input,eq_lookup,eq_full}'::regclass[]) t;
BEGIN;
INSERT INTO eq_lookup SELECT i, 0, repeat('x', 400) FROM generate_series(1, 6000) i;
INSERT INTO eq_input SELECT i, 0, repeat('x', 400) FROM generate_series(1, 6000) i;
INSERT INTO eq_none SELECT i, 0, repeat('x', 400) FROM generate_series(1, 6000) i;
INSERT INTO eq_full SELECT i, 0, repeat('x', 400) FROM generate_series(1, 6000) i;
COMMIT;
SELECT pk_compact('eq_full', true) IS NOT NULL AS compacted;
CREATE TEMP TABLE decoded AS
SELECT ordinality AS n, d->>'table' AS tab, (d->>'snapshot')::bigint AS snapshot_id,
	d->>'rowkind' AS rowkind, d->'row' AS row
FROM pg_logical_slot_get_changes('pk_slot', NULL, NULL, 'format', 'json') WITH ORDINALITY,
	LATERAL (SELECT data::jsonb AS d) x
WHERE d ? 'table';
SELECT t AS tab,
	(SELECT count(*) FROM decoded WHERE tab = 'public.' || t) AS decoded,
	(SELECT array_agg(rowkind || row::text ORDER BY n) FROM decoded WHERE tab = 'public.' || t)
	IS NOT DISTINCT FROM
	(SELECT array_agg(rowkind || row::text ORDER BY snapshot_id, ord)
	 FROM pk_changes(t::regclass) WITH ORDINALITY AS c(snapshot_id, rowkind, row, producer, ord))
	AS same_stream,
	(SELECT bool_and(snapshot_id IS NOT NULL) FROM decoded WHERE tab = 'public.' || t) AS snapshot_ids
FROM unnest('{eq_none,eq_input,eq_lookup,eq_full}'::text[]) t;
-- snapshot order is commit order
SELECT tab, bool_and(ascending) AS in_snapshot_order FROM (
	SELECT tab, snapshot_id >= lag(snapshot_id, 1, 0::bigint) OVER (PARTITION BY tab ORDER BY n) AS ascending
	FROM decoded) x GROUP BY tab ORDER BY tab;
SELECT 'stop' FROM pg_drop_replication_slot('pk_slot');

-- DDL in the stream: each change decodes in the table's shape of its time
-- (a column added with a default, dropped, renamed; VACUUM FULL moving the
-- table to a new file; a switch of producer)
SELECT 'init' FROM pg_create_logical_replication_slot('ddl_slot', 'pkchangelog');
CREATE TABLE dd (k int PRIMARY KEY, a int, b text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO dd VALUES (1, 1, 'one'), (2, 2, 'two');
ALTER TABLE dd ADD COLUMN c int DEFAULT 7;
UPDATE dd SET a = 10 WHERE k = 1;
ALTER TABLE dd DROP COLUMN b;
VACUUM FULL dd;
UPDATE dd SET c = 8 WHERE k = 2;
ALTER TABLE dd RENAME COLUMN a TO a2;
DELETE FROM dd WHERE k = 1;
ALTER TABLE dd SET (changelog_producer = 'full-compaction');
INSERT INTO dd VALUES (3, 3, 3);
SELECT pk_compact('dd', true) IS NOT NULL AS compacted;
SELECT data FROM pg_logical_slot_get_changes('ddl_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
SELECT 'stop' FROM pg_drop_replication_slot('ddl_slot');
DROP TABLE dd;

-- Records are written only while a logical slot of the database exists: a
-- slot created later outputs no transaction that was running while it was
-- being created, so it could not decode them.  pg_walinspect counts them.
CREATE EXTENSION pg_walinspect;
CREATE TABLE wr (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup');
SELECT pg_current_wal_insert_lsn() AS wr_start \gset
INSERT INTO wr VALUES (1, 1), (2, 1);
UPDATE wr SET v = 2 WHERE k = 1;
SELECT count(*) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type = 'CHANGES')
		AS records_without_slot,
	count(*) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type LIKE 'LOG_APPEND%')
		AS commit_log_records,
	count(*) FILTER (WHERE resource_manager = 'Heap') > 0 AS catalog_rows_written
FROM pg_get_wal_records_info(:'wr_start', pg_current_wal_flush_lsn());
SELECT 'init' FROM pg_create_logical_replication_slot('wr_slot', 'pkchangelog');
SELECT pg_current_wal_insert_lsn() AS wr_start \gset
UPDATE wr SET v = 3 WHERE k = 1;
DELETE FROM wr WHERE k = 2;
SELECT count(*) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type = 'CHANGES')
	AS records_with_slot
FROM pg_get_wal_records_info(:'wr_start', pg_current_wal_flush_lsn());
SELECT data FROM pg_logical_slot_get_changes('wr_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
SELECT 'stop' FROM pg_drop_replication_slot('wr_slot');
-- a slot of another database does not count
\set wr_db :DBNAME
CREATE DATABASE wr_other;
\c wr_other
SELECT 'init' FROM pg_create_logical_replication_slot('wr_other_slot', 'test_decoding');
\c :wr_db
SELECT pg_current_wal_insert_lsn() AS wr_start \gset
UPDATE wr SET v = 4 WHERE k = 1;
SELECT count(*) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type = 'CHANGES')
	AS records_other_database
FROM pg_get_wal_records_info(:'wr_start', pg_current_wal_flush_lsn());
SELECT 'stop' FROM pg_drop_replication_slot('wr_other_slot');
DROP DATABASE wr_other;
TABLE wr;
DROP TABLE wr;
DROP EXTENSION pg_walinspect;

-- The replica identity of a pkmerge table is FULL, whatever its producer
-- (heap keeps DEFAULT), and ALTER TABLE ... REPLICA IDENTITY changes it
CREATE TABLE ri (k numeric PRIMARY KEY, g int, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE TABLE ri_none (k int PRIMARY KEY, v int) USING pkmerge;
SELECT relname, relreplident FROM pg_class
WHERE relname IN ('ri', 'ri_none', 'heap_plain') ORDER BY 1;
ALTER TABLE ri_none REPLICA IDENTITY NOTHING;
ALTER TABLE ri_none SET (changelog_producer = 'lookup');
SELECT relname, relreplident FROM pg_class WHERE relname = 'ri_none';
DROP TABLE ri_none;
-- Every plugin but pkchangelog receives the old row as the identity gives
-- it, as for heap: FULL the whole row; DEFAULT and USING INDEX the key
-- (NULL elsewhere), for an UPDATE only when the key's stored value
-- changed; NOTHING none.  pkchangelog always receives complete rows.
SELECT 'init' FROM pg_create_logical_replication_slot('ri_td', 'test_decoding');
SELECT 'init' FROM pg_create_logical_replication_slot('ri_pk', 'pkchangelog');
INSERT INTO ri VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c');
UPDATE ri SET v = 'a1' WHERE k = 1;
ALTER TABLE ri REPLICA IDENTITY DEFAULT;
UPDATE ri SET v = 'a2' WHERE k = 1;
UPDATE ri SET k = 1.0, v = 'a3' WHERE k = 1;
DELETE FROM ri WHERE k = 2;
ALTER TABLE ri REPLICA IDENTITY USING INDEX ri_pkey;
UPDATE ri SET k = 1.00 WHERE k = 1;
ALTER TABLE ri REPLICA IDENTITY NOTHING;
UPDATE ri SET v = 'a4' WHERE k = 1;
DELETE FROM ri WHERE k = 3;
SELECT data FROM pg_logical_slot_get_changes('ri_td', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1') WHERE data LIKE 'table %';
SELECT data FROM pg_logical_slot_get_changes('ri_pk', NULL, NULL, 'include-xids', '0')
WHERE data LIKE 'public.%';
SELECT 'stop' FROM pg_drop_replication_slot('ri_td');
SELECT 'stop' FROM pg_drop_replication_slot('ri_pk');
DROP TABLE ri;

-- The extension's catalog never reaches a client: its changes are not
-- decoded (the tables are marked as a rewrite's transient tables are:
-- test_decoding's include-rewrites would show them), and a FOR ALL TABLES
-- publication, which lists them, streams the pkmerge tables' changes
-- alone (t/040_cdc_defaults.pl).  Publishing them by name is refused.
SELECT 'init' FROM pg_create_logical_replication_slot('cat_td', 'test_decoding');
INSERT INTO orders VALUES (99, 1, 1);
SELECT pk_compact('orders', true) IS NOT NULL AS compacted;
SELECT count(*) FILTER (WHERE data LIKE 'table pkchangelog.%') AS catalog_changes,
	   count(*) FILTER (WHERE data LIKE 'table public.orders:%') AS orders_changes
FROM pg_logical_slot_peek_changes('cat_td', NULL, NULL);
SELECT count(*) FILTER (WHERE data LIKE 'table pkchangelog.%') > 0 AS catalog_changes_with_rewrites
FROM pg_logical_slot_peek_changes('cat_td', NULL, NULL, 'include-rewrites', '1');
SELECT 'stop' FROM pg_drop_replication_slot('cat_td');
CREATE PUBLICATION p_all FOR ALL TABLES;
SELECT count(*) > 0 AS lists_catalog_tables FROM pg_publication_tables
WHERE pubname = 'p_all' AND schemaname = 'pkchangelog';
DROP PUBLICATION p_all;
CREATE PUBLICATION p_cat FOR TABLE orders, pkchangelog.runs;
CREATE PUBLICATION p_schema FOR TABLES IN SCHEMA pkchangelog;
CREATE PUBLICATION p_ok FOR TABLE orders;
ALTER PUBLICATION p_ok ADD TABLE pkchangelog.snapshots;
ALTER PUBLICATION p_ok ADD TABLES IN SCHEMA pkchangelog;
ALTER PUBLICATION p_ok SET TABLES IN SCHEMA pkchangelog;
SELECT pubname, tablename FROM pg_publication_tables ORDER BY 1, 2;
DROP PUBLICATION p_ok;

DROP TABLE lk, nn, inp, fc, big, orders, heap_plain, heap_full,
	eq_none, eq_input, eq_lookup, eq_full;
DROP FUNCTION eq_round(regclass);
DROP VIEW td;
