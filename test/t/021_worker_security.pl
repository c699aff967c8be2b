# 021_worker_security.pl: the background worker, which connects as the
# bootstrap superuser, maintains a table as the table's owner inside a
# security-restricted operation, so that user code it runs (here the btree
# comparison of the key's type, a PL/pgSQL function, called by compaction's
# merge) never has the worker's rights; and it leaves other sessions'
# temporary pkmerge tables alone instead of failing on them every round.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::Bin;
use PkWorker;

my $node = PkWorker::start_node('worker_security');

# alice owns a key type whose comparison is her own function: in the worker
# it reports who runs it and whether it may create a temporary table,
# which a security-restricted operation refuses
$node->safe_psql('postgres', q{
CREATE EXTENSION pkchangelog;
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TYPE pair AS (a int, b int);
CREATE FUNCTION probe() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	restricted bool;
BEGIN
	BEGIN
		CREATE TEMP TABLE probe (x int);
		DROP TABLE probe;
		restricted := false;
	EXCEPTION WHEN insufficient_privilege THEN
		restricted := true;
	END;
	RAISE WARNING 'pair_cmp in the worker as %, security-restricted %',
		current_user, restricted;
	RETURN 0;
END $$;
-- LANGUAGE sql: it takes its own snapshot, so commits can call it too; the
-- worker is the session without an application_name
CREATE FUNCTION pair_cmp(x pair, y pair) RETURNS int LANGUAGE sql AS $$
	SELECT CASE WHEN current_setting('application_name') = '' THEN probe() ELSE 0 END +
		   CASE WHEN x.a < y.a THEN -1 WHEN x.a > y.a THEN 1
				WHEN x.b < y.b THEN -1 WHEN x.b > y.b THEN 1 ELSE 0 END
$$;
CREATE FUNCTION pair_lt(pair, pair) RETURNS bool LANGUAGE sql AS 'SELECT pair_cmp($1, $2) < 0';
CREATE FUNCTION pair_le(pair, pair) RETURNS bool LANGUAGE sql AS 'SELECT pair_cmp($1, $2) <= 0';
CREATE FUNCTION pair_eq(pair, pair) RETURNS bool LANGUAGE sql AS 'SELECT pair_cmp($1, $2) = 0';
CREATE FUNCTION pair_ge(pair, pair) RETURNS bool LANGUAGE sql AS 'SELECT pair_cmp($1, $2) >= 0';
CREATE FUNCTION pair_gt(pair, pair) RETURNS bool LANGUAGE sql AS 'SELECT pair_cmp($1, $2) > 0';
CREATE OPERATOR < (LEFTARG = pair, RIGHTARG = pair, FUNCTION = pair_lt);
CREATE OPERATOR <= (LEFTARG = pair, RIGHTARG = pair, FUNCTION = pair_le);
CREATE OPERATOR = (LEFTARG = pair, RIGHTARG = pair, FUNCTION = pair_eq);
CREATE OPERATOR >= (LEFTARG = pair, RIGHTARG = pair, FUNCTION = pair_ge);
CREATE OPERATOR > (LEFTARG = pair, RIGHTARG = pair, FUNCTION = pair_gt);
RESET ROLE;
-- operator classes need a superuser; the function stays alice's to change
CREATE OPERATOR CLASS pair_ops DEFAULT FOR TYPE pair USING btree AS
	OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
	FUNCTION 1 pair_cmp(pair, pair);
CREATE OPERATOR CLASS pair_ops DEFAULT FOR TYPE pair USING pkmerge_key AS
	OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
	FUNCTION 1 pair_cmp(pair, pair);
});

# tables of alice's that the worker compacts (its merge compares keys),
# one of them with the full-compaction producer (whose changelog does too)
my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE s (k pair PRIMARY KEY, v int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, num_sorted_run_stop_trigger = 50);
INSERT INTO s VALUES (ROW(1, 1), 1), (ROW(3, 3), 3);
INSERT INTO s VALUES (ROW(2, 2), 2), (ROW(1, 1), 10);
CREATE TABLE f (k pair PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'full-compaction', full_compaction_delta_commits = 2,
		  num_sorted_run_compaction_trigger = 50, num_sorted_run_stop_trigger = 60);
INSERT INTO f VALUES (ROW(1, 1), 1), (ROW(3, 3), 3);
INSERT INTO f VALUES (ROW(2, 2), 2), (ROW(1, 1), 10);
});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_runs('s') WHERE kind = 'data'}),
	'the worker compacted the table');
is($node->safe_psql('postgres', q{SELECT string_agg(v::text, ',' ORDER BY k) FROM s}),
	'10,2,3', 'with its rows');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM pk_changes('f')}),
	"the worker ran the full-compaction producer's compaction");
my $log = slurp_file($node->logfile, $offset);
my @calls = $log =~ /pair_cmp in the worker as (\w+), security-restricted (\w+)/g;
ok(@calls > 0, "the worker ran alice's comparison function");
my %seen;
$seen{"$calls[$_] $calls[$_ + 1]"}++ for grep { $_ % 2 == 0 } 0 .. $#calls;
is(join(',', sort keys %seen), 'alice t',
	'always as alice, in a security-restricted operation that refused a temporary table');
is($node->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT commit_user, ',')
		  FROM (SELECT * FROM pk_snapshots('s') UNION ALL SELECT * FROM pk_snapshots('f')) x
		  WHERE commit_kind = 'COMPACT'}),
	'alice', "the compactions' snapshots name alice as their user");

# another session's temporary pkmerge table: the worker skips it, even
# when its commits ask for a compaction, and logs nothing about it
$offset = -s $node->logfile;
my $session = $node->background_psql('postgres');
$session->query_safe(q{
CREATE TEMP TABLE tmp (id int PRIMARY KEY, v int) USING pkmerge
	WITH (num_sorted_run_compaction_trigger = 2, num_sorted_run_stop_trigger = 50);
INSERT INTO tmp VALUES (1, 1);
INSERT INTO tmp VALUES (2, 2);
INSERT INTO tmp VALUES (3, 3);
});
# rounds of the worker (naptime 100 ms) while the session stays
sleep(2);
$node->safe_psql('postgres', q{INSERT INTO s VALUES (ROW(4, 4), 4)});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pk_runs('s') WHERE kind = 'data'}),
	'meanwhile the worker went on compacting other tables');
is($session->query_safe(q{SELECT count(*) FROM pk_runs('tmp') WHERE kind = 'data'}), '3',
	'the temporary table was left to its session');
is($session->query_safe(q{SELECT pk_compact('tmp') IS NOT NULL; SELECT sum(v) FROM tmp}),
	"t\n6", 'which can compact it');
$log = slurp_file($node->logfile, $offset);
unlike($log, qr/ERROR/, 'the worker logged no error about it');
$session->quit;

$node->stop;
done_testing();
