# 010_crash_recovery.pl: a pkmerge table and a heap table written in the same
# transactions stay in exact agreement across crashes.  Concurrent pgbench
# clients move money between a heap ledger and a pkmerge account table
# (UPDATE of shared accounts, with serialization retries; upserting INSERT ...
# SELECT and INSERT ... ON CONFLICT DO UPDATE on accounts each client owns;
# creation and DELETE of accounts; 3000-row transactions into a second
# pkmerge table; pk_compact, some full, and VACUUM racing with all that, so
# crashes also hit compaction and space reuse), while the server is brought
# down hard: three times by an immediate shutdown, once by SIGKILL of the
# postmaster and once by SIGKILL of a backend (postmaster crash-restart).
# After every crash the committed state must be all-or-nothing per
# transaction: every account's pkmerge balance equals the sum of its ledger
# deltas (seq scan and key lookups alike), deleted accounts are gone and only
# they are, every committed bulk batch is whole and no other is there,
# count(*) works, transactions seen committed survive, and each table's
# snapshot ids are dense 1..n.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorkload;
use IPC::Run;
use Time::HiRes qw(usleep);

my $nclients = 6;
my $nshared  = 40;       # accounts 1..40, updated by everyone
my $owned_base = 1000;   # accounts 1000 + client*10 + k, k in 0..9
my $new_base = 1000000;  # accounts created (and deleted) by the workload

my $node = PostgreSQL::Test::Cluster->new("crash_$$");
$node->init;
$node->append_conf('postgresql.conf', qq{
restart_after_crash = on
max_connections = 40
log_min_messages = warning
});
$node->start;

$node->safe_psql('postgres', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE acct (id int PRIMARY KEY, balance bigint) USING pkmerge;
-- kind: 'u' a change of balance, 'o' an account opened, 'c' one closed
CREATE TABLE ledger (id bigserial, acct int, delta bigint, kind "char" NOT NULL DEFAULT 'u');
CREATE SEQUENCE newacct;
SELECT nextval('newacct');  -- so that last_value is always a consumed value
-- bulk: multi-page runs written by single transactions, batch by batch
CREATE TABLE bulk (id int PRIMARY KEY, batch int, payload text) USING pkmerge;
CREATE TABLE bulk_log (batch int PRIMARY KEY, n int);
CREATE SEQUENCE batchseq;
INSERT INTO acct SELECT g, 0 FROM generate_series(1, $nshared) g;
INSERT INTO acct SELECT $owned_base + c * 10 + k, 0
	FROM generate_series(0, $nclients - 1) c, generate_series(0, 9) k;
});

my $nseeded = $nshared + $nclients * 10;

# The workload.  Every transaction writes the ledger and acct together.
my %scripts = (
	# shared accounts: concurrent UPDATEs of one key may have to retry (40001)
	'shared_update' => q{
\set a random(1, 40)
\set d random(-1000, 1000)
BEGIN;
INSERT INTO ledger (acct, delta) VALUES (:a, :d);
UPDATE acct SET balance = balance + :d WHERE id = :a;
END;
},
	# owned accounts: one writer per key, so a read-then-blind-write is exact
	'owned_upsert' => q{
\set a 1000 + :client_id * 10 + random(0, 9)
\set d random(-1000, 1000)
BEGIN;
INSERT INTO ledger (acct, delta) VALUES (:a, :d);
INSERT INTO acct SELECT id, balance + :d FROM acct WHERE id = :a;
END;
},
	'owned_onconflict' => q{
\set a 1000 + :client_id * 10 + random(0, 9)
\set d random(-1000, 1000)
BEGIN;
INSERT INTO ledger (acct, delta) VALUES (:a, :d);
SELECT balance + :d AS nb FROM acct WHERE id = :a \gset
INSERT INTO acct VALUES (:a, :nb) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance;
END;
},
	# new accounts: id = 1000000 + seq * 8 + client, so only their creator
	# ever writes them (no races in the workload itself)
	'open_acct' => q{
\set d random(1, 1000)
BEGIN;
SELECT 1000000 + nextval('newacct') * 8 + :client_id AS nid \gset
INSERT INTO ledger (acct, delta, kind) VALUES (:nid, :d, 'o');
INSERT INTO acct VALUES (:nid, :d);
END;
},
	# a big transaction: 3000 rows of one batch (its own key range)
	'bulk' => q{
BEGIN;
SELECT nextval('batchseq') AS b \gset
INSERT INTO bulk_log VALUES (:b, 3000);
INSERT INTO bulk SELECT :b * 3000 + g, :b, md5((:b * 3000 + g)::text) || md5(g::text)
	FROM generate_series(0, 2999) g;
END;
},
	# maintenance racing with the writers: compaction (sometimes full) and
	# VACUUM, which frees the space of compacted-away runs for reuse
	'maint' => q{
\set full random(0, 2)
SELECT pk_compact('acct', :full = 0);
SELECT pk_compact('bulk');
VACUUM acct;
VACUUM bulk;
},
	# close one of this client's accounts (maybe one that does not exist)
	'close_acct' => q{
SELECT greatest(last_value, 1) AS lv FROM newacct \gset
\set x 1000000 + random(1, :lv) * 8 + :client_id
BEGIN;
SELECT coalesce((SELECT balance FROM acct WHERE id = :x), 0) AS b \gset
INSERT INTO ledger (acct, delta, kind) VALUES (:x, -(:b), 'c');
DELETE FROM acct WHERE id = :x;
END;
},
);
my %weights = (
	shared_update    => 18,
	owned_upsert     => 6,
	owned_onconflict => 6,
	open_acct        => 6,
	close_acct       => 3,
	bulk             => 3,
	maint            => 1);
my @fileargs = PkWorkload::script_args($node, \%scripts, \%weights);
my $run = 0;

sub start_workload
{
	$run++;
	return PkWorkload::start($node, $nclients, 60, @fileargs);
}

sub end_workload { return PkWorkload::finish($_[0], "run $run"); }

sub ledger_count
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM ledger');
}

# wait until the workload has committed at least $n more ledger rows
sub wait_progress
{
	my ($before, $n) = @_;
	my $deadline = time() + 30;
	while (time() < $deadline)
	{
		my $c = ledger_count();
		return $c if $c >= $before + $n;
		usleep(100_000);
	}
	return ledger_count();
}

my $check_sql = qq{
WITH l AS (
	SELECT acct, sum(delta) AS s, bool_or(kind = 'o') AS opened,
		   bool_or(kind = 'c') AS closed
	FROM ledger GROUP BY acct),
j AS (
	SELECT coalesce(a.id, l.acct) AS id, a.id IS NOT NULL AS present,
		   a.balance, coalesce(l.s, 0) AS s, l.opened, l.closed
	FROM acct a FULL JOIN l ON a.id = l.acct)
SELECT id, present, balance, s, opened, closed FROM j
WHERE (present AND balance IS DISTINCT FROM s)
   OR (NOT present AND s <> 0)
   OR present IS DISTINCT FROM
	  (id < $new_base OR (coalesce(opened, false) AND NOT coalesce(closed, false)))
ORDER BY id LIMIT 20
};

sub check_state
{
	my ($label, $min_ledger) = @_;

	my $lc = ledger_count();
	cmp_ok($lc, '>=', $min_ledger,
		"$label: every transaction seen committed before the crash survived");

	my ($ret, $out, $err) = $node->psql('postgres', $check_sql);
	is($ret, 0, "$label: consistency query runs") or diag($err);
	is($out, '', "$label: every account's pkmerge balance equals its ledger sum (seq scan)");

	# the same through the key index (point lookups)
	($ret, $out, $err) = $node->psql('postgres', qq{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT l.acct, l.s, (SELECT balance FROM acct a WHERE a.id = l.acct) AS b
FROM (SELECT acct, sum(delta) AS s FROM ledger GROUP BY acct) l
WHERE (SELECT balance FROM acct a WHERE a.id = l.acct) IS DISTINCT FROM
	  CASE WHEN l.acct < $new_base OR EXISTS (SELECT 1 FROM acct a WHERE a.id = l.acct)
		   THEN l.s END
ORDER BY 1 LIMIT 20});
	is($ret, 0, "$label: point lookup query runs") or diag($err);
	is($out, '', "$label: key lookups agree with the ledger");

	($ret, $out, $err) = $node->psql('postgres', qq{
SELECT (SELECT count(*) FROM acct) =
	   $nseeded + (SELECT count(*) FROM (SELECT acct FROM ledger GROUP BY acct
			HAVING bool_or(kind = 'o') AND NOT bool_or(kind = 'c')) x)});
	is($ret, 0, "$label: count(*) works") or diag($err);
	is($out, 't', "$label: count(*) equals the number of live accounts");

	is($node->safe_psql('postgres',
			"SELECT count(*) FROM acct WHERE id < $new_base"),
		$nseeded, "$label: no seeded account lost");

	($ret, $out, $err) = $node->psql('postgres', q{
SELECT coalesce(x.batch, l.batch), x.n, l.n
FROM (SELECT batch, count(*) AS n FROM bulk GROUP BY batch) x
	 FULL JOIN bulk_log l ON l.batch = x.batch
WHERE x.n IS DISTINCT FROM l.n ORDER BY 1 LIMIT 10});
	is($ret, 0, "$label: bulk table readable") or diag($err);
	is($out, '', "$label: exactly the committed bulk batches are present, each whole");
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM bulk
WHERE payload IS DISTINCT FROM md5(id::text) || md5((id - batch * 3000)::text)
   OR id / 3000 <> batch}),
		'0', "$label: bulk rows are intact");

	for my $tbl ('acct', 'bulk')
	{
		my $snap = $node->safe_psql('postgres', qq{
SELECT count(*), coalesce(min(snapshot_id), 1), coalesce(max(snapshot_id), 0),
	   count(DISTINCT snapshot_id)
FROM pk_snapshots('$tbl')});
		my ($n, $min, $max, $nd) = split /\|/, $snap;
		ok($min == 1 && $max == $n && $nd == $n,
			"$label: $tbl snapshot ids are dense 1..n") or diag("count|min|max|distinct = $snap");
		ok($n > 0, "$label: $tbl has snapshots") if $tbl eq 'acct';
		# the table's row, and the commits folded after it (each a commit
		# log record, or a snapshot row, past the table row's last snapshot,
		# holding its data run; at most 63)
		my ($row, $folded) = split /\|/, $node->safe_psql('postgres', qq{
SELECT coalesce(tb.last_snapshot_id, 0),
	   coalesce((SELECT max(s.snapshot_id)
				 FROM (SELECT snapshot_id, data_seq FROM pkchangelog.snapshots
					   WHERE relid = tb.relid
					   UNION ALL
					   SELECT snapshot_id, data_seq
					   FROM pkchangelog.log_snapshots(tb.relid::regclass)) s
				 WHERE s.data_seq IS NOT NULL
				   AND s.snapshot_id > tb.last_snapshot_id), tb.last_snapshot_id, 0)
FROM (SELECT '$tbl'::regclass::oid AS relid) t
	 LEFT JOIN pkchangelog.tables tb USING (relid)});
		is($folded, $max, "$label: $tbl snapshot counter, with the commits folded after it, matches its last snapshot");
		ok($folded - $row < 64, "$label: $tbl has at most 63 commits folded after its row")
		  or diag("row $row, folded $folded");
	}
	note("$label: "
		  . $node->safe_psql('postgres', q{
SELECT format('ledger rows %s, acct snapshots %s runs %s pages %s, bulk batches %s runs %s pages %s',
	(SELECT count(*) FROM ledger),
	(SELECT count(*) FROM pk_snapshots('acct')), (SELECT count(*) FROM pk_runs('acct')),
	pg_relation_size('acct') / 8192,
	(SELECT count(*) FROM bulk_log), (SELECT count(*) FROM pk_runs('bulk')),
	pg_relation_size('bulk') / 8192)}));
	return $lc;
}

my $lc = check_state('before any crash', 0);

# --- three immediate shutdowns during the workload
for my $i (1 .. 3)
{
	my $w = start_workload();
	my $c = wait_progress($lc, 500);
	cmp_ok($c, '>', $lc, "immediate stop $i: the workload is committing");
	usleep(int(rand(500_000)));
	$node->stop('immediate');
	my $errs = end_workload($w);
	is(scalar(@$errs), 0, "immediate stop $i: pgbench saw no errors other than the lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	$node->start;
	$lc = check_state("after immediate stop $i", $c);
}

# --- SIGKILL of the postmaster
{
	my $w = start_workload();
	my $c = wait_progress($lc, 500);
	cmp_ok($c, '>', $lc, 'postmaster kill -9: the workload is committing');
	my $pm = $node->{_pid};
	$node->kill9;
	my $errs = end_workload($w);
	is(scalar(@$errs), 0, "postmaster kill -9: pgbench saw no errors other than the lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	# the orphaned backends notice the postmaster's death and exit; the new
	# postmaster refuses to start while they still hold shared memory
	# (processes are titled "postgres: crash_PID: ..." after the cluster name,
	# unique to this test run)
	my $deadline = time() + 60;
	while (time() < $deadline
		&& (kill(0, $pm) || system("pgrep -f '^postgres: crash_$$: ' >/dev/null") == 0))
	{
		usleep(100_000);
	}
	ok(!kill(0, $pm) && system("pgrep -f '^postgres: crash_$$: ' >/dev/null") != 0,
		'the killed postmaster and its orphaned server processes are gone');
	$node->start;
	$lc = check_state('after postmaster kill -9', $c);
}

# --- SIGKILL of one backend: the postmaster resets shared memory and recovers
{
	my $w = start_workload();
	my $c = wait_progress($lc, 500);
	cmp_ok($c, '>', $lc, 'backend kill -9: the workload is committing');
	my $victim = $node->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity
WHERE application_name = 'pgbench' AND backend_type = 'client backend'
ORDER BY (state = 'active') DESC, pid LIMIT 1});
	ok($victim =~ /^\d+$/, 'found a pgbench backend to kill');
	my $logstart = -s $node->logfile;
	kill(9, $victim);
	my $errs = end_workload($w);
	is(scalar(@$errs), 0, "backend kill -9: pgbench saw no errors other than the lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $logstart);
	$node->wait_for_log(qr/database system is ready to accept connections/, $logstart);
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'server did not come back after the backend crash';
	$lc = check_state('after backend kill -9 (crash restart)', $c);
}

# --- and the table keeps working normally afterwards
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO ledger (acct, delta) VALUES (1, 5);
UPDATE acct SET balance = balance + 5 WHERE id = 1;
COMMIT;
});
$node->restart;
check_state('after a final write and a clean restart', $lc);

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:|terminated by signal (?!9)/,
	'no PANIC, assertion failure or unexpected signal in the server log');

$node->stop;
done_testing();
