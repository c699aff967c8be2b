#!/usr/bin/env bash
# Full compaction rate: 1M rows loaded in 4 commits (4 sorted runs), then
# SELECT pk_compact('t', true) timed; rows/s.  heap's full rewrite, VACUUM
# FULL of the same table (heap and primary key index), is shown beside it
# for scale.  Target: pkmerge >= 1M rows/s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_function pk_compact || exit 0
rows=$(scaled 1000000 4)

compare "full compaction of $(human "$rows") rows" rows/s max 2 b/a \
	"$BENCH_AM >= 1M rows/s" rewrite_rate
drop_sides
