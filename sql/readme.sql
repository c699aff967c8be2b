-- readme.sql: the SQL of README.md's "Using it", run as written in a
-- fresh database where the extension was just created, as the README's
-- install section leaves it (t/003_docs.pl checks that the README's blocks
-- are the ones below and its outputs the ones in expected/readme.out).
CREATE DATABASE regress_readme;
\c regress_readme
CREATE EXTENSION pkchangelog;

CREATE TABLE orders (order_id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2))
    USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO orders VALUES (1001, 10, 100);          -- an upsert: no unique violation
UPDATE orders SET amount = 80 WHERE order_id = 1001;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('orders');   -- the change stream
SELECT snapshot_id, rowkind, "row" FROM pk_changes('orders', 1); -- after snapshot 1

SELECT pk_compact('orders', true);                  -- merge the runs now
SELECT snapshot_id, commit_kind, total_record_count, delta_record_count,
       changelog_record_count FROM pk_snapshots('orders');
SELECT run_id, level, kind, record_count, created_snapshot FROM pk_runs('orders');
SELECT commits, compactions, runs_per_level, runs_per_kind FROM pk_stats('orders');

\c contrib_regression
DROP DATABASE regress_readme;
