# 038_writer_compaction.pl: a writer's compaction at the stop trigger has
# level-0 merges beside it, as the worker's has (t/037).  A writer whose
# commit would reach the stop trigger compacts first, taking the
# compaction lock and the level-0 lock without waiting; once it has picked
# its inputs it gives the level-0 lock up, so that the writers committing
# meanwhile merge the level-0 runs committed since its pick instead of
# piling them up for as long as its merge runs.
#
# With the background worker off, two pkmerge tables (none, lookup) are
# loaded in six commits of 100k rows each (six level-0 runs), then made to
# compact at two sorted runs (the stop trigger at five): every 1-row
# commit after that is at the stop trigger, and the first writer to take
# the compaction lock merges all six runs into the bottom level (size
# amplification), which takes a while.  Four pgbench clients add 1 to one
# row's amount in one of the tables and record that in a heap ledger.
# Checked: COMPACT snapshots came before that merge's own, which only
# merges beside it can make (no other compaction can run while it holds
# the compaction lock, and none ran before it); then every row's amount
# its start plus its ledger count, snapshot ids dense, the catalog row
# naming exactly the data runs, the streams.
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

my $part     = 100_000;
my $nkeys    = 6 * $part;
my %producer = (t_none => 'none', t_lookup => 'lookup');
my @tables   = sort keys %producer;

my $node = PkWorkload::ledger_node("writer_compaction_038_$$", q{
pkchangelog.worker_enabled = off
max_connections = 30
log_min_messages = warning
});
my %loaded;
for my $t (@tables)
{
	# loaded without reaching any trigger, then triggers that six runs pass
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, amount bigint, note text) USING pkmerge
	WITH (changelog_producer = '$producer{$t}', num_sorted_run_compaction_trigger = 20);});
	for my $i (0 .. 5)
	{
		my ($from, $to) = ($i * $part + 1, ($i + 1) * $part);
		$node->safe_psql('postgres', qq{
INSERT INTO $t SELECT g, g * 10, 'row ' || g FROM generate_series($from, $to) g;});
	}
	$node->safe_psql('postgres', qq{
ALTER TABLE $t SET (num_sorted_run_compaction_trigger = 2);});
	is($node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE level = 0) || '/' || count(*)
  FROM pk_runs('$t') WHERE kind = 'data'}), '6/6', "$t: six level-0 runs loaded");
	$loaded{$t} = $node->safe_psql('postgres', "SELECT pk_current_snapshot('$t')");
}

my $w = PkWorkload::start($node, 4, 600,
	PkWorkload::script_args($node, PkWorkload::ledger_scripts($nkeys, @tables)));

# the snapshot of $t's first merge into the bottom level, once it is there
sub bottom_merge
{
	my ($t) = @_;
	return $node->safe_psql('postgres', qq{
SELECT coalesce(min(snapshot_id), 0) FROM pk_snapshots('$t')
 WHERE snapshot_id > $loaded{$t} AND commit_kind = 'COMPACT'
   AND delta_record_count >= $nkeys});
}
my %bottom;
my $deadline = time() + 180;
while (time() < $deadline && grep { !$bottom{$_} } @tables)
{
	$bottom{$_} ||= bottom_merge($_) for @tables;
	usleep(200_000);
}
# commits and merges after it as well, for the checks below
my $after = $node->safe_psql('postgres', 'SELECT count(*) FROM ledger') + 2000;
$deadline = time() + 60;
usleep(100_000)
  while time() < $deadline
  && $node->safe_psql('postgres', 'SELECT count(*) FROM ledger') < $after;

PkWorkload::stop_clean($w, 'workload');

for my $t (@tables)
{
	my $p = $producer{$t};
	ok($bottom{$t}, "$t: a writer merged the six runs into the bottom level");
	my ($merges, $commits) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE commit_kind = 'COMPACT'), count(*) FILTER (WHERE commit_kind = 'APPEND')
  FROM pk_snapshots('$t') WHERE snapshot_id > $loaded{$t} AND snapshot_id < $bottom{$t}});
	note("$t: $commits commits and $merges merges before the bottom merge's switch");
	cmp_ok($merges, '>', 0,
		"$t: writers merged level-0 runs beside the writer's merge into the bottom level");

	PkWorkload::check_ledger_table($node, $t, $p, $nkeys, $loaded{$t});
}

PkWorkload::check_log($node);

$node->stop;
done_testing();
