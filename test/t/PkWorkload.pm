# PkWorkload.pm: a pgbench workload for the TAP tests that run writers
# concurrently, most crashing the server under them (t/010, t/015, t/028,
# t/032, t/036, t/037): writes the scripts (a ledger's among them),
# starts pgbench in the background, collects the errors it saw other than
# losing its connection to the server, and checks that snapshot ids stayed
# dense and that a ledger matches its table.
package PkWorkload;

use strict;
use warnings;
use IPC::Run;
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

1;
