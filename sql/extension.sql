-- extension.sql: CREATE/DROP EXTENSION round trip, the catalog schema, and
-- that the library is preloaded (the test instance preloads it; the TAP test
-- t/001_preload.pl covers a server that does not).
SELECT extname, extversion, extrelocatable FROM pg_extension WHERE extname = 'pkchangelog';
SELECT nspname FROM pg_namespace WHERE nspname = 'pkchangelog';
SHOW shared_preload_libraries;
-- everything the extension creates belongs to it, so DROP removes it all
DROP EXTENSION pkchangelog;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname = 'pkchangelog';
CREATE EXTENSION pkchangelog;
SELECT nspname FROM pg_namespace WHERE nspname = 'pkchangelog';
-- a second CREATE is an error, IF NOT EXISTS is not
CREATE EXTENSION pkchangelog;
CREATE EXTENSION IF NOT EXISTS pkchangelog;
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
