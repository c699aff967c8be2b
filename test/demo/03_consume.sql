\echo '== A consumer of the stream, exactly once'
\echo 'pk_consume reads the changes after a named consumer''s position and moves'
\echo 'the position in the same transaction.  Applying them in that transaction'
\echo 'applies each change once: a crash or a rollback leaves both untouched.'
\echo 'Here a loop reads orders_lookup''s stream a snapshot at a time into a'
\echo 'total per store: +I and +U add, -U and -D subtract.'
CREATE TABLE consumed_totals (store_id bigint PRIMARY KEY, total numeric NOT NULL);
DO $$
DECLARE
	batch record;
BEGIN
	LOOP
		WITH c AS (SELECT * FROM pk_consume('orders_lookup', 'store_totals', 1)),
		applied AS (
			INSERT INTO consumed_totals AS t
			SELECT ("row"->>'store_id')::bigint,
				   sum(CASE WHEN rowkind IN ('+I', '+U') THEN ("row"->>'amount')::numeric
							ELSE -("row"->>'amount')::numeric END)
			FROM c GROUP BY 1
			ON CONFLICT (store_id) DO UPDATE SET total = t.total + EXCLUDED.total
			RETURNING store_id)
		SELECT min(snapshot_id) AS snapshot_id, string_agg(rowkind, ' ') AS rowkinds,
			   (SELECT count(*) FROM applied) AS groups
		INTO batch FROM c;
		EXIT WHEN batch.snapshot_id IS NULL;
		RAISE NOTICE 'snapshot %: % applied to % store(s)', batch.snapshot_id, batch.rowkinds, batch.groups;
		COMMIT;
	END LOOP;
END $$;
SELECT * FROM consumed_totals;
\echo 'The consumer''s position: the next snapshot it reads.'
SELECT consumer_id, next_snapshot_id FROM pk_consumers('orders_lookup');
