-- privileges.sql: who may call what.  Every SQL function and catalog read,
-- run as a role without privileges on a table (regress_nopriv) and as one
-- with only SELECT on it (regress_reader): key values and rows need SELECT
-- (pk_runs' keys: on the key columns; pk_changes: on the table, and no
-- row-level security in the way); table-level metadata is public, as
-- pg_stat_user_tables is; writes need the privileges of the statement they
-- amount to.  Then: no SQL function or install script step runs another
-- role's function or operator found through search_path.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE ROLE regress_owner;
CREATE ROLE regress_nopriv;
CREATE ROLE regress_reader;
CREATE ROLE regress_keyreader;
CREATE ROLE regress_inserter;
CREATE ROLE regress_updater;
CREATE ROLE regress_deleter;
CREATE ROLE regress_mallory;
GRANT CREATE ON SCHEMA public TO regress_owner;

SET ROLE regress_owner;
CREATE TABLE secret (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'input');
INSERT INTO secret VALUES (42, 'hidden'), (99, 'also hidden');
UPDATE secret SET v = 'changed' WHERE k = 42;
GRANT SELECT ON secret TO regress_reader;
GRANT SELECT (k) ON secret TO regress_keyreader;
GRANT INSERT ON secret TO regress_inserter;
GRANT INSERT, UPDATE, SELECT ON secret TO regress_updater;
GRANT DELETE ON secret TO regress_deleter;
RESET ROLE;

-- a role without privileges: the table itself, as a baseline
SET ROLE regress_nopriv;
SELECT * FROM secret;
-- table-level metadata: pk_snapshots, pk_stats, pk_options, the runs'
-- levels and sizes; the runs' keys are hidden
SELECT snapshot_id, commit_kind, total_record_count, delta_record_count,
	   changelog_record_count FROM pk_snapshots('secret');
SELECT commits, compactions, runs_per_level, changelog_records,
	   bytes_on_disk = pg_relation_size('secret') AS file_bytes, catalog_bytes > 0 AS has_catalog_bytes,
	   write_amplification, retained_bytes_per_commit > 0 AS has_history_bytes
FROM pk_stats('secret');
SELECT * FROM pk_options('secret') WHERE key IN ('changelog_producer', 'primary_key');
SELECT level, kind, record_count, min_key, max_key, created_snapshot FROM pk_runs('secret');
-- the catalog: tables and snapshots are readable, runs without its keys
-- (the table's row as of its last write: the first small commit wrote it
-- as it opened the table's commit log; the second is told by its record)
SELECT last_snapshot_id, total_record_count FROM pkchangelog.tables
WHERE relid = 'secret'::regclass;
SELECT count(*), count(changelog_run_id) AS changelogs_in_rows
  FROM pkchangelog.snapshots WHERE relid = 'secret'::regclass;
-- the small commits' snapshots, commit log records: their metadata, as
-- the rows of pkchangelog.snapshots show it, and no bytes of their runs
SELECT count(*), count(changelog_run_id) AS changelogs, count(data_seq) AS data_runs
  FROM pkchangelog.log_snapshots('secret');
SELECT array_agg(attname ORDER BY attnum) AS log_snapshots_columns
  FROM pg_attribute WHERE attrelid = 'pkchangelog.snapshots'::regclass AND attnum > 0
   AND attname NOT IN (SELECT unnest(proargnames) FROM pg_proc
					   WHERE oid = 'pkchangelog.log_snapshots'::regproc);
-- but not the changelog and data runs kept in snapshot rows, nor their
-- keys: they hold rows (their sequence numbers are readable)
SELECT changelog FROM pkchangelog.snapshots;
SELECT data FROM pkchangelog.snapshots;
SELECT data_min_key FROM pkchangelog.snapshots;
SELECT data_max_key FROM pkchangelog.snapshots;
SELECT count(data_seq) AS data_in_rows FROM pkchangelog.snapshots
 WHERE relid = 'secret'::regclass;
SELECT * FROM pkchangelog.snapshots;
-- (the small commits' runs are in their commit log records, on the
-- table's log page: a run row of kind log, with no keys)
SELECT level, kind, record_count FROM pkchangelog.runs WHERE relid = 'secret'::regclass
ORDER BY run_id;
SELECT * FROM pkchangelog.runs;
SELECT min_key FROM pkchangelog.runs;
SELECT max_key FROM pkchangelog.runs;
-- consumer positions are table-level metadata too
SELECT count(*) FROM pk_consumers('secret');
SELECT count(*) FROM pkchangelog.consumers WHERE relid = 'secret'::regclass;
-- rows and writes: refused
SELECT * FROM pk_changes('secret');
SELECT * FROM pk_consume('secret', 'c');
SELECT pk_consumer_drop('secret', 'c');
SELECT pk_write('secret', '+I', ROW(1, 'x')::secret);
SELECT pk_write('secret', '+U', ROW(42, 'x')::secret);
SELECT pk_write('secret', '-U', ROW(42, 'x')::secret);
SELECT pk_write('secret', '-D', ROW(42, 'x')::secret);
SELECT pk_compact('secret');
SELECT pk_expire_snapshots('secret');
ALTER TABLE secret SET (changelog_producer = 'none');
ALTER TABLE secret DROP COLUMN v;
RESET ROLE;

-- SELECT only: the keys and the change stream too, but no writes
SET ROLE regress_reader;
SELECT level, kind, record_count, min_key, max_key FROM pk_runs('secret');
SELECT * FROM pk_changes('secret');
SELECT count(*) FROM pk_consume('secret', 'reader') WHERE rowkind IS NOT NULL;
SELECT consumer_id, next_snapshot_id FROM pk_consumers('secret');
SELECT pk_consumer_drop('secret', 'reader');
SELECT pk_write('secret', '+I', ROW(1, 'x')::secret);
SELECT pk_write('secret', '+U', ROW(42, 'x')::secret);
SELECT pk_write('secret', '-D', ROW(42, 'x')::secret);
SELECT pk_compact('secret');
SELECT pk_expire_snapshots('secret');
SELECT min_key FROM pkchangelog.runs;
RESET ROLE;

-- SELECT on the key column alone: the runs' keys, not the rows; on every
-- column: the rows too
SET ROLE regress_keyreader;
SELECT level, kind, min_key, max_key FROM pk_runs('secret');
SELECT * FROM pk_changes('secret');
RESET ROLE;
GRANT SELECT (v) ON secret TO regress_keyreader;
SET ROLE regress_keyreader;
SELECT count(*) FROM pk_changes('secret');
RESET ROLE;

-- pk_write needs the privileges of its statement: +I an INSERT; +U an
-- INSERT ... ON CONFLICT (k) DO UPDATE (INSERT, UPDATE, SELECT of the key);
-- -U/-D a DELETE ... WHERE k = ... (DELETE, SELECT of the key)
SET ROLE regress_inserter;
SELECT pk_write('secret', '+I', ROW(1, 'by inserter')::secret);
SELECT pk_write('secret', '+U', ROW(1, 'by inserter')::secret);
SELECT pk_write('secret', '-D', ROW(1, 'by inserter')::secret);
RESET ROLE;
SET ROLE regress_updater;
SELECT pk_write('secret', '+U', ROW(1, 'by updater')::secret);
SELECT pk_write('secret', '+U', ROW(2, 'by updater')::secret);
SELECT pk_write('secret', '-U', ROW(2, 'by updater')::secret);
SELECT pk_compact('secret') IS NOT NULL AS compacted;
RESET ROLE;
SET ROLE regress_deleter;
SELECT pk_write('secret', '-D', ROW(2, 'by deleter')::secret);
SELECT pk_expire_snapshots('secret');
RESET ROLE;
GRANT SELECT (k) ON secret TO regress_deleter;
SET ROLE regress_deleter;
SELECT pk_write('secret', '-D', ROW(2, 'by deleter')::secret);
SELECT pk_write('secret', '-U', ROW(1, 'by deleter')::secret);
RESET ROLE;
SELECT * FROM secret ORDER BY k;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('secret') WHERE snapshot_id > 2;

-- row-level security: a reader under a policy sees neither the runs' keys
-- nor the change stream (which holds rows the policy may hide); the owner,
-- whom the policy does not bind, sees both
SET ROLE regress_owner;
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_small ON secret FOR SELECT USING (k < 50);
SELECT count(*) FROM pk_changes('secret');
SELECT bool_and(min_key IS NOT NULL) AS owner_sees_keys FROM pk_runs('secret') WHERE kind = 'data';
RESET ROLE;
SET ROLE regress_reader;
SELECT * FROM secret ORDER BY k;
SELECT DISTINCT min_key, max_key FROM pk_runs('secret');
SELECT * FROM pk_changes('secret');
RESET ROLE;

-- search_path: another role's objects in a schema on the caller's path
-- are never called by pk_stats (percentile_cont(0.5) would take a
-- numeric, jsonb_object_agg an (int, bigint) over the built-in ones) or by
-- pk_write's statements (an operator found before pg_catalog's)
GRANT CREATE ON SCHEMA public TO regress_mallory;
SET ROLE regress_mallory;
CREATE FUNCTION public.trap_sfunc(state jsonb, k int, n bigint) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trap jsonb_object_agg called';
	RETURN state;
END $$;
CREATE AGGREGATE public.jsonb_object_agg(int, bigint) (sfunc = public.trap_sfunc, stype = jsonb);
CREATE FUNCTION public.trap_percentile(state float8, x float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trap percentile_cont called';
	RETURN x;
END $$;
CREATE FUNCTION public.trap_percentile_final(state float8, frac numeric, x float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trap percentile_cont called';
	RETURN 0;
END $$;
CREATE AGGREGATE public.percentile_cont(numeric ORDER BY float8) (
	sfunc = public.trap_percentile, stype = float8,
	finalfunc = public.trap_percentile_final, finalfunc_extra);
CREATE FUNCTION public.trap_eq(a int, b int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trap = called';
	RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR public.= (leftarg = int, rightarg = int, function = public.trap_eq);
RESET ROLE;
-- the traps are live: an unqualified call finds them
SELECT jsonb_object_agg(1, 2::bigint);
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1::float8)) v(x);
SET search_path = public, pg_catalog;
SELECT 1 = 1 AS trapped_operator;
-- and the extension's functions do not
SELECT commits, runs_per_level FROM pk_stats('secret');
SELECT pk_write('secret', '-D', ROW(1, 'x')::secret);
SELECT pk_write('secret', '+U', ROW(3, 'x')::secret);
RESET search_path;
SET ROLE regress_mallory;
DROP OPERATOR public.= (int, int);
DROP FUNCTION public.trap_eq(int, int);
DROP AGGREGATE public.percentile_cont(numeric ORDER BY float8);
DROP FUNCTION public.trap_percentile(float8, float8);
DROP FUNCTION public.trap_percentile_final(float8, numeric, float8);
DROP AGGREGATE public.jsonb_object_agg(int, bigint);
DROP FUNCTION public.trap_sfunc(jsonb, int, bigint);
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_mallory;

-- the install script: CREATE EXTENSION in a schema another role can write
-- to runs none of that role's functions (the script's search_path is that
-- schema; a format(text, name) matches the script's calls better than
-- pg_catalog's format(text, VARIADIC "any"))
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_pk_install;
\c regress_pk_install
CREATE SCHEMA ext AUTHORIZATION regress_mallory;
SET ROLE regress_mallory;
CREATE FUNCTION ext.format(fmt text, arg name) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RAISE WARNING 'trap format called';	-- the script runs at client_min_messages warning
	RETURN pg_catalog.format(fmt, arg);
END $$;
RESET ROLE;
CREATE EXTENSION pkchangelog SCHEMA ext;
SELECT count(*) > 0 AS has_opclasses FROM pg_opclass
WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'pkmerge_key')
  AND opcnamespace = 'ext'::regnamespace;
\c :regress_db
DROP DATABASE regress_pk_install;

DROP TABLE secret;
REVOKE CREATE ON SCHEMA public FROM regress_owner;
DROP ROLE regress_owner, regress_nopriv, regress_reader, regress_keyreader,
	regress_inserter, regress_updater, regress_deleter, regress_mallory;
