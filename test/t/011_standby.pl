# 011_standby.pl: a physical streaming standby serves a pkmerge table exactly
# as the primary does.  Runs are WAL-logged as full-page images and their
# catalog rows are heap rows, so after replay the standby must return the
# same rows (count, ordered md5 of every row, key lookups), the same
# pk_snapshots and pk_runs, after inserts, upserts, updates, deletes across
# several commits, a ~50k-row insert whose run spans many pages, a TRUNCATE,
# and more writes after the standby has already read the table; and the
# same change stream of small lookup and input commits (commit log
# records, their changelogs naming the data rows they repeat).  A standby
# query reading runs that the primary compacts away returns exactly its
# snapshot (or is cancelled by a recovery conflict) while new runs are
# placed, whether the dead runs' catalog rows were vacuumed or only their
# index entries marked killed.
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
			q{SELECT pg_relation_size('t') >= (SELECT coalesce(sum(nblocks), 0) * 8192
				FROM pkchangelog.runs WHERE relid = 't'::regclass)}),
		't', "$label: the standby's relation file holds the runs");
	is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
		"$label: the standby is still a standby");
}

compare('table from the base backup', 100);

# A standby session in REPEATABLE READ with a cursor over $tbl that has
# read its first 10 rows (so it holds the runs of its snapshot open).
sub standby_cursor
{
	my ($tbl, $label) = @_;
	my $s = { in => '', out => '', err => '' };
	$s->{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $standby->connstr('postgres') ],
		'<', \$s->{in}, '>', \$s->{out}, '2>', \$s->{err},
		IPC::Run::timeout(120));
	standby_cursor_do($s, qq{BEGIN ISOLATION LEVEL REPEATABLE READ;
DECLARE c CURSOR FOR SELECT id, v FROM $tbl;
FETCH 10 FROM c;}, 'FETCHED_FIRST');
	my @first = grep { /\|/ } split /\n/, $s->{out};
	is(scalar(@first), 10, "$label: standby cursor read its first rows");
	return ($s, @first);
}

# after the cursor: both hold the compacted rows and the new ones, in the same runs
sub same_after_reuse
{
	my ($tbl, $nrows, $label) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $rsql = qq{SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $tbl};
	my $rp = $primary->safe_psql('postgres', $rsql);
	like($rp, qr/^$nrows\|/, "$label: primary holds the compacted rows and the new ones");
	is($standby->safe_psql('postgres', $rsql), $rp,
		"$label: standby identical after compaction, VACUUM and new runs");
	my $rruns = qq{SELECT string_agg(format('%s|%s|%s|%s|%s', run_id, level, record_count, size_bytes, created_snapshot), ',' ORDER BY run_id) FROM pk_runs('$tbl')};
	is($standby->safe_psql('postgres', $rruns), $primary->safe_psql('postgres', $rruns),
		"$label: same runs");
}

sub standby_cursor_do
{
	my ($s, $sql, $marker) = @_;
	$s->{out} = '';
	$s->{in} .= "$sql\n\\echo $marker\n";
	$s->{h}->pump while $s->{h}->pumpable && $s->{out} !~ /^$marker$/m;
}

# the cursor's other rows (none if it failed: see $s->{err}); the session ends
sub standby_cursor_rest
{
	my ($s) = @_;
	standby_cursor_do($s, "FETCH ALL FROM c;\nCOMMIT;", 'FETCHED_ALL');
	my @rest = grep { /\|/ } split /\n/, $s->{out};
	$s->{in} .= "\\q\n";
	eval { $s->{h}->finish; };
	$s->{h}->kill_kill if $@;
	return @rest;
}


# --- runs whose catalog rows are dead but not vacuumed.  Once no snapshot
# of the primary can see a dead row, the primary's index scans mark its
# index entries killed, which no WAL record tells the standby.  A standby
# query may still read the run: its blocks must not be reused before
# VACUUM removes the row (whose WAL record cancels such queries first).
# Here VACUUM has left gaps (so writers look for one), a standby cursor
# reads runs B and C, the primary compacts them away and kills their
# entries, and a new run E that would fit where B lies is written.  (First
# of the cases: the catalog is small, so no page of it fills and is
# pruned, which would remove the rows and cancel the standby query first.)
sub le_hex
{
	my ($v, $n) = @_;
	return join ' ', map { sprintf '%02x', ($v >> (8 * $_)) & 0xFF } 0 .. $n - 1;
}
{
	my $tbl = 'r3';
	my $val = sub { my ($id) = @_; Digest::MD5::md5_hex($id) . Digest::MD5::md5_hex($id + 1) };
	$primary->safe_psql('postgres', q{
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
CREATE EXTENSION pageinspect;});
	$primary->safe_psql('postgres', qq{
CREATE TABLE $tbl (id int PRIMARY KEY, v text) USING pkmerge WITH (changelog_producer = 'lookup');
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(1, 4000) g;
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(4001, 8000) g;
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(8001, 12000) g;
});
	# B: the three runs compacted; VACUUM frees theirs: gaps, writers look
	$primary->safe_psql('postgres', qq{SELECT pk_compact('$tbl', true)});
	$primary->safe_psql('postgres', qq{VACUUM $tbl});
	# C: a small run, in the first gap
	$primary->safe_psql('postgres', qq{
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(12001, 12500) g;});
	my $read = $primary->safe_psql('postgres', qq{
SELECT string_agg(run_id || ':' || start_block || ':' || nblocks, ',' ORDER BY run_id)
FROM pkchangelog.runs WHERE relid = '$tbl'::regclass AND kind = 'data'});
	my @read = map { [ split /:/ ] } split /,/, $read;
	is(scalar(@read), 2, "$tbl: the standby will read two data runs");
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

	my ($cursor, @first) = standby_cursor($tbl, $tbl);

	# B and C compacted away; an index scan of the primary kills their entries
	$primary->safe_psql('postgres', qq{SELECT pk_compact('$tbl', true)});
	# (in run_id order, so through runs_pkey, whose entries cat_used_extents
	# reads)
	my $kill = qq{SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off;
SELECT nblocks FROM pkchangelog.runs WHERE relid = '$tbl'::regclass ORDER BY run_id};
	like($primary->safe_psql('postgres', $kill =~ s/SELECT/EXPLAIN (COSTS OFF) SELECT/r),
		qr/Index Scan using runs_pkey/, "$tbl: the primary reads the runs through runs_pkey");
	$primary->safe_psql('postgres', $kill);
	my $relid = $primary->safe_psql('postgres', qq{SELECT '$tbl'::regclass::oid});
	my $keys = join ',', map { "'" . le_hex($relid, 4) . ' 00 00 00 00 ' . le_hex($_->[0], 8) . "'" } @read;
	is($primary->safe_psql('postgres', qq{
SELECT count(*) FROM generate_series(1, pg_relation_size('pkchangelog.runs_pkey') / 8192 - 1) b,
	bt_page_items('pkchangelog.runs_pkey', b::int) i
WHERE i.dead AND i.data IN ($keys)}), 2,
		"$tbl: the primary marked the index entries of the compacted runs killed")
	  or diag("xmins " . $primary->safe_psql('postgres', q{SELECT string_agg(backend_type || ':' || backend_xmin, ',') FROM pg_stat_activity WHERE backend_xmin IS NOT NULL}) . " keys $keys\n" . $primary->safe_psql('postgres', qq{
SELECT b, i.itemoffset, i.htid, i.dead, i.data FROM generate_series(1, pg_relation_size('pkchangelog.runs_pkey') / 8192 - 1) b,
	bt_page_items('pkchangelog.runs_pkey', b::int) i WHERE i.data LIKE '} . le_hex($relid, 4) . qq{%'}));

	# E: too large for the gaps VACUUM left, small enough for B's blocks
	$primary->safe_psql('postgres', qq{
INSERT INTO $tbl SELECT g, md5(g::text) || md5((g + 1)::text) FROM generate_series(20001, 28000) g;});
	my $overlaps = join ' OR ', map {
		"(r.start_block < $_->[1] + $_->[2] AND $_->[1] < r.start_block + r.nblocks)"
	} @read;
	is($primary->safe_psql('postgres', qq{
SELECT count(*) FROM pkchangelog.runs r
WHERE r.relid = '$tbl'::regclass AND r.run_id > $read[-1][0] AND ($overlaps)}), 0,
		"$tbl: no new run is placed over runs whose rows are not vacuumed")
	  or diag("read $read\n" . $primary->safe_psql('postgres', qq{
SELECT run_id, kind, start_block, nblocks FROM pkchangelog.runs WHERE relid = '$tbl'::regclass ORDER BY start_block}));
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

	my @all = (@first, standby_cursor_rest($cursor));
	my $err = $cursor->{err};
	my @wrong = grep {
		my ($id, $v) = split /\|/, $_, 2;
		!($id >= 1 && $id <= 12500 && $v eq $val->($id))
	} @all;
	my %seen;
	$seen{ (split /\|/)[0] }++ for @all;
	ok(scalar(@wrong) == 0
		  && (($err =~ /conflict with recovery/) || (scalar(keys %seen) == 12500 && scalar(@all) == 12500)),
		"$tbl: the standby cursor returned exactly its snapshot or was cancelled by a recovery conflict")
	  or diag("rows " . scalar(@all) . ", wrong " . scalar(@wrong) . ", stderr: $err");
	note("$tbl: standby cursor outcome: "
		  . ($err =~ /conflict with recovery/ ? "cancelled ($err)" : scalar(@all) . " rows $err"));

	$primary->safe_psql('postgres', q{
DROP EXTENSION pageinspect;
ALTER SYSTEM RESET autovacuum;
SELECT pg_reload_conf();});
	same_after_reuse($tbl, 20500, $tbl);
}


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

# small commits of lookup and input tables: their snapshots are commit
# log records whose changelog names the data rows it repeats; replayed,
# the standby tells the same change stream
for my $p ('lookup', 'input')
{
	$primary->safe_psql('postgres', qq{
CREATE TABLE cl_$p (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = '$p');
INSERT INTO cl_$p SELECT g, 'v' || g FROM generate_series(1, 5) g;});
	$primary->safe_psql('postgres', "UPDATE cl_$p SET v = v || '+' WHERE id = " . ($_ % 5 + 1))
	  for 1 .. 12;
	$primary->safe_psql('postgres', qq{DELETE FROM cl_$p WHERE id = 3});
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $csql = qq{SELECT count(*) || ' ' || md5(string_agg(snapshot_id || rowkind || "row"::text, ','
		ORDER BY snapshot_id, rowkind, "row"::text)) FROM pk_changes('cl_$p')};
	my $changes = $primary->safe_psql('postgres', $csql);
	like($changes, qr/^30 /, "cl_$p: the primary's stream (5 +I, 12 -U/+U pairs, a -D)");
	is($standby->safe_psql('postgres', $csql), $changes, "cl_$p: the standby's stream is the same");
	is($standby->safe_psql('postgres',
			qq{SELECT count(*) FROM pkchangelog.log_snapshots('cl_$p') WHERE commit_kind = 'APPEND'}),
		'14', "cl_$p: every commit a record of the commit log on the standby");
}

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

	my ($cursor, @first) = standby_cursor($tbl, $label);

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

	my @rest = standby_cursor_rest($cursor);
	my @all = (@first, @rest);
	my $err = $cursor->{err};
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

	if ($feedback)
	{
		$standby->safe_psql('postgres', q{
ALTER SYSTEM RESET hot_standby_feedback;
ALTER SYSTEM RESET wal_receiver_status_interval;
SELECT pg_reload_conf();});
	}

	same_after_reuse($tbl, 24000, $label);
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
