#!/usr/bin/env bash
# Logical decoding, pkmerge beside heap on the same run:
#
# - decoding throughput: 1M changes of a lookup table (500k rows updated
#   in one transaction: 500k -U/+U pairs) through the pkchangelog plugin,
#   against test_decoding decoding 1M heap updates (REPLICA IDENTITY FULL)
#   of one transaction; pg_logical_slot_peek_changes counted, better of 2.
#   Target: pkmerge at least 2x faster (changes/s).
# - WAL bytes per updated row, everything included (run pages, changelog
#   runs and the change records, a logical slot existing; full-compaction:
#   its compaction too): a
#   100k-row table of each producer updated in one transaction, against
#   heap with REPLICA IDENTITY FULL.  Goal: at most heap's.
# - commit latency the change records add: pgbench, one client, a 1-row
#   UPDATE of a lookup table, average latency at wal_level = logical with
#   a logical slot
#   against replica (the server restarted between).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_producers || exit 0
have_function pk_changes || exit 0
pairs=$(scaled 500000 1000)
heap_updates=$((2 * pairs))
wal_rows=$(scaled 100000 1000)

# seconds to count slot SLOT's changes up to LSN (peek: repeatable)
peek_seconds()
{
	time_sql "" "SELECT count(*) FROM pg_logical_slot_peek_changes('$1', '$2', NULL);"
}

# decoding throughput: each slot sees its own table's transaction alone
# (made after the other's, read up to the end of its own)
sql "$(create_sql dec_pk "$(producer_spec lookup)") INSERT INTO dec_pk $(rows_sql 1 "$pairs");
	$(create_sql dec_heap "") ALTER TABLE dec_heap REPLICA IDENTITY FULL;
	INSERT INTO dec_heap $(rows_sql 1 "$heap_updates"); VACUUM ANALYZE dec_heap; CHECKPOINT;" >/dev/null
sql "SELECT pg_create_logical_replication_slot('bench_pk', 'pkchangelog');" >/dev/null
sql "UPDATE dec_pk SET amount = amount + 1;"
pk_lsn=$(sql "SELECT pg_current_wal_insert_lsn();")
sql "SELECT pg_create_logical_replication_slot('bench_heap', 'test_decoding');" >/dev/null
sql "UPDATE dec_heap SET amount = amount + 1;"
heap_lsn=$(sql "SELECT pg_current_wal_insert_lsn();")
pk_changes=$(sql "SELECT count(*) FROM pg_logical_slot_peek_changes('bench_pk', '$pk_lsn', NULL)
	WHERE data LIKE 'public.dec_pk %';")
heap_changes=$(sql "SELECT count(*) FROM pg_logical_slot_peek_changes('bench_heap', '$heap_lsn', NULL)
	WHERE data LIKE 'table public.dec_heap: UPDATE%';")
pk_s=$(best_of min "$(peek_seconds bench_pk "$pk_lsn")" "$(peek_seconds bench_pk "$pk_lsn")")
heap_s=$(best_of min "$(peek_seconds bench_heap "$heap_lsn")" "$(peek_seconds bench_heap "$heap_lsn")")
pk_rate=$(div "$pk_changes" "$pk_s")
heap_rate=$(div "$heap_changes" "$heap_s")
line "decoding $(human "$pk_changes") changes" \
	"$(side_fig "heap" "$heap_rate" changes/s)" \
	"$(side_fig "$BENCH_AM" "$pk_rate" changes/s)" \
	"$(printf '%-15s %6.2fx' "$BENCH_AM/heap" "$(div "$pk_rate" "$heap_rate")")" \
	"(target >= 2x; heap: test_decoding, $(human "$heap_changes") updates, REPLICA IDENTITY FULL)"
sql "SELECT pg_drop_replication_slot('bench_pk'); SELECT pg_drop_replication_slot('bench_heap');
	DROP TABLE dec_pk, dec_heap;" >/dev/null

# WAL bytes per updated row, with a logical slot in the database so that
# pkmerge writes its change records (without one it writes none)
sql "SELECT pg_create_logical_replication_slot('bench_wal', 'test_decoding');" >/dev/null
wal_per_row()
{
	local spec=$1 extra=$2
	sql "$(load_sql dec_wal "$spec" "$wal_rows")" >/dev/null
	[ "$spec" = "" ] && sql "ALTER TABLE dec_wal REPLICA IDENTITY FULL;" >/dev/null
	sql "SELECT pg_current_wal_insert_lsn() AS l0 \\gset
		UPDATE dec_wal SET amount = amount + 1;
		$extra
		SELECT (pg_current_wal_insert_lsn() - :'l0'::pg_lsn) / $wal_rows;" | tail -1
}
heap_wal=$(wal_per_row "" "")
for producer in none input lookup full-compaction; do
	extra=""
	[ $producer = full-compaction ] && extra="SELECT pk_compact('dec_wal', true);"
	bytes=$(wal_per_row "$(producer_spec $producer)" "$extra")
	line "WAL per updated row" "$(side_fig "heap" "$heap_wal" B)" \
		"$(side_fig "$BENCH_AM" "$bytes" B)" \
		"$(printf '%-15s %6.2fx' "$producer/heap" "$(div "$bytes" "$heap_wal")")" \
		"(goal <= 1x)"
done
sql "SELECT pg_drop_replication_slot('bench_wal'); DROP TABLE dec_wal;" >/dev/null

# commit latency, logical (with a logical slot, so that the change records
# are written) against replica (where no logical slot may exist)
latency_ms()
{
	local script=$BENCH_SCRATCH/dec_latency.sql
	printf '%s\n' '\set id random(1, :rows)' \
		"UPDATE dec_lat SET amount = amount + 1 WHERE id = :id;" >"$script"
	pg_bench -n -T "$(bench_seconds)" -c 1 -D rows="$wal_rows" -f "$script" |
		awk '/^latency average/ { print $4 }'
}
restart_with()
{
	sql "ALTER SYSTEM SET wal_level = '$1';" >/dev/null
	run_as pg_ctl -D "$BENCH_PGDATA" -w -m fast restart >/dev/null
}
sql "$(load_sql dec_lat "$(producer_spec lookup)" "$wal_rows")" >/dev/null
# alternately, each after a restart, so both start from the same caches
figs_logical=() figs_replica=()
for level in replica logical replica logical; do
	restart_with $level
	if [ $level = logical ]; then
		sql "SELECT pg_create_logical_replication_slot('bench_lat', 'test_decoding');" >/dev/null
		figs_logical+=("$(latency_ms)")
		sql "SELECT pg_drop_replication_slot('bench_lat');" >/dev/null
	else
		figs_replica+=("$(latency_ms)")
	fi
done
logical_ms=$(best_of min "${figs_logical[@]}")
replica_ms=$(best_of min "${figs_replica[@]}")
sql "ALTER SYSTEM RESET wal_level;" >/dev/null
run_as pg_ctl -D "$BENCH_PGDATA" -w -m fast restart >/dev/null
line "1-row UPDATE latency, lookup" "$(printf '%-7s %12s' replica "$(fmt "$replica_ms" ms)")" \
	"$(printf '%-7s %12s' logical "$(fmt "$logical_ms" ms)")" \
	"$(printf '%-15s %6.2fx' logical/replica "$(div "$logical_ms" "$replica_ms")")" \
	"(the change records' cost; report)"
sql "DROP TABLE dec_lat;" >/dev/null
