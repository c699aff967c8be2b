/* pkchangelog 0.1 -> 0.2: consumer positions */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.2'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.2') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.2',
			pkchangelog.library_version();
	END IF;
END $$;

-- One row per consumer of a pkmerge table's change stream: the next
-- snapshot it reads.  pk_consume reads and moves it in the caller's
-- transaction; expiration keeps every snapshot from the oldest position
-- on (the column order is fixed by the Anum_consumers_* constants in
-- src/catalog.h).  Positions are table-level metadata, readable by every
-- role as pkchangelog.snapshots is.
CREATE TABLE pkchangelog.consumers (
	relid oid NOT NULL,
	consumer_id text NOT NULL,
	next_snapshot_id bigint NOT NULL,
	last_consumed timestamptz NOT NULL,
	PRIMARY KEY (relid, consumer_id)
);
GRANT SELECT ON pkchangelog.consumers TO PUBLIC;

-- max_snapshots NULL: up to the newest snapshot
CREATE FUNCTION pk_consume(rel regclass, consumer_id text, max_snapshots int DEFAULT NULL,
	OUT snapshot_id bigint, OUT rowkind text, OUT "row" jsonb, OUT producer text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'pk_consume' LANGUAGE C VOLATILE;

CREATE FUNCTION pk_consumers(rel regclass, OUT consumer_id text, OUT next_snapshot_id bigint,
	OUT last_consumed timestamptz)
	RETURNS SETOF record LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT c.consumer_id, c.next_snapshot_id, c.last_consumed
	FROM pkchangelog.consumers c
	WHERE c.relid = pkchangelog.pkmerge_relid(rel)
	ORDER BY c.consumer_id
$$;

CREATE FUNCTION pk_consumer_drop(rel regclass, consumer_id text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'pk_consumer_drop' LANGUAGE C STRICT VOLATILE;

COMMENT ON TABLE pkchangelog.consumers IS 'one row per consumer of a pkmerge table''s change stream (pk_consume): its position';
COMMENT ON COLUMN pkchangelog.consumers.relid IS 'the pkmerge table';
COMMENT ON COLUMN pkchangelog.consumers.consumer_id IS 'the consumer''s name, as given to pk_consume';
COMMENT ON COLUMN pkchangelog.consumers.next_snapshot_id IS 'the next snapshot the consumer reads; expiration keeps it and every newer one, unless the consumer is idle longer than the table''s consumer_expiration_time';
COMMENT ON COLUMN pkchangelog.consumers.last_consumed IS 'when pk_consume last moved the position (consumer_expiration_time counts from it)';
COMMENT ON FUNCTION pk_consume(regclass, text, integer) IS
	'the changes after a consumer''s position (as pk_changes returns them), at most max_snapshots snapshots (NULL: up to the newest), and the position moved past them in the caller''s transaction (a rollback delivers them again); a new consumer starts at the oldest retained snapshot';
COMMENT ON FUNCTION pk_consumers(regclass) IS
	'the consumers of a pkmerge table''s change stream: the next snapshot each reads, and when it last consumed';
COMMENT ON FUNCTION pk_consumer_drop(regclass, text) IS
	'forgets a consumer of a pkmerge table''s change stream (false if there was none): it holds no snapshot from expiration, and its next pk_consume starts at the oldest retained snapshot';
