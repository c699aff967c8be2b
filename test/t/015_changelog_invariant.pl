# 015_changelog_invariant.pl: concurrent writers plus background compaction
# plus crashes keep the changelog invariant, and snapshot ids stay dense.
#
# Three pkmerge tables of the same schema, one per complete producer
# (lookup, input, full-compaction), with small compaction triggers so the
# background worker (on, naptime 50ms) compacts them all the time and runs
# the full-compaction producer every 3 commits.  Four pgbench clients run a
# mix of SQL DML on keys 1..200 (so they collide): upserting INSERT, UPDATE
# amount = amount + d, DELETE, INSERT ... ON CONFLICT (id) DO UPDATE, and
# transactions of several statements, some writing all three tables; 40001
# serialization failures are retried.  The server is brought down in the
# middle twice (an immediate shutdown, then SIGKILL of the postmaster) and
# the workload goes on after each restart.
#
# The input producer keeps what the writers supplied, and an upserting
# INSERT over an existing key supplies +I only (DESIGN §2), which no retract
# stream has.  So on the input table the plain INSERTs write fresh keys
# (from a sequence); its colliding writes are UPDATE, DELETE and ON CONFLICT
# DO UPDATE, for which Postgres hands the old row over.
#
# At the end (after one pk_compact(full) so the full-compaction stream is
# complete) for every table: check_changelog (test/setup/changelog_checker.sql)
# finds the stream a valid retract stream that replays to the table; a naive
# downstream SUM(amount)/count GROUP BY grp computed from the stream (+I/+U
# add, -U/-D subtract) equals the table's; snapshot ids are dense 1..n; the
# table's pkchangelog.tables row names exactly its data runs (readers list
# them from it; check_data_runs); and the background worker compacted the
# table while it was being written.
# After each crash the lookup and input streams are checked as well.  Each
# table has a materialized aggregate (sum, count, max, min per grp), kept by
# the workload's commits (full-compaction's by the worker's compactions):
# after each crash and at the end it equals its query (pk_reconcile).
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;
use PkWorkload;
use IPC::Run;
use Time::HiRes qw(usleep time);

my $t_start  = time();
my $nclients = 4;
my $nkeys    = 200;
my %producer = (
	t_lookup => 'lookup',
	t_input  => 'input',
	t_full   => 'full-compaction');
my @tables = sort keys %producer;

my $node = PkWorker::start_node("inv015_$$", q{
pkchangelog.worker_naptime = 50ms
restart_after_crash = on
max_connections = 40
log_min_messages = warning
});

# The checker's functions, as the regression suites load them.
my $checker_file = "$FindBin::Bin/../setup/changelog_checker.sql";
my $checker = slurp_file($checker_file);
like($checker, qr/CREATE OR REPLACE FUNCTION check_stream.*CREATE OR REPLACE FUNCTION check_changelog/s,
	'the checker functions were read from test/setup/changelog_checker.sql');

$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
$node->safe_psql('postgres', $checker);
$node->safe_psql('postgres', 'CREATE SEQUENCE fresh START 1001');
for my $t (@tables)
{
	my $extra = $producer{$t} eq 'full-compaction' ? ', full_compaction_delta_commits = 3' : '';
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, grp int, amount bigint) USING pkmerge
	WITH (changelog_producer = '$producer{$t}',
		  num_sorted_run_compaction_trigger = 3, num_sorted_run_stop_trigger = 6,
		  snapshot_num_retained_min = 100000, changelog_num_retained_min = 100000$extra);
INSERT INTO $t SELECT g, g % 10, g FROM generate_series(1, $nkeys, 2) g;
});
	# a materialized aggregate of each, kept by the same commits (input
	# warns: its writers here supply complete changes)
	$node->safe_psql('postgres', qq{
SET client_min_messages = error;
SELECT pk_materialize('${t}_agg',
	'SELECT grp, sum(amount) AS total, count(*) AS n, max(amount) AS hi, min(amount) AS lo
	 FROM $t GROUP BY grp');
});
}

# the aggregate equals its query (for full-compaction, as of a full
# compaction, which pk_reconcile runs first)
sub check_aggregate
{
	my ($label, $t) = @_;
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM pk_reconcile('${t}_agg')}), '0',
		"$label: the materialized aggregate of $t ($producer{$t}) equals its query");
	return;
}

# --- the workload: SQL DML only
my %scripts;
my %weights;
for my $t (@tables)
{
	my $input = $producer{$t} eq 'input';
	# upserting INSERT: colliding keys, except on input (fresh keys there)
	$scripts{"ins_$t"} = $input
	  ? qq{
\\set g random(0, 9)
\\set a random(1, 1000)
INSERT INTO $t VALUES (nextval('fresh'), :g, :a);
}
	  : qq{
\\set id random(1, $nkeys)
\\set g random(0, 9)
\\set a random(1, 1000)
INSERT INTO $t VALUES (:id, :g, :a);
};
	$scripts{"upd_$t"} = qq{
\\set id random(1, $nkeys)
\\set d random(-100, 100)
UPDATE $t SET amount = amount + :d WHERE id = :id;
};
	$scripts{"del_$t"} = qq{
\\set id random(1, $nkeys)
DELETE FROM $t WHERE id = :id;
};
	$scripts{"onc_$t"} = qq{
\\set id random(1, $nkeys)
\\set g random(0, 9)
\\set a random(1, 1000)
INSERT INTO $t VALUES (:id, :g, :a) ON CONFLICT (id) DO UPDATE SET amount = EXCLUDED.amount;
};
	# several writes in one transaction, some of one key (they fold for
	# lookup and full-compaction), one moving a row to another group
	$scripts{"multi_$t"} = qq{
\\set id random(1, $nkeys)
\\set id2 random(1, $nkeys)
\\set g random(0, 9)
\\set a random(1, 1000)
\\set d random(-100, 100)
BEGIN;
INSERT INTO $t VALUES (:id, :g, :a) ON CONFLICT (id) DO UPDATE SET amount = EXCLUDED.amount;
UPDATE $t SET amount = amount + :d WHERE id = :id;
UPDATE $t SET grp = :g, amount = amount - :d WHERE id = :id2;
DELETE FROM $t WHERE id = :id2 + 1;
END;
};
	$weights{"ins_$t"}   = 3;
	$weights{"upd_$t"}   = 4;
	$weights{"del_$t"}   = 2;
	$weights{"onc_$t"}   = 3;
	$weights{"multi_$t"} = 1;
}
# one transaction writing all three tables
$scripts{all3} = qq{
\\set id random(1, $nkeys)
\\set id2 random(1, $nkeys)
\\set a random(1, 1000)
\\set d random(-100, 100)
BEGIN;
} . join('', map { qq{UPDATE $_ SET amount = amount + :d WHERE id = :id;
INSERT INTO $_ VALUES (:id2, :id2 % 10, :a) ON CONFLICT (id) DO UPDATE SET amount = EXCLUDED.amount;
} } @tables) . "END;\n";
$weights{all3} = 3;

my @fileargs = PkWorkload::script_args($node, \%scripts, \%weights);
my $run = 0;

sub start_workload
{
	my ($secs) = @_;
	$run++;
	return PkWorkload::start($node, $nclients, $secs, @fileargs);
}

sub end_workload { return PkWorkload::finish($_[0], "run $run"); }

sub nsnapshots
{
	return $node->safe_psql('postgres', q{SELECT count(*) FROM pk_snapshots('t_lookup')});
}

# wait until the workload has committed at least $n more snapshots on
# t_lookup and at least $secs have passed
sub wait_progress
{
	my ($n, $secs) = @_;
	my $before   = nsnapshots();
	my $start    = time();
	my $deadline = $start + 30;
	my $c        = $before;
	while (time() < $deadline)
	{
		$c = nsnapshots();
		last if $c >= $before + $n && time() >= $start + $secs;
		usleep(100_000);
	}
	return $c - $before;
}

# the stream of $t, printed around what the checker names
sub stream_excerpt
{
	my ($t, $msg) = @_;
	my @keys = $msg =~ /key (\d+)/g;
	return '' unless @keys;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(format('%s %s %s', snapshot_id, rowkind, "row"), E'\\n' ORDER BY ord)
FROM pk_changes('$t') WITH ORDINALITY c(snapshot_id, rowkind, "row", ord)
WHERE ("row"->>'id')::int IN (} . join(',', @keys) . q{)}) . "\n"
	  . $node->safe_psql('postgres', qq{
SELECT string_agg(format('%s %s %s %s', snapshot_id, commit_kind, delta_record_count, changelog_record_count), ', ' ORDER BY snapshot_id)
FROM pk_snapshots('$t') WHERE snapshot_id IN (
	SELECT snapshot_id FROM pk_changes('$t') WHERE ("row"->>'id')::int IN (} . join(',', @keys) . q{))});
}

# one consistent view (REPEATABLE READ) of a table: the checker, the naive
# downstream aggregate against the table's, the snapshot ids
sub check_table
{
	my ($label, $t) = @_;
	my $p = $producer{$t};
	my $res = $node->safe_psql('postgres', qq{
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_changelog('$t');
WITH s AS (
	SELECT ("row"->>'grp')::int AS grp,
		   sum(CASE WHEN rowkind IN ('+I', '+U') THEN 1 ELSE -1 END * ("row"->>'amount')::bigint) AS total,
		   sum(CASE WHEN rowkind IN ('+I', '+U') THEN 1 ELSE -1 END) AS n
	FROM pk_changes('$t') GROUP BY 1),
tb AS (SELECT grp, sum(amount) AS total, count(*) AS n FROM $t GROUP BY grp)
SELECT coalesce(string_agg(format('grp %s: stream sum %s count %s, table sum %s count %s',
			coalesce(s.grp, tb.grp), s.total, s.n, tb.total, tb.n), '; '), '')
FROM s FULL JOIN tb ON s.grp = tb.grp
WHERE coalesce(s.total, 0) <> coalesce(tb.total, 0) OR coalesce(s.n, 0) <> coalesce(tb.n, 0);
SELECT format('%s|%s|%s|%s', count(*), coalesce(min(snapshot_id), 0), coalesce(max(snapshot_id), 0),
			  count(DISTINCT snapshot_id))
FROM pk_snapshots('$t');
SELECT format('%s|%s', (SELECT count(*) FROM pk_changes('$t')), (SELECT count(*) FROM $t));
SELECT check_data_runs('$t');
COMMIT;
});
	my ($verdict, $aggdiff, $snaps, $sizes, $runs) = split /\n/, $res, -1;
	$aggdiff //= '';
	is($verdict, 'ok', "$label: $t ($p) stream is a valid retract stream replaying to the table")
	  or diag("check_changelog('$t'): $verdict\n" . stream_excerpt($t, $verdict));
	is($aggdiff, '', "$label: $t ($p) downstream SUM/count GROUP BY grp from the stream equals the table's");
	my ($n, $min, $max, $nd) = split /\|/, $snaps;
	ok($n > 0 && $min == 1 && $max == $n && $nd == $n,
		"$label: $t snapshot ids are dense 1..n") or diag("count|min|max|distinct = $snaps");
	my ($nchanges, $nrows) = split /\|/, $sizes;
	ok($nchanges > $nrows && $nrows > 0, "$label: $t has a stream ($nchanges records) and rows ($nrows)");
	is($runs, 'ok', "$label: $t: its pkchangelog.tables row names exactly its data runs");
	return;
}

sub no_crash_in_log
{
	my ($label) = @_;
	my $l = slurp_file($node->logfile);
	my @bad = grep { /PANIC|TRAP:|terminated by signal (?!9)|server process .* was terminated|ERROR:.*pkchangelog worker/ }
	  split /\n/, $l;
	is(join("\n", @bad[0 .. ($#bad < 19 ? $#bad : 19)]), '',
		"$label: no PANIC, assertion failure or unexpected process death in the server log");
}

# --- 1: workload, then an immediate shutdown in the middle of it
{
	my $w = start_workload(60);
	my $got = wait_progress(100, 2.5);
	cmp_ok($got, '>=', 100, 'run 1: the workload is committing');
	$node->stop('immediate');
	my $errs = end_workload($w);
	is(scalar(@$errs), 0, 'run 1: pgbench saw no errors other than the lost connection')
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	$node->start;
	check_table('after immediate stop', $_) for ('t_lookup', 't_input');
	check_aggregate('after immediate stop', $_) for ('t_lookup', 't_input');
}

# --- 2: workload, then SIGKILL of the postmaster
{
	my $w = start_workload(60);
	my $got = wait_progress(100, 2.5);
	cmp_ok($got, '>=', 100, 'run 2: the workload is committing');
	my $pm = $node->{_pid};
	$node->kill9;
	my $errs = end_workload($w);
	is(scalar(@$errs), 0, 'run 2: pgbench saw no errors other than the lost connection')
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	# orphaned backends and workers notice the postmaster's death and exit;
	# a new postmaster refuses to start while they hold shared memory
	my $deadline = time() + 60;
	while (time() < $deadline
		&& (kill(0, $pm) || system("pgrep -f '^postgres: inv015_$$: ' >/dev/null") == 0))
	{
		usleep(100_000);
	}
	ok(!kill(0, $pm) && system("pgrep -f '^postgres: inv015_$$: ' >/dev/null") != 0,
		'the killed postmaster and its orphaned processes are gone')
	  or diag(`pgrep -af '^postgres: inv015_$$: '`);
	$node->start;
	check_table('after postmaster kill -9', $_) for ('t_lookup', 't_input');
	check_aggregate('after postmaster kill -9', $_) for ('t_lookup', 't_input');
}

# --- 3: the workload to its end
{
	my $w = start_workload(3);
	my $errs = end_workload($w);
	ok($w->{ok}, 'run 3: pgbench exits normally')
	  or diag(${ $w->{err} });
	is(scalar(@$errs), 0, 'run 3: pgbench saw no errors')
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	like(${ $w->{out} }, qr/number of failed transactions: 0 /, 'run 3: no transaction failed');
}

# background compaction happened while the tables were written: COMPACT
# snapshots followed by more APPENDs (counted before our own pk_compact)
for my $t (@tables)
{
	my $c = $node->safe_psql('postgres', qq{
SELECT count(*) FROM pk_snapshots('$t') s
WHERE commit_kind = 'COMPACT'
  AND snapshot_id < (SELECT max(snapshot_id) FROM pk_snapshots('$t') WHERE commit_kind = 'APPEND')});
	cmp_ok($c, '>=', 1, "$t: compacted ($c times) while being written");
}
# and the worker's full-compaction schedule produced changelog on the way
cmp_ok($node->safe_psql('postgres', q{
SELECT count(*) FROM pk_snapshots('t_full')
WHERE commit_kind = 'COMPACT' AND changelog_record_count > 0
  AND snapshot_id < (SELECT max(snapshot_id) FROM pk_snapshots('t_full') WHERE commit_kind = 'APPEND')}),
	'>=', 1, 't_full: full compactions with changelog ran while it was written');

# the full-compaction stream is complete after one more full compaction
my $fc = $node->safe_psql('postgres', q{SELECT pk_compact('t_full', true)});
note("final pk_compact('t_full', true): " . ($fc eq '' ? 'NULL (nothing to do)' : "snapshot $fc"));
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pk_runs('t_full') WHERE kind = 'data' AND level < (SELECT max(level) FROM pk_runs('t_full') WHERE kind = 'data')}),
	'0', 't_full: everything is in the bottom level (all written keys reported)');

check_table('at the end', $_) for @tables;
check_aggregate('at the end', $_) for @tables;

note('snapshots: '
	  . $node->safe_psql('postgres', join(' UNION ALL ', map { qq{
SELECT format('$_ %s (%s COMPACT), stream %s records, %s rows', count(*), count(*) FILTER (WHERE commit_kind = 'COMPACT'),
	(SELECT count(*) FROM pk_changes('$_')), (SELECT count(*) FROM $_)) FROM pk_snapshots('$_')} } @tables)));

no_crash_in_log('whole run');
$node->stop;
note(sprintf('runtime %.1f s', time() - $t_start));
done_testing();
