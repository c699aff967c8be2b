# 002_exports.pl: the library exports exactly the entry points PostgreSQL
# looks up: every C function the extension scripts declare (and its
# pg_finfo_ record; an update script's own, which it drops again, too), _PG_init, the output plugin's _PG_output_plugin_init,
# the module magic and the background workers' main functions.  A backend
# loads libraries with RTLD_GLOBAL, so any other exported name (scan_begin,
# merge_next, ...) could collide with another library's.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('exports');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');

my @functions = split /\n/, $node->safe_psql('postgres', q{
SELECT DISTINCT prosrc FROM pg_proc
WHERE probin = '$libdir/pkchangelog' ORDER BY 1});
ok(scalar(@functions) >= 10, 'the script declares C functions');

# and those an update script declares for its own use and drops again
my @transient;
for my $script (glob("$FindBin::Bin/../../sql/pkchangelog--*--*.sql"))
{
	my $text = slurp_file($script);
	push @transient, $1 while $text =~ /'MODULE_PATHNAME',\s*'(\w+)'/g;
}
ok(scalar(grep { $_ eq 'pk_key_index_btree_opclasses' } @transient),
	'the update scripts\' own C functions are found');

my %expected = map { $_ => 1 } ('_PG_init', 'Pg_magic_func', '_PG_output_plugin_init',
	'pk_launcher_main', 'pk_worker_main', @functions, @transient,
	map { "pg_finfo_$_" } @functions, @transient);

my $libdir = `pg_config --pkglibdir`;
chomp $libdir;
my ($stdout, $stderr);
IPC::Run::run [ 'nm', '-D', '--defined-only', '--extern-only', "$libdir/pkchangelog.so" ],
  '>', \$stdout, '2>', \$stderr
  or die "nm failed: $stderr";
my %exported = map { (split ' ')[2] => 1 } grep { /\S/ } split /\n/, $stdout;

is_deeply([ sort grep { !$exported{$_} } keys %expected ], [],
	'every entry point is exported');
is_deeply([ sort grep { !$expected{$_} } keys %exported ], [],
	'nothing else is exported');

$node->stop;
done_testing();
