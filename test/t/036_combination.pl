# 036_combination.pl: the write paths in combination, under concurrency and
# background compaction, for every producer.
#
# Four pkmerge tables of 1,000 rows of about 2 kB (v = 100 each, so every
# table sums to 100,000), one per producer (none, input, lookup,
# full-compaction), with small compaction triggers and the smallest write
# buffer (1MB), the background worker on.  Eight pgbench clients, each
# running the four tables' scripts at random, move amounts between random
# keys, so every committed transaction keeps its table's count and sum, in
# transactions that combine: a range update rolled back to a savepoint; a
# DO block whose exception handler undoes an update and a delete; a
# 600-row update that spills its write buffer inside a released savepoint;
# single-row autocommit updates; a delete and re-insert of a key; PREPARE
# TRANSACTION then COMMIT PREPARED.  Beside them a session per table runs
# DDL in transactions (ADD COLUMN with a default, an update of it, DROP
# COLUMN), pk_compact and VACUUM FULL.  Serialization failures (and reads
# refused after a concurrent VACUUM FULL, SQLSTATE 40001 as well) are
# retried by pgbench.
#
# Checked at the end: pgbench saw no other error; every table still has
# 1,000 rows summing to 100,000 and its columns as before; snapshot ids
# are dense; every table was compacted while written (by the worker and
# pk_compact); for the producers with a complete stream (input, lookup,
# full-compaction, the last after a full compaction) the change stream
# from the first snapshot replays per key (+I/+U add, -U/-D subtract) to
# exactly the table: every key counted once, with the table's value; and
# the server log has no crash.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;
use PkWorkload;

my $secs = 30;
# c_none, c_input, c_lookup, c_full: table => producer
my %producer = map { ('c_' . s/-.*//r, $_) } qw(none input lookup full-compaction);
my @tables = sort keys %producer;

my $node = PkWorker::start_node("comb036_$$", q{
pkchangelog.worker_naptime = 50ms
max_connections = 40
max_prepared_transactions = 20
log_min_messages = warning
});

$node->safe_psql('postgres', 'CREATE EXTENSION pkchangelog');
for my $t (@tables)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, v bigint NOT NULL, pad text) USING pkmerge
	WITH (changelog_producer = '$producer{$t}', num_sorted_run_compaction_trigger = 3,
		  write_buffer_size = '1MB');
INSERT INTO $t SELECT g, 100, repeat('x', 2000) FROM generate_series(1, 1000) g;
});
}

my (%scripts, %weights);
for my $t (@tables)
{
	# a transfer with a rolled-back range update, an undone DO block and a
	# spilled update in a released savepoint
	$scripts{"tx_$t"} = qq{
\\set a random(1, 1000)
\\set b random(1, 1000)
\\set amt random(1, 5)
BEGIN;
UPDATE $t SET v = v - :amt WHERE id = :a;
SAVEPOINT s1;
UPDATE $t SET v = v + 1000 WHERE id BETWEEN :b AND :b + 50;
ROLLBACK TO SAVEPOINT s1;
DO \$\$ BEGIN UPDATE $t SET v = v + 7 WHERE id = :b; DELETE FROM $t WHERE id = :a; RAISE EXCEPTION 'undo'; EXCEPTION WHEN raise_exception THEN NULL; END \$\$;
SAVEPOINT s2;
UPDATE $t SET pad = repeat(chr(96 + :amt), 2000) WHERE id <= 600;
RELEASE SAVEPOINT s2;
UPDATE $t SET v = v + :amt WHERE id = :b;
COMMIT;
};
	# small commits: a 2-row transfer in one statement, a 1-row update
	$scripts{"one_$t"} = qq{
\\set a random(1, 1000)
\\set b random(1, 1000)
UPDATE $t SET v = v + CASE WHEN id = :a THEN -1 ELSE 1 END WHERE id IN (:a, :b) AND :a <> :b;
UPDATE $t SET pad = md5(random()::text) WHERE id = :a;
};
	$scripts{"dr_$t"} = qq{
\\set a random(1, 1000)
BEGIN;
DELETE FROM $t WHERE id = :a RETURNING v \\gset
INSERT INTO $t VALUES (:a, :v, 'z');
COMMIT;
};
	$scripts{"prep_$t"} = qq{
\\set a random(1, 1000)
\\set b random(1, 1000)
\\set r random(1, 1000000000)
BEGIN;
UPDATE $t SET v = v - 2 WHERE id = :a;
UPDATE $t SET v = v + 2 WHERE id = :b;
PREPARE TRANSACTION '${t}-:client_id-:r';
COMMIT PREPARED '${t}-:client_id-:r';
};
	@weights{ "tx_$t", "one_$t", "dr_$t", "prep_$t" } = (1, 4, 1, 1);
}
my @fileargs = PkWorkload::script_args($node, \%scripts, \%weights);

# the DDL sessions, one per table, at a few transactions a second
my @ddl;
for my $t (@tables)
{
	my %s = (
		"ddl_$t" => qq{
BEGIN;
ALTER TABLE $t ADD COLUMN extra int DEFAULT 5;
UPDATE $t SET extra = extra + 1 WHERE id % 10 = 3;
ALTER TABLE $t DROP COLUMN extra;
COMMIT;
SELECT pk_compact('$t');
},
		"vf_$t" => "VACUUM FULL $t;\n");
	my @args = PkWorkload::script_args($node, \%s, { "ddl_$t" => 3, "vf_$t" => 1 });
	push @ddl, PkWorkload::start($node, 1, $secs, '-R', 2, @args);
}
my $w = PkWorkload::start($node, 8, $secs, @fileargs);

my $errs = PkWorkload::finish($w, 'writers');
is(scalar(@$errs), 0, 'the writers saw no errors but retried serialization failures')
  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
my ($tx) = ${ $w->{out} } =~ /number of transactions actually processed: (\d+)/;
cmp_ok($tx // 0, '>', 500, 'the writers committed transactions');
for my $d (@ddl)
{
	my $derrs = PkWorkload::finish($d, 'DDL');
	is(scalar(@$derrs), 0, 'a DDL session saw no errors');
	my ($dtx) = ${ $d->{out} } =~ /number of transactions actually processed: (\d+)/;
	cmp_ok($dtx // 0, '>', 5, 'a DDL session ran DDL, pk_compact and VACUUM FULL');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'no prepared transaction is left');

for my $t (@tables)
{
	is($node->safe_psql('postgres', qq{SELECT count(*) || ' ' || sum(v) FROM $t}),
		'1000 100000', "$t ($producer{$t}): 1,000 rows summing to 100,000");
	is($node->safe_psql('postgres', qq{
SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
WHERE attrelid = '$t'::regclass AND attnum > 0 AND NOT attisdropped}),
		'id,v,pad', "$t: its columns as before the DDL");
	PkWorkload::check_dense($node, $t, $t);
	cmp_ok($node->safe_psql('postgres',
			qq{SELECT count(*) FROM pk_snapshots('$t') WHERE commit_kind = 'COMPACT'}),
		'>', 0, "$t: compacted while written");
}

# The replay sums each key's changes (a missing -U counts the key twice, a
# wrong old value leaves its value off): check_changelog
# (test/setup/changelog_checker.sql), which checks each change against the
# one before, builds the whole stream as one jsonb value, too large here:
# each spilled update adds 600 changes of 2 kB rows.
$node->safe_psql('postgres', q{SELECT pk_compact('c_full', true)});
for my $t (grep { $producer{$_} ne 'none' } @tables)
{
	my $replay = $node->safe_psql('postgres', qq{
SELECT count(*) || ' ' || count(*) FILTER (WHERE c.n IS DISTINCT FROM 1 OR c.sv IS DISTINCT FROM t.v)
FROM (SELECT (row->>'id')::int AS id,
			 sum(CASE WHEN rowkind IN ('+I', '+U') THEN 1 ELSE -1 END) AS n,
			 sum(CASE WHEN rowkind IN ('+I', '+U') THEN 1 ELSE -1 END * (row->>'v')::bigint) AS sv
	  FROM pk_changes('$t', 0) GROUP BY 1) c
FULL JOIN $t t USING (id)});
	is($replay, '1000 0',
		"$t ($producer{$t}): the change stream replays per key to the table");
}

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:|terminated by signal|server process .* was terminated/,
	'no crash, assertion or PANIC in the server log');

$node->stop;
done_testing();
