# 013_restart_persistence.pl: what a pkmerge table holds survives a clean
# restart and a dump/restore.  Rows, table options (pk_options, including
# ones changed by ALTER TABLE SET / RESET), pk_snapshots and pk_runs are
# identical after a restart, and the next commit continues the snapshot ids.
# A pg_dump of a database with pkmerge tables (one WITH
# changelog_producer = 'lookup', one with a composite key) restored with
# psql -f into a fresh database (and with pg_restore from the custom format)
# gives the same rows and options, a pkmerge table with its primary key, and
# upsert semantics.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('persist');
$node->init;
$node->start;

$node->safe_psql('postgres', q{CREATE DATABASE src});
$node->safe_psql('src', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE o (order_id bigint PRIMARY KEY, store_id int, amount numeric(12,2), note text)
	USING pkmerge WITH (changelog_producer = 'lookup', compression_level = 3);
CREATE TABLE m (a int, b text, c jsonb, PRIMARY KEY (a, b)) USING pkmerge;
});
# several commits: inserts, an upsert, an update, a delete
$node->safe_psql('src', q{
INSERT INTO o SELECT g, g % 10, g * 1.5, 'note ' || g FROM generate_series(1, 3000) g;
});
$node->safe_psql('src', q{
INSERT INTO o VALUES (1001, 10, 100, 'incident'), (5000, 1, 1, NULL);
});
$node->safe_psql('src', q{
UPDATE o SET amount = 80 WHERE order_id = 1001;
});
$node->safe_psql('src', q{
DELETE FROM o WHERE order_id % 100 = 0;
});
$node->safe_psql('src', q{
ALTER TABLE o SET (snapshot_num_retained_min = 20, changelog_row_deduplicate = true);
ALTER TABLE o SET (compression_level = 5);
ALTER TABLE o RESET (compression_level);
INSERT INTO m SELECT g % 50, 'b' || (g / 50), jsonb_build_object('g', g, 's', repeat('x', g % 7))
	FROM generate_series(1, 2000) g;
});

my $rows_o = q{SELECT count(*), md5(string_agg(format('%s|%s|%s|%s', order_id, store_id, amount, note), ',' ORDER BY order_id)) FROM o};
my $rows_m = q{SELECT count(*), md5(string_agg(format('%s|%s|%s', a, b, c), ',' ORDER BY a, b)) FROM m};
my $opts = sub { my $t = shift; qq{SELECT string_agg(key || '=' || coalesce(value, 'NULL'), ', ' ORDER BY key) FROM pk_options('$t')} };
my $snaps = q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', snapshot_id, commit_kind, commit_time, commit_user, commit_xid, total_record_count, delta_record_count, changelog_record_count), E'\n' ORDER BY snapshot_id) FROM pk_snapshots('o')};
my $runs = q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', run_id, level, kind, record_count, size_bytes, min_key, max_key, created_snapshot), E'\n' ORDER BY run_id) FROM pk_runs('o')};
my $lookups = q{SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT string_agg(coalesce((SELECT format('%s|%s', order_id, amount) FROM o WHERE order_id = k), 'absent'), ',' ORDER BY k)
FROM unnest(ARRAY[1, 100, 999, 1001, 2999, 3000, 5000, 7777]) k};

my %before = (
	rows_o  => $node->safe_psql('src', $rows_o),
	rows_m  => $node->safe_psql('src', $rows_m),
	opts_o  => $node->safe_psql('src', $opts->('o')),
	opts_m  => $node->safe_psql('src', $opts->('m')),
	snaps   => $node->safe_psql('src', $snaps),
	runs    => $node->safe_psql('src', $runs),
	lookups => $node->safe_psql('src', $lookups));

# sanity of what was written, so the comparisons below compare something
is((split /\|/, $before{rows_o})[0], 2970, 'o has the expected rows');
is((split /\|/, $before{rows_m})[0], 2000, 'm has the expected rows');
is($before{lookups}, '1|1.50,absent,999|1498.50,1001|80.00,2999|4498.50,absent,absent,absent',
	'o key lookups before restart');
like($before{opts_o}, qr/(^|, )changelog_producer=lookup(,|$)/, 'o has changelog_producer = lookup');
like($before{opts_o}, qr/(^|, )changelog_row_deduplicate=true(,|$)/, 'ALTER TABLE SET took effect');
like($before{opts_o}, qr/(^|, )snapshot_num_retained_min=20(,|$)/, 'ALTER TABLE SET (2) took effect');
like($before{opts_o}, qr/(^|, )compression_level=-1(,|$)/, 'RESET restored the default compression_level');
like($before{opts_m}, qr/(^|, )primary_key=a, ?b(,|$)/, 'composite key recorded in m\'s options');
is($node->safe_psql('src', q{SELECT string_agg(snapshot_id || ':' || commit_kind, ',' ORDER BY snapshot_id) FROM pk_snapshots('o')}),
	'1:APPEND,2:APPEND,3:APPEND,4:APPEND', 'four commits wrote rows of o: four snapshots');

# --- clean restart
$node->restart;
is($node->safe_psql('src', $rows_o), $before{rows_o}, 'restart: o rows identical');
is($node->safe_psql('src', $rows_m), $before{rows_m}, 'restart: m rows identical');
is($node->safe_psql('src', $lookups), $before{lookups}, 'restart: o key lookups identical');
is($node->safe_psql('src', $opts->('o')), $before{opts_o}, 'restart: o options identical');
is($node->safe_psql('src', $opts->('m')), $before{opts_m}, 'restart: m options identical');
is($node->safe_psql('src', $snaps), $before{snaps}, 'restart: pk_snapshots identical');
is($node->safe_psql('src', $runs), $before{runs}, 'restart: pk_runs identical');

# the next commit continues the snapshot ids and upserts still replace
$node->safe_psql('src', q{INSERT INTO o VALUES (1001, 10, 70, 'after restart')});
is($node->safe_psql('src', q{SELECT max(snapshot_id), count(*) FROM pk_snapshots('o')}), '5|5',
	'restart: next commit is snapshot 5');
is($node->safe_psql('src', q{SELECT amount, note FROM o WHERE order_id = 1001}), '70.00|after restart',
	'restart: INSERT of an existing key replaces the row');
is($node->safe_psql('src', q{SELECT count(*) FROM o}), 2970,
	'restart: the upsert did not add a row');
$before{rows_o} = $node->safe_psql('src', $rows_o);

# a second restart, this time after an immediate stop with nothing pending
# beyond a checkpointed state
$node->safe_psql('src', 'CHECKPOINT');
$node->stop('immediate');
$node->start;
is($node->safe_psql('src', $rows_o), $before{rows_o}, 'immediate stop after checkpoint: o rows identical');

# --- pg_dump / restore
my $plain = $node->basedir . '/src.sql';
my $custom = $node->basedir . '/src.dump';
$node->command_ok(['pg_dump', '-d', $node->connstr('src'), '-f', $plain], 'pg_dump (plain) of src');
$node->command_ok(['pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $custom], 'pg_dump (custom) of src');
my $dump = slurp_file($plain);
like($dump, qr/CREATE EXTENSION IF NOT EXISTS pkchangelog/, 'the dump creates the extension');
like($dump, qr/changelog_producer='?lookup'?/, 'the dump carries o\'s options');

for my $case (['dst', 'psql -f'], ['dst2', 'pg_restore'])
{
	my ($db, $how) = @$case;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	if ($how eq 'psql -f')
	{
		$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
				'-d', $node->connstr($db), '-f', $plain],
			"$db: restore with psql -f succeeds (stopping at any error)");
	}
	else
	{
		$node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr($db), $custom],
			"$db: pg_restore succeeds");
	}

	is($node->safe_psql($db, $rows_o), $before{rows_o}, "$db: o rows identical");
	is($node->safe_psql($db, $rows_m), $before{rows_m}, "$db: m rows identical");
	is($node->safe_psql($db, $opts->('o')), $before{opts_o}, "$db: o options identical");
	is($node->safe_psql($db, $opts->('m')), $before{opts_m}, "$db: m options identical");
	is($node->safe_psql($db, q{
SELECT string_agg(c.relname || ':' || a.amname, ',' ORDER BY c.relname)
FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname IN ('o', 'm')}),
		'm:pkmerge,o:pkmerge', "$db: both tables are pkmerge tables");
	is($node->safe_psql($db, q{
SELECT string_agg(con.conname || ':' || am.amname || ':' || pg_get_constraintdef(con.oid), ',' ORDER BY con.conname)
FROM pg_constraint con JOIN pg_class i ON i.oid = con.conindid JOIN pg_am am ON am.oid = i.relam
WHERE con.conrelid IN ('o'::regclass, 'm'::regclass) AND con.contype = 'p'}),
		'm_pkey:pkmerge_key:PRIMARY KEY (a, b),o_pkey:pkmerge_key:PRIMARY KEY (order_id)',
		"$db: primary keys restored on the key index");
	my $ids = $node->safe_psql($db, q{
SELECT count(*), count(DISTINCT snapshot_id), coalesce(min(snapshot_id), 0) FROM pk_snapshots('o')});
	my ($n, $nd, $min) = split /\|/, $ids;
	ok($n >= 1 && $nd == $n && $min == 1, "$db: o's snapshots start at 1 in the new database")
	  or diag($ids);
	is($node->safe_psql($db, q{
SELECT count(*) FROM pkchangelog.snapshots s
WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = s.relid)}),
		'0', "$db: no catalog rows of tables that do not exist here");
	is($node->safe_psql($db, $lookups), $node->safe_psql('src', $lookups),
		"$db: key lookups identical");

	# the restored table behaves as a pkmerge table: upsert, update, delete
	$node->safe_psql($db, q{
INSERT INTO o VALUES (1, 1, 111, 'upserted');
UPDATE o SET amount = amount + 1 WHERE order_id = 2;
DELETE FROM o WHERE order_id = 3;
INSERT INTO m VALUES (1, 'b0', '{"new": true}');
});
	is($node->safe_psql($db, q{
SELECT format('%s %s %s %s', (SELECT count(*) FROM o), (SELECT amount FROM o WHERE order_id = 1),
	(SELECT amount FROM o WHERE order_id = 2), (SELECT count(*) FROM o WHERE order_id = 3))}),
		(2969) . ' 111.00 4.00 0', "$db: upsert, update and delete work after restore");
	is($node->safe_psql($db, q{SELECT count(*), (SELECT c FROM m WHERE a = 1 AND b = 'b0') FROM m}),
		'2000|{"new": true}', "$db: composite-key upsert works after restore");
}

# the source is untouched by all this
is($node->safe_psql('src', $rows_o), $before{rows_o}, 'src: o rows unchanged');

unlike(slurp_file($node->logfile), qr/PANIC|TRAP:|terminated by signal/,
	'no PANIC, assertion failure or crash in the log');
$node->stop;
done_testing();
