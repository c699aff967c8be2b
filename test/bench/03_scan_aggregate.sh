#!/usr/bin/env bash
# Full-scan aggregates, best of 3, default planner settings (both sides
# get the parallel plan the planner gives them):
# - SELECT store_id, sum(amount), count(*) ... GROUP BY store_id over 1M
#   rows (100 groups).  Target: pkmerge time <= 1.5x heap.
# - SELECT sum(amount), count(*) over 100k, 500k and 5M rows, and the same
#   with a selective filter (WHERE store_id = 7, 1% of the rows) over 5M.
#   Target: <= 1.0x heap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# aggregate_ms TABLE SPEC QUERY: time of QUERY, its %s replaced by TABLE,
# in milliseconds.
aggregate_ms()
{
	div "$(time_sql "" "${3//%s/$1}")" 0.001
}

rows=$(scaled 1000000)
prepare load "$rows"
compare "scan+aggregate $(human "$rows") rows" ms min 3 b/a "<= 1.5x" aggregate_ms \
	"SELECT store_id, sum(amount), count(*) FROM %s GROUP BY store_id;"

for n in 100000 500000 5000000; do
	rows=$(scaled "$n")
	prepare load "$rows"
	compare "sum+count $(human "$rows") rows" ms min 3 b/a "<= 1.0x" aggregate_ms \
		"SELECT sum(amount), count(*) FROM %s;"
done
compare "sum+count store_id = 7, $(human "$rows") rows" ms min 3 b/a "<= 1.0x" aggregate_ms \
	"SELECT sum(amount), count(*) FROM %s WHERE store_id = 7;"
drop_sides
