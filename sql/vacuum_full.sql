-- vacuum_full.sql: VACUUM FULL rewrites a pkmerge table compactly: a full
-- compaction (what pk_compact(rel, true) does, with the full-compaction
-- producer's changelog), then every run the table still has copied into a
-- new file from its first block on.  Rows, snapshots and every retained
-- snapshot's changes stay; the file is exactly its runs' pages.  Plain
-- VACUUM gives back only the free space at the file's end.  CLUSTER is
-- refused.  (Crashes during and after VACUUM FULL, a standby:
-- t/024_vacuum_full.pl; snapshots taken before it: isolation vacuum_full.)
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

-- after a full compaction, expiration and VACUUM, the compacted run sits
-- after the space its inputs had and keeps the file long
CREATE TABLE vf (id int PRIMARY KEY, v text) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_num_retained_max = 1);
DO $$
BEGIN
	FOR i IN 0..19 LOOP
		INSERT INTO vf SELECT g, md5(g::text) FROM generate_series(i * 2000 + 1, i * 2000 + 2000) g;
		COMMIT;
	END LOOP;
END $$;
SELECT pk_compact('vf', true) AS compact_snapshot;
SELECT pk_expire_snapshots('vf') AS expired;
-- VERBOSE says what VACUUM did (terse: the detail line of VACUUM FULL's
-- PostgreSQL message has timings)
\set VERBOSITY terse
VACUUM VERBOSE vf;
CREATE VIEW vf_space AS
	SELECT pg_relation_size('vf') / 8192 AS file_pages,
		   (SELECT sum(nblocks) FROM pkchangelog.runs WHERE relid = 'vf'::regclass) AS run_pages,
		   (SELECT count(*) FROM pk_runs('vf')) AS runs;
SELECT file_pages > 2 * run_pages AS file_pinned_long, runs FROM vf_space;
SELECT count(*) AS n, sum(id) AS s, md5(string_agg(v, ',' ORDER BY id)) AS h FROM vf \gset before_

-- VACUUM FULL: the one run moves to the start of a new file, and the file
-- is exactly the runs' pages (they are copied back to back)
VACUUM (FULL, VERBOSE) vf;
\set VERBOSITY default
SELECT file_pages = run_pages AS file_is_runs, runs FROM vf_space;
SELECT min(start_block) AS first_block FROM pkchangelog.runs WHERE relid = 'vf'::regclass;
SELECT count(*) = :before_n AS same_count, sum(id) = :before_s AS same_sum,
	   md5(string_agg(v, ',' ORDER BY id)) = :'before_h' AS same_rows FROM vf;
SELECT v = md5('31337') AS key_lookup FROM vf WHERE id = 31337;
-- the data was one bottom run already: no compaction, no snapshot
SELECT snapshot_id, commit_kind FROM pk_snapshots('vf');

-- the table works on: writes, plain VACUUM, another VACUUM FULL (with
-- ANALYZE), which compacts the new commits
INSERT INTO vf VALUES (0, 'zero');
UPDATE vf SET v = 'changed' WHERE id BETWEEN 1 AND 10;
DELETE FROM vf WHERE id = 40000;
VACUUM vf;
VACUUM (FULL, ANALYZE) vf;
SELECT file_pages = run_pages AS file_is_runs, runs FROM vf_space;
SELECT count(*), count(*) FILTER (WHERE v = 'changed') AS changed FROM vf;
SELECT snapshot_id, commit_kind, total_record_count FROM pk_snapshots('vf');
SELECT reltuples FROM pg_class WHERE relname = 'vf';

-- every producer: the rows and each retained snapshot's changes stay as
-- they were; the full compaction is a COMPACT snapshot, and under
-- full-compaction it makes the changelog pk_compact(rel, true) makes
CREATE TABLE vf_lookup (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE vf_input (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'input');
CREATE TABLE vf_none (id int PRIMARY KEY, v int) USING pkmerge;
CREATE TABLE vf_full (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'full-compaction');
CREATE TABLE vf_full_twin (id int PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'full-compaction');
-- four commits to each
CREATE PROCEDURE vf_write(rel regclass) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('INSERT INTO %s SELECT g, g FROM generate_series(1, 3000) g', rel);
	COMMIT;
	EXECUTE format('UPDATE %s SET v = v + 1 WHERE id <= 100', rel);
	COMMIT;
	EXECUTE format('DELETE FROM %s WHERE id BETWEEN 50 AND 59', rel);
	COMMIT;
	EXECUTE format('INSERT INTO %s VALUES (5000, 5000), (1, -1)', rel);
END $$;
CALL vf_write('vf_lookup');
CALL vf_write('vf_input');
CALL vf_write('vf_none');
CALL vf_write('vf_full');
CALL vf_write('vf_full_twin');
CREATE TABLE vf_before AS
	SELECT 'vf_lookup' AS t, * FROM pk_changes('vf_lookup')
	UNION ALL SELECT 'vf_input', * FROM pk_changes('vf_input')
	UNION ALL SELECT 'vf_none', * FROM pk_changes('vf_none');
SELECT t, count(*) FROM vf_before GROUP BY t ORDER BY t;
VACUUM FULL vf_lookup, vf_input, vf_none, vf_full;
SELECT pk_compact('vf_full_twin', true) AS twin_compact_snapshot;
CREATE VIEW vf_after AS
	SELECT 'vf_lookup' AS t, * FROM pk_changes('vf_lookup')
	UNION ALL SELECT 'vf_input', * FROM pk_changes('vf_input')
	UNION ALL SELECT 'vf_none', * FROM pk_changes('vf_none');
-- the same changes, none lost, none added
(SELECT * FROM vf_before EXCEPT ALL SELECT * FROM vf_after)
UNION ALL (SELECT * FROM vf_after EXCEPT ALL SELECT * FROM vf_before);
SELECT snapshot_id, commit_kind, producer FROM pk_snapshots('vf_none');
-- full-compaction: the stream VACUUM FULL made is pk_compact's
SELECT snapshot_id, rowkind, count(*) FROM pk_changes('vf_full') GROUP BY 1, 2 ORDER BY 1, 2;
(SELECT * FROM pk_changes('vf_full') EXCEPT ALL SELECT * FROM pk_changes('vf_full_twin'))
UNION ALL (SELECT * FROM pk_changes('vf_full_twin') EXCEPT ALL SELECT * FROM pk_changes('vf_full'));
-- rows, and files that are exactly the pages of their runs (delta and
-- changelog runs too; small ones have no pages: their catalog row holds
-- them, a small commit's runs its commit log record, on the log's pages)
SELECT count(*), sum(v) FROM vf_lookup UNION ALL SELECT count(*), sum(v) FROM vf_input
UNION ALL SELECT count(*), sum(v) FROM vf_none UNION ALL SELECT count(*), sum(v) FROM vf_full;
SELECT c.relname, pg_relation_size(c.oid) =
		 (SELECT sum(nblocks) * 8192 FROM pkchangelog.runs WHERE relid = c.oid) AS file_is_runs,
	   (SELECT string_agg(kind || ':' || n, ' ' ORDER BY kind)
		  FROM (SELECT kind, count(*) AS n FROM pk_runs(c.oid) GROUP BY kind) k) AS runs,
	   (SELECT count(*) FROM pkchangelog.runs WHERE relid = c.oid AND stream IS NOT NULL) AS in_catalog,
	   (SELECT count(changelog) FROM pkchangelog.snapshots WHERE relid = c.oid) +
	   (SELECT count(changelog_run_id) FROM pkchangelog.log_snapshots(c.oid::regclass))
		   AS in_snapshots,
	   (SELECT count(data) FROM pkchangelog.snapshots WHERE relid = c.oid) +
	   (SELECT count(data_seq) FROM pkchangelog.log_snapshots(c.oid::regclass))
		   AS data_in_snapshots
  FROM pg_class c WHERE c.relname IN ('vf_lookup', 'vf_input', 'vf_none', 'vf_full') ORDER BY 1;

-- an empty table, a temporary table
CREATE TABLE vf_empty (id int PRIMARY KEY) USING pkmerge;
VACUUM FULL vf_empty;
SELECT pg_relation_size('vf_empty') AS empty_size, count(*) FROM vf_empty;
CREATE TEMP TABLE vf_temp (id int PRIMARY KEY) USING pkmerge;
INSERT INTO vf_temp SELECT generate_series(1, 100);
INSERT INTO vf_temp SELECT generate_series(51, 200);
VACUUM FULL vf_temp;
SELECT count(*), sum(id) FROM vf_temp;
SELECT level, kind FROM pk_runs('vf_temp') ORDER BY created_snapshot, run_id;

-- only the owner (or the database owner): others are skipped with core's
-- warning before the table's lock is asked for, and it stays as it was
-- (the warning's SQLSTATE: its words differ between PostgreSQL versions)
CREATE ROLE vf_other;
SET ROLE vf_other;
\set VERBOSITY sqlstate
VACUUM FULL vf_lookup;
\set VERBOSITY default
CLUSTER vf_lookup USING vf_lookup_pkey;
RESET ROLE;
DROP ROLE vf_other;
SELECT count(*) FROM pk_snapshots('vf_lookup');

-- VACUUM FULL of the whole database does pkmerge tables too
VACUUM FULL;
SELECT file_pages = run_pages AS file_is_runs FROM vf_space;

-- CLUSTER stays refused, in every form; on heap tables it works
CLUSTER vf USING vf_pkey;
CLUSTER vf;
ALTER TABLE vf CLUSTER ON vf_pkey;
CREATE TABLE vf_heap (id int PRIMARY KEY);
INSERT INTO vf_heap VALUES (2), (1);
CLUSTER vf_heap USING vf_heap_pkey;

-- rows written before ADD COLUMN ... DEFAULT keep the default through
-- VACUUM FULL (it copies them as they are; PostgreSQL's swap clears the
-- columns' missing values, which the transaction puts back), in the table
-- and in the change stream
CREATE TABLE vf_added (k int PRIMARY KEY, a int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO vf_added VALUES (1, 1);
ALTER TABLE vf_added ADD COLUMN c int DEFAULT 7;
ALTER TABLE vf_added ADD COLUMN d text DEFAULT 'dflt';
INSERT INTO vf_added VALUES (2, 2, 8, 'x');
VACUUM FULL vf_added;
SELECT * FROM vf_added ORDER BY k;
SELECT snapshot_id, rowkind, row FROM pk_changes('vf_added');
SELECT attname, atthasmissing, attmissingval FROM pg_attribute
WHERE attrelid = 'vf_added'::regclass AND attnum > 0 ORDER BY attnum;
UPDATE vf_added SET a = 10 WHERE k = 1;
SELECT snapshot_id, rowkind, row FROM pk_changes('vf_added', 3);

DROP TABLE vf, vf_lookup, vf_input, vf_none, vf_full, vf_full_twin, vf_empty, vf_heap, vf_before, vf_added CASCADE;
DROP PROCEDURE vf_write(regclass);
