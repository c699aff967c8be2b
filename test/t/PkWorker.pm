# PkWorker.pm: what the tests that run the background worker (t/014,
# t/015, t/018, t/020, t/021, t/028, t/029, t/036) do with it: start a
# node with the workers on, change their settings at run time, wait until
# none runs, and watch processes' memory.
package PkWorker;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;

# start_node($name, $conf, %init): a started node whose workers are on,
# with a naptime of 100 ms (lines of $conf may set another), the
# postgresql.conf lines $conf, initialized with %init (as Cluster::init)
sub start_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf', q{
pkchangelog.worker_enabled = on
pkchangelog.worker_naptime = 100ms
} . ($conf // ''));
	$node->start;
	return $node;
}

# set($node, $name, $value): ALTER SYSTEM SET pkchangelog.$name, and reload
sub set
{
	my ($node, $name, $value) = @_;
	$node->safe_psql('postgres', qq{
ALTER SYSTEM SET pkchangelog.$name = '$value';
SELECT pg_reload_conf();
});
	return;
}

# none_running($node): waits until no pkchangelog worker runs; true if so
sub none_running
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pkchangelog worker'});
}

# vm_kb($pid, $field): a field of /proc/$pid/status in kB (VmHWM: peak
# resident set, VmRSS: now); undef once the process is gone
sub vm_kb
{
	my ($pid, $field) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	my $kb;
	while (<$fh>)
	{
		$kb = $1 if /^$field:\s+(\d+)\s+kB/;
	}
	close($fh);
	return $kb;
}

# worker_pids($node): the pids of the node's running pkchangelog workers,
# from /proc (a worker may live for less time than a query takes)
sub worker_pids
{
	my ($node) = @_;
	my $postmaster = $node->{_pid};
	my @pids;
	for my $dir (glob('/proc/[0-9]*'))
	{
		my ($pid) = $dir =~ m{(\d+)$};
		open(my $st, '<', "$dir/stat") or next;
		my $stat = <$st>;
		close($st);
		next unless defined $stat && $stat =~ /\)\s+\S+\s+(\d+)/ && $1 == $postmaster;
		open(my $cl, '<', "$dir/cmdline") or next;
		my $cmd = <$cl> // '';
		close($cl);
		push @pids, $pid if $cmd =~ /pkchangelog worker/;
	}
	return @pids;
}

# watch_peak($h, $pids, $limit_kb): while the IPC::Run harness $h runs,
# samples every 20 ms the peak memory (VmHWM) of the processes $pids->()
# returns; a process whose resident set passes $limit_kb is terminated,
# so that a test of a memory bound fails without taking the machine down.
# Returns the highest peak seen, in kB.
sub watch_peak
{
	my ($h, $pids, $limit_kb) = @_;
	my $peak = 0;
	while ($h->pumpable)
	{
		for my $pid ($pids->())
		{
			my $hwm = vm_kb($pid, 'VmHWM') // next;
			$peak = $hwm if $hwm > $peak;
			kill 'TERM', $pid if (vm_kb($pid, 'VmRSS') // 0) > $limit_kb;
		}
		$h->pump_nb;
		select(undef, undef, undef, 0.02);
	}
	return $peak;
}

1;
