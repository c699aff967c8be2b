\echo '== Replication: the complete stream leaves the database'
\echo 'With wal_level = logical every snapshot''s changes are also written to WAL,'
\echo 'so PostgreSQL''s own logical replication carries them.  A lookup table is'
\echo 'published; a subscription in a second database (standing in for another'
\echo 'server) applies it to an ordinary heap table, whose row trigger keeps a'
\echo 'total per store: add NEW.amount, subtract OLD.amount.  A second trigger'
\echo 'does what a consumer of a stream without -U can do: add NEW.amount only.'
CREATE TABLE orders_repl (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(10,2))
	USING pkmerge WITH (changelog_producer = 'lookup');
CREATE PUBLICATION demo_pub FOR TABLE orders_repl;
SELECT 'slot created' FROM pg_create_logical_replication_slot('demo_sub', 'pgoutput');
CREATE DATABASE downstream;
\c downstream
CREATE TABLE orders_repl (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(10,2));
CREATE TABLE store_totals (store_id bigint PRIMARY KEY, total numeric NOT NULL);
CREATE TABLE store_totals_naive (store_id bigint PRIMARY KEY, total numeric NOT NULL);
CREATE FUNCTION track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO public.store_totals AS t VALUES (OLD.store_id, -OLD.amount)
		ON CONFLICT (store_id) DO UPDATE SET total = t.total + EXCLUDED.total;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO public.store_totals AS t VALUES (NEW.store_id, NEW.amount)
		ON CONFLICT (store_id) DO UPDATE SET total = t.total + EXCLUDED.total;
		INSERT INTO public.store_totals_naive AS t VALUES (NEW.store_id, NEW.amount)
		ON CONFLICT (store_id) DO UPDATE SET total = t.total + EXCLUDED.total;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER track AFTER INSERT OR UPDATE OR DELETE ON orders_repl
	FOR EACH ROW EXECUTE FUNCTION track();
ALTER TABLE orders_repl ENABLE ALWAYS TRIGGER track;
CREATE SUBSCRIPTION demo_sub CONNECTION :'conninfo' PUBLICATION demo_pub
	WITH (create_slot = false, slot_name = 'demo_sub', copy_data = false);

\c postgres
\echo
\echo 'The incident, on the source: 100, then 80.'
INSERT INTO orders_repl VALUES (1001, 10, 100.00);
UPDATE orders_repl SET amount = 80.00 WHERE order_id = 1001;

\c downstream
\echo
\echo 'Downstream, once the subscription has applied both transactions:'
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		PERFORM 1 FROM orders_repl WHERE order_id = 1001 AND amount = 80.00;
		EXIT WHEN FOUND;
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT * FROM orders_repl;
\echo 'The UPDATE arrived with its old row (-U 100, +U 80): the trigger took 100'
\echo 'back and added 80.  The naive total, fed the new value only, shows 180.'
SELECT t.store_id, t.total AS total_with_retraction, n.total AS naive_total
FROM store_totals t JOIN store_totals_naive n USING (store_id);
ALTER SUBSCRIPTION demo_sub DISABLE;
ALTER SUBSCRIPTION demo_sub SET (slot_name = NONE);
DROP SUBSCRIPTION demo_sub;
\c postgres
SELECT 'slot dropped' FROM pg_drop_replication_slot('demo_sub');

\echo
\echo 'The same changes through the pkchangelog output plugin, as RowKinds:'
SELECT 'slot created' FROM pg_create_logical_replication_slot('demo_rowkinds', 'pkchangelog');
UPDATE orders_repl SET amount = 75.00 WHERE order_id = 1001;
SELECT data FROM pg_logical_slot_get_changes('demo_rowkinds', NULL, NULL, 'skip-empty-xacts', '1');
UPDATE orders_repl SET amount = 70.00 WHERE order_id = 1001;
SELECT data FROM pg_logical_slot_get_changes('demo_rowkinds', NULL, NULL, 'format', 'json', 'skip-empty-xacts', '1');
SELECT 'slot dropped' FROM pg_drop_replication_slot('demo_rowkinds');
