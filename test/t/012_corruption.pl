# 012_corruption.pl: a damaged run is reported, never decoded.  With data
# checksums off (PostgreSQL's own page check cannot see it), bytes are
# flipped in the middle of a pkmerge table's main fork, inside one run's data
# blocks.  A full scan must then fail with SQLSTATE XX001 and a message naming
# the table, the run and the block, without returning rows and without
# crashing the server; point lookups must fail the same way exactly for the
# keys of the damaged block (a contiguous key range) and return the correct
# row for every other key; range scans that avoid the damaged block still
# work.  Damage in a run's bloom filter / block index (its last pages) is
# reported the same way.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
$node->init;    # data_checksums off
$node->start;
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'off', 'data checksums are off');

my $nrows = 20000;
# the expected value of each row, so that any wrong row is detectable
my $val = q{md5(id::text) || md5((id * 3)::text)};
(my $val_k = $val) =~ s/\bid\b/k/g;

$node->safe_psql('postgres', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE t (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO t SELECT id, $val FROM generate_series(1, $nrows) id;
CREATE TABLE u (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO u SELECT id, $val FROM generate_series(1, $nrows) id;
CREATE TABLE z (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO z SELECT id, $val FROM generate_series(1, $nrows) id;
CHECKPOINT;
});

my ($run_id) = $node->safe_psql('postgres', q{SELECT run_id FROM pk_runs('t')});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_runs('t')}), '1',
	'the table is one run');
my $pages = $node->safe_psql('postgres', q{SELECT pg_relation_size('t') / 8192});
cmp_ok($pages, '>=', 40, "the run spans many pages ($pages)");
is($node->safe_psql('postgres',
		qq{SELECT count(*) FROM t WHERE v = $val}),
	$nrows, 'all rows read back correctly before the damage');

my $datadir = $node->data_dir;
my $tpath = $datadir . '/' . $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t')});
my $upath = $datadir . '/' . $node->safe_psql('postgres', q{SELECT pg_relation_filepath('u')});
my $upages = $node->safe_psql('postgres', q{SELECT pg_relation_size('u') / 8192});
my $zpath = $datadir . '/' . $node->safe_psql('postgres', q{SELECT pg_relation_filepath('z')});
my $zpages = $node->safe_psql('postgres', q{SELECT pg_relation_size('z') / 8192});
$node->stop;

# XOR $len bytes at $off of $file with 0x5A
sub flip_bytes
{
	my ($file, $off, $len) = @_;
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	sysseek($fh, $off, 0) or die "seek: $!";
	my $buf;
	sysread($fh, $buf, $len) == $len or die "read: $!";
	$buf ^= "\x5A" x $len;
	sysseek($fh, $off, 0) or die "seek: $!";
	syswrite($fh, $buf) == $len or die "write: $!";
	close $fh;
}

is(-s $tpath, $pages * 8192, 'relation file found on disk with the expected size');
my $victim = int($pages / 2);
# inside the page's payload, well past the 24-byte page header
flip_bytes($tpath, $victim * 8192 + 4000, 32);
# u: damage its last page (the run's bloom filter / block index)
flip_bytes($upath, ($upages - 1) * 8192 + 100, 16);
# z: a whole page in the middle zeroed (PostgreSQL accepts an all-zero page
# as new, so only the extension can notice)
{
	open(my $fh, '+<', $zpath) or die "open $zpath: $!";
	binmode $fh;
	sysseek($fh, int($zpages / 2) * 8192, 0) or die "seek: $!";
	syswrite($fh, "\0" x 8192) == 8192 or die "write: $!";
	close $fh;
}

$node->start;
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my $corrupt_re = qr/ERROR:  XX001: corrupt .* of run (\d+) in pkmerge table "t"/;

# --- full scan
my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t");
isnt($ret, 0, 'full scan of the damaged table fails');
is($out, '', 'full scan returns no result');
like($err, $corrupt_re, 'full scan error: SQLSTATE XX001, names the run and the table');
like($err, qr/corrupt block \d+ of run \Q$run_id\E in pkmerge table "t"/,
	'full scan error names the damaged block of the table\'s run');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server is up after the full scan error');

# the same through a plain SELECT * (rows streamed to the client)
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM t");
isnt($ret, 0, 'SELECT * of the damaged table fails');
like($err, $corrupt_re, 'SELECT * error: SQLSTATE XX001');
is($out, '', 'SELECT * returns no rows');

# --- every key by point lookup through the key index
like($node->safe_psql('postgres',
		"SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 42"),
	qr/Index Scan using t_pkey/, 'point lookups use the key index');
($ret, $out, $err) = $node->psql('postgres', qq{
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE probe (k int, outcome text, msg text);
DO \$\$
DECLARE
	r record;
	m text;
	st text;
BEGIN
	FOR k IN 1..$nrows LOOP
		BEGIN
			SELECT * INTO r FROM t WHERE id = k;
			IF NOT FOUND THEN
				INSERT INTO probe VALUES (k, 'missing', NULL);
			ELSIF r.id <> k OR r.v IS DISTINCT FROM $val_k THEN
				INSERT INTO probe VALUES (k, 'wrong', r.id || ':' || r.v);
			ELSE
				INSERT INTO probe VALUES (k, 'ok', NULL);
			END IF;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, st = RETURNED_SQLSTATE;
			INSERT INTO probe VALUES (k, 'error ' || st, m);
		END;
	END LOOP;
END
\$\$;
SELECT outcome, count(*), min(k), max(k), min(msg), max(msg) FROM probe GROUP BY outcome ORDER BY outcome;
});
is($ret, 0, 'probing every key by point lookup completes') or diag($err);
note("point lookup outcomes:\n$out");
my %outcome;
for my $line (split /\n/, $out)
{
	my ($o, $n, $min, $max, $mmin, $mmax) = split /\|/, $line;
	$outcome{$o} = { n => $n, min => $min, max => $max, mmin => $mmin, mmax => $mmax };
}
ok(!exists $outcome{wrong}, 'no point lookup returns a wrong row');
ok(!exists $outcome{missing}, 'no point lookup misses a row');
my $bad = $outcome{'error XX001'};
ok(defined $bad && $bad->{n} > 0, 'point lookups of keys in the damaged block fail with XX001');
ok(defined $bad && $bad->{n} == $bad->{max} - $bad->{min} + 1,
	'the failing keys are one contiguous key range (one damaged block)')
  or diag(explain $bad);
ok(defined $bad && $bad->{n} < $nrows / 4, 'only the damaged block\'s keys fail');
# (32 flipped bytes may straddle two adjacent blocks: both are named)
ok(defined $bad
	  && $bad->{mmin} =~ /^corrupt block \d+ of run \Q$run_id\E in pkmerge table "t"$/
	  && $bad->{mmax} =~ /^corrupt block \d+ of run \Q$run_id\E in pkmerge table "t"$/,
	'point lookups name the block, the run and the table') or diag(explain $bad);
is((scalar grep { /^error/ && $_ ne 'error XX001' } keys %outcome), 0,
	'no other kind of error');
is($outcome{ok}{n} // 0, $nrows - ($bad ? $bad->{n} : 0), 'every other key returns its correct row');

# the full-scan error names the same block as the lookups
if ($bad)
{
	($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM t");
	like($err, qr/corrupt block \d+ of run \Q$run_id\E in pkmerge table "t"/, 'count(*) fails naming the block')
	  if $ret != 0;
	is($out, '', 'count(*) does not return a number that ignores the damage')
	  if $ret != 0;
	is($out, $nrows, 'count(*), if it does not read rows, is still right')
	  if $ret == 0;

	# a point lookup of a key in the damaged block, with the message checked
	my $k = $bad->{min} + 1;
	($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET enable_seqscan = off;\nSELECT * FROM t WHERE id = $k");
	isnt($ret, 0, "lookup of key $k (in the damaged block) fails");
	like($err, $corrupt_re, "lookup of key $k: SQLSTATE XX001, names the run and table");

	# range scans on either side of the damage still return exactly the right rows
	my $lo = $bad->{min} - 1;
	my $hi = $bad->{max} + 1;
	my $idx = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
	like($node->safe_psql('postgres', "$idx EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id <= $lo"),
		qr/Index Scan using t_pkey/, 'range scans use the key index');
	# a scan may look one block ahead to find where its range ends: ending
	# a block away from the damage it must succeed with the right rows;
	# ending right before it, it returns the right rows or reports XX001
	my $lo2 = $lo - 200;
	is($node->safe_psql('postgres', qq{$idx
SELECT count(*) FILTER (WHERE v = $val), count(*) FROM t WHERE id <= $lo2}),
		"$lo2|$lo2", 'index range scan ending a block before the damaged block returns the right rows');
	($ret, $out, $err) = $node->psql('postgres', qq{\\set VERBOSITY verbose
$idx
SELECT count(*) FILTER (WHERE v = $val), count(*) FROM t WHERE id > $lo - 500 AND id <= $lo});
	ok($ret == 0 ? $out eq '500|500' : $err =~ $corrupt_re,
		'index range scan ending right before the damaged block: right rows or XX001')
	  or diag("ret $ret out $out err $err");
	note("index range scan ending at key $lo (just before the damaged block): "
		  . ($ret == 0 ? 'succeeded' : "failed: $err"));
	my $hi2 = $hi + 200;
	is($node->safe_psql('postgres', qq{$idx
SELECT count(*) FILTER (WHERE v = $val), count(*) FROM t WHERE id >= $hi2}),
		($nrows - $hi2 + 1) . '|' . ($nrows - $hi2 + 1),
		'index range scan starting a block after the damaged block returns the right rows');
	($ret, $out, $err) = $node->psql('postgres', qq{\\set VERBOSITY verbose
$idx
SELECT count(*) FILTER (WHERE v = $val), count(*) FROM t WHERE id >= $hi AND id < $hi + 500});
	ok($ret == 0 ? $out eq '500|500' : $err =~ $corrupt_re,
		'index range scan starting right after the damaged block: right rows or XX001')
	  or diag("ret $ret out $out err $err");
	note("index range scan starting at key $hi (just after the damaged block): "
		  . ($ret == 0 ? 'succeeded' : "failed: $err"));
	($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$idx\nSELECT count(*), sum(length(v)) FROM t WHERE id BETWEEN $lo AND $hi");
	isnt($ret, 0, 'range scan across the damaged block fails');
	like($err, $corrupt_re, 'range scan across the damaged block: SQLSTATE XX001');
}

# a write transaction that has to read the damaged block does not commit
# anything made up (UPDATE reads the old rows)
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nUPDATE t SET v = 'x' || v");
isnt($ret, 0, 'UPDATE of every row fails on the damaged block');
like($err, $corrupt_re, 'UPDATE error: SQLSTATE XX001');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pk_snapshots('t')}), '1',
	'the failed UPDATE committed nothing');

# --- damage in the run's bloom filter / block index (table u)
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*), sum(length(v)) FROM u");
isnt($ret, 0, 'scan of a table with a damaged run index/bloom fails');
like($err, qr/ERROR:  XX001: corrupt .* of run \d+ in pkmerge table "u"/,
	'damaged run index/bloom: SQLSTATE XX001, names the run and the table');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET enable_seqscan = off;\nSELECT * FROM u WHERE id = 777");
ok($ret != 0 ? $err =~ /ERROR:  XX001: corrupt .* in pkmerge table "u"/
	: $out eq $node->safe_psql('postgres', "SELECT 777, $val FROM (SELECT 777 AS id) x"),
	'point lookup on u: XX001 or the correct row') or diag("ret $ret out $out err $err");

# --- a zeroed page (table z)
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*), md5(string_agg(v, ',' ORDER BY id)) FROM z");
isnt($ret, 0, 'scan of a table with a zeroed page fails');
is($out, '', 'scan with a zeroed page returns no result');
like($err, qr/ERROR:  XX001: corrupt .* of run \d+ in pkmerge table "z"/,
	'zeroed page: SQLSTATE XX001, names the run and the table');

# --- no crash: same postmaster, no crash-restart, nothing fatal in the log
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still answers');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'no crash-restart happened');
my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:|terminated by signal|server process .* was terminated/,
	'no PANIC, assertion failure or crashed backend in the log');

# other tables are unaffected
$node->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO w SELECT g, g::text FROM generate_series(1, 1000) g;
});
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM w'), '1000|500500',
	'other pkmerge tables keep working');

$node->stop;
done_testing();
