# 041_pg_upgrade.pl: pg_upgrade from a PostgreSQL 15 cluster with pkmerge
# tables to a PostgreSQL 18 cluster keeps what the tables are for: every
# table's rows, its snapshots (ids, kinds, counts), its change stream from
# the oldest retained snapshot, a materialized aggregate and a consumer's
# position; and the upgraded cluster goes on from there (new snapshots
# after the old ids, the aggregate kept exact, the consumer reading exactly
# the changes made after the upgrade).  Tables of the four producers, with
# compactions and expired snapshots behind them.
#
# Runs under "make test PG=18", which installs the library into both
# servers and names the 15 installation in PK_UPGRADE_FROM: a 15 built from
# Debian's source package (15.18), as pg_upgrade from Debian 12's 15.20
# packages to 18.6 fails on any table, pkmerge or heap (every column of
# 15.20 carries a "pg_attver" option 18.6 rejects; doc/operations.md).
# Elsewhere the test is skipped, saying so.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $from = $ENV{PK_UPGRADE_FROM};
plan skip_all => 'pg_upgrade from PostgreSQL 15 runs under "make test PG=18" (PK_UPGRADE_FROM unset)'
  unless $from;

my $old = PostgreSQL::Test::Cluster->new('old15', install_path => $from);
my $new = PostgreSQL::Test::Cluster->new('new18');
is($old->pg_version->major, '15', 'the old cluster is PostgreSQL 15');
is($new->pg_version->major, '18', 'the new cluster is PostgreSQL 18');

# pg_upgrade wants the same checksum setting: 15 initializes without
$old->init;
$new->init(extra => ['--no-data-checksums']);
# output_plugin_libraries (test/pg_test.conf) came with 15.19
unless (`$from/bin/postgres --describe-config` =~ /^output_plugin_libraries\t/m)
{
	my $conf = $old->data_dir . '/postgresql.conf';
	my $text = slurp_file($conf);
	$text =~ s/^output_plugin_libraries\b.*$//mg;
	open my $fh, '>', $conf or die "cannot write $conf: $!";
	print $fh $text;
	close $fh;
}
$old->start;

$old->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE o_none (id bigint PRIMARY KEY, store int, amount numeric) USING pkmerge;
CREATE TABLE o_input (id bigint PRIMARY KEY, store int, amount numeric)
	USING pkmerge WITH (changelog_producer = 'input');
CREATE TABLE o_lookup (id bigint PRIMARY KEY, store int, amount numeric)
	USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE o_full (id bigint PRIMARY KEY, store int, amount numeric)
	USING pkmerge WITH (changelog_producer = 'full-compaction');
});
my @tables = qw(o_none o_input o_lookup o_full);
for my $t (@tables)
{
	$old->safe_psql('postgres', qq{
INSERT INTO $t SELECT g, g % 7, g FROM generate_series(1, 3000) g;
UPDATE $t SET amount = amount - 20 WHERE id % 5 = 0;
DELETE FROM $t WHERE id % 11 = 0;
INSERT INTO $t VALUES (5000, 3, 100);
UPDATE $t SET amount = 80 WHERE id = 5000;
SELECT pk_compact('$t');
UPDATE $t SET store = store + 1 WHERE id BETWEEN 100 AND 200;
});
}
$old->safe_psql('postgres', q{
SELECT pk_compact('o_full', true);
SELECT pk_materialize('totals', 'SELECT store, count(*) AS n, sum(amount) AS total,
	max(amount) AS hi FROM o_lookup GROUP BY store');
UPDATE o_lookup SET amount = amount + 1 WHERE id % 3 = 0;
SELECT count(*) FROM pk_consume('o_lookup', 'c1');
UPDATE o_lookup SET amount = amount * 2 WHERE id < 50;
});

# what each table must keep
my %before;
sub state_of
{
	my ($node, $t) = @_;
	return join("\n---\n",
		$node->safe_psql('postgres', "SELECT md5(string_agg(${t}::text, ',' ORDER BY id)), count(*) FROM $t"),
		$node->safe_psql('postgres',
			"SELECT snapshot_id, commit_kind, total_record_count, delta_record_count, changelog_record_count
			 FROM pk_snapshots('$t') ORDER BY snapshot_id"),
		$node->safe_psql('postgres',
			"SELECT md5(string_agg(snapshot_id || rowkind || \"row\"::text, ',' ORDER BY ordinality)), count(*)
			 FROM pk_changes('$t') WITH ORDINALITY"));
}
$before{$_} = state_of($old, $_) for @tables;
my $totals = $old->safe_psql('postgres', 'SELECT * FROM totals ORDER BY store');
my $position = $old->safe_psql('postgres',
	q{SELECT next_snapshot_id FROM pk_consumers('o_lookup') WHERE consumer_id = 'c1'});
my $pending = $old->safe_psql('postgres',
	q{SELECT count(*) FROM pk_changes('o_lookup', (SELECT next_snapshot_id - 1 FROM pk_consumers('o_lookup')))});
cmp_ok($pending, '>', 0, "the consumer has $pending changes to read");
my $version = $old->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'pkchangelog'});
$old->stop;

# the upgrade, from a directory pg_upgrade may write in
my $bindir = $new->config_data('--bindir');
my $tmp = PostgreSQL::Test::Utils::tempdir;
chdir $tmp or die "chdir $tmp: $!";
command_ok(
	[
		"$bindir/pg_upgrade", '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $old->config_data('--bindir'), '-B', $bindir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port,
		'--copy'
	],
	'pg_upgrade from 15 to 18');
$new->start;

is($new->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'pkchangelog'}),
	$version, "the extension's version as before");
for my $t (@tables)
{
	is(state_of($new, $t), $before{$t}, "$t: rows, snapshots and change stream as before");
}
is($new->safe_psql('postgres', 'SELECT * FROM totals ORDER BY store'), $totals, 'the aggregate as before');
is($new->safe_psql('postgres', q{SELECT count(*) FROM pk_reconcile('totals')}), '0', 'the aggregate is exact');
is($new->safe_psql('postgres',
	q{SELECT next_snapshot_id FROM pk_consumers('o_lookup') WHERE consumer_id = 'c1'}),
	$position, "the consumer's position as before");

# and on from there
for my $t (@tables)
{
	my $last = $new->safe_psql('postgres', "SELECT pk_current_snapshot('$t')");
	$new->safe_psql('postgres', qq{
UPDATE $t SET amount = 1 WHERE id = 5000;
DELETE FROM $t WHERE id = 1;
INSERT INTO $t VALUES (6000, 1, 60);
});
	my $next = $new->safe_psql('postgres', "SELECT min(snapshot_id) FROM pk_snapshots('$t') WHERE snapshot_id > $last");
	is($next, $last + 1, "$t: the next commit is snapshot " . ($last + 1));
	is($new->safe_psql('postgres', "SELECT amount FROM $t WHERE id = 5000"), '1', "$t: its rows");
}
is($new->safe_psql('postgres',
	q{SELECT string_agg(rowkind || ("row"->>'id') || ':' || ("row"->>'amount'), ' ' ORDER BY ordinality)
	  FROM pk_changes('o_lookup', pk_current_snapshot('o_lookup') - 3) WITH ORDINALITY}),
	'-U5000:80 +U5000:1 -D1:2 +I6000:60', 'o_lookup: the change stream goes on, with the update-before');
$new->safe_psql('postgres', q{SELECT pk_compact('o_full', true)});
is($new->safe_psql('postgres',
	q{SELECT string_agg(rowkind || (("row"->>'id')), ' ' ORDER BY rowkind, ("row"->>'id')::int)
	  FROM pk_changes('o_full', pk_current_snapshot('o_full') - 1)}),
	'+I6000 +U5000 -D1 -U5000', 'o_full: a full compaction after the upgrade produces the net changes');
is($new->safe_psql('postgres', q{SELECT count(*) FROM pk_reconcile('totals')}), '0',
	'the aggregate stays exact after new commits');
is($new->safe_psql('postgres', q{SELECT count(*) FROM pk_consume('o_lookup', 'c1')}),
	$pending + 4, 'the consumer reads what it had not read, and the new changes');

# a rename: the aggregate's query follows it (the row is this major's now)
$new->safe_psql('postgres', q{ALTER TABLE o_lookup RENAME COLUMN amount TO price});
like($new->safe_psql('postgres', q{SELECT query FROM pk_materializations WHERE name = 'totals'::regclass}),
	qr/sum\(price\)/, 'a rename after the upgrade: the query names the column anew');
is($new->safe_psql('postgres',
	q{UPDATE o_lookup SET price = price + 7 WHERE id % 4 = 0; SELECT count(*) FROM pk_reconcile('totals')}),
	'0', 'and the aggregate stays exact');

$new->stop;
done_testing();
