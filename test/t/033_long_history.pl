# 033_long_history.pl: a table with a long history of small commits (a
# consumer's backlog: 100,000 retained 1-row commits, each a record of the
# table's commit log) is read in bounded memory.  pk_changes over the
# whole range and pk_runs read the retained snapshots a batch at a time,
# and a small run read once keeps its index out of the backend's cache;
# read whole, they took up to 1 kB of a backend's memory per retained
# commit, growing with the history (46 and 104 MB of private memory for
# this table).  Each query runs in a fresh backend with
# log_statement_stats on, whose "max resident size" is the backend's peak
# resident set (shared buffers it touched included: 16 MB at most here;
# about 38 MB in all now, 13 MB for SELECT 1).  The answers are checked
# too: every commit's change, every commit's run.
use strict;
use warnings;
use List::Util qw(max);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $commits = 100_000;
my $limit_kb = 48 * 1024;

my $node = PostgreSQL::Test::Cluster->new('long_history');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_buffers = 16MB
log_min_messages = log
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE lh (k int PRIMARY KEY, v int) USING pkmerge;
CREATE PROCEDURE lh_commits(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		INSERT INTO lh VALUES (i % 1000, i);
		COMMIT;
	END LOOP;
END $$;
});
$node->safe_psql('postgres', "SET synchronous_commit = off; CALL lh_commits($commits)");
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE commit_kind = 'APPEND') FROM pk_snapshots('lh')}),
	$commits, 'every small commit is a retained snapshot');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM pkchangelog.log_snapshots('lh')}),
	'>', $commits * 0.9, 'most of them are records of the commit log');

# peak_kb($sql): the answer of $sql and the peak resident set, in kB, of
# the fresh backend that ran it
sub peak_kb
{
	my ($sql) = @_;
	my $offset = -s $node->logfile;
	my $out = $node->safe_psql('postgres', "SET log_statement_stats = on;\n$sql");
	my $log = slurp_file($node->logfile, $offset);
	my @kb = $log =~ /!\s+(\d+) kB max resident size/g;
	return ($out, @kb ? max(@kb) : undef);
}

my ($baseline_out, $baseline) = peak_kb('SELECT 1');
ok(defined $baseline, "log_statement_stats reports a backend's peak ($baseline kB for SELECT 1)");

# producer none: a 1-row commit's change is its +I or +U row
my ($changes, $changes_kb) = peak_kb(q{
SELECT count(*) || ' ' || count(DISTINCT snapshot_id) FROM pk_changes('lh')});
is($changes, "$commits $commits", 'pk_changes: one change for every commit');
cmp_ok($changes_kb, '<', $limit_kb,
	"pk_changes over $commits commits: peak $changes_kb kB");

# every retained commit's data run (a delta once compaction replaced it)
my ($runs, $runs_kb) = peak_kb(q{
SELECT count(*) FILTER (WHERE kind IN ('data', 'delta') AND created_snapshot > 0
		AND run_id < 0) || ' ' ||
	   count(*) FILTER (WHERE min_key IS NULL)
  FROM pk_runs('lh')});
is($runs, "$commits 0", 'pk_runs: every commit run, with its keys');
cmp_ok($runs_kb, '<', $limit_kb, "pk_runs over $commits commits: peak $runs_kb kB");

$node->stop;
done_testing();
