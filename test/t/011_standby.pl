# 011_standby.pl: a physical streaming standby serves a pkmerge table exactly
# as the primary does.  Runs are WAL-logged as full-page images and their
# catalog rows are heap rows, so after replay the standby must return the
# same rows (count, ordered md5 of every row, key lookups), the same
# pk_snapshots and pk_runs, after inserts, upserts, updates, deletes across
# several commits, a ~50k-row insert whose run spans many pages, a TRUNCATE,
# and more writes after the standby has already read the table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Digest::MD5;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');

# A table that exists before the base backup, with a committed run in it
$primary->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text, n bigint) USING pkmerge;
INSERT INTO t SELECT g, 'base ' || g, g FROM generate_series(1, 100) g;
});

$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
# cancel standby queries that block replay quickly (see the cursor test)
$standby->append_conf('postgresql.conf', 'max_standby_streaming_delay = 1s');
$standby->start;

my $rows_sql = q{SELECT count(*), md5(coalesce(string_agg(format('%s|%s|%s', id, v, n), ',' ORDER BY id), '')) FROM t};
my $snap_sql = q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', snapshot_id, commit_kind, commit_time, commit_user, commit_xid, total_record_count, delta_record_count, changelog_record_count), E'\n' ORDER BY snapshot_id) FROM pk_snapshots('t')};
my $runs_sql = q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', run_id, level, kind, record_count, size_bytes, min_key, max_key, created_snapshot), E'\n' ORDER BY run_id) FROM pk_runs('t')};
# point lookups through the key index for a sample of keys, present or not
my $lookup_sql = q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT md5(string_agg(coalesce((SELECT format('%s|%s|%s', id, v, n) FROM t WHERE id = k), 'absent'), ',' ORDER BY k))
FROM generate_series(-5, 60000, 997) k};

sub compare
{
	my ($label, $expect_count) = @_;

	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

	my $p = $primary->safe_psql('postgres', $rows_sql);
	my ($pcount) = split /\|/, $p;
	is($pcount, $expect_count, "$label: primary has the expected row count");

	my ($ret, $s, $err) = $standby->psql('postgres', $rows_sql);
	is($ret, 0, "$label: standby can scan the table") or diag($err);
	is($s, $p, "$label: standby returns the same rows (count and md5 of all rows)");

	($ret, $s, $err) = $standby->psql('postgres', $lookup_sql);
	is($ret, 0, "$label: standby key lookups run") or diag($err);
	is($s, $primary->safe_psql('postgres', $lookup_sql),
		"$label: standby key lookups return the same rows");

	is($standby->safe_psql('postgres', $snap_sql),
		$primary->safe_psql('postgres', $snap_sql),
		"$label: same pk_snapshots");
	is($standby->safe_psql('postgres', $runs_sql),
		$primary->safe_psql('postgres', $runs_sql),
		"$label: same pk_runs");
	is($standby->safe_psql('postgres',
			q{SELECT pg_relation_size('t') >= (SELECT coalesce(sum(size_bytes), 0) FROM pk_runs('t'))}),
		't', "$label: the standby's relation file holds the runs");
	is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
		"$label: the standby is still a standby");
}

compare('table from the base backup', 100);

# several commits: inserts, upserts, updates, deletes
$primary->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'second ' || g, g * 2 FROM generate_series(50, 300) g;
});
$primary->safe_psql('postgres', q{
UPDATE t SET v = v || ' updated', n = n + 1000 WHERE id % 3 = 0;
});
$primary->safe_psql('postgres', q{
DELETE FROM t WHERE id BETWEEN 10 AND 40;
});
$primary->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (1, 'replaced', -1), (20, 'reinserted', -20);
UPDATE t SET id = id + 100000 WHERE id = 299;
DELETE FROM t WHERE id = 300;
SAVEPOINT s;
DELETE FROM t;
ROLLBACK TO s;
COMMIT;
});
# an aborted transaction leaves nothing behind on either side
$primary->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 'aborted', 0 FROM generate_series(1, 1000) g;
ROLLBACK;
});
compare('after small commits', 269);

# a big insert: ~50k rows in one run of many pages (random-looking payload)
$primary->safe_psql('postgres', q{
INSERT INTO t SELECT g, md5(g::text) || md5((g * 7)::text), g FROM generate_series(1000, 50999) g;
});
ok($primary->safe_psql('postgres',
		q{SELECT max(size_bytes) > 20 * 8192 FROM pk_runs('t')}) eq 't',
	'the big insert wrote a run spanning many pages');
compare('after a 50k-row insert', 269 + 50000);

# more writes after the standby has read (and cached) the table
$primary->safe_psql('postgres', q{
UPDATE t SET n = -n WHERE id BETWEEN 20000 AND 20999;
});
$primary->safe_psql('postgres', q{
DELETE FROM t WHERE id % 10 = 7 AND id >= 1000;
});
$primary->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'late ' || g, g FROM generate_series(50500, 52000) g;
});
compare('after more writes', 269 + 50000 - 5000 + 1051);

# TRUNCATE gives the table new storage; then new rows
$primary->safe_psql('postgres', q{
TRUNCATE t;
INSERT INTO t SELECT g, 'after truncate ' || g, g FROM generate_series(1, 5000) g;
});
compare('after TRUNCATE and refill', 5000);

# a table created after the standby started, written in the same transaction
$primary->safe_psql('postgres', q{
BEGIN;
CREATE TABLE t2 (k text PRIMARY KEY, x int) USING pkmerge;
INSERT INTO t2 SELECT 'k' || g, g FROM generate_series(1, 20000) g;
COMMIT;
});
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
my $t2sql = q{SELECT count(*), md5(string_agg(k || '=' || x, ',' ORDER BY k)) FROM t2};
is($standby->safe_psql('postgres', $t2sql), $primary->safe_psql('postgres', $t2sql),
	'table created and filled in one transaction replicates');

# --- space reuse under a standby reader.  A standby query reads runs that
# the primary then compacts away; VACUUM frees their blocks and new runs
# reuse them.  Without hot_standby_feedback the standby query must either
# return exactly the rows of its snapshot or be cancelled by a recovery
# conflict; with hot_standby_feedback it must return exactly its snapshot.
# Never other rows.
sub cursor_case
{
	my ($tbl, $feedback) = @_;
	my $label = $feedback ? "$tbl (hot_standby_feedback on)" : "$tbl (no feedback)";

	# lookup: compaction deletes its input runs (producer none would keep
	# them as the commits' change stream until their snapshots expire)
	$primary->safe_psql('postgres', qq{
CREATE TABLE $tbl (id int PRIMARY KEY, v text) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(1, 4000) g;
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(4001, 8000) g;
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(8001, 12000) g;
});
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $old_blocks = $primary->safe_psql('postgres', qq{
SELECT string_agg(start_block || '+' || nblocks, ',') FROM pkchangelog.runs WHERE relid = '$tbl'::regclass});
	my $old_ids = $primary->safe_psql('postgres', qq{
SELECT string_agg(run_id::text, ',') FROM pkchangelog.runs WHERE relid = '$tbl'::regclass});

	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $standby->connstr('postgres') ],
		'<', \$in, '>', \$out, '2>', \$err,
		IPC::Run::timeout(120));
	my $session_do = sub {
		my ($sql, $marker) = @_;
		$in .= "$sql\n\\echo $marker\n";
		$h->pump while $h->pumpable && $out !~ /^$marker$/m;
	};
	$session_do->(qq{BEGIN ISOLATION LEVEL REPEATABLE READ;
DECLARE c CURSOR FOR SELECT id, v FROM $tbl;
FETCH 10 FROM c;}, 'FETCHED_FIRST');
	my @first = grep { /\|/ } split /\n/, $out;
	is(scalar(@first), 10, "$label: standby cursor read its first rows");
	$out = '';

	if ($feedback)
	{
		# the walreceiver reports the standby's xmin (now holding the
		# cursor's snapshot) as soon as the setting is reloaded
		$standby->safe_psql('postgres', q{
ALTER SYSTEM SET hot_standby_feedback = on;
ALTER SYSTEM SET wal_receiver_status_interval = '1s';
SELECT pg_reload_conf();});
		$primary->poll_query_until('postgres',
			q{SELECT backend_xmin IS NOT NULL FROM pg_stat_replication})
		  or die 'no hot standby feedback';
	}

	$primary->safe_psql('postgres', qq{SELECT pk_compact('$tbl', true)});
	$primary->safe_psql('postgres', qq{VACUUM $tbl});
	for my $b (0 .. 2)
	{
		my $lo = 20001 + $b * 4000;
		$primary->safe_psql('postgres', qq{
INSERT INTO $tbl SELECT g, 'new ' || g FROM generate_series($lo, $lo + 3999) g;});
	}
	my $reused = $primary->safe_psql('postgres', qq{
SELECT count(*) FROM pkchangelog.runs r,
	unnest(string_to_array('$old_blocks', ',')) o
WHERE r.relid = '$tbl'::regclass AND r.run_id NOT IN ($old_ids)
  AND r.start_block < split_part(o, '+', 1)::bigint + split_part(o, '+', 2)::bigint
  AND split_part(o, '+', 1)::bigint < r.start_block + r.nblocks});
	if ($feedback)
	{
		is($reused, 0, "$label: blocks the standby's snapshot can read are not reused");
	}
	else
	{
		cmp_ok($reused, '>', 0, "$label: new runs reuse blocks of the compacted-away runs");
	}
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

	$session_do->(q{FETCH ALL FROM c;
COMMIT;}, 'FETCHED_ALL');
	my @rest = grep { /\|/ } split /\n/, $out;
	my @all = (@first, @rest);
	# every row the cursor returned is a row of its snapshot (old payload)
	my @wrong = grep {
		my ($id, $v) = split /\|/, $_, 2;
		!($id >= 1 && $id <= 12000
			&& $v eq Digest::MD5::md5_hex($id) . Digest::MD5::md5_hex($id + 1))
	} @all;
	is(scalar(@wrong), 0, "$label: the standby cursor returned no row outside its snapshot")
	  or diag(join("\n", @wrong[0 .. ($#wrong < 9 ? $#wrong : 9)]));
	my %seen;
	$seen{ (split /\|/)[0] }++ for @all;
	my $exact = scalar(keys %seen) == 12000 && scalar(@all) == 12000;
	if ($feedback)
	{
		ok($exact, "$label: the standby cursor returned exactly its snapshot")
		  or diag("rows " . scalar(@all) . ", distinct " . scalar(keys %seen) . ", stderr: $err");
	}
	else
	{
		ok(($err =~ /conflict with recovery/ && scalar(@rest) == 0) || $exact,
			"$label: the standby cursor returned exactly its snapshot or was cancelled by a recovery conflict")
		  or diag("rows " . scalar(@all) . ", distinct " . scalar(keys %seen) . ", stderr: $err");
	}
	note("$label: standby cursor outcome: "
		  . ($err =~ /conflict with recovery/ ? "cancelled ($err)" : scalar(@all) . ' rows'));
	$in .= "\\q\n";
	eval { $h->finish; };
	$h->kill_kill if $@;

	if ($feedback)
	{
		$standby->safe_psql('postgres', q{
ALTER SYSTEM RESET hot_standby_feedback;
ALTER SYSTEM RESET wal_receiver_status_interval;
SELECT pg_reload_conf();});
	}

	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $rsql = qq{SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $tbl};
	my $rp = $primary->safe_psql('postgres', $rsql);
	like($rp, qr/^24000\|/, "$label: primary holds the compacted rows and the new ones");
	is($standby->safe_psql('postgres', $rsql), $rp,
		"$label: standby identical after compaction, VACUUM and new runs");
	my $rruns = qq{SELECT string_agg(format('%s|%s|%s|%s|%s', run_id, level, record_count, size_bytes, created_snapshot), ',' ORDER BY run_id) FROM pk_runs('$tbl')};
	is($standby->safe_psql('postgres', $rruns), $primary->safe_psql('postgres', $rruns),
		"$label: same runs");
}

cursor_case('r1', 0);
cursor_case('r2', 1);

# the standby survives a restart and still agrees
$standby->restart;
compare('after a standby restart', 5000);

for my $n ($primary, $standby)
{
	unlike(slurp_file($n->logfile), qr/PANIC|TRAP:|terminated by signal/,
		$n->name . ': no PANIC, assertion failure or crash in the log');
}

$standby->stop;
$primary->stop;
done_testing();
