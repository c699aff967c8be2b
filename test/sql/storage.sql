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
SELECT pg_relation_size('z') = 8192 AS one_page;

-- gaps VACUUM finds between runs are filled by later runs, first fit,
-- before the file grows: three 1-row commits, a full compaction placed
-- after them, their snapshots expired, VACUUM: blocks 0..2 are a gap
CREATE TABLE g (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
INSERT INTO g VALUES (1, 1);
INSERT INTO g VALUES (2, 2);
INSERT INTO g VALUES (3, 3);
SELECT pk_compact('g', true) > 0 AS compacted;
SELECT pk_expire_snapshots('g') > 0 AS expired;
VACUUM g;
SELECT start_block AS bottom_block FROM pkchangelog.runs WHERE relid = 'g'::regclass \gset
SELECT :bottom_block >= 3 AS bottom_after_gap,
	   pg_relation_size('g') / 8192 AS pages_before;
INSERT INTO g VALUES (4, 4);
INSERT INTO g VALUES (5, 5);
SELECT start_block, level FROM pkchangelog.runs
 WHERE relid = 'g'::regclass AND kind = 'data' ORDER BY start_block;
SELECT pg_relation_size('g') / 8192 AS pages_after;
SELECT * FROM g ORDER BY id;

DROP TABLE z, n, h, g;
