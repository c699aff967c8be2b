/* pkchangelog 0.6 -> 0.7: retiring a run is a HOT update */

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
