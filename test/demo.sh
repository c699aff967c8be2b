#!/usr/bin/env bash
# make demo: builds and installs the library (as make test does), starts a
# throwaway cluster with pkchangelog preloaded in a temporary directory,
# runs test/demo/*.sql (their \echo lines tell the story, their statements
# are echoed; psql variable conninfo connects to the cluster, for a
# subscription), and stops and removes the cluster, leaving nothing running.
set -euo pipefail
. "$(dirname "$0")/common.sh"
pk_setup demo

pk_cluster_start

for f in "$work"/test/demo/*.sql; do
	echo "=============== $(basename "$f")"
	run_as psql -X -h "$work" -p "$port" -U postgres -d postgres \
		-v ON_ERROR_STOP=1 --echo-queries -P pager=off \
		-v conninfo="host=$work port=$port user=postgres dbname=postgres" -f "$f"
done
