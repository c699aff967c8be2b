#!/usr/bin/env bash
# make bench: prints pkmerge figures beside heap on the same run.  Benchmarks
# are not tests: they print ratios and never fail on time.
set -euo pipefail
. "$(dirname "$0")/common.sh"
shopt -s nullglob
benches=("$top"/test/bench/*.sh)
if [ ${#benches[@]} -eq 0 ]; then
	echo "no benchmarks yet: they arrive with the pkmerge table access method"
	exit 0
fi
pk_setup bench
trap 'rm -rf "$work"' EXIT
for b in "${benches[@]}"; do
	echo "=============== $(basename "$b")"
	bash "$b"
done
