# 043_unique.pl: a unique index on a non-key column of a pkmerge table
# under concurrent writers, and beside a prepared transaction through a
# crash.
#
# Four pgbench clients insert, upsert (ON CONFLICT on the unique column:
# DO NOTHING, DO UPDATE), move and delete rows over a small range of
# values, so that writers meet each other's uncommitted rows in the index
# all the time (and INSERT ... ON CONFLICT now and then finds another's row
# only at its index insertion, and takes its own row back).  Afterwards no
# value may be held by two rows, and amcheck must find the index
# consistent with the table; the same after an immediate shutdown in the
# middle of their writes.
#
# A prepared transaction's rows are in runs that no snapshot sees, and
# after a restart only the lock it holds says it is there: a writer of the
# same value must wait for it (here: until its lock_timeout), then fail
# once it is committed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PkWorkload;

my $node = PostgreSQL::Test::Cluster->new('unique');
$node->init;
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE EXTENSION amcheck;
CREATE TABLE u (id int PRIMARY KEY, ref int UNIQUE, v int) USING pkmerge
	WITH (write_buffer_size = '1MB');
CREATE INDEX u_v ON u (v);
INSERT INTO u SELECT g, g, 0 FROM generate_series(1, 200) g;
});

my %scripts = (
	nothing => q{
\set id random(1, 600)
\set r random(1, 400)
INSERT INTO u VALUES (:id, :r, 1) ON CONFLICT (ref) DO NOTHING;
},
	upsert => q{
\set id random(1, 600)
\set r random(1, 400)
INSERT INTO u VALUES (:id, :r, 1) ON CONFLICT (ref) DO UPDATE SET v = u.v + 1;
},
	move => q{
\set id random(1, 600)
\set r random(1, 400)
DO $$ BEGIN UPDATE u SET ref = :r WHERE id = :id; EXCEPTION WHEN unique_violation THEN NULL; END $$;
},
	insert => q{
\set id random(1, 600)
\set r random(1, 400)
DO $$ BEGIN INSERT INTO u VALUES (:id, :r, 2); EXCEPTION WHEN unique_violation THEN NULL; END $$;
},
	delete => q{
\set r random(1, 400)
DELETE FROM u WHERE ref = :r;
});
my %weights = (nothing => 3, upsert => 3, move => 2, insert => 2, delete => 1);
my @args = PkWorkload::script_args($node, \%scripts, \%weights);
my $w = PkWorkload::start($node, 4, 10, @args);
# pgbench saw no errors (but the lost connection), no value is held by two
# rows, and the unique index finds every row
sub check_writers
{
	my ($w, $when) = @_;
	my $errs = PkWorkload::finish($w, "unique writers, $when");
	is(scalar(@$errs), 0, "$when: pgbench saw no errors other than a lost connection")
	  or diag(join("\n", @$errs[0 .. ($#$errs < 9 ? $#$errs : 9)]));
	like(${ $w->{out} }, qr/number of transactions actually processed: [1-9]/,
		"$when: the writers committed transactions") if $when eq 'to the end';
	is($node->safe_psql('postgres',
			q{SELECT count(ref) - count(DISTINCT ref) FROM u}),
		'0', "$when: no value is held by two rows");
	is($node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM u WHERE ref BETWEEN 1 AND 400;}),
		$node->safe_psql('postgres', q{SELECT count(ref) FROM u}),
		"$when: the unique index finds every row");
	return;
}

check_writers($w, 'to the end');
$node->safe_psql('postgres', q{
SELECT pk_compact('u', true);
VACUUM u;
SELECT bt_index_check('u_ref_key', true), bt_index_parent_check('u_ref_key', true);
SELECT bt_index_check('u_v', true);
});
pass('amcheck finds the indexes consistent with the table after compaction and VACUUM');

# the writers again, stopped by an immediate shutdown mid-write: after
# recovery no value is held twice, and the indexes agree with the table
$w = PkWorkload::start($node, 4, 60, @args);
sleep(3);
$node->stop('immediate');
$node->start;
check_writers($w, 'after the crash');
$node->safe_psql('postgres', q{
SELECT bt_index_check('u_ref_key', true), bt_index_parent_check('u_ref_key', true);
INSERT INTO u SELECT 5000 + g, 5000 + g, 0 FROM generate_series(1, 100) g;
SELECT bt_index_check('u_ref_key', true);
});
pass('amcheck finds the unique index consistent after the crash and new writes');

# a prepared transaction holds a value, through a crash
$node->safe_psql('postgres', q{ALTER SYSTEM SET max_prepared_transactions = 5});
$node->restart;
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO u VALUES (1000, 1000, 0);
PREPARE TRANSACTION 'holds_1000';
});
$node->stop('immediate');
$node->start;
my ($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '500ms';
INSERT INTO u VALUES (1001, 1000, 0);
});
like($err, qr/lock timeout/, 'a writer of the value waits for the recovered prepared transaction');
$node->safe_psql('postgres', q{COMMIT PREPARED 'holds_1000'});
($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO u VALUES (1001, 1000, 0)});
like($err, qr/duplicate key value violates unique constraint "u_ref_key"/,
	'and fails once it committed');
is($node->safe_psql('postgres', q{SELECT id FROM u WHERE ref = 1000}), '1000',
	'the prepared row holds the value');

$node->stop;
done_testing();
