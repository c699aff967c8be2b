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
#
# Then one field at a time in runs of other tables: the block index's
# entry count (smaller and larger) and length, a data block header's
# raw_len, method and nrows.  Each must fail with XX001 naming the table,
# never return fewer rows, never crash, and never allocate gigabytes (the
# server runs with a 1 GB address-space limit, so an allocation by a
# damaged length would fail as "out of memory" instead).  The same with
# the CRCs recomputed (a consistent lie: the cross-checks between the
# parts must still see it), and a run in the earlier run format gets an
# error that says so.  A bloom filter turned into its earlier form (seven
# bits anywhere, not blocked) is still read and used.  Last, damage to runs stored compact in their
# catalog rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
# data checksums off: PostgreSQL 15's initdb default, 18's on request
$node->init(extra => $node->pg_version >= 18 ? ['--no-data-checksums'] : []);
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
CREATE TABLE b (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO b SELECT id, id::text FROM generate_series(1, 100000) id;
});

# one table per damaged field (see the end of the file)
my @fields = qw(nent_small nent_large index_len raw_len method nrows
  nent_crc raw_len_crc v1_crc);
for my $f (@fields)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE f_$f (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO f_$f SELECT id, $val FROM generate_series(1, 5000) id;});
}
# a run whose bloom filter is turned into the earlier form (seven bits
# anywhere), as runs written before the blocked filter have it: readers
# must still find every key through it, and pass over absent ones
$node->safe_psql('postgres', q{
CREATE TABLE old_bloom (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO old_bloom SELECT 2 * g, g::text FROM generate_series(1, 5000) g;});
$node->safe_psql('postgres', 'CHECKPOINT');
my $old_bloom;
{
	my ($path, $start, $bloom_offset) = split /\|/, $node->safe_psql('postgres', q{
SELECT pg_relation_filepath('old_bloom'), start_block, bloom_offset
FROM pkchangelog.runs WHERE relid = 'old_bloom'::regclass});
	$old_bloom = { path => $node->data_dir . "/$path", start => $start,
		bloom_offset => $bloom_offset,
		hashes => [ split /,/, $node->safe_psql('postgres',
			q{SELECT string_agg(hashint4(id)::text, ',') FROM old_bloom}) ] };
}
my %frun;
for my $f (@fields)
{
	my ($path, $start, $index_offset, $nblocks) = split /\|/, $node->safe_psql('postgres', qq{
SELECT pg_relation_filepath('f_$f'), start_block, index_offset, nblocks
FROM pkchangelog.runs WHERE relid = 'f_$f'::regclass});
	$frun{$f} = { path => $node->data_dir . "/$path", start => $start,
		index_offset => $index_offset, nblocks => $nblocks };
}

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
my $bpath = $datadir . '/' . $node->safe_psql('postgres', q{SELECT pg_relation_filepath('b')});
my $bpages = $node->safe_psql('postgres', q{SELECT pg_relation_size('b') / 8192});
cmp_ok($node->safe_psql('postgres',
		q{SELECT (pg_relation_size('b') - bloom_offset) / 1024 FROM pkchangelog.runs
		  WHERE relid = 'b'::regclass}), '>', 64,
	'table b: its run ends with a bloom filter of more than 64 kB');
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
# b: the same, in a bloom filter large enough to be read only when needed
flip_bytes($bpath, ($bpages - 1) * 8192 + 100, 16);
# z: a whole page in the middle zeroed (PostgreSQL accepts an all-zero page
# as new, so only the extension can notice)
{
	open(my $fh, '+<', $zpath) or die "open $zpath: $!";
	binmode $fh;
	sysseek($fh, int($zpages / 2) * 8192, 0) or die "seek: $!";
	syswrite($fh, "\0" x 8192) == 8192 or die "write: $!";
	close $fh;
}

# --- single fields of the run format (run_format.h), little-endian
# A run's stream lies over its pages after each 24-byte page header.
use constant PAYLOAD => 8192 - 24;

sub stream_io
{
	my ($run, $off, $len, $new) = @_;
	open(my $fh, '+<', $run->{path}) or die "open $run->{path}: $!";
	binmode $fh;
	my $out = '';
	while ($len > 0)
	{
		my $pg = int($off / PAYLOAD);
		my $in = $off % PAYLOAD;
		my $n = PAYLOAD - $in < $len ? PAYLOAD - $in : $len;
		my $pos = ($run->{start} + $pg) * 8192 + 24 + $in;
		sysseek($fh, $pos, 0) or die "seek: $!";
		if (defined $new)
		{
			syswrite($fh, substr($new, length($out), $n)) == $n or die "write: $!";
			$out .= substr($new, length($out), $n);
		}
		else
		{
			my $buf;
			sysread($fh, $buf, $n) == $n or die "read: $!";
			$out .= $buf;
		}
		$off += $n;
		$len -= $n;
	}
	close $fh;
	return $out;
}
sub stream_read { my ($run, $off, $len) = @_; return stream_io($run, $off, $len, undef); }
sub stream_write { my ($run, $off, $bytes) = @_; stream_io($run, $off, length($bytes), $bytes); }

# CRC32C (Castagnoli), as PostgreSQL's INIT/COMP/FIN_CRC32C
my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;
sub crc32c
{
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[($crc ^ $_) & 0xFF] ^ ($crc >> 8) for unpack('C*', join('', @_));
	return $crc ^ 0xFFFFFFFF;
}

# RunHeader: magic, run_id, nrows, index_offset, bloom_offset, stream_len
# (uint64 each), nblocks, crc (uint32); 56 bytes, the first data block's
# RunBlockHeader (crc, stored_len, raw_len, nrows, method: uint32 each)
# follows it.  RunIndexHeader at index_offset: crc, nentries (uint32), len
# (uint64), then the entries.
sub set_u32 { my ($run, $off, $v) = @_; stream_write($run, $off, pack('V', $v)); }
sub get_u32 { my ($run, $off) = @_; return unpack('V', stream_read($run, $off, 4)); }

my $run0 = $frun{nent_small};
my $rh = stream_read($run0, 0, 56);
is(unpack('V', substr($rh, 52, 4)), crc32c(substr($rh, 0, 52)),
	"the test's CRC32C is the one of the run header");
is(substr($rh, 0, 8), 'KMRGRUN2', 'runs are written in run format 2');
my $bh0 = stream_read($run0, 56, 20);
my ($b_crc, $b_stored, $b_raw, $b_nrows, $b_method) = unpack('V5', $bh0);
is($b_method, 1, 'the first data block is zstd-compressed');
is($b_crc, crc32c(substr($bh0, 4), stream_read($run0, 76, $b_stored)),
	"the block's CRC32C covers its header's fields and its payload");
my ($i_crc, $i_nentries, $i_len) = unpack('V V Q<', stream_read($run0, $run0->{index_offset}, 16));
is($i_crc, crc32c(stream_read($run0, $run0->{index_offset} + 16, $i_len),
		pack('V Q<', $i_nentries, $i_len)),
	"the index's CRC32C covers its entries and its header's fields");
cmp_ok($i_nentries, '>=', 10, "the runs have many data blocks ($i_nentries)");

# the fields themselves; CRCs left as they are
{
	my $r = $frun{nent_small};
	set_u32($r, $r->{index_offset} + 4, get_u32($r, $r->{index_offset} + 4) - 1);
	$r = $frun{nent_large};
	set_u32($r, $r->{index_offset} + 4, get_u32($r, $r->{index_offset} + 4) + 1000);
	$r = $frun{index_len};
	stream_write($r, $r->{index_offset} + 8, pack('Q<', 1 << 40));
	set_u32($frun{raw_len}, 56 + 8, 0xFFFFFFF0);
	set_u32($frun{method}, 56 + 16, 0);
	set_u32($frun{nrows}, 56 + 12, get_u32($frun{nrows}, 56 + 12) + 1);
}
# a consistent lie: the last block dropped from the index and the header,
# both CRCs recomputed
{
	my $r = $frun{nent_crc};
	my $h = stream_read($r, 0, 56);
	my $nblocks = unpack('V', substr($h, 48, 4));
	substr($h, 48, 4) = pack('V', $nblocks - 1);
	substr($h, 52, 4) = pack('V', crc32c(substr($h, 0, 52)));
	stream_write($r, 0, $h);
	my ($crc, $n, $len) = unpack('V V Q<', stream_read($r, $r->{index_offset}, 16));
	my $entries = stream_read($r, $r->{index_offset} + 16, $len);
	stream_write($r, $r->{index_offset},
		pack('V V Q<', crc32c($entries, pack('V Q<', $n - 1, $len)), $n - 1, $len));
}
# raw_len of a zstd block with the block's CRC recomputed
{
	my $r = $frun{raw_len_crc};
	my $bh = stream_read($r, 56, 20);
	my ($crc, $stored, $raw, $nrows, $method) = unpack('V5', $bh);
	my $fields = pack('V4', $stored, 0xFFFFFFF0, $nrows, $method);
	stream_write($r, 56, pack('V', crc32c($fields, stream_read($r, 76, $stored))) . $fields);
}
# a run of the earlier format: its magic, the header's CRC recomputed
{
	my $r = $frun{v1_crc};
	my $h = stream_read($r, 0, 56);
	substr($h, 0, 8) = 'KMRGRUN1';
	substr($h, 52, 4) = pack('V', crc32c(substr($h, 0, 52)));
	stream_write($r, 0, $h);
}

# old_bloom's filter in the earlier form: the same size, the bits the
# keys' hashes name by double hashing, nhashes 7, the CRC recomputed
{
	my $r = $old_bloom;
	my ($crc, $nbits, $nhashes) = unpack('V3', stream_read($r, $r->{bloom_offset}, 12));
	is($nhashes, 0x10008, 'data runs are written with a blocked bloom filter');
	is($crc, crc32c(pack('V V', $nbits, $nhashes), stream_read($r, $r->{bloom_offset} + 12, $nbits / 8)),
		"the test's CRC32C is the one of the bloom filter");
	my $bits = "\0" x ($nbits / 8);
	for my $h (@{ $r->{hashes} })
	{
		$h &= 0xFFFFFFFF;
		my $h2 = (($h >> 17) | ($h << 15)) & 0xFFFFFFFF;
		vec($bits, (($h + $_ * ($h2 | 1)) & 0xFFFFFFFF) % $nbits, 1) = 1 for 0 .. 6;
	}
	stream_write($r, $r->{bloom_offset},
		pack('V3', crc32c(pack('V V', $nbits, 7), $bits), $nbits, 7) . $bits);
}

$node->start;
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# every key of the run with the earlier form's filter is found, and the
# filter passes over most absent keys: lookups of the 5,000 present and
# 5,000 absent keys read about as many blocks as there are present keys
{
	my ($h0, $m0) = split /\|/, $node->safe_psql('postgres',
		q{SELECT lookup_cache_hits, lookup_cache_misses FROM pk_stats('old_bloom')});
	is($node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SET enable_hashjoin = off; SET enable_mergejoin = off;
SELECT count(*), count(*) FILTER (WHERE s.v = (k / 2)::text)
FROM generate_series(1, 10000) k JOIN LATERAL (SELECT v FROM old_bloom WHERE id = k) s ON true}),
		'5000|5000', 'a run with a bloom filter of the earlier form: every key found, by lookups');
	my ($h1, $m1) = split /\|/, $node->safe_psql('postgres',
		q{SELECT lookup_cache_hits, lookup_cache_misses FROM pk_stats('old_bloom')});
	my $reads = $h1 + $m1 - $h0 - $m0;
	cmp_ok($reads, '<', 5500, "and the filter passes over absent keys ($reads block reads for 10,000 lookups)");
}
# new backends may not map more than 1 GB: an allocation by a damaged
# length fails as out of memory rather than passing unseen
{
	my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	system('prlimit', '--pid', $pm, '--as=1073741824') == 0 or die "prlimit failed";
}

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

# --- damage in a large bloom filter (table b): a scan does not need it;
# the first lookup reads it into the shared index cache and fails
is($node->safe_psql('postgres', q{SELECT count(*), sum(id), sum(v::int) FROM b}),
	'100000|5000050000|5000050000', 'table b with a damaged bloom filter: the scan reads every row');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET enable_seqscan = off;\n"
	  . join("\n", map { "SELECT v FROM b WHERE id = $_;" } map { $_ * 997 } 1 .. 20));
is($out, '', 'table b: no point lookup returns a row');
like($err, qr/ERROR:  XX001: corrupt bloom filter at offset \d+ of run \d+ in pkmerge table "b"/,
	'table b: the lookup that reads the damaged bloom filter fails with XX001');

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
# a key past the runs' last keys (in their catalog rows): the lookup passes
# over them without reading their indexes or bloom filters
($ret, $out, $err) = $node->psql('postgres',
	"SET enable_seqscan = off;\nSELECT * FROM u WHERE id = " . ($nrows + 1));
is("$ret|$out|$err", '0||',
	'point lookup on u past its last key: no row, the damaged index not read');

# --- a zeroed page (table z)
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*), md5(string_agg(v, ',' ORDER BY id)) FROM z");
isnt($ret, 0, 'scan of a table with a zeroed page fails');
is($out, '', 'scan with a zeroed page returns no result');
like($err, qr/ERROR:  XX001: corrupt .* of run \d+ in pkmerge table "z"/,
	'zeroed page: SQLSTATE XX001, names the run and the table');


# --- single fields (tables f_*): XX001, no rows, no allocation by them
for my $f (@fields)
{
	my $re = $f eq 'v1_crc'
	  ? qr/ERROR:  XX001: run \d+ of pkmerge table "f_$f" has an unsupported format/
	  : qr/ERROR:  XX001: corrupt .* of run \d+ in pkmerge table "f_$f"/;
	($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM f_$f");
	isnt($ret, 0, "$f: full scan fails");
	is($out, '', "$f: full scan returns no result");
	like($err, $re, "$f: full scan error is XX001 naming the run and the table") or diag($err);
	note("$f: " . join(' ', $err =~ /(?:ERROR|DETAIL):  (.*)/g));
	# a key of the damaged part: the first data block, or (index damage) the last
	my $k = $f =~ /^(raw_len|method|nrows|raw_len_crc)$/ ? 1 : 4999;
	($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET enable_seqscan = off;\nSELECT * FROM f_$f WHERE id = $k");
	isnt($ret, 0, "$f: point lookup of key $k fails");
	is($out, '', "$f: point lookup of key $k returns no row");
	like($err, $re, "$f: point lookup error is XX001 naming the run and the table") or diag($err);
}
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*) FROM f_v1_crc");
like($err, qr/DETAIL:  The run was written by an earlier build of pkchangelog 0\.1 \(run format 1\); this build reads run format 2\./,
	'a run of format 1 is said to be one');

# --- no crash: same postmaster, no crash-restart, nothing fatal in the log
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still answers');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'no crash-restart happened');
my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:|terminated by signal|server process .* was terminated/,
	'no PANIC, assertion failure or crashed backend in the log');
unlike($log, qr/out of memory|invalid memory alloc request size/,
	'no allocation by a damaged length');

# other tables are unaffected
$node->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO w SELECT g, g::text FROM generate_series(1, 1000) g;
});
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM w'), '1000|500500',
	'other pkmerge tables keep working');

# --- runs stored compact in their catalog rows (a small merge's): the
# magic number, a payload byte, the stream cut short, the catalog's row
# count, the block's row count with its CRC recomputed (alone, and with
# the catalog's raised to match: more rows than the block can hold).  A
# merge whose block zstd shrinks is kept in the KMRC form (c_*: its block
# header after the magic number), a merge of short rows in the tight one
# (t_*: magic, CRC32C of the rest, varint row count, varint base sequence
# number, the rows).  The catalog rows are edited, then the server
# restarted (backends and shared memory keep copies of run lists).  A
# small commit's run, kept tight in its snapshot's row, is damaged the
# same way (sd_*: its row count is the block's own).
my %compact_damage = (
	magic => q{stream = set_byte(stream, 0, 0)},
	payload => q{stream = set_byte(stream, 30, get_byte(stream, 30) # 255)},
	short => q{stream = substr(stream, 1, 10)},
	count => q{record_count = 3},
	nrows_crc => undef,
	nrows_both => undef);
for my $form ('c', 't')
{
	for my $f (sort keys %compact_damage)
	{
		my $t = "${form}_$f";
		my $rows = $form eq 'c'
		  ? q{(1, repeat('one', 200)), (2, repeat('two', 200))}
		  : q{(1, 'one'), (2, 'two')};
		$node->safe_psql('postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO $t VALUES $rows;
SELECT pk_compact('$t', true);});
		my $hex = $node->safe_psql('postgres', qq{
SELECT encode(stream, 'hex') || '|' || index_offset FROM pkchangelog.runs
 WHERE relid = '$t'::regclass AND kind = 'data'});
		my ($stream_hex, $index_offset) = split /\|/, $hex;
		my $stream = pack('H*', $stream_hex);
		is(substr($stream, 0, 4) . " $index_offset", ($form eq 'c' ? 'KMRC' : 'KMRP') . ' 0',
			"$t: a 2-row merge's run is stored compact" . ($form eq 'c' ? '' : ', its rows packed'));
		my $set = $compact_damage{$f};
		if (!defined $set && $form eq 'c')
		{
			# RunBlockHeader after the magic: crc, stored_len, raw_len, nrows, method
			my ($crc, $stored, $raw, $nrows, $method) = unpack('V5', substr($stream, 4, 20));
			is($method, 1, "$t: the block is zstd-compressed");
			my $fields = pack('V4', $stored, $raw, 1000, $method);
			substr($stream, 4, 20) = pack('V', crc32c($fields, substr($stream, 24, $stored))) . $fields;
		}
		elsif (!defined $set)
		{
			# the row count, 2 (one varint byte), becomes 1000 (two)
			is(unpack('C', substr($stream, 8, 1)), 2, "$t: the tight form's row count");
			is(unpack('V', substr($stream, 4, 4)), crc32c(substr($stream, 8)),
				"$t: the tight form's CRC32C covers every byte after it");
			substr($stream, 8, 1) = pack('C2', 0xE8, 0x07);
			substr($stream, 4, 4) = pack('V', crc32c(substr($stream, 8)));
		}
		if (!defined $set)
		{
			$set = "stream = '\\x" . unpack('H*', $stream) . "'::bytea";
			$set .= ', record_count = 1000' if $f eq 'nrows_both';
		}
		$node->safe_psql('postgres',
			"UPDATE pkchangelog.runs SET $set WHERE relid = '$t'::regclass AND kind = 'data'");
	}
}
# A small commit's snapshot is a record of the table's commit log, on a
# page of its file, its runs kept tight in it: the record's CRC32C covers
# it (sd_crc: a byte flipped), and with that CRC recomputed the run's own
# checks still hold (sd_magic: its magic number; sd_payload: a payload
# byte, which its CRC32C covers).  The pages are edited with the server
# down.
my %log_damage;
for my $f ('crc', 'magic', 'payload')
{
	$node->safe_psql('postgres', qq{
CREATE TABLE sd_$f (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO sd_$f VALUES (1, 'one'), (2, 'two');});
	is($node->safe_psql('postgres', qq{
SELECT data_seq || ' ' || data_bytes FROM pkchangelog.log_snapshots('sd_$f')}),
		'1 32', "sd_$f: a 2-row commit's run is kept tight and packed (32 bytes) in its commit log record");
	$log_damage{"sd_$f"} = [ $f, 1, 'data' ];
}
# a lookup commit's changelog run, kept tight in its record, with a
# payload byte flipped (the record's CRC recomputed): the change stream
# refuses it (the run's own CRC32C, of its rows expanded), the table reads
$node->safe_psql('postgres', q{
CREATE TABLE scl (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO scl VALUES (1, 'one'), (2, 'two');
UPDATE scl SET v = 'uno' WHERE id = 1;});
is($node->safe_psql('postgres', q{
SELECT string_agg(changelog_bytes::text, ',' ORDER BY snapshot_id)
  FROM pkchangelog.log_snapshots('scl')}),
	'32,32', "scl: the commits' changelog runs are kept tight and packed in their commit log records");
$log_damage{scl} = [ 'payload', 2, 'changelog' ];
# A lookup commit's -U keeps only the bytes that differ from its +U (the
# data row of its key, kept whole before it): scl_refs' 2-row update.  A
# record written by earlier builds, whose changelog named whole data rows
# only (parts bit 8 without bit 16), reads as it did: its record is
# rewritten so, the -U whole again.
$node->safe_psql('postgres', q{
CREATE TABLE scl_refs (id int PRIMARY KEY, v text) USING pkmerge
	WITH (changelog_producer = 'lookup');
INSERT INTO scl_refs VALUES (1, 'a value long enough to matter'), (2, 'two');
UPDATE scl_refs SET v = CASE id WHEN 1 THEN 'a value long enough to MATTER' ELSE 'TWO' END;});
my $refs_query = q{SELECT snapshot_id, rowkind, row FROM pk_changes('scl_refs')
  ORDER BY snapshot_id, row->>'id', rowkind DESC};
my $refs_before = $node->safe_psql('postgres', $refs_query);
is($refs_before, q{1|+I|{"v": "a value long enough to matter", "id": 1}
1|+I|{"v": "two", "id": 2}
2|-U|{"v": "a value long enough to matter", "id": 1}
2|+U|{"v": "a value long enough to MATTER", "id": 1}
2|-U|{"v": "two", "id": 2}
2|+U|{"v": "TWO", "id": 2}}, 'scl_refs: the change stream');
$log_damage{scl_refs} = [ 'refs_v1', 2, 'changelog' ];
# A record in the first layout (a 40-byte header of fixed-width fields,
# written by earlier builds) reads as it did: sd_v1's first record is
# rewritten in that layout, moved to the page's free space
$node->safe_psql('postgres', q{
CREATE TABLE sd_v1 (id int PRIMARY KEY, v text) USING pkmerge;
INSERT INTO sd_v1 VALUES (1, 'one'), (2, 'two');
INSERT INTO sd_v1 VALUES (3, 'three');});
my $v1_query = q{SELECT snapshot_id, commit_kind, commit_time, commit_user, commit_xid,
  total_record_count, delta_record_count, changelog_record_count, producer,
  duration_ms, data_seq, data_bytes FROM pkchangelog.log_snapshots('sd_v1')
  ORDER BY snapshot_id};
my $v1_before = $node->safe_psql('postgres', $v1_query);
like($v1_before, qr/^1\|APPEND\|.*\n2\|APPEND\|/s, 'sd_v1: two small commits in the log');
$log_damage{sd_v1} = [ 'v1', 1, 'data' ];
my %log_where;
for my $t (keys %log_damage)
{
	$log_where{$t} = [ split /\|/, $node->safe_psql('postgres', qq{
SELECT pg_relation_filepath('$t') || '|' || log_block || '|' ||
	   (SELECT string_agg(commit_xid::text, ',' ORDER BY snapshot_id)
		  FROM pkchangelog.log_snapshots('$t'))
  FROM pkchangelog.tables WHERE relid = '$t'::regclass}) ];
}
$node->stop;

# the varint at $$pos of $bytes (unsigned LEB128), $$pos moved past it
sub varint
{
	my ($bytes, $pos) = @_;
	my ($v, $shift) = (0, 0);
	while (1)
	{
		my $b = unpack('C', substr($bytes, $$pos++, 1));
		$v |= ($b & 0x7F) << $shift;
		last unless $b & 0x80;
		$shift += 7;
	}
	return $v;
}

sub varint_put
{
	my ($v) = @_;
	my $out = '';
	while ($v >= 0x80) { $out .= pack('C', ($v & 0x7F) | 0x80); $v >>= 7; }
	return $out . pack('C', $v);
}

# A tight stream (magic, CRC32C, varints row count and base sequence
# number; per row varints sequence delta, kind byte, varint length, the
# tuple): its header and its rows as [delta, kind, tuple] (a changelog's
# reference: [delta, kind, undef, varints after it])
sub tight_rows
{
	my ($s) = @_;
	my $pos = 8;
	my $n = varint($s, \$pos);
	varint($s, \$pos);
	my $header = substr($s, 0, $pos);
	my @rows;
	for (1 .. $n)
	{
		my ($d, $k) = (varint($s, \$pos), unpack('C', substr($s, $pos++, 1)));
		my $l = varint($s, \$pos);
		if ($l == 0)
		{
			my $r = varint($s, \$pos);
			my @diff = ($r & 1) ? map { varint($s, \$pos) } 1 .. 3 : ();
			push @rows, [ $d, $k, undef, $r, @diff, @diff ? substr($s, $pos, $diff[2]) : '' ];
			$pos += $diff[2] if @diff;
			next;
		}
		push @rows, [ $d, $k, substr($s, $pos, $l) ];
		$pos += $l;
	}
	return ($header, @rows);
}

sub tight_tuples
{
	my (undef, @rows) = tight_rows(@_);
	return map { $_->[2] } @rows;
}

# a changelog kept with references and diffs, its rows whole
sub tight_expand
{
	my ($kept, $data) = @_;
	my ($header, @rows) = tight_rows($kept);
	my $out = $header;
	for my $r (@rows)
	{
		my $tuple = $r->[2];
		if (!defined $tuple)
		{
			my ($ref, $prefix, $suffix, undef, $own) = @$r[ 3 .. 7 ];
			my $row = $data->[ $ref >> 1 ];
			$tuple = ($ref & 1)
			  ? substr($row, 0, $prefix) . $own . substr($row, length($row) - $suffix)
			  : $row;
		}
		$out .= varint_put($r->[0]) . pack('C', $r->[1]) . varint_put(length($tuple)) . $tuple;
	}
	return $out;
}

# a whole changelog as earlier builds kept it: a row that is a data row
# names it (0, its index), the others whole
sub tight_whole_refs
{
	my ($whole, $data) = @_;
	my ($header, @rows) = tight_rows($whole);
	my $out = $header;
	for my $r (@rows)
	{
		my ($j) = grep { $data->[$_] eq $r->[2] } 0 .. $#$data;
		$out .= varint_put($r->[0]) . pack('C', $r->[1]) .
		  (defined $j ? varint_put(0) . varint_put($j) : varint_put(length($r->[2])) . $r->[2]);
	}
	return $out;
}

# Record $rec (its counts at $body) as earlier builds wrote it, its runs
# whole: the data run with its magic number and CRC32C, the changelog's
# (kept with references) with them and its base sequence number itself,
# its CRC32C that of its rows expanded; parts bit 128 and the kind byte's
# bit 64 cleared (the record's own CRC32C is made by replace_record)
sub unbare
{
	my ($rec, $body) = @_;
	my $parts = unpack('C', substr($rec, 1, 1));
	my $kind = unpack('C', substr($rec, 2, 1));
	# the bare runs' magic numbers: packed rows (the kind byte's bit 64)
	my $magic = ($kind & 64) ? 'KMRP' : 'KMRT';
	my $pos = $body;
	my @counts = map { varint($rec, \$pos) } 1 .. 3;
	my ($seq, $dlen, $run_id, $clen) = (0, 0, 0, 0);
	($seq, $dlen) = (varint($rec, \$pos), varint($rec, \$pos)) if $parts & 1;
	($run_id, $clen) = (varint($rec, \$pos), varint($rec, \$pos)) if $parts & 2;
	my $ulen = varint($rec, \$pos);
	my $user = substr($rec, $pos, $ulen);
	my $data = substr($rec, $pos + $ulen, $dlen);
	my $changelog = substr($rec, $pos + $ulen + $dlen, $clen);
	my ($data_base, $p) = (0, 0);
	if ($parts & 1)
	{
		varint($data, \$p);
		$data_base = varint($data, \$p);
		$data = $magic . pack('V', crc32c($data)) . $data;
	}
	if ($parts & 2)
	{
		$p = 0;
		my $n = varint($changelog, \$p);
		my $zz = varint($changelog, \$p);
		my $kept = $magic . pack('V', 0) . varint_put($n)
		  . varint_put($data_base + (($zz & 1) ? -(($zz + 1) >> 1) : $zz >> 1))
		  . substr($changelog, $p);
		my $whole = ($parts & 8) ? tight_expand($kept, [ tight_tuples($data) ]) : $kept;
		substr($kept, 4, 4) = pack('V', crc32c(substr($whole, 8)));
		$changelog = $kept;
	}
	my $out = substr($rec, 0, $body) . join('', map { varint_put($_) } @counts);
	$out .= varint_put($seq) . varint_put(length($data)) if $parts & 1;
	$out .= varint_put($run_id) . varint_put(length($changelog)) if $parts & 2;
	$out .= varint_put($ulen) . $user . $data . $changelog;
	substr($out, 1, 2) = pack('C2', $parts & ~128, $kind & ~64);
	return $out;
}

# Replace item $item of $page (block $block of the open file $fh) with
# the record $new, its CRC32C made: the new item goes into the page's free
# space (pd_upper moves down by its aligned length), the line pointer
# names it
sub replace_record
{
	my ($fh, $block, $page, $item, $new) = @_;
	substr($new, 4, 4) = pack('V', crc32c(substr($new, 8)));
	my $upper = unpack('v', substr($page, 14, 2)) - ((length($new) + 7) & ~7);
	substr($page, $upper, length($new)) = $new;
	substr($page, 14, 2) = pack('v', $upper);
	substr($page, 24 + 4 * ($item - 1), 4) =
	  pack('V', $upper | (1 << 15) | (length($new) << 17));
	sysseek($fh, $block * 8192, 0) or die "seek: $!";
	syswrite($fh, $page) == 8192 or die "write: $!";
	close $fh;
}

# Damage record $item's run ($part: data or changelog) on block $block of
# $file, or (v1) rewrite the record in the first layout: a record is a
# header (flags, parts, kind, producer, the CRC32C of every byte after
# them; then, in the short layout (parts bit 4), the commit time and
# varints snapshot id, xid and duration in nanoseconds; in the first, int64
# snapshot id, uint64 xid, int64 commit time, double duration in ms),
# varint counts and lengths, the role name, the data run, the changelog
# run
for my $t (sort keys %log_damage)
{
	my ($how, $item, $part) = @{ $log_damage{$t} };
	my ($path, $block, $xids) = @{ $log_where{$t} };
	my @xids = split /,/, $xids;
	my $file = "$datadir/$path";
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	sysseek($fh, $block * 8192, 0) or die "seek: $!";
	my $page;
	sysread($fh, $page, 8192) == 8192 or die "read: $!";
	my $lp = unpack('V', substr($page, 24 + 4 * ($item - 1), 4));
	my ($off, $len) = ($lp & 0x7FFF, ($lp >> 17) & 0x7FFF);
	my $rec = substr($page, $off, $len);
	my $parts = unpack('C', substr($rec, 1, 1));
	ok($parts & 4, "$t: the record has the short header");
	# a page's later records are written against its first (parts bit
	# 32): the commit time a varint from its time
	ok(($parts & 32) == ($item > 1 ? 32 : 0),
		"$t: record $item is " . ($item > 1 ? '' : 'not ') . "written against the page's first");
	my $pos = ($parts & 32) ? 8 : 16;
	varint($rec, \$pos) if $parts & 32;
	my ($snap, $xid, $ns) = map { varint($rec, \$pos) } 1 .. 3;
	# and its ids from the first's (the kind byte's bit 128): its
	# transaction id a zigzag varint from the first record's
	if ($item > 1)
	{
		ok(unpack('C', substr($rec, 2, 1)) & 128, "$t: record ${item}'s ids are written against the first's");
		is($xid, 2 * ($xids[ $item - 1 ] - $xids[0]),
			"$t: record ${item}'s transaction id is the first's + " . ($xid / 2));
	}
	# its runs are kept bare (parts bit 128): without their magic numbers
	# and CRC32Cs, the changelog's base sequence number from the data's
	# (both 1-byte varints here); but for the damage to the record's CRC,
	# it is first made as earlier builds wrote it, which reads as well
	ok($parts & 128, "$t: the record's runs are kept bare");
	if ($how ne 'crc')
	{
		my $bare_len = length($rec);
		$rec = unbare($rec, $pos);
		is(length($rec) - $bare_len, ($parts & 2) ? 16 : 8,
			"$t: bare, the record's runs take 8 bytes fewer each");
		$parts = unpack('C', substr($rec, 1, 1));
	}
	if ($how eq 'v1')
	{
		my $v1 = pack('C4 V q< Q< a8 d<', unpack('C', $rec), $parts & ~4, unpack('C2', substr($rec, 2, 2)),
			0, $snap, $xid, substr($rec, 8, 8), $ns / 1e6) . substr($rec, $pos);
		replace_record($fh, $block, $page, $item, $v1);
		next;
	}
	varint($rec, \$pos) for 1 .. 3;
	my ($dlen, $clen, $clen_at) = (0, 0, 0);
	if ($parts & 1) { varint($rec, \$pos); $dlen = varint($rec, \$pos); }
	if ($parts & 2) { varint($rec, \$pos); $clen_at = $pos; $clen = varint($rec, \$pos); }
	my $ulen_at = $pos;
	my $ulen = varint($rec, \$pos);
	# ... and its role, the first record's, left out
	is($ulen, 0, "$t: record $item leaves its role out") if $parts & 32;
	my $run = $pos + $ulen + ($part eq 'data' ? 0 : $dlen);
	if ($how eq 'refs_v1')
	{
		ok(($parts & 24) == 24, "$t: the record's changelog keeps what differs from data rows");
		# the kept changelog: its -U is much shorter than the stream
		# expanded (changelog_bytes), whose -U and +U are whole rows
		my $kept = substr($rec, $run, $clen);
		my @data = tight_tuples(substr($rec, $run - $dlen, $dlen));
		my $old = tight_expand($kept, \@data);
		ok($clen + 20 < length($old),
			"$t: the changelog is kept in $clen bytes, expanded " . length($old));
		# earlier builds' form: each -U whole, each +U naming its data row
		# (0 and 1: the second is not the same reference in both forms)
		my $v1 = substr($rec, 0, $clen_at) . varint_put(length(tight_whole_refs($old, \@data)))
		  . substr($rec, $ulen_at, $run - $ulen_at) . tight_whole_refs($old, \@data);
		substr($v1, 1, 1) = pack('C', $parts & ~16);
		replace_record($fh, $block, $page, $item, $v1);
		next;
	}
	is(substr($rec, $run, 4), 'KMRP', "$t: the record's $part run is tight and packed, made whole")
	  unless $how eq 'crc';
	# a lookup commit's changelog rows that are its data rows name them
	# (parts bit 8); the byte flipped below is then such a reference
	ok($parts & 8, "$t: the record's changelog names the data rows it repeats")
	  if $part eq 'changelog';
	my $at = $how eq 'magic' ? $run : $run + ($part eq 'data' ? $dlen : $clen) - 2;
	substr($rec, $at, 1) = pack('C', unpack('C', substr($rec, $at, 1)) ^ 0xFF);
	if ($how ne 'crc')
	{
		replace_record($fh, $block, $page, $item, $rec);
		next;
	}
	substr($page, $off, $len) = $rec;
	sysseek($fh, $block * 8192, 0) or die "seek: $!";
	syswrite($fh, $page) == 8192 or die "write: $!";
	close $fh;
}
$node->start;
is($node->safe_psql('postgres', $v1_query), $v1_before,
	'sd_v1: a record in the first layout reads as it did');
is($node->safe_psql('postgres', $refs_query), $refs_before,
	'scl_refs: a record whose changelog names whole data rows only reads as it did');
$node->safe_psql('postgres', q{INSERT INTO sd_v1 VALUES (4, 'four');});
is($node->safe_psql('postgres', q{SELECT string_agg(id || v, ',' ORDER BY id) FROM sd_v1}),
	'1one,2two,3three,4four', 'sd_v1: the table reads, and takes commits after it');
is($node->safe_psql('postgres', q{SELECT string_agg(snapshot_id::text, ',' ORDER BY snapshot_id)
  FROM pk_snapshots('sd_v1')}), '1,2,3', 'sd_v1: its snapshots are there, the new one after');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snapshot_id, rowkind FROM pk_changes('scl', 1)");
is($out, '', 'scl: no changes from a damaged changelog run');
like($err, qr/ERROR:  XX001: corrupt .* of run -?\d+ in pkmerge table "scl"/,
	'scl: XX001 naming the run and the table');
like($err, qr/CRC32C mismatch/, 'scl: the detail says what is wrong');
is($node->safe_psql('postgres', q{SELECT string_agg(v, ',' ORDER BY id) FROM scl}), 'uno,two',
	'scl: the table reads (its data runs are whole)');
for my $q ("SELECT count(*) FROM sd_crc", "SELECT * FROM pk_snapshots('sd_crc')")
{
	($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$q");
	is($out, '', "sd_crc: nothing from a damaged commit log record ($q)");
	like($err, qr/ERROR:  XX001: corrupt commit log record in pkmerge table "sd_crc"/,
		"sd_crc: XX001 naming the table ($q)");
	like($err, qr/its CRC does not match/, "sd_crc: the detail says what is wrong ($q)");
}
# A commit after the damage reads the committed runs, the damaged
# record's among them: refused, XX001, nothing written
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO sd_crc VALUES (3, 'three')");
like($err, qr/ERROR:  XX001: corrupt commit log record in pkmerge table "sd_crc"/,
	'sd_crc: a commit after the damage is refused');
is($node->safe_psql('postgres', q{SELECT last_snapshot_id FROM pkchangelog.tables
  WHERE relid = 'sd_crc'::regclass}), '1', 'sd_crc: the refused commit made no snapshot');
my %compact_detail = (
	c_magic => qr/Not a compact run's magic number/,
	c_payload => qr/CRC32C mismatch/,
	c_short => qr/beyond the run's bytes/,
	c_count => qr/row count does not match the catalog/,
	c_nrows_crc => qr/row count does not match the catalog/,
	c_nrows_both => qr/more rows than fit in it/,
	t_magic => qr/Not a compact run's magic number/,
	t_payload => qr/CRC32C mismatch/,
	t_short => qr/CRC32C mismatch/,
	t_count => qr/row count does not match the catalog/,
	t_nrows_crc => qr/row count does not match the catalog/,
	t_nrows_both => qr/A row lies outside the block/,
	sd_magic => qr/Not a compact run's magic number/,
	sd_payload => qr/CRC32C mismatch/);
for my $t (sort keys %compact_detail)
{
	for my $q ("SELECT count(*), string_agg(v, ',') FROM $t",
		"SET enable_seqscan = off;\nSELECT v FROM $t WHERE id = 2")
	{
		($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$q");
		is($out, '', "$t: no rows from a damaged compact run ($q)");
		like($err, qr/ERROR:  XX001: corrupt .* of run -?\d+ in pkmerge table "$t"/,
			"$t: XX001 naming the run and the table ($q)");
		like($err, $compact_detail{$t}, "$t: the detail says what is wrong ($q)");
	}
}
unlike(slurp_file($node->logfile), qr/PANIC|TRAP:|terminated by signal|out of memory/,
	'compact runs: no crash and no allocation by a damaged length');

$node->stop;
done_testing();
