-- A TRUNCATE whose removed rows exceed work_mem: at commit they are read
-- back from the tuplestore's temporary file and written as a changelog run
-- of -D records.  A tuple read back from the file has its mt_padding bytes
-- unset (tuplestore.c readtup_heap), and the run writer copies whole
-- MinimalTuples into the block it compresses and writes to the table's
-- pages and WAL: valgrind reports uninitialised bytes in ZSTD_compressCCtx
-- (close_block), the CRC, mdextend's offset, XLogInsert.
CREATE TABLE tr_big (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
SET work_mem = '64kB';
INSERT INTO tr_big SELECT i, repeat(md5(i::text), 40) FROM generate_series(1, 200) i;
BEGIN;
TRUNCATE tr_big;
COMMIT;
SELECT rowkind, count(*) FROM pk_changes('tr_big', pk_current_snapshot('tr_big') - 1) GROUP BY 1;
