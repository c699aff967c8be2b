# 001_preload.pl: without shared_preload_libraries the extension refuses to
# load with an error that says how to fix it; with it, CREATE EXTENSION works
# and survives a restart.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
# TEMP_CONFIG preloads the library; take it back out for this node
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->start;

my ($ret, $stdout, $stderr) =
  $node->psql('postgres', 'CREATE EXTENSION pkchangelog');
isnt($ret, 0, 'CREATE EXTENSION fails without preload');
like($stderr, qr/pkchangelog must be loaded via shared_preload_libraries/,
	'error names the cause');
like($stderr, qr/HINT:  Add 'pkchangelog' to shared_preload_libraries/,
	'error carries a hint');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_extension WHERE extname = 'pkchangelog'"),
	'0', 'nothing half-created');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_namespace WHERE nspname = 'pkchangelog'"),
	'0', 'no catalog schema left behind');

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pkchangelog'");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
$node->restart;
is($node->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pkchangelog'"),
	$node->safe_psql('postgres',
		"SELECT default_version FROM pg_available_extensions WHERE name = 'pkchangelog'"),
	'extension present at its default version after restart');

$node->stop;
done_testing();
