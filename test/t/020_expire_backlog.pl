# 020_expire_backlog.pl: a backlog of tens of thousands of snapshots
# expires in bounded memory, by pk_expire_snapshots in one transaction and
# by the background worker, for a `none` table (one delta run per commit)
# and a `lookup` one (one changelog run per commit).  The worker commits
# the expiration in batches: an observer sees the backlog shrink step by
# step, and a worker killed midway keeps what it expired and the next one
# drains the rest.
#
# The memory bound: a backend's own memory here is a few MB, plus the
# shared memory it touches (shared_buffers is 16 MB in this test, so that
# its pages cannot hide a leak).  Expiring one snapshot reads only that
# snapshot's catalog rows, in memory reset after it.  64 MB leaves room for
# catalog caches and the buffers; expiration that kept every snapshot's
# work grew by about 150 MB a second on such a backlog, past 1 GB.
use strict;
use warnings;
use FindBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;

my $limit_kb = 64 * 1024;

my $node = PostgreSQL::Test::Cluster->new('expire_backlog');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_buffers = 16MB
pkchangelog.worker_naptime = 100ms
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE PROCEDURE churn(rel regclass, n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		EXECUTE format('UPDATE %s SET v = v + 1 WHERE id = %s', rel, 1 + i % 100);
		COMMIT;
	END LOOP;
END $$;
});

# backlog($name, $producer, $commits): a table of 100 rows, then $commits
# one-row commits (one snapshot each) retained for an hour; then a
# retention that makes all but the newest snapshot due at once
sub backlog
{
	my ($name, $producer, $commits) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $name (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = '$producer', snapshot_num_retained_min = 1,
		  snapshot_time_retained = '1h');
INSERT INTO $name SELECT i, 0 FROM generate_series(1, 100) i;
CALL churn('$name', $commits);
ALTER TABLE $name SET (snapshot_time_retained = '0ms');
});
	return $node->safe_psql('postgres', "SELECT count(*) FROM pk_snapshots('$name')");
}

# what is left of a table after its backlog expired: snapshots, changelog
# and delta runs of expired snapshots, commit log pages but the one commits
# append to (their records all expired), rows
sub left_after
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM pk_snapshots('$name')) || ' snapshot, ' ||
	   (SELECT count(*) FROM pkchangelog.runs r
		WHERE relid = '$name'::regclass AND kind NOT IN ('data', 'log')
		  AND NOT EXISTS (SELECT FROM pk_snapshots('$name') s
						  WHERE s.snapshot_id = r.created_snapshot))
	   || ' runs of expired snapshots, ' ||
	   (SELECT count(*) FROM pkchangelog.runs r
		WHERE relid = '$name'::regclass AND kind = 'log'
		  AND run_id <> (SELECT log_run FROM pkchangelog.tables t WHERE t.relid = r.relid))
	   || ' old log pages, ' ||
	   (SELECT count(*) || ' rows, sum ' || sum(v) FROM $name)});
}

# pk_expire_snapshots over a backlog, in one transaction
my $before = backlog('fn_none', 'none', 20000);
ok($before > 20000, "a backlog of $before snapshots");
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres') . ' application_name=expire_fn',
		'-c', q{SELECT pk_expire_snapshots('fn_none')},
		'-c', q{SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s*(\d+)'))[1]}
	],
	'>', \$out, '2>', \$err);
my $backend;
my $peak = PkWorker::watch_peak(
	$h,
	sub {
		$backend ||= $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE application_name = 'expire_fn'});
		return $backend ? ($backend) : ();
	},
	$limit_kb);
$h->finish;
my ($expired, $hwm) = split /\n/, $out;
is($expired, $before - 1, 'pk_expire_snapshots expired the backlog in one call') or diag($err);
$peak = $hwm if defined $hwm && $hwm =~ /^\d+$/ && $hwm > $peak;
cmp_ok($peak, '<', $limit_kb, "its backend's peak memory stayed below the bound");
diag("pk_expire_snapshots of $before snapshots: backend peak ${peak} kB");
is(left_after('fn_none'), '1 snapshot, 0 runs of expired snapshots, 0 old log pages, 100 rows, sum 20000',
	'the snapshots went with their delta runs, the rows stayed');

# the background worker, over a backlog in a none and a lookup table
my $total = backlog('w_none', 'none', 15000) + backlog('w_lookup', 'lookup', 12000);
$node->safe_psql('postgres', q{
CREATE FUNCTION watch_drain(total bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	n bigint := total;
	pages bigint;
	first bigint;
	last bigint;
	steps int := 0;
	killed_at bigint;
	after_kill bigint;
	deadline timestamptz := clock_timestamp() + interval '100 s';
BEGIN
	-- progress: the commit log pages left (each batch's transaction frees
	-- the pages whose records all expired), read cheaply from the catalog;
	-- the snapshots left are counted once the pages are down to each
	-- table's last
	LOOP
		pages := (SELECT count(*) FROM pkchangelog.runs
				  WHERE relid IN ('w_none'::regclass, 'w_lookup'::regclass) AND kind = 'log');
		first := coalesce(first, pages);
		IF pages < last AND pages > 2 THEN
			steps := steps + 1;
		END IF;
		last := pages;
		-- once some of it is expired, the worker is killed, once
		IF pages < first AND killed_at IS NULL THEN
			IF (SELECT bool_or(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
				WHERE backend_type = 'pkchangelog worker') THEN
				killed_at := pages;
				after_kill := (SELECT count(*) FROM pk_snapshots('w_none')) +
							  (SELECT count(*) FROM pk_snapshots('w_lookup'));
			END IF;
		END IF;
		IF pages <= 2 THEN
			n := (SELECT count(*) FROM pk_snapshots('w_none')) +
				 (SELECT count(*) FROM pk_snapshots('w_lookup'));
		END IF;
		EXIT WHEN n <= 2 OR clock_timestamp() > deadline;
		PERFORM pg_sleep(0.005);
	END LOOP;
	RETURN format('steps %s, killed %s, kept after kill %s, end %s',
				  CASE WHEN steps >= 1 THEN 'seen' ELSE steps::text END,
				  killed_at IS NOT NULL, after_kill < total, n);
END $$;
});
($out, $err) = ('', '');
$h = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres'),
		'-c', "SELECT watch_drain($total)"
	],
	'>', \$out, '2>', \$err);
PkWorker::set($node, 'worker_enabled', 'on');
$peak = PkWorker::watch_peak($h, sub { PkWorker::worker_pids($node) }, $limit_kb);
$h->finish;
chomp $out;
# (a batch of commit log records expires in a few milliseconds: the steps
# seen between polls are few; the batches a killed worker committed stay)
is($out, 'steps seen, killed t, kept after kill t, end 2',
	'the worker drained the backlog in batches, and the next worker went on after one was killed')
  or diag($err);
cmp_ok($peak, '<', $limit_kb, "the workers' peak memory stayed below the bound");
diag("workers draining $total snapshots: peak ${peak} kB");
is(left_after('w_none'), '1 snapshot, 0 runs of expired snapshots, 0 old log pages, 100 rows, sum 15000',
	'none: the snapshots went with their delta runs');
is(left_after('w_lookup'), '1 snapshot, 0 runs of expired snapshots, 0 old log pages, 100 rows, sum 12000',
	'lookup: the snapshots went with their changelog runs');
PkWorker::set($node, 'worker_enabled', 'off');

$node->stop;
done_testing();
