# 025_upgrade.pl: a catalog made by the base script survives ALTER
# EXTENSION pkchangelog UPDATE to the control file's default_version.
#
# The base script (sql/pkchangelog--0.1.sql) is frozen as released in
# test/upgrade/; a catalog change after it ships as an update script
# (pkchangelog--OLD--NEW.sql) with a new default_version, never as an edit
# of a released script.  So this test fails when the base script differs
# from its frozen copy.  Then, on one server: the base version is created
# (CREATE EXTENSION ... VERSION), a table of every producer is written
# (inserts, updates, deletes, a TRUNCATE, compactions), ALTER EXTENSION
# UPDATE runs, and every table's rows, options, snapshots, runs and change
# stream are what they were; the next commits continue the snapshot ids
# and the streams check (test/setup/changelog_checker.sql); and the updated
# extension has exactly the objects, columns, definitions and comments of
# one created at default_version in a fresh database.  While the base is
# the default version the update changes nothing, and the test checks just
# that.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $extdir = "$sharedir/extension";
my ($default) = slurp_file("$extdir/pkchangelog.control") =~ /^default_version\s*=\s*'([^']+)'/m;
ok(defined $default, "the installed control file names default_version ($default)");

# --- the base script is as released --------------------------------------
my @frozen = glob("$FindBin::Bin/../upgrade/pkchangelog--*.sql");
is(scalar(@frozen), 1, 'test/upgrade holds one frozen base script');
my ($base) = $frozen[0] =~ /pkchangelog--([0-9.]+)\.sql$/;
my $frozen_text = slurp_file($frozen[0]);
for my $copy ([ 'sql', "$FindBin::Bin/../../sql/pkchangelog--$base.sql" ],
	[ 'the installed', "$extdir/pkchangelog--$base.sql" ])
{
	my ($what, $path) = @$copy;
	ok(-f $path && slurp_file($path) eq $frozen_text,
		"$what pkchangelog--$base.sql is the frozen base script")
	  or diag(<<"EOT");
$path differs from test/upgrade/pkchangelog--$base.sql.  A released
script never changes: a catalog change ships as
sql/pkchangelog--$default--NEW.sql with default_version = 'NEW' in
pkchangelog.control (README, "Upgrading").  Before $base is released,
freeze the script again with "make freeze-baseline" (and "make install").
EOT
}

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE upgraded');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');

$node->safe_psql('upgraded', "CREATE EXTENSION pkchangelog VERSION '$base'");
is($node->safe_psql('upgraded', q{SELECT extversion FROM pg_extension WHERE extname = 'pkchangelog'}),
	$base, "the base version $base is installed");
is($node->safe_psql('upgraded', "SELECT pkchangelog.library_accepts('$base'), pkchangelog.library_accepts('0.0')"),
	't|f', 'the library accepts the base catalog, and not a version it cannot update from');

# --- tables of every producer, several commits of each --------------------
my @producers = ('none', 'input', 'lookup', 'full-compaction');
my %table = map { my $t = $_; $t =~ s/-/_/; ($_ => "t_$t") } @producers;
for my $p (@producers)
{
	my $t = $table{$p};
	$node->safe_psql('upgraded', qq{
CREATE TABLE $t (id int PRIMARY KEY, grp int, amount numeric(12,2), note text)
	USING pkmerge WITH (changelog_producer = '$p', num_sorted_run_compaction_trigger = 3);
INSERT INTO $t SELECT g, g % 7, g * 1.5, 'n' || g FROM generate_series(1, 400) g;
});
	$node->safe_psql('upgraded', qq{UPDATE $t SET amount = amount + 1 WHERE id % 3 = 0});
	$node->safe_psql('upgraded', qq{DELETE FROM $t WHERE id % 11 = 0});
	$node->safe_psql('upgraded', qq{
INSERT INTO $t VALUES (1001, 1, 100, 'incident') ON CONFLICT (id) DO UPDATE SET amount = excluded.amount});
	$node->safe_psql('upgraded', qq{UPDATE $t SET amount = 80 WHERE id = 1001});
	$node->safe_psql('upgraded', qq{SELECT pk_compact('$t')});
}
$node->safe_psql('upgraded', qq{TRUNCATE $table{input}});
$node->safe_psql('upgraded', qq{INSERT INTO $table{input} SELECT g, 0, g, NULL FROM generate_series(1, 50) g});
$node->safe_psql('upgraded', qq{SELECT pk_compact('$table{'full-compaction'}', true)});

# a 1-row commit of t_none left uncompacted: the base catalog has no room
# for runs in their rows, so its run is on pages
$node->safe_psql('upgraded', qq{UPDATE $table{none} SET amount = 81 WHERE id = 1001});

# everything a table holds that the update must keep, as text
sub table_state
{
	my ($db, $t) = @_;
	my %q = (
		rows => qq{SELECT count(*), md5(string_agg(format('%s|%s|%s|%s', id, grp, amount, note), ',' ORDER BY id)) FROM $t},
		options => qq{SELECT string_agg(key || '=' || coalesce(value, 'NULL'), ', ' ORDER BY key) FROM pk_options('$t')},
		snapshots => qq{SELECT string_agg(s::text, E'\\n' ORDER BY snapshot_id) FROM pk_snapshots('$t') s},
		runs => qq{SELECT string_agg(r::text, E'\\n' ORDER BY run_id) FROM pk_runs('$t') r},
		changes => qq{SELECT count(*), md5(string_agg(c::text, E'\\n' ORDER BY n))
					  FROM pk_changes('$t') WITH ORDINALITY c(snapshot_id, rowkind, "row", producer, n)});
	return { map { $_ => $node->safe_psql($db, $q{$_}) } keys %q };
}

my %before = map { $_ => table_state('upgraded', $table{$_}) } @producers;
for my $p (@producers)
{
	# (the TRUNCATE leaves input its OVERWRITE snapshot and the next)
	ok($before{$p}{snapshots} =~ tr/\n// >= ($p eq 'input' ? 1 : 5)
		  && ($p eq 'none' || $before{$p}{changes} !~ /^0\|/),
		"$p: the table has snapshots and a stream before the update");
}

# a first secondary index needs the catalog's pkchangelog.row_ids: refused
# before the update, with the hint to update, and nothing changes
my ($irc, $iout, $ierr) = $node->psql('upgraded', "CREATE INDEX ON $table{lookup} (grp)");
like($ierr, qr/ERROR:  indexes on pkmerge table "\S+" need the catalog of pkchangelog 0\.13.*HINT:  Run ALTER EXTENSION pkchangelog UPDATE/s,
	'before the update: a secondary index is refused, the hint says to update');

# key indexes as libraries before 0.14 made them: with the extension's
# copies of btree's operator classes (this library gives btree's own when
# it builds one), which PostgreSQL does not take as a foreign key's
# referenced key: refused before the update, with the hint to update
$node->safe_psql('upgraded', q{
CREATE TEMP TABLE old_classes AS
SELECT i.indexrelid, array_to_string(array_agg(cp.oid ORDER BY k.n), ' ')::oidvector AS indclass
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
	unnest(i.indclass::oid[]) WITH ORDINALITY k(opc, n)
	JOIN pg_opclass bt ON bt.oid = k.opc
	JOIN pg_opclass cp ON cp.opcname = bt.opcname AND cp.opcintype = bt.opcintype
		AND cp.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'pkmerge_key')
WHERE c.relam = (SELECT oid FROM pg_am WHERE amname = 'pkmerge_key')
GROUP BY i.indexrelid;
UPDATE pg_index i SET indclass = o.indclass FROM old_classes o WHERE o.indexrelid = i.indexrelid;
INSERT INTO pg_depend
SELECT DISTINCT 'pg_class'::regclass, o.indexrelid, 0, 'pg_opclass'::regclass, k.opc, 0, 'n'
FROM old_classes o, unnest(o.indclass::oid[]) k(opc);
});
my $copies = q{SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
	unnest(i.indclass::oid[]) k(opc) JOIN pg_opclass o ON o.oid = k.opc
	WHERE c.relam = (SELECT oid FROM pg_am WHERE amname = 'pkmerge_key')
	  AND o.opcmethod <> (SELECT oid FROM pg_am WHERE amname = 'btree')};
is($node->safe_psql('upgraded', $copies), scalar(@producers), 'before the update: the key indexes have the copies');
my ($frc, $fout, $ferr) = $node->psql('upgraded',
	"CREATE TABLE fk_before (id int PRIMARY KEY, ref int REFERENCES $table{none})");
like($ferr, qr/ERROR:  foreign keys referencing pkmerge table "\S+" need the catalog of pkchangelog 0\.14.*HINT:  Run ALTER EXTENSION pkchangelog UPDATE/s,
	'before the update: a foreign key referencing a pkmerge table is refused, the hint says to update');

# --- the update ----------------------------------------------------------
my ($rc, $out, $err) = $node->psql('upgraded', 'ALTER EXTENSION pkchangelog UPDATE');
is($rc, 0, "ALTER EXTENSION pkchangelog UPDATE from $base to $default") or diag($err);
is($node->safe_psql('upgraded', q{SELECT extversion FROM pg_extension WHERE extname = 'pkchangelog'}),
	$default, "the extension is at default_version $default");

for my $p (@producers)
{
	is_deeply(table_state('upgraded', $table{$p}), $before{$p},
		"$p: rows, options, snapshots, runs and stream survive the update");
}

# the key indexes have btree's operator classes, and depend on no copy
is($node->safe_psql('upgraded', $copies), '0', 'after the update: the key indexes have btree\'s operator classes');
is($node->safe_psql('upgraded', q{SELECT count(*) FROM pg_depend
	WHERE classid = 'pg_class'::regclass AND refclassid = 'pg_opclass'::regclass
	  AND refobjid IN (SELECT oid FROM pg_opclass
					   WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'pkmerge_key'))}),
	'0', 'after the update: no index depends on the copies');

# --- writing goes on: snapshot ids continue, the streams check ------------
$node->safe_psql('upgraded', slurp_file("$FindBin::Bin/../setup/changelog_checker.sql"));
for my $p (@producers)
{
	my $t = $table{$p};
	my $last = $node->safe_psql('upgraded', qq{SELECT max(snapshot_id) FROM pk_snapshots('$t')});
	$node->safe_psql('upgraded', qq{UPDATE $t SET amount = amount * 2 WHERE id % 5 = 0});
	$node->safe_psql('upgraded', qq{INSERT INTO $t VALUES (2001, 2, 1, 'after')});
	$node->safe_psql('upgraded', qq{SELECT pk_compact('$t', true)}) if $p eq 'full-compaction';
	is($node->safe_psql('upgraded', qq{SELECT min(snapshot_id) = $last + 1 AND max(snapshot_id) - min(snapshot_id) + 1 = count(*)
		FROM pk_snapshots('$t') WHERE snapshot_id > $last}),
		't', "$p: the next commits continue the snapshot ids");
	is($node->safe_psql('upgraded', qq{SELECT check_changelog('$t')}), 'ok',
		"$p: the stream is a valid retract stream of the table") if $p ne 'none';
	is($node->safe_psql('upgraded', qq{SELECT check_data_runs('$t')}), 'ok',
		"$p: the catalog names exactly the table's data runs");
}

# --- the commits since the update keep their small changelog runs in their
# commit log records; those from before are rows of pkchangelog.runs; the
# streams (checked above) read both
for my $p ('input', 'lookup')
{
	is($node->safe_psql('upgraded', qq{
SELECT (SELECT count(*) > 0 FROM pkchangelog.runs WHERE relid = '$table{$p}'::regclass AND kind = 'changelog')
   AND (SELECT count(changelog_run_id) > 0 FROM pkchangelog.log_snapshots('$table{$p}'))}),
		't', "$p: changelog runs in rows of their own (before) and in commit log records (since)");
}

# --- every form of a run in a catalog row is read: a full compaction
# moves the 1-row commit's run written on pages before the update into its
# row as it was written (run format 2, index_offset > 0), beside the
# retained commits' runs written compact since, in their commit log
# records (the larger ones compressed, the 1-row one tight: their sizes
# tell); the stream of producer none reads them all
$node->safe_psql('upgraded', qq{INSERT INTO $table{none} VALUES (3001, 3, 3, 'compact')});
$node->safe_psql('upgraded', qq{SELECT pk_compact('$table{none}', true)});
is($node->safe_psql('upgraded', qq{
SELECT string_agg(DISTINCT CASE WHEN r.index_offset = 0 THEN 'compact' ELSE 'format 2' END, ',')
  FROM pkchangelog.runs r JOIN pk_runs('$table{none}') p USING (run_id)
 WHERE r.relid = '$table{none}'::regclass AND p.kind = 'delta' AND r.stream IS NOT NULL}) . ' / ' .
   $node->safe_psql('upgraded', qq{
SELECT count(*) || ' in commit log records'
  FROM pkchangelog.log_snapshots('$table{none}') l
	   JOIN pk_runs('$table{none}') p ON p.run_id = -l.snapshot_id
 WHERE p.kind = 'delta'}), 'format 2 / 3 in commit log records',
	'none: retained commits\' runs in catalog rows and commit log records, in every form');
is($node->safe_psql('upgraded', qq{
SELECT string_agg(rowkind || ("row"->>'id') || '=' || ("row"->>'amount'), ' ' ORDER BY ord)
  FROM pk_changes('$table{none}') WITH ORDINALITY c(s, rowkind, "row", p, ord)
 WHERE "row"->>'id' IN ('1001', '3001')}),
	'+I1001=100.00 +U1001=80.00 +U1001=81.00 +I3001=3.00',
	'none: the stream reads the runs of both forms');
is($node->safe_psql('upgraded', qq{SELECT check_data_runs('$table{none}')}), 'ok',
	'none: the catalog names exactly the data runs after the compaction');

# --- the updated extension is the one CREATE EXTENSION makes --------------
$node->safe_psql('fresh', 'CREATE EXTENSION pkchangelog');
my $shape = q{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'pkchangelog'),
members AS (
	SELECT d.classid, d.objid FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
	SELECT 'object ' || pg_describe_object(classid, objid, 0) || ': '
		   || coalesce(obj_description(objid, classid::regclass::name), '-') AS line
	FROM members
	UNION ALL
	SELECT 'function ' || pg_get_functiondef(objid) FROM members
	WHERE classid = 'pg_proc'::regclass
	UNION ALL
	SELECT format('column %s.%s %s %s %s %s: %s', c.relname, a.attnum, a.attname,
				  format_type(a.atttypid, a.atttypmod), a.attnotnull,
				  pg_get_expr(ad.adbin, ad.adrelid), col_description(c.oid, a.attnum))
	FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
	LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
	WHERE c.relnamespace = 'pkchangelog'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'index ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	WHERE c.relnamespace = 'pkchangelog'::regnamespace
	UNION ALL
	SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
	WHERE connamespace = 'pkchangelog'::regnamespace) s
};
my $fresh = $node->safe_psql('fresh', $shape);
ok($fresh =~ /column runs\.\d+ run_id bigint/ && $fresh =~ /function CREATE OR REPLACE FUNCTION public\.pk_changes/,
	'the comparison sees the catalog columns and the functions');
is($node->safe_psql('upgraded', $shape), $fresh,
	"the updated extension has the objects, columns and definitions of a fresh $default");

# --- a catalog at 0.7 (runs in their rows, no changelog columns in
# snapshot rows): the library retires none's deltas there, as pk_stats of
# that version counts kinds from the rows; after the update the deltas
# retired before and those kept without a write since are told apart the
# same way, and expiration deletes both
$node->safe_psql('postgres', 'CREATE DATABASE mid');
$node->safe_psql('mid', "CREATE EXTENSION pkchangelog VERSION '0.7'");
$node->safe_psql('mid', q{
CREATE TABLE d (id int PRIMARY KEY, v int) USING pkmerge;
INSERT INTO d VALUES (1, 1);});
$node->safe_psql('mid', 'INSERT INTO d VALUES (2, 2)');
$node->safe_psql('mid', q{SELECT pk_compact('d', true)});
# the kinds the rows of d's runs say, and pk_stats' count of its runs
sub mid_kinds
{
	return $node->safe_psql('mid', q{
SELECT string_agg(kind || ':' || n, ' ' ORDER BY kind)
  FROM (SELECT kind, count(*) AS n FROM pkchangelog.runs WHERE relid = 'd'::regclass GROUP BY kind) k}) . ' / ' . $node->safe_psql('mid', q{SELECT runs_per_kind FROM pk_stats('d')});
}
is(mid_kinds(), 'data:1 delta:2 / {"data": 1, "delta": 2, "changelog": 0}',
	'catalog 0.7: the deltas are retired in their rows, and pk_stats counts them');
$node->safe_psql('mid', 'ALTER EXTENSION pkchangelog UPDATE');
$node->safe_psql('mid', 'INSERT INTO d VALUES (3, 3)');
$node->safe_psql('mid', q{SELECT pk_compact('d', true)});
is(mid_kinds(), 'data:1 delta:2 log:1 / {"data": 1, "delta": 3, "changelog": 0}',
	"$default: the new delta is kept in its commit log record (on the log's page); pk_stats tells the three deltas apart");
is($node->safe_psql('mid', q{SELECT string_agg(kind, ',' ORDER BY run_id) FROM pk_runs('d')}),
	'delta,delta,delta,data', "$default: and so does pk_runs");
$node->safe_psql('mid', q{
ALTER TABLE d SET (snapshot_num_retained_min = 1, snapshot_time_retained = '0ms');
SELECT pk_expire_snapshots('d');});
is($node->safe_psql('mid', q{
SELECT string_agg(kind, ',' ORDER BY run_id) FROM pkchangelog.runs WHERE relid = 'd'::regclass}),
	'log,data', 'expiration deletes the deltas of both kinds (the log page commits append to stays)');
is($node->safe_psql('mid', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM d}),
	'1:1,2:2,3:3', 'the rows are all there');

# --- a catalog at 0.8: every commit writes the table's row (its pk_stats
# counts the row's commits); after the update small commits are folded
# after the row (the first writes it as it opens the commit log), and
# pk_stats counts them
$node->safe_psql('postgres', 'CREATE DATABASE pre09');
$node->safe_psql('pre09', "CREATE EXTENSION pkchangelog VERSION '0.8'");
$node->safe_psql('pre09', 'CREATE TABLE f (id int PRIMARY KEY, v int) USING pkmerge');
$node->safe_psql('pre09', "INSERT INTO f VALUES ($_, $_)") for 1 .. 3;
my $row_and_stats = q{
SELECT (SELECT last_snapshot_id || '/' || commits FROM pkchangelog.tables WHERE relid = 'f'::regclass)
	   || ' ' || (SELECT commits FROM pk_stats('f'))};
is($node->safe_psql('pre09', $row_and_stats), '3/3 3',
	'catalog 0.8: each commit wrote the row');
$node->safe_psql('pre09', 'ALTER EXTENSION pkchangelog UPDATE');
$node->safe_psql('pre09', "INSERT INTO f VALUES ($_, $_)") for 4 .. 6;
is($node->safe_psql('pre09', $row_and_stats), '4/4 6',
	"$default: the two commits after the first since are folded after the row, and counted");
is($node->safe_psql('pre09', q{SELECT max(snapshot_id) || ' ' || (SELECT sum(v) FROM f) FROM pk_snapshots('f')}),
	'6 21', "$default: ids go on, the rows are all there");

# --- a catalog at 0.9 keeps the committing role as a name; a library of
# 0.10 writes it as such until the update, which turns the column into
# text with every value kept (and still readable by every role), and
# pk_snapshots returns a name throughout
$node->safe_psql('postgres', 'CREATE DATABASE pre010');
$node->safe_psql('pre010', q{
CREATE EXTENSION pkchangelog VERSION '0.9';
CREATE ROLE writer010;
CREATE TABLE u (id int PRIMARY KEY, v int) USING pkmerge;
GRANT INSERT, SELECT ON u TO writer010;
INSERT INTO u VALUES (1, 1);
SET ROLE writer010;
INSERT INTO u VALUES (2, 2);
RESET ROLE;
});
my $users = q{
SELECT string_agg(snapshot_id || ':' || commit_user || ':' || pg_typeof(commit_user), ','
	ORDER BY snapshot_id) FROM pk_snapshots('u')};
is($node->safe_psql('pre010', $users), '1:postgres:name,2:writer010:name',
	'catalog 0.9: the committing roles');
$node->safe_psql('pre010', 'ALTER EXTENSION pkchangelog UPDATE');
$node->safe_psql('pre010', 'SET ROLE writer010; INSERT INTO u VALUES (3, 3)');
is($node->safe_psql('pre010', $users), '1:postgres:name,2:writer010:name,3:writer010:name',
	"$default: the roles kept, the next commit's added; pk_snapshots returns names");
is($node->safe_psql('pre010', q{
SELECT string_agg(commit_user || ':' || pg_typeof(commit_user), ',' ORDER BY snapshot_id)
FROM (SELECT snapshot_id, commit_user FROM pkchangelog.snapshots
	  UNION ALL SELECT snapshot_id, commit_user FROM pkchangelog.log_snapshots('u')) s}),
	'postgres:text,writer010:text,writer010:text',
	"$default: pkchangelog.snapshots and the commit log keep them as text");
is($node->safe_psql('pre010', q{
SELECT has_column_privilege('public', 'pkchangelog.snapshots', 'commit_user', 'SELECT')}),
	't', "$default: still readable by every role");
$node->safe_psql('pre010', 'DROP TABLE u; DROP ROLE writer010');

# --- a catalog of another shape is refused -------------------------------
# The library reads the catalog of its own version only.  A catalog table
# of another shape is refused before a row is read; the hint says to drop
# and create the extension unless the extension is at a version the
# library updates from (then: ALTER EXTENSION UPDATE; no such version
# precedes the base).
$node->safe_psql('fresh', q{CREATE TABLE probe (k int PRIMARY KEY) USING pkmerge});
for my $version ($default, '0.0')
{
	($rc, $out, $err) = $node->psql('fresh', qq{
BEGIN;
ALTER TABLE pkchangelog.runs ADD COLUMN extra int;
UPDATE pg_extension SET extversion = '$version' WHERE extname = 'pkchangelog';
SELECT * FROM pk_runs('probe');
ROLLBACK});
	like($err, qr/the pkchangelog catalog does not match the pkchangelog library\n.*pkchangelog\.runs has other columns.*\n.*HINT:  The extension was created by another build of version $default: drop and create it again\./,
		"a catalog of another shape at version $version: the error says to drop and create it");
}
is($node->safe_psql('fresh', q{INSERT INTO probe VALUES (1); SELECT count(*) FROM probe}), '1',
	'the catalog of the right shape is used');

# --- the filled tables take secondary indexes: the rows written under the
# base catalog keep their row numbers as ids, and an index scan answers as
# a sequential scan through updates, a compaction and VACUUM
for my $p (@producers)
{
	my $t = $table{$p};
	$node->safe_psql('upgraded', qq{CREATE INDEX ${t}_grp ON $t (grp)});
	$node->safe_psql('upgraded', qq{UPDATE $t SET grp = grp + 100 WHERE id % 7 = 0});
	$node->safe_psql('upgraded', qq{SELECT pk_compact('$t', true)});
	$node->safe_psql('upgraded', qq{VACUUM $t});
	my $q = qq{SELECT count(*), sum(amount) FROM $t WHERE grp > 50};
	my $by_index = $node->safe_psql('upgraded', qq{SET enable_seqscan = off; SET enable_bitmapscan = off; $q});
	isnt($by_index, '0|', "$p: rows found by the index");
	is($by_index, $node->safe_psql('upgraded', qq{SET enable_indexscan = off; SET enable_bitmapscan = off; $q}),
		"$p: an index built after the update answers as a sequential scan");
}

# --- the filled tables are referenced by foreign keys, checked and kept
for my $p (@producers)
{
	my $t = $table{$p};
	$node->safe_psql('upgraded', qq{CREATE TABLE ${t}_ref (id int PRIMARY KEY, ref int REFERENCES $t ON DELETE CASCADE);
		INSERT INTO ${t}_ref SELECT id, id FROM $t WHERE id <= 20});
	my ($rrc, $rout, $rerr) = $node->psql('upgraded', qq{INSERT INTO ${t}_ref VALUES (999, 999)});
	like($rerr, qr/violates foreign key constraint/, "$p: a reference to a missing row is refused");
	$node->safe_psql('upgraded', qq{DELETE FROM $t WHERE id = 2});
	is($node->safe_psql('upgraded', qq{SELECT count(*) FROM ${t}_ref WHERE ref = 2}), '0',
		"$p: a delete of a referenced row cascades");
}

$node->stop;
done_testing();
