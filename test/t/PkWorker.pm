# PkWorker.pm: what the background worker tests (t/014, t/018) do to the
# workers: change their settings at run time, and wait until none runs.
package PkWorker;

use strict;
use warnings;

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

1;
