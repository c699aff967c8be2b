# 014_worker.pl: the background worker compacts a table that reached
# num_sorted_run_compaction_trigger, runs the full-compaction producer every
# full_compaction_delta_commits commits, expires snapshots, picks up a
# database where the extension is created later, lets DROP DATABASE through,
# compacts at once when a commit asks for it (after worker_request_delay
# when it served others just before), marks a table's last commit log
# record committed, truncates a file's free end but not under ANALYZE's
# lock, and stops when switched off.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;

# SQL that creates a one-column pkmerge table NAME, compacted at TRIGGER
# sorted runs, and commits keys 1..N to it one at a time (one run each)
sub commits_sql
{
	my ($name, $trigger, $n) = @_;
	return "CREATE TABLE $name (id int PRIMARY KEY) USING pkmerge
		WITH (num_sorted_run_compaction_trigger = $trigger, num_sorted_run_stop_trigger = 50);\n"
	  . join("\n", map { "INSERT INTO $name VALUES ($_);" } 1 .. $n);
}

my $node = PkWorker::start_node('worker');
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');

# compaction at the trigger
$node->safe_psql('postgres', q{
CREATE TABLE c (id int PRIMARY KEY, v int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 50);
INSERT INTO c VALUES (1, 1);
INSERT INTO c VALUES (2, 2);
INSERT INTO c VALUES (3, 3);
INSERT INTO c VALUES (1, 10);
});
# (one run, or two when the worker merged the first three before the
# fourth commit: it is woken by the commit that reaches the trigger)
ok($node->poll_query_until('postgres',
		q{SELECT count(*) <= 2 AND count(*) FILTER (WHERE level > 0) = 1 FROM pk_runs('c') WHERE kind = 'data'}),
	'the worker merged the runs once they reached the trigger');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM pk_snapshots('c') WHERE commit_kind = 'COMPACT'}) >= 1,
	1, 'as a COMPACT snapshot');
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM c}),
	'1:10,2:2,3:3', 'with the same rows');
# the worker's compaction keeps its snapshot as a record of the table's
# commit log (no catalog row), which pk_stats counts; pk_compact's is a
# catalog row
is($node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pkchangelog.log_snapshots('c') WHERE commit_kind = 'COMPACT')
	   || '|' || (SELECT count(*) FROM pkchangelog.snapshots
				  WHERE relid = 'c'::regclass AND commit_kind = 'COMPACT')
	   || '|' || (SELECT compactions FROM pk_stats('c'))
	   || '|' || (SELECT count(*) FROM pk_snapshots('c') WHERE commit_kind = 'COMPACT')}),
	'1|0|1|1', "the worker's COMPACT snapshot is a commit log record, counted by pk_stats");
$node->safe_psql('postgres', q{INSERT INTO c VALUES (4, 4); SELECT pk_compact('c', true);});
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pkchangelog.snapshots WHERE relid = 'c'::regclass AND commit_kind = 'COMPACT'}),
	'1', "pk_compact's COMPACT snapshot is a catalog row");
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM c}),
	'1:10,2:2,3:3,4:4', 'the rows after both');

# the last record of a table's commit log, which no later commit marks:
# the worker marks it on its rounds (a LOG_RESOLVE record), so that no
# reader ever needs the status of its transaction once that is old
$node->safe_psql('postgres', 'CREATE EXTENSION pg_walinspect');
my $lsn = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
$node->safe_psql('postgres', q{
CREATE TABLE lr (id int PRIMARY KEY) USING pkmerge;
INSERT INTO lr VALUES (1);});
ok($node->poll_query_until('postgres', qq{
SELECT count(*) > 0 FROM pg_get_wal_records_info('$lsn', pg_current_wal_flush_lsn())
 WHERE resource_manager = 'pkchangelog' AND record_type = 'LOG_RESOLVE'}),
	'the worker marked the table\'s last commit log record');

# the full-compaction producer's schedule
$node->safe_psql('postgres', q{
CREATE TABLE f (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'full-compaction', full_compaction_delta_commits = 2,
		  num_sorted_run_compaction_trigger = 100, num_sorted_run_stop_trigger = 200);
INSERT INTO f VALUES (1, 100);
INSERT INTO f VALUES (2, 200);
});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 2 FROM pk_changes('f')}),
	'after 2 commits the worker ran a full compaction and its changelog');
$node->safe_psql('postgres', q{UPDATE f SET v = 80 WHERE id = 1});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_changes('f')}), '2',
	'one commit is not yet due');
$node->safe_psql('postgres', q{UPDATE f SET v = 90 WHERE id = 2});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 6 FROM pk_changes('f')}),
	'the second commit is: -U/+U for both keys');
is($node->safe_psql('postgres',
		q{SELECT string_agg(rowkind || ("row"->>'v'), ' ' ORDER BY snapshot_id, rowkind DESC, "row"->>'id') FROM pk_changes('f')}),
	'+I100 +I200 -U100 -U200 +U80 +U90', 'with the right records');

# expiration
$node->safe_psql('postgres', q{
CREATE TABLE e (id int PRIMARY KEY, v int) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms',
		  num_sorted_run_compaction_trigger = 100, num_sorted_run_stop_trigger = 200);
INSERT INTO e VALUES (1, 1);
INSERT INTO e VALUES (2, 2);
INSERT INTO e VALUES (3, 3);
});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_snapshots('e')}),
	'the worker expired all but the newest snapshot');

# a database whose extension is created later
$node->safe_psql('postgres', 'CREATE DATABASE late');
$node->safe_psql('late', "CREATE EXTENSION pkchangelog;\n" . commits_sql('c', 2, 2));
ok($node->poll_query_until('late', q{SELECT count(*) = 1 FROM pk_runs('c') WHERE kind = 'data'}),
	'a database created later gets its worker');

# a worker never keeps a database from being dropped: it does one round
# and leaves (or waits at most a second for requests), and DROP DATABASE
# waits a few seconds for sessions to go
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE late');
is($ret, 0, 'DROP DATABASE works while workers run') or diag($err);

# writers need not wait for the naptime: the commit that reaches the
# trigger asks for a compaction, and the launcher starts a worker at once.
# A database that rounds visited before its extension existed is only
# looked at again after 30 naptimes (here 60 s): its requests must not
# wait for that.
PkWorker::set($node, 'worker_naptime', '2s');
$node->safe_psql('postgres', 'CREATE DATABASE early');
sleep(3);
PkWorker::set($node, 'worker_naptime', '1h');
ok(PkWorker::none_running($node),
	'with a naptime of an hour, the workers of the last round leave');
$node->safe_psql('postgres', commits_sql('r', 3, 2));
sleep(1);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('r') WHERE kind = 'data'}), '2',
	'below the trigger nothing is asked for');
$node->safe_psql('postgres', q{INSERT INTO r VALUES (3)});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_runs('r') WHERE kind = 'data'}),
	'the commit that reached the trigger had the runs compacted without waiting for the naptime');
# a stream of commits: compacted as they come, by one worker that stays
$node->safe_psql('postgres',
	join("\n", map { "INSERT INTO r VALUES ($_);" } (4 .. 60)));
ok($node->poll_query_until('postgres',
		q{SELECT count(*) < 3 FROM pk_runs('r') WHERE kind = 'data'}),
	'a stream of commits is compacted as it comes');
is($node->safe_psql('postgres', q{SELECT count(*), sum(id) FROM r}), '60|1830',
	'with every row');
ok(PkWorker::none_running($node),
	'and the worker leaves when the commits stop');
$node->safe_psql('early', "CREATE EXTENSION pkchangelog;\n" . commits_sql('c', 3, 3));
# (polled up to the suite's timeout: a loaded machine may take its time)
ok($node->poll_query_until('early', q{SELECT count(*) = 1 FROM pk_runs('c') WHERE kind = 'data'}),
	'a database visited before CREATE EXTENSION has its requests served');
# a worker waiting for requests leaves within a second: DROP DATABASE waits
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE early');
is($ret, 0, 'DROP DATABASE works right after the requests') or diag($err);

# after serving requests a worker waits worker_request_delay before it
# serves the next ones: a request made meanwhile waits, then is served
PkWorker::set($node, 'worker_request_delay', '4s');
$node->safe_psql('postgres', commits_sql('d', 3, 3));
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_runs('d') WHERE kind = 'data'}),
	'with a request delay, a first request is served at once');
$node->safe_psql('postgres',
	join("\n", map { "INSERT INTO d VALUES ($_);" } (4 .. 6)));
sleep(1);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('d') WHERE kind = 'data'}), '4',
	'a request made during the delay is not served yet');
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_runs('d') WHERE kind = 'data'}),
	'and is served after it');
is($node->safe_psql('postgres', q{SELECT count(*), sum(id) FROM d}), '6|21',
	'with every row');
PkWorker::set($node, 'worker_request_delay', '20ms');

# an idle table's run rows are not read again and again: a worker looks
# for freed space after the table changed (or the worker expired some of
# its snapshots, or rows a snapshot still saw were left), not every round,
# whichever worker process does the round (they leave when idle)
PkWorker::set($node, 'worker_naptime', '100ms');
$node->safe_psql('postgres',
	"CREATE TABLE idle (id int PRIMARY KEY) USING pkmerge WITH (changelog_producer = 'lookup');\n"
	  . join("\n", map { "INSERT INTO idle VALUES ($_);" } 1 .. 300)
	  . "\nSELECT pk_compact('idle', true);");
my $fetches = q{SELECT idx_tup_fetch FROM pg_stat_all_tables
	WHERE relid = 'pkchangelog.runs'::regclass};
sleep(3);
my $before = $node->safe_psql('postgres', $fetches);
sleep(5);
my $idle_fetches = $node->safe_psql('postgres', $fetches) - $before;
# (each look reads the 300 rows twice; a round reads the few data runs)
cmp_ok($idle_fetches, '<', 3000,
	'5 s of worker rounds (every 100 ms) over an idle table with 300 retained runs read fewer run rows than five looks for freed space would');
$node->safe_psql('postgres', 'DROP TABLE idle');

# the file's free end is not truncated under ANALYZE (or VACUUM): from
# PostgreSQL 17 on, ANALYZE reads the blocks it samples up to the size the
# file had when it began, and a block truncated away meanwhile failed it.
# Two tables lose all their rows; a transaction holds ANALYZE's lock on one
# of them (LOCK TABLE: an ANALYZE in the transaction would also hold back,
# by its transaction id, the pruning the truncation waits for).  The
# worker expires their snapshots, prunes their runs and truncates the
# other table's file; the locked one keeps its size until the transaction
# ends.
my %full;
for my $tbl ('shrink', 'shrink_free')
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $tbl (id int PRIMARY KEY, v text) USING pkmerge
	WITH (snapshot_num_retained_min = 1, snapshot_num_retained_max = 1, snapshot_time_retained = '0s');
INSERT INTO $tbl SELECT g, md5(g::text) FROM generate_series(1, 50000) g;
});
}
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE shrink IN SHARE UPDATE EXCLUSIVE MODE;');
for my $tbl ('shrink', 'shrink_free')
{
	$node->safe_psql('postgres', qq{DELETE FROM $tbl; SELECT pk_compact('$tbl', true);});
	$full{$tbl} = $node->safe_psql('postgres', qq{SELECT pg_relation_size('$tbl')});
}
ok($node->poll_query_until('postgres',
		qq{SELECT pg_relation_size('shrink_free') < $full{shrink_free} / 10}),
	'the worker truncated the free end of a table without the lock');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pkchangelog.runs
	WHERE relid = 'shrink'::regclass AND nblocks > 10}),
	'and pruned the runs of the locked one');
sleep(1);
is($node->safe_psql('postgres', q{SELECT pg_relation_size('shrink')}), $full{shrink},
	'whose file keeps its size while ANALYZE\'s lock is held');
$holder->query_safe('COMMIT;');
$holder->quit;
ok($node->poll_query_until('postgres', qq{SELECT pg_relation_size('shrink') < $full{shrink} / 10}),
	'then the worker truncates its free end');
$node->safe_psql('postgres', 'DROP TABLE shrink, shrink_free');

# switched off: nothing is compacted any more
PkWorker::set($node, 'worker_enabled', 'off');
ok(PkWorker::none_running($node),
	'workers exit when switched off');
$node->safe_psql('postgres', q{
INSERT INTO c VALUES (4, 4);
INSERT INTO c VALUES (5, 5);
INSERT INTO c VALUES (6, 6);
});
sleep(1);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('c') WHERE kind = 'data'}), '4',
	'no compaction while switched off');

$node->stop;
done_testing();
