#!/usr/bin/env bash
# make fuzz: the randomized differential test of test/fuzz (design at the
# top of test/fuzz/PkFuzz.pm) on a throwaway cluster, for MINUTES minutes
# (default 10) from SEED (default: a random one, printed).  On a failure it
# prints the failing check and a minimal reproduction (a psql script, also
# written to /tmp/pkfuzz-seedN.sql) and exits non-zero.
#
#   make fuzz SEED=42 MINUTES=30
#   FUZZ_AVOID=keyupdate,truncate make fuzz    look past known defects
#   FUZZ_REDUCE_SECONDS=1200 make fuzz         more time to reduce (600 s)
#   FUZZ_WORKER=1 make fuzz                    with the background worker on
#                                              (a seed no longer replays exactly)
#   FUZZ_PARALLEL=3 make fuzz                  3 runs at once, in copies of one
#                                              database (see test/fuzz/fuzz.pl)
set -euo pipefail
. "$(dirname "$0")/common.sh"

SEED=${SEED:-}
MINUTES=${MINUTES:-10}
[[ -z $SEED || $SEED =~ ^[0-9]+$ ]] || pk_die "SEED must be a non-negative integer, not '$SEED'"
[[ $MINUTES =~ ^[0-9]+(\.[0-9]+)?$ ]] || pk_die "MINUTES must be a number, not '$MINUTES'"
[[ ${FUZZ_PARALLEL:-1} =~ ^[1-9][0-9]*$ ]] || pk_die "FUZZ_PARALLEL must be a positive integer, not '$FUZZ_PARALLEL'"
[ -n "$SEED" ] || SEED=$(( (RANDOM << 15 | RANDOM) ))
perl -MDBD::Pg -e 1 2>/dev/null || pk_die "perl DBD::Pg is missing (Debian: libdbd-pg-perl; make deps installs it as root)"

pk_setup fuzz
trap 'exit 130' INT
trap 'exit 143' TERM
# deterministic: no background worker, no autovacuum; a crash restarts the
# server so the reduction can go on; recovery checks every page the
# extension's WAL records rebuild
pk_cluster_start "autovacuum = off
restart_after_crash = on
wal_consistency_checking = 'pkchangelog'
pkchangelog.worker_enabled = $([ "${FUZZ_WORKER:-}" = 1 ] && echo on || echo off)"

echo "make fuzz: seed $SEED, $MINUTES minutes${FUZZ_AVOID:+, FUZZ_AVOID=$FUZZ_AVOID}${FUZZ_WORKER:+, FUZZ_WORKER=$FUZZ_WORKER}"
rc=0
run_as perl "$work/test/fuzz/fuzz.pl" --host "$work" --port "$port" --seed "$SEED" \
	--minutes "$MINUTES" --log "$work/server.log" --script-dir /tmp \
	--pgdata "$pgdata" --bindir "$bindir" --parallel "${FUZZ_PARALLEL:-1}" \
	--reduce-seconds "${FUZZ_REDUCE_SECONDS:-600}" || rc=$?
if [ $rc -ne 0 ]; then
	echo "---- server log (last 30 lines)"
	tail -n 30 "$work/server.log"
fi
exit $rc
