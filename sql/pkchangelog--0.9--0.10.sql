/* pkchangelog 0.9 -> 0.10: a snapshot's committing role as text */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.10'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.10') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.10',
			pkchangelog.library_version();
	END IF;
END $$;

-- Every commit writes one row of pkchangelog.snapshots, and a name column
-- takes 64 bytes of it (a fifth of a small commit's row, and of the WAL
-- that logs it): the role's name is kept as text.  pk_snapshots still
-- returns it as name.
ALTER TABLE pkchangelog.snapshots ALTER COLUMN commit_user TYPE text;
