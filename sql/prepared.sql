-- prepared.sql: PREPARE TRANSACTION after pkmerge writes (DESIGN §4).  The
-- commit step runs at PREPARE; the snapshot becomes visible at COMMIT
-- PREPARED, with ids dense and in the order transactions became visible,
-- or vanishes at ROLLBACK PREPARED, for every producer; the change stream,
-- logical decoding (with and without two_phase) and materialized
-- aggregates see the transaction once; a compaction can be prepared too;
-- a prepared small commit's commit log record counts once committed, and
-- one rolled back is skipped.  (Other sessions, a restart and a crash
-- between the two: isolation spec prepared_commit, t/029.)
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
-- Two-phase commit needs max_prepared_transactions above 0; on a server
-- where it is 0 (PostgreSQL's default) the suite ends here, as its
-- alternative output expected/prepared_1.out says.
SELECT current_setting('max_prepared_transactions')::int = 0 AS no_prepared \gset
\if :no_prepared
\echo 'max_prepared_transactions = 0: two-phase commit is off on this server, nothing to test'
\quit
\endif
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE VIEW td AS
SELECT data FROM pg_logical_slot_get_changes('pt_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
CREATE VIEW td2 AS
SELECT data FROM pg_logical_slot_get_changes('pt_slot2', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
SELECT 'init' FROM pg_create_logical_replication_slot('pt_slot', 'test_decoding');
SELECT 'init' FROM pg_create_logical_replication_slot('pt_slot2', 'test_decoding', false, true);
-- the pkchangelog output plugin, two_phase too
CREATE VIEW pc AS
SELECT data FROM pg_logical_slot_get_changes('pt_slot3', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1');
SELECT 'init' FROM pg_create_logical_replication_slot('pt_slot3', 'pkchangelog', false, true);

CREATE TABLE p_none (id int PRIMARY KEY, v int) USING pkmerge;
CREATE TABLE p_input (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'input');
CREATE TABLE p_lookup (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE TABLE p_full (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'full-compaction');
INSERT INTO p_none VALUES (1, 10), (2, 20);
INSERT INTO p_input VALUES (1, 10), (2, 20);
INSERT INTO p_lookup VALUES (1, 10), (2, 20);
INSERT INTO p_full VALUES (1, 10), (2, 20);
SELECT pk_compact('p_full', true) IS NOT NULL AS compacted;
SELECT count(*) > 0 AS decoded_the_load FROM td;
SELECT count(*) > 0 AS decoded_the_load FROM td2;
SELECT count(*) > 0 AS decoded_the_load FROM pc;

-- one transaction writing all four tables and a heap table, prepared
CREATE TABLE p_heap (id int PRIMARY KEY, v int);
BEGIN;
UPDATE p_none SET v = 11 WHERE id = 1;
UPDATE p_input SET v = 11 WHERE id = 1;
UPDATE p_lookup SET v = 11 WHERE id = 1;
UPDATE p_full SET v = 11 WHERE id = 1;
DELETE FROM p_lookup WHERE id = 2;
INSERT INTO p_lookup VALUES (3, 30);
INSERT INTO p_heap VALUES (1, 1);
PREPARE TRANSACTION 'p_all';
-- not visible yet: rows, snapshots, the stream
SELECT 'none' AS t, * FROM p_none UNION ALL SELECT 'lookup', * FROM p_lookup
	UNION ALL SELECT 'heap', * FROM p_heap ORDER BY 1, 2;
SELECT max(snapshot_id) AS lookup_newest FROM pk_snapshots('p_lookup');
SELECT count(*) AS lookup_changes FROM pk_changes('p_lookup');
SELECT gid FROM pg_prepared_xacts;
-- two-phase decoding emits the transaction at PREPARE, the other slot
-- only at COMMIT PREPARED
SELECT * FROM td;
SELECT * FROM td2;
SELECT * FROM pc;
COMMIT PREPARED 'p_all';
SELECT 'none' AS t, * FROM p_none UNION ALL SELECT 'input', * FROM p_input
	UNION ALL SELECT 'lookup', * FROM p_lookup UNION ALL SELECT 'full', * FROM p_full
	UNION ALL SELECT 'heap', * FROM p_heap ORDER BY 1, 2;
SELECT t, snapshot_id, commit_kind FROM (
	SELECT 'none' AS t, * FROM pk_snapshots('p_none') UNION ALL
	SELECT 'input', * FROM pk_snapshots('p_input') UNION ALL
	SELECT 'lookup', * FROM pk_snapshots('p_lookup') UNION ALL
	SELECT 'full', * FROM pk_snapshots('p_full')) s ORDER BY 1, 2;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_lookup', 1);
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_input', 1);
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_none', 1);
SELECT * FROM td;
SELECT * FROM td2;
SELECT * FROM pc;

-- rolled back: nothing of it anywhere; the next commit takes its id
BEGIN;
UPDATE p_lookup SET v = 99 WHERE id = 1;
INSERT INTO p_none VALUES (9, 99);
PREPARE TRANSACTION 'p_gone';
ROLLBACK PREPARED 'p_gone';
SELECT * FROM p_lookup ORDER BY id;
SELECT count(*) AS nine FROM p_none WHERE id = 9;
UPDATE p_lookup SET v = 12 WHERE id = 1;
SELECT snapshot_id, commit_kind FROM pk_snapshots('p_lookup');
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_lookup', 2);
SELECT * FROM td;
SELECT * FROM td2;

-- a savepoint rolled back inside: only what stayed is prepared
BEGIN;
INSERT INTO p_lookup VALUES (4, 40);
SAVEPOINT s;
INSERT INTO p_lookup VALUES (5, 50);
UPDATE p_lookup SET v = 41 WHERE id = 4;
ROLLBACK TO SAVEPOINT s;
UPDATE p_lookup SET v = 13 WHERE id = 1;
PREPARE TRANSACTION 'p_savepoint';
COMMIT PREPARED 'p_savepoint';
SELECT * FROM p_lookup ORDER BY id;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_lookup', 3);

-- full-compaction: the prepared change is in the next full compaction's
-- stream
SELECT pk_compact('p_full', true) IS NOT NULL AS compacted;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('p_full', 2);
SELECT * FROM pc;

-- a materialized aggregate of the source: kept at COMMIT PREPARED, never
-- for a rolled-back prepared transaction
SET client_min_messages = warning;
SELECT pk_materialize('p_agg', 'SELECT count(*) AS n, sum(v) AS total FROM p_lookup');
RESET client_min_messages;
BEGIN;
UPDATE p_lookup SET v = v + 100;
PREPARE TRANSACTION 'p_agg_commit';
SELECT * FROM p_agg;
COMMIT PREPARED 'p_agg_commit';
SELECT * FROM p_agg;
BEGIN;
DELETE FROM p_lookup;
PREPARE TRANSACTION 'p_agg_rollback';
ROLLBACK PREPARED 'p_agg_rollback';
SELECT * FROM p_agg;
SELECT count(*) AS differing FROM pk_reconcile('p_agg');

-- a transaction whose writes spilled (write_buffer_size) before PREPARE
CREATE TABLE p_spill (id int PRIMARY KEY, v text) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'lookup');
INSERT INTO p_spill SELECT g, 'a' FROM generate_series(1, 1000) g;
BEGIN;
INSERT INTO p_spill SELECT g, repeat('x', 100) FROM generate_series(1, 60000) g;
SELECT count(*) > 1 AS spilled FROM pkchangelog.runs WHERE relid = 'p_spill'::regclass AND kind = 'data';
PREPARE TRANSACTION 'p_spill';
SELECT count(*) FROM p_spill;
COMMIT PREPARED 'p_spill';
SELECT count(*), count(*) FILTER (WHERE v = 'a') AS old_rows FROM p_spill;
SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count FROM pk_snapshots('p_spill');

-- a consumer's position advanced in a prepared transaction moves at
-- COMMIT PREPARED, and not at ROLLBACK PREPARED (delivered again)
BEGIN;
SELECT count(*) AS consumed FROM pk_consume('p_lookup', 'p_reader');
PREPARE TRANSACTION 'p_consume';
COMMIT PREPARED 'p_consume';
UPDATE p_lookup SET v = v + 1 WHERE id = 1;
BEGIN;
SELECT snapshot_id, rowkind FROM pk_consume('p_lookup', 'p_reader');
PREPARE TRANSACTION 'p_consume_again';
ROLLBACK PREPARED 'p_consume_again';
SELECT snapshot_id, rowkind FROM pk_consume('p_lookup', 'p_reader');

-- a temporary pkmerge table cannot be prepared (PostgreSQL's rule for
-- temporary objects): nothing is left of the transaction
CREATE TEMP TABLE p_temp (id int PRIMARY KEY, v int) USING pkmerge;
BEGIN;
INSERT INTO p_temp VALUES (1, 1);
UPDATE p_lookup SET v = 0 WHERE id = 1;
PREPARE TRANSACTION 'p_temp';
SELECT count(*) FROM p_temp;
SELECT v FROM p_lookup WHERE id = 1;
SELECT count(*) AS prepared FROM pg_prepared_xacts;

SELECT t, check_changelog(t) FROM unnest('{p_input,p_lookup,p_full}'::regclass[]) t;
SELECT t, check_data_runs(t) FROM unnest('{p_none,p_input,p_lookup,p_full,p_spill}'::regclass[]) t;
SELECT pg_drop_replication_slot('pt_slot');
SELECT pg_drop_replication_slot('pt_slot2');
SELECT pg_drop_replication_slot('pt_slot3');
DROP VIEW td, td2, pc;
DROP TABLE p_agg;
DROP TABLE p_none, p_input, p_lookup, p_full, p_heap, p_temp, p_spill;

-- a compaction can be prepared: it takes effect at COMMIT PREPARED
CREATE TABLE p_compact (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO p_compact SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO p_compact VALUES (20001, 'f');
INSERT INTO p_compact VALUES (20002, 'g');
BEGIN;
SELECT pk_compact('p_compact', true) IS NOT NULL AS compacted;
PREPARE TRANSACTION 'pk_compact_prepared';
SELECT count(*) AS runs_before_commit FROM pk_runs('p_compact') WHERE kind = 'data';
COMMIT PREPARED 'pk_compact_prepared';
SELECT level, record_count FROM pk_runs('p_compact') WHERE kind = 'data';
SELECT count(*), max(id) FROM p_compact;
DROP TABLE p_compact;

-- A small commit's snapshot is a record of the table's commit log, its
-- transaction's: a prepared commit's record counts once COMMIT PREPARED
-- (until then the commit lock is held), a record whose transaction rolled
-- back is skipped and its snapshot id taken by the next commit, and the
-- table's row names the page the records go to (a run of kind log, its
-- first snapshot and block)
CREATE TABLE pl (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO pl VALUES (1, 1);
BEGIN;
UPDATE pl SET v = 2 WHERE id = 1;
PREPARE TRANSACTION 'pl_rollback';
SELECT snapshot_id FROM pk_snapshots('pl');
ROLLBACK PREPARED 'pl_rollback';
UPDATE pl SET v = 3 WHERE id = 1;
BEGIN;
UPDATE pl SET v = 4 WHERE id = 1;
PREPARE TRANSACTION 'pl_commit';
SELECT snapshot_id, delta_record_count FROM pk_snapshots('pl');
COMMIT PREPARED 'pl_commit';
SELECT snapshot_id, delta_record_count, data_seq FROM pkchangelog.log_snapshots('pl');
SELECT * FROM pl;
SELECT count(*) AS snapshot_rows FROM pkchangelog.snapshots WHERE relid = 'pl'::regclass;
SELECT r.kind, r.created_snapshot, r.min_seq, r.start_block = t.log_block AS block_named
  FROM pkchangelog.tables t JOIN pkchangelog.runs r ON r.relid = t.relid AND r.run_id = t.log_run
 WHERE t.relid = 'pl'::regclass;
DROP TABLE pl;

-- A transaction that committed a compaction of the table before its own
-- commit took the id after the compaction's for its record; rolled back,
-- it leaves a dead record with a higher id than the next commit's, which
-- follows it on the page.  Readers of a range ending at the next commit's
-- snapshot still find it: the change stream, a consumer, and the
-- aggregate its commit maintained.
CREATE TABLE plc (id int PRIMARY KEY, grp int, v int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO plc VALUES (1, 1, 10);
INSERT INTO plc VALUES (2, 1, 20);
SELECT pk_materialize('plc_agg', 'SELECT grp, sum(v) AS total, count(*) AS n FROM plc GROUP BY grp');
SELECT * FROM pk_consume('plc', 'etl');
BEGIN;
SELECT pk_compact('plc', true) AS compaction;
INSERT INTO plc VALUES (3, 1, 30);
PREPARE TRANSACTION 'plc_rollback';
ROLLBACK PREPARED 'plc_rollback';
UPDATE plc SET v = 40 WHERE id = 1;
SELECT snapshot_id, commit_kind FROM pk_snapshots('plc');
SELECT * FROM pk_changes('plc', 2, 3);
SELECT * FROM pk_consume('plc', 'etl');
SELECT * FROM plc_agg;
SELECT count(*) AS out_of_step FROM pk_reconcile('plc_agg');
INSERT INTO plc VALUES (5, 1, 50);
SELECT * FROM pk_changes('plc', 3);
SELECT * FROM pk_consume('plc', 'etl');
SELECT * FROM plc_agg;
DROP TABLE plc_agg, plc;
