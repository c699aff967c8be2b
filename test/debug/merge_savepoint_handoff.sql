-- A MERGE that fails inside a savepoint, rolled back to it, then an UPDATE
-- that fetches rows by TID: the fetch must not read memory of the failed
-- statement's key-index scan (valgrind reports any such read).
CREATE TABLE t8 (k int PRIMARY KEY, s text) USING pkmerge WITH (write_buffer_size = '1MB');
CREATE TABLE h8 (k int PRIMARY KEY, s text);
INSERT INTO t8 SELECT 22, string_agg(md5(i::text), '') FROM generate_series(1, 3125) i;
INSERT INTO t8 VALUES (10, 'ten');
BEGIN;
INSERT INTO t8 SELECT i, repeat(md5(i::text), 100) FROM generate_series(1031, 1676) i;
SAVEPOINT s;
-- fails with 21000: the MERGE would delete key 10 twice
MERGE INTO t8 USING (VALUES (10), (1228), (10)) x(k) ON t8.k = x.k WHEN MATCHED THEN DELETE;
ROLLBACK TO SAVEPOINT s;
UPDATE t8 SET s = NULL WHERE k = 22 OR k = 10;
COMMIT;
SELECT k, s IS NULL AS s_null FROM t8 WHERE k IN (10, 22) ORDER BY k;
