-- storage.sql: rows are kept in zstd-compressed runs inside the table's own
-- pages; pg_relation_size reports them; compression = 'none' stores the
-- same rows bigger; VACUUM reclaims the space of runs that are gone; the
-- file shrinks at its end; ANALYZE gives the planner row estimates.
-- (Blocks of runs whose transaction aborted or crashed: t/010_crash_recovery.pl.)
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

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
-- stored compact, tight and packed (KMRP): no run header, index or bloom
-- filter, and rows without alignment: 10 bytes of header (magic, CRC, row
-- count, base sequence number), then per row 3 bytes and its tuple packed
-- (8 bytes for (1, 'one'): its infomask fields, a mask and the id as
-- 1-byte varints, then the text; 10 for (3, 'three')); a 1-row changelog
-- run too.  Their first and last keys are not in the record:
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
-- a packed row keeps its integers as varints and a float as it is (its
-- bits make a long varint; a mask says so): (1, 1, NULL) in 6 bytes (its
-- infomask fields, the null bitmap, the mask, two 1-byte varints), (2,
-- -5, 1.5) in 13, where a tight row takes 22 and 30
CREATE TABLE pi (id bigint PRIMARY KEY, v bigint, f float8) USING pkmerge;
INSERT INTO pi VALUES (1, 1, NULL);
INSERT INTO pi VALUES (2, -5, 1.5);
SELECT snapshot_id, data_bytes FROM pkchangelog.log_snapshots('pi') ORDER BY snapshot_id;
SELECT * FROM pi ORDER BY id;
DROP TABLE pi;
-- packed rows read back as written, against a heap twin: integers of
-- every width at their extremes, floats, NULLs, a long text (a 4-byte
-- varlena header, aligned), an int8 array (double-aligned), a name (fixed
-- width, by reference), bool, uuid, numeric; then a column dropped (its
-- packed values still skipped by their width) and one added with a
-- default (rows written before it have fewer attributes), and more
-- commits; each row is its own commit (a record's packed runs), and the
-- input changelog's runs are packed too
CREATE TABLE pt (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8,
	ts timestamptz, d date, b bool, n name, u uuid, t text, a int8[], num numeric)
	USING pkmerge WITH (changelog_producer = 'input');
CREATE TABLE ht (LIKE pt INCLUDING ALL);
CREATE TABLE pt_rows AS
SELECT * FROM (VALUES
	(1, 0::int2, 0, 0::int8, 0::float4, 0::float8, '2000-01-01 00:00+00'::timestamptz,
	 '2000-01-01'::date, false, ''::name, '00000000-0000-0000-0000-000000000000'::uuid,
	 '', '{}'::int8[], 0::numeric),
	(2, 32767, 2147483647, 9223372036854775807, 3.4e38, 1.7976931348623157e308, 'infinity',
	 'infinity', true, 'name', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', repeat('x', 300),
	 '{1,2,3}', 1e100),
	(3, -32768, -2147483648, -9223372036854775808, -1.5, '-0', '-infinity', '-infinity',
	 NULL, NULL, NULL, NULL, NULL, NULL),
	(4, NULL, NULL, NULL, 'NaN', 'NaN', '2026-12-03 12:00:00.123456+00', '2026-12-03', true,
	 repeat('n', 63), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'short',
	 '{-1,9223372036854775807}', -0.5),
	(5, -1, -1, -1, 1, 1, '1999-12-31 23:59:59.999999+00', '1999-12-31', NULL, 'x',
	 NULL, repeat('é', 100), '{NULL,0}', 123456789.000001)) v;
CREATE PROCEDURE pt_fill(lo int, hi int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN lo..hi LOOP
		INSERT INTO pt SELECT * FROM pt_rows WHERE column1 = i;
		INSERT INTO ht SELECT * FROM pt_rows WHERE column1 = i;
		COMMIT;
	END LOOP;
END $$;
CALL pt_fill(1, 5);
SELECT count(*) AS differ FROM ((TABLE pt EXCEPT TABLE ht) UNION ALL (TABLE ht EXCEPT TABLE pt)) x;
-- packed: row 1 in 109 bytes (ids and zeros 1-byte varints, the name's
-- 64 bytes, the uuid's 16, a text, an array and a numeric of 1, 13 and 3),
-- tight 156; row 3 in 45 (its extremes and the floats kept as they are,
-- 7 mask bits), tight 66; data_bytes adds the stream's 10 bytes and the
-- row's 3
SELECT snapshot_id, data_bytes FROM pkchangelog.log_snapshots('pt')
 WHERE snapshot_id IN (1, 3) ORDER BY snapshot_id;
UPDATE pt SET i8 = i8 - 1, f8 = f8 / 2 WHERE id IN (2, 5);
UPDATE ht SET i8 = i8 - 1, f8 = f8 / 2 WHERE id IN (2, 5);
ALTER TABLE pt DROP COLUMN i4;
ALTER TABLE ht DROP COLUMN i4;
ALTER TABLE pt ADD COLUMN extra int8 DEFAULT 42;
ALTER TABLE ht ADD COLUMN extra int8 DEFAULT 42;
UPDATE pt_rows SET column1 = column1 + 10;
ALTER TABLE pt_rows DROP COLUMN column3;
ALTER TABLE pt_rows ADD COLUMN extra int8 DEFAULT -7;
CALL pt_fill(11, 15);
SELECT count(*) AS rows, count(*) FILTER (WHERE extra = 42) AS defaulted FROM pt;
SELECT count(*) AS differ FROM ((TABLE pt EXCEPT TABLE ht) UNION ALL (TABLE ht EXCEPT TABLE pt)) x;
SELECT id, i8, f8, extra FROM pt WHERE id IN (2, 3, 12, 13) ORDER BY id;
-- the change stream's rows, from the changelog's packed runs
SELECT snapshot_id, rowkind, "row"->>'i8' AS i8, "row"->>'f4' AS f4
  FROM pk_changes('pt') WHERE ("row"->>'id')::int IN (2, 3) ORDER BY snapshot_id, rowkind;
DROP TABLE pt, ht, pt_rows;
DROP PROCEDURE pt_fill;
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
