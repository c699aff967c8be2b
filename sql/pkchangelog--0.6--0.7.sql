/* pkchangelog 0.6 -> 0.7: retiring a run is a HOT update; pk_snapshots and
 * pk_consumers check their argument whatever the plan */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.7'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.7') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.7',
			pkchangelog.library_version();
	END IF;
END $$;

-- Readers find a table's data runs from the version of its tables row
-- their snapshot sees (data_runs), by run id, and the runs their own
-- transaction added through runs_snapshot: nothing reads runs_kind any
-- more.  Without it no index covers a column that retiring a commit's run
-- to a delta changes (kind), so the retiring update is a HOT one when the
-- row's page has room, which the fill factor leaves: per small commit
-- three btree entries fewer, and one fewer for each run inserted.
DROP INDEX pkchangelog.runs_kind;
ALTER TABLE pkchangelog.runs SET (fillfactor = 50);

-- pk_snapshots and pk_consumers check their argument (a pkmerge table, not
-- a distributed one) in a statement of its own: inside the query, a plan
-- that found no rows of the table first (a hash join probing from the
-- snapshots, a sequential scan of an empty consumers table) never
-- evaluated the check, and returned nothing instead of the error.
CREATE OR REPLACE FUNCTION pk_snapshots(rel regclass,
	OUT snapshot_id bigint, OUT commit_kind text, OUT commit_time timestamptz,
	OUT commit_user name, OUT commit_xid xid8, OUT total_record_count bigint,
	OUT delta_record_count bigint, OUT changelog_record_count bigint,
	OUT producer text)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pkchangelog.pkmerge_relid(rel);
	SELECT s.snapshot_id, s.commit_kind, s.commit_time, s.commit_user, s.commit_xid,
		   s.total_record_count, s.delta_record_count, s.changelog_record_count,
		   s.producer
	FROM pkchangelog.snapshots s
	WHERE s.relid = rel::oid
	ORDER BY s.snapshot_id
$$;

CREATE OR REPLACE FUNCTION pk_consumers(rel regclass, OUT consumer_id text,
	OUT next_snapshot_id bigint, OUT last_consumed timestamptz)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pkchangelog.pkmerge_relid(rel);
	SELECT c.consumer_id, c.next_snapshot_id, c.last_consumed
	FROM pkchangelog.consumers c
	WHERE c.relid = rel::oid
	ORDER BY c.consumer_id
$$;
