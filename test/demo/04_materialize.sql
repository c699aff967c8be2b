\echo '== A materialized aggregate, kept in the writing transaction'
\echo 'pk_materialize creates a heap table equal to an aggregate query of a'
\echo 'pkmerge table and keeps it equal: every commit applies its changes to it'
\echo 'in the same transaction, -U and -D subtracting.  Here SUM(amount) per'
\echo 'store of a lookup table lives through the 100 -> 80 update.'
CREATE TABLE orders_live (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'lookup');
SELECT pk_materialize('store_sales',
	'SELECT store_id, sum(amount) AS total, count(*) AS orders, max(amount) AS largest
	 FROM orders_live GROUP BY store_id');
INSERT INTO orders_live VALUES (1001, 10, 100);
SELECT store_id, total, orders, largest FROM store_sales;
UPDATE orders_live SET amount = 80 WHERE order_id = 1001;
\echo 'After the update: the aggregate holds 80; the naive sum of the none'
\echo 'stream (no -U) holds 180.'
SELECT s.store_id, s.total AS aggregate_total,
	(SELECT sum(("row"->>'amount')::numeric) FROM pk_changes('orders_none')) AS naive_none_total
FROM store_sales s;
\echo 'A second order, then the largest one deleted: max falls back to the next'
\echo 'value without reading the orders table again.'
INSERT INTO orders_live VALUES (1002, 10, 30);
DELETE FROM orders_live WHERE order_id = 1001;
SELECT store_id, total, orders, largest FROM store_sales;
\echo 'pk_reconcile compares the aggregate with its query run now: no rows, exact.'
SELECT * FROM pk_reconcile('store_sales');
SELECT name, source, exact_as_of FROM pk_materializations;
