#!/usr/bin/env bash
# Full compaction rate: 1M rows loaded in 4 commits (4 sorted runs), then
# SELECT pk_compact('t', true) timed; rows/s.  heap's full rewrite, VACUUM
# FULL of the same table (heap and primary key index), is shown beside it
# for scale.  Target: pkmerge >= 1M rows/s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_function pk_compact || exit 0
rows=$(scaled 1000000 4)

# rewrite_rate TABLE SPEC: rows/s of a full rewrite of a freshly loaded table.
rewrite_rate()
{
	local setup i part=$((rows / 4)) rewrite
	setup=$(create_sql "$1" "$2")
	for i in 0 1 2; do
		setup+=" INSERT INTO $1 $(rows_sql $((i * part + 1)) $(((i + 1) * part)));"
	done
	setup+=" INSERT INTO $1 $(rows_sql $((3 * part + 1)) "$rows"); $(settle_sql "$1" "$2")"
	if is_heap "$2"; then
		rewrite="VACUUM FULL $1;"
	else
		rewrite="SELECT pk_compact('$1', true);"
	fi
	div "$rows" "$(time_sql "$setup" "$rewrite")"
}

compare "full compaction of $(human "$rows") rows" rows/s max 2 b/a \
	"$BENCH_AM >= 1M rows/s" rewrite_rate
drop_sides
