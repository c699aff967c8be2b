#!/usr/bin/env bash
# Small commits: pgbench single-row updates by key on a 100k-row table
# (scaled), each its own transaction,
#   \set id random(1, :rows)
#   UPDATE t SET amount = amount + 1 WHERE id = :id;
# heap beside pkmerge with producer none, then lookup, the background
# worker compacting as deployed.  Targets:
#
#   1 client, 8 clients (synchronous_commit = on)   >= 0.7x, >= 0.5x heap
#   1 client, synchronous_commit = off (CPU only)   >= 0.35x heap
#   4 clients, synchronous_commit = off             not below 1 client's
#   growth per commit over 100k commits             <= 1 kB: the table's
#                                  file, and (shown beside it) the catalog
#   WAL per commit over those 100k commits          <= 2x heap: runs,
#                                  catalog and compaction, amortized over
#                                  merges into the bottom level
#   WAL per commit over a window of 20k commits     info: whether a merge
#                                  into the bottom level falls in it
#                                  moves it by about a third
#
# Throughput is the median of five runs a side, alternating: a commit
# waits for a flush whose latency is the disk's, and one side's runs
# differ by up to a third, which a best run follows and a median does not.
# Each 4-client run follows the 1-client run of its side and round, and
# the 4-against-1 figure is the median of those pairs' ratios: the
# machine's speed drifts by as much over a scenario, and moves a pair
# alike.
# WAL is counted from before the run to after the worker has compacted
# what the run left due, with no logical replication slot (pkmerge then
# writes no change records; test/bench/09_decoding.sh counts them); growth
# over pgbench -t with default retention (every snapshot of the run is
# retained: 1 h).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# the cluster runs with fsync off; what synchronous_commit = on costs
# needs it on (both sides alike)
sql "ALTER SYSTEM SET fsync = on; SELECT pg_reload_conf();" >/dev/null
trap 'sql "ALTER SYSTEM RESET fsync; SELECT pg_reload_conf();" >/dev/null' EXIT

rows=$(scaled 100000 1000)
seconds=$(bench_seconds)
# runs per side of each throughput figure, alternating, the median kept
tps_runs=5
wal_txns=$(scaled 20000 500)
growth_txns=$(scaled 100000 1000)

update_script()
{
	printf '%s\n' '\set id random(1, :rows)' \
		"UPDATE $1 SET amount = amount + 1 WHERE id = :id;" >"$BENCH_SCRATCH/small_$1.sql"
	echo "$BENCH_SCRATCH/small_$1.sql"
}

# tps TABLE SPEC CLIENTS SYNC: transactions per second of -T seconds.
tps()
{
	local out
	out=$(PGOPTIONS="$PGOPTIONS -c synchronous_commit=$4" pg_bench -n -T "$seconds" \
		-c "$3" -j "$3" --max-tries=10 -D rows="$rows" -f "$(update_script "$1")")
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out"
}

# tps_then_four TABLE SPEC: the tps of a 1-client run with synchronous_commit
# off, printed, and of a 4-client run right after it, appended to
# BENCH_SCRATCH/four_TABLE: each 4-client figure is paired with the 1-client
# one of its round, so that the machine's speed drifting over the runs
# moves both alike.
tps_then_four()
{
	local one
	one=$(tps "$1" "$2" 1 off)
	tps "$1" "$2" 4 off >>"$BENCH_SCRATCH/four_$1"
	echo "$one"
}

# pair_ratio_pct ONE... -- FOUR...: the median of FOUR[i] / ONE[i], in %.
pair_ratio_pct()
{
	local -a one=() four=()
	local i
	while [ "$1" != -- ]; do one+=("$1"); shift; done
	shift
	four=("$@")
	for i in "${!one[@]}"; do
		div "${four[i]}" "${one[i]}"
	done | median | awk '{ print $1 * 100 }'
}

# settle TABLE: waits until the background worker has nothing due for
# TABLE (a heap table: nothing to wait for), at most 30 s.
settle()
{
	for _ in $(seq 60); do
		[ "$(sql "SELECT coalesce((SELECT count(*) FROM pg_stat_activity
				WHERE backend_type LIKE 'pkchangelog%' AND state = 'active'), 0)")" = 0 ] &&
			return 0
		sleep 0.5
	done
}

# wal_per_commit TABLE SPEC: bytes of WAL per 1-row commit, compaction
# included.
wal_per_commit()
{
	local l0 l1
	settle "$1"
	l0=$(sql "SELECT pg_current_wal_insert_lsn()")
	PGOPTIONS="$PGOPTIONS -c synchronous_commit=off" pg_bench -n -t "$wal_txns" -c 1 \
		-D rows="$rows" -f "$(update_script "$1")" >/dev/null
	sleep 1
	settle "$1"
	l1=$(sql "SELECT pg_current_wal_insert_lsn()")
	sql "SELECT round(('$l1'::pg_lsn - '$l0'::pg_lsn) / $wal_txns)"
}

# catalog_bytes: what the extension's catalog tables take, indexes and
# TOAST included (0 without the extension's schema).
catalog_bytes()
{
	sql "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'pkchangelog' AND c.relkind = 'r'"
}

# growth TABLE SPEC: "file catalog wal" bytes per commit over growth_txns
# 1-row commits on a freshly loaded table: the table's file, the catalog,
# and the WAL up to when the worker is done (compaction amortized over a
# span that takes in merges into the bottom level, which a 20k-commit
# window may or may not).
growth()
{
	local f0 c0 f1 c1 l0 l1
	load "$1" "$2" "$rows"
	f0=$(sql "SELECT pg_relation_size('$1')")
	c0=$(catalog_bytes)
	settle "$1"
	l0=$(sql "SELECT pg_current_wal_insert_lsn()")
	PGOPTIONS="$PGOPTIONS -c synchronous_commit=off" pg_bench -n -t "$growth_txns" -c 1 \
		-D rows="$rows" -f "$(update_script "$1")" >/dev/null
	sleep 1
	settle "$1"
	l1=$(sql "SELECT pg_current_wal_insert_lsn()")
	f1=$(sql "SELECT pg_relation_size('$1')")
	c1=$(catalog_bytes)
	echo "$(((f1 - f0) / growth_txns)) $(((c1 - c0) / growth_txns))" \
		"$(sql "SELECT round(('$l1'::pg_lsn - '$l0'::pg_lsn) / $growth_txns)")"
}

for producer in none lookup; do
	sides heap "" "$producer" "$(producer_spec "$producer")"
	prepare load "$rows"
	compare "1-row update, 1 client" tps median "$tps_runs" b/a ">= 0.7x" tps 1 on
	compare "1-row update, 8 clients" tps median "$tps_runs" b/a ">= 0.5x" tps 8 on
	rm -f "$BENCH_SCRATCH"/four_*
	compare "1-row update, 1 client, async" tps median "$tps_runs" b/a ">= 0.35x" tps_then_four
	one_a=("${figs_a[@]}") one_b=("${figs_b[@]}")
	mapfile -t figs_a <"$BENCH_SCRATCH/four_${side_table[0]}"
	mapfile -t figs_b <"$BENCH_SCRATCH/four_${side_table[1]}"
	report_figs "1-row update, 4 clients, async" tps median b/a "info"
	line "4 clients of 1 client, async" \
		"$(side_fig heap "$(pair_ratio_pct "${one_a[@]}" -- "${figs_a[@]}")" %)" \
		"$(side_fig "$producer" "$(pair_ratio_pct "${one_b[@]}" -- "${figs_b[@]}")" %)" \
		"$(printf '%-22s' '')" "(target >= 100%)"
	compare "WAL per 1-row commit, $(human "$wal_txns") window" B min 1 b/a "info" wal_per_commit
	# growth: one run per side (each loads its own table)
	read -r file catalog wal <<<"$(growth bench_b "${side_spec[1]}")"
	read -r heap_file _ heap_wal <<<"$(growth bench_a "")"
	line "growth per commit, $(human "$growth_txns") commits" \
		"$(side_fig heap "$heap_file" B)" "$(side_fig "$producer" "$file" B)" \
		"catalog $(fmt "$catalog" B)" "(target <= 1 kB)"
	line "WAL per commit, $(human "$growth_txns") commits" \
		"$(side_fig heap "$heap_wal" B)" "$(side_fig "$producer" "$wal" B)" \
		"$(printf '%-15s %6.2fx' "$producer/heap" "$(div "$wal" "$heap_wal")")" "(target <= 2x)"
	drop_sides
done
