# Sourced by the test, demo and bench drivers: locates PostgreSQL (the
# pg_config of $PG_CONFIG; with PG=18, say, a server of that major built
# from Debian's source package by test/pg-build.sh), builds and installs
# the extension, and prepares a scratch directory that
# the unprivileged user running the servers can write.
#
# After "pk_setup NAME": $bindir, $pgxs, $work (scratch copy of the tree's
# sources: the Makefile, control file, META.json, LICENSE, sql/, expected/,
# test/, debian/, README.md, doc/ and src/), and "run_as CMD..." running
# CMD as that user.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
# PG=MAJOR: that major's server, Debian's package for 15, else built once
# from Debian's source package into a cache directory
if [ -n "${PG:-}" ] && ! "$PG_CONFIG" --version 2>/dev/null | grep -q "^PostgreSQL $PG\."; then
	PG_CONFIG=$(bash "$top/test/pg-build.sh" "$PG") || { echo "no PostgreSQL $PG" >&2; exit 1; }
fi

pk_die() { echo "$*" >&2; exit 1; }

run_as()
{
	if [ "$(id -u)" -eq 0 ]; then
		# initdb and postgres refuse root: run as the postgres account
		runuser -u postgres -- env PATH="$bindir:$PATH" "$@"
	else
		env PATH="$bindir:$PATH" "$@"
	fi
}

pk_setup()
{
	command -v "$PG_CONFIG" >/dev/null || pk_die "pg_config not found (set PG_CONFIG)"
	bindir=$("$PG_CONFIG" --bindir)
	pgxs=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/../.." && pwd)
	case "$("$PG_CONFIG" --version)" in
		"PostgreSQL 15."* | "PostgreSQL 18."*) ;;
		*) pk_die "pkchangelog supports PostgreSQL 15 and 18; $PG_CONFIG is $("$PG_CONFIG" --version)";;
	esac
	pgmajor=$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')

	local log stamp=$top/.pg_build_stamp want
	# objects built for another PostgreSQL (make check-debug's assert
	# build, say) are built again: PGXS does not track the server's headers
	want=$("$PG_CONFIG" --version; "$PG_CONFIG" --includedir-server; "$PG_CONFIG" --configure)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		make -C "$top" -s PG_CONFIG="$PG_CONFIG" clean >/dev/null 2>&1
		printf '%s\n' "$want" >"$stamp"
	fi
	log=$(mktemp)
	if ! make -C "$top" -s PG_CONFIG="$PG_CONFIG" all >"$log" 2>&1; then
		cat "$log"; rm -f "$log"; pk_die "build failed"
	fi
	if grep -qi "warning" "$log"; then
		cat "$log"; rm -f "$log"; pk_die "build printed warnings"
	fi
	if ! make -C "$top" -s PG_CONFIG="$PG_CONFIG" install >"$log" 2>&1; then
		cat "$log"; rm -f "$log"; pk_die "install failed (run as root, or own $("$PG_CONFIG" --pkglibdir))"
	fi
	rm -f "$log"

	work=$(mktemp -d "/tmp/pkchangelog-$1.XXXXXX")
	# README.md, doc/ and src/ for t/003_docs.pl, which reads them
	cp -r "$top/Makefile" "$top/pkchangelog.control" "$top/META.json" "$top/LICENSE" \
		"$top/sql" "$top/expected" "$top/test" "$top/debian" "$top/README.md" "$top/doc" \
		"$top/src" "$work/"
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || pk_die "no 'postgres' account to run the servers as"
		chown -R postgres: "$work"
	fi
}

# pk_cluster_start [EXTRA_CONF]: initdb and start a throwaway cluster in
# $work/pgdata (test/pg_test.conf plus EXTRA_CONF lines), unix socket in
# $work, no TCP; sets $pgdata and $port and stops the cluster and removes
# $work on exit.
pk_cluster_start()
{
	pgdata=$work/pgdata
	port=$((56000 + RANDOM % 2000))
	trap pk_cluster_cleanup EXIT
	run_as initdb -D "$pgdata" -A trust -U postgres >"$work/initdb.log" 2>&1 ||
		{ cat "$work/initdb.log"; exit 1; }
	{ cat "$work/test/pg_test.conf"; echo "${1:-}"; } >>"$pgdata/postgresql.conf"
	run_as pg_ctl -D "$pgdata" -o "-p $port -k $work -c listen_addresses=''" \
		-l "$work/server.log" -w start >/dev/null ||
		{ cat "$work/server.log"; exit 1; }
}

pk_cluster_cleanup()
{
	if [ -f "$pgdata/postmaster.pid" ]; then
		run_as pg_ctl -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
