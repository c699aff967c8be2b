# 017_scan_ring.pl: sequential scans of a pkmerge table larger than a
# quarter of shared_buffers read through a buffer ring (BAS_BULKREAD), as
# heap's do.  The ring must live exactly as long as the scan: across
# rescans (the inner side of a nested loop) and not a moment longer (a ring
# freed twice, or used after its memory was recycled, corrupts the backend:
# a later query in the same session then fails or returns garbage).  With
# shared_buffers = 1MB a table of 60+ pages needs the ring.  Every result is
# compared with a heap copy, in one session, several times over.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('ring');
$node->init;
$node->append_conf('postgresql.conf', "shared_buffers = '1MB'\nmax_parallel_workers_per_gather = 0\njit = off");
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE t (id int PRIMARY KEY, grp int, v text) USING pkmerge;
INSERT INTO t SELECT g, g % 10, md5(g::text) || md5((g * 7)::text) FROM generate_series(1, 30000) g;
INSERT INTO t SELECT g, g % 10 + 10, 'second' FROM generate_series(1, 30000, 5) g;
CREATE TABLE h AS SELECT * FROM t;
ANALYZE t, h;
});
my $pages = $node->safe_psql('postgres', q{SELECT pg_relation_size('t') / 8192});
my $buffers = $node->safe_psql('postgres', q{SELECT setting::int FROM pg_settings WHERE name = 'shared_buffers'});
cmp_ok($pages, '>', $buffers / 4, "the table ($pages pages) needs the ring ($buffers buffers)");

# one session: scans with the ring, hash aggregates after them, rescans
my $queries = q{
SELECT grp, count(*), sum(id) FROM %1$s GROUP BY grp ORDER BY grp LIMIT 3;
SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM %1$s;
SELECT grp, count(*) FROM %1$s GROUP BY grp ORDER BY grp LIMIT 1;
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT s, count(*) FROM generate_series(1, 4) s JOIN %1$s x ON x.grp = s GROUP BY s ORDER BY s;
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_material;
RESET enable_indexscan; RESET enable_bitmapscan;
SELECT grp, count(*) FROM %1$s GROUP BY grp ORDER BY grp LIMIT 1;
};
my $script_t = join('', map { sprintf($queries, 't') } 1 .. 3);
my $script_h = join('', map { sprintf($queries, 'h') } 1 .. 3);
my ($ret_t, $out_t, $err_t) = $node->psql('postgres', $script_t);
my ($ret_h, $out_h, $err_h) = $node->psql('postgres', $script_h);
is($ret_t, 0, 'every query of the session ran');
is($err_t, '', 'no error in the session');
is($out_t, $out_h, 'the same results as heap, three times over');

# and a heap query after pkmerge scans in the same session
my ($ret, $out, $err) = $node->psql('postgres', sprintf($queries, 't') . sprintf($queries, 'h'));
is($err, '', 'a heap query after them: no error');

$node->stop;
done_testing();
