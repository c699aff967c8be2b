# 027_dump_materialize.pl: pg_dump and a restore keep materialized
# aggregates working.  Each aggregate carries its definition in its
# pk_materialized trigger, which a restore creates after every table's
# rows: the restored table is an aggregate again, computed from the
# restored source, and maintained by the next commits.  Checked on a
# lookup and a full-compaction source with every aggregate kind, after the
# source and a column were renamed (the trigger's arguments follow),
# restored with psql -f, pg_restore and pg_restore -j 2; the restored
# database dumps the same again.  Also: TRUNCATE of an aggregate is
# refused, DROP TRIGGER ends the maintenance, and an aggregate made at
# version 0.3 gets its trigger from ALTER EXTENSION UPDATE and survives a
# dump too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dumpmat');
$node->init;
$node->start;

$node->safe_psql('postgres', q{CREATE DATABASE src});
$node->safe_psql('src', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE orders (id bigint PRIMARY KEY, store_id int, region text, amount numeric)
	USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO orders SELECT g, g % 5, 'r' || g % 3, g FROM generate_series(1, 2000) g;
SELECT pk_materialize('totals', 'SELECT store_id, region, count(*) AS n, sum(amount) AS total,
	avg(amount) AS av, min(amount) AS lo, max(amount) AS hi FROM orders
	WHERE amount > 10 GROUP BY store_id, region');
SELECT pk_materialize('grand', 'SELECT count(*) AS n, max(amount) AS hi FROM orders');
CREATE TABLE events (k int PRIMARY KEY, kind text, v int)
	USING pkmerge WITH (changelog_producer = 'full-compaction');
INSERT INTO events SELECT g, 'k' || g % 4, g FROM generate_series(1, 500) g;
SELECT pk_materialize('by_kind', 'SELECT kind, sum(v) AS v, count(*) AS n FROM events GROUP BY kind');
ALTER TABLE orders RENAME COLUMN amount TO price;
ALTER TABLE orders RENAME TO sales;
ALTER TABLE totals_hi_values RENAME TO totals_top_values;
UPDATE sales SET price = price * 2, store_id = store_id + 1 WHERE id % 7 = 0;
DELETE FROM sales WHERE id % 11 = 0;
UPDATE events SET v = v + 1 WHERE k < 100;
});

my $trigger = $node->safe_psql('src',
	q{SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'totals'::regclass});
like($trigger, qr/FROM public\.sales/, 'the trigger names the renamed source');
like($trigger, qr/max\(price\)/, 'the trigger names the renamed column');
like($trigger, qr/'public\.totals_top_values'/, 'the trigger names the renamed value table');

my ($rc, $out, $err) = $node->psql('src', 'TRUNCATE totals');
like($err, qr/cannot TRUNCATE materialized aggregate "totals"/, 'TRUNCATE of an aggregate is refused');
($rc, $out, $err) = $node->psql('src', 'DROP INDEX totals_hi_values_store_id_region___pk_value_idx');
like($err, qr/trigger pk_materialized on table totals depends on index/,
	'the value table index the trigger needs cannot be dropped alone');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $plain = "$tmp/src.sql";
my $custom = "$tmp/src.dump";
$node->command_ok(['pg_dump', '-d', $node->connstr('src'), '-f', $plain], 'pg_dump (plain)');
$node->command_ok(['pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $custom], 'pg_dump (custom)');

my $aggregates = q{SELECT string_agg(name::text || ' of ' || source::text, ', ' ORDER BY name::text)
	FROM pk_materializations};
my $exact = q{SELECT string_agg(name::text || '=' || (SELECT count(*) FROM pk_reconcile(name::text)),
	' ' ORDER BY name::text) FROM pk_materializations};
my %expected = (
	aggregates => $node->safe_psql('src', $aggregates),
	totals     => $node->safe_psql('src', 'SELECT * FROM totals ORDER BY 1, 2'),
	grand      => $node->safe_psql('src', 'SELECT * FROM grand'));
is($expected{aggregates}, 'by_kind of events, grand of sales, totals of sales', 'three aggregates');
is($node->safe_psql('src', $exact), 'by_kind=0 grand=0 totals=0', 'the source database is exact');

my %restore = (
	plain    => ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $plain, '-d'],
	custom   => ['pg_restore', '--exit-on-error', $custom, '-d'],
	parallel => ['pg_restore', '--exit-on-error', '-j', '2', $custom, '-d']);
for my $db (sort keys %restore)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ @{ $restore{$db} }, $node->connstr($db) ], "$db: the dump restores");
	is($node->safe_psql($db, $aggregates), $expected{aggregates}, "$db: the aggregates are aggregates again");
	is($node->safe_psql($db, 'SELECT * FROM totals ORDER BY 1, 2'), $expected{totals},
		"$db: totals holds the source's groups");
	is($node->safe_psql($db, 'SELECT * FROM grand'), $expected{grand}, "$db: grand holds the source's row");
	is($node->safe_psql($db, $exact), 'by_kind=0 grand=0 totals=0', "$db: every aggregate is exact");
	$node->safe_psql($db, q{
		UPDATE sales SET price = price + 5, region = 'r9' WHERE id % 13 = 0;
		DELETE FROM sales WHERE price = (SELECT max(hi) FROM grand);
		INSERT INTO sales VALUES (5001, 2, 'r1', 7), (5002, 9, 'r0', 99999);
		UPDATE events SET kind = 'k9' WHERE k % 5 = 0;
		SELECT pk_compact('events', true);
	});
	is($node->safe_psql($db, $exact), 'by_kind=0 grand=0 totals=0',
		"$db: commits after the restore keep every aggregate exact");
	is($node->safe_psql($db, q{SELECT hi FROM grand}), '99999', "$db: max follows a new row");
}

# the restored database dumps the same definitions again
my $again = "$tmp/again.sql";
$node->command_ok(['pg_dump', '-s', '-d', $node->connstr('custom'), '-f', $again], 'pg_dump -s of a restored database');
my ($triggers_src) = join("\n", grep { /pk_materialized/ } split(/\n/, slurp_file($plain)));
my ($triggers_again) = join("\n", grep { /pk_materialized/ } split(/\n/, slurp_file($again)));
is($triggers_again, $triggers_src, 'a restored database dumps the same triggers');

# DROP TRIGGER ends the maintenance: the table stays, as a plain table
$node->safe_psql('custom', 'DROP TRIGGER pk_materialized ON by_kind');
is($node->safe_psql('custom', q{SELECT count(*) FROM pk_materializations WHERE name = 'by_kind'::regclass}),
	'0', 'DROP TRIGGER: by_kind is no aggregate any more');
my $before = $node->safe_psql('custom', 'SELECT sum(v) FROM by_kind');
$node->safe_psql('custom', q{UPDATE events SET v = v + 1000; SELECT pk_compact('events', true)});
is($node->safe_psql('custom', 'SELECT sum(v) FROM by_kind'), $before, 'DROP TRIGGER: no more maintenance');

# an aggregate made at version 0.3 gets its trigger from the update
$node->safe_psql('postgres', q{CREATE DATABASE old});
$node->safe_psql('old', q{
CREATE EXTENSION pkchangelog VERSION '0.3';
CREATE TABLE t (id int PRIMARY KEY, g int, v int) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, 100) i;
SELECT pk_materialize('t_sum', 'SELECT g, sum(v) AS s, min(v) AS lo FROM t GROUP BY g');
});
is($node->safe_psql('old', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 't_sum'::regclass}),
	'0', '0.3: an aggregate without a trigger');
$node->safe_psql('old', 'ALTER EXTENSION pkchangelog UPDATE');
like($node->safe_psql('old', q{SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 't_sum'::regclass}),
	qr/materialized_aggregate\('.*FROM public\.t\s.*', 'public\.t_sum_lo_values'\)/s,
	'the update gives it its trigger');
is($node->safe_psql('old', q{UPDATE t SET v = v * 3 WHERE id < 50; SELECT count(*) FROM pk_reconcile('t_sum')}),
	'0', 'updated: still maintained');
my $olddump = "$tmp/old.dump";
$node->command_ok(['pg_dump', '-Fc', '-d', $node->connstr('old'), '-f', $olddump], 'pg_dump of the updated database');
$node->safe_psql('postgres', q{CREATE DATABASE old_restored});
$node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr('old_restored'), $olddump],
	'it restores');
is($node->safe_psql('old_restored', q{DELETE FROM t WHERE id % 2 = 0; SELECT count(*) FROM pk_reconcile('t_sum')}),
	'0', 'restored: an aggregate, maintained');

$node->stop;
done_testing();
