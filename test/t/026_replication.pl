# 026_replication.pl: pkmerge tables replicate through PostgreSQL's own
# logical replication (pgoutput), changes decoded from the extension's WAL
# records.
#
# - A lookup table (copy_data = true, streaming = on) and a full-compaction
#   table (copy_data = false) replicate into heap tables of another
#   database after inserts, blind-overwrite INSERTs of existing keys,
#   updates (also of key columns), deletes, MERGE, COPY and TRUNCATE: each
#   subscriber table equals its source,
#   and an ENABLE ALWAYS row trigger that adds NEW.amount and subtracts
#   OLD.amount keeps per-store totals equal to the source's
#   SUM(amount) GROUP BY store_id (the retraction reached it).
# - A none table and the lookup table replicate into pkmerge tables: the
#   apply worker's inserts are upserts, its updates and deletes find rows
#   through the key index; both converge, and the lookup target's own
#   stream is a valid retract stream (check_changelog).  The pkmerge
#   subscribers have secondary indexes, a unique one among them: the apply
#   worker's writes keep them (an index scan finds what a sequential scan
#   finds), and no replaced version holds a unique value against its
#   successor (the apply worker would stop on a false 23505).
# - An immediate stop between the commits and their decoding loses nothing
#   and doubles nothing: after the restart the subscribers converge.
# - A transaction of 1M changes (500k -U/+U pairs) beyond
#   logical_decoding_work_mem is streamed to a subscriber (streaming = on)
#   and spilled to disk by a slot without streaming, and arrives whole.
# - Keys equal but stored differently (numeric 10 and 10.00), rewritten
#   through pk_write's +U, UPDATE, an upserting INSERT and MERGE, reach
#   heap and pkmerge subscribers as the values written last, from a pkmerge
#   source and from a heap one.
# - pg_recvlogical receives the pkchangelog plugin's JSON.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('repl');
$node->init(allows_streaming => 'logical');
$node->append_conf('postgresql.conf', q{
max_worker_processes = 20
max_logical_replication_workers = 10
max_sync_workers_per_subscription = 2
logical_decoding_work_mem = 64kB
});
$node->start;
my $connstr = $node->connstr() . ' dbname=src';

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst_heap');
$node->safe_psql('postgres', 'CREATE DATABASE dst_pk');

my $columns = 'order_id bigint PRIMARY KEY, store_id int, amount numeric(12,2)';
$node->safe_psql('src', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE o_lookup ($columns) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE o_full ($columns) USING pkmerge WITH (changelog_producer = 'full-compaction');
CREATE TABLE o_none ($columns) USING pkmerge;
CREATE TABLE o_big ($columns) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE o_keys (k numeric PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE h_keys (k numeric PRIMARY KEY, v int);
CREATE PUBLICATION p_lookup FOR TABLE o_lookup, o_big, o_keys;
CREATE PUBLICATION p_full FOR TABLE o_full;
CREATE PUBLICATION p_pk FOR TABLE o_none, o_lookup, o_keys, h_keys;
-- rows before the subscriptions: copied where copy_data = true
INSERT INTO o_lookup SELECT g, g % 10, g FROM generate_series(1, 1000) g;
INSERT INTO o_none SELECT g, g % 10, g FROM generate_series(1, 1000) g;
});

# heap subscribers, each with a trigger-maintained total per store
$node->safe_psql('dst_heap', qq{
CREATE TABLE o_lookup ($columns);
CREATE TABLE o_full ($columns);
CREATE TABLE o_big ($columns);
CREATE TABLE o_keys (k numeric PRIMARY KEY, v int);
CREATE TABLE totals (tab text, store_id int, total numeric NOT NULL,
	PRIMARY KEY (tab, store_id));
CREATE FUNCTION track() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO public.totals AS t VALUES (TG_TABLE_NAME, OLD.store_id, -OLD.amount)
		ON CONFLICT (tab, store_id) DO UPDATE SET total = t.total + EXCLUDED.total;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO public.totals AS t VALUES (TG_TABLE_NAME, NEW.store_id, NEW.amount)
		ON CONFLICT (tab, store_id) DO UPDATE SET total = t.total + EXCLUDED.total;
	END IF;
	RETURN NULL;
END \$\$;
CREATE FUNCTION clear() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	DELETE FROM public.totals WHERE tab = TG_TABLE_NAME;
	RETURN NULL;
END \$\$;
});
for my $t ('o_lookup', 'o_full')
{
	$node->safe_psql('dst_heap', qq{
CREATE TRIGGER track AFTER INSERT OR UPDATE OR DELETE ON $t FOR EACH ROW EXECUTE FUNCTION track();
CREATE TRIGGER clear AFTER TRUNCATE ON $t FOR EACH STATEMENT EXECUTE FUNCTION clear();
ALTER TABLE $t ENABLE ALWAYS TRIGGER track;
ALTER TABLE $t ENABLE ALWAYS TRIGGER clear;
});
}
$node->safe_psql('dst_pk', qq{
CREATE EXTENSION pkchangelog;
CREATE TABLE o_none ($columns) USING pkmerge;
CREATE TABLE o_lookup ($columns) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE o_keys (k numeric PRIMARY KEY, v int) USING pkmerge WITH (changelog_producer = 'lookup');
CREATE TABLE h_keys (k numeric PRIMARY KEY, v int) USING pkmerge;
CREATE UNIQUE INDEX o_lookup_store_order ON o_lookup (store_id, order_id);
CREATE INDEX o_none_amount ON o_none (amount);
});
$node->safe_psql('dst_pk', slurp_file("$FindBin::Bin/../setup/changelog_checker.sql"));

# subscriptions in the same cluster: their slots made first
for my $s ('s_lookup', 's_full', 's_pk')
{
	$node->safe_psql('src', "SELECT pg_create_logical_replication_slot('$s', 'pgoutput')");
}
$node->safe_psql('dst_heap', qq{
CREATE SUBSCRIPTION s_lookup CONNECTION '$connstr' PUBLICATION p_lookup
	WITH (create_slot = false, slot_name = 's_lookup', copy_data = true, streaming = on);
CREATE SUBSCRIPTION s_full CONNECTION '$connstr' PUBLICATION p_full
	WITH (create_slot = false, slot_name = 's_full', copy_data = false);
});
$node->safe_psql('dst_pk', qq{
CREATE SUBSCRIPTION s_pk CONNECTION '$connstr' PUBLICATION p_pk
	WITH (create_slot = false, slot_name = 's_pk', copy_data = true);
});
for my $db ('dst_heap', 'dst_pk')
{
	$node->poll_query_until($db,
		"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')")
	  or die "the initial copy into $db did not finish";
}

my $copy_file = "${PostgreSQL::Test::Utils::tmp_check}/copy.csv";
open my $fh, '>', $copy_file or die "cannot write $copy_file: $!";
print $fh join("\n", map { "$_," . ($_ % 7) . ",$_.50" } 900 .. 1100), "\n";
close $fh;

# the same workload on every source table, a statement per transaction
sub workload
{
	my ($t) = @_;
	$node->safe_psql('src', $_) for (
		"INSERT INTO $t SELECT g, g % 10, g * 2 FROM generate_series(1001, 2000) g",
		"INSERT INTO $t SELECT g, (g + 3) % 10, 7 FROM generate_series(1, 300) g",
		"UPDATE $t SET amount = amount + 1 WHERE order_id % 3 = 0",
		"UPDATE $t SET store_id = store_id + 1 WHERE order_id % 5 = 0",
		"UPDATE $t SET order_id = order_id + 100000 WHERE order_id % 11 = 0",
		"DELETE FROM $t WHERE order_id % 13 = 0",
		qq{MERGE INTO $t USING (SELECT g FROM generate_series(1, 3000, 2) g) x ON $t.order_id = x.g
		   WHEN MATCHED AND x.g % 4 = 1 THEN DELETE
		   WHEN MATCHED THEN UPDATE SET amount = amount * 2
		   WHEN NOT MATCHED THEN INSERT VALUES (x.g, x.g % 9, 1)},
		"COPY $t FROM '$copy_file' (FORMAT csv)",
		"BEGIN; INSERT INTO $t VALUES (1, 1, 1); SAVEPOINT a; DELETE FROM $t; ROLLBACK TO a; UPDATE $t SET amount = 2 WHERE order_id = 1; COMMIT");
}

# what the subscriber must equal
sub rows
{
	my ($db, $t) = @_;
	return $node->safe_psql($db, "SELECT * FROM $t ORDER BY order_id");
}

sub sums
{
	my ($t) = @_;
	return $node->safe_psql('src',
		"SELECT store_id, sum(amount) FROM $t GROUP BY 1 HAVING sum(amount) <> 0 ORDER BY 1");
}

sub totals
{
	my ($t) = @_;
	return $node->safe_psql('dst_heap',
		"SELECT store_id, total FROM totals WHERE tab = '$t' AND total <> 0 ORDER BY 1");
}

sub caught_up
{
	$node->wait_for_catchup($_) for ('s_lookup', 's_full', 's_pk');
}

sub check_all
{
	my ($when) = @_;
	caught_up();
	for my $t ('o_lookup', 'o_full')
	{
		my $src = rows('src', $t);
		is(rows('dst_heap', $t), $src, "$when: heap subscriber of $t equals the source");
		is(totals($t), sums($t), "$when: trigger totals of $t equal SUM(amount) GROUP BY store_id");
	}
	for my $t ('o_none', 'o_lookup')
	{
		is(rows('dst_pk', $t), rows('src', $t), "$when: pkmerge subscriber of $t equals the source");
	}
	is($node->safe_psql('dst_pk', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM o_lookup WHERE store_id > -1000;
SELECT count(*) FROM o_none WHERE amount > -1000;}),
		$node->safe_psql('dst_pk', q{
SELECT count(*) FROM o_lookup WHERE store_id IS NOT NULL;
SELECT count(*) FROM o_none WHERE amount IS NOT NULL;}),
		"$when: the pkmerge subscribers' indexes find every row");
	is($node->safe_psql('dst_pk', "SELECT check_changelog('o_lookup')"), 'ok',
		"$when: the pkmerge subscriber's own lookup stream is a valid retract stream");
}

workload($_) for ('o_lookup', 'o_full', 'o_none');
# full-compaction: its changes are decoded from its compaction's transaction
$node->safe_psql('src', "SELECT pk_compact('o_full', true)");
isnt(totals('o_lookup'), '', 'totals are not empty');
check_all('after the workload');

# keys equal but stored differently (10 and 10.00): every subscriber holds
# the value written last, from a pkmerge source (the -U carries the value
# replaced, the +U the new one) and from a heap source into pkmerge
$node->safe_psql('src', $_) for (
	'INSERT INTO o_keys VALUES (10, 1), (20, 2), (30, 3), (40, 4)',
	"SELECT pk_write('o_keys', '+U', ROW(10.00, 11)::o_keys)",
	'UPDATE o_keys SET k = 20.0, v = 21 WHERE k = 20',
	'INSERT INTO o_keys VALUES (30.000, 31)',
	'MERGE INTO o_keys USING (VALUES (40.0)) s(k) ON o_keys.k = s.k
	 WHEN MATCHED THEN UPDATE SET k = s.k, v = 41',
	'INSERT INTO h_keys VALUES (10, 1), (20, 2), (30, 3), (40, 4)',
	'UPDATE h_keys SET k = 10.00, v = 11 WHERE k = 10',
	'UPDATE h_keys SET k = 20.0, v = 21 WHERE k = 20',
	'INSERT INTO h_keys VALUES (30.000, 31) ON CONFLICT (k) DO UPDATE SET k = EXCLUDED.k, v = EXCLUDED.v',
	'MERGE INTO h_keys USING (VALUES (40.0)) s(k) ON h_keys.k = s.k
	 WHEN MATCHED THEN UPDATE SET k = s.k, v = 41');
caught_up();
my $keys = 'SELECT k::text, v FROM %s ORDER BY k';
my $written = "10.00|11\n20.0|21\n30.000|31\n40.0|41";
is($node->safe_psql('src', sprintf($keys, 'o_keys')), $written,
	'the pkmerge source holds the key values written last');
is($node->safe_psql('src', sprintf($keys, 'h_keys')), $written,
	'the heap source holds the key values written last');
is($node->safe_psql('dst_heap', sprintf($keys, 'o_keys')), $node->safe_psql('src', sprintf($keys, 'o_keys')),
	'the heap subscriber of a pkmerge table holds the same key values');
for my $t ('o_keys', 'h_keys')
{
	is($node->safe_psql('dst_pk', sprintf($keys, $t)), $node->safe_psql('src', sprintf($keys, $t)),
		"the pkmerge subscriber of $t holds the same key values");
}

# TRUNCATE, and rows after it in the same transaction
for my $t ('o_lookup', 'o_full', 'o_none')
{
	$node->safe_psql('src', "BEGIN; TRUNCATE $t; INSERT INTO $t VALUES (1, 1, 10), (2, 2, 20); COMMIT");
	$node->safe_psql('src', "INSERT INTO $t VALUES (2, 3, 30), (3, 3, 3)");
}
$node->safe_psql('src', "SELECT pk_compact('o_full', true)");
check_all('after TRUNCATE');

# pg_recvlogical with the pkchangelog plugin, end to end
$node->safe_psql('src', "SELECT pg_create_logical_replication_slot('recv', 'pkchangelog')");
$node->safe_psql('src', 'INSERT INTO o_lookup VALUES (777, 7, 70)');
$node->safe_psql('src', 'UPDATE o_lookup SET amount = 77 WHERE order_id = 777');
my $endpos = $node->safe_psql('src', 'SELECT pg_current_wal_insert_lsn()');
my $recv_file = "${PostgreSQL::Test::Utils::tmp_check}/recv.json";
command_ok([ 'pg_recvlogical', '-d', $connstr, '-S', 'recv', '--start', '-E', $endpos,
	'--no-loop', '-f', $recv_file, '-o', 'format=json', '-o', 'skip-empty-xacts=1' ],
	'pg_recvlogical streams the slot up to its end position');
like(slurp_file($recv_file),
	qr/^\{"table":"public\.o_lookup","snapshot":\d+,"rowkind":"-U","row":\{"order_id":777,"store_id":7,"amount":70\.00\}\}\n\{"table":"public\.o_lookup","snapshot":\d+,"rowkind":"\+U","row":\{"order_id":777,"store_id":7,"amount":77\.00\}\}$/m,
	'pg_recvlogical wrote the -U and its +U as JSON');
$node->safe_psql('src', "SELECT pg_drop_replication_slot('recv')");

# an immediate stop after commits, before the walsenders sent them
$node->safe_psql('dst_heap', 'ALTER SUBSCRIPTION s_lookup DISABLE; ALTER SUBSCRIPTION s_full DISABLE');
$node->safe_psql('dst_pk', 'ALTER SUBSCRIPTION s_pk DISABLE');
workload($_) for ('o_lookup', 'o_full', 'o_none');
$node->safe_psql('src', "SELECT pk_compact('o_full', true)");
$node->stop('immediate');
$node->start;
$node->safe_psql('dst_heap', 'ALTER SUBSCRIPTION s_lookup ENABLE; ALTER SUBSCRIPTION s_full ENABLE');
$node->safe_psql('dst_pk', 'ALTER SUBSCRIPTION s_pk ENABLE');
check_all('after an immediate stop');

# 1M changes in one transaction: 500k -U/+U pairs of a lookup table,
# beyond logical_decoding_work_mem (64kB): streamed to a heap subscriber
# (s_lookup, streaming = on), spilled to disk by a test_decoding slot
$node->safe_psql('src', "SELECT pg_create_logical_replication_slot('big_td', 'test_decoding')");
$node->safe_psql('src', 'INSERT INTO o_big SELECT g, g % 10, 1 FROM generate_series(1, 500000) g');
$node->safe_psql('src', 'UPDATE o_big SET amount = amount + order_id % 7');
is($node->safe_psql('src', q{
SELECT count(*) FROM pk_changes('o_big', pk_current_snapshot('o_big') - 1)}),
	'1000000', 'the big transaction made 1M changes');
$node->wait_for_catchup('s_lookup');
my $digest = 'SELECT count(*), sum(amount), sum(order_id * amount), sum(store_id * amount) FROM o_big';
is($node->safe_psql('dst_heap', $digest), $node->safe_psql('src', $digest),
	'the heap subscriber of the big transaction equals the source');
is($node->safe_psql('src', q{
SELECT count(*) FROM pg_logical_slot_get_changes('big_td', NULL, NULL)
WHERE data LIKE 'table public.o_big: UPDATE: old-key: %new-tuple: %'}),
	'500000', 'test_decoding decoded the 500k -U/+U pairs as UPDATEs with their old rows');
# slot statistics reach the view when the decoding process reports them
ok($node->poll_query_until('src', q{
SELECT stream_txns > 0 FROM pg_stat_replication_slots WHERE slot_name = 's_lookup'}),
	'the streaming subscription received the transaction streamed');
ok($node->poll_query_until('src', q{
SELECT spill_txns > 0 FROM pg_stat_replication_slots WHERE slot_name = 'big_td'}),
	'without streaming, decoding spilled it to disk beyond logical_decoding_work_mem');

done_testing();
