-- test/setup/equal_keys_paths.sql: the write paths of equal_keys.sql for
-- one key shape, on four tables ek_none, ek_input, ek_lookup and ek_full
-- (one per changelog producer).  psql variables: ty, the key column's
-- type; coll, its COLLATE clause or nothing; a and b, two literals its
-- operator class calls equal that the type stores differently.  Every
-- path starts from the row (a, 1) and writes b: the row must hold b
-- afterwards, whatever the path.  ek_show(x) looks every table's row up by
-- x (a point lookup), so each display also shows that the other value
-- finds the row.
CREATE TABLE ek_none (k :ty :coll PRIMARY KEY, g int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE TABLE ek_input (LIKE ek_none INCLUDING ALL) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'input');
CREATE TABLE ek_lookup (LIKE ek_none INCLUDING ALL) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'lookup');
CREATE TABLE ek_full (LIKE ek_none INCLUDING ALL) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'full-compaction');
\set ka 'CAST(' :a ' AS ' :ty ')'
\set kb 'CAST(' :b ' AS ' :ty ')'

-- INSERT (an upsert)
SELECT ek_each('INSERT INTO %s VALUES ($1, 1)', :ka, :kb);
SELECT ek_each('INSERT INTO %s VALUES ($2, 2)', :ka, :kb);
SELECT * FROM ek_show(:ka);
-- pk_write's +I and +U (an INSERT ... ON CONFLICT (k) DO UPDATE)
SELECT ek_reset(:ka);
SELECT ek_each('SELECT pk_write(%1$L, ''+I'', ROW($2, 3, NULL)::%1$s)', :ka, :kb);
SELECT * FROM ek_show(:ka);
SELECT ek_reset(:ka);
SELECT ek_each('SELECT pk_write(%1$L, ''+U'', ROW($2, 4, NULL)::%1$s)', :ka, :kb);
SELECT * FROM ek_show(:ka);
-- MERGE: WHEN MATCHED THEN UPDATE of the key, and WHEN NOT MATCHED THEN
-- INSERT of a key the table holds (an upsert)
SELECT ek_reset(:ka);
SELECT ek_each('MERGE INTO %s t USING (SELECT $2 AS k) s ON t.k = s.k
	WHEN MATCHED THEN UPDATE SET k = s.k, g = 5', :ka, :kb);
SELECT * FROM ek_show(:ka);
SELECT ek_reset(:ka);
SELECT ek_each('MERGE INTO %s t USING (SELECT $2 AS k) s ON false
	WHEN NOT MATCHED THEN INSERT VALUES (s.k, 6)', :ka, :kb);
SELECT * FROM ek_show(:ka);
-- UPDATE of the key to an equal value
SELECT ek_reset(:ka);
SELECT ek_each('UPDATE %s SET k = $2, g = 7 WHERE k = $1', :ka, :kb);
SELECT * FROM ek_show(:ka);
-- spills: both values in one transaction, each spilled into a run of its
-- own before the commit; then b alone spilled over a committed a
SELECT ek_each('DELETE FROM %s WHERE k = $1', :ka, :kb);
BEGIN;
SELECT ek_each('INSERT INTO %s VALUES ($1, 8)', :ka, :kb);
SELECT ek_each('INSERT INTO %s (k, pad) SELECT CAST(1000 + i AS %2$s), repeat(''x'', 2000)
	FROM generate_series(1, 600) i', :ka, :kb);
SELECT ek_each('INSERT INTO %s VALUES ($2, 9)', :ka, :kb);
SELECT ek_each('INSERT INTO %s (k, pad) SELECT CAST(2000 + i AS %2$s), repeat(''x'', 2000)
	FROM generate_series(1, 600) i', :ka, :kb);
SELECT * FROM ek_spilled();
SELECT * FROM ek_show(:ka);
COMMIT;
SELECT * FROM ek_show(:ka);
SELECT ek_reset(:ka);
BEGIN;
SELECT ek_each('UPDATE %s SET k = $2, g = 10 WHERE k = $1', :ka, :kb);
SELECT ek_each('INSERT INTO %s (k, pad) SELECT CAST(3000 + i AS %2$s), repeat(''x'', 2000)
	FROM generate_series(1, 600) i', :ka, :kb);
SELECT * FROM ek_spilled();
COMMIT;
SELECT * FROM ek_show(:ka);
SELECT ek_each('DELETE FROM %s WHERE pad IS NOT NULL', :ka, :kb);
-- compaction of runs holding both values keeps the newest: b over a by a
-- merge of level 0, then a over b by a full compaction (not the larger,
-- smaller or first representation)
SELECT ek_reset(:ka);
SELECT ek_each('INSERT INTO %s VALUES ($2, 11)', :ka, :kb);
SELECT ek_each('SELECT pk_compact(%L)', :ka, :kb);
SELECT * FROM ek_show(:ka);
SELECT ek_each('INSERT INTO %s VALUES ($1, 12)', :ka, :kb);
SELECT ek_each('SELECT pk_compact(%L, true)', :ka, :kb);
SELECT * FROM ek_show(:kb);
SELECT * FROM ek_runs();
