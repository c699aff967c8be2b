-- Statements over a pkmerge table during which the same statement changes the
-- table's pg_class row (GRANT/REVOKE), i.e. invalidates its relcache entry:
-- nothing may keep using the table's descriptor across it.
CREATE TABLE g (k int PRIMARY KEY, v text) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(1, 2000) i;
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(1000, 3000) i;
-- every 100th call changes g's pg_class row (relacl): a relcache invalidation of g
CREATE OR REPLACE FUNCTION touch(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	IF i % 100 = 0 THEN
		EXECUTE CASE WHEN i % 200 = 0 THEN 'GRANT SELECT ON g TO public' ELSE 'REVOKE SELECT ON g FROM public' END;
	END IF;
	RETURN i;
END $$;
-- a scan of g that invalidates g's relcache entry every 100 rows: seq scan, key index scan
SELECT count(touch(k)), sum(k) FROM g;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(touch(k)) FROM g WHERE k BETWEEN 1 AND 3000;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- and writes whose expressions do the same
UPDATE g SET v = v || touch(k);
INSERT INTO g SELECT i, touch(i)::text FROM generate_series(3001, 6000) i;
INSERT INTO g SELECT i, 'x' FROM generate_series(1, 3000) i ON CONFLICT (k) DO UPDATE SET v = touch(excluded.k)::text;
SELECT count(touch(snapshot_id::int * 100)) FROM pk_changes('g');
DELETE FROM g WHERE touch(k) % 2 = 0;
MERGE INTO g USING generate_series(1, 3000) s(i) ON g.k = s.i WHEN MATCHED THEN UPDATE SET v = touch(s.i)::text;
