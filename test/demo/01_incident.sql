-- pkchangelog demo: the 100 -> 80 -> 180 incident.
--
-- An order changes from 100 to 80.  A change stream that carries the new
-- value but not the retraction of the old one makes a downstream
-- SUM(amount) GROUP BY store_id show 180.  Four tables differ only in
-- changelog_producer; each gets the same two transactions.
\pset footer off
CREATE EXTENSION pkchangelog;

CREATE TABLE orders_none (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'none');
CREATE TABLE orders_input (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'input');
CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE orders_full (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'full-compaction');

-- transaction 1: the order is placed
INSERT INTO orders_none VALUES (1001, 10, 100);
INSERT INTO orders_input VALUES (1001, 10, 100);
INSERT INTO orders VALUES (1001, 10, 100);
INSERT INTO orders_full VALUES (1001, 10, 100);
-- full-compaction produces its changelog when a full compaction commits
SELECT pk_compact('orders_full', true) AS full_compaction_snapshot;

-- transaction 2: the amount changes to 80
UPDATE orders_none SET amount = 80 WHERE order_id = 1001;
UPDATE orders_input SET amount = 80 WHERE order_id = 1001;
UPDATE orders SET amount = 80 WHERE order_id = 1001;
UPDATE orders_full SET amount = 80 WHERE order_id = 1001;
SELECT pk_compact('orders_full', true) AS full_compaction_snapshot;

-- every table holds 80
SELECT 'none' AS producer, * FROM orders_none
UNION ALL SELECT 'input', * FROM orders_input
UNION ALL SELECT 'lookup', * FROM orders
UNION ALL SELECT 'full-compaction', * FROM orders_full;

-- each table's RowKind stream
CREATE TEMP VIEW streams AS
	SELECT 'none' AS producer, * FROM pk_changes('orders_none')
	UNION ALL SELECT 'input', * FROM pk_changes('orders_input')
	UNION ALL SELECT 'lookup', * FROM pk_changes('orders')
	UNION ALL SELECT 'full-compaction', * FROM pk_changes('orders_full');
SELECT producer, snapshot_id, rowkind, "row" FROM streams;

-- what a naive downstream SUM(amount) GROUP BY store_id computes from each
-- stream: +I/+U add, -U/-D retract.  Without the -U, 100 is never taken back.
SELECT producer, ("row"->>'store_id')::bigint AS store_id,
	   sum(CASE WHEN rowkind IN ('+I', '+U') THEN ("row"->>'amount')::numeric
				ELSE -("row"->>'amount')::numeric END) AS downstream_total
FROM streams GROUP BY 1, 2 ORDER BY 3 DESC, 1;

-- one snapshot per commit
SELECT * FROM pk_snapshots('orders');
SELECT run_id, level, kind, record_count, min_key, max_key, created_snapshot FROM pk_runs('orders');
