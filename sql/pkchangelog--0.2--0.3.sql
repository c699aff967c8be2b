/* pkchangelog 0.2 -> 0.3: materialized aggregates */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.3'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.3') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.3',
			pkchangelog.library_version();
	END IF;
END $$;

-- One row per materialized aggregate (pk_materialize): the heap table that
-- holds it, the pkmerge table it aggregates and its query as a parse tree
-- (nodeToString of the analyzed query, so renames of the source or its
-- columns do not break it; pk_materializations shows it as SQL).  The
-- column order is fixed by the Anum_materializations_* constants in
-- src/catalog.h.  Readable by every role, as view definitions are.
CREATE TABLE pkchangelog.materializations (
	relid oid NOT NULL,
	aggregate oid NOT NULL UNIQUE,
	query text NOT NULL,
	value_tables oid[] NOT NULL,
	created_snapshot bigint NOT NULL,
	PRIMARY KEY (relid, aggregate)
);
GRANT SELECT ON pkchangelog.materializations TO PUBLIC;

CREATE FUNCTION pk_materialize(name text, query text) RETURNS void
	AS 'MODULE_PATHNAME', 'pk_materialize' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION pk_reconcile(name text, repair boolean DEFAULT false,
	OUT "group" jsonb, OUT stored jsonb, OUT expected jsonb)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_reconcile' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION pkchangelog.materialization_query(aggregate oid) RETURNS text
	AS 'MODULE_PATHNAME', 'pk_materialization_query' LANGUAGE C STRICT STABLE;

CREATE FUNCTION pkchangelog.materialization_exact_as_of(aggregate oid) RETURNS bigint
	AS 'MODULE_PATHNAME', 'pk_materialization_exact_as_of' LANGUAGE C STRICT STABLE;

CREATE VIEW pk_materializations AS
	SELECT m.aggregate::regclass AS name,
		m.relid::regclass AS source,
		pkchangelog.materialization_query(m.aggregate) AS query,
		pkchangelog.materialization_exact_as_of(m.aggregate) AS exact_as_of,
		m.created_snapshot
	FROM pkchangelog.materializations m;
GRANT SELECT ON pk_materializations TO PUBLIC;

COMMENT ON TABLE pkchangelog.materializations IS 'one row per materialized aggregate of a pkmerge table (pk_materialize)';
COMMENT ON COLUMN pkchangelog.materializations.relid IS 'the pkmerge table aggregated (the source)';
COMMENT ON COLUMN pkchangelog.materializations.aggregate IS 'the heap table holding the aggregate';
COMMENT ON COLUMN pkchangelog.materializations.query IS 'the aggregate''s query, analyzed (a parse tree; pk_materializations shows it as SQL)';
COMMENT ON COLUMN pkchangelog.materializations.value_tables IS 'per output column, the table counting each value of a min or max per group (0: none)';
COMMENT ON COLUMN pkchangelog.materializations.created_snapshot IS 'the source''s snapshot the aggregate was computed at';
COMMENT ON FUNCTION pk_materialize(text, text) IS
	'creates heap table name holding the result of query, an aggregate of one pkmerge table, and keeps it equal to the query in every transaction that produces the table''s changes';
COMMENT ON FUNCTION pk_reconcile(text, boolean) IS
	'the groups where materialized aggregate name differs from its query computed again (none when it is exact); repair => true also recomputes the aggregate';
COMMENT ON FUNCTION pkchangelog.materialization_query(oid) IS
	'the query of a materialized aggregate, as SQL';
COMMENT ON FUNCTION pkchangelog.materialization_exact_as_of(oid) IS
	'the source snapshot a materialized aggregate is exact as of: the newest snapshot, or for full-compaction the last full compaction';
COMMENT ON VIEW pk_materializations IS
	'the materialized aggregates: their tables, sources, queries and the source snapshot each is exact as of';
