#!/usr/bin/env bash
# make demo: starts a throwaway cluster with pkchangelog preloaded in a
# temporary directory, runs test/demo/*.sql with their statements echoed,
# and stops the cluster, leaving nothing running or behind.
set -euo pipefail
. "$(dirname "$0")/common.sh"
pk_setup demo

pgdata=$work/pgdata
port=$((56000 + RANDOM % 2000))
cleanup()
{
	if [ -f "$pgdata/postmaster.pid" ]; then
		run_as pg_ctl -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

run_as initdb -D "$pgdata" -A trust -U postgres >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log"; exit 1; }
cat "$work/test/pg_test.conf" >>"$pgdata/postgresql.conf"
run_as pg_ctl -D "$pgdata" -o "-p $port -k $work -c listen_addresses=''" \
	-l "$work/server.log" -w start >/dev/null ||
	{ cat "$work/server.log"; exit 1; }

for f in "$work"/test/demo/*.sql; do
	echo "=============== $(basename "$f")"
	run_as psql -X -h "$work" -p "$port" -U postgres -d postgres \
		-v ON_ERROR_STOP=1 --echo-queries -P pager=off -f "$f"
done
