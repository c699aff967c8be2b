-- rewrites.sql: every command that would rewrite a pkmerge table's storage
-- into a new file (PostgreSQL copies the rows into a transient table and
-- swaps the files), but VACUUM FULL (vacuum_full.sql), is refused before a
-- row moves, and leaves the table, its runs and its change stream as they
-- were; the forms that need no rewrite work.  UNLOGGED pkmerge tables and
-- materialized views using pkmerge are refused at creation.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set checker :abs_srcdir '/test/setup/changelog_checker.sql'
\i :checker
\set ECHO all
CREATE TABLE rw (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO rw VALUES (1, 'one'), (2, 'two');
UPDATE rw SET v = 'TWO' WHERE k = 2;
CREATE VIEW rw_state AS
	SELECT (SELECT count(*) FROM rw) AS rows,
		   (SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM rw) AS contents,
		   (SELECT count(*) FROM pk_runs('rw')) AS runs,
		   (SELECT count(*) FROM pk_changes('rw')) AS changes,
		   (SELECT max(snapshot_id) FROM pk_snapshots('rw')) AS last_snapshot;
SELECT * FROM rw_state;

-- values computed per row: serial, sequences, volatile defaults (also
-- under a cast), domains with constraints, generated and identity columns
CREATE SEQUENCE rw_seq;
CREATE DOMAIN rw_positive AS int CHECK (VALUE > 0);
ALTER TABLE rw ADD COLUMN f serial;
ALTER TABLE rw ADD COLUMN f bigserial;
ALTER TABLE rw ADD COLUMN f int DEFAULT nextval('rw_seq');
ALTER TABLE rw ADD COLUMN f int DEFAULT random()::int;
ALTER TABLE rw ADD COLUMN f rw_positive DEFAULT 1;
ALTER TABLE rw ADD COLUMN f int GENERATED ALWAYS AS (k * 2) STORED;
ALTER TABLE rw ADD COLUMN f int GENERATED ALWAYS AS IDENTITY;
SELECT * FROM rw_state;
SELECT count(*) AS leftover_sequences FROM pg_class WHERE relname LIKE 'rw_f%';

-- other rewrites: column types, access method, persistence, tablespace,
-- CLUSTER (VACUUM FULL rewrites the table its own way: vacuum_full.sql)
ALTER TABLE rw ALTER COLUMN v TYPE varchar(10);
ALTER TABLE rw SET ACCESS METHOD heap;
ALTER TABLE rw SET UNLOGGED;
ALTER TABLE rw SET LOGGED;
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE rw_space LOCATION '';
ALTER TABLE rw SET TABLESPACE rw_space;
DROP TABLESPACE rw_space;
RESET allow_in_place_tablespaces;
CLUSTER rw USING rw_pkey;
SELECT * FROM rw_state;

-- a heap table cannot become a pkmerge table by a rewrite either
CREATE TABLE rw_heap (k int PRIMARY KEY, v text);
INSERT INTO rw_heap VALUES (1, 'h');
ALTER TABLE rw_heap SET ACCESS METHOD pkmerge;
SELECT amname, (SELECT count(*) FROM rw_heap) AS rows
FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_heap';
DROP TABLE rw_heap;

-- what needs no rewrite works: a constant default, a default evaluated
-- once (stable), a column without default; old rows show the default
ALTER TABLE rw ADD COLUMN c int DEFAULT 5;
ALTER TABLE rw ADD COLUMN added timestamptz DEFAULT now();
ALTER TABLE rw ADD COLUMN n int;
INSERT INTO rw (k, v) VALUES (3, 'three');
SELECT k, v, c, added IS NOT NULL AS has_added, n FROM rw ORDER BY k;
SELECT count(DISTINCT added) AS one_value_for_old_rows FROM rw WHERE k < 3;
-- and the way to fill a column per row: add it bare, then UPDATE
UPDATE rw SET n = nextval('rw_seq');
ALTER TABLE rw ALTER COLUMN n SET DEFAULT nextval('rw_seq');
INSERT INTO rw (k, v) VALUES (4, 'four');
SELECT k, n FROM rw ORDER BY k;
SELECT check_changelog('rw');

-- unlogged tables and materialized views are refused at creation
CREATE UNLOGGED TABLE rw_unlogged (k int PRIMARY KEY) USING pkmerge;
CREATE MATERIALIZED VIEW rw_mv USING pkmerge AS SELECT 1 AS a;
SELECT count(*) AS created FROM pg_class WHERE relname IN ('rw_unlogged', 'rw_mv');

DROP VIEW rw_state;
DROP TABLE rw;
DROP SEQUENCE rw_seq;
DROP DOMAIN rw_positive;
