# 044_foreign_keys.pl: foreign keys referencing a pkmerge table under
# concurrent writers, through a crash, and beside prepared transactions
# through a crash.
#
# Four pgbench clients add references to parent rows (from a heap table,
# NO ACTION, and from a pkmerge table, ON DELETE CASCADE), delete parent
# rows, move their keys away and write them again, over a small range of
# keys, so that checks of references and removals of the referenced rows
# meet all the time.  Afterwards no reference may point at a missing row;
# the same after an immediate shutdown in the middle of their writes.
#
# A prepared transaction's reference (its lock of the parent row) and its
# delete of a parent row are kept, after a restart, only by the locks it
# holds: a delete of the referenced row, a reference to the deleted row,
# must wait for it (here: until their lock_timeout), then fail once it is
# committed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PkWorkload;

my $node = PostgreSQL::Test::Cluster->new('foreign_keys');
$node->init;
$node->append_conf('postgresql.conf', 'max_prepared_transactions = 5');
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE TABLE p (id int PRIMARY KEY, v int) USING pkmerge WITH (write_buffer_size = '1MB');
INSERT INTO p SELECT g, 0 FROM generate_series(1, 100) g;
CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p);
CREATE TABLE cp (id int PRIMARY KEY, pid int REFERENCES p ON DELETE CASCADE) USING pkmerge;
});

my %scripts = (
	ref => q{
\set id random(1, 2000)
\set pid random(1, 100)
DO $$ BEGIN
	INSERT INTO c VALUES (:id, :pid) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid;
EXCEPTION WHEN foreign_key_violation THEN NULL; END $$;
},
	refp => q{
\set id random(1, 2000)
\set pid random(1, 100)
DO $$ BEGIN
	INSERT INTO cp VALUES (:id, :pid);
EXCEPTION WHEN foreign_key_violation THEN NULL; END $$;
},
	unref => q{
\set id random(1, 2000)
DELETE FROM c WHERE id = :id;
},
	del => q{
\set pid random(1, 100)
DO $$ BEGIN
	DELETE FROM p WHERE id = :pid;
EXCEPTION WHEN foreign_key_violation THEN NULL; END $$;
},
	move => q{
\set pid random(1, 100)
\set to random(1000, 100000000)
DO $$ BEGIN
	UPDATE p SET id = :to WHERE id = :pid;
EXCEPTION WHEN foreign_key_violation THEN NULL; END $$;
},
	add => q{
\set pid random(1, 100)
INSERT INTO p VALUES (:pid, 1);
},
	touch => q{
\set pid random(1, 100)
UPDATE p SET v = v + 1 WHERE id = :pid;
});
my %weights = (ref => 4, refp => 3, unref => 2, del => 2, move => 1, add => 3, touch => 2);
my @args = PkWorkload::script_args($node, \%scripts, \%weights);

# pgbench saw no errors but foreign key violations (caught) and the lost
# connection; no reference points at a missing row
sub check_writers
{
	my ($w, $when) = @_;
	my $errs = PkWorkload::finish($w, "foreign key writers, $when");
	is(scalar(@$errs), 0, "$when: pgbench saw no errors other than a lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	like(${ $w->{out} }, qr/number of transactions actually processed: [1-9]/,
		"$when: the writers committed transactions") if $when eq 'to the end';
	for my $t ('c', 'cp')
	{
		is($node->safe_psql('postgres', qq{
SELECT count(*) FROM $t WHERE NOT EXISTS (SELECT 1 FROM p WHERE p.id = $t.pid)}),
			'0', "$when: no row of $t references a missing row");
	}
	return;
}

my $w = PkWorkload::start($node, 4, 10, @args);
check_writers($w, 'to the end');
my $refs = $node->safe_psql('postgres', q{SELECT (SELECT count(*) FROM c) + (SELECT count(*) FROM cp)});
cmp_ok($refs, '>', 100, "the writers left references ($refs)");

# the writers again, stopped by an immediate shutdown mid-write
$w = PkWorkload::start($node, 4, 60, @args);
sleep(3);
$node->stop('immediate');
$node->start;
check_writers($w, 'after the crash');

# prepared transactions, one referencing parent 7, one deleting parent 8,
# through a crash
# (a prepared transaction holds off removals and references of the keys
# that share a bucket with its own, 1 in 64: not 7 and 8)
$node->safe_psql('postgres', q{
SET lock_timeout = '10s';
INSERT INTO p VALUES (7, 0), (8, 0);
DELETE FROM c WHERE pid = 8;
BEGIN;
INSERT INTO c VALUES (5000, 7);
PREPARE TRANSACTION 'ref_7';
BEGIN;
DELETE FROM p WHERE id = 8;
PREPARE TRANSACTION 'del_8';
});
$node->stop('immediate');
$node->start;
my ($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '500ms';
DELETE FROM p WHERE id = 7;
});
like($err, qr/lock timeout/, 'a delete of the row waits for the recovered prepared reference');
($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '500ms';
INSERT INTO c VALUES (5001, 8);
});
like($err, qr/lock timeout/, 'a reference to the row waits for the recovered prepared delete');
$node->safe_psql('postgres', q{COMMIT PREPARED 'ref_7'; COMMIT PREPARED 'del_8';});
($ret, $out, $err) = $node->psql('postgres', q{DELETE FROM p WHERE id = 7});
like($err, qr/is still referenced from table "c"/, 'the delete fails once the reference committed');
($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO c VALUES (5001, 8)});
like($err, qr/is not present in table "p"/, 'the reference fails once the delete committed');

$node->stop;
done_testing();
