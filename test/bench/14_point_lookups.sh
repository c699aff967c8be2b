#!/usr/bin/env bash
# Point lookups by key, the query an orders table runs most:
#   SELECT id, note FROM t WHERE id = :id   (random ids, pgbench, tps)
#   - 1M rows right after the load, 1 and 8 clients;
#   - the same table after a full compaction (one data run), 1 and 8 clients;
#   - 20M rows right after the load and after a full compaction, 1 and 8
#     clients;
#   target pkmerge >= 0.95x heap's tps on each line;
#   - a new connection's first lookup in the 1M-row table (the median of
#     21 connections, each one query, timed by psql); target <= 1.2x heap's;
#   - the 20M-row table has the lookup changelog producer (reads do not
#     depend on the producer): a 1-row UPDATE of a random row, whose commit
#     looks up the key's old row, 1 client; target >= 0.8x heap's tps.
# Heap is VACUUMed and ANALYZEd after its load (settle_sql); pkmerge's
# load is compacted as the background worker would compact it (a load of
# 20M rows is 43 runs, which the worker would otherwise be merging during
# the measurements), and its blocks come into the shared block cache as
# the lookups read them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_function pk_compact || exit 0
small=$(scaled 1000000 2)
large=$(scaled 20000000 2)

# load TABLE SPEC ROWS: the table with ids 1..ROWS, settled
load()
{
	local compact=""
	is_heap "$2" || compact="SELECT pk_compact('$1');"
	sql "$(create_sql "$1" "$2") INSERT INTO $1 $(rows_sql 1 "$3"); $compact $(settle_sql "$1" "$2")" >/dev/null
}

# compact TABLE SPEC: pkmerge's full compaction (heap: nothing to do)
compact()
{
	is_heap "$2" || sql "SELECT pk_compact('$1', true); CHECKPOINT;" >/dev/null
}

# lookup_tps TABLE SPEC CLIENTS ROWS
lookup_tps()
{
	pgbench_tps "$3" "$4" '\set id random(1, :rows)' \
		"SELECT id, note FROM $1 WHERE id = :id;"
}

# update_tps TABLE SPEC CLIENTS ROWS: 1-row UPDATEs of random rows
update_tps()
{
	pgbench_tps "$3" "$4" '\set id random(1, :rows)' \
		"UPDATE $1 SET amount = amount + 1 WHERE id = :id;"
}

# first_lookup_ms TABLE SPEC ROWS: a new connection's first lookup, ms
first_lookup_ms()
{
	local i ms=()
	for ((i = 0; i < 21; i++)); do
		ms+=("$(printf '\\timing on\nSELECT id, note FROM %s WHERE id = %d;\n' \
			"$1" $(((RANDOM * 32768 + RANDOM) % $3 + 1)) | pg_psql |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')")
	done
	best_of median "${ms[@]}"
}

prepare load "$small"
compare "point lookup, $(human "$small"), 1 client" tps max 2 b/a ">= 0.95x" lookup_tps 1 "$small"
compare "point lookup, $(human "$small"), 8 clients" tps max 2 b/a ">= 0.95x" lookup_tps 8 "$small"
compare "new connection's first lookup, $(human "$small")" ms min 2 b/a "<= 1.2x" first_lookup_ms "$small"
prepare compact
compare "after full compaction, 1 client" tps max 2 b/a ">= 0.95x" lookup_tps 1 "$small"
compare "after full compaction, 8 clients" tps max 2 b/a ">= 0.95x" lookup_tps 8 "$small"
drop_sides
with_lookup=false
if have_producers >/dev/null; then
	with_lookup=true
	sides heap "" "$BENCH_AM" "$(producer_spec lookup)"
fi
prepare load "$large"
compare "point lookup, $(human "$large"), 1 client" tps max 2 b/a ">= 0.95x" lookup_tps 1 "$large"
compare "point lookup, $(human "$large"), 8 clients" tps max 2 b/a ">= 0.95x" lookup_tps 8 "$large"
prepare compact
compare "$(human "$large") after full compaction, 1 client" tps max 2 b/a ">= 0.95x" lookup_tps 1 "$large"
compare "$(human "$large") after full compaction, 8 clients" tps max 2 b/a ">= 0.95x" lookup_tps 8 "$large"
if $with_lookup; then
	compare "1-row UPDATE, $(human "$large"), lookup, 1 client" tps max 2 b/a ">= 0.8x" \
		update_tps 1 "$large"
fi
drop_sides
