# 019_commit_lock_order.pl: transactions that write the same pkmerge tables
# in opposite orders commit side by side without deadlocks (DESIGN §4).
# Each table's commit takes its commit lock, and a commit that compacts at
# the stop trigger takes it for the compaction's switch first: a commit takes
# the locks of its tables in relid order, whatever order it wrote them in.
# Taken in the order of first writes, two such commits each held one lock
# and waited for the other's, and the deadlock detector failed one of them
# (3 or 4 of every 5 transactions here).  The tables have a low stop
# trigger, so writers compact before committing all the time.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('order');
$node->init;
$node->append_conf('postgresql.conf', "deadlock_timeout = '100ms'");
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE da (k int PRIMARY KEY, n int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, num_sorted_run_stop_trigger = 3);
CREATE TABLE db (k int PRIMARY KEY, n int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, num_sorted_run_stop_trigger = 3);
CREATE TABLE ledger (k int, n int);
});

# every transaction writes one key into both tables, in one order or the
# other, and logs it in a heap table
sub script
{
	return "\\set k random(1, 200)\nBEGIN;\n"
	  . join('', map { "INSERT INTO $_ VALUES (:k, :client_id);\n" } @_, 'ledger')
	  . "COMMIT;\n";
}

$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=300',
	0,
	[qr{processed: 1200/1200}, qr{number of failed transactions: 0 }],
	[qr{^$}],
	'opposite write orders commit without deadlocks',
	{ '019_ab' => script('da', 'db'), '019_ba' => script('db', 'da') });

is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_snapshots('da') WHERE commit_kind = 'APPEND'}),
	'1200', 'da: one APPEND snapshot per transaction');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM pk_snapshots('da') WHERE commit_kind = 'COMPACT'}),
	'>', 0, 'writers compacted before committing');
# both tables hold, per key, the client of the last commit that wrote it:
# the same in both, since each commit wrote both
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM da FULL JOIN db USING (k)
	WHERE da.n IS DISTINCT FROM db.n}),
	'0', 'both tables agree on every key');
is($node->safe_psql('postgres', q{SELECT count(*) FROM da}),
	$node->safe_psql('postgres', q{SELECT count(DISTINCT k) FROM ledger}),
	'every key written is there');
$node->log_check('no deadlock detected', 0,
	log_unlike => [qr/deadlock detected/, qr/PANIC|TRAP:/]);

done_testing();
