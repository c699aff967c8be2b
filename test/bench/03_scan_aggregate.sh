#!/usr/bin/env bash
# Full-scan aggregate: SELECT store_id, sum(amount), count(*) ... GROUP BY
# store_id over 1M rows (100 groups), best of 3, default planner settings
# (heap may use a parallel scan).  Target: pkmerge time <= 1.5x heap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rows=$(scaled 1000000)

# aggregate_ms TABLE SPEC: time of the aggregate in milliseconds.
aggregate_ms()
{
	div "$(time_sql "" "SELECT store_id, sum(amount), count(*) FROM $1 GROUP BY store_id;")" 0.001
}

prepare load "$rows"
compare "scan+aggregate $(human "$rows") rows" ms min 3 b/a "<= 1.5x" aggregate_ms
drop_sides
