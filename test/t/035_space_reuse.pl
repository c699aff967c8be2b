# 035_space_reuse.pl: under a steady stream of small commits whose
# snapshots expire as they come (retention passing all the time), the
# table's file stops growing once retention has passed: the space of
# expired runs and commit log pages is reused, and the backends' memory
# stays bounded.
#
# Two clients of 1-row UPDATEs of a lookup table with
# snapshot_time_retained = '2s', synchronous_commit off, the background
# worker on (it compacts, expires and reclaims space), for three periods.
# The file grows while the history builds up (the first period) and must
# then level off.  Its size, read every second, saws up and down (a
# compaction's output is written before its inputs are freed, and the
# file's free end is truncated), so its level is its smallest size over
# several seconds: in the last period it must stay under twice the level
# of the first period's second half (at a growth that went on, it would
# be about 3.5 times).  A failure shows every sample with the
# snapshots and runs the table held, which tells expiration falling behind
# from compaction falling behind from space not reused.
# The pgbench sessions' private memory (the largest RssAnon) must stay
# within 40 MB of what it was after the first period: a backend's block
# cache (run_read.c, an LRU of at most 32 MB of decompressed blocks, those
# of compaction's inputs among them until they are evicted) fills up in
# that time or over the next periods, as the runs compaction leaves are
# read; 8 MB more is the margin for the rest.  (A leak of a kilobyte per
# commit would add about 90 MB here.)  The defects a longer
# soak of this kind found are pinned down by regression tests of their
# own (storage: VACUUM and the worker offered writers only the first 64
# gaps in block order, so a file whose first gaps were single pages grew
# at its end; run_memory: a commit that expired snapshots left its run
# list's memory behind); at this test's scale they did not show.
use strict;
use warnings;
use FindBin;
use List::Util qw(min);
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorkload;

my $period = 12;
my $node = PostgreSQL::Test::Cluster->new('space035');
$node->init;
$node->append_conf('postgresql.conf', q{
pkchangelog.worker_enabled = on
pkchangelog.worker_naptime = 200ms
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE s (id int PRIMARY KEY, amount bigint, note text) USING pkmerge
	WITH (changelog_producer = 'lookup', snapshot_time_retained = '2s');
INSERT INTO s SELECT g, 0, md5(g::text) FROM generate_series(1, 20000) g;
CHECKPOINT;});

my @fileargs = PkWorkload::script_args($node,
	{ upd => "\\set id random(1, 20000)\nUPDATE s SET amount = amount + 1 WHERE id = :id;\n" },
	{ upd => 1 });

# the largest private memory (kB) of the pgbench sessions
sub session_memory
{
	my $pids = $node->safe_psql('postgres',
		q{SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE application_name = 'pgbench'});
	my $max = 0;
	for my $pid (split ' ', $pids)
	{
		my $status = eval { slurp_file("/proc/$pid/status") } // '';
		$max = $1 if $status =~ /^RssAnon:\s+(\d+) kB/m && $1 > $max;
	}
	return $max;
}

my $size0 = $node->safe_psql('postgres', q{SELECT pg_relation_size('s')});
local $ENV{PGOPTIONS} = '-c synchronous_commit=off';
my $w = PkWorkload::start($node, 2, 3 * $period, @fileargs);
# every second: the file's size, and the snapshots and runs it holds (for
# a failure's diagnosis: a backlog of snapshots is expiration falling
# behind, a backlog of runs compaction); the sessions' memory after each
# period
my (@size, @mem, @sample);
my $t0 = time();
for my $i (1 .. 3 * $period - 2)
{
	# on the second, whatever the queries took (pgbench stops at 3 periods)
	my $wait = $t0 + $i - time();
	sleep($wait) if $wait > 0;
	my ($bytes, $snaps, $runs) = split /\|/, $node->safe_psql('postgres',
		q{SELECT pg_relation_size('s'), (SELECT count(*) FROM pk_snapshots('s')),
				 (SELECT count(*) FROM pk_runs('s'))});
	push @size, $bytes;
	push @sample, "${i}s: $bytes B, $snaps snapshots, $runs runs";
	push @mem, session_memory() if $i % $period == 0 || $i == 3 * $period - 2;
}
note('file sizes: ' . join(' ', @size));
note("pgbench sessions' largest RssAnon (kB): @mem");
my $errs = PkWorkload::finish($w, 'space reuse');
ok($w->{ok}, 'pgbench exits normally') or diag(${ $w->{err} });
is(scalar(@$errs), 0, 'pgbench saw no errors');
my ($processed) = ${ $w->{out} } =~ /number of transactions actually processed: (\d+)/;
cmp_ok($processed, '>', 20000, "the clients committed ($processed)");
is($node->safe_psql('postgres', 'SELECT sum(amount) FROM s'), $processed,
	'every committed update is in the table');

# the file's level over the start: at the end of the first period (its
# second half) and in the last period
my $first = min(@size[$period / 2 .. $period - 1]) - $size0;
my $late  = min(@size[-($period - 2) .. -1]) - $size0;
cmp_ok($first, '>', 0, "the file grew while the history built up ($first B)");
cmp_ok($late, '<', 2 * $first,
	"then it levelled off: $late B over the start in the last period, $first B in the first")
  or diag(join("\n", "samples (file size $size0 B at the start):", @sample));
cmp_ok(min(@mem), '>', 0, 'the sessions\' memory was read after each period');
cmp_ok($mem[-1] - $mem[0], '<', 40 * 1024,
	"the sessions' memory stayed bounded ($mem[0] -> $mem[-1] kB)");

done_testing();
