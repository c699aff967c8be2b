-- test/setup/equal_keys_stream.sql: the changelog and the logical decoding
-- of equal_keys.sql's tables (see equal_keys_paths.sql) while the key of
-- their row changes value but not identity: each -U carries the value the
-- row held, each +U the new one.  Drops the tables at the end.
SELECT 'init' FROM pg_create_logical_replication_slot('ek_slot', 'test_decoding');
SELECT 'init' FROM pg_create_logical_replication_slot('ek_pk', 'pkchangelog');
SELECT ek_mark();
SELECT ek_each('SELECT pk_write(%1$L, ''+U'', ROW($1, 20, NULL)::%1$s)', :ka, :kb);
SELECT ek_each('UPDATE %s SET k = $2, g = 21 WHERE k = $1', :ka, :kb);
SELECT ek_each('INSERT INTO %s VALUES ($1, 22)', :ka, :kb);
SELECT ek_each('MERGE INTO %s t USING (SELECT $2 AS k) s ON t.k = s.k
	WHEN MATCHED THEN UPDATE SET k = s.k, g = 23', :ka, :kb);
SELECT pk_compact('ek_full', true) > 0 AS compacted;
SELECT ek_each('SELECT pk_write(%1$L, ''-D'', ROW($1, 99, NULL)::%1$s)', :ka, :kb);
SELECT pk_compact('ek_full', true) > 0 AS compacted;
SELECT * FROM ek_changes();
SELECT * FROM ek_decoded;
SELECT data FROM pg_logical_slot_get_changes('ek_pk', NULL, NULL, 'include-xids', '0')
WHERE data LIKE '%public.ek\_lookup%';
SELECT 'stop' FROM pg_drop_replication_slot('ek_slot');
SELECT 'stop' FROM pg_drop_replication_slot('ek_pk');
DROP TABLE ek_none, ek_input, ek_lookup, ek_full;
