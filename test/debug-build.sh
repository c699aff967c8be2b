#!/usr/bin/env bash
# make check-debug: runs pkchangelog's tests against an assert-enabled
# PostgreSQL 15 built from Debian's source package, where a production build
# hides defects: failed assertions, memory used after a relcache entry or a
# memory context was freed (debug_discard_caches = 1 frees every cache entry
# at every chance; valgrind's memcheck sees each invalid read).  Not part of
# "make test": the build takes about 10 minutes, the checks an hour or more.
#
#   test/debug-build.sh [CHECK...]
#
# CHECK is one of (default: all three)
#   assert     the pg_regress suites (the Makefile's REGRESS), isolation
#              specs (ISOLATION) and test/debug/*.sql against the assert
#              build (the TAP tests too: make test PG_CONFIG=$prefix/bin/pg_config)
#   discard    the same with debug_discard_caches = 1
#   valgrind   the crash-prone suites ($PK_VALGRIND_SUITES) and
#              test/debug/*.sql with every server process under valgrind
#
# Environment:
#   PG_DEBUG_PREFIX     where the assert build lives (default /opt/pg-assert);
#                       built there when $PG_DEBUG_PREFIX/bin/pg_config is
#                       missing, reused otherwise
#   PG_DEBUG_SRC        an unpacked PostgreSQL 15 source tree to build from
#                       (default: Debian's postgresql-15 source package,
#                       downloaded with apt-get source)
#   PK_SUITES           pg_regress suites run by assert and discard
#                       (default: REGRESS; "none" skips them)
#   PK_SPECS            isolation specs run by them (default: ISOLATION;
#                       "none" skips them)
#   PK_VALGRIND_SUITES  suites run under valgrind (default: savepoints dml
#                       on_conflict key_updates stream spill)
#
# With discard and valgrind each suite runs in a fresh database of one
# cluster per check, so a crash in one suite does not fail the next.  Prints every failed assertion (TRAP), crash, internal
# error, valgrind error and output difference, then a summary; exits
# non-zero if anything was found.  Outputs are kept in the directory named
# at the end.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${PG_DEBUG_PREFIX:-/opt/pg-assert}
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(assert discard valgrind)
for c in "${checks[@]}"; do
	case "$c" in assert|discard|valgrind) ;; *) echo "unknown check: $c (assert, discard, valgrind)" >&2; exit 2;; esac
done

# ---- the assert build -------------------------------------------------------

# Configure options: assertions, symbols, an optimization level that keeps
# stacks readable, and memory contexts that tell valgrind what they free.
# test/pg-build.sh builds Debian's postgresql-15 source package (or
# PG_DEBUG_SRC) into $prefix, or reuses the build there.
if [ -x "$prefix/bin/pg_config" ] && ! "$prefix/bin/pg_config" --configure | grep -q -- --enable-cassert; then
	echo "$prefix holds a PostgreSQL built without --enable-cassert: choose another PG_DEBUG_PREFIX" >&2
	exit 1
fi
PK_PG_SRC=${PG_DEBUG_SRC:-} PK_PG_CONFIGURE="--enable-cassert --enable-debug --without-llvm" \
	CFLAGS="-O1 -g -fno-omit-frame-pointer" CPPFLAGS="-DUSE_VALGRIND" \
	bash "$top/test/pg-build.sh" 15 "$prefix" >/dev/null || exit 1
echo "the assert build in $prefix: $("$prefix/bin/pg_config" --version)"

PG_CONFIG=$prefix/bin/pg_config
. "$top/test/common.sh"
pk_setup debug
isolation_dir=$pgxs/src/test/isolation
supp=$("$PG_CONFIG" --sharedir)/valgrind.supp
run_as chmod 755 "$work"
echo "outputs in $work"

eval "$(make -s --no-print-directory -C "$top" PG_CONFIG="$PG_CONFIG" test-lists)"
suites=${PK_SUITES:-$REGRESS}
vg_suites=${PK_VALGRIND_SUITES:-savepoints dml on_conflict key_updates stream spill}
specs=${PK_SPECS:-$ISOLATION}
[ "$suites" = none ] && suites=
[ "$specs" = none ] && specs=

findings=0
summary=()

# ---- one cluster per check ----------------------------------------------------

# cluster_start CHECK EXTRA_CONF [WRAPPER]: initdb and start $work/CHECK/data;
# WRAPPER, if given, is the executable pg_ctl starts instead of postgres.
cluster_start()
{
	local check=$1 extra=$2 wrapper=${3:-}
	cdir=$work/$check
	pgdata=$cdir/data
	port=$((57600 + RANDOM % 300))
	run_as mkdir -p "$cdir"
	run_as initdb -D "$pgdata" -A trust -U postgres >"$cdir/initdb.log" 2>&1 ||
		{ cat "$cdir/initdb.log"; return 1; }
	{
		# a source older than 15.20 (Debian's source package may lag
		# behind its server) has no output_plugin_libraries
		if "$bindir/postgres" --describe-config 2>/dev/null | grep -q '^output_plugin_libraries'; then
			cat "$work/test/pg_test.conf"
		else
			grep -v '^output_plugin_libraries' "$work/test/pg_test.conf"
		fi
		echo "log_line_prefix = '%m [%p] %e %q%a '"
		echo "max_connections = 30"
		echo "$extra"
	} >>"$pgdata/postgresql.conf"
	run_as pg_ctl -D "$pgdata" ${wrapper:+-p "$wrapper"} -c -t 600 -w \
		-o "-p $port -k $cdir -c listen_addresses=''" -l "$cdir/server.log" start >/dev/null ||
		{ tail -n 30 "$cdir/server.log"; return 1; }
	# CREATE EXTENSION once, in a template, with caches kept: with
	# debug_discard_caches = 1 it alone takes many minutes
	run_as env PGOPTIONS="-c debug_discard_caches=0" psql -X -q -h "$cdir" -p "$port" -U postgres \
		-d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE pk_template TEMPLATE template0" &&
	run_as env PGOPTIONS="-c debug_discard_caches=0" psql -X -q -h "$cdir" -p "$port" -U postgres \
		-d pk_template -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pkchangelog"
}

# fresh_db NAME: a new database with the extension and pg_regress's settings
fresh_db()
{
	local db=$1
	run_as env PGOPTIONS="-c debug_discard_caches=0" psql -X -q -h "$cdir" -p "$port" -U postgres \
		-d postgres -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS $db" \
		-c "CREATE DATABASE $db TEMPLATE pk_template" \
		-c "ALTER DATABASE $db SET lc_messages TO 'C'" \
		-c "ALTER DATABASE $db SET lc_monetary TO 'C'" \
		-c "ALTER DATABASE $db SET lc_numeric TO 'C'" \
		-c "ALTER DATABASE $db SET lc_time TO 'C'" \
		-c "ALTER DATABASE $db SET bytea_output TO 'hex'" \
		-c "ALTER DATABASE $db SET timezone_abbreviations TO 'Default'"
}

cluster_stop()
{
	run_as pg_ctl -D "$pgdata" -m fast -t 600 -w stop >/dev/null 2>&1 ||
		run_as pg_ctl -D "$pgdata" -m immediate -w stop >/dev/null 2>&1 || true
}

# a crash restarts every backend; wait until the server takes connections
cluster_wait()
{
	# (a backend under valgrind on a busy machine needs more than
	# pg_isready's default 3 s to answer)
	for _ in $(seq 1 60); do
		run_as pg_isready -q -t 120 -h "$cdir" -p "$port" && return 0
		sleep 5
	done
	echo "server of $check does not come back (see $cdir/server.log)" >&2
	return 1
}

# run_tests CHECK KIND NAME...: each pg_regress suite (KIND regress) or
# isolation spec (KIND isolation) in a fresh database
run_tests()
{
	local check=$1 kind=$2 s ok=0 bad=0 out db prog inputdir
	shift 2
	if [ "$kind" = regress ]; then
		db=contrib_regression prog=$pgxs/src/test/regress/pg_regress inputdir=$work
	else
		db=isolation_regression prog=$isolation_dir/pg_isolation_regress inputdir=$work/test/isolation
	fi
	for s in "$@"; do
		cluster_wait || return 1
		out=$cdir/$kind-$s
		run_as mkdir -p "$out"
		fresh_db "$db" || return 1
		if run_as "$prog" --bindir="$bindir" --host="$cdir" --port="$port" \
			--inputdir="$inputdir" --outputdir="$out" --use-existing --dbname="$db" \
			"$s" >"$out/pg_regress.out" 2>&1; then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
			finding "$check" "$kind $s failed" "$(cat "$out/pg_regress.out"; head -n 80 "$out/regression.diffs" 2>/dev/null)"
		fi
		collect_core "$check" "$kind-$s"
	done
	summary+=("$check: $kind $ok passed, $bad failed")
}

# test/debug/*.sql: reproductions whose output is not compared; what they
# must not do is crash or touch freed memory
run_debug_sql()
{
	local check=$1 f n=0
	for f in "$work"/test/debug/*.sql; do
		[ -e "$f" ] || continue
		cluster_wait || return 1
		fresh_db debug_sql || return 1
		run_as psql -X -h "$cdir" -p "$port" -U postgres -d debug_sql -a \
			-v VERBOSITY=verbose -f "$f" \
			>"$cdir/$(basename "$f" .sql).out" 2>&1
		collect_core "$check" "$(basename "$f")"
		n=$((n + 1))
	done
	summary+=("$check: test/debug $n scripts ran (output in $cdir/*.out)")
}

# a backtrace of the core a crash left in the data directory (kernel
# core_pattern "core"), moved aside so the next crash does not overwrite it
collect_core()
{
	local check=$1 what=$2 core
	for core in "$pgdata"/core*; do
		[ -f "$core" ] || continue
		mv "$core" "$cdir/core.$what"
		if command -v gdb >/dev/null; then
			finding "$check" "core dumped during $what" \
				"$(gdb -q -batch -ex 'bt 40' "$bindir/postgres" "$cdir/core.$what" 2>&1 |
					grep -E '^(#|Program terminated|Core was generated)')"
		else
			finding "$check" "core dumped during $what" "$cdir/core.$what (install gdb for its backtrace)"
		fi
	done
}

finding()
{
	findings=$((findings + 1))
	echo
	echo "!!!! [$1] $2"
	echo "$3" | sed 's/^/    /'
}

# every failed assertion and crash in the server log, with its backtrace
# and the statement the backend was running
scan_server_log()
{
	local check=$1 log=$cdir/server.log n
	n=$(grep -c '^TRAP:' "$log")
	if [ "$n" -gt 0 ]; then
		finding "$check" "$n failed assertions" "$(grep -A 24 '^TRAP:' "$log")"
	fi
	# (background workers exit with code 1 at every shutdown)
	crash='terminated by signal|terminated by exception|exited with exit code ([2-9]|[1-9][0-9]+)'
	n=$(grep -cE "$crash" "$log")
	if [ "$n" -gt 0 ]; then
		finding "$check" "$n server processes crashed" "$(grep -A 1 -E "$crash" "$log")"
	fi
	# elog(ERROR) is for can't-happen conditions; corrupted memory shows
	# up as one (e.g. a huge alloc request from freed, clobbered memory)
	n=$(grep -c ' XX000 .*ERROR: ' "$log")
	if [ "$n" -gt 0 ]; then
		finding "$check" "$n internal errors (XX000)" "$(grep -A 1 ' XX000 .*ERROR: ' "$log")"
	fi
	summary+=("$check: $(grep -c '^TRAP:' "$log") TRAP, $(grep -cE 'terminated by signal' "$log") crashes, $n internal errors in the server log")
}

scan_valgrind_logs()
{
	local check=$1 f n=0 nf=0
	for f in "$cdir"/valgrind/*.log; do
		[ -e "$f" ] || continue
		nf=$((nf + 1))
		if grep -q 'VALGRINDERROR-BEGIN' "$f"; then
			n=$((n + $(grep -c 'VALGRINDERROR-BEGIN' "$f")))
			finding "$check" "valgrind errors in $(basename "$f")" \
				"$(sed -n '/VALGRINDERROR-BEGIN/,/VALGRINDERROR-END/p' "$f" | head -n 120)"
		fi
	done
	summary+=("$check: $n valgrind errors in $nf process logs")
}

# ---- the checks ---------------------------------------------------------------

for check in "${checks[@]}"; do
	start=$(date +%s)
	echo "== $check"
	case "$check" in
		assert|discard)
			if [ "$check" = discard ]; then
				conf="debug_discard_caches = 1"
				# the changelog checker's replay is jsonb processing, no
				# pkchangelog code: with its caches discarded it alone
				# would take most of a suite's time
				echo "ALTER FUNCTION check_stream SET debug_discard_caches = 0;" \
					>>"$work/test/setup/changelog_checker.sql"
			else
				conf=""
			fi
			cluster_start "$check" "$conf" || exit 1
			# shellcheck disable=SC2086
			[ -z "$suites" ] || run_tests "$check" regress $suites
			# shellcheck disable=SC2086
			[ -z "$specs" ] || run_tests "$check" isolation $specs
			run_debug_sql "$check"
			;;
		valgrind)
			command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
			vgdir=$work/valgrind/valgrind
			run_as mkdir -p "$vgdir"
			# PostgreSQL's own settings for memcheck (src/tools/valgrind.supp,
			# error markers to find each report in a process's log)
			cat >"$work/valgrind/postgres" <<-EOF
			#!/bin/sh
			exec valgrind --quiet --trace-children=yes --track-origins=yes \\
				--num-callers=40 --leak-check=no --gen-suppressions=all \\
				--suppressions=$supp \\
				--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \\
				--log-file=$vgdir/%p.log "$bindir/postgres" "\$@"
			EOF
			chmod 755 "$work/valgrind/postgres"
			cluster_start valgrind "" "$work/valgrind/postgres" || exit 1
			# shellcheck disable=SC2086
			run_tests valgrind regress $vg_suites
			run_debug_sql valgrind
			;;
	esac
	cluster_stop
	scan_server_log "$check"
	[ "$check" = valgrind ] && scan_valgrind_logs "$check"
	summary+=("$check: took $(( $(date +%s) - start )) s")
done

echo
echo "== summary ($("$PG_CONFIG" --version), assert build in $prefix)"
printf '%s\n' "${summary[@]}"
echo "$findings findings; outputs kept in $work"
[ "$findings" -eq 0 ]
