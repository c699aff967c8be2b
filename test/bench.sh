#!/usr/bin/env bash
# make bench: starts one throwaway cluster with pkchangelog preloaded, runs
# every test/bench/NN_*.sh scenario against it, and stops it, leaving nothing
# running or behind.  Each scenario prints the access method under test
# (BENCH_AM, default pkmerge) beside heap, measured on the same run, as a
# ratio next to the target from the issue.  Benchmarks are not tests: they
# never fail on time, only when a scenario cannot run.
#
#   BENCH_SCALE=0.05 make bench   quick smoke run (row counts scaled)
#   BENCH_AM=heap make bench      exercises the harness without pkmerge
#   BENCH_ONLY=03 make bench      only the scenarios whose name starts so
set -euo pipefail
. "$(dirname "$0")/common.sh"

export BENCH_SCALE=${BENCH_SCALE:-1}
export BENCH_AM=${BENCH_AM:-pkmerge}
if ! [[ $BENCH_SCALE =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] ||
	! awk -v s="$BENCH_SCALE" 'BEGIN { exit !(s > 0) }'; then
	pk_die "BENCH_SCALE must be a positive number, not '$BENCH_SCALE'"
fi
[[ ${BENCH_ONLY:-} =~ ^[0-9]{0,2}$ ]] ||
	pk_die "BENCH_ONLY must be a scenario's number (03) or its first digit, not '$BENCH_ONLY'"
[[ $BENCH_AM =~ ^[a-z_][a-z0-9_]*$ ]] ||
	pk_die "BENCH_AM must be a table access method name, not '$BENCH_AM'"

pk_setup bench

trap 'exit 130' INT
trap 'exit 143' TERM
# bench: room for the data sets, no checkpoint inside a measurement; the
# background worker on, as deployed
pk_cluster_start "pkchangelog.worker_enabled = on
shared_buffers = 1GB
max_wal_size = 4GB
checkpoint_timeout = 30min
log_checkpoints = off"

# What the scenarios (through test/bench/lib.sh) connect and run with
export PGHOST=$work PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export bindir BENCH_SCRATCH=$work/scratch BENCH_PGDATA=$pgdata
run_as mkdir "$BENCH_SCRATCH"

run_as psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pkchangelog' ||
	{ cat "$work/server.log"; exit 1; }
if [ "$(run_as psql -X -At -c "SELECT count(*) FROM pg_am
		WHERE amname = '$BENCH_AM' AND amtype = 't'")" != 1 ]; then
	pk_die "table access method '$BENCH_AM' does not exist (yet);" \
		"BENCH_AM=heap exercises the harness"
fi

echo "pkchangelog bench: $BENCH_AM beside heap, BENCH_SCALE=$BENCH_SCALE," \
	"$(run_as psql -X -At -c 'SHOW server_version'), $(nproc) CPUs"
echo "times and rates: better of 2 runs (bulk upsert, aggregate, small commits' rates: median of 5); ratios are figures, not pass/fail"

shopt -s nullglob
failed=()
for b in "$work"/test/bench/"${BENCH_ONLY:-}"*.sh; do
	[[ $(basename "$b") =~ ^[0-9][0-9]_ ]] || continue
	echo "=============== $(basename "$b")"
	bash "$b" || failed+=("$(basename "$b")")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "could not run: ${failed[*]} (server log follows)" >&2
	tail -n 30 "$work/server.log" >&2
	exit 1
fi
