#!/usr/bin/env bash
# test/package.sh TOP: the distributions, as a packager and a new user meet
# them; run by make test as root (installing a package needs it), after
# every other test.  Each check prints "ok - ..." or "not ok - ..."; the
# exit status is the number of failed checks.
#
#  - make dist: pkchangelog-VERSION.zip, whose top directory
#    pkchangelog-VERSION/ holds META.json, LICENSE, the control file and
#    the extension scripts, and whose META.json is the tree's;
#  - make deb (test/build-deb.sh): the package builds, and its regression
#    suites pass at build time on a throwaway cluster;
#  - lintian reports no error on the .deb;
#  - apt installs it; a fresh cluster configured with the settings of the
#    README the package installed (its "Installing" section's block) starts
#    with the background worker on, CREATE EXTENSION works, and the demo's
#    incident shows the none stream's naive total 180 and 80 for the
#    others;
#  - apt removes it, and its files are gone.
set -uo pipefail
top=$(cd "${1:?usage: package.sh TOP}" && pwd)
failed=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else notok "$what"; fi; }

[ "$(id -u)" -eq 0 ] || { echo "package.sh: run as root (it installs and removes a package)" >&2; exit 1; }
version=$(sed -n "s/^default_version = '\([0-9]*\.[0-9]*\)'$/\1.0/p" "$top/pkchangelog.control")
tmp=$(mktemp -d /tmp/pkchangelog-package.XXXXXX)
chmod 755 "$tmp"
cleanup()
{
	if [ -f "$tmp/pgdata/postmaster.pid" ]; then
		runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$tmp/pgdata" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- make dist ----------------------------------------------------------
zip=$tmp/pkchangelog-$version.zip
if make -s -C "$top" dist >"$tmp/dist.log" 2>&1 && mv "$top/pkchangelog-$version.zip" "$zip"; then
	ok "make dist made pkchangelog-$version.zip"
	# the members' names and META.json's text, read with Perl's core unzip
	perl -MIO::Uncompress::Unzip=unzip,\$UnzipError -e '
		my ($zip, $list, $meta) = @ARGV;
		my $u = IO::Uncompress::Unzip->new($zip) or die "$UnzipError\n";
		open(my $l, ">", $list) or die $!;
		for (my $s = 1; $s > 0; $s = $u->nextStream)
		{
			my $name = $u->getHeaderInfo->{Name};
			print $l "$name\n";
			if ($name =~ m{^[^/]+/META\.json$})
			{
				open(my $m, ">", $meta) or die $!;
				print $m $_ while <$u>;
			}
		}' "$zip" "$tmp/members" "$tmp/META.json" 2>"$tmp/unzip.err"
	for f in META.json LICENSE README.md Makefile pkchangelog.control "sql/pkchangelog--0.1.sql" debian/control; do
		check "the zip holds pkchangelog-$version/$f" grep -qx "pkchangelog-$version/$f" "$tmp/members"
	done
	check "no member of the zip lies outside pkchangelog-$version/" \
		test -z "$(grep -v "^pkchangelog-$version/" "$tmp/members")"
	check "the zip's META.json is the tree's" cmp -s "$tmp/META.json" "$top/META.json"
else
	cat "$tmp/dist.log"
	notok "make dist made pkchangelog-$version.zip"
fi

# --- make deb, lintian --------------------------------------------------
deb=
if DEB_OUT=$tmp bash "$top/test/build-deb.sh" >"$tmp/deb.log" 2>&1; then
	deb=$(tail -n 1 "$tmp/deb.log")
	ok "make deb built $(basename "$deb"), its suites passing at build time"
else
	tail -n 60 "$tmp/deb.log"
	notok "make deb built the package"
fi
check "the package is postgresql-15-pkchangelog_${version}_$(dpkg --print-architecture).deb" \
	test "$(basename "$deb")" = "postgresql-15-pkchangelog_${version}_$(dpkg --print-architecture).deb"
if [ -n "$deb" ]; then
	command -v lintian >/dev/null || apt-get install -y -q --no-install-recommends lintian >/dev/null 2>&1
	lintian --fail-on error "$deb" >"$tmp/lintian.log" 2>&1
	rc=$?
	sed 's/^/  lintian: /' "$tmp/lintian.log" | grep -v 'running with root privileges' || true
	check "lintian reports no error on the package" test $rc -eq 0
fi

# --- install, configure from the installed README, use, remove ------------
if [ -n "$deb" ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$tmp/install.log" 2>&1; then
	ok "apt installed the package"
	doc=/usr/share/doc/postgresql-15-pkchangelog
	readme=$(ls "$doc"/README.md* 2>/dev/null | head -n 1)
	check "the package installed its README" test -n "$readme"
	check "the package installed the library" test -f /usr/lib/postgresql/15/lib/pkchangelog.so
	# the settings block of the README's "Installing" section
	(if [[ $readme == *.gz ]]; then zcat "$readme"; else cat "$readme"; fi) |
		awk '/^## Installing/ { s = 1; next } /^## / { s = 0 } s && /^```ini$/ { b = 1; next } b && /^```$/ { exit } b' \
			>"$tmp/settings.conf"
	check "the README gives the settings, shared_preload_libraries among them" \
		grep -q "^shared_preload_libraries = 'pkchangelog'" "$tmp/settings.conf"
	pgbin=/usr/lib/postgresql/15/bin
	port=$((57000 + RANDOM % 1000))
	mkdir "$tmp/pgdata" "$tmp/sock" && chown postgres: "$tmp/pgdata" "$tmp/sock"
	if runuser -u postgres -- "$pgbin/initdb" -D "$tmp/pgdata" -A trust -U postgres >"$tmp/initdb.log" 2>&1 &&
		cat "$tmp/settings.conf" >>"$tmp/pgdata/postgresql.conf" &&
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$tmp/pgdata" -w -l "$tmp/sock/server.log" \
			-o "-p $port -k $tmp/sock -c listen_addresses=''" start >/dev/null; then
		ok "a cluster configured from the installed README starts"
		psql_do() { runuser -u postgres -- "$pgbin/psql" -X -h "$tmp/sock" -p "$port" -U postgres -d postgres "$@"; }
		check "its background worker is on" test "$(psql_do -Atc 'SHOW pkchangelog.worker_enabled')" = on
		out=$(psql_do -At -v ON_ERROR_STOP=1 -f "$top/test/demo/01_incident.sql" 2>&1)
		check "CREATE EXTENSION and the demo's incident run" test $? -eq 0
		check "the none stream's naive total is 180" grep -qx 'none|10|180.00' <<<"$out"
		for p in input lookup full-compaction; do
			check "the $p stream's total is 80" grep -qx "$p|10|80.00" <<<"$out"
		done
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$tmp/pgdata" -m fast -w stop >/dev/null
	else
		cat "$tmp/initdb.log" "$tmp/sock/server.log" 2>/dev/null | tail -n 30
		notok "a cluster configured from the installed README starts"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q postgresql-15-pkchangelog >"$tmp/purge.log" 2>&1
	check "apt removed the package" test $? -eq 0
	check "its library and scripts are gone" test ! -e /usr/lib/postgresql/15/lib/pkchangelog.so -a \
		! -e /usr/share/postgresql/15/extension/pkchangelog.control
else
	[ -f "$tmp/install.log" ] && tail -n 20 "$tmp/install.log"
	notok "apt installed the package"
fi
exit $failed
