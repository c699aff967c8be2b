# shellcheck shell=bash disable=SC2034
# Sourced by the test/bench/NN_*.sh scenarios (test/bench.sh runs only files
# named that way, never this one).  Measures nothing itself: it holds the
# shared parts of every benchmark, chiefly "compare", which runs one
# workload on two tables (heap and BENCH_AM unless "sides" says otherwise),
# interleaved, keeps the better of the runs and prints one aligned line:
#
#   LABEL   heap FIGURE   pkmerge FIGURE   heap/pkmerge RATIOx   (target ...)
#
# BENCH_VERBOSE=1 also prints every run's figure (stderr).
#
# Needs the environment test/bench.sh exports: PGHOST, PGPORT, PGUSER,
# PGDATABASE, bindir, BENCH_SCRATCH (a directory the postgres account owns),
# BENCH_PGDATA (the cluster's data directory, for a scenario that restarts it),
# BENCH_SCALE and BENCH_AM.
set -euo pipefail
shopt -s inherit_errexit
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

: "${BENCH_SCRATCH:?run the scenarios through test/bench.sh}"
BENCH_SCALE=${BENCH_SCALE:-1}
BENCH_AM=${BENCH_AM:-pkmerge}
cd "$BENCH_SCRATCH"
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

# The table every scenario uses; SPEC is what follows the column list
# ("" for heap, "USING pkmerge WITH (...)").
bench_columns='(id bigint PRIMARY KEY, store_id bigint, amount numeric(18,2), note text)'

# ---------------------------------------------------------------- running

# psql as the postgres account: quiet, unaligned, stops at the first error;
# runs the statements on stdin, each one its own transaction.
pg_psql() { run_as psql -X -q -At -v ON_ERROR_STOP=1; }

# sql STATEMENTS: runs them, one autocommit transaction each; prints rows.
sql() { printf '%s\n' "$1" | pg_psql; }

pg_bench() { run_as pgbench "$@"; }

# pgbench_tps CLIENTS ROWS SCRIPT_LINES...: tps of a pgbench -T run of the
# script (one line per argument; :rows is ROWS), serialization failures
# retried
pgbench_tps()
{
	local clients=$1 rows=$2 script=$BENCH_SCRATCH/script_$RANDOM.sql out
	shift 2
	printf '%s\n' "$@" >"$script"
	out=$(pg_bench -n -T "$(bench_seconds)" -c "$clients" -j "$clients" --max-tries=10 \
		-D rows="$rows" -f "$script")
	rm -f "$script"
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out"
}

# time_sql SETUP TIMED: runs SETUP untimed, then TIMED, in one session, each
# statement in its own transaction; prints TIMED's wall-clock seconds,
# commits included, from clock_timestamp() differences.
time_sql()
{
	pg_psql <<-EOF
	\\o /dev/null
	$1
	SELECT clock_timestamp() AS bench_t0 \\gset
	$2
	\\o
	SELECT extract(epoch FROM clock_timestamp() - :'bench_t0'::timestamptz);
	EOF
}

# ---------------------------------------------------------------- sizes

# scaled N [MIN]: N times BENCH_SCALE, rounded, at least MIN (default 1).
scaled()
{
	awk -v n="$1" -v s="$BENCH_SCALE" -v m="${2:-1}" \
		'BEGIN { v = int(n * s + 0.5); print (v < m ? m : v) }'
}

# human N: 400000 -> 400k, 1000000 -> 1M (for labels).
human()
{
	awk -v n="$1" 'BEGIN {
		if (n >= 1e6) printf "%gM\n", n / 1e6
		else if (n >= 1e3) printf "%gk\n", n / 1e3
		else print n }'
}

# Duration of a pgbench -T run: 10 s, shorter for small scales.
bench_seconds()
{
	awk -v s="$BENCH_SCALE" \
		'BEGIN { v = int(10 * s + 0.5); print (v < 2 ? 2 : v > 10 ? 10 : v) }'
}

# ---------------------------------------------------------------- tables

# is_heap SPEC: whether SPEC makes a heap table (no upserting INSERT).
is_heap() { [[ -z $1 || $1 =~ ^USING\ heap($|\ ) ]]; }

# rows_sql FROM TO [VERSION]: a SELECT of rows with ids FROM..TO.  Version
# 0 has store_id = id % 100; notes are 21..37 characters, md5-varied.
rows_sql()
{
	local v=${3:-0}
	echo "SELECT g, (g + $v) % 100, ((g * 7919 + $v * 104729) % 1000000) / 100.0,
		'order ' || g || ' ' || substr(md5((g + $v)::text), 1, 8 + (g % 17)::int)
		FROM generate_series($1::bigint, $2) g"
}

# upsert_sql TABLE SPEC SOURCE: writes SOURCE's rows over TABLE, last write
# wins.  heap needs ON CONFLICT; on the access method under test a plain
# INSERT is the upsert.
upsert_sql()
{
	if is_heap "$2"; then
		echo "INSERT INTO $1 $3 ON CONFLICT (id) DO UPDATE SET
			store_id = EXCLUDED.store_id, amount = EXCLUDED.amount,
			note = EXCLUDED.note;"
	else
		echo "INSERT INTO $1 $3;"
	fi
}

# create_sql TABLE SPEC: drops and creates the benchmark table.
create_sql() { echo "DROP TABLE IF EXISTS $1; CREATE TABLE $1 $bench_columns $2;"; }

# settle_sql TABLE SPEC: after a load, what a DBA would run before
# measuring: VACUUM (heap only: sets hint bits and the visibility map),
# ANALYZE, and a checkpoint so none lands inside the measurement.
settle_sql()
{
	if is_heap "$2"; then
		echo "VACUUM ANALYZE $1; CHECKPOINT;"
	else
		echo "ANALYZE $1; CHECKPOINT;"
	fi
}

# load_sql TABLE SPEC ROWS: creates TABLE with ids 1..ROWS, settled.
load_sql() { echo "$(create_sql "$1" "$2") INSERT INTO $1 $(rows_sql 1 "$3"); $(settle_sql "$1" "$2")"; }

# load TABLE SPEC ROWS: the same, run (a "prepare" function for compare).
load() { sql "$(load_sql "$@")"; }

# have_function NAME: whether the extension has created function NAME; if
# not, says the scenario is skipped.
have_function()
{
	[ "$(sql "SELECT count(*) FROM pg_proc WHERE proname = '$1'")" != 0 ] && return 0
	echo "skipped: function $1 not available"
	return 1
}

# producer_spec PRODUCER: SPEC of a BENCH_AM table with that producer.
producer_spec() { echo "USING $BENCH_AM WITH (changelog_producer = '$1')"; }

# have_producers: whether BENCH_AM takes the changelog_producer option; if
# not, says the scenario is skipped.
have_producers()
{
	sql "BEGIN; $(create_sql bench_probe "$(producer_spec lookup)") ROLLBACK;" \
		>/dev/null 2>&1 && return 0
	echo "skipped: changelog_producer not available"
	return 1
}

# ---------------------------------------------------------------- workloads

# The bulk upsert: 400k rows, ids 100001..500000, written over 200k loaded
# rows (half overwrite, half new), scaled.
upsert_loaded=$(($(scaled 200000 2) / 2 * 2))
upserted=$(scaled 400000)
bulk_upsert_label="bulk upsert $(human "$upserted") into $(human "$upsert_loaded")"

# The bulk upsert's rows, ids 100001..500000 (scaled), version 1.
upsert_rows_sql() { rows_sql $((upsert_loaded / 2 + 1)) $((upsert_loaded / 2 + upserted)) 1; }

# stage_upsert_rows: the bulk upsert's rows in bench_stage, an unlogged
# heap table both sides read (created once per scenario, dropped after).
stage_upsert_rows()
{
	sql "DROP TABLE IF EXISTS bench_stage;
		CREATE UNLOGGED TABLE bench_stage ${bench_columns/ PRIMARY KEY/};
		INSERT INTO bench_stage $(upsert_rows_sql);
		VACUUM ANALYZE bench_stage;"
}

# bulk_upsert_seconds TABLE SPEC [staged]: loads, then times the bulk
# upsert, its rows computed in the statement, or read from bench_stage.
bulk_upsert_seconds()
{
	local source
	if [ "${3:-}" = staged ]; then
		source="SELECT * FROM bench_stage"
	else
		source=$(upsert_rows_sql)
	fi
	time_sql "$(load_sql "$1" "$2" "$upsert_loaded")" "$(upsert_sql "$1" "$2" "$source")"
}

# rewrite_rate TABLE SPEC [SQL]: rows/s of a full rewrite of $rows rows
# loaded in 4 commits (4 sorted runs), SQL run after the table is created
# (indexes): SELECT pk_compact(TABLE, true), or heap's VACUUM FULL.
rewrite_rate()
{
	local setup i part=$((rows / 4)) rewrite
	setup="$(create_sql "$1" "$2") ${3:-}"
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

# ---------------------------------------------------------------- comparing

# sides LABEL_A SPEC_A LABEL_B SPEC_B: the two tables compare measures,
# named bench_a and bench_b.  Default: heap against BENCH_AM.
sides()
{
	side_label=("$1" "$3")
	side_spec=("$2" "$4")
	side_table=(bench_a bench_b)
}
sides heap "" "$BENCH_AM" "USING $BENCH_AM"

# prepare FN [ARGS]: runs "FN TABLE SPEC ARGS" once for each side (e.g. load).
prepare()
{
	local i
	for i in 0 1; do
		"$1" "${side_table[i]}" "${side_spec[i]}" "${@:2}"
	done
}

# drop_sides: drops both tables (frees the space for the next scenario).
drop_sides() { sql "DROP TABLE IF EXISTS ${side_table[0]}, ${side_table[1]};"; }

# median: the median of the figures on stdin (of an even count, the lower
# of the middle two).
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# best_of min|max|median FIGURES...: the better figure (lower for min,
# higher for max), or their median.
best_of()
{
	local how=$1; shift
	case $how in
		min) printf '%s\n' "$@" | sort -g | head -n 1;;
		max) printf '%s\n' "$@" | sort -g | tail -n 1;;
		median) printf '%s\n' "$@" | median;;
		*) echo "best_of: min, max or median, not '$how'" >&2; return 1;;
	esac
}

# fmt FIGURE UNIT: the figure with precision suited to its unit.
fmt()
{
	case $2 in
		s) printf '%.3f s' "$1";;
		ms) awk -v v="$1" 'BEGIN { printf (v < 10 ? "%.3f ms" : "%.1f ms"), v }';;
		MB) printf '%.1f MB' "$1";;
		x) printf '%.2fx' "$1";;
		*) printf '%.0f %s' "$1" "$2";;
	esac
}

# div N D: N / D (for rates and ratios).
div() { awk -v n="$1" -v d="$2" 'BEGIN { if (d > 0) print n / d; else print "nan" }'; }

# side_fig SIDE FIGURE UNIT: one side's column of an output line.
side_fig() { printf '%-7s %12s' "$1" "$(fmt "$2" "$3")"; }

# line LABEL FIELD...: one aligned output line.
line()
{
	printf '%-36s' "$1"; shift
	printf '  %s' "$@"; echo
}

# compare LABEL UNIT min|max|median RUNS a/b|b/a TARGET FN [ARGS]: runs
# "FN TABLE SPEC ARGS" (which prints one figure in UNIT) RUNS times per side,
# alternating sides (a b, then b a, ...), and reports them (report_figs).
# The figures of each side are left in figs_a and figs_b, in run order.
compare()
{
	local label=$1 unit=$2 how=$3 runs=$4 ratio=$5 target=$6 fn=$7
	shift 7
	local r
	figs_a=() figs_b=()
	# a then b, then b then a, ...: a trend over the runs (the machine's
	# state drifting as they go) favours neither side
	for ((r = 0; r < runs; r++)); do
		if ((r % 2 == 0)); then
			figs_a+=("$("$fn" "${side_table[0]}" "${side_spec[0]}" "$@")")
			figs_b+=("$("$fn" "${side_table[1]}" "${side_spec[1]}" "$@")")
		else
			figs_b+=("$("$fn" "${side_table[1]}" "${side_spec[1]}" "$@")")
			figs_a+=("$("$fn" "${side_table[0]}" "${side_spec[0]}" "$@")")
		fi
	done
	report_figs "$label" "$unit" "$how" "$ratio" "$target"
}

# report_figs LABEL UNIT min|max|median a/b|b/a TARGET: keeps the better
# figure of each side in figs_a and figs_b (lower for min, higher for max)
# or its median, and prints both and their ratio, side a over side b (a/b)
# or the reverse, beside TARGET.  The two figures kept are left in compared
# (a's, then b's) for a line that relates two comparisons.
report_figs()
{
	local label=$1 unit=$2 how=$3 ratio=$4 target=$5
	local best_a best_b num den ratio_label
	if [ -n "${BENCH_VERBOSE:-}" ]; then
		echo "  $label: ${side_label[0]} ${figs_a[*]}; ${side_label[1]} ${figs_b[*]}" >&2
	fi
	best_a=$(best_of "$how" "${figs_a[@]}")
	best_b=$(best_of "$how" "${figs_b[@]}")
	compared=("$best_a" "$best_b")
	if [ "$ratio" = a/b ]; then
		num=$best_a den=$best_b ratio_label="${side_label[0]}/${side_label[1]}"
	else
		num=$best_b den=$best_a ratio_label="${side_label[1]}/${side_label[0]}"
	fi
	line "$label" "$(side_fig "${side_label[0]}" "$best_a" "$unit")" \
		"$(side_fig "${side_label[1]}" "$best_b" "$unit")" \
		"$(printf '%-15s %6.2fx' "$ratio_label" "$(div "$num" "$den")")" \
		"(target $target)"
}
