#!/usr/bin/env bash
# Small-transaction commit latency per changelog producer: pgbench -n -t
# 2000, one client, each transaction upserting one random row of a 100k-row
# table; p50/p95/p99 from pgbench's per-transaction log, heap (ON CONFLICT
# DO UPDATE) as the reference, then pkmerge with none, input, lookup and
# full-compaction.  Each is run twice; the run with the lower p95 is shown.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_producers || exit 0
rows=$(scaled 100000 1000)
txns=$(scaled 2000 200)

# latency TABLE SPEC: "p95 p50 p99" in ms of one pgbench run (p95 first, so
# that best_of picks the run with the lower p95).
latency()
{
	local script=$BENCH_SCRATCH/latency_$1.sql
	printf '%s\n' '\set id random(1, :rows)' "$(upsert_sql "$1" "$2" \
		"VALUES (:id, :id % 100, (:id % 100000) / 100.0, 'upsert ' || :id)")" \
		>"$script"
	rm -f "$BENCH_SCRATCH"/latency_log.*
	pg_bench -n -t "$txns" -c 1 -D rows="$rows" -f "$script" \
		--log --log-prefix="$BENCH_SCRATCH/latency_log" >/dev/null
	# field 3 of the log: the transaction's latency in microseconds
	awk '{ print $3 }' "$BENCH_SCRATCH"/latency_log.* | sort -n | awk '
		{ v[NR] = $1 }
		function p(q,  i) { i = int(q * NR); if (i < q * NR) i++; return v[i] / 1000 }
		END { printf "%.3f %.3f %.3f\n", p(0.95), p(0.50), p(0.99) }'
}

for producer in heap none input lookup full-compaction; do
	if [ $producer = heap ]; then spec=""; else spec=$(producer_spec $producer); fi
	load bench_a "$spec" "$rows"
	read -r p95 p50 p99 <<<"$(best_of min "$(latency bench_a "$spec")" \
		"$(latency bench_a "$spec")")"
	line "commit latency, 1-row upsert tx" "$(printf '%-15s' $producer)" \
		"p50 $(fmt "$p50" ms)" "p95 $(fmt "$p95" ms)" "p99 $(fmt "$p99" ms)"
done
sql "DROP TABLE bench_a;"
