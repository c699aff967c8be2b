#!/usr/bin/env bash
# make test: builds and installs pkchangelog, then runs every pg_regress
# suite (test/sql, in the Makefile's REGRESS order), every isolation spec
# (test/isolation/specs: ISOLATION) and every TAP test (test/t/*.pl)
# against temporary instances with the library preloaded: the lists and
# options "make installcheck" uses against a running server.  Prints the
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

# Every test/sql/*.sql must be in REGRESS, every spec in ISOLATION: a test
# file that is not run would be a silent skip.
for f in "$top"/test/sql/*.sql; do
	t=$(basename "$f" .sql)
	[[ " $REGRESS " == *" $t "* ]] || pk_die "test/sql/$t.sql is not in the Makefile's REGRESS"
done
for f in "$top"/test/isolation/specs/*.spec; do
	t=$(basename "$f" .spec)
	[[ " $ISOLATION " == *" $t "* ]] || pk_die "test/isolation/specs/$t.spec is not in the Makefile's ISOLATION"
done

count_regress()
{
	# pg_regress prints one line per test: "test NAME ... ok" / "... FAILED"
	local out=$1
	local suite=$2 name
	passed=$((passed + $(grep -cE '\.\.\. +ok' "$out")))
	failed=$((failed + $(grep -cE '\.\.\. +FAILED|failed \(ignored\)' "$out")))
	for name in $(sed -nE 's/^[ ]*(test|permutation)?[ ]*([A-Za-z0-9_]+) +\.\.\. +(FAILED|failed \(ignored\)).*/\2/p' "$out"); do
		failed_names+=("$suite/$name")
	done
}

echo "== pg_regress"
out=$work/regress.out
# shellcheck disable=SC2086
run_as "$pgxs/src/test/regress/pg_regress" \
	--bindir="$bindir" --port=$port_base \
	--temp-instance="$work/tmp_regress" --temp-config="$work/test/pg_test.conf" \
	--inputdir="$work/test" --outputdir="$work/regress" \
	--dbname=contrib_regression --load-extension=pkchangelog \
	$REGRESS >"$out" 2>&1
rc=$?
cat "$out"
count_regress "$out" regress
if [ $rc -ne 0 ]; then
	[ -f "$work/regress/regression.diffs" ] && cat "$work/regress/regression.diffs"
	grep -qE '\.\.\. +FAILED' "$out" || { failed=$((failed + 1)); failed_names+=("regress (exit $rc)"); }
fi

if [ -n "$ISOLATION" ]; then
	echo "== isolation"
	out=$work/isolation.out
	# shellcheck disable=SC2086
	run_as "$pgxs/src/test/isolation/pg_isolation_regress" \
		--bindir="$bindir" --port=$((port_base + 1)) \
		--temp-instance="$work/tmp_isolation" --temp-config="$work/test/pg_test.conf" \
		--inputdir="$work/test/isolation" --outputdir="$work/isolation" \
		--dbname=isolation_regression --load-extension=pkchangelog \
		$ISOLATION >"$out" 2>&1
	rc=$?
	cat "$out"
	count_regress "$out" isolation
	if [ $rc -ne 0 ]; then
		[ -f "$work/isolation/regression.diffs" ] && cat "$work/isolation/regression.diffs"
		grep -qE '\.\.\. +FAILED' "$out" || { failed=$((failed + 1)); failed_names+=("isolation (exit $rc)"); }
	fi
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
			TESTDIR="$tdir" TEMP_CONFIG="$work/test/pg_test.conf" \
			PG_TEST_NOCLEAN= \
			prove "test/t/$name"); then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names+=("tap/$name")
		# the failed assertions with their diagnostics, for the summary
		for f in "$tdir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && grep -E -A8 '^(\[[^]]*\]\([^)]*\) )?not ok' "$f" | head -n 40 >>"$work/tap-failures"
		done
		for f in "$tdir"/tmp_check/log/*; do
			[ -f "$f" ] || continue
			echo "---- $f (last 40 lines)"; tail -n 40 "$f"
		done
	fi
done

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
[ "$failed" -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
