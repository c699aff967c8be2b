-- changelog_checker.sql: defines check_changelog(rel), the invariant the
-- producer tests rely on, and shows that it catches broken streams.  For
-- input (SQL DML only), lookup and full-compaction, per key the change
-- stream must be a valid retract stream (+I only first or after -D; -U
-- equals the row last added; +U directly follows the -U of its key; -D
-- equals the row last added) and replaying it must give exactly the table.
CREATE FUNCTION check_stream(changes jsonb, keycols text[], tab jsonb) RETURNS text
LANGUAGE sql SET enable_nestloop = off AS $$
	-- set-based, so that long streams check fast (the planner cannot know
	-- how many changes there are: no nested loops): each change with its
	-- key, the change before it in the stream, and the row its key held
	-- before it (the last +I/+U, unless a -D came after)
	WITH c AS (
		SELECT ord, e->>'snapshot_id' AS snap, e->>'rowkind' AS kind, e->'row' AS r,
			   (SELECT string_agg(e->'row'->>col, '|') FROM unnest(keycols) col) AS k
		FROM jsonb_array_elements(changes) WITH ORDINALITY x(e, ord)),
	w AS (
		SELECT c.*, lag(kind) OVER s AS prev_kind, lag(k) OVER s AS prev_k,
			   max(ord) FILTER (WHERE kind <> '-U') OVER (PARTITION BY k ORDER BY ord
				   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_ord
		FROM c WINDOW s AS (ORDER BY ord)),
	v AS (
		SELECT w.ord, w.kind, w.k, w.r, w.snap, w.prev_kind, w.prev_k,
			   CASE WHEN l.kind IN ('+I', '+U') THEN l.r END AS cur
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
		FROM (SELECT DISTINCT ON (k) k, kind, r FROM c WHERE kind <> '-U'
			  ORDER BY k, ord DESC) last
		WHERE kind <> '-D')
	SELECT coalesce(
		(SELECT msg FROM bad WHERE msg IS NOT NULL ORDER BY ord LIMIT 1),
		(SELECT format('the stream ends after the -U of key %s', k)
		 FROM c WHERE kind = '-U' AND ord = (SELECT max(ord) FROM c)),
		(SELECT format('replaying the stream gives %s, the table holds %s', state, tab)
		 FROM final WHERE state IS DISTINCT FROM tab),
		'ok')
$$;

CREATE FUNCTION check_changelog(rel regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	keycols text[] := string_to_array(replace(
		(SELECT value FROM pk_options(rel) WHERE key = 'primary_key'), ' ', ''), ',');
	changes jsonb;
	tab jsonb;
BEGIN
	SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]') INTO changes FROM pk_changes(rel) c;
	EXECUTE format($q$
		SELECT coalesce(jsonb_object_agg(k, r), '{}')
		FROM (SELECT to_jsonb(t.*) AS r FROM %s t) s,
			 LATERAL (SELECT string_agg(s.r->>col, '|') AS k FROM unnest($1) col) kk$q$, rel)
		INTO tab USING keycols;
	RETURN check_stream(changes, keycols, tab);
END $$;

-- The data runs a table's pkchangelog.tables row names (readers list them
-- from it) must be exactly its data runs in pkchangelog.runs.
CREATE FUNCTION check_data_runs(rel regclass) RETURNS text
LANGUAGE sql AS $$
	WITH named AS (SELECT unnest(data_runs) AS run_id FROM pkchangelog.tables WHERE relid = rel),
		 listed AS (SELECT run_id FROM pkchangelog.runs r
					JOIN pg_class c ON c.oid = r.relid AND c.relfilenode = r.relfilenode
					WHERE r.relid = rel AND r.kind = 'data'),
		 extra AS (SELECT string_agg(run_id::text, ',' ORDER BY run_id) AS ids
				   FROM (SELECT * FROM named EXCEPT SELECT * FROM listed) x),
		 missing AS (SELECT string_agg(run_id::text, ',' ORDER BY run_id) AS ids
					 FROM (SELECT * FROM listed EXCEPT SELECT * FROM named) y)
	SELECT CASE WHEN extra.ids IS NULL AND missing.ids IS NULL THEN 'ok'
		   ELSE concat_ws('; ', 'named, not a data run: ' || extra.ids,
						  'a data run, not named: ' || missing.ids) END
	FROM extra, missing
$$;

-- the checker itself: a valid stream passes, each broken one is named
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-U","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS valid;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS missing_retraction;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"+I","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS double_insert;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-U","row":{"id":1,"v":9}},
					  {"snapshot_id":2,"rowkind":"+U","row":{"id":1,"v":2}}]',
					'{id}', '{"1":{"id":1,"v":2}}') AS wrong_retraction;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"+I","row":{"id":1,"v":1}},
					  {"snapshot_id":2,"rowkind":"-D","row":{"id":1,"v":1}}]',
					'{id}', '{"1":{"id":1,"v":1}}') AS replay_differs;
SELECT check_stream('[{"snapshot_id":1,"rowkind":"-U","row":{"id":1,"v":1}}]',
					'{id}', '{}') AS dangling;
-- check_data_runs: a table's row agrees with its runs; a run left out, or
-- one named that is not a data run, is reported
CREATE TABLE dr (id int PRIMARY KEY) USING pkmerge;
INSERT INTO dr VALUES (1);
INSERT INTO dr VALUES (2);
SELECT check_data_runs('dr') AS agrees;
BEGIN;
UPDATE pkchangelog.tables SET data_runs = data_runs[2:] WHERE relid = 'dr'::regclass;
SELECT check_data_runs('dr') LIKE 'a data run, not named: %' AS left_out;
ROLLBACK;
BEGIN;
UPDATE pkchangelog.tables SET data_runs = data_runs || -7::bigint WHERE relid = 'dr'::regclass;
SELECT check_data_runs('dr') AS not_a_run;
ROLLBACK;
DROP TABLE dr;
