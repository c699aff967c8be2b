#!/usr/bin/perl
# fuzz.pl: runs the differential test of test/fuzz/PkFuzz.pm (its design is
# at the top of that file) against a running server with pkchangelog
# preloaded.  Exits 1 on a failure, after printing the failing check and a
# minimal reproduction (also written to DIR/pkfuzz-seedN.sql).
#
#   fuzz.pl --host H --port P [--seed N] [--minutes M | --txns N]
#           [--log SERVERLOG] [--reduce-seconds S] [--script-dir DIR]
#           [--avoid class,class]      (also FUZZ_AVOID)
#           [--pgdata DIR --bindir DIR]  (to restart the server in
#                                        immediate mode now and then)
#           [--parallel N]   N runs at once (seeds SEED..SEED+N-1), each in
#                            a copy of one database holding the tables of
#                            SEED (one relfilenode in N databases); no
#                            restarts; a failure may not reproduce alone
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use Getopt::Long;
use PkFuzz;

binmode(STDOUT, ':encoding(UTF-8)');
$| = 1;
my %o = (user => 'postgres', reduce_seconds => 300, avoid => $ENV{FUZZ_AVOID} // '');
GetOptions(
	'host=s'           => \$o{host},
	'port=i'           => \$o{port},
	'user=s'           => \$o{user},
	'seed=i'           => \$o{seed},
	'minutes=f'        => \$o{minutes},
	'txns=i'           => \$o{txns},
	'log=s'            => \$o{logfile},
	'reduce-seconds=i' => \$o{reduce_seconds},
	'script-dir=s'     => \$o{script_dir},
	'avoid=s'          => \$o{avoid},
	'pgdata=s'         => \$o{pgdata},
	'bindir=s'         => \$o{bindir},
	'parallel=i'       => \$o{parallel}) or die "bad arguments\n";
die "--host and --port are required\n" unless $o{host} && $o{port};
$o{seed} //= int(rand(1 << 31));
$o{minutes} //= 2 unless $o{txns};
my %avoid = map { $_ => 1 } grep { length } split /,/, $o{avoid};
my $restart;
if ($o{pgdata} && $o{bindir})
{
	$restart = sub {
		open(my $saved, '>&', \*STDOUT) or die "cannot dup stdout: $!";
		open(STDOUT, '>', '/dev/null') or die "cannot redirect stdout: $!";
		my $rc = system("$o{bindir}/pg_ctl", '-D', $o{pgdata}, '-m', 'immediate', '-w', '-l',
			$o{logfile} // '/dev/null', 'restart');
		open(STDOUT, '>&', $saved) or die "cannot restore stdout: $!";
		die "pg_ctl restart failed\n" if $rc != 0;
	};
}
my %run = (
	host           => $o{host},
	port           => $o{port},
	user           => $o{user},
	seed           => $o{seed},
	txns           => $o{txns},
	seconds        => $o{minutes} ? $o{minutes} * 60 : undef,
	logfile        => $o{logfile},
	reduce_seconds => $o{reduce_seconds},
	script_dir     => $o{script_dir},
	avoid          => \%avoid,
	restart        => $restart);
if (($o{parallel} // 1) > 1)
{
	my $template = PkFuzz::make_template(%run, table_seed => $o{seed});
	my %kids;
	for my $i (0 .. $o{parallel} - 1)
	{
		my $pid = fork() // die "fork: $!";
		if (!$pid)
		{
			my $seed = $o{seed} + $i;
			my $r = PkFuzz::run(%run, seed => $seed, table_seed => $o{seed}, template => $template,
				restart => undef, say => sub { print join('', map { "[$seed] $_\n" } split /\n/, $_[0]) });
			exit($r->{failure} ? 1 : 0);
		}
		$kids{$pid} = $o{seed} + $i;
	}
	my @failed;
	while ((my $pid = wait()) > 0)
	{
		push @failed, $kids{$pid} if $? != 0;
	}
	if (@failed)
	{
		print "make fuzz: FAILED with seed(s) @failed of $o{parallel} parallel runs from $o{seed}"
		  . " (rerun: make fuzz SEED=$o{seed} FUZZ_PARALLEL=$o{parallel}" . ($o{avoid} ? " FUZZ_AVOID=$o{avoid}" : '') . ")\n";
		exit 1;
	}
	print "make fuzz: seeds $o{seed}.." . ($o{seed} + $o{parallel} - 1) . " in parallel: no divergence\n";
	exit 0;
}
my $res = PkFuzz::run(%run);
if ($res->{failure})
{
	print "make fuzz: FAILED with seed $o{seed} (rerun: make fuzz SEED=$o{seed}"
	  . ($o{avoid} ? " FUZZ_AVOID=$o{avoid}" : '') . ")\n";
	exit 1;
}
print "make fuzz: seed $o{seed}: $res->{txns} transactions, no divergence\n";
exit 0;
