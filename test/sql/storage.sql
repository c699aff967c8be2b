-- storage.sql: rows are kept in zstd-compressed runs inside the table's own
-- pages; pg_relation_size reports them; compression = 'none' stores the
-- same rows bigger; VACUUM reclaims the space of runs that are gone; the
-- file shrinks at its end; ANALYZE gives the planner row estimates.
-- (Blocks of runs whose transaction aborted or crashed: t/010_crash_recovery.pl.)

CREATE TABLE z (id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2), note text)
	USING pkmerge;
CREATE TABLE n (id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2), note text)
	USING pkmerge WITH (compression = 'none');
CREATE TABLE h (id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2), note text);
INSERT INTO z SELECT g, g % 100, (g % 1000) / 10.0, 'order ' || g FROM generate_series(1, 50000) g;
INSERT INTO n SELECT * FROM z;
INSERT INTO h SELECT * FROM z;
-- the same rows in all three
SELECT (SELECT sum(hashtext(z::text)) FROM z) = (SELECT sum(hashtext(h::text)) FROM h) AS z_equals_heap,
	   (SELECT sum(hashtext(n::text)) FROM n) = (SELECT sum(hashtext(h::text)) FROM h) AS n_equals_heap;
-- compressed runs are far smaller than heap plus its index; uncompressed ones are not
SELECT pg_relation_size('z') > 0 AS z_has_pages,
	   pg_total_relation_size('z') < 0.35 * pg_total_relation_size('h') AS z_small,
	   pg_relation_size('n') > 2 * pg_relation_size('z') AS n_bigger;
SELECT pg_relation_size('z') = (SELECT sum(size_bytes) FROM pk_runs('z')) AS size_is_runs;

-- ANALYZE: estimates close to the truth
ANALYZE z;
SELECT reltuples BETWEEN 45000 AND 55000 AS reltuples_ok FROM pg_class WHERE relname = 'z';
SELECT n_distinct, null_frac FROM pg_stats WHERE tablename = 'z' AND attname = 'store_id';
EXPLAIN (COSTS OFF) SELECT * FROM z WHERE store_id = 7;

-- space of dead runs is reused: after TRUNCATE and VACUUM the file shrinks
SELECT pg_relation_size('z') AS before \gset
TRUNCATE z;
INSERT INTO z VALUES (1, 1, 1, 'one');
SELECT pg_relation_size('z') < :before AS new_storage_small;
VACUUM z;
-- the 1-row commit's run is in its commit log record: the file has one
-- page left, the log's
SELECT pg_relation_size('z') AS file_bytes;
SELECT data_bytes < 1536 AS small, data_seq IS NOT NULL AS has_seq
  FROM pkchangelog.log_snapshots('z');

-- small commits keep their runs in their commit log records (on the
-- table's log page, which many commits share: no page of their own, no
-- page image in WAL, no run row): their rows have TIDs of their own, one
-- TID block per run from 3221225472 up (a run kept in its snapshot's row
-- has minus the snapshot's id as its run id: its block counts down from
-- the last), which TID scans and updates use
CREATE TABLE s (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO s VALUES (1, 'one'), (2, 'two');
INSERT INTO s VALUES (3, 'three');
SELECT pg_relation_size('s') AS file_bytes,
	   (SELECT count(*) FROM pk_runs('s') WHERE kind = 'data') AS data_runs;
SELECT id, (ctid::text::point)[0] >= 3221225472 AS own_block,
	   (ctid::text::point)[1] AS item FROM s ORDER BY id;
SELECT count(DISTINCT (ctid::text::point)[0]) AS tid_blocks FROM s;
-- stored compact and tight (KMRT): no run header, index or bloom filter,
-- and rows without alignment: 10 bytes of header (magic, CRC, row count,
-- base sequence number), then per row 3 bytes and the tuple from its
-- infomask on (14 bytes for (1, 'one'), 16 for (3, 'three')); a 1-row
-- changelog run too.  Their first and last keys are not in the record:
-- pk_runs reads them from the block.  A point lookup of a key the run
-- lacks (id 4) and of one it holds read them
SELECT snapshot_id, delta_record_count, data_seq, data_bytes
  FROM pkchangelog.log_snapshots('s') ORDER BY snapshot_id;
SELECT run_id, record_count, min_key, max_key, created_snapshot
  FROM pk_runs('s') ORDER BY created_snapshot;
SELECT kind, count(*) AS run_rows FROM pkchangelog.runs WHERE relid = 's'::regclass GROUP BY kind;
SELECT * FROM s WHERE id = 4;
SELECT * FROM s WHERE id = 3;
SELECT * FROM s ORDER BY id;
-- a tight row longer than 127 bytes (a two-byte length) and rows with
-- NULLs (a null bitmap) read back as written
CREATE TABLE st (id int PRIMARY KEY, a text, b int, c text) USING pkmerge;
INSERT INTO st VALUES (1, repeat('x', 300), NULL, 'c'), (2, NULL, 2, NULL);
SELECT data_bytes FROM pkchangelog.log_snapshots('st');
SELECT id, length(a), b, c FROM st ORDER BY id;
SELECT id, b FROM st WHERE id = 2;
DROP TABLE st;
-- a small block that zstd shrinks stays compressed, after a magic number
-- (KMRC), and reads the same
CREATE TABLE sz (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO sz SELECT g, repeat('ab', 30) || g FROM generate_series(1, 20) g;
SELECT data_bytes < 400 AS compressed, delta_record_count
  FROM pkchangelog.log_snapshots('sz');
SELECT count(*), sum(length(v)), min(v), max(id) FROM sz;
SELECT v FROM sz WHERE id = 17;
UPDATE sz SET v = 'x' WHERE id = 17;
SELECT id, v FROM sz WHERE id BETWEEN 16 AND 18 ORDER BY id;
DROP TABLE sz;
CREATE TABLE sl (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO sl VALUES (1, 'one');
UPDATE sl SET v = 'uno' WHERE id = 1;
-- (a commit's data and changelog runs are kept in its commit log record:
-- no row of their own, the log page's only)
SELECT kind, count(*) AS run_rows FROM pkchangelog.runs WHERE relid = 'sl'::regclass
 GROUP BY kind;
SELECT snapshot_id, changelog_record_count, changelog_run_id IS NOT NULL AS has_run_id,
	   changelog_bytes, data_bytes
  FROM pkchangelog.log_snapshots('sl') ORDER BY snapshot_id;
SELECT level, kind, record_count, created_snapshot FROM pk_runs('sl')
 ORDER BY created_snapshot, kind DESC;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('sl');
DROP TABLE sl;
SELECT ctid AS tid3 FROM s WHERE id = 3 \gset
SELECT * FROM s WHERE ctid = :'tid3';
UPDATE s SET v = v || '!' WHERE ctid = :'tid3';
DELETE FROM s WHERE id = 1;
SELECT * FROM s ORDER BY id;
-- a commit of more rows than a TID block holds gets pages
INSERT INTO s SELECT g, '' FROM generate_series(10, 301) g;
SELECT record_count, nblocks > 0 AS has_pages FROM pkchangelog.runs
 WHERE relid = 's'::regclass AND kind = 'data' ORDER BY record_count DESC LIMIT 1;
-- a small merge stays in its catalog row, through VACUUM FULL too
DELETE FROM s WHERE id >= 10;
SELECT pk_compact('s', true) > 0 AS compacted;
-- (the commits' runs it replaced stay as deltas: pk_runs tells them apart)
SELECT p.level, p.record_count, r.nblocks
  FROM pkchangelog.runs r JOIN pk_runs('s') p USING (run_id)
 WHERE r.relid = 's'::regclass AND p.kind = 'data';
INSERT INTO s VALUES (4, 'four');
VACUUM FULL s;
SELECT p.level, p.record_count, r.nblocks
  FROM pkchangelog.runs r JOIN pk_runs('s') p USING (run_id)
 WHERE r.relid = 's'::regclass AND p.kind = 'data' ORDER BY p.level;
SELECT * FROM s ORDER BY id;
SELECT pg_relation_size('s') AS file_bytes;

-- gaps VACUUM finds between runs are filled by later runs, first fit,
-- before the file grows: three commits of a few pages each, a full
-- compaction placed after them, their snapshots expired, VACUUM: their
-- blocks are a gap
CREATE TABLE g (id int PRIMARY KEY, v text) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(1, 300) i;
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(301, 600) i;
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(601, 900) i;
SELECT pk_compact('g', true) > 0 AS compacted;
SELECT pk_expire_snapshots('g') > 0 AS expired;
VACUUM g;
SELECT start_block AS bottom_block FROM pkchangelog.runs WHERE relid = 'g'::regclass \gset
SELECT pg_relation_size('g') / 8192 AS pages_before \gset
SELECT :bottom_block > 0 AS bottom_after_gap;
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(901, 1200) i;
INSERT INTO g SELECT i, md5(i::text) FROM generate_series(1201, 1500) i;
SELECT level, start_block < :bottom_block AS in_gap, nblocks > 0 AS has_pages
  FROM pkchangelog.runs
 WHERE relid = 'g'::regclass AND kind = 'data' ORDER BY start_block;
SELECT pg_relation_size('g') / 8192 = :pages_before AS file_not_grown;
SELECT count(*), sum(length(v)), min(id), max(id) FROM g;

-- VACUUM keeps the largest gaps, not the first ones in block order: more
-- than 64 single pages freed among runs that stay (the changelog runs of
-- 80 UPDATEs, between their data runs), then a stretch freed after them
-- (a large UPDATE's changelog run), all expired: a later run of 14 pages
-- goes into the stretch, and the file does not grow
CREATE TABLE lg (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup', snapshot_num_retained_min = 1,
		  snapshot_time_retained = '0ms',
		  num_sorted_run_compaction_trigger = 400, num_sorted_run_stop_trigger = 401);
CREATE PROCEDURE lg_fill() LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 0..79 LOOP
		INSERT INTO lg SELECT g, md5(g::text) FROM generate_series(i * 100 + 1, i * 100 + 100) g;
		COMMIT;
		UPDATE lg SET v = v || 'x' WHERE id BETWEEN i * 100 + 1 AND i * 100 + 100;
		COMMIT;
	END LOOP;
END $$;
CALL lg_fill();
UPDATE lg SET v = v || 'y';
INSERT INTO lg VALUES (0, 'zero');
SELECT pk_expire_snapshots('lg') > 0 AS expired;
VACUUM lg;
SELECT pg_relation_size('lg') / 8192 AS pages_before \gset
WITH e AS (SELECT start_block AS s, start_block + nblocks AS e
		   FROM pkchangelog.runs WHERE relid = 'lg'::regclass AND nblocks > 0),
o AS (SELECT s, coalesce(max(e) OVER (ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING
											  AND 1 PRECEDING), 0) AS pe FROM e)
SELECT count(*) > 64 AS over_64_gaps, count(*) FILTER (WHERE s - pe = 1) > 64 AS over_64_single_pages,
	   max(s - pe) >= 14 AS a_stretch
FROM o WHERE s > pe;
INSERT INTO lg SELECT g, md5(g::text) FROM generate_series(10001, 13000) g;
SELECT nblocks, start_block < :pages_before AS in_gap FROM pkchangelog.runs
WHERE relid = 'lg'::regclass AND kind = 'data' ORDER BY run_id DESC LIMIT 1;
SELECT pg_relation_size('lg') / 8192 = :pages_before AS file_not_grown;
SELECT count(*), sum(length(v)) FROM lg;
DROP PROCEDURE lg_fill;
DROP TABLE lg;

DROP TABLE z, n, h, g, s;
