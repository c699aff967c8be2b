# 034_run_page_wal.pl: run pages are WAL-logged as records of the
# extension's resource manager carrying their bytes, compressed again when
# wal_compression is on (run_wal.c), and redo rebuilds every page the
# extension logs byte for byte.
#
# 1. A bulk load: one RUN_PAGE record per page of its runs, no page image
#    of the table; with wal_compression on, fewer WAL bytes than the same
#    load's records with it off.
# 2. wal_consistency_checking = 'pkchangelog': each of the extension's
#    records then also carries its pages as they were when it was logged,
#    and recovery compares the page its redo rebuilt with that image (a
#    difference is FATAL: recovery stops).  Bulk loads, small commits (the
#    commit log's appends), compactions and TRUNCATEs of every producer,
#    then an immediate stop: the server recovers, and every table holds
#    what it held, with the same change stream.  An append after a page's
#    first record is a LOG_APPEND_NEXT record without main data, whose
#    type says what became of the record before it (committed, or
#    aborted: a prepared transaction rolled back).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('run_page_wal');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pkchangelog'
checkpoint_timeout = 1h
max_wal_size = 1GB
max_prepared_transactions = 2
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE EXTENSION pg_walinspect;
CREATE PROCEDURE small_commits(t regclass, n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		EXECUTE format('UPDATE %s SET v = v || ''+'' WHERE k = $1', t) USING i * 37 % 5000 + 1;
		COMMIT;
	END LOOP;
END $$;
});

# 1: a bulk load's pages, with wal_compression off (the default) and on
sub bulk_load
{
	my ($table, $compression) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (k int PRIMARY KEY, v text) USING pkmerge;});
	my $l0 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	$node->safe_psql('postgres', qq{
SET wal_compression = $compression;
INSERT INTO $table SELECT g, md5(g::text) || ' ' || g FROM generate_series(1, 50000) g;});
	my $l1 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	my $filenode = $node->safe_psql('postgres', qq{SELECT pg_relation_filenode('$table')});
	my ($records, $bytes, $images) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type = 'RUN_PAGE'),
	   coalesce(sum(record_length) FILTER (WHERE resource_manager = 'pkchangelog' AND record_type = 'RUN_PAGE'), 0),
	   count(*) FILTER (WHERE fpi_length > 0)
  FROM pg_get_wal_records_info('$l0', '$l1')
 WHERE block_ref LIKE '%/$filenode fork main blk %'});
	my $pages = $node->safe_psql('postgres', qq{
SELECT sum(nblocks) FROM pkchangelog.runs WHERE relid = '$table'::regclass AND kind <> 'log'});
	cmp_ok($pages, '>', 100, "the bulk load wrote run pages ($pages, wal_compression $compression)");
	is($records, $pages, "one RUN_PAGE record per run page (wal_compression $compression)");
	is($images, 0, "no page image of the table (wal_compression $compression)");
	note(sprintf('wal_compression %s: %.1f%% of the pages\' bytes', $compression,
		100 * $bytes / ($pages * 8192)));
	return ($bytes, $pages);
}
my ($plain, $pages) = bulk_load('bulk', 'off');
my ($compressed) = bulk_load('bulkz', 'on');
cmp_ok($plain, '>', 0.9 * $pages * 8192,
	"with wal_compression off the records carry the pages' bytes ($plain for $pages pages)");
cmp_ok($compressed, '<', 0.9 * $plain,
	"with it on they take fewer bytes ($compressed against $plain)");

# 2: redo checked page by page
$node->safe_psql('postgres', q{
ALTER SYSTEM SET wal_consistency_checking = 'pkchangelog';
SELECT pg_reload_conf();});
$node->safe_psql('postgres', 'CHECKPOINT');
my $c0 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my @producers = ('none', 'input', 'lookup', 'full-compaction');
for my $i (0 .. $#producers)
{
	my $t = "p$i";
	# redo of both forms of the record: payloads as they are, and compressed
	$node->safe_psql('postgres', 'ALTER SYSTEM SET wal_compression = '
		  . ($i % 2 ? 'on' : 'off') . '; SELECT pg_reload_conf();');
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (k int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = '$producers[$i]');
INSERT INTO $t SELECT g, md5(g::text) FROM generate_series(1, 5000) g;});
	$node->safe_psql('postgres', "CALL small_commits('$t', 300)");
	$node->safe_psql('postgres', qq{
BEGIN;
UPDATE $t SET v = 'rolled back' WHERE k = 2;
PREPARE TRANSACTION 'undone_$t';
ROLLBACK PREPARED 'undone_$t';});
	$node->safe_psql('postgres', "CALL small_commits('$t', 10)");
	$node->safe_psql('postgres', "SELECT pk_compact('$t', true)");
	$node->safe_psql('postgres', "CALL small_commits('$t', 100)");
	$node->safe_psql('postgres', qq{
BEGIN;
TRUNCATE $t;
INSERT INTO $t SELECT g, md5((g * 3)::text) FROM generate_series(1, 3000) g;
COMMIT;});
	$node->safe_psql('postgres', "CALL small_commits('$t', 50)");
}
my $c1 = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my ($run_images, $log_images) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE record_type = 'RUN_PAGE'),
	   count(*) FILTER (WHERE record_type LIKE 'LOG_APPEND%')
  FROM pg_get_wal_records_info('$c0', '$c1')
 WHERE resource_manager = 'pkchangelog' AND fpi_length > 0});
cmp_ok($run_images, '>', 0, "run page records carry images to check ($run_images)");
cmp_ok($log_images, '>', 0, "commit log appends carry images to check ($log_images)");
my ($next, $next_data, $next_committed, $next_aborted) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*), coalesce(max(main_data_length), -1),
	   count(*) FILTER (WHERE record_type = 'LOG_APPEND_NEXT+COMMITTED'),
	   count(*) FILTER (WHERE record_type = 'LOG_APPEND_NEXT+ABORTED')
  FROM pg_get_wal_records_info('$c0', '$c1')
 WHERE resource_manager = 'pkchangelog' AND record_type LIKE 'LOG_APPEND_NEXT%'});
cmp_ok($next, '>', 1000, "appends after a page's first are NEXT records ($next)");
is($next_data, 0, 'NEXT records have no main data');
cmp_ok($next_committed, '>', 1000, "most resolve a committed record ($next_committed)");
cmp_ok($next_aborted, '>', 0,
	"some resolve a rolled back prepared transaction's ($next_aborted; the worker may come first)");

my $digest_sql = join(' UNION ALL ', map { qq{
SELECT '$_', (SELECT md5(string_agg(k || ':' || v, ',' ORDER BY k)) FROM $_),
	   (SELECT md5(string_agg(snapshot_id || rowkind || "row"::text, ','
							  ORDER BY snapshot_id, "row"::text, rowkind))
		  FROM pk_changes('$_'))} }
	('bulk', 'bulkz', map { "p$_" } 0 .. $#producers));
my $before = $node->safe_psql('postgres', $digest_sql);
$node->stop('immediate');
$node->start;
ok(1, 'recovery rebuilt every page of the extension as logged');
is($node->safe_psql('postgres', $digest_sql), $before,
	'the tables and their change streams are as before the stop');
my $log = slurp_file($node->logfile);
unlike($log, qr/inconsistent page found/, 'no inconsistent page in the log');
like($log, qr/redo done at/, 'the server replayed WAL at startup');

done_testing();
