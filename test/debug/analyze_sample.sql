-- ANALYZE of a table with more rows than its sample (300 rows per unit of
-- the statistics target) sorts the sample by the rows' TIDs.
CREATE TABLE an (k int PRIMARY KEY, v text) USING pkmerge;
ALTER TABLE an ALTER COLUMN v SET STATISTICS 1;
INSERT INTO an SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
SET default_statistics_target = 1;
ANALYZE an;
SELECT attname, correlation IS NOT NULL AS has_correlation FROM pg_stats WHERE tablename = 'an' ORDER BY attname;
