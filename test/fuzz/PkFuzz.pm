# PkFuzz: a randomized differential test of pkmerge tables against heap
# twins.  Run by t/030_fuzz.pl (a fixed seed, in make test) and by
# fuzz.pl (make fuzz SEED=... MINUTES=...).
#
# Design
# ------
# Tables.  A run creates, in a fresh database whose default collation is
# ICU en-US and which has the collation ci (provider icu, locale
# und-u-ks-level2, deterministic = false: case-insensitive,
# accent-sensitive), eight pkmerge tables t0..t7, two per changelog
# producer (t<i>: none, input, lookup, full-compaction for i % 4), of six
# key shapes: t0..t5 take the six in an order drawn from the seed, t6 and
# t7 two drawn from it, so every seed has every shape and every producer:
#   int   (k int, g, v text, n numeric)
#   comp  (g, b int, a text COLLATE "C", v text, PRIMARY KEY (a, b)): key
#         columns neither first nor in declaration order
#   text  (s text in the default collation: ICU, where 'a' < 'B' < 'b')
#   num   (v, k numeric, g): 1.5, 1.50 and 1.500 are one key
#   ci    (v, g, s text COLLATE ci): 'a', 'A' are one key, as are the
#         three cases of the digraph dz (U+01C4..U+01C6) and 'w7', 'W7';
#         e and e-acute, sharp s and 'ss' are not; moved by upper(),
#         lower(), initcap(), || '_'
#   float (k float8, v, g): 0 and -0 are one key, NaN is one key above
#         every other, and the infinities, 1e-300, 5e-324, multiples of
#         0.25;
#         moved by k + 1, -k, k * -1 (0 to -0), k + 0 (-0 to 0)
# The last three have keys equal but not identical: a write that replaces
# a row replaces its key's value too (INSERT, COPY, MERGE, UPDATE of the
# key to an equal value: the generator writes such pairs often), and the
# contents checks compare the key's exact text (k::text, so -0 is not 0);
# the generator's and the checks' notion of distinct keys treats equal keys
# as one (numeric scale dropped, ci keys case-folded, -0 = 0, NaN = NaN),
# and pkmerge holding two rows of one key is a divergence.  pk_changes
# gives rows as jsonb, whose numbers are numeric (a float8 -0 is 0 there,
# NaN and the infinities strings): the stream checks compare records and
# table rows both through jsonb.
# Options are drawn from the seed: write_buffer_size 1MB (large
# transactions spill), changelog_row_deduplicate, small compaction
# triggers, target_run_size 64kB, no compression, a retention of 30
# snapshots.  g has a DEFAULT and a CHECK; every non-key column takes
# NULLs; v is sometimes 1-100 kB of incompressible text (TOAST-sized).
# Each table has a heap twin h0..h7 with the same columns and a DEFERRABLE
# primary key, so a statement moving keys over each other (k = k + 1 over
# a range) is checked at its end, as pkmerge must act on the set of rows
# the statement matched.
#
# Transactions.  PkFuzz::Gen draws transactions from the seed alone (never
# from what the server answers), as SQL text with %T for the table: BEGIN
# (sometimes REPEATABLE READ or SERIALIZABLE), then 1-12 operations on 1-3
# tables among SAVEPOINT / ROLLBACK TO / RELEASE, ending in COMMIT or
# ROLLBACK (a tenth of them through PREPARE TRANSACTION and COMMIT or
# ROLLBACK PREPARED, half of those rolled back beginning with a full
# pk_compact of a table they write, which leaves a dead commit log record
# of a higher id than the next commit's); some are single autocommit
# statements; some are maintenance
# (VACUUM, VACUUM FULL, ANALYZE, pk_compact, pk_expire_snapshots,
# CHECKPOINT, an immediate restart, ALTER TABLE ... SET
# (changelog_producer) to another producer).
# Operations: single- and multi-row INSERT (an upsert on pkmerge; the heap
# twin gets the same rows through MERGE ... WHEN MATCHED THEN UPDATE SET
# every column, which also replaces the key's representation, e.g. 1.0 by
# 1.00), bulk INSERT ... SELECT of up to 400 rows of up to 10 kB,
# INSERT ... ON CONFLICT DO NOTHING and DO UPDATE (with WHERE, with
# expressions over the old row; the twin: the equivalent MERGE, as ON
# CONFLICT cannot use a deferrable key), UPDATE of non-key columns by key,
# list, range and non-key predicates, UPDATE of key columns (one row to a
# random key; ranges shifted up, down, mirrored, moved to other scales),
# key moves written as a data-modifying CTE (DELETE ... RETURNING feeding
# an INSERT), DELETE (by key, range, USING, all rows), MERGE with every
# action (also from the other table of the same shape: pkmerge reads
# pkmerge, heap reads heap; num, ci, float: WHEN MATCHED UPDATE SET of the
# key to the source's equal value too), COPY FROM STDIN, TRUNCATE (also inside
# savepoints), pk_compact(t) and pk_compact(t, true) inside transactions,
# cursors (DECLARE ... ORDER BY key, ASC or DESC) fetched piecewise while
# the transaction goes on writing the table, prepared statements (point
# SELECT and UPDATE, key range) executed again and again across
# transactions (generic plans), ALTER TABLE ADD COLUMN (no default, a
# constant one) and DROP COLUMN, also inside transactions that wrote the
# table, and statements that fail on purpose inside savepoints: division
# by zero in a SET, a MERGE matching a row twice (21000), an ON CONFLICT
# proposing one key twice (21000; ci, float: also spelt otherwise), a
# NULL key (23502), a CHECK violation (23514), a COPY line that does not
# parse, ADD COLUMN serial or with a volatile default (which pkmerge
# refuses, 0A000).
#
# Same logical operation, same outcome.  PkFuzz::Engine runs each
# operation on the heap twin first, inside a savepoint: where heap raises
# 23505 (a key update onto an existing key: pkmerge overwrites, as
# documented) the pkmerge statement is skipped, so only statements whose
# heap semantics are defined are compared; any other heap error the
# pkmerge statement must raise too (same SQLSTATE; 23505 of the twin's
# MERGE stands for 21000 of ON CONFLICT proposing a key twice; a twin's
# VACUUM FULL failing with "missing chunk ... for toast value" is
# PostgreSQL's toast horizon race, bugs #18351 and #19519, which parallel
# runs reach through each other's transactions: counted, not compared).  Otherwise
# pkmerge must succeed with the same row count and the same RETURNING (and
# FETCH) rows; an INSERT's RETURNING must give the rows heap then holds.
# ALTER TABLE runs on pkmerge first: a form it refuses with 0A000 (a
# rewrite) is not run on heap; otherwise both must agree.  After every
# transaction (and at random points inside them) the contents of each
# table pair are compared key by key (row md5), and two of these queries,
# sometimes with seqscan or indexscan off: count/sum/max, a key range, a
# point lookup, a key list, ORDER BY key DESC LIMIT, the first keys after
# a bound, GROUP BY g, a key lookup join, a self join on key + 1, and
# inside transactions a key range FOR UPDATE / SHARE.
#
# Change streams.  Every fourth transaction that wrote a table (and before
# every pk_expire_snapshots of it, and before a transaction that truncates
# it), pk_changes from the last snapshot checked to the newest is replayed
# into a per-table model, inside one REPEATABLE READ transaction with the
# table's contents, by the stream rules of the README (Changelog
# producers), each snapshot by the rules of the producer pk_snapshots
# says made it (one the table had since the last check): lookup and
# full-compaction must obey the retract-stream
# rules (+I only for an absent key, -U and -D carry exactly the current
# row, +U right after its -U); none and input are replayed as upserts.  An
# OVERWRITE snapshot (TRUNCATE) must begin with one TRUNCATE record (none,
# input: it empties the model) or with the -D of every row the model
# holds (lookup, full-compaction), before the rows written after the
# TRUNCATE.  The replay must equal the table (rows compared on the
# generated columns: added ones hold their defaults and the contents checks
# cover them), every snapshot's changelog_record_count (none:
# delta_record_count) the row records pk_changes gives for it (a TRUNCATE
# record is none), every record's producer its snapshot's, pk_current_snapshot
# the newest snapshot, each new snapshot's records read on their own
# (pk_changes(t, id - 1, id)) those the range gave for it, and
# check_data_runs (test/setup/changelog_checker.sql) must hold.  No snapshot may expire before it was read (retention is at least
# 30 snapshots, and a table writes at most a few per transaction) unless a
# TRUNCATE expired it; a read from before such a TRUNCATE must fail with
# 72000, and the replay then starts at the OVERWRITE snapshot without
# checking its -D records.  full-compaction is compacted fully first
# (pk_compact(t, true)): its stream lags until then (not before a
# TRUNCATE: its -D records retract the rows as its stream told them).
#
# Crash recovery.  A few maintenance steps shut the server down in
# immediate mode and start it again (where the caller can: make fuzz and
# the TAP test can): every committed row must be there, in both tables.
#
# Crashes.  A lost connection, or any "terminated by signal", "PANIC",
# "TRAP:", "server process ... was terminated" or leak WARNING in the server
# log (scanned every 10 transactions and at the end) is a failure.
#
# Reproduction.  On a failure the transactions run so far are replayed on
# fresh databases to find a small subset that still fails the same way
# (same kind of check on the same table): first only the failing table's
# statements, then the shortest suffix of transactions, then delta
# debugging over transactions and over single statements, within a time
# budget.  The smallest sequence is replayed once more with every
# statement recorded and written as a psql script: it creates its own
# database, the tables it needs, runs each transaction as the harness did
# (heap statement in a savepoint, then the pkmerge one; check queries with
# their output suppressed; the outcome of each statement as a comment) and
# ends with a query showing the divergence.
#
# Determinism.  The statements depend on the seed alone; with the
# background worker and autovacuum off (the TAP test and make fuzz turn
# them off) the server's answers do too, so a seed replays exactly.
# FUZZ_AVOID, a comma list, stops generating an operation class to look
# past a known defect: spill, fail, fail_merge, fail_spill (no failing
# statements on tables with a 1MB write buffer), keyupdate, shift (no
# multi-row key updates), truncate, truncate_none, onc_after_delete,
# cursor, ddl, prepared, restart, switch; cl_count skips the
# changelog_record_count check.
# By default every class is generated and every check made.
package PkFuzz;

use strict;
use warnings;
use File::Basename qw(dirname);
use Time::HiRes qw(time);
use DBI;
use PkFuzz::Gen;
use PkFuzz::Engine;

my $CREATEDB_OPTS = "TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'";

# check_data_runs from test/setup/changelog_checker.sql, if it is there
sub checker_sql
{
	my $f = dirname(__FILE__) . '/../setup/changelog_checker.sql';
	open(my $fh, '<', $f) or return undef;
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text =~ /(CREATE (?:OR REPLACE )?FUNCTION check_data_runs\b.*?^\$\$)/ms ? $1 : undef;
}

sub setup_sql
{
	my ($tables, $used, $checker) = @_;
	my @sql = ('CREATE EXTENSION pkchangelog', 'CREATE EXTENSION amcheck', $PkFuzz::Gen::CI_COLLATION);
	push @sql, $checker if $checker;
	push @sql, PkFuzz::Gen::create_sql($tables->[$_]) for @$used;
	return @sql;
}

sub admin
{
	my ($o) = @_;
	my $e = PkFuzz::Engine->new(%$o, db => 'postgres', tables => [])->connect;
	return $e;
}

# a fresh database with the tables $used; returns an engine connected to it
# (with template: a copy of that database, which holds the tables already)
sub fresh_db
{
	my ($o, $db, $tables, $used, %eo) = @_;
	my $template = delete $eo{template};
	my $a = admin($o);
	for my $sql ("DROP DATABASE IF EXISTS $db WITH (FORCE)",
		"CREATE DATABASE $db " . ($template ? "TEMPLATE $template" : $CREATEDB_OPTS))
	{
		my $r = $a->exec($sql);
		die "$sql: $r->{state} $r->{msg}" unless $r->{ok};
	}
	$a->disconnect;
	my $checker = checker_sql();
	my $e = PkFuzz::Engine->new(%$o, %eo, db => $db, tables => $tables, data_runs_check => $checker ? 1 : 0)->connect;
	for my $sql ($template ? () : setup_sql($tables, $used, $checker))
	{
		my $r = $e->exec($sql, norecord => 1);
		die "setup failed: $sql: $r->{state} $r->{msg}" unless $r->{ok};
	}
	return $e;
}

sub drop_db
{
	my ($o, $db) = @_;
	my $a = eval { admin($o) } or return;
	$a->exec("DROP DATABASE IF EXISTS $db WITH (FORCE)");
	$a->disconnect;
}

sub fmt_stats
{
	my ($s) = @_;
	return sprintf('%d transactions, %d statements (%d compared pairs, %d expected errors (%d unique violations, '
		  . '%d foreign key violations), %d skipped on a heap 23505, %d heap VACUUM FULLs failed by PostgreSQL\'s toast race), '
		  . '%d content checks, %d queries, %d amcheck rounds, %d changelog checks over %d changes '
		  . '(%d TRUNCATEs checked); operations: %s',
		$s->{txns}, $s->{stmts}, $s->{pairs}, $s->{expected_errors}, $s->{unique_errors} // 0, $s->{fk_errors} // 0, $s->{skipped},
		$s->{heap_toast_races} // 0,
		$s->{checks}, $s->{queries}, $s->{amchecks} // 0,
		$s->{clchecks}, $s->{changes}, $s->{overwrites},
		join(' ', map { "$_=$s->{ops}{$_}" } sort keys %{ $s->{ops} }));
}

# run(host, port, user, seed, txns | seconds, logfile, reduce_seconds,
#     avoid => {...}, say => sub, script_dir, restart => sub,
#     table_seed, template)
# restart: shuts the server down in immediate mode and starts it again
# (without it the generated restarts are skipped); table_seed: the seed
# the tables are drawn from (default: seed); template: a database made by
# make_template(table_seed) to copy instead of creating the tables (so
# parallel runs have tables of one relfilenode in several databases)
# returns { txns, stats, failure, script }
sub run
{
	my (%o) = @_;
	my $say = $o{say} // sub { print "$_[0]\n" };
	my $conn = { host => $o{host}, port => $o{port}, user => $o{user}, seed => $o{seed}, logfile => $o{logfile},
		avoid => $o{avoid} // {}, restart => $o{restart} };
	my $gen = PkFuzz::Gen->new(seed => $o{seed}, table_seed => $o{table_seed}, avoid => $o{avoid} // {});
	my $tables = $gen->{tables};
	$say->("pkfuzz seed $o{seed}: " . ($o{txns} ? "$o{txns} transactions" : "$o{seconds} s")
		  . (%{ $o{avoid} // {} } ? '; avoiding ' . join(',', sort keys %{ $o{avoid} }) : ''));
	$say->('  ' . PkFuzz::Gen::describe($_)) for @$tables;
	my $e = fresh_db($conn, "pkfuzz_$o{seed}", $tables, [ 0 .. $#$tables ], template => $o{template});
	my @txns;
	my $start = time();
	my $failure;
	my $next_report = 500;
	while (1)
	{
		last if $o{txns} && @txns >= $o{txns};
		last if $o{seconds} && time() - $start >= $o{seconds};
		my $txn = $gen->next_txn;
		push @txns, $txn;
		$failure = $e->run_txn($txn);
		last if $failure;
		if (@txns >= $next_report)
		{
			$say->(sprintf('  %d transactions, %.0f s', scalar(@txns), time() - $start));
			$next_report += 500;
		}
	}
	if (!$failure)
	{
		# everything once more at the end
		$e->{check_rng} = PkFuzz::Rng->new($o{seed} ^ 0x5bd1e995);
		for my $i (0 .. $#$tables)
		{
			$failure = $e->check_pair($i, 'at the end') // $e->changelog_check($i);
			last if $failure;
		}
	}
	if (!$failure)
	{
		my $r = $e->exec('SELECT ' . join(" || ' ' || ", map {
			"(SELECT count(*) || '/' || coalesce(sum(pg_column_size(x.*)) / 1024, 0) || 'kB' FROM $_->{name} x)" } @$tables),
			norecord => 1);
		$say->("  rows/size of the tables at the end: $r->{rows}[0][0]") if $r->{ok};
		my @bad = $e->scan_log;
		$failure = $e->fail('crash', undef, "the server log says:\n" . join("\n", @bad)) if @bad;
	}
	$e->disconnect;
	my $stats = $e->{stats};
	my @cpu = times;
	$stats->{cpu} = sprintf('CPU: backend %.0f s, harness %.0f s', $e->{backend_cpu}, $cpu[0] + $cpu[1]);
	if ($e->{prof})
	{
		$say->(sprintf('  %-40s %5d %8.2f s', $_, $e->{profn}{$_}, $e->{prof}{$_}))
		  for sort { $e->{prof}{$b} <=> $e->{prof}{$a} } keys %{ $e->{prof} };
	}
	my %res = (txns => scalar(@txns), stats => $stats, seconds => time() - $start);
	$say->(sprintf('pkfuzz seed %d: %.0f s (%s), %s', $o{seed}, $res{seconds}, $stats->{cpu}, fmt_stats($stats)));
	if (!$failure)
	{
		drop_db($conn, "pkfuzz_$o{seed}");
		return \%res;
	}
	$res{failure} = $failure;
	$say->("FAILED at transaction $txns[-1]{id} (seed $o{seed}): $failure->{sig}\n$failure->{msg}");
	my $red = reduce($conn, $tables, \@txns, $failure, $o{reduce_seconds} // 300, $say);
	my $script = repro_script($conn, $tables, $red, $failure, $o{seed});
	my $path = ($o{script_dir} // '/tmp') . "/pkfuzz-seed$o{seed}.sql";
	if (open(my $fh, '>:encoding(UTF-8)', $path))
	{
		print $fh $script;
		close $fh;
		$res{script_path} = $path;
	}
	$res{script} = $script;
	my @lines = split /\n/, $script;
	$say->("minimal reproduction" . ($red->{reproduced} ? '' : ' (NOT reproduced on a fresh database: this is the whole sequence)')
		  . " ($red->{ntxns} transactions, $red->{nsteps} statements, found in $red->{tries} replays)"
		  . ($res{script_path} ? ", written to $res{script_path}" : '') . ':');
	$say->(@lines <= 400 ? $script : join("\n", @lines[ 0 .. 399 ]) . "\n... (" . scalar(@lines) . ' lines)');
	return \%res;
}

# a database holding the tables of table_seed, for parallel runs to copy
sub make_template
{
	my (%o) = @_;
	my $conn = { host => $o{host}, port => $o{port}, user => $o{user}, seed => $o{table_seed} };
	my $tables = PkFuzz::Gen->new(seed => $o{table_seed})->{tables};
	my $db = "pkfuzz_template_$o{table_seed}";
	my $e = fresh_db($conn, $db, $tables, [ 0 .. $#$tables ]);
	$e->disconnect;
	return $db;
}

# ---------------------------------------------------------------- reduction

# a failure's family: divergences of one table's contents, counts,
# RETURNING rows and queries are one symptom seen at different moments
sub family
{
	my ($f) = @_;
	return undef unless $f;
	my $k = $f->{kind};
	$k = 'diverge' if $k =~ /^(content|count|returning|query)$/;
	return $k eq 'crash' ? 'crash' : $k . ':' . ($f->{table} // '') . ($k eq 'stmt' || $k eq 'commit' ? ':' . ($f->{state} // '') : '');
}

sub is_unit
{
	my ($s) = @_;
	return 1 if $s->{k} ne 'sql';
	return $s->{sql} =~ /^(SAVEPOINT|RELEASE|ROLLBACK TO|CHECKPOINT)/;
}

sub steps_tables
{
	my (@steps) = @_;
	my %t = map { $_->{t} => 1 } grep { defined $_->{t} } @steps;
	return [ sort { $a <=> $b } keys %t ];
}

# txns with only the units in %$keep ("txn index:step index")
sub build
{
	my ($txns, $keep) = @_;
	my @out;
	for my $i (0 .. $#$txns)
	{
		my $st = $txns->[$i]{steps};
		my @steps = map { $st->[$_] } grep { !is_unit($st->[$_]) || $keep->{"$i:$_"} } 0 .. $#$st;
		next unless grep { is_unit($_) } @steps;
		push @out, { %{ $txns->[$i] }, steps => \@steps, tables => steps_tables(@steps) };
	}
	return \@out;
}

sub replay
{
	my ($conn, $tables, $txns, $target, %eo) = @_;
	my %used = map { $_ => 1 } map { @{ $_->{tables} } } @$txns;
	$used{ $target->{tidx} } = 1 if defined $target->{tidx};
	my $e = fresh_db($conn, "pkfuzz_$conn->{seed}_replay", $tables, [ sort { $a <=> $b } keys %used ], %eo);
	my $f;
	# lean: no checks between transactions, only the one that failed
	$e->{nocheck} = $eo{lean};
	for my $txn (@$txns)
	{
		$f = $e->run_txn($txn);
		last if $f;
	}
	if (!$f && $eo{lean} && $target->{kind} =~ /^(content|query|count|returning)$/ && defined $target->{tidx})
	{
		$f = $e->check_pair($target->{tidx}, 'after the last transaction');
	}
	if (!$f && $target->{kind} =~ /^(changelog|data_runs)$/ && defined $target->{tidx})
	{
		$f = $e->changelog_check($target->{tidx});
	}
	if (!$f)
	{
		my @bad = $e->scan_log;
		$f = $e->fail('crash', undef, "the server log says:\n" . join("\n", @bad)) if @bad;
	}
	my $tx = $e->{tx};
	$e->disconnect;
	return ($f, $tx);
}

sub ddmin
{
	my ($items, $test) = @_;
	my $n = 2;
	while (@$items >= 2)
	{
		my $len = @$items;
		$n = $len if $n > $len;
		my @chunks;
		for my $c (0 .. $n - 1)
		{
			my ($from, $to) = (int($c * $len / $n), int(($c + 1) * $len / $n) - 1);
			push @chunks, [ @$items[ $from .. $to ] ] if $to >= $from;
		}
		my $done;
		for my $c (@chunks)
		{
			if ($test->($c)) { $items = $c; $n = 2; $done = 1; last; }
		}
		if (!$done)
		{
			for my $i (0 .. $#chunks)
			{
				my @comp = map { @{ $chunks[$_] } } grep { $_ != $i } 0 .. $#chunks;
				if ($test->(\@comp)) { $items = \@comp; $n = $n > 2 ? $n - 1 : 2; $done = 1; last; }
			}
		}
		if (!$done)
		{
			last if $n >= @$items;
			$n = 2 * $n;
		}
		last if $test->('expired');
	}
	return $items;
}

sub reduce
{
	my ($conn, $tables, $txns, $failure, $budget, $say) = @_;
	my $deadline = time() + $budget;
	my $fam = family($failure);
	my %target = (kind => $failure->{kind}, tidx => $failure->{tidx});
	my $tries = 0;
	my %memo;
	my $lean = 1;
	my $last_say = time();
	my $test_txns = sub {
		my ($cand) = @_;
		return time() > $deadline if !ref $cand;      # 'expired'
		return 0 if time() > $deadline || !@$cand;
		my $fp = "$lean;" . join(',', map { $_->{id} . ':' . join('.', map { 0 + $_ } @{ $_->{steps} }) } @$cand);
		return $memo{$fp} if exists $memo{$fp};
		$tries++;
		my ($f) = eval { replay($conn, $tables, $cand, \%target, lean => $lean) };
		$say->("  replay failed: $@") if $@;
		if (time() - $last_say > 60)
		{
			$last_say = time();
			$say->(sprintf('  reduction: %d replays, now %d transactions', $tries, scalar(@$cand)));
		}
		return $memo{$fp} = (family($f) // '') eq $fam ? 1 : 0;
	};
	my $best = $txns;
	my $reproduced = 0;

	# only the failing table's statements
	my $cands = $best;
	if (defined $target{tidx})
	{
		my %keep;
		for my $i (0 .. $#$txns)
		{
			my $st = $txns->[$i]{steps};
			for my $j (0 .. $#$st)
			{
				$keep{"$i:$j"} = 1 if !defined $st->[$j]{t} || $st->[$j]{t} == $target{tidx};
			}
		}
		$cands = build($txns, \%keep);
	}
	# the shortest suffix that fails, first of the table's statements only,
	# first without the checks between transactions (lean replays are
	# quicker), then with them
	SUFFIX: for my $l (1, 0)
	{
		$lean = $l;
		for my $set ($cands, ($cands == $txns ? () : ($txns)))
		{
			for (my $k = 1;; $k *= 2)
			{
				$k = @$set if $k > @$set;
				my $c = [ @$set[ @$set - $k .. $#$set ] ];
				if ($test_txns->($c))
				{
					$best = $c;
					$reproduced = 1;
					last SUFFIX;
				}
				last if $k == @$set || time() > $deadline;
			}
		}
	}
	$say->(sprintf('  reduction: %s; %d transactions after %d replays',
			$reproduced ? 'reproduced' : 'not reproduced', scalar(@$best), $tries));
	if ($reproduced)
	{
		$best = ddmin($best, $test_txns);
		$say->(sprintf('  reduction: %d transactions after %d replays', scalar(@$best), $tries));
		# single statements
		my @units;
		for my $i (0 .. $#$best)
		{
			my $st = $best->[$i]{steps};
			push @units, map { "$i:$_" } grep { is_unit($st->[$_]) } 0 .. $#$st;
		}
		my $base = $best;
		my $test_units = sub {
			my ($u) = @_;
			return $test_txns->($u) unless ref $u;
			return $test_txns->(build($base, { map { $_ => 1 } @$u }));
		};
		my $kept = ddmin(\@units, $test_units);
		$best = build($base, { map { $_ => 1 } @$kept });
		$best = ddmin($best, $test_txns);
		$say->(sprintf('  reduction: %d transactions, %d statements after %d replays%s',
				scalar(@$best), scalar(map { grep { is_unit($_) } @{ $_->{steps} } } @$best), $tries,
				time() > $deadline ? ' (time budget spent)' : ''));
	}
	return {
		txns       => $best,
		lean       => $lean,
		target     => \%target,
		reproduced => $reproduced,
		tries      => $tries,
		ntxns      => scalar(@$best),
		nsteps     => scalar(map { grep { is_unit($_) } @{ $_->{steps} } } @$best),
	};
}

# ---------------------------------------------------------------- the script

sub repro_script
{
	my ($conn, $tables, $red, $failure, $seed) = @_;
	# without the checks between transactions if it still fails so
	my ($f, $tx) = eval { replay($conn, $tables, $red->{txns}, $red->{target}, record => 1, lean => 1) };
	my $err = $@;
	if ((family($f) // '') ne family($failure) && !$red->{lean})
	{
		($f, $tx) = eval { replay($conn, $tables, $red->{txns}, $red->{target}, record => 1) };
		$err = $@;
	}
	my %used = map { $_ => 1 } map { @{ $_->{tables} } } @{ $red->{txns} };
	$used{ $red->{target}{tidx} } = 1 if defined $red->{target}{tidx};
	my @used = sort { $a <=> $b } keys %used;
	my $checker = checker_sql();
	my $out = "-- pkchangelog fuzz (test/fuzz), seed $seed: $failure->{sig}\n";
	$out .= "-- $_\n" for split /\n/, $failure->{msg};
	$out .= "-- replaying this script: " . ($f ? "$f->{sig}\n" . join('', map { "--   $_\n" } split /\n/, $f->{msg})
		: $err ? "harness error $err\n" : "no failure (not reproducible)\n");
	$out .= "-- Run with psql -X -f FILE against a server with pkchangelog preloaded; it creates its own\n"
	  . "-- database.  Each pkmerge table t<i> has a heap twin h<i>; the harness runs every\n"
	  . "-- statement on the twin first (in a savepoint) and then on the pkmerge table.\n";
	$out .= "DROP DATABASE IF EXISTS pkfuzz_repro;\nCREATE DATABASE pkfuzz_repro $CREATEDB_OPTS;\n\\c pkfuzz_repro\n";
	for my $sql (setup_sql($tables, \@used, $checker))
	{
		next if $checker && $sql eq $checker && ($failure->{kind} ne 'data_runs');
		$out .= "$sql;\n";
	}
	for my $x (@{ $tx // [] })
	{
		if ($x->{note})
		{
			$out .= "$x->{note}\n";
			next;
		}
		my $sql = $x->{sql};
		next if $sql =~ /check_data_runs/ && $failure->{kind} ne 'data_runs';
		if ($x->{copy})
		{
			$out .= "$sql;\n" . join('', map { "$_\n" } @{ $x->{copy} }) . "\\.\n";
		}
		elsif ($x->{quiet} && $sql =~ /^SELECT/)
		{
			$out .= "\\o /dev/null\n$sql;\n\\o\n";
		}
		else
		{
			$out .= "$sql;\n";
		}
		$out .= "-- $x->{out}\n" unless $x->{out} =~ /^(BEGIN|SAVEPOINT|RELEASE|ROLLBACK|COMMIT|SET|RESET)$/;
	}
	my $t = defined $red->{target}{tidx} ? $tables->[ $red->{target}{tidx} ] : undef;
	my $k = $failure->{kind};
	if ($t && $k =~ /^(content|count|returning)$/)
	{
		my $sel = PkFuzz::Gen::key_text($t) . ', md5(x::text), left(x::text, 60)';
		$out .= "-- the rows that differ\n"
		  . "SELECT 'only in $t->{name}' AS side, * FROM (SELECT $sel FROM $t->{name} x EXCEPT ALL SELECT $sel FROM $t->{heap} x) d\n"
		  . "UNION ALL SELECT 'only in $t->{heap}', * FROM (SELECT $sel FROM $t->{heap} x EXCEPT ALL SELECT $sel FROM $t->{name} x) d ORDER BY 2, 1;\n";
	}
	elsif ($t && $k eq 'query' && $failure->{query})
	{
		$out .= "-- the query that differs\n";
		$out .= "$failure->{setting};\n" if $failure->{setting};
		$out .= PkFuzz::Engine::subst($failure->{query}, $_) . ";\n" for ($t->{name}, $t->{heap});
	}
	elsif ($t && $k =~ /^(changelog|data_runs)$/)
	{
		$out .= "-- the stream and the table\n";
		$out .= "SELECT pk_compact('$t->{name}', true);\n";
		$out .= "SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count FROM pk_snapshots('$t->{name}');\n"
		  . "SELECT snapshot_id, rowkind, left(row::text, 100) FROM pk_changes('$t->{name}');\n"
		  . "SELECT left(to_jsonb(x)::text, 100) FROM $t->{name} x ORDER BY 1;\n";
		$out .= "SELECT check_data_runs('$t->{name}');\n" if $k eq 'data_runs';
	}
	return $out;
}

1;
