/* pkchangelog 0.12 -> 0.13: row ids for secondary indexes */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.13'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.13') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.13',
			pkchangelog.library_version();
	END IF;
END $$;

-- One row per pkmerge table with secondary indexes: from its first index
-- on, each row version it stores is named by a row id that compaction
-- keeps, which is its TID in every index.  next_id: where the ids never
-- handed out begin; raised in place, ahead of the ids handed out, so that
-- no id is handed out twice, even after a crash.
CREATE TABLE pkchangelog.row_ids (
	relid oid PRIMARY KEY,
	next_id bigint NOT NULL
);
COMMENT ON TABLE pkchangelog.row_ids IS 'one row per pkmerge table with secondary indexes: its row versions are named by row ids';
COMMENT ON COLUMN pkchangelog.row_ids.relid IS 'the pkmerge table';
COMMENT ON COLUMN pkchangelog.row_ids.next_id IS 'where the row ids never handed out begin (raised in place, ahead of use)';
