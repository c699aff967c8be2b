# 020_template_databases.pl: tables of databases copied from one template
# share their relids and relfilenodes; the shared-memory hints that place
# new runs (where a table's file ends, whether it has gaps) must still be
# each database's own.  A template holds a pkmerge table; two databases
# are made from it; writes, a compaction and VACUUM in one, then writes in
# the other, in turns.  No run may be placed over another's blocks, and
# every row of both reads back right, by scans and by key lookups.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('templates');
$node->init;
# nothing but the test's own statements moves the hints
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;

my $val = q{md5(g::text) || md5((g + 1)::text)};
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE t (id int PRIMARY KEY, v text) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO t SELECT g, $val FROM generate_series(1, 2000) g;
});
$node->safe_psql('postgres', 'CREATE DATABASE d1 TEMPLATE tmpl');
$node->safe_psql('postgres', 'CREATE DATABASE d2 TEMPLATE tmpl');
my $ident = q{SELECT 't'::regclass::oid, pg_relation_filenode('t')};
is($node->safe_psql('d1', $ident), $node->safe_psql('d2', $ident),
	'the copies of the table have the same relid and relfilenode');

# the keys each database holds, as ranges of generate_series
my %keys = (d1 => [ [ 1, 2000 ] ], d2 => [ [ 1, 2000 ] ]);

sub write_rows
{
	my ($db, $lo, $hi) = @_;
	$node->safe_psql($db, qq{INSERT INTO t SELECT g, $val FROM generate_series($lo, $hi) g});
	push @{ $keys{$db} }, [ $lo, $hi ];
}

# the runs of one database that overlap another of its runs
sub overlaps
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
SELECT count(*) FROM pkchangelog.runs a JOIN pkchangelog.runs b
  ON a.relid = b.relid AND a.run_id < b.run_id AND a.relfilenode = b.relfilenode
 AND a.start_block < b.start_block + b.nblocks AND b.start_block < a.start_block + a.nblocks
WHERE a.relid = 't'::regclass});
}

sub check
{
	my ($label) = @_;
	for my $db (qw(d1 d2))
	{
		my $expect = join ' UNION ', map { "SELECT g FROM generate_series($_->[0], $_->[1]) g" } @{ $keys{$db} };
		my $want = $node->safe_psql($db, qq{
SELECT count(*), md5(string_agg(g || ':' || $val, ',' ORDER BY g)) FROM ($expect) k(g)});
		my ($ret, $got, $err) = $node->psql($db,
			q{SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t});
		is($got, $want, "$label: $db: a scan returns exactly its rows") or diag($err);
		($ret, $got, $err) = $node->psql($db, qq{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM ($expect) k(g) WHERE (SELECT v FROM t WHERE id = g) IS DISTINCT FROM $val});
		is($got, '0', "$label: $db: a key lookup of every row finds it") or diag($err);
		is(overlaps($db), '0', "$label: $db: no run overlaps another");
	}
}

# d2 appends a large run; d1's small commit must not make d2's next run
# start where d1's file ends
write_rows('d2', 10001, 30000);
write_rows('d1', 5001, 5010);
write_rows('d2', 30001, 30500);
check('commits in turn');

# one database compacts and VACUUMs (which truncates its file and notes
# its end and gaps); the other writes next, a large run first
for my $turn ([ 'd1', 'd2', 40001 ], [ 'd2', 'd1', 70001 ])
{
	my ($vacuumed, $other, $k) = @$turn;
	$node->safe_psql($vacuumed, q{SELECT pk_compact('t', true)});
	$node->safe_psql($vacuumed, 'VACUUM t');
	write_rows($other, $k, $k + 19999);
	write_rows($vacuumed, $k + 20000, $k + 20499);
	write_rows($other, $k + 30000, $k + 30499);
	check("after VACUUM in $vacuumed");
}

unlike(slurp_file($node->logfile), qr/PANIC|TRAP:|terminated by signal/,
	'no PANIC, assertion failure or crash in the log');
$node->stop;
done_testing();
