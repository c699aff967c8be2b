# 045_block_cache.pl: the server's shared cache of decompressed blocks
# (pkchangelog.block_cache_size) under concurrent point lookups and
# writes, with one slot (each new block takes the slot of the last; with
# the slot pinned, a lookup keeps its block to itself), with a few, and
# off (each backend's own cache).  Every lookup checks the row it gets: a
# slot whose bytes changed while it was pinned, or a key naming another
# block's bytes, would return another row or none, and the reader fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PkWorkload;

my $rows = 30000;
my $node = PostgreSQL::Test::Cluster->new('bc');
$node->init;
$node->append_conf('postgresql.conf', "pkchangelog.block_cache_size = 24kB\n");
$node->start;
is($node->safe_psql('postgres', 'SHOW pkchangelog.block_cache_size'),
	'24kB', 'the cache has one slot');

# v is id plus a million per update: v % 1000000 = id always
$node->safe_psql('postgres', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE t (id int PRIMARY KEY, v bigint, pad text) USING pkmerge;
INSERT INTO t SELECT g, g, repeat('x', 40 + g % 30) FROM generate_series(1, $rows) g;
});

my $dir = PostgreSQL::Test::Utils::tempdir;
open my $f, '>', "$dir/read.sql" or die;
print $f "\\set id random(1, $rows)\n",
  "SELECT CASE WHEN count(*) = 1 AND bool_and(v % 1000000 = :id) THEN 1\n",
  "  ELSE 1 / (count(*) - count(*))::int END\n",
  "FROM t WHERE id = :id;\n";
close $f;
open $f, '>', "$dir/write.sql" or die;
print $f "\\set id random(1, $rows)\n",
  "UPDATE t SET v = v + 1000000 WHERE id = :id;\n";
close $f;

# readers (3 clients) beside a writer, whose commits add runs that the
# background worker compacts: new blocks all the time
sub run_clients
{
	my ($seconds) = @_;
	return PkWorkload::readers_and_writer($node, $seconds, "$dir/read.sql",
		"$dir/write.sql", 'lookups');
}

# the table after the clients: every row there once, each update counted
my $updates = 0;
sub check_table
{
	my ($label) = @_;
	is($node->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE v % 1000000 <> id), sum(v / 1000000) FROM t}),
		"$rows|0|$updates", "$label: every row once, every update in it");
}

sub stats
{
	return split /\|/, $node->safe_psql('postgres',
		q{SELECT lookup_cache_hits, lookup_cache_misses FROM pk_stats('t')});
}

# with_cache SIZE LABEL SECONDS: restart with that cache size, run the
# clients, check the table
sub with_cache
{
	my ($size, $label, $seconds) = @_;
	$node->append_conf('postgresql.conf', "pkchangelog.block_cache_size = $size\n");
	$node->restart;
	$updates += run_clients($seconds);
	check_table($label);
}

# the lookup counters' changes over a second session's lookup of a key
# the session before looked up (misses, hits)
sub second_session_lookup
{
	$node->safe_psql('postgres', 'SELECT v FROM t WHERE id = 12345');
	my ($hits, $misses) = stats();
	$node->safe_psql('postgres', 'SELECT v FROM t WHERE id = 12345');
	my ($hits2, $misses2) = stats();
	return ($misses2 - $misses, $hits2 - $hits);
}

$updates += run_clients(6);
check_table('one slot');
my ($hits, $misses) = stats();
cmp_ok($misses, '>', 1000, "one slot: lookups miss ($misses misses, $hits hits)");

with_cache('96kB', 'four slots', 4);

# the default size: a block one session read is a hit for another
with_cache('128MB', '128MB', 4);
my ($new_misses, $new_hits) = second_session_lookup();
is($new_misses, 0, 'a block another session read: no miss');
cmp_ok($new_hits, '>', 0, '... but a hit');

# off: each backend has its own cache, a new session's first lookup misses
with_cache('0', 'off', 4);
($new_misses, $new_hits) = second_session_lookup();
cmp_ok($new_misses, '>', 0, 'off: a new session misses the blocks another one read');

# a block too large for a slot (one row of 30 kB) is cached per backend
$node->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, big text) USING pkmerge;
INSERT INTO w SELECT g, repeat(md5(g::text), 900 + g) FROM generate_series(1, 3) g;
});
$node->append_conf('postgresql.conf', "pkchangelog.block_cache_size = 128MB\n");
$node->restart;
is($node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT length(big) FROM w WHERE id = 2;
SELECT length(big) FROM w WHERE id = 2;
}), "28864\n28864", 'a block larger than a slot is read, twice');
is($node->safe_psql('postgres', q{
SELECT lookup_cache_hits, lookup_cache_misses FROM pk_stats('w');
}), "1|2", '... and cached in the backend: its second lookup hits '
	. '(the first one read the run\'s last block too, for its key range)');

$node->stop;
done_testing();
