#!/usr/bin/env bash
# make test: builds and installs pkchangelog, then runs "make installcheck"
# (every pg_regress suite, sql/ in the Makefile's REGRESS order, and every
# isolation spec, test/isolation/specs) against a throwaway server
# configured as README.md's "Installing" section says, with prepared
# transactions on and off; every TAP test (test/t/*.pl) on servers of their
# own; and, as root, the distributions (test/package.sh).  Prints the
# diffs of failures and one summary line "N passed, N failed"; exits
# non-zero on any failure.
set -uo pipefail
. "$(dirname "$0")/common.sh"
pk_setup test

passed=0
failed=0
failed_names=()
port_base=$((54000 + RANDOM % 2000))

# The Makefile's lists (REGRESS, ISOLATION), as make installcheck runs them
eval "$(make -s --no-print-directory -C "$top" PG_CONFIG="$PG_CONFIG" test-lists)"

# Every suite in sql/ (the files beside the extension scripts) must be in
# REGRESS, every spec in ISOLATION: a test file that is not run would be a
# silent skip.
for f in "$top"/sql/*.sql; do
	t=$(basename "$f" .sql)
	[[ $t == pkchangelog--* ]] && continue
	[[ " $REGRESS " == *" $t "* ]] || pk_die "sql/$t.sql is not in the Makefile's REGRESS"
done
for f in "$top"/test/isolation/specs/*.spec; do
	t=$(basename "$f" .spec)
	[[ " $ISOLATION " == *" $t "* ]] || pk_die "test/isolation/specs/$t.spec is not in the Makefile's ISOLATION"
done

# pg_regress prints one line per test: "test NAME ... ok" / "... FAILED"
# (15), "ok N - NAME" / "not ok N - NAME" (TAP, 16 on)
ok_line='\.\.\. +ok|^ok +[0-9]+ +- '
failed_line='\.\.\. +FAILED|failed \(ignored\)|^not ok +[0-9]+ +- '
count_regress()
{
	local out=$1
	local suite=$2 name
	passed=$((passed + $(grep -cE "$ok_line" "$out")))
	failed=$((failed + $(grep -cE "$failed_line" "$out")))
	for name in $(sed -nE -e 's/^[ ]*(test|permutation)?[ ]*([A-Za-z0-9_]+) +\.\.\. +(FAILED|failed \(ignored\)).*/\2/p' \
		-e 's/^not ok +[0-9]+ +- +([A-Za-z0-9_]+).*/\1/p' "$out"); do
		failed_names+=("$suite/$name")
	done
}

# make installcheck against a server configured as the README's
# "Installing" section says (its settings block; the background worker on,
# as in a real installation), with max_prepared_transactions = 10 and then
# at PostgreSQL's default 0.  fsync = off only speeds the throwaway cluster.
settings=$work/installing.conf
awk '/^## Installing/ { s = 1; next } /^## / { s = 0 } s && /^```ini$/ { b = 1; next } b && /^```$/ { exit } b' \
	"$work/README.md" >"$settings"
grep -q "^shared_preload_libraries = 'pkchangelog'" "$settings" ||
	pk_die "README.md's Installing section gives no settings block preloading pkchangelog"
ic=$work/installcheck
run_as mkdir -p "$ic"
run_as initdb -D "$ic/data" -A trust -U postgres >"$ic/initdb.log" 2>&1 || { cat "$ic/initdb.log"; pk_die "initdb failed"; }
cat "$settings" >>"$ic/data/postgresql.conf"
echo "fsync = off" >>"$ic/data/postgresql.conf"
ic_stop() { run_as pg_ctl -D "$ic/data" -m fast -w stop >/dev/null 2>&1; }
trap ic_stop EXIT

installcheck_with()
{
	local mpt=$1 out=$work/installcheck-$1.out rc d
	echo "== make installcheck (README's settings, max_prepared_transactions = $mpt)"
	ic_stop
	run_as pg_ctl -D "$ic/data" -w -l "$ic/server.log" \
		-o "-p $port_base -k $ic -c listen_addresses='' -c max_prepared_transactions=$mpt" start >/dev/null ||
		{ tail -n 30 "$ic/server.log"; pk_die "the installcheck server did not start"; }
	rm -rf "$work/results" "$work/output_iso" "$work/regression.diffs"
	(cd "$work" && run_as env PGHOST="$ic" PGPORT=$port_base \
		make -s installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTS=) >"$out" 2>&1
	rc=$?
	cat "$out"
	count_regress "$out" "installcheck-mpt$mpt"
	if [ $rc -ne 0 ]; then
		for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
			[ -f "$d" ] && cat "$d"
		done
		grep -qE "$failed_line" "$out" || { failed=$((failed + 1)); failed_names+=("installcheck-mpt$mpt (exit $rc)"); }
	fi
}
installcheck_with 10
# every spec ran with prepared transactions on
for s in $ISOLATION_PREPARED; do
	grep -qE "^(test )?$s +\.\.\.|^(not )?ok +[0-9]+ +- +$s " "$work/installcheck-10.out" ||
		{ failed=$((failed + 1)); failed_names+=("installcheck-mpt10 ($s did not run)"); }
done
installcheck_with 0
grep -q "max_prepared_transactions = 0 on this server: isolation specs" "$work/installcheck-0.out" ||
	{ failed=$((failed + 1)); failed_names+=("installcheck-mpt0 (no note of the specs left out)"); }
ic_stop
trap - EXIT

# pg_upgrade from 15 (test/t/041_pg_upgrade.pl), under PG=18: from a
# PostgreSQL 15 built from Debian's source package, with the library built
# for it.  Not from Debian 12's 15.20 packages: their servers give every
# column a "pg_attver" option that 18.6 does not know, and pg_upgrade to
# 18.6 fails on any table (doc/operations.md).
upgrade_from=
if [ "$pgmajor" = 18 ]; then
	echo "== PostgreSQL 15 from Debian's source package, for pg_upgrade to 18"
	old_config=$(bash "$top/test/pg-build.sh" 15) || pk_die "could not build PostgreSQL 15"
	rm -rf "$work/pg15-build" && mkdir "$work/pg15-build" &&
		cp -r "$top"/Makefile "$top"/pkchangelog.control "$top"/pkchangelog.exports \
			"$top"/src "$top"/sql "$work/pg15-build" &&
		rm -f "$work"/pg15-build/src/*.o || pk_die "could not copy the sources for the PostgreSQL 15 build"
	make -s -C "$work/pg15-build" PG_CONFIG="$old_config" install >"$work/pg15-build.log" 2>&1 ||
		{ cat "$work/pg15-build.log"; pk_die "could not build the library for PostgreSQL 15"; }
	upgrade_from=$(cd "$("$old_config" --bindir)/.." && pwd)
fi

echo "== TAP"
for t in "$work"/test/t/*.pl; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	tdir=$work/tap/${name%.pl}
	run_as mkdir -p "$tdir"
	# from the top directory, as make installcheck runs them
	if (cd "$work" && run_as env \
			PERL5LIB="$pgxs/src/test/perl:$work/test/t" \
			PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
			TESTDIR="$tdir" TESTDATADIR="$tdir/tmp_check" TESTLOGDIR="$tdir/tmp_check/log" \
			TEMP_CONFIG="$work/test/pg_test.conf" PK_UPGRADE_FROM="$upgrade_from" \
			prove "test/t/$name"); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names+=("tap/$name")
		# the failed assertions with their diagnostics, for the summary
		for f in "$tdir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] || continue
			grep -E -A8 '^(\[[^]]*\]\([^)]*\) )?not ok' "$f" | head -n 40 >>"$work/tap-failures"
			# a script that died names why in its log, not in a "not ok"
			grep -E 'died|error running SQL|BAIL_OUT|pg_ctl .* failed' "$f" |
				head -n 10 | sed "s|^|$name: |" >>"$work/tap-failures"
		done
		# what made a server fail or go away (a crash, a full disk, ...)
		for f in "$tdir"/tmp_check/log/*.log; do
			[ -f "$f" ] || continue
			grep -E 'PANIC|TRAP|terminated by signal|No space left|FATAL' "$f" |
				grep -v -E 'due to administrator command|the database system is (starting up|shutting down|in recovery mode)' |
				head -n 10 | sed "s|^|$(basename "$f"): |" >>"$work/tap-failures"
		done
		for f in "$tdir"/tmp_check/log/*; do
			[ -f "$f" ] || continue
			echo "---- $f (last 40 lines)"; tail -n 40 "$f"
		done
	fi
done

# as root: the distributions (test/package.sh), which installs and removes
# the package; make install then puts the library back.  The package is
# built against the distribution's PostgreSQL packages: for a major the
# distribution lacks (18 on Debian 12), "make test" of a major it has
# tests it.
if [ "$(id -u)" -eq 0 ] && ! apt-cache show "postgresql-$pgmajor" >/dev/null 2>&1; then
	echo "== package: not run (this distribution has no PostgreSQL $pgmajor packages to build the package against)"
elif [ "$(id -u)" -eq 0 ]; then
	echo "== package"
	out=$work/package.out
	bash "$top/test/package.sh" "$top" >"$out" 2>&1
	cat "$out"
	passed=$((passed + $(grep -c '^ok - ' "$out")))
	failed=$((failed + $(grep -c '^not ok - ' "$out")))
	while IFS= read -r line; do
		failed_names+=("package/${line#not ok - }")
	done < <(grep '^not ok - ' "$out")
	grep -q '^ok - ' "$out" || { failed=$((failed + 1)); failed_names+=("package (no check ran)"); }
	make -C "$top" -s PG_CONFIG="$PG_CONFIG" install >/dev/null ||
		{ failed=$((failed + 1)); failed_names+=("make install after the package test"); }
else
	echo "== package: not run (installing a package needs root)"
fi

echo
if [ "$failed" -eq 0 ]; then
	rm -rf "$work"
else
	echo "outputs kept in $work (results in $work/regress/results)"
fi
# The summary's last lines name what failed: a CI log often keeps only its tail
if [ -s "$work/tap-failures" ]; then
	echo "failed TAP assertions:"
	cat "$work/tap-failures"
fi
if [ "$failed" -ne 0 ]; then
	echo "failed: ${failed_names[*]}"
	echo "free disk under $work: $(df -Ph "$work" | awk 'NR == 2 { print $4 }')"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
