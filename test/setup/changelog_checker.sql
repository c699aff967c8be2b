-- test/setup/changelog_checker.sql: the changelog checker, loaded by every
-- regression suite that checks a table's stream (and by the TAP test
-- t/015_changelog_invariant.pl).  check_changelog(rel) is the invariant
-- the producer tests rely on: for input (SQL DML only), lookup and
-- full-compaction, per key the change stream must be a valid retract
-- stream (+I only first or after -D; -U equals the row last added; +U
-- directly follows the -U of its key; -D equals the row last added; a
-- TRUNCATE record empties the table) and replaying it must give exactly
-- the table.  check_stream's init: the rows before the stream begins.
-- check_data_runs(rel) compares a table's named data runs with its runs.
-- CREATE OR REPLACE: suites that run one after another in one database
-- each load it.  A suite loads it with
--   \set ECHO none
--   \getenv abs_srcdir PG_ABS_SRCDIR
--   \set checker :abs_srcdir '/setup/changelog_checker.sql'
--   \i :checker
--   \set ECHO all
-- (pg_regress sets PG_ABS_SRCDIR to its --inputdir, test/).
CREATE OR REPLACE FUNCTION check_stream(changes jsonb, keycols text[], tab jsonb,
							 init jsonb DEFAULT '{}') RETURNS text
LANGUAGE sql SET enable_nestloop = off AS $$
	-- set-based, so that long streams check fast (the planner cannot know
	-- how many changes there are: no nested loops): each change with its
	-- key, the change before it in the stream, and the row its key held
	-- before it (the last +I/+U, unless a -D or a TRUNCATE came after)
	WITH c AS (
		SELECT ord, e->>'snapshot_id' AS snap, e->>'rowkind' AS kind, e->'row' AS r,
			   (SELECT string_agg(e->'row'->>col, '|') FROM unnest(keycols) col) AS k
		FROM jsonb_array_elements(changes) WITH ORDINALITY x(e, ord)
		UNION ALL
		SELECT -row_number() OVER (), 'initial', '+I', value,
			   (SELECT string_agg(value->>col, '|') FROM unnest(keycols) col)
		FROM jsonb_each(init)),
	w AS (
		SELECT c.*, lag(kind) OVER s AS prev_kind, lag(k) OVER s AS prev_k,
			   max(ord) FILTER (WHERE kind = 'TRUNCATE') OVER (ORDER BY ord
				   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS trunc_ord,
			   max(ord) FILTER (WHERE kind <> '-U') OVER (PARTITION BY k ORDER BY ord
				   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_ord
		FROM c WINDOW s AS (ORDER BY ord)),
	v AS (
		SELECT w.ord, w.kind, w.k, w.r, w.snap, w.prev_kind, w.prev_k,
			   CASE WHEN l.kind IN ('+I', '+U') AND l.ord > coalesce(w.trunc_ord, l.ord - 1)
					THEN l.r END AS cur
		FROM w LEFT JOIN c l ON l.ord = w.last_ord),
	bad AS (
		SELECT ord, CASE
			WHEN prev_kind = '-U' AND (kind <> '+U' OR k <> prev_k) THEN
				format('snapshot %s: %s of key %s where the +U of key %s was due', snap, kind, k, prev_k)
			WHEN kind = '+I' AND cur IS NOT NULL THEN
				format('snapshot %s: +I of key %s, which is present', snap, k)
			WHEN kind IN ('-U', '-D') AND cur IS DISTINCT FROM r THEN
				format('snapshot %s: %s of key %s retracts %s, not %s', snap, kind, k, r, coalesce(cur::text, 'nothing'))
			WHEN kind = '+U' AND prev_kind IS DISTINCT FROM '-U' THEN
				format('snapshot %s: +U of key %s without -U', snap, k)
			END AS msg
		FROM v),
	final AS (
		SELECT coalesce(jsonb_object_agg(k, r), '{}') AS state
		FROM (SELECT DISTINCT ON (k) k, kind, r, ord FROM c
			  WHERE kind NOT IN ('-U', 'TRUNCATE') ORDER BY k, ord DESC) last
		WHERE kind <> '-D' AND ord > coalesce((SELECT max(ord) FROM c WHERE kind = 'TRUNCATE'), ord - 1))
	SELECT coalesce(
		(SELECT msg FROM bad WHERE msg IS NOT NULL ORDER BY ord LIMIT 1),
		(SELECT format('the stream ends after the -U of key %s', k)
		 FROM c WHERE kind = '-U' AND ord = (SELECT max(ord) FROM c)),
		(SELECT format('replaying the stream gives %s, the table holds %s', state, tab)
		 FROM final WHERE state IS DISTINCT FROM tab),
		'ok')
$$;

-- check_stream on a table's stream (pk_changes from its oldest retained
-- snapshot).  When that snapshot is a TRUNCATE of a producer that
-- retracts every row it removed (lookup, full-compaction), those -D
-- records, which lead its changes, are the rows before the stream.
CREATE OR REPLACE FUNCTION check_changelog(rel regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	keycols text[] := string_to_array(replace(
		(SELECT value FROM pk_options(rel) WHERE key = 'primary_key'), ' ', ''), ',');
	changes jsonb;
	tab jsonb;
	init jsonb := '{}';
BEGIN
	SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY n), '[]') INTO changes
	FROM pk_changes(rel) WITH ORDINALITY c(snapshot_id, rowkind, "row", producer, n);
	IF (SELECT commit_kind FROM pk_snapshots(rel) ORDER BY snapshot_id LIMIT 1) = 'OVERWRITE' THEN
		SELECT coalesce(jsonb_object_agg(key, e->'row'), '{}') INTO init
		FROM (SELECT e, (SELECT string_agg(e->'row'->>col, '|') FROM unnest(keycols) col) AS key,
					 bool_and(e->>'rowkind' = '-D' AND e->>'snapshot_id' = changes->0->>'snapshot_id')
						 OVER (ORDER BY i) AS lead
			  FROM jsonb_array_elements(changes) WITH ORDINALITY x(e, i)) s
		WHERE lead;
	END IF;
	EXECUTE format($q$
		SELECT coalesce(jsonb_object_agg(k, r), '{}')
		FROM (SELECT to_jsonb(t.*) AS r FROM %s t) s,
			 LATERAL (SELECT string_agg(s.r->>col, '|') AS k FROM unnest($1) col) kk$q$, rel)
		INTO tab USING keycols;
	RETURN check_stream(changes, keycols, tab, init);
END $$;

-- The data runs a table's pkchangelog.tables row names (readers list them
-- from it) must be exactly its data runs in pkchangelog.runs: those whose
-- row says data, but a commit's run kept as a delta in its row (producer
-- none: its snapshot made under none, a compaction since, no page); and
-- the commits' data runs kept in snapshot rows and commit log records
-- (run id minus the snapshot's), but those a compaction since replaced.
CREATE OR REPLACE FUNCTION check_data_runs(rel regclass) RETURNS text
LANGUAGE sql AS $$
	-- the row's runs, and those of the commits made since its last write
	-- (each the data run kept in a snapshot row, or a commit log record,
	-- past the row's last one)
	WITH tb AS (SELECT * FROM pkchangelog.tables WHERE relid = rel),
		 snaps AS (SELECT s.snapshot_id, s.commit_kind, s.producer, s.data_seq
				   FROM pkchangelog.snapshots s WHERE s.relid = rel
				   UNION ALL
				   SELECT l.snapshot_id, l.commit_kind, l.producer, l.data_seq
				   FROM pkchangelog.log_snapshots(rel) l),
		 named AS (SELECT unnest(data_runs) AS run_id FROM tb
				   UNION ALL
				   SELECT -s.snapshot_id FROM snaps s, tb
				   WHERE s.data_seq IS NOT NULL
					 AND s.snapshot_id > tb.last_snapshot_id),
		 listed AS (SELECT run_id FROM pkchangelog.runs r
					JOIN pg_class c ON c.oid = r.relid AND c.relfilenode = r.relfilenode
					WHERE r.relid = rel AND r.kind = 'data'
					  AND NOT (r.from_commit AND r.nblocks = 0
							   AND r.run_id NOT IN (SELECT run_id FROM named)
							   AND EXISTS (SELECT FROM snaps s
										   WHERE s.snapshot_id = r.created_snapshot
											 AND s.producer = 'none')
							   AND EXISTS (SELECT FROM snaps s
										   WHERE s.commit_kind = 'COMPACT'
											 AND s.snapshot_id > r.created_snapshot))
					UNION ALL
					SELECT -s.snapshot_id FROM snaps s
					WHERE s.data_seq IS NOT NULL
					  AND NOT (-s.snapshot_id NOT IN (SELECT run_id FROM named)
							   AND EXISTS (SELECT FROM snaps k
										   WHERE k.commit_kind = 'COMPACT'
											 AND k.snapshot_id > s.snapshot_id))),
		 extra AS (SELECT string_agg(run_id::text, ',' ORDER BY run_id) AS ids
				   FROM (SELECT * FROM named EXCEPT SELECT * FROM listed) x),
		 missing AS (SELECT string_agg(run_id::text, ',' ORDER BY run_id) AS ids
					 FROM (SELECT * FROM listed EXCEPT SELECT * FROM named) y)
	SELECT CASE WHEN extra.ids IS NULL AND missing.ids IS NULL THEN 'ok'
		   ELSE concat_ws('; ', 'named, not a data run: ' || extra.ids,
						  'a data run, not named: ' || missing.ids) END
	FROM extra, missing
$$;
