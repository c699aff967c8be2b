# 023_dump_keys.pl: pg_dump writes a pkmerge table as CREATE TABLE ...
# WITH (primary_key = ...) and adds its primary key constraint later with
# ALTER TABLE ... ADD CONSTRAINT.  A restore must give back every table
# with its key index (name, columns, deferrability), NOT NULL key columns
# and its rows, whichever way the key was first given: by PRIMARY KEY, by
# the primary_key option alone, under a constraint name of its own and
# DEFERRABLE, or copied by LIKE ... INCLUDING ALL (into a pkmerge table,
# and out of one into heap).  Restored with psql -f and with pg_restore;
# a dump of the restored database is the same as the original dump.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dumpkeys');
$node->init;
$node->start;

$node->safe_psql('postgres', q{CREATE DATABASE src});
$node->safe_psql('src', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE by_pk (id bigint PRIMARY KEY, note text) USING pkmerge;
CREATE TABLE by_opt (k int, v text) USING pkmerge WITH (primary_key = 'k', changelog_producer = 'input');
CREATE TABLE named (x int, y int, z text, CONSTRAINT named_key PRIMARY KEY (x, y) DEFERRABLE INITIALLY DEFERRED)
	USING pkmerge;
CREATE TABLE renamed (k int, v text) USING pkmerge WITH (primary_key = 'k');
ALTER TABLE renamed RENAME CONSTRAINT renamed_pkey TO renamed_key;
CREATE TABLE heap_src (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0));
CREATE TABLE like_heap (LIKE heap_src INCLUDING ALL) USING pkmerge;
CREATE TABLE heap_copy (LIKE by_opt INCLUDING ALL);
INSERT INTO by_pk SELECT g, 'n' || g FROM generate_series(1, 500) g;
INSERT INTO by_opt SELECT g, 'v' || g FROM generate_series(1, 300) g;
INSERT INTO named SELECT g % 7, g, 'z' || g FROM generate_series(1, 200) g;
INSERT INTO renamed SELECT g, 'r' || g FROM generate_series(1, 50) g;
INSERT INTO heap_src SELECT g, g * 10 FROM generate_series(1, 20) g;
INSERT INTO like_heap SELECT * FROM heap_src;
INSERT INTO heap_copy SELECT * FROM by_opt WHERE k <= 10;
});
# secondary indexes, a unique and an exclusion constraint, which a restore
# builds after the rows (in the same transaction with --single-transaction)
$node->safe_psql('src', q{
CREATE INDEX by_pk_note ON by_pk (note);
CREATE INDEX like_heap_amount ON like_heap USING hash (amount);
ALTER TABLE renamed ADD CONSTRAINT renamed_v_key UNIQUE (v);
ALTER TABLE by_opt ADD CONSTRAINT by_opt_v_excl EXCLUDE USING btree (v WITH =);
});
# foreign keys referencing pkmerge tables, from a heap and a pkmerge table,
# which a restore adds after the rows (checking them)
$node->safe_psql('src', q{
CREATE TABLE ref_heap (id int PRIMARY KEY, by_pk_id int REFERENCES by_pk);
CREATE TABLE ref_pk (id int PRIMARY KEY, k int, FOREIGN KEY (k) REFERENCES renamed ON DELETE CASCADE) USING pkmerge;
INSERT INTO ref_heap SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO ref_pk SELECT g, g % 50 + 1 FROM generate_series(1, 100) g;
});
my $fkeys = q{
SELECT string_agg(format('%s:%s', conrelid::regclass, pg_get_constraintdef(oid)), E'\n' ORDER BY conname)
FROM pg_constraint WHERE contype = 'f'};
my $fk_rows = q{SELECT (SELECT count(*) FROM ref_heap) + (SELECT count(*) FROM ref_pk)};

my @tables = qw(by_pk by_opt named renamed like_heap heap_copy);
my $in = join(', ', map { "'$_'" } @tables);
my $keys = qq{
SELECT string_agg(format('%s:%s:%s:%s', c.relname, con.conname, am.amname, pg_get_constraintdef(con.oid)), E'\\n' ORDER BY c.relname)
FROM pg_class c JOIN pg_constraint con ON con.conrelid = c.oid AND con.contype = 'p'
JOIN pg_class i ON i.oid = con.conindid JOIN pg_am am ON am.oid = i.relam
WHERE c.relname IN ($in)};
my $notnull = qq{
SELECT string_agg(format('%s.%s', c.relname, a.attname), ',' ORDER BY c.relname, a.attnum)
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.relname IN ($in) AND a.attnum > 0 AND a.attnotnull};
my $ams = qq{
SELECT string_agg(c.relname || ':' || am.amname, ',' ORDER BY c.relname)
FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.relname IN ($in)};
my $rows = join(' UNION ALL ', map { "SELECT '$_', count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) FROM $_ t" } @tables);

my %before = (
	keys    => $node->safe_psql('src', $keys),
	notnull => $node->safe_psql('src', $notnull),
	ams     => $node->safe_psql('src', $ams),
	rows    => $node->safe_psql('src', $rows));

# what the source holds, so the comparisons below compare something
is($before{keys}, join("\n",
		'by_opt:by_opt_pkey:pkmerge_key:PRIMARY KEY (k)',
		'by_pk:by_pk_pkey:pkmerge_key:PRIMARY KEY (id)',
		'heap_copy:heap_copy_pkey:btree:PRIMARY KEY (k)',
		'like_heap:like_heap_pkey:pkmerge_key:PRIMARY KEY (id)',
		'named:named_key:pkmerge_key:PRIMARY KEY (x, y) DEFERRABLE INITIALLY DEFERRED',
		'renamed:renamed_key:pkmerge_key:PRIMARY KEY (k)'),
	'every table of the source has its primary key');
is($before{notnull}, 'by_opt.k,by_pk.id,heap_copy.k,like_heap.id,named.x,named.y,renamed.k',
	'key columns are NOT NULL');
is($before{ams}, 'by_opt:pkmerge,by_pk:pkmerge,heap_copy:heap,like_heap:pkmerge,named:pkmerge,renamed:pkmerge',
	'access methods of the source');

my $plain = $node->basedir . '/src.sql';
my $custom = $node->basedir . '/src.dump';
$node->command_ok(['pg_dump', '-d', $node->connstr('src'), '-f', $plain], 'pg_dump (plain)');
$node->command_ok(['pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $custom], 'pg_dump (custom)');
my $dump = slurp_file($plain);
like($dump, qr/WITH \(primary_key=k, changelog_producer=input\)/, 'the dump gives by_opt its key as an option');
like($dump, qr/ADD CONSTRAINT named_key PRIMARY KEY \(x, y\) DEFERRABLE INITIALLY DEFERRED/,
	'the dump adds the key constraint separately');

# dumps differ in their \restrict key only
my $shape = sub { my $d = shift; $d =~ s/^\\(un)?restrict .*$//mg; $d };

# restored into fresh databases with psql -f (stopping at any error) and
# with pg_restore
my %restore = (
	dst  => ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $plain, '-d'],
	dst2 => ['pg_restore', '--exit-on-error', $custom, '-d'],
	dst3 => ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction', '-f', $plain, '-d'],
	dst4 => ['pg_restore', '--exit-on-error', '-j', '2', $custom, '-d']);
for my $db (sort keys %restore)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ @{ $restore{$db} }, $node->connstr($db) ], "$db: $restore{$db}[0] restores the dump");
	is($node->safe_psql($db, $keys), $before{keys}, "$db: primary keys identical");
	is($node->safe_psql($db, $notnull), $before{notnull}, "$db: NOT NULL columns identical");
	is($node->safe_psql($db, $ams), $before{ams}, "$db: access methods identical");
	is($node->safe_psql($db, $rows), $before{rows}, "$db: rows identical");
	is($node->safe_psql($db, q{
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
WHERE c.relname IN ('by_opt', 'named', 'renamed', 'like_heap', 'by_pk')}),
		'9', "$db: one key index per pkmerge table, and the four secondary ones");
	my ($ret, $out, $err) = $node->psql($db, q{INSERT INTO renamed VALUES (1000, 'r5')});
	like($err, qr/duplicate key value violates unique constraint "renamed_v_key"/,
		"$db: the unique constraint is restored and enforced");
	($ret, $out, $err) = $node->psql($db, q{INSERT INTO by_opt VALUES (1000, 'v5')});
	like($err, qr/conflicting key value violates exclusion constraint "by_opt_v_excl"/,
		"$db: the exclusion constraint is restored and enforced");
	is($node->safe_psql($db, $fkeys), $node->safe_psql('src', $fkeys), "$db: foreign keys identical");
	is($node->safe_psql($db, $fk_rows), '200', "$db: the referencing rows are restored");
	($ret, $out, $err) = $node->psql($db, q{INSERT INTO ref_heap VALUES (1000, 1000)});
	like($err, qr/violates foreign key constraint "ref_heap_by_pk_id_fkey"/,
		"$db: a reference to a missing row is refused");
	($ret, $out, $err) = $node->psql($db, q{DELETE FROM by_pk WHERE id = 5});
	like($err, qr/is still referenced from table "ref_heap"/, "$db: a referenced row stays");
	is($node->safe_psql($db, q{DELETE FROM renamed WHERE k = 2; SELECT count(*) FROM ref_pk WHERE k = 2}),
		'0', "$db: a delete cascades to the pkmerge referencing table");
	$node->safe_psql($db, q{INSERT INTO renamed VALUES (2, 'r2')});
	is($node->safe_psql($db, q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT format('%s %s', (SELECT string_agg(id::text, ',') FROM by_pk WHERE note = 'n42'),
	(SELECT string_agg(id::text, ',') FROM like_heap WHERE amount = 100))}),
		'42 10', "$db: the secondary indexes find the rows");

	# the key index serves lookups and ON CONFLICT
	like($node->safe_psql($db, q{SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM by_opt WHERE k = 7}),
		qr/Index Scan using by_opt_pkey on by_opt/, "$db: by_opt's key lookup uses its key index");
	$node->safe_psql($db, q{
INSERT INTO by_opt VALUES (7, 'seven') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
INSERT INTO renamed VALUES (1, 'one') ON CONFLICT (k) DO NOTHING;
INSERT INTO named VALUES (1, 1, 'again');
});
	is($node->safe_psql($db, q{
SELECT format('%s %s %s %s', (SELECT v FROM by_opt WHERE k = 7), (SELECT count(*) FROM by_opt),
	(SELECT v FROM renamed WHERE k = 1), (SELECT z FROM named WHERE x = 1 AND y = 1))}),
		'seven 300 r1 again', "$db: upserts through the restored keys");

	# a dump of the restored database has the shape of the original one
	my $again = $node->basedir . "/$db.sql";
	$node->command_ok(['pg_dump', '-s', '-d', $node->connstr($db), '-f', $again], "$db: pg_dump -s");
	my $orig = $node->basedir . '/src-schema.sql';
	$node->command_ok(['pg_dump', '-s', '-d', $node->connstr('src'), '-f', $orig], 'src: pg_dump -s');
	is($shape->(slurp_file($again)), $shape->(slurp_file($orig)), "$db: its schema dump equals the source's");
}

unlike(slurp_file($node->logfile), qr/PANIC|TRAP:|terminated by signal/,
	'no PANIC, assertion failure or crash in the log');
$node->stop;
done_testing();
