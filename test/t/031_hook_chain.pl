# 031_hook_chain.pl: pkchangelog's hooks chain to the ones loaded before
# them.  With pg_stat_statements beside it, in both preload orders
# PostgreSQL allows, utility statements on pkmerge tables (CREATE TABLE,
# ALTER TABLE SET and RESET of pkmerge options, a statement left with no
# subcommand of PostgreSQL's own, TRUNCATE, VACUUM) and DML are counted,
# and pkchangelog's own handling of them still happens (options stored,
# the key index built, rows written).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new("hooks031_$$");
$node->init;
$node->start;

for my $order ('pg_stat_statements, pkchangelog', 'pkchangelog, pg_stat_statements')
{
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = '$order'
pg_stat_statements.track_utility = on
});
	$node->restart;
	is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), $order,
		"preloaded: $order");
	$node->safe_psql('postgres', q{
DROP EXTENSION IF EXISTS pkchangelog CASCADE;
DROP EXTENSION IF EXISTS pg_stat_statements;
CREATE EXTENSION pkchangelog;
CREATE EXTENSION pg_stat_statements;
SELECT pg_stat_statements_reset();
});
	$node->safe_psql('postgres', $_) for (
		q{CREATE TABLE hc (id int PRIMARY KEY, v int) USING pkmerge},
		q{ALTER TABLE hc SET (changelog_producer = 'lookup')},
		q{ALTER TABLE hc SET (compression_level = 3), ADD COLUMN note text},
		q{INSERT INTO hc VALUES (1, 1)},
		q{UPDATE hc SET v = 2 WHERE id = 1},
		q{ALTER TABLE hc RESET (compression_level)},
		q{VACUUM hc});
	my $before_truncate = $node->safe_psql('postgres', q{
SELECT string_agg(commit_kind, ',' ORDER BY snapshot_id) FROM pk_snapshots('hc')});
	$node->safe_psql('postgres', q{TRUNCATE hc});
	my %counted = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
SELECT query || '|' || calls FROM pg_stat_statements WHERE query ~* 'hc\M'});
	for my $q (
		'CREATE TABLE hc (id int PRIMARY KEY, v int) USING pkmerge',
		q{ALTER TABLE hc SET (changelog_producer = 'lookup')},
		'ALTER TABLE hc SET (compression_level = 3), ADD COLUMN note text',
		'ALTER TABLE hc RESET (compression_level)',
		'VACUUM hc',
		'TRUNCATE hc')
	{
		is($counted{$q}, 1, "$order: pg_stat_statements counted: $q");
	}
	ok((grep { /^INSERT INTO hc/ } keys %counted) && (grep { /^UPDATE hc/ } keys %counted),
		"$order: pg_stat_statements counted the INSERT and the UPDATE")
	  or diag(join("\n", sort keys %counted));
	is($node->safe_psql('postgres', q{
SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM pk_options('hc')
 WHERE key IN ('changelog_producer', 'compression_level')}),
		'changelog_producer=lookup,compression_level=-1',
		"$order: pkchangelog applied the options (SET, then RESET)");
	is($node->safe_psql('postgres', q{
SELECT amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'hc'::regclass}),
		'pkmerge_key', "$order: the key index is pkmerge's");
	is($before_truncate, 'APPEND,APPEND', "$order: the INSERT and the UPDATE made snapshots");
	is($node->safe_psql('postgres', q{
SELECT commit_kind FROM pk_snapshots('hc') ORDER BY snapshot_id DESC LIMIT 1}),
		'OVERWRITE', "$order: the TRUNCATE made one");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM information_schema.columns
 WHERE table_name = 'hc' AND column_name = 'note'}), '1',
		"$order: the subcommand left for PostgreSQL ran");
	$node->safe_psql('postgres', 'DROP TABLE hc');
}

$node->stop;
done_testing();
