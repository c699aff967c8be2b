# 005_demo.pl: make demo's scripts (test/demo/*.sql) run as make demo runs
# them, without an error, and tell what they say: the naive downstream
# total of the none stream is 180 where the other producers' give 80, and
# the subscriber's trigger-maintained total is 80 beside the naive 180,
# and a pk_consume loop keeps its own total at 80.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('demo');
$node->init(allows_streaming => 'logical');
$node->start;

my %out;
for my $f (sort glob("$FindBin::Bin/../demo/*.sql"))
{
	my ($stdout, $stderr);
	my $name = (split m{/}, $f)[-1];
	my $rc = $node->psql('postgres', undef,
		stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-v', 'ON_ERROR_STOP=1', '-P', 'pager=off',
			'-v', 'conninfo=' . $node->connstr('postgres'), '-f', $f ]);
	is($rc, 0, "$name runs without an error") or diag($stderr);
	$out{$name} = $stdout;
}
like($out{'01_incident.sql'}, qr/^none\|10\|180\.00$/m,
	'the none stream makes the naive total 180');
like($out{'01_incident.sql'}, qr/^lookup\|10\|80\.00$/m,
	'the lookup stream makes the total 80');
like($out{'02_replication.sql'}, qr/^10\|80\.00\|180\.00$/m,
	'the subscriber keeps 80 with the retraction, the naive total shows 180');
like($out{'02_replication.sql'}, qr/^public\.orders_repl -U .*amount\[numeric\]:80\.00$/m,
	'the pkchangelog plugin prints the -U');
like($out{'03_consume.sql'}, qr/^10\|80\.00$/m,
	'the pk_consume loop keeps the store total at 80');
like($out{'03_consume.sql'}, qr/^store_totals\|3$/m,
	'the consumer is at snapshot 3');
like($out{'04_materialize.sql'}, qr/^10\|80\.00\|180\.00$/m,
	'the materialized aggregate holds 80 beside the naive 180');
like($out{'04_materialize.sql'}, qr/^10\|30\.00\|1\|30\.00$/m,
	'the aggregate drops the deleted order and its max');
done_testing();
