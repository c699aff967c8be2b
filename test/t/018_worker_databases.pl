# 018_worker_databases.pl: the launcher copes with more databases than it
# can start workers for, and with databases coming and going.  Without
# background worker slots its registrations fail every round: it logs that
# and keeps running (it once kept the handle of a failed registration, and
# handles in memory it reset every round, and crashed).  After more
# databases than its table of 256 were created and dropped, a new database
# still gets its worker.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;

# room for the logical replication launcher and ours, none for workers
my $node = PkWorker::start_node('databases', q{
max_worker_processes = 2
log_min_messages = log
});

my $launcher_sql =
  q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pkchangelog launcher'};
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($launcher_sql) l"),
	'the launcher runs');
my $launcher = $node->safe_psql('postgres', $launcher_sql);

# no worker slots: registrations fail, round after round
$node->safe_psql('postgres', "CREATE DATABASE few$_") for (1 .. 3);
# waited for, not slept on: a loaded machine may take its time
ok($node->wait_for_log(qr/could not start a worker for database/),
	'registrations failed for lack of slots');
ok(!$node->log_contains('terminated by signal'), 'no process crashed');
is($node->safe_psql('postgres', $launcher_sql), $launcher, 'the same launcher still runs');

$node->append_conf('postgresql.conf', 'max_worker_processes = 8');
$node->restart;
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($launcher_sql) l"),
	'the launcher runs after a restart with room for workers');
$launcher = $node->safe_psql('postgres', $launcher_sql);

# more databases than the launcher's table holds, then dropped
$node->safe_psql('postgres', join("\n", map { "CREATE DATABASE many$_;" } (1 .. 260)));
sleep(2);
# (workers off while they go: DROP DATABASE would wait for visiting ones)
PkWorker::set($node, 'worker_enabled', 'off');
ok(PkWorker::none_running($node),
	'workers switched off');
$node->safe_psql('postgres', join("\n", map { "DROP DATABASE many$_;" } (1 .. 260)));
$node->safe_psql('postgres', "DROP DATABASE few$_") for (1 .. 3);
PkWorker::set($node, 'worker_enabled', 'on');

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE c (id int PRIMARY KEY) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, num_sorted_run_stop_trigger = 50);
INSERT INTO c VALUES (1);
INSERT INTO c VALUES (2);
});
ok($node->poll_query_until('fresh', q{SELECT count(*) = 1 FROM pk_runs('c') WHERE kind = 'data'}),
	'a database created after 263 others came and went gets its worker');
ok(!$node->log_contains('terminated by signal'), 'still no process crashed');
is($node->safe_psql('postgres', $launcher_sql), $launcher, 'and the same launcher runs');

$node->stop;
done_testing();
