-- pkchangelog demo.  What exists so far: the extension and its catalog
-- schema.  The pkmerge table access method and the changelog producers
-- (the 100 -> 80 -> 180 scenario) are added by the issues that build them.
CREATE EXTENSION pkchangelog;
SELECT extname, extversion FROM pg_extension WHERE extname = 'pkchangelog';
SELECT pkchangelog.library_version();
\dn pkchangelog
