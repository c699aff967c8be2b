/* pkchangelog 0.4 -> 0.5: small runs kept in their catalog row */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.5'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.5') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.5',
			pkchangelog.library_version();
	END IF;
END $$;

-- A small changelog or delta run's bytes (its whole stream: header, data
-- block, index, bloom filter) kept in its row instead of a page of the
-- table's file: a 1-row commit's changes then cost a few hundred bytes of
-- catalog, not an 8 kB page, for as long as its snapshot is retained.
ALTER TABLE pkchangelog.runs ADD COLUMN stream bytea;

COMMENT ON COLUMN pkchangelog.runs.stream IS
	'the run''s bytes when it is kept in this row (nblocks is 0), else NULL';
