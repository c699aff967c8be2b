# 030_fuzz.pl: the randomized differential test of test/fuzz (design at the
# top of test/fuzz/PkFuzz.pm) with a fixed seed and a fixed number of
# transactions (about two minutes here): random transactions of every kind
# of write against pkmerge tables of every producer and every key shape
# (keys equal but not identical too: numeric scales, a nondeterministic
# ICU collation, float8 0 and -0) and their heap twins;
# after each one the contents and a few queries must agree, every few the
# change streams must replay to the tables, and the server log must show
# no crash; now and then the server is shut down in immediate mode and
# started again, its recovery checking every page the extension's WAL
# records rebuild against the page as logged (wal_consistency_checking).  Deterministic: the background worker and autovacuum are
# off, and the statements depend on the seed alone.  On a failure the test
# prints the failing check and a minimal reproduction (a psql script).
# FUZZ_AVOID (see PkFuzz.pm) can be set to look past a known defect; by
# default every operation class is generated.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../fuzz";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PkFuzz;

my $seed = 16;
my $ntxn = 2500;

my $node = PostgreSQL::Test::Cluster->new('fuzz030');
$node->init;
$node->append_conf('postgresql.conf', q{
autovacuum = off
restart_after_crash = on
wal_consistency_checking = 'pkchangelog'
});
$node->start;

my @out;
my %avoid = map { $_ => 1 } grep { length } split /,/, ($ENV{FUZZ_AVOID} // '');
my $res = PkFuzz::run(
	host           => $node->host,
	port           => $node->port,
	user           => scalar(getpwuid($<)),
	seed           => $seed,
	txns           => $ntxn,
	logfile        => $node->logfile,
	reduce_seconds => 120,
	script_dir     => $PostgreSQL::Test::Utils::tmp_check,
	avoid          => \%avoid,
	restart        => sub { $node->stop('immediate'); $node->start; },
	say            => sub { push @out, $_[0]; note($_[0]); });

ok(!$res->{failure}, "seed $seed: $res->{txns} transactions, pkmerge agrees with heap"
	  . (%avoid ? ' (FUZZ_AVOID=' . join(',', sort keys %avoid) . ')' : ''))
  or diag(join("\n", grep { !/^  t\d/ } @out));
# the run exercised what it is meant to (a change of generator weights or
# of the seed must keep these up)
if (!$res->{failure} && !%avoid)
{
	is($res->{txns}, $ntxn, "all $ntxn transactions ran");
	my $ops = $res->{stats}{ops};
	for my $op (qw(insert bulk onc_update onc_nothing update keyupdate shift cte_move delete merge copy truncate
		cursor ddl prepared restart switch fail_divzero fail_merge fail_onc fail_ddl))
	{
		cmp_ok($ops->{$op} // 0, '>', 0, "operation $op ran");
	}
	cmp_ok($res->{stats}{changes}, '>', 1000, 'the change streams were replayed');
	cmp_ok($res->{stats}{overwrites}, '>', 0, 'TRUNCATEs in the streams were checked against the replay');
	cmp_ok($res->{stats}{expected_errors}, '>', 10, 'statements failing on purpose failed alike');
}

$node->stop;
done_testing();
