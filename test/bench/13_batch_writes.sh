#!/usr/bin/env bash
# Batch writes against the floor.  The floor is appending the same rows to
# an UNLOGGED heap table without a key or any index: no WAL, no lookup, no
# index entry, only forming and storing the rows.  Writes to pkmerge never
# read, so what they cost above the floor is pkmerge's own: buffering,
# sorting, compressing and WAL-logging the run.
#   - INSERT ... SELECT of 400k rows (ids 800001..1200000: half overwrite,
#     half new) into a 1M-row table, the rows computed in the statement
#     (md5, numeric division, string concatenation, as a job transforming
#     its input would): pkmerge with producer 'none' <= 1.2x the floor's
#     time, with 'lookup' <= 1.4x; heap's INSERT ... ON CONFLICT DO UPDATE
#     into its keyed table beside them;
#   - the same rows read from a staging table (an unlogged heap table
#     loaded beforehand): no target, printed to show pkmerge's own cost
#     against the floor's without the rows' computation in both;
#   - COPY of 1M rows from a server-side file into an empty table: pkmerge
#     <= 1.2x the floor's COPY; heap's COPY into its keyed table beside it.
# Each side runs three times, in rotating order; each line gives the best
# run of each side and, under it, every run's figure (the spread).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_producers || exit 0
loaded=$(scaled 1000000 2)
upserted=$(scaled 400000)
first=$((loaded * 8 / 10 + 1))
copied=$(scaled 1000000)
copy_file=$BENCH_SCRATCH/batch_writes.copy
runs=3

# The sides, by name: the SQL after the column list, or "floor"
kinds=(floor heap none lookup)
declare -A spec=([floor]=floor [heap]="" [none]="$(producer_spec none)"
	[lookup]="$(producer_spec lookup)")

# create_kind TABLE KIND: drops and creates the table of that side
create_kind()
{
	if [ "$2" = floor ]; then
		echo "DROP TABLE IF EXISTS $1; CREATE UNLOGGED TABLE $1 ${bench_columns/ PRIMARY KEY/};"
	else
		create_sql "$1" "${spec[$2]}"
	fi
}

# settle_kind TABLE KIND: the load's settling (the floor is heap)
settle_kind()
{
	if [ "$2" = floor ]; then settle_sql "$1" ""; else settle_sql "$1" "${spec[$2]}"; fi
}

# insert_seconds KIND SOURCE: seconds of INSERT ... SOURCE into a 1M-row
# table of that side (the floor appends, heap upserts)
insert_seconds()
{
	local t=bench_$1 write
	if [ "$1" = floor ]; then
		write="INSERT INTO $t $2;"
	else
		write=$(upsert_sql "$t" "${spec[$1]}" "$2")
	fi
	time_sql "$(create_kind "$t" "$1") INSERT INTO $t $(rows_sql 1 "$loaded");
		$(settle_kind "$t" "$1")" "$write"
}

# copy_seconds KIND: seconds of COPY of the file's rows into an empty table
copy_seconds()
{
	local t=bench_$1
	time_sql "$(create_kind "$t" "$1") CHECKPOINT;" "COPY $t FROM '$copy_file';"
}

# measure FN [ARGS]: runs "FN KIND ARGS" for every side, runs times in
# rotating order; leaves each side's figures in fig[KIND] (space-separated)
declare -A fig
measure()
{
	local r i k
	for k in "${kinds[@]}"; do fig[$k]=""; done
	for ((r = 0; r < runs; r++)); do
		for ((i = 0; i < ${#kinds[@]}; i++)); do
			k=${kinds[(i + r) % ${#kinds[@]}]}
			fig[$k]+="$("$1" "$k" "${@:2}") "
		done
	done
}

# report LABEL A B TARGET: the line of side B against side A (report_figs),
# then both sides' runs
report()
{
	# shellcheck disable=SC2206
	figs_a=(${fig[$2]}) figs_b=(${fig[$3]})
	side_label=("$2" "$3")
	report_figs "$1" s min b/a "$4"
	printf '%36s  runs: %s %s; %s %s\n' "" "$2" "${fig[$2]% }" "$3" "${fig[$3]% }"
}

label="insert $(human "$upserted") into $(human "$loaded")"
source=$(rows_sql "$first" $((first + upserted - 1)) 1)
measure insert_seconds "$source"
report "$label, none" floor none "<= 1.2x"
report "$label, lookup" floor lookup "<= 1.4x"
report "$label, none vs heap upsert" heap none "none: info"

sql "DROP TABLE IF EXISTS bench_stage;
	CREATE UNLOGGED TABLE bench_stage ${bench_columns/ PRIMARY KEY/};
	INSERT INTO bench_stage $source;
	VACUUM ANALYZE bench_stage;"
measure insert_seconds "SELECT * FROM bench_stage"
report "$label staged, none" floor none "none: info"
report "$label staged, lookup" floor lookup "none: info"

sql "COPY ($(rows_sql 1 "$copied")) TO '$copy_file';"
measure copy_seconds
report "COPY $(human "$copied"), none" floor none "<= 1.2x"
report "COPY $(human "$copied"), lookup" floor lookup "none: info"
report "COPY $(human "$copied"), none vs heap" heap none "none: info"

rm -f "$copy_file"
sql "DROP TABLE bench_stage, bench_floor, bench_heap, bench_none, bench_lookup;"
