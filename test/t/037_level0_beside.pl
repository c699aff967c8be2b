# 037_level0_beside.pl: writers keep level 0 small while a long compaction
# runs.  A compaction holds the table's compaction lock for as long as it
# merges (seconds, into the bottom level of a large table); writers at the
# stop trigger used to skip their compaction then, and level 0 grew by a
# run a commit until it ended.  Now a compaction gives up the level-0 lock
# once it has picked its inputs, and writers at the stop trigger merge the
# level-0 runs committed since, beside it.
#
# Two pkmerge tables of 300k rows (none, lookup); four pgbench clients
# add 1 to one row's amount in one of them and record that in a heap
# ledger in the same transaction, the background worker on.  Meanwhile a
# session runs full compactions of each table (pk_compact), three or more
# each.
# Checked: the level-0 runs each full compaction's switch leaves (those
# committed since its pick) are far fewer than the commits beside it: they
# were merged meanwhile; and, at the end, every row's amount its start plus its ledger
# count, snapshot ids dense, the catalog row naming exactly the data runs,
# the lookup stream a valid retract stream replaying to the table, the
# none stream one change per 1-row commit.
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

my $nkeys    = 300_000;
my %producer = (t_none => 'none', t_lookup => 'lookup');
my @tables   = sort keys %producer;

my $node = PkWorkload::ledger_node("level0_037_$$", q{
max_connections = 30
log_min_messages = warning
});
my %loaded;
for my $t (@tables)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, amount bigint, note text) USING pkmerge
	WITH (changelog_producer = '$producer{$t}');
INSERT INTO $t SELECT g, g * 10, 'row ' || g FROM generate_series(1, $nkeys) g;
SELECT pk_compact('$t', true);
});
	$loaded{$t} = $node->safe_psql('postgres', "SELECT pk_current_snapshot('$t')");
}

my $w = PkWorkload::start($node, 4, 600,
	PkWorkload::script_args($node, PkWorkload::ledger_scripts($nkeys, @tables)));

# wait until the workload has committed $n transactions in all
sub wait_commits
{
	my ($n) = @_;
	my $deadline = time() + 120;
	while (time() < $deadline)
	{
		return 1
		  if $node->safe_psql('postgres', 'SELECT count(*) FROM ledger') >= $n;
		usleep(100_000);
	}
	return 0;
}
ok(wait_commits(2000), 'the workload is committing');

my (%level0, %commits);
# rounds until each table had 400 commits beside its full compactions (at
# least three rounds, at most ten: a slower machine commits fewer in one)
for (my $round = 1; $round <= 10; $round++)
{
	last if $round > 3 && !grep { $commits{$_} < 400 } @tables;
	for my $t (@tables)
	{
		# the level-0 runs as the full compaction's switch left them: its
		# transaction holds the commit lock until it ends, so no commit or
		# merge comes between
		my $before = $node->safe_psql('postgres', "SELECT pk_current_snapshot('$t')");
		my $start  = time();
		my ($full, $l0) = split /\n/, $node->safe_psql('postgres', qq{
BEGIN;
SELECT pk_compact('$t', true);
SELECT count(*) FROM pk_runs('$t') WHERE kind = 'data' AND level = 0;
COMMIT;});
		my $took = time() - $start;
		my ($merges, $n) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE commit_kind = 'COMPACT'), count(*) FILTER (WHERE commit_kind = 'APPEND')
  FROM pk_snapshots('$t') WHERE snapshot_id > $before AND snapshot_id < $full});
		note(sprintf("round %d, %s: full compaction %.2f s; %d commits and %d merges "
				  . "beside it; %d level-0 runs at its switch", $round, $t, $took, $n, $merges, $l0));
		$level0{$t}  += $l0;
		$commits{$t} += $n;
	}
}
for my $t (@tables)
{
	# without merges beside it, every commit since its pick is a level-0 run
	cmp_ok($commits{$t}, '>=', 300, "$t: its full compactions had commits beside them");
	cmp_ok($level0{$t}, '<', $commits{$t} / 3,
		"$t: writers merged the level-0 runs committed while its full compactions ran");
}

PkWorkload::stop_clean($w, 'workload');

for my $t (@tables)
{
	my $p = $producer{$t};
	PkWorkload::check_ledger_table($node, $t, $p, $nkeys, $loaded{$t});
}

PkWorkload::check_log($node);

$node->stop;
done_testing();
