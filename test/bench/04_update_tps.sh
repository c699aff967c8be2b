#!/usr/bin/env bash
# Single-row update throughput: pgbench -n -T 10 running
#   \set id random(1, :rows)
#   UPDATE t SET amount = amount + 1 WHERE id = :id;
# on a 1M-row table (scaled), with 1 and with 2 clients; tps.  Serialization
# failures, if the access method raises any, are retried (--max-tries).
# Target: pkmerge tps >= 0.5x heap at pgbench's default of 1 client.  The
# 2-client line has none: it shows how little a second writer of the same
# table adds (commits of a table are serialized, DESIGN §4), where heap's
# throughput quadruples.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rows=$(scaled 1000000 1000)
seconds=$(bench_seconds)

# update_tps TABLE SPEC CLIENTS: transactions per second.
update_tps()
{
	local script=$BENCH_SCRATCH/update_$1.sql out
	printf '%s\n' '\set id random(1, :rows)' \
		"UPDATE $1 SET amount = amount + 1 WHERE id = :id;" >"$script"
	out=$(pg_bench -n -T "$seconds" -c "$3" -j "$3" --max-tries=10 \
		-D rows="$rows" -f "$script")
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out"
}

prepare load "$rows"
compare "update 1 row of $(human "$rows"), 1 client" tps max 2 b/a ">= 0.5x" \
	update_tps 1
compare "update 1 row of $(human "$rows"), 2 clients" tps max 2 b/a "none: info" \
	update_tps 2
drop_sides
