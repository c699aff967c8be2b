# 028_small_commits.pl: eight clients of 1-row commits, the background
# worker compacting (small runs merged among themselves) and reclaiming
# space as deployed, and immediate stops in the middle: nothing is lost or
# half-committed, and the small-commit storage holds up.
#
# Three pkmerge tables of 2000 rows (none, input, lookup, default
# compaction options: their 1-row runs are small beside the loaded run).
# Every pgbench transaction adds 1 to one row's amount in one table and
# records that in a heap ledger in the same transaction.  So after any
# crash, each row's amount minus its start value equals its ledger count:
# a commit is in both or in neither.  The server is stopped with
# "immediate" twice in the middle of the workload.  After each restart and
# at the end: the ledger check; snapshot ids dense; each table's catalog
# row names exactly its data runs; the lookup and input streams valid
# retract streams replaying to the table (check_changelog); the none
# stream one record per retained 1-row commit (its deltas, most of them
# in their catalog rows); and at the end, small runs merged among
# themselves while written, and the file no larger than its runs' pages
# plus what the worker has not reclaimed yet; and a session that reads a
# table throughout keeps the run indexes of its live runs, not of every
# run it saw.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;
use PkWorkload;
use Time::HiRes qw(usleep time);

my $nclients = 8;
my $nkeys    = 2000;
my %producer = (t_none => 'none', t_input => 'input', t_lookup => 'lookup');
my @tables   = sort keys %producer;

my $node = PkWorkload::ledger_node("small028_$$", q{
pkchangelog.worker_naptime = 50ms
max_connections = 40
log_min_messages = warning
});
for my $t (@tables)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, amount bigint, note text) USING pkmerge
	WITH (changelog_producer = '$producer{$t}');
INSERT INTO $t SELECT g, g * 10, 'row ' || g FROM generate_series(1, $nkeys) g;
});
}
my $loaded = $node->safe_psql('postgres',
	q{SELECT max(snapshot_id) FROM pk_snapshots('t_none')});

my ($scripts, $weights) = PkWorkload::ledger_scripts($nkeys, @tables);
my @fileargs = PkWorkload::script_args($node, $scripts, $weights);

sub ncommits
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM ledger');
}

# wait until the workload has committed $n more transactions
sub wait_commits
{
	my ($n)      = @_;
	my $before   = ncommits();
	my $deadline = time() + 60;
	my $c        = $before;
	while (time() < $deadline)
	{
		$c = ncommits();
		last if $c >= $before + $n;
		usleep(100_000);
	}
	return $c - $before;
}

sub check_all
{
	my ($label) = @_;
	PkWorkload::check_ledger_table($node, $_, $producer{$_}, $nkeys, $loaded, $label)
	  for @tables;
	return;
}

for my $round (1 .. 2)
{
	my $w = PkWorkload::start($node, $nclients, 60, @fileargs);
	cmp_ok(wait_commits(1500), '>=', 1500, "run $round: the workload is committing");
	$node->stop('immediate');
	my $errs = PkWorkload::finish($w, "run $round");
	is(scalar(@$errs), 0, "run $round: pgbench saw no errors other than the lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	$node->start;
	check_all("after immediate stop $round");
}

# the workload to its end; the worker reclaims the space of compacted
# runs meanwhile, so the files grow by far less than a page per commit
# (each commit writes one, and each merge of small runs another)
my %pages_before = map {
	$_ => $node->safe_psql('postgres', "SELECT pg_relation_size('$_') / 8192")
} @tables;
my $commits_before = ncommits();
{
	# beside it, a session reading one table throughout: it loads the
	# index of every run the commits and the worker add, and drops those
	# of the runs they replace as it sees them go, so that its cache's
	# hash table holds about the table's live runs, not one entry per
	# commit (which made every probe of it a cache miss)
	my $reader = $node->background_psql('postgres');
	my $w = PkWorkload::start($node, $nclients, 5, @fileargs);
	$reader->query_safe(q{
DO $$
BEGIN
	FOR i IN 1..2000 LOOP
		PERFORM amount FROM t_none WHERE id = i;
		PERFORM pg_sleep(0.001);
	END LOOP;
END $$});
	my $errs = PkWorkload::finish($w, 'run 3');
	ok($w->{ok}, 'run 3: pgbench exits normally') or diag(${ $w->{err} });
	is(scalar(@$errs), 0, 'run 3: pgbench saw no errors');
	my ($entries_bytes, $seen) = split /\|/, $reader->query_safe(q{
WITH c AS (SELECT * FROM pg_backend_memory_contexts
		   WHERE name = 'pkmerge run index cache')
SELECT (SELECT total_bytes FROM c  -- the child of the context of that name
		 WHERE level = (SELECT min(level) FROM c) + 1),
	   (SELECT count(*) FROM pk_snapshots('t_none') WHERE commit_kind = 'APPEND')});
	cmp_ok($entries_bytes, '<', 64 * 1024,
		"a session reading t_none beside its commits keeps a small run index table "
		  . "($entries_bytes bytes; $seen commits of t_none so far)");
	$reader->quit;
}
my $run3 = ncommits() - $commits_before;
for my $t (@tables)
{
	my $grown = $node->safe_psql('postgres', "SELECT pg_relation_size('$t') / 8192") - $pages_before{$t};
	# a third of the commits are this table's
	cmp_ok($grown, '<', $run3 / 3 / 4,
		"$t: the file grew $grown pages over about " . int($run3 / 3) . " commits: space is reused");
}
check_all('at the end');

for my $t (@tables)
{
	# small runs were merged into level 0 while the table was written
	cmp_ok($node->safe_psql('postgres', qq{
SELECT count(*) FROM pk_snapshots('$t') WHERE commit_kind = 'COMPACT'}), '>=', 1,
		"$t: compacted while written");
	is($node->safe_psql('postgres', qq{
SELECT count(*) FROM pk_runs('$t') WHERE kind = 'data' AND level = 5}), '1',
		"$t: the loaded run stayed at the bottom, beside the small runs' merges");
}
# a small commit's data run (retained as a delta) and changelog run are
# in its commit log record, with no row of their own
cmp_ok($node->safe_psql('postgres', q{
SELECT count(data_seq) FROM pkchangelog.log_snapshots('t_none')}),
	'>', 100, 't_none: small commits\' runs (retained deltas) are in their commit log records');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pkchangelog.runs WHERE relid = 't_none'::regclass AND from_commit
   AND nblocks = 0}), '0', 't_none: no small commit\'s run has a row of its own');
cmp_ok($node->safe_psql('postgres', q{
SELECT count(changelog_run_id) FROM pkchangelog.log_snapshots('t_lookup')}),
	'>', 100, 't_lookup: small changelog runs are in their commit log records');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pkchangelog.runs WHERE relid = 't_lookup'::regclass AND kind = 'changelog'
   AND nblocks = 0}), '0', 't_lookup: no small changelog run has a row of its own');

my $log = slurp_file($node->logfile);
my @bad = grep { /PANIC|TRAP:|terminated by signal|ERROR:.*pkchangelog/ } split /\n/, $log;
is(join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]), '',
	'no PANIC, assertion failure, crash or worker error in the server log');

$node->stop;
done_testing();
