-- run_memory.sql: a run larger than pkchangelog.run_memory_limit is built
-- in temporary files (its stream, block index and key hashes) and reads
-- back exactly: commits' data runs, lookup changelogs, compaction outputs
-- and a full-compaction changelog, each compared with a heap twin, by
-- scans and by key lookups (which go through the runs' bloom filters).
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
SET pkchangelog.run_memory_limit = '64kB';
SET stats_fetch_consistency = none;
CREATE TABLE h (id int PRIMARY KEY, v text);
CREATE TABLE lk (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE TABLE fc (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'full-compaction');
CREATE TEMP TABLE temp_files_before AS
	SELECT temp_files FROM pg_stat_database WHERE datname = current_database();
INSERT INTO h SELECT g, md5(g::text) || g FROM generate_series(1, 20000) g;
INSERT INTO lk SELECT * FROM h;
INSERT INTO fc SELECT * FROM h;
UPDATE h SET v = v || 'u' WHERE id % 3 = 0;
UPDATE lk SET v = v || 'u' WHERE id % 3 = 0;
UPDATE fc SET v = v || 'u' WHERE id % 3 = 0;
SELECT pk_compact('lk', true) IS NOT NULL AS compacted_lk,
	   pk_compact('fc', true) IS NOT NULL AS compacted_fc;
SELECT pg_stat_force_next_flush();
-- the runs went through temporary files: each is many times the limit
SELECT s.temp_files - b.temp_files >= 10 AS used_temporary_files
FROM pg_stat_database s, temp_files_before b WHERE s.datname = current_database();
SELECT relid::regclass AS tbl, kind, created_snapshot, record_count,
	   size_bytes >= 4 * 65536 AS over_4x_limit
FROM pkchangelog.runs WHERE relid IN ('lk'::regclass, 'fc'::regclass)
ORDER BY relid::regclass::text, run_id;
-- contents: scans and key lookups
SELECT (SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM lk) =
	   (SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM h) AS lk_same,
	   (SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM fc) =
	   (SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM h) AS fc_same;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS lookups,
	   count(*) FILTER (WHERE (SELECT v FROM lk WHERE lk.id = h.id) IS NOT DISTINCT FROM h.v) AS lk_right,
	   count(*) FILTER (WHERE (SELECT v FROM fc WHERE fc.id = h.id) IS NOT DISTINCT FROM h.v) AS fc_right
FROM h WHERE id % 7 = 0;
SELECT count(*) AS absent FROM lk WHERE id IN (0, 20001, -5);
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the changelogs: lookup's two commits, full-compaction's first full
-- compaction (every key, its value now)
SELECT snapshot_id, rowkind, count(*),
	   count(*) FILTER (WHERE c.row->>'v' = md5(c.row->>'id') || (c.row->>'id')) AS old_values,
	   count(*) FILTER (WHERE c.row->>'v' = md5(c.row->>'id') || (c.row->>'id') || 'u') AS new_values
FROM pk_changes('lk') c GROUP BY 1, 2 ORDER BY 1, 2;
SELECT c.snapshot_id, c.rowkind, count(*), count(*) FILTER (WHERE h.v = c.row->>'v') AS right_values
FROM pk_changes('fc') c LEFT JOIN h ON h.id = (c.row->>'id')::int
GROUP BY 1, 2 ORDER BY 1, 2;
-- with the default limit the same writes stay in memory (the queries
-- above may have used temporary files: counted first)
RESET pkchangelog.run_memory_limit;
SELECT pg_stat_force_next_flush();
TRUNCATE temp_files_before;
INSERT INTO temp_files_before
	SELECT temp_files FROM pg_stat_database WHERE datname = current_database();
UPDATE lk SET v = v || 'w' WHERE id % 2 = 0;
SELECT pk_compact('lk', true) IS NOT NULL AS compacted_lk;
SELECT pg_stat_force_next_flush();
SELECT s.temp_files - b.temp_files AS temporary_files
FROM pg_stat_database s, temp_files_before b WHERE s.datname = current_database();
SELECT count(*), count(*) FILTER (WHERE v LIKE '%w') AS updated FROM lk;
DROP TABLE h, lk, fc;

-- a backend's cache of run indexes keeps those of runs compaction replaced
-- (one per small commit) for at most two generations: 2,000 one-row
-- commits, each read back, would leave ~1 MB of indexes; with generations
-- of 64 kB a quarter of that at most remains, and every row reads back
SET pkchangelog.run_index_cache_size = '64kB';
CREATE TABLE ix (id int PRIMARY KEY, v int) USING pkmerge;
CREATE PROCEDURE ix_commits(n int) LANGUAGE plpgsql AS $$
DECLARE
	x int;
	wrong int := 0;
BEGIN
	FOR i IN 1..n LOOP
		INSERT INTO ix VALUES (i, i * 2);
		COMMIT;
		SELECT v INTO x FROM ix WHERE id = i;
		IF x IS DISTINCT FROM i * 2 THEN
			wrong := wrong + 1;
		END IF;
	END LOOP;
	RAISE NOTICE 'rows read back wrong: %', wrong;
END $$;
CALL ix_commits(2000);
-- (an assert-enabled build's memory checking adds to every chunk: a
-- quarter more there)
SELECT count(*) AS contexts,
	   sum(total_bytes) < CASE WHEN current_setting('debug_assertions')::bool
							   THEN 320 ELSE 256 END * 1024 AS under_256kb
FROM pg_backend_memory_contexts WHERE name ~ '^pkmerge run index';
SELECT count(*), sum(v) = 2000 * 2001 AS values_right FROM ix;
RESET pkchangelog.run_index_cache_size;
DROP PROCEDURE ix_commits;
DROP TABLE ix;

-- A backend keeps one run list per table, whatever its commits do after
-- storing theirs: a commit that expires snapshots (every 64th) writes the
-- table's row again if commits were folded after it, and the list the
-- commit stored goes; its memory went with it only since a fix (each such
-- commit left its list's context behind, about 9 kB: a long session grew
-- by that much every 64 commits while retention passed).
CREATE TABLE rl (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup', snapshot_time_retained = '0ms',
		  snapshot_num_retained_min = 1);
INSERT INTO rl SELECT g, 0 FROM generate_series(1, 2000) g;
SELECT count(*) AS lists_before FROM pg_backend_memory_contexts
WHERE name = 'pkmerge run list' \gset
CREATE PROCEDURE rl_commits(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		UPDATE rl SET v = v + 1 WHERE id = (i * 7919) % 2000 + 1;
		COMMIT;
	END LOOP;
END $$;
CALL rl_commits(1000);
SELECT count(*) - :lists_before <= 1 AS at_most_one_new_list
FROM pg_backend_memory_contexts WHERE name = 'pkmerge run list';
SELECT (SELECT count(*) FROM pk_snapshots('rl')) < 64 AS expired,
	   sum(v) AS updates FROM rl;
DROP PROCEDURE rl_commits;
DROP TABLE rl;
