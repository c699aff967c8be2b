# 029_two_phase.pl: transactions prepared after pkmerge writes keep their
# prepared state across a clean restart and an immediate stop, and become
# visible exactly once at COMMIT PREPARED from another session (or vanish at
# ROLLBACK PREPARED), for every producer; a writer of the same table waits
# for the prepared transaction and then follows it; the background worker
# is not held up by a prepared transaction's commit lock (it compacts the
# other tables, and that table once it is committed); logical decoding with
# and without two_phase shows each change once, and a slot created while a
# transaction is prepared (its records skipped: no slot then) outputs only
# what commits after it; and one transaction driven
# through two databases the way a transaction manager does (PREPARE in
# each, then COMMIT PREPARED in each, a crash in between) commits in both.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib $FindBin::Bin;
use PkWorker;

my $node = PkWorker::start_node("twophase029_$$", q{
pkchangelog.worker_naptime = 50ms
max_prepared_transactions = 10
log_min_messages = warning
}, allows_streaming => 'logical');

my @producers = ('none', 'input', 'lookup', 'full-compaction');
my %table = map { my $t = $_; $t =~ s/-/_/; ($_ => "t_$t") } @producers;
my $checker = slurp_file("$FindBin::Bin/../setup/changelog_checker.sql");
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
$node->safe_psql('postgres', $checker);
$node->safe_psql('postgres', q{
SELECT 'slot' FROM pg_create_logical_replication_slot('plain', 'test_decoding');
SELECT 'slot' FROM pg_create_logical_replication_slot('twophase', 'test_decoding', false, true);
});
for my $p (@producers)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $table{$p} (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = '$p');
INSERT INTO $table{$p} SELECT g, g FROM generate_series(1, 100) g;
});
}

sub rows
{
	my ($t) = @_;
	return $node->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM $t WHERE id IN (1, 2, 500)");
}

sub dense
{
	my ($t) = @_;
	return $node->safe_psql('postgres', qq{
SELECT count(*) = max(snapshot_id) - min(snapshot_id) + 1 FROM pk_snapshots('$t')});
}

# decoded lines of the slot naming our tables (test_decoding)
sub decoded
{
	my ($slot) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(data, E'\\n') FROM pg_logical_slot_get_changes('$slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1')
WHERE data NOT LIKE 'table pkchangelog.%'});
}
decoded($_) for ('plain', 'twophase');

# --- one prepared transaction per producer
for my $p (@producers)
{
	my $t = $table{$p};
	$node->safe_psql('postgres', qq{
BEGIN;
UPDATE $t SET v = v + 1000 WHERE id = 1;
DELETE FROM $t WHERE id = 2;
INSERT INTO $t VALUES (500, 500);
PREPARE TRANSACTION 'tx_$t';
});
	is(rows($t), '1:1,2:2', "$p: the prepared writes are not visible");
}
like(decoded('twophase'), qr/PREPARE TRANSACTION 'tx_t_none'.*PREPARE TRANSACTION 'tx_t_lookup'/s,
	'the two_phase slot decodes the transactions at PREPARE');
# (the worker's full compaction of t_full_compaction may commit its first
# changes, ids 1 to 100, at any time: the prepared changes are these)
unlike(decoded('plain'), qr/DELETE|id\[integer\]:500 |v\[integer\]:1001/,
	'the plain slot decodes nothing prepared before COMMIT PREPARED');

# --- a writer of the same table waits for the prepared transaction
my $writer = $node->background_psql('postgres', on_error_stop => 0);
$writer->query_until(qr/started/, "\\echo started\nUPDATE t_lookup SET v = v + 1 WHERE id = 3;\n");
ok($node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity
 WHERE query LIKE 'UPDATE t_lookup SET v = v + 1 WHERE id = 3%' AND wait_event_type = 'Lock'}),
	'a writer of the table waits for the prepared transaction');

# --- the worker is not held up by a prepared transaction: with the worker
# off, t_held gets two runs (a compaction is due) and a transaction writing
# it is prepared; with the worker on again, t_held's compaction gives up
# waiting for the commit lock (and waits before trying again), while
# t_other, due as well, is compacted
sub set_worker
{
	my ($on) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET pkchangelog.worker_enabled = $on");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	return;
}
set_worker('off');
for my $t ('t_held', 't_other')
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, v int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, compaction_small_run_ratio = 0)});
	$node->safe_psql('postgres', "INSERT INTO $t VALUES ($_, $_)") for (1 .. 2);
}
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t_held VALUES (3, 3);
PREPARE TRANSACTION 'tx_held';
});
set_worker('on');
ok($node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pk_snapshots('t_other') WHERE commit_kind = 'COMPACT'}),
	'the worker compacts another table while a prepared transaction holds one');
ok($node->wait_for_log(qr/lock timeout/, 0), "t_held's compaction gave up waiting for the prepared transaction");
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pk_snapshots('t_held') WHERE commit_kind = 'COMPACT'}), '0',
	't_held is not compacted while the prepared transaction holds its commit lock');
$node->safe_psql('postgres', q{COMMIT PREPARED 'tx_held'});
ok($node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pk_snapshots('t_held') WHERE commit_kind = 'COMPACT'}),
	't_held is compacted after COMMIT PREPARED');
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM t_held'), '1,2,3',
	't_held holds the prepared row and the others');

# --- a clean restart: the prepared transactions stay (the waiting writer
# is ended first; isolation spec prepared_commit has it follow a commit)
$node->safe_psql('postgres', q{
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE query LIKE 'UPDATE t_lookup SET v = v + 1 WHERE id = 3%'});
eval { $writer->quit; };
$node->restart;
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '4',
	'the prepared transactions survive a restart');
is(rows('t_none'), '1:1,2:2', 'still not visible after the restart');

$node->safe_psql('postgres', q{COMMIT PREPARED 'tx_t_none'});
$node->safe_psql('postgres', q{COMMIT PREPARED 'tx_t_lookup'});
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'tx_t_input'});
is(rows('t_none'), '1:1001,500:500', 'none: committed after the restart');
is(rows('t_lookup'), '1:1001,500:500', 'lookup: committed after the restart');
is(rows('t_input'), '1:1,2:2', 'input: rolled back after the restart');

# --- an immediate stop with one still prepared
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{SELECT gid FROM pg_prepared_xacts}), 'tx_t_full_compaction',
	'the prepared transaction survives an immediate stop');
$node->safe_psql('postgres', q{COMMIT PREPARED 'tx_t_full_compaction'});
is(rows('t_full_compaction'), '1:1001,500:500', 'full-compaction: committed after the crash');
$node->safe_psql('postgres', q{SELECT pk_compact('t_full_compaction', true)});

for my $p (@producers)
{
	my $t = $table{$p};
	is(dense($t), 't', "$p: snapshot ids are dense");
	is($node->safe_psql('postgres', "SELECT check_data_runs('$t')"), 'ok',
		"$p: the catalog row names exactly its data runs");
	next if $p eq 'none';
	is($node->safe_psql('postgres', "SELECT check_changelog('$t')"), 'ok',
		"$p: the stream is a valid retract stream replaying to the table");
}
is($node->safe_psql('postgres', q{
SELECT string_agg(rowkind || (("row"->>'id')), ' ' ORDER BY ord)
  FROM pk_changes('t_lookup') WITH ORDINALITY c(s, rowkind, "row", p, ord) WHERE s > 1}),
	'-U1 +U1 -D2 +I500', 'lookup: the prepared transaction is in the stream once');
# each slot saw each committed change once
my $plain = decoded('plain');
my $twophase = decoded('twophase');
for my $t ('t_none', 't_lookup', 't_full_compaction')
{
	my $n = () = $plain =~ /table public\.$t: INSERT: id\[integer\]:500 /g;
	is($n, 1, "plain slot: ${t}'s insert decoded once, at COMMIT PREPARED");
}
my $input_inserts = () = $plain =~ /table public\.t_input: INSERT: id\[integer\]:500 /g;
is($input_inserts, 0, 'plain slot: nothing of the rolled-back transaction');
like($twophase, qr/COMMIT PREPARED 'tx_t_none'.*COMMIT PREPARED 'tx_t_lookup'.*ROLLBACK PREPARED 'tx_t_input'/s,
	'two_phase slot: COMMIT PREPARED and ROLLBACK PREPARED after the restart');
unlike($twophase, qr/table public\.t_none: INSERT: id\[integer\]:500 /,
	'two_phase slot: the changes are not decoded again at COMMIT PREPARED');

# --- a writer after the commit follows the prepared transaction's snapshot
$node->safe_psql('postgres', 'UPDATE t_lookup SET v = v + 1 WHERE id = 1');
is(rows('t_lookup'), '1:1002,500:500', 'a later writer follows the prepared change');
is(dense('t_lookup'), 't', 'lookup: ids dense after the later commit');

# --- one transaction through two databases, as a transaction manager
$node->safe_psql('postgres', 'CREATE DATABASE db2');
$node->safe_psql('db2', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE acct (id int PRIMARY KEY, balance int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO acct VALUES (1, 100);
});
$node->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, balance int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO acct VALUES (1, 100);
});
for my $round (1, 2)
{
	for my $db ('postgres', 'db2')
	{
		my $d = $db eq 'postgres' ? -10 : 10;
		$node->safe_psql($db, qq{
BEGIN;
UPDATE acct SET balance = balance + $d WHERE id = 1;
PREPARE TRANSACTION 'xa_${round}_$db';
});
	}
	# round 1: the crash comes after both prepared; round 2: after the
	# first database committed
	$node->safe_psql('postgres', qq{COMMIT PREPARED 'xa_${round}_postgres'}) if $round == 2;
	$node->stop('immediate');
	$node->start;
	$node->safe_psql('postgres', qq{COMMIT PREPARED 'xa_${round}_postgres'}) if $round == 1;
	$node->safe_psql('db2', qq{COMMIT PREPARED 'xa_${round}_db2'});
	is($node->safe_psql('postgres', 'SELECT balance FROM acct') . ' '
		  . $node->safe_psql('db2', 'SELECT balance FROM acct'),
		(100 - 10 * $round) . ' ' . (100 + 10 * $round),
		"XA round $round: committed in both databases across the crash");
	is($node->safe_psql($_, q{SELECT count(*) FROM pk_snapshots('acct')}), 1 + $round,
		"XA round $round: one snapshot per committed transaction in $_") for ('postgres', 'db2');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'no prepared transaction is left');

# --- a transaction prepared while its database had no logical slot wrote
# no decoding records (its commit step runs at PREPARE): a slot created
# while it is prepared waits for COMMIT PREPARED and outputs only what
# commits after it
$node->safe_psql('db2', q{
CREATE TABLE t_noslot (id int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO t_noslot VALUES (1, 0);
BEGIN;
UPDATE t_noslot SET v = 1 WHERE id = 1;
PREPARE TRANSACTION 'noslot';
});
my $creator = $node->background_psql('db2', on_error_stop => 0);
$creator->query_until(qr/started/, "\\echo started\nSELECT pg_create_logical_replication_slot('db2_slot', 'test_decoding');\n");
ok($node->poll_query_until('db2', q{
SELECT count(*) > 0 FROM pg_stat_activity
 WHERE query LIKE 'SELECT pg_create_logical_replication_slot(''db2_slot''%'
   AND wait_event_type = 'Lock'}),
	'a slot created while a transaction is prepared waits for it');
$node->safe_psql('db2', q{COMMIT PREPARED 'noslot'});
$creator->quit;
$node->safe_psql('db2', 'UPDATE t_noslot SET v = v + 10 WHERE id = 1');
is($node->safe_psql('db2', q{
SELECT string_agg(data, E'\n') FROM pg_logical_slot_get_changes('db2_slot', NULL, NULL,
	'include-xids', '0', 'skip-empty-xacts', '1')
 WHERE data LIKE 'table public.t_noslot:%'}),
	'table public.t_noslot: UPDATE: old-key: id[integer]:1 v[integer]:1 new-tuple: id[integer]:1 v[integer]:11',
	'the slot outputs the commit after its creation, not the prepared one');
is($node->safe_psql('db2', 'SELECT v FROM t_noslot'), '11', 'both updates committed');
$node->safe_psql('db2', q{SELECT pg_drop_replication_slot('db2_slot')});

my $log = slurp_file($node->logfile);
my @bad = grep { /PANIC|TRAP:|terminated by signal/ } split /\n/, $log;
is(join("\n", @bad), '', 'no PANIC, assertion failure or crash in the server log');

$node->stop;
done_testing();
