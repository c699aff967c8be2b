#!/usr/bin/env bash
# Changelog read rate: a pkmerge table with changelog_producer 'lookup'
# loaded with 500k rows, then 500k rows upserted over it (half overwrite:
# -U/+U pairs, half new: +I), then SELECT count(*) FROM pk_changes('t')
# timed, better of 2; changes/s.  Target: >= 300k changes/s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_producers || exit 0
have_function pk_changes || exit 0
rows=$(scaled 500000 2)
spec=$(producer_spec lookup)

sql "$(create_sql bench_a "$spec")
	INSERT INTO bench_a $(rows_sql 1 "$rows");
	$(upsert_sql bench_a "$spec" "$(rows_sql $((rows / 2 + 1)) $((rows / 2 + rows)) 1)")
	$(settle_sql bench_a "$spec")"
query="SELECT count(*) FROM pk_changes('bench_a');"
changes=$(sql "$query")
seconds=$(best_of min "$(time_sql "" "$query")" "$(time_sql "" "$query")")
line "pk_changes, $(human "$changes") changes (lookup)" \
	"$(side_fig "$BENCH_AM" "$(div "$changes" "$seconds")" changes/s)" \
	"(target >= 300k changes/s)"
sql "DROP TABLE bench_a;"
