-- extension.sql: CREATE/DROP EXTENSION round trip, the catalog schema, and
-- that the library is preloaded (the test instance preloads it; the TAP test
-- t/001_preload.pl covers a server that does not).
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
SELECT extname, extversion, extrelocatable FROM pg_extension WHERE extname = 'pkchangelog';
SELECT nspname FROM pg_namespace WHERE nspname = 'pkchangelog';
SHOW shared_preload_libraries;
-- everything the extension creates belongs to it, so DROP removes it all
DROP EXTENSION pkchangelog;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname = 'pkchangelog';
CREATE EXTENSION pkchangelog;
SELECT nspname FROM pg_namespace WHERE nspname = 'pkchangelog';
-- every catalog table and its TOAST table is marked as logical decoding
-- marks a rewrite's transient tables, so their changes are never decoded
-- (pg_class.relrewrite: its own OID)
SELECT count(*) AS catalog_tables,
	   count(*) FILTER (WHERE c.relrewrite = c.oid) AS marked,
	   count(*) FILTER (WHERE c.reltoastrelid <> 0) AS with_toast,
	   count(*) FILTER (WHERE t.relrewrite = t.oid) AS toast_marked
FROM pg_class c LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
WHERE c.relnamespace = 'pkchangelog'::regnamespace AND c.relkind = 'r';
-- a second CREATE is an error, IF NOT EXISTS is not
CREATE EXTENSION pkchangelog;
CREATE EXTENSION IF NOT EXISTS pkchangelog;
-- every function, catalog table, catalog column and access method of the
-- extension has a description (\df+, \d+, \dA+ show them)
SELECT d.classid::regclass AS catalog, pg_describe_object(d.classid, d.objid, 0) AS object
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pkchangelog')
  AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_am'::regclass,
					'pg_namespace'::regclass)
  AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE d.classid = 'pg_class'::regclass
				  AND c.oid = d.objid AND c.relkind NOT IN ('r', 'S'))
  AND obj_description(d.objid, d.classid::regclass::name) IS NULL;
SELECT a.attrelid::regclass AS catalog_table, a.attname AS column_without_description
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pkchangelog'::regnamespace AND c.relkind = 'r'
  AND a.attnum > 0 AND NOT a.attisdropped AND col_description(a.attrelid, a.attnum) IS NULL;
SELECT count(*) > 10 AS functions_described
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
WHERE d.deptype = 'e' AND obj_description(p.oid, 'pg_proc') IS NOT NULL
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pkchangelog');
-- a session's caches of runs (block indexes, decoded blocks) do not
-- outlive the extension: run ids start again at 1 in a new one, and the
-- session that read the old tables reads the new ones right
DROP EXTENSION pkchangelog;
CREATE EXTENSION pkchangelog;
CREATE TABLE cache_a (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO cache_a SELECT g, 'a' || g FROM generate_series(1, 3000) g;
SELECT run_id, record_count FROM pk_runs('cache_a');
SELECT count(*), sum(length(v)) FROM cache_a;
SET enable_seqscan = off;
SELECT * FROM cache_a WHERE id = 2000;
DROP EXTENSION pkchangelog CASCADE;
CREATE EXTENSION pkchangelog;
CREATE TABLE cache_b (k bigint PRIMARY KEY, n int, s text) USING pkmerge;
INSERT INTO cache_b SELECT g, -g, repeat('b', g % 7) FROM generate_series(1, 2000) g;
SELECT run_id, record_count FROM pk_runs('cache_b');
SELECT * FROM cache_b WHERE k = 2000;
SELECT * FROM cache_b WHERE k BETWEEN 1997 AND 2001;
RESET enable_seqscan;
SELECT count(*), sum(n), sum(length(s)) FROM cache_b;
DROP TABLE cache_b;
