-- explain.sql: the planner uses the pkmerge_key index for key equality,
-- key ranges, ORDER BY key and as the inner side of a nested loop
-- (parallel scans: parallel.sql).  Results are checked beside each plan.
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

CREATE TABLE t (id bigint PRIMARY KEY, grp int, v text) USING pkmerge;
INSERT INTO t SELECT g, g % 10, 'v' || g FROM generate_series(1, 20000) g;
-- several runs, so lookups and scans merge
INSERT INTO t SELECT g, g % 10, 'w' || g FROM generate_series(1, 20000, 7) g;
DELETE FROM t WHERE id % 1000 = 0;
ANALYZE t;
SELECT count(*) FROM pk_runs('t');

EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 15;
SELECT * FROM t WHERE id = 15;
SELECT * FROM t WHERE id = 14;
SELECT * FROM t WHERE id = 2000;
-- an int4 constant against the bigint key
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 15::int;
SELECT * FROM t WHERE id = 15::int;

EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id BETWEEN 995 AND 1002;
SELECT * FROM t WHERE id BETWEEN 995 AND 1002;
SELECT count(*) FROM t WHERE id > 19990;
SELECT count(*) FROM t WHERE id < 10;

EXPLAIN (COSTS OFF) SELECT id FROM t ORDER BY id LIMIT 5;
SELECT id FROM t ORDER BY id LIMIT 5;
-- descending needs a sort: the index is forward only
EXPLAIN (COSTS OFF) SELECT id FROM t ORDER BY id DESC LIMIT 3;
SELECT id FROM t ORDER BY id DESC LIMIT 3;

CREATE TABLE probe (id bigint);
INSERT INTO probe VALUES (1), (7), (1000), (20000), (99999);
ANALYZE probe;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT p.id, t.v FROM probe p JOIN t ON t.id = p.id;
SELECT p.id, t.v FROM probe p JOIN t ON t.id = p.id ORDER BY p.id;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- a composite key: equality on the leading column, then both
CREATE TABLE c (a int, b int, v int, PRIMARY KEY (a, b)) USING pkmerge;
INSERT INTO c SELECT g / 100, g % 100, g FROM generate_series(0, 9999) g;
ANALYZE c;
EXPLAIN (COSTS OFF) SELECT * FROM c WHERE a = 42 AND b = 7;
SELECT * FROM c WHERE a = 42 AND b = 7;
EXPLAIN (COSTS OFF) SELECT count(*) FROM c WHERE a = 42;
SELECT count(*), min(b), max(b) FROM c WHERE a = 42;
SELECT count(*) FROM c WHERE a = 42 AND b >= 90;
SELECT count(*) FROM c WHERE b = 5;

-- backward scans are refused with a clear error, not a wrong answer
BEGIN;
DECLARE cur SCROLL CURSOR FOR SELECT id FROM t WHERE grp = 3;
FETCH 2 FROM cur;
FETCH BACKWARD 1 FROM cur;
ROLLBACK;

DROP TABLE t, probe, c;

-- arguments of another type than the key: converted when exact, else a
-- filter (an int key against bigint values, a timestamptz key against date)
CREATE TABLE xt (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO xt SELECT g, 'v' || g FROM generate_series(1, 1000) g;
CREATE TABLE xts (ts timestamptz PRIMARY KEY, v int) USING pkmerge;
INSERT INTO xts SELECT '2020-01-01 00:00+00'::timestamptz + g * interval '1 day', g
FROM generate_series(1, 1000) g;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM xt WHERE id = 500::bigint;
SELECT * FROM xt WHERE id = 500::bigint;
SELECT * FROM xt WHERE id = 5000000000::bigint;
SELECT count(*) FROM xt WHERE id < 5000000000::bigint;
SELECT count(*) FROM xt WHERE id > -5000000000::bigint AND id <= 3::bigint;
SET TIME ZONE 'UTC';
SELECT v FROM xts WHERE ts = '2020-01-11'::date;
SELECT count(*) FROM xts WHERE ts >= '2020-01-11'::date AND ts < '2020-01-21'::date;
RESET TIME ZONE;
-- a count (bigint) as the join key of an int key
SELECT s, xt.v
FROM generate_series(1, 3) s,
	 LATERAL (SELECT count(*) AS n FROM xt WHERE id <= s * 100) c
	 JOIN xt ON xt.id = c.n
ORDER BY s;
RESET enable_seqscan;
DROP TABLE xt, xts;
