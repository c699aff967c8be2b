/* pkchangelog 0.3 -> 0.4: materialized aggregates survive pg_dump */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.4'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.4') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.4',
			pkchangelog.library_version();
	END IF;
END $$;

-- The trigger every materialized aggregate carries (pk_materialized, BEFORE
-- TRUNCATE): its arguments are the aggregate's query and its value-count
-- tables, so pg_dump writes the definition and a restore, creating the
-- trigger after the tables' rows, makes the table an aggregate again.
-- Fired, it refuses TRUNCATE of the aggregate.
CREATE FUNCTION pkchangelog.materialized_aggregate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'pk_materialized_aggregate' LANGUAGE C;

CREATE FUNCTION pkchangelog.materialization_attach(aggregate oid) RETURNS void
	AS 'MODULE_PATHNAME', 'pk_materialization_attach' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION pkchangelog.materialization_attach(oid) FROM PUBLIC;

COMMENT ON FUNCTION pkchangelog.materialized_aggregate() IS
	'the trigger of a materialized aggregate: carries its definition through pg_dump and refuses TRUNCATE';
COMMENT ON FUNCTION pkchangelog.materialization_attach(oid) IS
	'gives an aggregate made before version 0.4 its pk_materialized trigger';

-- the aggregates made before this version get theirs
SELECT pkchangelog.materialization_attach(aggregate) FROM pkchangelog.materializations;
