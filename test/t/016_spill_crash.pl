# 016_spill_crash.pl: runs a transaction spilled from its write buffer
# (write_buffer_size) and a crash.  A session writes 4MB into a table with
# a 1MB buffer, so runs of the open transaction are on disk (the file grew
# by them), and the server is stopped in immediate mode before it commits.
# After recovery the table holds exactly its committed rows, no catalog row
# of the lost runs remains, and VACUUM gives their space back (the file
# shrinks to what it was before the transaction).  A transaction that spilled and committed
# before a crash keeps every row, with one snapshot.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('spill');
$node->init;
$node->start;

my $rows = q{SELECT count(*), coalesce(sum(v), 0), md5(coalesce(string_agg(id || ':' || v || ':' || pad, ',' ORDER BY id), '')) FROM t};

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE t (id int PRIMARY KEY, v int, pad text) USING pkmerge
	WITH (write_buffer_size = '1MB', changelog_producer = 'input');
INSERT INTO t SELECT i, i, md5(i::text) FROM generate_series(1, 1000) i;
CHECKPOINT;
});
my $before = $node->safe_psql('postgres', $rows);
my $size0 = $node->safe_psql('postgres', q{SELECT pg_relation_size('t')});

# a session spills and waits, its transaction open
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$out, '2>', \$err,
	IPC::Run::timeout(120));
$in .= q{BEGIN;
INSERT INTO t SELECT i, -i, (SELECT string_agg(md5(i::text || j), '') FROM generate_series(1, 60) j)
FROM generate_series(1, 2000) i;
SELECT count(*) FROM pk_runs('t') WHERE created_snapshot = 0;
\echo SPILLED
};
$h->pump while $h->pumpable && $out !~ /^SPILLED$/m;
my ($pending) = split /\n/, $out;
cmp_ok($pending, '>=', 4, "the open transaction spilled runs ($pending)");
my $size1 = $node->safe_psql('postgres', q{SELECT pg_relation_size('t')});
cmp_ok($size1, '>', $size0 + 1024 * 1024, "the spilled runs are in the file ($size0 -> $size1 bytes)");

$node->stop('immediate');
$h->finish;
$node->start;

is($node->safe_psql('postgres', $rows), $before, 'after the crash: exactly the committed rows');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('t')}), '2',
	'no catalog row of the lost runs (one data and one changelog run)');
is($node->safe_psql('postgres', q{SELECT count(*), max(snapshot_id) FROM pk_snapshots('t')}), '1|1',
	'no snapshot of the lost transaction');

# VACUUM sees the space of the lost runs free: the file shrinks back
$node->safe_psql('postgres', q{VACUUM t});
is($node->safe_psql('postgres', q{SELECT pg_relation_size('t')}), $size0,
	'VACUUM gave the space of the lost runs back');
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT i, 2 * i, repeat('c', 2000) FROM generate_series(1, 2000) i;
UPDATE t SET v = v + 1 WHERE id % 2 = 0;
COMMIT;
});
my $after = $node->safe_psql('postgres', $rows);
is($after,
	$node->safe_psql('postgres', q{
SELECT count(*), sum(v), md5(string_agg(id || ':' || v || ':' || pad, ',' ORDER BY id))
FROM (SELECT i AS id, 2 * i + (i % 2 = 0)::int AS v, repeat('c', 2000) AS pad
	  FROM generate_series(1, 2000) i) x}),
	'the committed spilling transaction: every row');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_snapshots('t') WHERE commit_kind = 'APPEND'}), '2',
	'one snapshot for it');

# and it survives a crash of its own
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $rows), $after, 'after a second crash: the same rows');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_changes('t', 1)}), '4000',
	'its change stream: 2000 inserts and 1000 -U/+U pairs');

$node->stop;
done_testing();
