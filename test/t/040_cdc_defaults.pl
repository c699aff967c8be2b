# 040_cdc_defaults.pl: CDC tools on their defaults.
#
# - Debezium's default publication, FOR ALL TABLES (publication.autocreate.mode
#   = all_tables, named dbz_publication), is created in a database with the
#   extension, and the extension is created in a database that has one.
# - A pgoutput client of that publication (pg_recvlogical with pgoutput,
#   its binary messages parsed here as any pgoutput client reads them)
#   receives the pkmerge tables' changes and no message of the extension's
#   catalog (schema pkchangelog), although compactions and commits write
#   the catalog meanwhile.
# - With default settings, a pkmerge table has replica identity FULL: each
#   UPDATE and DELETE of a lookup table carries the complete old row,
#   marked 'O', so a SUM(amount) GROUP BY store_id kept from the stream
#   (old subtracted, new added) equals the table's; a none table's DELETEs
#   carry the row deleted ('O'), its UPDATEs no old row (none writes no
#   -U).  After ALTER TABLE ... REPLICA IDENTITY DEFAULT a lookup table's
#   old rows are its key, sent ('K') only where the key changed, as heap's
#   are.
# - A PostgreSQL subscriber of the publication (copy_data on) in a
#   database with the extension gets the tables' rows, and not one row of
#   the publisher's catalog: the catalog tables' initial copies are empty
#   and their changes are never decoded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('cdc');
$node->init(allows_streaming => 'logical');
$node->append_conf('postgresql.conf', q{
max_worker_processes = 16
max_logical_replication_workers = 6
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE early');
$node->safe_psql('postgres', 'CREATE DATABASE sub');
my $connstr = $node->connstr() . ' dbname=src';

# a FOR ALL TABLES publication before the extension, and after it
$node->safe_psql('early', 'CREATE PUBLICATION dbz_publication FOR ALL TABLES');
$node->safe_psql('early', 'CREATE EXTENSION pkchangelog');
is($node->safe_psql('early', q{
SELECT count(*) FROM pg_class
WHERE relnamespace = 'pkchangelog'::regnamespace AND relkind = 'r' AND relrewrite <> oid}),
	'0', 'CREATE EXTENSION in a database with a FOR ALL TABLES publication marks every catalog table');

my $cols = 'order_id bigint PRIMARY KEY, store_id int, amount numeric(12,2)';
$node->safe_psql('src', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE o_lookup ($cols) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE o_none ($cols) USING pkmerge;
CREATE TABLE o_dflt ($cols) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE h_orders ($cols);
CREATE PUBLICATION dbz_publication FOR ALL TABLES;
});
is($node->safe_psql('src', q{
SELECT string_agg(relname || ':' || relreplident::text, ' ' ORDER BY relname) FROM pg_class
WHERE relname IN ('o_lookup', 'o_none', 'o_dflt', 'h_orders')}),
	'h_orders:d o_dflt:f o_lookup:f o_none:f',
	'pkmerge tables get replica identity FULL, a heap table keeps DEFAULT');

# a pgoutput client's slot
$node->safe_psql('src', "SELECT pg_create_logical_replication_slot('dbz', 'pgoutput')");

# the subscriber: the publisher's tables by name (FOR ALL TABLES), the
# catalog's through the extension; its own catalog holds no pkmerge table
$node->safe_psql('sub', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE o_lookup ($cols);
CREATE TABLE o_none ($cols);
CREATE TABLE o_dflt ($cols);
CREATE TABLE h_orders ($cols);
});
my $catalog_rows = q{
SELECT (SELECT count(*) FROM pkchangelog.tables) + (SELECT count(*) FROM pkchangelog.runs)
	 + (SELECT count(*) FROM pkchangelog.snapshots)};
is($node->safe_psql('sub', $catalog_rows), '0', 'the subscriber\'s catalog is empty');

# the workload, on every table alike, on keys $base + 1 to $base + 40
sub workload
{
	my ($base) = @_;
	for my $t ('o_lookup', 'o_none', 'o_dflt', 'h_orders')
	{
		$node->safe_psql('src', $_) for (
			"INSERT INTO $t SELECT $base + g, g % 4, g * 10 FROM generate_series(1, 40) g",
			"UPDATE $t SET amount = amount - 3 WHERE order_id % 3 = 0",
			"UPDATE $t SET store_id = store_id + 1 WHERE order_id % 5 = 0",
			"DELETE FROM $t WHERE order_id % 7 = 0",
			"UPDATE $t SET order_id = order_id + 1000 WHERE order_id = $base + 11");
		# an overwriting INSERT: an upsert on pkmerge (a heap subscriber
		# takes it where the stream is an UPDATE: not none's +I), ON
		# CONFLICT on heap
		next if $t eq 'o_none';
		$node->safe_psql('src', $t eq 'h_orders'
			? "INSERT INTO $t VALUES ($base + 2, 9, 2.5) ON CONFLICT (order_id) DO UPDATE SET store_id = 9, amount = 2.5"
			: "INSERT INTO $t VALUES ($base + 2, 9, 2.5)");
	}
	# the catalog is written by compactions and commits meanwhile
	$node->safe_psql('src', "SELECT pk_compact('o_lookup', true), pk_compact('o_none')");
}

workload(0);
$node->safe_psql('src', 'ALTER TABLE o_dflt REPLICA IDENTITY DEFAULT');
$node->safe_psql('src', $_) for (
	'UPDATE o_dflt SET amount = 0 WHERE order_id = 1',
	'UPDATE o_dflt SET order_id = 3000 WHERE order_id = 3',
	'DELETE FROM o_dflt WHERE order_id = 4');
my $endpos = $node->safe_psql('src', 'SELECT pg_current_wal_insert_lsn()');

# ---- the pgoutput client -------------------------------------------------
my $file = "${PostgreSQL::Test::Utils::tmp_check}/dbz.bin";
command_ok([ 'pg_recvlogical', '-d', $connstr, '-S', 'dbz', '--start', '-E', $endpos,
	'--no-loop', '-f', $file, '-o', 'proto_version=1', '-o', 'publication_names=dbz_publication' ],
	'pg_recvlogical streams the publication with pgoutput');
open my $fh, '<:raw', $file or die "cannot read $file: $!";
my $bin = do { local $/; <$fh> };
close $fh;

# pgoutput's protocol, version 1: each message as pg_recvlogical writes it,
# followed by a newline
my $pos = 0;
sub take { my ($n) = @_; my $s = substr($bin, $pos, $n); $pos += $n; return $s; }
sub int8 { return unpack('c', take(1)); }
sub int16 { return unpack('n', take(2)); }
sub int32 { return unpack('N', take(4)); }
sub cstr { my $end = index($bin, "\0", $pos); my $s = substr($bin, $pos, $end - $pos); $pos = $end + 1; return $s; }
sub tuple
{
	my @v;
	for (1 .. int16())
	{
		my $k = take(1);
		if ($k eq 't') { push @v, take(int32()); }
		elsif ($k eq 'n') { push @v, undef; }
		elsif ($k eq 'u') { push @v, '(unchanged)'; }
		else { die "unexpected column kind '$k' at $pos"; }
	}
	return \@v;
}
my (%rel, @changes);
while ($pos < length($bin))
{
	my $type = take(1);
	if ($type eq 'B') { take(20); }
	elsif ($type eq 'C') { take(25); }
	elsif ($type eq 'O') { take(8); cstr(); }
	elsif ($type eq 'Y') { int32(); cstr(); cstr(); }
	elsif ($type eq 'R')
	{
		my $id = int32();
		my ($nsp, $name) = (cstr(), cstr());
		my $ident = take(1);
		my @att;
		for (1 .. int16()) { int8(); push @att, cstr(); int32(); int32(); }
		$rel{$id} = { name => "$nsp.$name", ident => $ident, att => \@att };
	}
	elsif ($type eq 'I') { my $id = int32(); take(1); push @changes, { rel => $id, op => 'I', new => tuple() }; }
	elsif ($type eq 'U')
	{
		my %c = (rel => int32(), op => 'U');
		my $k = take(1);
		if ($k eq 'K' || $k eq 'O') { $c{oldkind} = $k; $c{old} = tuple(); $k = take(1); }
		die "no new tuple in an UPDATE at $pos" unless $k eq 'N';
		$c{new} = tuple();
		push @changes, \%c;
	}
	elsif ($type eq 'D') { my $id = int32(); my $k = take(1); push @changes, { rel => $id, op => 'D', oldkind => $k, old => tuple() }; }
	elsif ($type eq 'T') { my $n = int32(); int8(); int32() for 1 .. $n; }
	else { die sprintf("unexpected pgoutput message '%s' at %d", $type, $pos - 1); }
	die "no newline after a message at $pos" unless take(1) eq "\n";
}
my %by = map { $_->{name} => $_ } values %rel;
ok(@changes > 100, 'the client received the changes (' . scalar(@changes) . ')');
is(join(' ', sort grep { /^pkchangelog\./ } keys %by), '',
	'no relation of the extension\'s catalog reached the client');
is(join(' ', sort keys %by), 'public.h_orders public.o_dflt public.o_lookup public.o_none',
	'the pkmerge tables and the heap table did');
is($by{'public.o_lookup'}{ident}, 'f', 'o_lookup is described with replica identity FULL');
is($by{'public.o_none'}{ident}, 'f', 'so is o_none');

# per table: the old rows the client got, and the totals it keeps
sub of { my ($name) = @_; return grep { $rel{ $_->{rel} }{name} eq $name } @changes; }
my @lookup = of('public.o_lookup');
my @lookup_ud = grep { $_->{op} ne 'I' } @lookup;
is(scalar(@lookup_ud), 28, 'o_lookup: its 21 updates, 5 deletes, a key moved and an upsert over a row arrived as 28 UPDATEs and DELETEs');
is(scalar(grep { ($_->{oldkind} // '') ne 'O' || grep({ !defined } @{ $_->{old} }) } @lookup_ud), 0,
	'o_lookup: every UPDATE and DELETE carries the complete old row (O)');
my %total;
for my $c (@lookup)
{
	$total{ $c->{old}[1] } -= $c->{old}[2] if $c->{old};
	$total{ $c->{new}[1] } += $c->{new}[2] if $c->{new};
}
my $client = join("\n", map { "$_|" . sprintf('%.2f', $total{$_}) } grep { $total{$_} != 0 } sort { $a <=> $b } keys %total);
is($client, $node->safe_psql('src',
	'SELECT store_id, sum(amount) FROM o_lookup GROUP BY 1 HAVING sum(amount) <> 0 ORDER BY 1'),
	'o_lookup: the client\'s SUM(amount) GROUP BY store_id equals the table\'s');

my @none = of('public.o_none');
my @none_del = grep { $_->{op} eq 'D' } @none;
ok(@none_del >= 5, 'o_none: deletes arrived');
is(scalar(grep { $_->{oldkind} ne 'O' || grep({ !defined } @{ $_->{old} }) } @none_del), 0,
	'o_none: a DELETE carries the row it deleted (O)');
is(scalar(grep { $_->{op} eq 'U' && $_->{old} } @none), 0, 'o_none: no UPDATE carries an old row');

# o_dflt after REPLICA IDENTITY DEFAULT: the last four changes (the key
# moved is a DELETE and an INSERT)
my @dflt = (of('public.o_dflt'))[-4 .. -1];
is_deeply([ map { [ $_->{op}, $_->{oldkind} // '', $_->{old} ? $_->{old} : [] ] } @dflt ],
	[ [ 'U', '', [] ], [ 'D', 'K', [ 3, undef, undef ] ], [ 'I', '', [] ], [ 'D', 'K', [ 4, undef, undef ] ] ],
	'o_dflt with replica identity DEFAULT: no old row for an update that keeps the key; the key alone for a moved key and a delete');

# ---- the subscriber ----------------------------------------------------
$node->safe_psql('src', "SELECT pg_create_logical_replication_slot('sub', 'pgoutput')");
$node->safe_psql('sub', qq{
CREATE SUBSCRIPTION sub CONNECTION '$connstr' PUBLICATION dbz_publication
	WITH (create_slot = false, slot_name = 'sub', copy_data = true)});
$node->poll_query_until('sub',
	"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
  or die 'the initial copy did not finish';
workload(100);
$node->wait_for_catchup('sub');
for my $t ('o_lookup', 'o_none', 'o_dflt', 'h_orders')
{
	my $q = "SELECT * FROM $t ORDER BY order_id";
	is($node->safe_psql('sub', $q), $node->safe_psql('src', $q), "the subscriber's $t equals the source's");
}
is($node->safe_psql('sub', q{
SELECT count(*) FROM pg_subscription_rel WHERE srrelid::regclass::text LIKE 'pkchangelog.%'}),
	$node->safe_psql('src', q{
SELECT count(*) FROM pg_publication_tables WHERE pubname = 'dbz_publication' AND schemaname = 'pkchangelog'}),
	'the catalog tables were in the subscription (FOR ALL TABLES lists them)');
is($node->safe_psql('sub', $catalog_rows), '0',
	'and not one row of the publisher\'s catalog reached the subscriber');
ok($node->safe_psql('src', $catalog_rows) > 0, 'while the publisher\'s catalog holds rows');

done_testing();
