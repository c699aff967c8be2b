# PkFuzz::Engine: runs generated transactions in one session against the
# pkmerge tables and their heap twins, compares every statement's outcome,
# the tables' contents and a few queries after each transaction, replays
# the change streams into a model, and watches the server log.  Returns a
# failure (a hash with kind, table, msg, sig) at the first divergence.
# Optionally records every statement it sent, with its outcome, for the
# reproduction script.
package PkFuzz::Engine;

use strict;
use warnings;
use DBI;
use Time::HiRes qw(time usleep);
use PkFuzz::Gen;
use PkFuzz::Rng;

# what the server log must never say
our $LOG_BAD = qr/terminated by signal|PANIC|TRAP:|server process .* was terminated|WARNING: .*(leak|still (active|referenced|pinned)|not closed)/;

sub new
{
	my ($class, %o) = @_;
	my $e = bless {
		%o,
		model   => {},
		writes  => {},
		stats   => { stmts => 0, pairs => 0, skipped => 0, expected_errors => 0, checks => 0,
			queries => 0, clchecks => 0, changes => 0, overwrites => 0, txns => 0, ops => {} },
		tx      => [],
		logpos  => 0,
	}, $class;
	$e->{cl_every} //= 4;
	if ($e->{logfile} && -e $e->{logfile})
	{
		$e->{logpos} = -s $e->{logfile};
	}
	return $e;
}

sub connect
{
	my ($e) = @_;
	my $deadline = time() + 90;
	my $dbh;
	while (1)
	{
		$dbh = DBI->connect("dbi:Pg:dbname=$e->{db};host=$e->{host};port=$e->{port}", $e->{user} // 'postgres', '',
			{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0,
				pg_placeholder_dollaronly => 1, pg_placeholder_nocolons => 1, pg_server_prepare => 0 });
		last if $dbh;
		die "cannot connect to $e->{db}: $DBI::errstr" if time() > $deadline;
		usleep(200_000);             # the server may be restarting after a crash
	}
	$e->{dbh} = $dbh;
	$dbh->do("SET statement_timeout = '300s'");
	$dbh->do("SET client_min_messages = error");
	# the plans with seqscan or indexscan off cost over jit_above_cost:
	# compiling them would take most of the run's time
	$dbh->do("SET jit = off");
	return $e;
}

# CPU seconds the session's backend has used (Linux /proc), or undef
sub backend_cpu
{
	my ($e) = @_;
	my $pid = $e->{dbh} && $e->{dbh}{pg_pid};
	open(my $fh, '<', "/proc/$pid/stat") or return undef;
	my @f = split ' ', (split /\) /, scalar(<$fh>))[1];
	close $fh;
	return ($f[11] + $f[12]) / 100;      # utime + stime, in clock ticks
}

sub disconnect
{
	my ($e) = @_;
	$e->{backend_cpu} += $e->backend_cpu // 0;
	$e->{dbh}->disconnect if $e->{dbh};
	delete $e->{dbh};
}

sub table { my ($e, $i) = @_; return $e->{tables}[$i]; }

# the changelog producer of table $i now (ALTER TABLE ... SET switches it)
sub producer { my ($e, $i) = @_; return $e->{prod}{$i} // $e->{tables}[$i]{prod}; }

sub note { my ($e, $text) = @_; push @{ $e->{tx} }, { note => $text } if $e->{record}; }

sub fail
{
	my ($e, $kind, $ti, $msg, %o) = @_;
	my $t = defined $ti ? $e->table($ti) : undef;
	my $f = {
		tidx  => $ti,
		kind  => $kind,
		table => $t ? $t->{name} : undef,
		msg   => ($t ? PkFuzz::Gen::describe($t)
			  . ($e->producer($ti) ne $t->{prod} ? ' (producer now ' . $e->producer($ti) . ')' : '') . ': ' : '') . $msg,
		sig   => $kind . ($t ? ":$t->{name}" : '') . ($o{state} ? ":$o{state}" : ''),
		%o,
	};
	$e->note("-- DIVERGENCE ($f->{sig}): " . join("\n-- ", split /\n/, $msg));
	return $f;
}

# one statement; returns { ok, status, rows } or { ok => 0, state, msg };
# lost => 1 when the connection is gone
sub exec
{
	my ($e, $sql, %o) = @_;
	my $dbh = $e->{dbh};
	my %res;
	utf8::upgrade($sql);
	$e->{stats}{stmts}++;
	my $t0 = time();
	if ($o{copy})
	{
		my $ok = $dbh->do($sql);
		if ($ok)
		{
			for my $l (@{ $o{copy} })
			{
				my $line = "$l\n";
				utf8::upgrade($line);
				$dbh->pg_putcopydata($line);
			}
			$ok = $dbh->pg_putcopyend();
		}
		%res = $ok ? (ok => 1, status => 'COPY') : ();
	}
	else
	{
		# pg_direct: the text goes as is ($1 of PREPARE is no placeholder)
		my $sth = $dbh->prepare($sql, { pg_direct => 1 });
		my $rv = $sth ? $sth->execute : undef;
		if (defined $rv)
		{
			%res = (ok => 1, status => $sth->{pg_cmd_status} // '');
			$res{rows} = $sth->fetchall_arrayref if $sth->{NUM_OF_FIELDS};
		}
	}
	unless ($res{ok})
	{
		my $msg = $dbh->errstr // 'unknown error';
		$msg =~ s/^ERROR:\s+//;
		%res = (ok => 0, state => $dbh->state // '', msg => $msg);
		my $p = $dbh->pg_ping;
		if ($p <= 0 || $res{state} =~ /^(08|57P0)/)
		{
			$res{lost} = 1;
		}
		else
		{
			$e->{aborted} = ($p == 4) ? 1 : 0;
		}
	}
	if ($ENV{FUZZ_PROFILE})
	{
		my ($w) = $sql =~ /^(\w+(?: \w+)?)/;
		$w .= ' pk_changes' if $sql =~ /pk_changes/;
		$w .= " $e->{qname}" if $e->{qname};
		$w .= ' ' . ($sql =~ /FROM (t\d)/ ? 'pk' : $sql =~ /(h\d)/ ? 'heap' : '');
		$e->{prof}{$w} += time() - $t0;
		$e->{profn}{$w}++;
	}
	if ($e->{record} && !$o{norecord})
	{
		my $out = $res{ok} ? $res{status} : "ERROR $res{state}: " . (split /\n/, $res{msg})[0];
		push @{ $e->{tx} }, { sql => $sql, copy => $o{copy}, out => $out, quiet => $o{quiet} };
	}
	return \%res;
}

sub crash
{
	my ($e, $res, $ti, $what) = @_;
	usleep(500_000);             # the postmaster logs the death after noticing it
	my @lines = $e->scan_log;
	# no table in the failure (any crash is the same symptom), but the
	# reducer starts from the statements of the table it happened on
	return $e->fail('crash', undef,
		"the connection was lost during $what: $res->{state} $res->{msg}"
		  . (@lines ? "\nserver log:\n" . join("\n", @lines) : ''), log => \@lines, tidx => $ti);
}

# new lines of the server log that say a process died or something leaked
sub scan_log
{
	my ($e) = @_;
	my $f = $e->{logfile};
	return () unless $f && -e $f;
	my $size = -s $f;
	if ($size < $e->{logpos})
	{
		$e->{logpos} = 0;           # rotated or recreated
	}
	return () if $size == $e->{logpos};
	open(my $fh, '<', $f) or return ();
	seek($fh, $e->{logpos}, 0);
	my @bad;
	while (my $l = <$fh>)
	{
		chomp $l;
		push @bad, $l if $l =~ $LOG_BAD;
	}
	$e->{logpos} = tell($fh);
	close $fh;
	return @bad;
}

sub subst
{
	my ($sql, $name) = @_;
	(my $s = $sql) =~ s/%T/$name/g;
	return $s;
}

sub count_of
{
	my ($status) = @_;
	return $status =~ /(\d+)$/ ? $1 : undef;
}

sub rows_text
{
	my ($rows) = @_;
	return join("\n", map { join("\x{1f}", map { $_ // '<null>' } @$_) } @$rows);
}

# ---------------------------------------------------------------- steps

sub run_txn
{
	my ($e, $txn) = @_;
	$e->{aborted} = 0;
	$e->{in_txn} = 0;
	$e->{check_rng} = PkFuzz::Rng->new(($e->{seed} * 7919 + $txn->{id} * 104729 + 17) & 0xFFFFFFFF);
	$e->note("-- transaction $txn->{id}");
	# a TRUNCATE expires every earlier snapshot: their changes are read
	# first, so that its -D records can be checked against the replay
	my %truncates = map { $_->{t} => 1 } grep { ($_->{op} // '') eq 'truncate' } @{ $txn->{steps} };
	for my $ti ($e->{nocheck} ? () : sort { $a <=> $b } keys %truncates)
	{
		my $f = $e->changelog_check($ti, stream_only => 1);
		return $f if $f;
	}
	my %wrote;
	for my $s (@{ $txn->{steps} })
	{
		my $f = $e->run_step($s, $txn);
		return $f if $f;
		$wrote{ $s->{t} } = 1 if $s->{k} eq 'pair' || $s->{k} eq 'pk';
	}
	if ($e->{in_txn})
	{
		# a transaction whose steps were removed by the reducer
		my $r = $e->exec('ROLLBACK');
		return $e->crash($r, undef, 'ROLLBACK') if $r->{lost};
		$e->{in_txn} = 0;
	}
	$e->{stats}{txns}++;
	return undef if $e->{nocheck};
	for my $ti (@{ $txn->{tables} })
	{
		my $f = $e->check_pair($ti, 'after transaction ' . $txn->{id});
		return $f if $f;
	}
	for my $ti (sort { $a <=> $b } keys %wrote)
	{
		next unless ++$e->{writes}{$ti} >= $e->{cl_every};
		my $f = $e->changelog_check($ti);
		return $f if $f;
	}
	if (++$e->{since_scan} >= 10)
	{
		$e->{since_scan} = 0;
		my @bad = $e->scan_log;
		return $e->fail('crash', undef, "the server log says:\n" . join("\n", @bad), log => \@bad) if @bad;
	}
	return undef;
}

sub run_step
{
	my ($e, $s, $txn) = @_;
	my $k = $s->{k};
	if ($k eq 'sql')
	{
		my $sql = $s->{sql};
		my $was_aborted = $e->{aborted};
		# PREPARE TRANSACTION of a failed transaction rolls it back, as
		# COMMIT does (on both sides alike): nothing is left to finish
		if ($sql =~ /^(COMMIT|ROLLBACK) PREPARED / && $e->{prepare_rolled_back})
		{
			$e->{prepare_rolled_back} = 0;
			$e->note("-- $sql: skipped, PREPARE TRANSACTION rolled the failed transaction back");
			return undef;
		}
		$e->{prepare_rolled_back} = $was_aborted if $sql =~ /^PREPARE TRANSACTION /;
		my $r = $e->exec($sql);
		return $e->crash($r, undef, $sql) if $r->{lost};
		if (!$r->{ok})
		{
			# heap commits cannot fail here (no deferred constraints): a
			# failing COMMIT is pkmerge's
			return $e->fail('commit', undef, "$sql failed: $r->{state} $r->{msg}", state => $r->{state})
			  if $sql =~ /^(COMMIT|PREPARE TRANSACTION|COMMIT PREPARED|ROLLBACK PREPARED)\b/;
			# in a failed transaction (a statement failed alike on both
			# sides outside a savepoint, e.g. TRUNCATE of a table with an
			# open cursor) a savepoint made after it does not exist
			return $e->fail('harness', undef, "$sql failed: $r->{state} $r->{msg}", state => $r->{state})
			  unless $was_aborted;
		}
		if ($sql =~ /^BEGIN/)
		{
			$e->{in_txn} = 1;
		}
		elsif ($sql =~ /^(COMMIT|ROLLBACK)$/ || $sql =~ /^PREPARE TRANSACTION /)
		{
			$e->{in_txn} = 0;
			$e->{aborted} = 0;
		}
		elsif ($sql =~ /^ROLLBACK TO/ && $r->{ok})
		{
			$e->{aborted} = 0;
		}
		return undef;
	}
	if ($k eq 'restart')
	{
		# crash recovery: everything committed must be there afterwards
		return undef unless $e->{restart};
		$e->{stats}{ops}{restart}++;
		$e->disconnect;
		$e->{restart}->();
		$e->connect;
		$e->note('-- the server was shut down in immediate mode and started again here');
		return undef;
	}
	return undef if $e->{aborted};        # both sides would say 25P02
	return $e->run_pair($s) if $k eq 'pair';
	my $t = $e->table($s->{t});
	if ($k eq 'pk')
	{
		my $r = $e->exec(subst($s->{sql}, $t->{name}));
		return $e->crash($r, $s->{t}, $s->{sql}) if $r->{lost};
		return $e->fail('stmt', $s->{t}, "$s->{op} failed: $r->{state} $r->{msg}", state => $r->{state}) unless $r->{ok};
		$e->{stats}{ops}{ $s->{op} }++;
		if ($s->{prod})
		{
			# snapshots made before the switch keep their producer
			$e->{prods_since}{ $s->{t} }{ $e->producer($s->{t}) } = 1;
			$e->{prod}{ $s->{t} } = $s->{prod};
		}
		return undef;
	}
	return $e->check_pair($s->{t}, 'inside transaction ' . $txn->{id}) if $k eq 'check';
	if ($k eq 'expire' || $k eq 'clcheck')
	{
		my $f = $e->changelog_check($s->{t});
		return $f if $f || $k eq 'clcheck';
		my $r = $e->exec("SELECT pk_expire_snapshots('$t->{name}')");
		return $e->crash($r, $s->{t}, 'pk_expire_snapshots') if $r->{lost};
		return $e->fail('stmt', $s->{t}, "pk_expire_snapshots failed: $r->{state} $r->{msg}", state => $r->{state})
		  unless $r->{ok};
		return undef;
	}
	die "unknown step kind $k";
}

# The same logical statement on heap, then on pkmerge.  The heap one runs
# in a savepoint: where heap raises a unique violation (a key moved onto
# an existing key, which pkmerge defines as an overwrite) the pkmerge one
# is skipped; any other error pkmerge must raise as well.
sub run_pair
{
	my ($e, $s) = @_;
	my $t = $e->table($s->{t});
	my $pk = subst($s->{pk}, $t->{name});
	my $hp = subst($s->{heap}, $t->{heap});
	$e->{stats}{pairs}++;
	$e->{stats}{ops}{ $s->{op} }++;
	return $e->run_pair_pkfirst($s, $t, $pk, $hp) if $s->{pkfirst};
	my $sp = $e->{in_txn};
	if ($sp)
	{
		my $r = $e->exec('SAVEPOINT fz_heap');
		return $e->crash($r, $s->{t}, 'SAVEPOINT') if $r->{lost};
	}
	my $h = $e->exec($hp, copy => $s->{heapcopy});
	return $e->crash($h, $s->{t}, "heap: $hp") if $h->{lost};
	if ($sp)
	{
		for my $q ($h->{ok} ? () : ('ROLLBACK TO SAVEPOINT fz_heap'), 'RELEASE SAVEPOINT fz_heap')
		{
			my $r = $e->exec($q);
			return $e->crash($r, $s->{t}, $q) if $r->{lost};
		}
		$e->{aborted} = 0;
	}
	if (!$h->{ok})
	{
		my $hs = $h->{state};
		# (the twin's deferrable key raises 23505 where pkmerge upserts;
		# the unique constraint on (v, g) must fail on both)
		if ($hs eq '23505' && !($s->{xstate} && $s->{xstate}{23505})
			&& $h->{msg} !~ /unique constraint "\w+_vg"/)
		{
			$e->{stats}{skipped}++;
			$e->note('-- heap raised 23505: the statement is not run on pkmerge');
			return undef;
		}
		my $want = ($s->{xstate} && $s->{xstate}{$hs}) // $hs;
		my $p = $e->exec($pk, copy => $s->{pkcopy});
		return $e->crash($p, $s->{t}, $pk) if $p->{lost};
		if ($p->{ok} && $hs eq 'XX001' && $hp =~ /^VACUUM FULL /
			&& $h->{msg} =~ /^(missing|unexpected) chunk number \d+ (\(expected \d+\) )?for toast value/)
		{
			# PostgreSQL's own race (bugs #18351, #19519): a VACUUM of the
			# twin removed toast values of rows its heap part kept, the
			# horizons moving between the two as transactions of other
			# databases (parallel runs) end; the rewrite of the twin fails
			# and leaves it as it was.  Not pkmerge's to answer for.
			$e->{stats}{heap_toast_races}++;
			$e->note("-- heap hit PostgreSQL's toast horizon race ($h->{msg}): not compared");
			return undef;
		}
		if ($p->{ok})
		{
			return $e->fail('stmt', $s->{t}, "$s->{op}: heap failed with $hs ($h->{msg}), pkmerge succeeded: $p->{status}\n"
				  . "pkmerge: $pk\nheap: $hp", state => $hs);
		}
		if ($p->{state} ne $want)
		{
			return $e->fail('stmt', $s->{t}, "$s->{op}: heap failed with $hs ($h->{msg}), pkmerge with $p->{state} ($p->{msg})\n"
				  . "pkmerge: $pk\nheap: $hp", state => $p->{state});
		}
		$e->{stats}{expected_errors}++;
		$e->{stats}{unique_errors}++ if $hs eq '23505';
		$e->{stats}{fk_errors}++ if $hs eq '23503';
		return undef;
	}
	if ($s->{heapret})
	{
		# what the pkmerge statement's RETURNING must give, read from heap
		my $r = $e->exec(subst($s->{heapret}, $t->{heap}), quiet => 1);
		return $e->crash($r, $s->{t}, $s->{heapret}) if $r->{lost};
		return $e->fail('harness', $s->{t}, "$s->{heapret}: $r->{state} $r->{msg}") unless $r->{ok};
		$h->{rows} = $r->{rows};
	}
	my $p = $e->exec($pk, copy => $s->{pkcopy});
	return $e->crash($p, $s->{t}, $pk) if $p->{lost};
	if (!$p->{ok})
	{
		return $e->fail('stmt', $s->{t}, "$s->{op}: pkmerge failed with $p->{state} ($p->{msg}), heap succeeded: $h->{status}\n"
			  . "pkmerge: $pk\nheap: $hp", state => $p->{state});
	}
	if ($s->{cnt})
	{
		my ($pc, $hc) = (count_of($p->{status}), count_of($h->{status}));
		if (defined $pc && defined $hc && $pc != $hc)
		{
			return $e->fail('count', $s->{t}, "$s->{op}: pkmerge says $p->{status}, heap $h->{status}\n"
				  . "pkmerge: $pk\nheap: $hp");
		}
	}
	if ($p->{rows} && $h->{rows})
	{
		my $sorted = sub { $s->{ordered} ? $_[0] : [ sort { rows_text([$a]) cmp rows_text([$b]) } @{ $_[0] } ] };
		my $pr = rows_text($sorted->($p->{rows}));
		my $hr = rows_text($sorted->($h->{rows}));
		if ($pr ne $hr)
		{
			return $e->fail('returning', $s->{t}, "$s->{op}: RETURNING differs\npkmerge:\n$pr\nheap:\n$hr\n"
				  . "pkmerge: $pk\nheap: $hp");
		}
	}
	return undef;
}

# DDL: pkmerge first, as it refuses some forms that heap takes (0A000:
# commands that compute every row again); those are not run on heap.
# Otherwise both must succeed, or fail alike.
sub run_pair_pkfirst
{
	my ($e, $s, $t, $pk, $hp) = @_;
	my $sp = $e->{in_txn};
	my @res;
	for my $side ([ $pk, 'fz_pk' ], [ $hp, 'fz_heap' ])
	{
		my ($sql, $name) = @$side;
		if ($sp)
		{
			my $r = $e->exec("SAVEPOINT $name");
			return $e->crash($r, $s->{t}, 'SAVEPOINT') if $r->{lost};
		}
		my $r = $e->exec($sql);
		return $e->crash($r, $s->{t}, $sql) if $r->{lost};
		if ($sp)
		{
			for my $q ($r->{ok} ? () : ("ROLLBACK TO SAVEPOINT $name"), "RELEASE SAVEPOINT $name")
			{
				my $x = $e->exec($q);
				return $e->crash($x, $s->{t}, $q) if $x->{lost};
			}
			$e->{aborted} = 0;
		}
		push @res, $r;
		if (!$r->{ok} && $name eq 'fz_pk' && $r->{state} eq '0A000')
		{
			$e->{stats}{expected_errors}++;
			$e->note('-- refused by pkmerge: the statement is not run on heap');
			return undef;
		}
	}
	my ($p, $h) = @res;
	if ($p->{ok} != $h->{ok} || (!$p->{ok} && $p->{state} ne $h->{state}))
	{
		return $e->fail('stmt', $s->{t}, "$s->{op}: pkmerge " . ($p->{ok} ? $p->{status} : "failed with $p->{state} ($p->{msg})")
			  . ', heap ' . ($h->{ok} ? $h->{status} : "failed with $h->{state} ($h->{msg})") . "\npkmerge: $pk\nheap: $hp",
			state => $p->{ok} ? $h->{state} : $p->{state});
	}
	$e->{stats}{expected_errors}++ unless $p->{ok};
	return undef;
}

# ---------------------------------------------------------------- checks

# canonical key of a result row's first columns: keys equal under the
# key's operator class are one (numeric 1.5 and 1.50, float8 0 and -0 or
# the jsonb 0 of either, NaN and NaN, 'a' and 'A' under ci); the row's
# exact text is compared apart
sub norm_key
{
	my ($t, $row) = @_;
	my $i = 0;
	return join("\x{1f}", map {
		my $v = $row->[ $i++ ];
		my $ty = $t->{type}{$_};
		!defined $v ? "\x{0}null" : $ty eq 'num' ? PkFuzz::Gen::num_norm($v)
		  : $ty eq 'float' ? PkFuzz::Gen::float_norm($v) : $ty eq 'ci' ? PkFuzz::Gen::ci_norm($v) : $v
	} @{ $t->{key} });
}

sub show_key
{
	my ($k) = @_;
	(my $s = $k) =~ s/\x{1f}/, /g;
	return "($s)";
}

# a query on both sides; returns (pkmerge result, heap result) or a failure
sub both
{
	my ($e, $ti, $sql, $label) = @_;
	my $t = $e->table($ti);
	my @out;
	for my $name ($t->{name}, $t->{heap})
	{
		my $q = subst($sql, $name);
		my $r = $e->exec($q, quiet => 1);
		return (undef, undef, $e->crash($r, $ti, $q)) if $r->{lost};
		if (!$r->{ok})
		{
			my $side = $name eq $t->{name} ? 'pkmerge' : 'heap';
			return (undef, undef, $e->fail('query', $ti, "$label failed on $side: $r->{state} $r->{msg}\n$q",
				state => $r->{state}));
		}
		push @out, $r->{rows};
	}
	return (@out, undef);
}

sub content_query
{
	my ($t) = @_;
	return 'SELECT ' . PkFuzz::Gen::key_text($t) . ', md5(x::text), left(x::text, 160) FROM %T x';
}

# the queries compared after a transaction: name => SQL with %T
sub queries
{
	my ($e, $t) = @_;
	my $g = bless { rng => $e->{check_rng}, tables => $e->{tables}, avoid => {} }, 'PkFuzz::Gen';
	my $kt = PkFuzz::Gen::key_text($t);
	my $ko = PkFuzz::Gen::key_order($t);
	my $kd = PkFuzz::Gen::key_order($t, 'DESC');
	my $glo = $g->{rng}->between(-3, 40);
	my %q = (
		agg   => 'SELECT count(*), count(x.g), sum(x.g), count(x.v), sum(octet_length(x.v)), max(left(x.v, 12)) FROM %T x',
		range => "SELECT $kt, md5(x::text) FROM %T x WHERE " . PkFuzz::Gen::key_pred($g, $t, 'range') . " ORDER BY $ko",
		point => "SELECT $kt, md5(x::text) FROM %T x WHERE " . PkFuzz::Gen::key_pred($g, $t, 'point'),
		in    => "SELECT $kt, md5(x::text) FROM %T x WHERE " . PkFuzz::Gen::key_pred($g, $t, 'in') . " ORDER BY $ko",
		desc  => "SELECT $kt FROM %T x ORDER BY $kd LIMIT 5",
		after => "SELECT $kt FROM %T x WHERE " . PkFuzz::Gen::key_pred($g, $t, 'open') . " ORDER BY $ko LIMIT 4",
		group => 'SELECT x.g, count(*), sum(octet_length(x.v)) FROM %T x GROUP BY x.g ORDER BY x.g NULLS FIRST',
		# through the secondary indexes (PkFuzz::Gen::create_sql)
		byg   => "SELECT $kt, md5(x::text) FROM %T x WHERE x.g = " . $g->{rng}->between(-3, 41) . " ORDER BY $ko",
		grange => "SELECT $kt, x.g FROM %T x WHERE x.g BETWEEN $glo AND " . ($glo + 4) . " ORDER BY $ko",
		byv   => "SELECT $kt, x.g FROM %T x WHERE left(x.v, 12) = 'v" . $g->{rng}->between(0, 999) . "' ORDER BY $ko",
		lookup => 'SELECT ' . join(', ', map { "s.$_" } @{ $t->{key} }) . ', md5(x::text) FROM ('
		  . PkFuzz::Gen::values_sql($t, $t->{key}, PkFuzz::Gen::gen_rows($g, $t, 6, $t->{key})) . ') AS s('
		  . join(', ', @{ $t->{key} }) . ') JOIN %T x ON ' . PkFuzz::Gen::key_on($t) . ' ORDER BY 1'
		  . (@{ $t->{key} } > 1 ? ', 2' : ''),
	);
	# a nested loop probing the key index with the outer rows' keys
	my %join = (
		int  => 'b.k = x.k + 1',
		comp => 'b.a = x.a AND b.b = x.b + 1',
		text => "b.s = x.s || 'b'",
		num  => 'b.k = x.k + 0.5',
		ci   => "b.s = x.s || 'B'",
		float => 'b.k = -x.k + 0.25',
	);
	if ($e->{in_txn})
	{
		# row locks, which pkmerge takes on nothing but must accept
		$q{locking} = "SELECT $kt, md5(x::text) FROM %T x WHERE " . PkFuzz::Gen::key_pred($g, $t, 'range')
		  . " ORDER BY $ko " . $g->{rng}->pick([ 'FOR UPDATE', 'FOR SHARE', 'FOR NO KEY UPDATE', 'FOR KEY SHARE' ]);
	}
	$q{join} = "SELECT $kt, b.g FROM %T x JOIN %T b ON $join{ $t->{shape} } WHERE "
	  . PkFuzz::Gen::key_pred($g, $t, 'range') . " ORDER BY $ko";
	return \%q;
}

sub check_pair
{
	my ($e, $ti, $when) = @_;
	my $t = $e->table($ti);
	my $r = $e->{check_rng};
	$e->{stats}{checks}++;
	my ($p, $h, $f) = $e->both($ti, content_query($t), 'contents');
	return $f if $f;
	my (%pm, %hm);
	$pm{ norm_key($t, $_) } = $_ for @$p;
	$hm{ norm_key($t, $_) } = $_ for @$h;
	my $nk = @{ $t->{key} };
	my @diff;
	if (keys %pm != @$p)
	{
		# two rows of keys equal but not identical (1.5 and 1.50, 0 and -0,
		# 'a' and 'A' under ci): the upsert did not replace the row
		my %n;
		$n{ norm_key($t, $_) }++ for @$p;
		push @diff, map { show_key($_) . ': pkmerge holds ' . $n{$_} . ' rows of this key' } grep { $n{$_} > 1 } sort keys %n;
	}
	for my $k (sort(keys %{ { %pm, %hm } }))
	{
		my ($a, $b) = ($pm{$k}, $hm{$k});
		next if $a && $b && $a->[$nk] eq $b->[$nk];
		# the key's exact text where it differs (0 and -0, 'a' and 'A')
		my $kt = sub { my ($x) = @_; my $s = join(', ', map { $_ // 'NULL' } @$x[ 0 .. $nk - 1 ]); "key ($s) " };
		my $shown = ($a && $b && $kt->($a) ne $kt->($b));
		push @diff, show_key($k) . ': pkmerge ' . ($a ? ($shown ? $kt->($a) : '') . $a->[ $nk + 1 ] : 'no row')
		  . ', heap ' . ($b ? ($shown ? $kt->($b) : '') . $b->[ $nk + 1 ] : 'no row');
	}
	if (@diff)
	{
		return $e->fail('content', $ti, "contents differ $when (pkmerge " . scalar(@$p) . ' rows, heap ' . scalar(@$h)
			  . " rows; " . scalar(@diff) . " keys differ):\n" . join("\n", @diff[ 0 .. ($#diff < 7 ? $#diff : 7) ]));
	}
	# the references: the same on both sides (the pkmerge table's foreign
	# key deleted those of deleted rows as the twin's triggers did)
	if ($t->{fk})
	{
		my ($pf, $hf, $ff) = $e->both($ti, 'SELECT fid, ' . PkFuzz::Gen::key_text($t) . ' FROM %T_f x ORDER BY fid',
			'references');
		return $ff if $ff;
		my $show = sub { join("\n", map { join(', ', map { $_ // 'NULL' } @$_) } @{ $_[0] }) };
		my ($ps, $hs) = ($show->($pf), $show->($hf));
		if ($ps ne $hs)
		{
			my @pl = split /\n/, $ps;
			my @hl = split /\n/, $hs;
			my %in_h = map { $_ => 1 } @hl;
			my %in_p = map { $_ => 1 } @pl;
			my @d = ((map { "pkmerge only: $_" } grep { !$in_h{$_} } @pl), (map { "heap only: $_" } grep { !$in_p{$_} } @hl));
			return $e->fail('content', $ti, "references differ $when (pkmerge " . scalar(@pl) . ', heap ' . scalar(@hl)
				  . "):\n" . join("\n", @d[ 0 .. ($#d < 7 ? $#d : 7) ]));
		}
	}
	# now and then PostgreSQL's own check of the btree indexes against the
	# rows (every entry of a version the table holds, the tree's order);
	# outside transactions (a REPEATABLE READ snapshot older than an index
	# cannot verify it: 40001)
	if (!$e->{in_txn} && $r->chance(0.1))
	{
		my $q = "SELECT bt_index_check(indexrelid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
		  . " WHERE indrelid = '$t->{name}'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'btree')";
		my $x = $e->exec($q, quiet => 1);
		return $e->crash($x, $ti, $q) if $x->{lost};
		$e->{stats}{amchecks}++;
		return $e->fail('amcheck', $ti, "amcheck $when: $x->{state} $x->{msg}", state => $x->{state})
		  unless $x->{ok};
	}
	my $qs = $e->queries($t);
	my @names = sort keys %$qs;
	for (1 .. 2)
	{
		my $name = $r->pick(\@names);
		my $mode = $r->pick([ '', '', 'enable_seqscan', 'enable_indexscan', 'enable_bitmapscan' ]);
		my $setting = $mode ? "SET $mode = off" : undef;
		if ($setting)
		{
			my $x = $e->exec($setting, quiet => 1);
			return $e->crash($x, $ti, $setting) if $x->{lost};
		}
		$e->{stats}{queries}++;
		local $e->{qname} = $name;
		my ($pq, $hq, $qf) = $e->both($ti, $qs->{$name}, "query $name");
		if ($setting)
		{
			my $x = $e->exec("RESET $mode", quiet => 1);
			return $e->crash($x, $ti, 'RESET') if $x->{lost};
		}
		return $qf if $qf;
		my ($a, $b) = (rows_text($pq), rows_text($hq));
		if ($a ne $b)
		{
			return $e->fail('query', $ti, "query $name differs $when" . ($mode ? " ($mode = off)" : '')
				  . ":\n" . subst($qs->{$name}, $t->{name}) . "\npkmerge:\n$a\nheap:\n$b",
				query => $qs->{$name}, setting => $setting);
		}
	}
	return undef;
}

# Reads the change stream of table $ti from the last snapshot checked to
# the newest and replays it into the table's model, by the stream rules of
# the README (Changelog producers).  lookup and full-compaction must give a
# retract stream (+I only for an absent key, -U and -D carry exactly the
# current row, +U right after the -U of its key); none and input are
# replayed as upserts (+I/+U set, -U/-D delete).  A TRUNCATE (an OVERWRITE
# snapshot) opens its snapshot's changes: for none and input one record of
# rowkind TRUNCATE (row NULL), which empties the replay; for lookup and
# full-compaction the -D of every row the replay holds, before any other
# change.  Either way the replay must equal the table, every snapshot's
# changelog_record_count (none: delta_record_count) the row records
# pk_changes gives for it, every record's producer the table's, and
# pk_current_snapshot the newest snapshot.  full-compaction is first
# compacted fully: its stream lags until then.
# stream_only: read the stream up to the newest snapshot without the
# compaction and the comparison with the table (before a transaction that
# truncates the table: its TRUNCATE expires every earlier snapshot, and
# its -D records retract what the stream told before).
sub changelog_check
{
	my ($e, $ti, %o) = @_;
	my $t = $e->table($ti);
	my $n = $t->{name};
	# the producer now, and those the snapshots to read may have been made by
	my $prod = $e->producer($ti);
	my %prods = (%{ $e->{prods_since}{$ti} // {} }, $prod => 1);
	my $stream_only = $o{stream_only} && $prod eq 'full-compaction';
	$e->{writes}{$ti} = 0;
	$e->{stats}{clchecks}++;
	my $m = $e->{model}{$ti} //= { last => 0, rows => {} };
	my $q = sub {
		my ($sql) = @_;
		my $r = $e->exec($sql, quiet => 1);
		return ($r, $e->crash($r, $ti, $sql)) if $r->{lost};
		return ($r, $e->fail('changelog', $ti, "$sql failed: $r->{state} $r->{msg}", state => $r->{state})) unless $r->{ok};
		return ($r, undef);
	};
	my ($r, $f);
	if ($prod eq 'full-compaction' && !$stream_only)
	{
		($r, $f) = $q->("SELECT pk_compact('$n', true)");
		return $f if $f;
	}
	($r, $f) = $q->('BEGIN ISOLATION LEVEL REPEATABLE READ');
	return $f if $f;
	my $abort = sub {
		my ($r, $f) = @_;
		$e->exec('ROLLBACK', quiet => 1) unless $r->{lost};
		return $f;
	};
	($r, $f) = $q->("SELECT snapshot_id, commit_kind, changelog_record_count, delta_record_count, producer, "
		  . "pk_current_snapshot('$n') FROM pk_snapshots('$n') ORDER BY 1");
	return $abort->($r, $f) if $f;
	my $snaps = $r->{rows};
	my $max = @$snaps ? $snaps->[-1][0] : $m->{last};
	my $min = @$snaps ? $snaps->[0][0] : $m->{last} + 1;
	if (@$snaps && $snaps->[0][5] != $max)
	{
		return $abort->($r, $e->fail('changelog', $ti, "pk_current_snapshot gives $snaps->[0][5], "
			  . "the newest snapshot pk_snapshots lists is $max"));
	}
	# TRUNCATE expires the snapshots before its OVERWRITE (their changes went
	# with the old storage): the stream may restart there, without the
	# replay knowing the rows it retracts; a read from before it is refused
	my $restart = $min > $m->{last} + 1;
	if ($restart && $snaps->[0][1] ne 'OVERWRITE')
	{
		return $abort->($r, $e->fail('changelog', $ti, "snapshots $m->{last}+1 .. " . ($min - 1)
			  . " expired before the check read them (the oldest kept is $min, newest $max; retention "
			  . ($t->{opts}{snapshot_num_retained_min} // 10) . ')'));
	}
	if ($restart)
	{
		for my $sql ('SAVEPOINT fz_expired', "SELECT count(*) FROM pk_changes('$n', $m->{last})")
		{
			($r, $f) = $q->($sql);
			last if $f;
		}
		return $abort->($r, $f) if $r->{lost};
		if (!$f || $r->{state} ne '72000')
		{
			return $abort->($r, $e->fail('changelog', $ti, "pk_changes from snapshot $m->{last} (expired: the oldest kept is "
				  . "$min) must fail with 72000, not " . ($f ? "$r->{state} $r->{msg}" : 'succeed')));
		}
		($r, $f) = $q->('ROLLBACK TO SAVEPOINT fz_expired');
		return $abort->($r, $f) if $f;
	}
	my $kj = sub { my ($src) = @_; join(', ', map { $src . "->>'" . $_ . "'" } @{ $t->{key} }) };
	# rows as their generated columns: those ALTER TABLE added hold their
	# defaults (the contents checks compare them) and appear in the
	# rendering of every row, older ones included
	my $proj = sub {
		my ($src) = @_;
		my $o = 'jsonb_build_object(' . join(', ', map { "'$_->{name}', $src->'$_->{name}'" } @{ $t->{cols} }) . ')';
		return "md5(${o}::text), left(${o}::text, 160)";
	};
	my @res;
	for my $sql (
		'SELECT c.snapshot_id, c.rowkind, c.producer, ' . $kj->('c.row') . ', ' . $proj->('c.row')
		  . " FROM pk_changes('$n'" . ($restart ? '' : ", $m->{last}") . ')'
		  . ' WITH ORDINALITY AS c(snapshot_id, rowkind, row, producer, ord) ORDER BY c.ord',
		($stream_only ? () : ('SELECT ' . $kj->('to_jsonb(x)') . ', ' . $proj->('to_jsonb(x)') . " FROM $n x")),
		# each new snapshot read on its own: a range ending at it gives
		# what the whole range gives for it
		"SELECT s.snapshot_id, (SELECT count(*) FROM pk_changes('$n', s.snapshot_id - 1, s.snapshot_id)) "
		  . "FROM pk_snapshots('$n') s WHERE s.snapshot_id > " . ($restart ? 0 : $m->{last}) . ' ORDER BY 1',
		($e->{data_runs_check} ? ("SELECT check_data_runs('$n')") : ()),
		'COMMIT')
	{
		($r, $f) = $q->($sql);
		return $abort->($r, $f) if $f;
		push @res, $r->{rows};
	}
	my $changes = shift @res;
	my $table = $stream_only ? undef : shift @res;
	my $alone = shift @res;
	my $dr = $e->{data_runs_check} ? shift @res : undef;
	return $e->fail('data_runs', $ti, "check_data_runs: $dr->[0][0]") if $dr && $dr->[0][0] ne 'ok';
	my %kind = map { $_->[0] => $_->[1] } @$snaps;
	my %count;
	my $nk = @{ $t->{key} };
	my $rows = $m->{rows};
	my $retract;
	my $pending;
	my $ctx = sub {
		my ($c, $key) = @_;
		return "snapshot $c->[0] ($kind{$c->[0]}): $c->[1] of key " . show_key($key) . ' ' . $c->[ $nk + 4 ]
		  . '; the replay holds ' . ($rows->{$key} ? $rows->{$key}[1] : 'no row');
	};
	my %bysnap;
	push @{ $bysnap{ $_->[0] } }, $_ for @$changes;
	for my $sid (keys %bysnap)
	{
		return $e->fail('changelog', $ti, "pk_changes gives records of snapshot $sid, which pk_snapshots does not list")
		  unless $kind{$sid};
	}
	for my $a (@$alone)
	{
		my $whole = scalar @{ $bysnap{ $a->[0] } // [] };
		return $e->fail('changelog', $ti, "pk_changes('$n', " . ($a->[0] - 1) . ", $a->[0]) gives $a->[1] records, "
			  . "the range from the last check $whole for snapshot $a->[0]")
		  if $a->[1] != $whole;
	}
	for my $snap (@$snaps)
	{
		my $sid = $snap->[0];
		next if $sid <= $m->{last};
		if (!$prods{ $snap->[4] })
		{
			return $e->fail('changelog', $ti, "pk_snapshots says snapshot $sid was made by $snap->[4], the table's "
				  . 'producers since the last check are ' . join(', ', sort keys %prods));
		}
		# each snapshot by the rules of the producer that made it
		$retract = $snap->[4] =~ /lookup|full/;
		my @cs = @{ $bysnap{$sid} // [] };
		if ($kind{$sid} eq 'OVERWRITE')
		{
			$e->{stats}{overwrites}++ unless $restart && $sid == $min;
			if (!$retract)
			{
				if (!@cs || $cs[0][1] ne 'TRUNCATE')
				{
					return $e->fail('changelog', $ti, "snapshot $sid (OVERWRITE) of a $snap->[4] table does not "
						  . 'begin with a TRUNCATE record: ' . (@cs ? "$cs[0][1] first" : 'no records'));
				}
				shift @cs;
				%$rows = ();
			}
			else
			{
				# the -D of every row, first; unchecked where the stream
				# restarts here (the replay does not know those rows)
				while (@cs && $cs[0][1] eq '-D')
				{
					my $c = shift @cs;
					$count{$sid}++;
					$e->{stats}{changes}++;
					next if $restart && $sid == $min;
					my $key = norm_key($t, [ @$c[ 3 .. 2 + $nk ] ]);
					if (!$rows->{$key} || $rows->{$key}[0] ne $c->[ $nk + 3 ])
					{
						return $e->fail('changelog', $ti, '-D of the TRUNCATE does not retract the current row: '
							  . $ctx->($c, $key));
					}
					delete $rows->{$key};
				}
				if (%$rows && !($restart && $sid == $min))
				{
					my @left = sort keys %$rows;
					return $e->fail('changelog', $ti, "snapshot $sid (OVERWRITE) retracts only some rows before "
						  . (@cs ? "its $cs[0][1] of key " . show_key(norm_key($t, [ @{ $cs[0] }[ 3 .. 2 + $nk ] ])) : 'its end')
						  . '; ' . scalar(@left) . ' rows of the replay are left, e.g. ' . show_key($left[0]) . ' '
						  . $rows->{ $left[0] }[1]);
				}
				%$rows = ();
			}
		}
		for my $c (@cs)
		{
			my $kindc = $c->[1];
			my $key = norm_key($t, [ @$c[ 3 .. 2 + $nk ] ]);
			if ($c->[2] ne $snap->[4])
			{
				return $e->fail('changelog', $ti, "a record says producer $c->[2], its snapshot $snap->[4]: "
					  . $ctx->($c, $key));
			}
			return $e->fail('changelog', $ti, 'a TRUNCATE record other than first of an OVERWRITE snapshot: '
				  . $ctx->($c, $key)) if $kindc eq 'TRUNCATE';
			$count{$sid}++;
			$e->{stats}{changes}++;
			my $val = [ $c->[ $nk + 3 ], $c->[ $nk + 4 ] ];
			if ($retract)
			{
				if (defined $pending && ($kindc ne '+U' || $key ne $pending))
				{
					return $e->fail('changelog', $ti, 'the +U of key ' . show_key($pending) . ' is missing: ' . $ctx->($c, $key));
				}
				if ($kindc eq '+I')
				{
					return $e->fail('changelog', $ti, '+I of a present key: ' . $ctx->($c, $key)) if $rows->{$key};
					$rows->{$key} = $val;
				}
				elsif ($kindc eq '-U' || $kindc eq '-D')
				{
					if (!$rows->{$key} || $rows->{$key}[0] ne $val->[0])
					{
						return $e->fail('changelog', $ti, "$kindc does not retract the current row: " . $ctx->($c, $key));
					}
					if ($kindc eq '-U') { $pending = $key; }
					else                { delete $rows->{$key}; }
				}
				elsif ($kindc eq '+U')
				{
					return $e->fail('changelog', $ti, '+U without its -U: ' . $ctx->($c, $key)) unless defined $pending;
					$pending = undef;
					$rows->{$key} = $val;
				}
				else
				{
					return $e->fail('changelog', $ti, "unknown rowkind: " . $ctx->($c, $key));
				}
			}
			elsif ($kindc eq '+I' || $kindc eq '+U')
			{
				$rows->{$key} = $val;
			}
			elsif ($kindc eq '-U' || $kindc eq '-D')
			{
				delete $rows->{$key};
			}
			else
			{
				return $e->fail('changelog', $ti, "unknown rowkind: " . $ctx->($c, $key));
			}
		}
	}
	return $e->fail('changelog', $ti, 'the stream ends after the -U of key ' . show_key($pending)) if defined $pending;
	for my $s (@$snaps)
	{
		next if $s->[0] <= $m->{last};
		my $got = $count{ $s->[0] } // 0;
		# none has no changelog of its own: its stream is the delta of its
		# APPEND and OVERWRITE snapshots; a TRUNCATE record is no row
		# record, and no run holds it
		my ($col, $want) = $s->[4] ne 'none' ? ('changelog_record_count', $s->[2])
		  : $s->[1] eq 'COMPACT' ? ('(none: no changes)', 0) : ('delta_record_count', $s->[3]);
		if (!$e->{avoid}{cl_count} && defined $want && $want != $got)
		{
			return $e->fail('changelog', $ti, "snapshot $s->[0] ($s->[1]) has $col $want, "
				  . "pk_changes gives $got row records for it");
		}
	}
	$m->{last} = $max;
	$e->{prods_since}{$ti} = {};
	return undef if $stream_only;
	my %tab;
	$tab{ norm_key($t, $_) } = [ $_->[$nk], $_->[ $nk + 1 ] ] for @$table;
	my @diff;
	for my $k (sort(keys %{ { %tab, %$rows } }))
	{
		my ($a, $b) = ($rows->{$k}, $tab{$k});
		next if $a && $b && $a->[0] eq $b->[0];
		push @diff, show_key($k) . ': replay ' . ($a ? $a->[1] : 'no row') . ', table ' . ($b ? $b->[1] : 'no row');
	}
	if (@diff)
	{
		return $e->fail('changelog', $ti, "replaying the stream (snapshots up to $max, "
			  . 'by the rules of ' . join(', ', sort keys %prods) . ') does not give the table; '
			  . scalar(@diff) . " keys differ:\n" . join("\n", @diff[ 0 .. ($#diff < 7 ? $#diff : 7) ]));
	}
	return undef;
}

1;
