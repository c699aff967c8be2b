#!/usr/bin/env bash
# make demo: starts a throwaway cluster with pkchangelog preloaded in a
# temporary directory, runs test/demo/*.sql with their statements echoed,
# and stops the cluster, leaving nothing running or behind.
set -euo pipefail
. "$(dirname "$0")/common.sh"
pk_setup demo

pk_cluster_start

for f in "$work"/test/demo/*.sql; do
	echo "=============== $(basename "$f")"
	run_as psql -X -h "$work" -p "$port" -U postgres -d postgres \
		-v ON_ERROR_STOP=1 --echo-queries -P pager=off -f "$f"
done
