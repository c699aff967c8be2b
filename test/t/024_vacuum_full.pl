# 024_vacuum_full.pl: VACUUM FULL of a pkmerge table is crash-safe and
# replicates.  Its backend is killed (SIGKILL: the postmaster restarts
# every backend and recovers) at two points: while its full compaction
# waits to commit its runs (the catalog row of the table is locked by
# another session), and while it copies the runs into the new file (the
# catalog row of a run it is to move is locked).  Both times the table
# comes back as it was: the same rows (sequential scan and key lookups),
# snapshots and changes.  Stopped in immediate mode right after a VACUUM
# FULL committed, the server comes back with the table rewritten: the
# same rows and changes, one COMPACT snapshot more, a new file that is
# exactly its runs' pages, the old one gone.  A physical standby replays
# all of it and reads what the primary reads.  Writes, VACUUM and another
# VACUUM FULL work on the new file afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new("vf_$$");
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE big (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
CREATE TABLE small (id int PRIMARY KEY, v int) USING pkmerge;
});
# multi-page runs, several commits (so several changelog runs to move)
for my $i (0 .. 4)
{
	$node->safe_psql('postgres',
		"INSERT INTO big SELECT g, md5(g::text) FROM generate_series($i * 20000 + 1, $i * 20000 + 20000) g");
}
$node->safe_psql('postgres', q{UPDATE big SET v = 'updated' WHERE id % 1000 = 0});
$node->safe_psql('postgres', q{INSERT INTO small SELECT g, g FROM generate_series(1, 1000) g});
$node->safe_psql('postgres', q{UPDATE small SET v = -v WHERE id <= 10});

# the slot keeps the WAL from before the backup on (immediately_reserve):
# unreserved until the standby connects, a checkpoint (the end of a crash
# recovery below) could remove the segment the standby starts from
$node->safe_psql('postgres', q{SELECT pg_create_physical_replication_slot('vfs', true)});
$node->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new("vfs_$$");
$standby->init_from_backup($node, 'bkp', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'vfs'\n");
$standby->start;

my %query = (
	rows => q{SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM big},
	lookups => q{SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT string_agg(coalesce((SELECT v FROM big WHERE id = k), 'absent'), ',' ORDER BY k)
		FROM unnest(ARRAY[1, 1000, 12345, 99999, 100000, 100001]) k},
	changes => q{SELECT count(*), md5(string_agg(snapshot_id || rowkind || "row"::text, ',' ORDER BY snapshot_id, "row"->>'id', rowkind))
		FROM pk_changes('big')},
	small => q{SELECT count(*), sum(v), (SELECT count(*) FROM pk_changes('small')) FROM small},
);
my $snapshots = q{SELECT string_agg(snapshot_id || ' ' || commit_kind, ',' ORDER BY snapshot_id) FROM pk_snapshots('big')};
my $file_is_runs = q{SELECT pg_relation_size('big') =
	(SELECT sum(nblocks) * 8192 FROM pkchangelog.runs WHERE relid = 'big'::regclass)};

my %before = map { $_ => $node->safe_psql('postgres', $query{$_}) } keys %query;
my $snaps_before = $node->safe_psql('postgres', $snapshots);
my ($last) = $snaps_before =~ /(\d+) \w+$/;
my $snaps_after = "$snaps_before," . ($last + 1) . " COMPACT";
like($before{rows}, qr/^100000\|/, '100k rows to rewrite');

sub check_same
{
	my ($n, $what) = @_;
	for my $k (sort keys %query)
	{
		is($n->safe_psql('postgres', $query{$k}), $before{$k}, "$what: $k as before");
	}
}

# Kill VACUUM FULL's backend while it waits for the lock on the row that
# $lock_query locks (another session holds it), and let the server recover.
sub crash_vacuum_full
{
	my ($what, $lock_query) = @_;
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("BEGIN; $lock_query");
	my $vf = $node->background_psql('postgres', on_error_stop => 0);
	$vf->query_until(qr/started/, "\\echo started\nVACUUM FULL big;\n");
	my $pid = '';
	for (my $i = 0; $i < 600 && $pid eq ''; $i++)
	{
		$pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE query LIKE 'VACUUM FULL big%' AND wait_event_type = 'Lock'});
		usleep(50_000) if $pid eq '';
	}
	like($pid, qr/^\d+$/, "$what: VACUUM FULL waits for the locked row");
	# a query may still reach the server between the kill and the
	# postmaster's noticing it: wait for the restart in the log
	my $logstart = -s $node->logfile;
	kill(9, $pid);
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $logstart);
	$node->wait_for_log(qr/database system is ready to accept connections/, $logstart);
	$node->poll_query_until('postgres', 'SELECT true') or die 'the server did not recover';
	eval { $holder->quit; };
	eval { $vf->quit; };
	is($node->safe_psql('postgres', $snapshots), $snaps_before,
		"$what: VACUUM FULL did not commit");
	check_same($node, $what);
}

crash_vacuum_full('killed in the compaction',
	q{SELECT 1 FROM pkchangelog.tables WHERE relid = 'big'::regclass FOR UPDATE;});
crash_vacuum_full('killed in the copy',
	q{SELECT 1 FROM pkchangelog.runs WHERE relid = 'big'::regclass AND kind = 'changelog'
	  ORDER BY start_block DESC LIMIT 1 FOR UPDATE;});

# --- VACUUM FULL commits; immediate stop right after it
my $old_path = $node->safe_psql('postgres', q{SELECT pg_relation_filepath('big')});
$node->safe_psql('postgres', q{VACUUM FULL big, small});
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $snapshots), $snaps_after,
	'after VACUUM FULL and a crash: one COMPACT snapshot more');
check_same($node, 'after VACUUM FULL and a crash');
is($node->safe_psql('postgres', $file_is_runs), 't', 'the new file is exactly the runs\' pages');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('big') WHERE kind = 'data'}), '1',
	'one data run');
ok(!-e $node->data_dir . '/' . $old_path, 'the old file is gone');

# --- the standby replayed both
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
check_same($standby, 'standby');
is($standby->safe_psql('postgres', $snapshots), $snaps_after, 'standby: snapshots');

# --- the new file in use: writes, VACUUM, another VACUUM FULL
$node->safe_psql('postgres', q{INSERT INTO big VALUES (100001, 'new')});
$node->safe_psql('postgres', q{DELETE FROM big WHERE id = 1});
$node->safe_psql('postgres', q{VACUUM big});
$node->safe_psql('postgres', q{VACUUM FULL big});
is($node->safe_psql('postgres', $query{lookups}), 'absent,updated,' . md5hex(12345) . ',' . md5hex(99999) . ',updated,new',
	'writes after VACUUM FULL, then VACUUM and VACUUM FULL again');
is($node->safe_psql('postgres', $file_is_runs), 't', 'the file is exactly the runs\' pages again');
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
is($standby->safe_psql('postgres', $query{lookups}), $node->safe_psql('postgres', $query{lookups}),
	'standby: the same rows after the second VACUUM FULL');

sub md5hex
{
	my $k = shift;
	return $node->safe_psql('postgres', "SELECT md5('$k')");
}

$standby->stop;
$node->stop;
done_testing();
