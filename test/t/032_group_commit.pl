# 032_group_commit.pl: commits of one pkmerge table share WAL flushes
# (pkchangelog.group_commit), and the change stream's readers never hand
# out a commit before its flush.
#
# 1. Eight clients of 1-row UPDATEs of one lookup table, commit_delay
#    making each WAL flush wait 2 ms for company.  group_commit on: fewer
#    WAL syncs than commits (a commit releases the table's commit lock once
#    its record is written, so the next commits write theirs during its
#    flush).  Off: at least one sync per commit (each commit of the table
#    waits under the lock for the previous one's flush).  Both: every
#    update is in the table, snapshot ids are dense, and the lookup stream
#    is a valid retract stream replaying to the table.
# 2. A commit with synchronous_commit = off leaves its WAL unflushed (the
#    WAL writer sleeps 10 s): pk_current_snapshot, pk_changes and
#    pk_consume flush it before they return, so a consumer never reads a
#    snapshot a crash could take back.
# 3. They do so too when the next WAL record will start a new page (the
#    insert position is then past a header nothing is written to yet).
# 4. With synchronous standbys named, a commit stays invisible, holding the
#    table's commit lock, until they confirm it (here: until its wait is
#    canceled).
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorkload;

my $nkeys = 1000;
my $node  = PostgreSQL::Test::Cluster->new("group032_$$");
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pkchangelog'
pkchangelog.worker_enabled = off
autovacuum = off
max_connections = 30
fsync = on
commit_delay = 2000
commit_siblings = 1
wal_writer_delay = 10s
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
$node->safe_psql('postgres',
	slurp_file("$FindBin::Bin/../setup/changelog_checker.sql"));
$node->safe_psql('postgres', qq{
CREATE TABLE t (id int PRIMARY KEY, amount bigint) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO t SELECT g, 0 FROM generate_series(1, $nkeys) g;
});

my @fileargs = PkWorkload::script_args($node,
	{ upd => "\\set id random(1, $nkeys)\nUPDATE t SET amount = amount + 1 WHERE id = :id;\n" },
	{ upd => 1 });

# the server's WAL flushes (pg_stat_io's since PostgreSQL 18)
sub stat_syncs
{
	return $node->safe_psql('postgres',
		$node->pg_version >= 18
		? "SELECT sum(fsyncs) FROM pg_stat_io WHERE object = 'wal' AND context = 'normal'"
		: 'SELECT wal_sync FROM pg_stat_wal');
}

for my $mode ('on', 'off')
{
	$node->safe_psql('postgres', qq{
ALTER SYSTEM SET pkchangelog.group_commit = $mode; SELECT pg_reload_conf();});
	my $sum0   = $node->safe_psql('postgres', 'SELECT sum(amount) FROM t');
	my $syncs0 = stat_syncs();
	my $w      = PkWorkload::start($node, 8, 3, @fileargs);
	my $errs   = PkWorkload::finish($w, "group_commit = $mode");
	ok($w->{ok}, "group_commit = $mode: pgbench exits normally") or diag(${ $w->{err} });
	is(scalar(@$errs), 0, "group_commit = $mode: pgbench saw no errors");
	my $syncs   = stat_syncs() - $syncs0;
	my $commits = $node->safe_psql('postgres', 'SELECT sum(amount) FROM t') - $sum0;
	my ($processed) = ${ $w->{out} } =~ /number of transactions actually processed: (\d+)/;
	is($commits, $processed,
		"group_commit = $mode: every committed update is in the table ($commits)");
	cmp_ok($commits, '>', 200, "group_commit = $mode: the clients committed");
	note("group_commit = $mode: $commits commits, $syncs WAL syncs");
	if ($mode eq 'on')
	{
		cmp_ok($syncs, '<', 0.7 * $commits,
			'group_commit = on: commits of the table share WAL flushes');
	}
	else
	{
		cmp_ok($syncs, '>=', $commits,
			'group_commit = off: each commit of the table flushes on its own');
	}
	PkWorkload::check_dense($node, 't', "group_commit = $mode");
	is($node->safe_psql('postgres', "SELECT check_changelog('t')"), 'ok',
		"group_commit = $mode: the lookup stream replays to the table");
}

# 2: readers flush what they could see
$node->safe_psql('postgres', q{
CREATE TABLE r (id int PRIMARY KEY, v int) USING pkmerge;
SELECT count(*) FROM pk_consume('r', 'c1');});
my %reader = (
	pk_current_snapshot => q{SELECT pk_current_snapshot('r')},
	pk_changes          => q{SELECT count(*) FROM pk_changes('r', 0)},
	pk_consume          => q{SELECT count(*) FROM pk_consume('r', 'c1')});
my $id = 0;
for my $f (sort keys %reader)
{
	# an asynchronous commit whose WAL is not flushed yet
	my ($ins, $unflushed);
	for my $try (1 .. 20)
	{
		$id++;
		my $out = $node->safe_psql('postgres', qq{
SET synchronous_commit = off;
INSERT INTO r VALUES ($id, $id);
SELECT pg_current_wal_insert_lsn() || '|' || (pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn());});
		($ins, $unflushed) = split /\|/, $out;
		last if $unflushed eq 'true';
	}
	is($unflushed, 'true', "$f: an asynchronous commit left WAL unflushed");
	$node->safe_psql('postgres', $reader{$f});
	# the WAL written by then ends at $ins, or at its page's start when
	# $ins is just past the header of a page nothing is written to yet
	is($node->safe_psql('postgres', qq{
SELECT pg_current_wal_flush_lsn() >= '$ins'::pg_lsn -
	CASE WHEN ('$ins'::pg_lsn - '0/0') % pg_size_bytes(current_setting('wal_segment_size')) = 40 THEN 40
		 WHEN ('$ins'::pg_lsn - '0/0') % 8192 = 24 THEN 24
		 ELSE 0 END}), 't',
		"$f: flushed the WAL of the commits it could see before returning");
}

# 3: the same when the next record starts a new page: the flush goes to the
# page's start, where the WAL written so far ends, not past its header
$node->safe_psql('postgres', q{
CREATE FUNCTION wal_to_page_start() RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	pos bigint;
	rem int;
	overhead int;
BEGIN
	-- a logical message's record: its length plus a fixed overhead,
	-- measured on one that stayed within a page (no page header between)
	LOOP
		pos := pg_current_wal_insert_lsn() - '0/0';
		PERFORM pg_logical_emit_message(false, 'p', repeat('x', 1000));
		overhead := (pg_current_wal_insert_lsn() - '0/0') - pos - 1000;
		EXIT WHEN pos / 8192 = (pos + 1000 + overhead) / 8192;
	END LOOP;
	FOR i IN 1 .. 50 LOOP
		pos := pg_current_wal_insert_lsn() - '0/0';
		IF pos % 8192 IN (24, 40) THEN
			RETURN true;
		END IF;
		rem := 8192 - (pos % 8192)::int;
		-- a message ending where the page does (or filling this page first)
		PERFORM pg_logical_emit_message(false, 'p',
			repeat('x', CASE WHEN rem > overhead + 300 THEN rem - overhead ELSE rem + 1000 END));
	END LOOP;
	RETURN false;
END $$;});
for my $f (sort keys %reader)
{
	is($node->safe_psql('postgres', "SELECT wal_to_page_start()"), 't',
		"$f: the next record starts a new page");
	my ($ret, $out, $err) = $node->psql('postgres', $reader{$f});
	is($ret . $err, '0', "$f: flushes the WAL written so far when the next record starts a new page");
}

# 4: with synchronous standbys named, no group commit: a commit waiting for
# their confirmation (none is connected here) is not visible, and the next
# commit of the table waits for its commit lock; canceling the wait ends
# the first commit (PostgreSQL's warning: committed locally), then the
# second
$node->safe_psql('postgres', q{
CREATE TABLE s (id int PRIMARY KEY, v int) USING pkmerge;
ALTER SYSTEM RESET pkchangelog.group_commit;});
# in effect from the start (after a reload, only once the checkpointer
# has read it)
$node->append_conf('postgresql.conf', q{
wal_level = replica
max_wal_senders = 10
synchronous_standby_names = 'nosuch'
});
$node->restart;
my %out;
sub start_insert
{
	my ($table, $i) = @_;
	return IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'),
		  '-c', "INSERT INTO $table VALUES ($i)" ],
		'>', \$out{$i}, '2>', \$out{"err$i"},
		IPC::Run::timeout(180));
}
# is the INSERT of $i waiting for what $condition says?
sub insert_waits
{
	my ($i, $condition) = @_;
	return $node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE query LIKE 'INSERT INTO s VALUES ($i)%' AND $condition});
}

sub cancel_insert
{
	my ($i) = @_;
	$node->safe_psql('postgres', qq{
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE query LIKE 'INSERT INTO s VALUES ($i)%'});
	return;
}
my @insert = (start_insert('s', 1));
ok(insert_waits(1, q{wait_event = 'SyncRep'}),
	'synchronous standby named: the first commit waits for its confirmation');
push @insert, start_insert('s', 2);
ok(insert_waits(2, q{wait_event_type = 'Lock'}),
	'synchronous standby named: the second commit waits for the commit lock');
is($node->safe_psql('postgres', 'SELECT count(*) FROM s'), '0',
	'synchronous standby named: neither commit is visible yet');
cancel_insert(1);
ok(insert_waits(2, q{wait_event = 'SyncRep'}),
	'synchronous standby named: the second commit goes on once the first ends');
is($node->safe_psql('postgres', 'SELECT id FROM s'), '1',
	'synchronous standby named: the first commit is visible once it ends, the second not yet');
cancel_insert(2);
ok( $node->poll_query_until('postgres', 'SELECT count(*) = 2 FROM s'),
	'synchronous standby named: both commits in the end');
$_->finish for @insert;
like($out{err1}, qr/canceling wait for synchronous replication/,
	'synchronous standby named: the first commit ended with the canceled wait');

$node->stop;
done_testing();
