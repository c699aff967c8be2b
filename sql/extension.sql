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
