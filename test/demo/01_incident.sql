-- pkchangelog demo: the 100 -> 80 -> 180 incident, told by its \echo lines
-- (make demo runs it with the statements echoed).
\pset footer off
\echo
\echo '== The incident'
\echo 'Order 1001 of store 10 is placed at 100, then changed to 80.  A downstream'
\echo 'job keeps SUM(amount) GROUP BY store_id from the table''s change stream: it'
\echo 'adds the rows of +I (insert) and +U (update-after) records and subtracts'
\echo 'those of -U (update-before) and -D (delete).  A stream that carries the new'
\echo 'value (+U 80) but not the retraction of the old one (-U 100) makes that sum'
\echo '100 + 80 = 180, while the table holds 80.'
\echo
\echo 'Four pkmerge tables differ only in changelog_producer, the option that'
\echo 'decides how complete their stream is; each is named after its producer.'
CREATE EXTENSION pkchangelog;

CREATE TABLE orders_none (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'none');
CREATE TABLE orders_input (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'input');
CREATE TABLE orders_lookup (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE orders_full_compaction (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
	USING pkmerge WITH (changelog_producer = 'full-compaction');

\echo
\echo '== Transaction 1: the order is placed'
\echo 'Each committing transaction is one snapshot of the table it wrote: these'
\echo 'INSERTs are snapshot 1 of each table.'
INSERT INTO orders_none VALUES (1001, 10, 100);
INSERT INTO orders_input VALUES (1001, 10, 100);
INSERT INTO orders_lookup VALUES (1001, 10, 100);
INSERT INTO orders_full_compaction VALUES (1001, 10, 100);
\echo
\echo 'full-compaction produces its changes only when a full compaction commits'
\echo '(every full_compaction_delta_commits commits in the background worker,'
\echo 'here on demand).  A compaction is a snapshot too: pk_compact returns its'
\echo 'id, 2.'
SELECT pk_compact('orders_full_compaction', true) AS compaction_snapshot;

\echo
\echo '== Transaction 2: the amount changes to 80'
\echo 'Snapshot 2 of the first three tables; snapshot 3 of orders_full_compaction,'
\echo 'whose next full compaction is snapshot 4.'
UPDATE orders_none SET amount = 80 WHERE order_id = 1001;
UPDATE orders_input SET amount = 80 WHERE order_id = 1001;
UPDATE orders_lookup SET amount = 80 WHERE order_id = 1001;
UPDATE orders_full_compaction SET amount = 80 WHERE order_id = 1001;
SELECT pk_compact('orders_full_compaction', true) AS compaction_snapshot;

\echo
\echo '== Every table holds 80'
SELECT 'none' AS producer, * FROM orders_none
UNION ALL SELECT 'input', * FROM orders_input
UNION ALL SELECT 'lookup', * FROM orders_lookup
UNION ALL SELECT 'full-compaction', * FROM orders_full_compaction;

\echo
\echo '== The change streams, as pk_changes returns them'
\echo 'none:            each commit''s data as written: +I 100, then +U 80.  No -U:'
\echo '                 nothing looked for the row the UPDATE replaced.'
\echo 'input:           what the writers handed over.  A SQL UPDATE hands over the'
\echo '                 old row too, so -U 100 +U 80 (an upserting INSERT would'
\echo '                 give +I 80 alone).'
\echo 'lookup:          at each commit, the row each written key had is looked up:'
\echo '                 -U 100 +U 80, whatever the writer handed over.'
\echo 'full-compaction: at each full compaction, each key written since the'
\echo '                 previous one, its value then against its value now; the'
\echo '                 changes belong to the compactions'' snapshots, 2 and 4.'
CREATE TEMP VIEW streams AS
	SELECT * FROM pk_changes('orders_none')
	UNION ALL SELECT * FROM pk_changes('orders_input')
	UNION ALL SELECT * FROM pk_changes('orders_lookup')
	UNION ALL SELECT * FROM pk_changes('orders_full_compaction');
SELECT producer, snapshot_id, rowkind, "row" FROM streams;

\echo
\echo '== What the downstream SUM computes from each stream'
\echo 'none: +100 (+I) +80 (+U) = 180, the incident: the 100 is never taken back.'
\echo 'The others: +100 -100 +80 = 80, what the table holds.'
SELECT producer, ("row"->>'store_id')::bigint AS store_id,
	   sum(CASE WHEN rowkind IN ('+I', '+U') THEN ("row"->>'amount')::numeric
				ELSE -("row"->>'amount')::numeric END) AS downstream_total
FROM streams GROUP BY 1, 2 ORDER BY 3 DESC, 1;

\echo
\echo '== Snapshots and runs of orders_lookup'
\echo 'total_record_count counts the records in the table''s live data runs.  Each'
\echo 'commit wrote its own run, so after snapshot 2 key 1001 is in two runs and'
\echo 'counts twice (2, for a one-row table) until a compaction merges them.'
\echo 'delta_record_count: the records the commit wrote (one per key);'
\echo 'changelog_record_count: the records of the changelog run it made (+I; -U +U).'
SELECT snapshot_id, commit_kind, commit_user, total_record_count, delta_record_count,
	   changelog_record_count
FROM pk_snapshots('orders_lookup');
\echo
\echo 'The runs: a data run per commit (what queries read) and a changelog run per'
\echo 'commit (what pk_changes reads), all at level 0 until compacted.  Run ids'
\echo 'are numbered across the database''s tables.'
SELECT run_id, level, kind, record_count, min_key, max_key, created_snapshot FROM pk_runs('orders_lookup');

\echo
\echo '== Snapshots of orders_full_compaction'
\echo 'APPEND 1 and 3 are the two transactions, COMPACT 2 and 4 the full'
\echo 'compactions, which carry the changes (+I; then -U +U).  On a COMPACT'
\echo 'snapshot, total_record_count is the records left in the data runs after'
\echo 'the merge (1) and delta_record_count the records the compaction wrote (1).'
SELECT snapshot_id, commit_kind, total_record_count, delta_record_count,
	   changelog_record_count
FROM pk_snapshots('orders_full_compaction');
