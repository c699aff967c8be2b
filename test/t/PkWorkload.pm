# PkWorkload.pm: a pgbench workload for the TAP tests that run writers
# concurrently, most crashing the server under them (t/010, t/015, t/028,
# t/032, t/036, t/037, t/038): writes the scripts (a ledger's among them),
# starts pgbench in the background, collects the errors it saw other than
# losing its connection to the server, and checks that snapshot ids stayed
# dense, that a ledger matches its table, its stream and the server log.
package PkWorkload;

use strict;
use warnings;
use FindBin;
use IPC::Run;
use PkWorker;
use PostgreSQL::Test::Utils;
use Test::More;

# script_args($node, \%scripts, \%weights): writes each script into the
# node's directory; returns pgbench's -f arguments with their weights
sub script_args
{
	my ($node, $scripts, $weights) = @_;
	my @args;
	for my $s (sort keys %$scripts)
	{
		my $f = $node->basedir . "/$s.sql";
		PostgreSQL::Test::Utils::append_to_file($f, $scripts->{$s});
		push @args, '-f', "$f\@$weights->{$s}";
	}
	return @args;
}

# start($node, $clients, $secs, @args): pgbench in the background, retrying
# serialization failures; its sessions are named 'pgbench'
sub start
{
	my ($node, $clients, $secs, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGAPPNAME} = 'pgbench';
	my $h = IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', 2, '-T', $secs,
			'--max-tries=1000', '-h', $node->host, '-p', $node->port,
			@args, 'postgres'
		],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout(180));
	return { h => $h, out => \$out, err => \$err };
}

# finish($w, $label): waits for pgbench (it exits on its own when the server
# goes away), notes what it did, and returns the server errors it saw
# (an error the server raised is printed with its ERROR: line)
sub finish
{
	my ($w, $label) = @_;
	$w->{ok} = eval { $w->{h}->finish; };
	if ($@)
	{
		diag("pgbench did not exit: $@");
		$w->{h}->kill_kill;
	}
	my @errs = grep { !/connection|shutdown|crash|recovery mode|terminat/i }
	  grep { /\bERROR:/ } split /\n/, ${ $w->{err} };
	my ($tx) = ${ $w->{out} } =~ /number of transactions actually processed: (\d+)/;
	my ($retried) = ${ $w->{out} } =~ /number of transactions retried: (\d+)/;
	note("pgbench $label: transactions " . ($tx // '?')
		  . ', retried ' . ($retried // '?')
		  . ', non-connection errors: '
		  . (@errs ? join("\n", @errs[0 .. ($#errs < 9 ? $#errs : 9)]) : 'none'));
	return \@errs;
}

# stop_clean($w, $label): stops a workload that runs in the background
# (SIGTERM: a background pgbench ignores SIGINT), then one test that
# pgbench saw no errors but lost connections
sub stop_clean
{
	my ($w, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$w->{h}->signal('TERM');
	my $errs = finish($w, $label);
	is(scalar(@$errs), 0, 'pgbench saw no errors')
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	return;
}

# ledger_scripts($nkeys, @tables): a pgbench script per table that adds 1 to
# the amount of a random one of its rows 1..$nkeys and records that in the
# heap table ledger (tbl text, id int) in the same transaction, so that a
# commit is in both or in neither; returns (\%scripts, \%weights), one
# weight each
sub ledger_scripts
{
	my ($nkeys, @tables) = @_;
	my (%scripts, %weights);
	for my $t (@tables)
	{
		$scripts{"upd_$t"} = qq{
\\set id random(1, $nkeys)
BEGIN;
UPDATE $t SET amount = amount + 1 WHERE id = :id;
INSERT INTO ledger VALUES ('$t', :id);
END;
};
		$weights{"upd_$t"} = 1;
	}
	return (\%scripts, \%weights);
}

# check_ledger($node, $table, $nkeys, $label): one test that every row's
# amount is its start (id * 10) plus its ledger count, and one that $nkeys
# rows are there
sub check_ledger
{
	my ($node, $table, $nkeys, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($node->safe_psql('postgres', qq{
SELECT count(*) FROM $table t
  LEFT JOIN (SELECT id, count(*) AS n FROM ledger WHERE tbl = '$table' GROUP BY id) l USING (id)
 WHERE t.amount <> t.id * 10 + coalesce(l.n, 0)}), '0',
		"$label: every row's amount is its start plus its ledger count");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $table"), $nkeys,
		"$label: every row is there");
	return;
}

# check_dense($node, $table, $label): one test that $table's retained
# snapshot ids are dense (no id missing between the oldest and newest)
sub check_dense
{
	my ($node, $table, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $snaps = $node->safe_psql('postgres', qq{
SELECT format('%s|%s|%s', count(*), min(snapshot_id), max(snapshot_id)) FROM pk_snapshots('$table')});
	my ($n, $min, $max) = split /\|/, $snaps;
	return ok($n > 0 && $max - $min + 1 == $n, "$label: snapshot ids are dense")
	  || diag("count|min|max = $snaps");
}

# check_ledger_table($node, $table, $producer, $nkeys, $from[, $label]):
# after a ledger workload on $table (loaded with $nkeys rows, its last
# snapshot before the workload $from): check_ledger, check_dense, the
# catalog row naming exactly its data runs, and its stream: one change per
# 1-row commit for none, a valid retract stream replaying to the table
# else (test/setup/changelog_checker.sql's functions).  $label prefixes
# the tests' names.
sub check_ledger_table
{
	my ($node, $t, $p, $nkeys, $from, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $pre = defined $label ? "$label: " : '';
	check_ledger($node, $t, $nkeys, "$pre$t ($p)");
	check_dense($node, $t, "$pre$t");
	is($node->safe_psql('postgres', "SELECT check_data_runs('$t')"), 'ok',
		"$pre$t: its catalog row names exactly its data runs");
	if ($p eq 'none')
	{
		is($node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM pk_changes('$t', $from))
	 = (SELECT count(*) FROM pk_snapshots('$t')
		 WHERE snapshot_id > $from AND commit_kind = 'APPEND')}), 't',
			"$pre$t (none): one change per 1-row commit in its stream");
	}
	else
	{
		is($node->safe_psql('postgres', "SELECT check_changelog('$t')"), 'ok',
			"$pre$t ($p): the stream is a valid retract stream replaying to the table");
	}
	return;
}

# ledger_node($name, $conf): a node started as PkWorker::start_node does
# (with $conf), with the extension, test/setup/changelog_checker.sql and
# the heap ledger table ledger_scripts writes
sub ledger_node
{
	my ($name, $conf) = @_;
	my $node = PkWorker::start_node($name, $conf);
	$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
	$node->safe_psql('postgres',
		slurp_file("$FindBin::Bin/../setup/changelog_checker.sql"));
	$node->safe_psql('postgres', 'CREATE TABLE ledger (tbl text, id int)');
	return $node;
}

# check_log($node): one test that the server log has no PANIC, assertion
# failure, crash or error of the extension's worker
sub check_log
{
	my ($node) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @bad = grep { /PANIC|TRAP:|terminated by signal|ERROR:.*pkchangelog/ }
	  split /\n/, PostgreSQL::Test::Utils::slurp_file($node->logfile);
	is(join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]), '',
		'no PANIC, assertion failure, crash or worker error in the server log');
	return;
}

# readers_and_writer($node, $seconds, $read_sql, $write_sql, $what): three
# pgbench clients running the script file $read_sql beside one running
# $write_sql, for $seconds; tests that both ran without an error (a reader
# that checks its rows fails on a wrong one) and returns the writer's
# transactions
sub readers_and_writer
{
	my ($node, $seconds, $read_sql, $write_sql, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @common = ('pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-T', $seconds, 'postgres');
	my ($rout, $rerr, $wout, $werr) = ('', '', '', '');
	my $readers = IPC::Run::start([ @common, '-c', '3', '-j', '3', '-f', $read_sql ],
		'>', \$rout, '2>', \$rerr);
	my $writer = IPC::Run::start([ @common, '-c', '1', '-f', $write_sql ],
		'>', \$wout, '2>', \$werr);
	my $rok = $readers->finish;
	my $wok = $writer->finish;
	my ($reads) = $rout =~ /actually processed: (\d+)/;
	my ($writes) = $wout =~ /actually processed: (\d+)/;
	ok($rok && defined $reads && $reads > 0, "readers found every row right ($reads $what)")
	  or diag($rerr);
	ok($wok && defined $writes && $writes > 0, "the writer ran ($writes transactions)")
	  or diag($werr);
	return $writes // 0;
}

1;
