# 042_indexes.pl: secondary indexes of a pkmerge table through a crash, on
# a streaming standby, after its promotion, and as PostgreSQL's own tools
# check them (amcheck), with extension operator classes (pg_trgm,
# btree_gist).
#
# Row ids must never be handed out twice: a transaction in flight at the
# crash has inserted index entries (WAL-logged) for ids whose rows are
# lost; if a later row got one of those ids, the stale entry would find
# it.  The in-flight rows have cust = 777, so after the restart (and on the
# promoted standby) an index scan for 777 must find nothing while new rows
# are written, and the new rows' TIDs (their ids) lie above every TID the
# table had.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('ix');
$node->init(allows_streaming => 1);
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE EXTENSION amcheck;
CREATE EXTENSION pg_trgm;
CREATE EXTENSION btree_gist;
CREATE TABLE t (id int PRIMARY KEY, cust int, note text, ts timestamptz) USING pkmerge;
CREATE TABLE h (id int PRIMARY KEY, cust int, note text, ts timestamptz);
INSERT INTO t SELECT g, g % 50, 'note ' || g, '2026-01-01'::timestamptz + g * interval '1 minute'
FROM generate_series(1, 20000) g;
INSERT INTO h SELECT * FROM t;
});
$node->safe_psql('postgres', q{
CREATE INDEX t_cust ON t (cust);
CREATE INDEX t_note_trgm ON t USING gin (note gin_trgm_ops);
CREATE INDEX t_cust_ts ON t USING gist (cust, ts);
});

# each predicate's count by index scans, by bitmap scans and by a
# sequential scan of t, and of the heap twin h: all four must agree
my @preds = (q{cust = 7}, q{cust = 777}, q{note LIKE '%te 123%'},
	q{cust = 3 AND ts < '2026-01-05'});
sub counts
{
	my ($n, $table) = @_;
	my @out;
	for my $p (@preds)
	{
		push @out, $n->safe_psql('postgres', qq{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM $table WHERE $p;
SET enable_indexscan = off; SET enable_bitmapscan = on;
SELECT count(*) FROM $table WHERE $p;
SET enable_seqscan = on; SET enable_bitmapscan = off;
SELECT count(*) FROM $table WHERE $p;});
	}
	return join(' / ', map { join(',', split /\n/) } @out);
}
sub heap_counts
{
	my ($n) = @_;
	return join(' / ', map { my $c = $n->safe_psql('postgres', "SELECT count(*) FROM h WHERE $_"); "$c,$c,$c" } @preds);
}
sub amcheck
{
	my ($n, $parent) = @_;
	my $f = $parent ? 'bt_index_parent_check' : 'bt_index_check';
	return $n->safe_psql('postgres', qq{
WITH b AS MATERIALIZED (
	SELECT c.oid, c.relname
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
	WHERE i.indrelid = 't'::regclass AND a.amname = 'btree')
SELECT string_agg(relname, ',' ORDER BY relname) FROM b WHERE $f(oid, true) IS NOT NULL});
}

is(counts($node, 't'), heap_counts($node), 'built: every predicate agrees with heap');
is(amcheck($node, 0), 't_cust', 'amcheck bt_index_check(heapallindexed) passes');

# a standby, streaming from here on
$node->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('ix_standby');
$standby->init_from_backup($node, 'bkp', has_streaming => 1);
$standby->start;

# writes of every kind, committed, on both tables
for my $tab ('t', 'h')
{
	$node->safe_psql('postgres', qq{
UPDATE $tab SET cust = 7 WHERE id BETWEEN 1000 AND 1100;
UPDATE $tab SET note = 'rewritten ' || id WHERE id % 97 = 0;
DELETE FROM $tab WHERE id BETWEEN 2000 AND 2500;
INSERT INTO $tab SELECT g, g % 50, 'note ' || g, now() FROM generate_series(20001, 21000) g;});
}
$node->safe_psql('postgres', q{SELECT pk_compact('t', true)});
$node->safe_psql('postgres', q{VACUUM t});
is(counts($node, 't'), heap_counts($node), 'after writes, compaction and VACUUM: every predicate agrees');
is(amcheck($node, 1), 't_cust', 'amcheck bt_index_parent_check(heapallindexed) passes');

my $max_tid = $node->safe_psql('postgres', q{SELECT max(ctid) FROM t});

# a transaction writes rows with cust = 777 and waits, open
my ($in, $out, $err) = ('', '', '');
my @psql = ('psql', '-XAtq', '-d', $node->connstr('postgres'));
my $h = IPC::Run::start(\@psql, '<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(120));
$in .= q{BEGIN;
INSERT INTO t SELECT g, 777, 'lost ' || g, now() FROM generate_series(30001, 32000) g;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM t WHERE cust = 777;
\echo WRITTEN
};
$h->pump while $h->pumpable && $out !~ /^WRITTEN$/m;
like($out, qr/^2000$/m, 'the open transaction finds its 2000 rows by index');
# its index entries reach the WAL file (the WAL writer flushes within 200 ms)
sleep 1;
$node->stop('immediate');
$h->finish;
$node->start;

is(counts($node, 't'), heap_counts($node), 'after the crash: every predicate agrees, 777 finds nothing');
$node->safe_psql('postgres', q{
INSERT INTO t SELECT g, 5, 'after ' || g, now() FROM generate_series(40001, 44000) g;
INSERT INTO h SELECT g, 5, 'after ' || g, now() FROM generate_series(40001, 44000) g;
});
is(counts($node, 't'), heap_counts($node),
	'rows written after the crash take no id of the lost ones (777 still finds nothing)');
is($node->safe_psql('postgres', qq{SELECT min(ctid) > '$max_tid' FROM t WHERE id > 40000}), 't',
	"the new rows' ids lie above every id before the crash ($max_tid)");
is(amcheck($node, 1), 't_cust', 'amcheck passes after the crash');

# the standby replays all of it and answers the same
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
is(counts($standby, 't'), heap_counts($node), 'the standby answers as the primary');
is(amcheck($standby, 0), 't_cust', 'amcheck passes on the standby');

# promoted, it hands out ids above all it replayed
$node->stop;
$standby->promote;
$standby->safe_psql('postgres', q{
INSERT INTO t SELECT g, 6, 'promoted ' || g, now() FROM generate_series(50001, 52000) g;
INSERT INTO h SELECT g, 6, 'promoted ' || g, now() FROM generate_series(50001, 52000) g;
});
@preds = (@preds, q{cust = 6});
is(counts($standby, 't'), heap_counts($standby), 'the promoted standby writes new ids');
is(amcheck($standby, 1), 't_cust', 'amcheck passes on the promoted standby');

# REINDEX DATABASE ... CONCURRENTLY, PostgreSQL's own: every index of the
# pkmerge table built again (the key index's copy has no entries), and
# the answers stay
my $before = $standby->safe_psql('postgres', q{
SELECT string_agg(indexrelid::text, ',' ORDER BY indexrelid) FROM pg_index WHERE indrelid = 't'::regclass});
$standby->safe_psql('postgres', q{REINDEX DATABASE CONCURRENTLY postgres});
is($standby->safe_psql('postgres', q{
SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass AND indisvalid AND indexrelid NOT IN (}
		. $before . q{)}),
	scalar(split /,/, $before), 'REINDEX DATABASE CONCURRENTLY builds every index of the table again');
is(counts($standby, 't'), heap_counts($standby), 'and every predicate still agrees');
is(amcheck($standby, 1), 't_cust', 'amcheck passes after it');

# A table's first index built CONCURRENTLY beside a transaction that wrote
# rows without row ids before it started, and is then prepared: the build
# waits for the prepared transaction, whose rows took ids as it was
# prepared; once committed, the index finds them.  Then the same through
# an immediate shutdown while the build waits (the index stays invalid,
# the prepared transaction survives), and REINDEX ... CONCURRENTLY.
my $pn = $standby;
sub first_index_beside_prepared
{
	my ($table, $crash) = @_;
	$pn->safe_psql('postgres', qq{
CREATE TABLE $table (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO $table SELECT g, g % 10 FROM generate_series(1, 5000) g;});
	my ($ain, $aout, $aerr, $bin, $bout, $berr) = ('', '', '', '', '', '');
	my @c = ('psql', '-XAtq', '-d', $pn->connstr('postgres'));
	my $wr = IPC::Run::start(\@c, '<', \$ain, '>', \$aout, '2>', \$aerr, IPC::Run::timeout(120));
	$ain .= qq{BEGIN;
INSERT INTO $table SELECT g, 42 FROM generate_series(10001, 13000) g;
UPDATE $table SET v = 42 WHERE id = 7;
\\echo WRITTEN
};
	$wr->pump while $wr->pumpable && $aout !~ /^WRITTEN$/m;
	my $bld = IPC::Run::start(\@c, '<', \$bin, '>', \$bout, '2>', \$berr, IPC::Run::timeout(120));
	$bin .= qq{CREATE INDEX CONCURRENTLY ${table}_v ON $table (v);
\\echo BUILT
};
	my $waiting = 0;
	for (my $i = 0; $i < 600 && !$waiting; $i++)
	{
		$bld->pump_nb;
		$waiting = $pn->safe_psql('postgres', qq{
SELECT count(*) FROM pg_stat_activity
WHERE query LIKE 'CREATE INDEX CONCURRENTLY ${table}_v%' AND wait_event_type = 'Lock'});
		usleep(100_000) unless $waiting;
	}
	ok($waiting, 'the build waits for the writer');
	$ain .= qq{PREPARE TRANSACTION 'before_$table';
\\echo PREPARED
};
	$wr->pump while $wr->pumpable && $aout !~ /^PREPARED$/m;
	$wr->finish;
	if ($crash)
	{
		$pn->stop('immediate');
		$bld->finish;
		$pn->start;
		is($pn->safe_psql('postgres', qq{
SELECT indisvalid FROM pg_index WHERE indexrelid = '${table}_v'::regclass}), 'f',
			'after the crash the index is invalid');
		$pn->safe_psql('postgres', qq{COMMIT PREPARED 'before_$table'});
		$pn->safe_psql('postgres', qq{REINDEX INDEX CONCURRENTLY ${table}_v});
	}
	else
	{
		$pn->safe_psql('postgres', qq{COMMIT PREPARED 'before_$table'});
		$bld->pump while $bld->pumpable && $bout !~ /^BUILT$/m;
		$bld->finish;
		is($berr, '', 'the build finishes once the prepared transaction commits');
	}
	$pn->safe_psql('postgres', qq{INSERT INTO $table VALUES (20001, 42)});
	is($pn->safe_psql('postgres', qq{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT indisvalid FROM pg_index WHERE indexrelid = '${table}_v'::regclass;
SELECT count(*), sum(id) FROM $table WHERE v = 42;
SET enable_indexscan = off; SET enable_bitmapscan = on;
SELECT count(*), sum(id) FROM $table WHERE v = 42;
SELECT bt_index_parent_check('${table}_v', true) IS NOT NULL;}),
		"t\n3002|34521508\n3002|34521508\nt",
		'the index finds the prepared rows, rows written after, and amcheck passes'
		  . ($crash ? ' (after the crash)' : ''));
}
first_index_beside_prepared('f1', 0);
first_index_beside_prepared('f2', 1);

done_testing();
