# 046_index_cache.pl: the server's shared cache of run indexes
# (pkchangelog.shared_index_cache_size).  With a cache of a few indexes,
# concurrent lookups in several tables evict each other's indexes all the
# time while a writer's commits and the worker's compactions make new
# runs, and an index larger than half the cache stays with its backend;
# every lookup checks its row (an index whose bytes changed while pinned,
# or a key naming another run's index, would find another row or none,
# and the reader fails).  With the default size, a backend keeps no copy
# of the indexes it reads; with the cache off, it does.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PkWorkload;

my $rows = 16000;
my $node = PostgreSQL::Test::Cluster->new('ic');
$node->init;
$node->append_conf('postgresql.conf', "pkchangelog.shared_index_cache_size = 48kB\n");
$node->start;
is($node->safe_psql('postgres', 'SHOW pkchangelog.shared_index_cache_size'),
	'48kB', 'a cache of a few indexes');

# v is id plus a million per update: v % 1000000 = id always.  Tables a,
# b and c are four runs each, every run over the whole key range (a
# lookup probes each); big is one run whose index is larger than half the
# cache.
$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
for my $t (qw(a b c))
{
	$node->safe_psql('postgres',
		"CREATE TABLE $t (id int PRIMARY KEY, v bigint, pad text) USING pkmerge");
	for my $k (1 .. 4)
	{
		$node->safe_psql('postgres', qq{
INSERT INTO $t SELECT g, g, repeat('x', 20 + g % 30) FROM generate_series($k, $rows, 4) g});
	}
}
$node->safe_psql('postgres', qq{
CREATE TABLE big (id int PRIMARY KEY, v bigint, pad text) USING pkmerge;
INSERT INTO big SELECT g, g, repeat('y', 20 + g % 30) FROM generate_series(1, 4 * $rows) g;
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('a') WHERE kind = 'data'}),
	'4', 'table a: four runs');

my $dir = PostgreSQL::Test::Utils::tempdir;
open my $f, '>', "$dir/read.sql" or die;
print $f "\\set id random(1, $rows)\n";
for my $t (qw(a b c big))
{
	print $f "SELECT CASE WHEN count(*) = 1 AND bool_and(v % 1000000 = :id) THEN 1\n",
	  "  ELSE 1 / (count(*) - count(*))::int END\n",
	  "FROM $t WHERE id = :id;\n";
}
close $f;
open $f, '>', "$dir/write.sql" or die;
print $f "\\set id random(1, $rows)\n",
  "UPDATE a SET v = v + 1000000 WHERE id = :id;\n",
  "UPDATE b SET v = v + 1000000 WHERE id = :id;\n",
  "UPDATE c SET v = v + 1000000 WHERE id = :id;\n",
  "UPDATE big SET v = v + 1000000 WHERE id = :id;\n";
close $f;

my $writes = PkWorkload::readers_and_writer($node, 6, "$dir/read.sql", "$dir/write.sql",
	'transactions of four lookups');
for my $t (qw(a b c big))
{
	my $n = $t eq 'big' ? 4 * $rows : $rows;
	is($node->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE v % 1000000 <> id), sum(v / 1000000) FROM $t}),
		"$n|0|$writes", "$t: every row once, every update in it");
}

# the memory of the backend's own run index cache after lookups in a
# one-run table of 200k rows (its bloom filter alone is 250 kB)
$node->safe_psql('postgres', q{
CREATE TABLE m (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO m SELECT g, g FROM generate_series(1, 200000) g;
});
sub own_index_bytes
{
	return $node->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..500 LOOP PERFORM v FROM m WHERE id = i * 397; END LOOP; END $$;
SELECT sum(total_bytes) FROM pg_backend_memory_contexts
WHERE name LIKE 'pkmerge run index%';
});
}
$node->append_conf('postgresql.conf', "pkchangelog.shared_index_cache_size = 128MB\n");
$node->restart;
my $shared_bytes = own_index_bytes();
cmp_ok($shared_bytes, '<', 100 * 1024,
	"shared: the backend keeps no copy of the index ($shared_bytes bytes of its own)");
$node->append_conf('postgresql.conf', "pkchangelog.shared_index_cache_size = 0\n");
$node->restart;
my $own_bytes = own_index_bytes();
cmp_ok($own_bytes, '>', 250 * 1024,
	"off: the backend reads the index and bloom filter into its memory ($own_bytes bytes)");

$node->stop;
done_testing();
