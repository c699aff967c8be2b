#!/usr/bin/env bash
# Builds a PostgreSQL server of one major version from Debian's source
# package into a cache directory, the first time it is asked for, and
# prints its pg_config; later runs reuse the build.  For "make test PG=18"
# and the like (test/common.sh), and the assert build (test/debug-build.sh).
#
#   test/pg-build.sh MAJOR [PREFIX]
#
# PREFIX defaults to $PK_PG_CACHE/pgMAJOR; PK_PG_CACHE to
# /var/cache/pkchangelog as root (the servers run as the postgres account,
# which must read it), else ~/.cache/pkchangelog.  The source is the newest
# version of Debian's postgresql-MAJOR source package that the machine's
# own Debian archive serves, from the suites that carry it (bookworm for
# 15, sid for newer majors).  Configure options: $PK_PG_CONFIGURE, added to
# the ones every build needs (TAP tests, ICU, zstd), with CFLAGS and
# CPPFLAGS from the environment; PK_PG_SRC names an unpacked source tree to
# build instead.  About 5 minutes on 2 cores.
set -euo pipefail

major=${1:?usage: test/pg-build.sh MAJOR [PREFIX]}
[[ $major =~ ^[0-9]+$ ]] || { echo "MAJOR must be a PostgreSQL major version, not '$major'" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then
	cache=${PK_PG_CACHE:-/var/cache/pkchangelog}
else
	cache=${PK_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pkchangelog}
fi
prefix=${2:-$cache/pg$major}
read -r -a extra <<<"${PK_PG_CONFIGURE:-}"
opts=(--enable-tap-tests --with-icu --with-zstd --without-readline "${extra[@]}")
stamp=$prefix/.pkchangelog-build
# the modules of contrib/ the tests use (beside the server's own)
contrib=(test_decoding pg_walinspect pageinspect pg_stat_statements amcheck pg_trgm btree_gist)

# a build of this major with these options and modules is reused
want="postgresql-$major ${opts[*]} contrib=${contrib[*]} CFLAGS=${CFLAGS:-} CPPFLAGS=${CPPFLAGS:-}"
if [ -x "$prefix/bin/pg_config" ] && [ "$(head -n 1 "$stamp" 2>/dev/null)" = "$want" ]; then
	echo "$prefix/bin/pg_config"
	exit 0
fi

# Unpacks the newest postgresql-MAJOR source package the archive serves
# under $1 and prints the tree.  deb-src lists are made from the machine's
# deb lines in a private apt state: the system's apt configuration is left
# alone.
download()
{
	local dir=$1 list aopts ver uri suites
	mkdir -p "$dir/lists/partial"
	suites="bookworm bookworm-updates"
	[ "$major" = 15 ] || suites="sid"
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -n 1)
	else
		uri=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' /etc/apt/sources.list | head -n 1)
	fi
	[ -n "$uri" ] || { echo "no Debian archive configured" >&2; return 1; }
	list=$dir/deb-src.sources
	printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" "$suites" >"$list"
	aopts=(-o Dir::Etc::SourceParts=/dev/null -o Dir::Etc::SourceList="$list"
		-o Dir::State::Lists="$dir/lists")
	apt-get -q "${aopts[@]}" update >"$dir/update.log" 2>&1 ||
		{ cat "$dir/update.log" >&2; return 1; }
	# the newest version whose source the archive really has
	ver=$(cd "$dir" && apt-cache "${aopts[@]}" showsrc "postgresql-$major" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -rV | while read -r v; do
			if apt-get -q "${aopts[@]}" source --download-only "postgresql-$major=$v" \
				>"$dir/source.log" 2>&1; then
				echo "$v"; break
			fi
		done)
	[ -n "$ver" ] || { echo "could not download postgresql-$major's source (see $dir/source.log)" >&2; return 1; }
	(cd "$dir" && tar xf postgresql-"$major"_*.orig.tar.*) || return 1
	echo "Debian source package postgresql-$major $ver" >"$dir/version"
	ls -d "$dir"/postgresql-"$major".* | head -n 1
}

# PostgreSQL's makefiles make their generated headers (errcodes.h, ...)
# only at make level 0: a build started from a make (make test PG=18) is
# made to look like one started by hand
unset MAKELEVEL MAKEFLAGS MFLAGS
build=${TMPDIR:-/tmp}/pkchangelog-pg$major-build
jobs=$(nproc 2>/dev/null || echo 2)
if [ "$(id -u)" -eq 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		gcc make bison flex perl pkg-config libicu-dev zlib1g-dev libzstd-dev \
		libipc-run-perl >"${TMPDIR:-/tmp}/pkchangelog-pg$major-deps.log" 2>&1 ||
		{ cat "${TMPDIR:-/tmp}/pkchangelog-pg$major-deps.log" >&2; exit 1; }
fi
rm -rf "$build"
mkdir -p "$build/obj"
src=${PK_PG_SRC:-}
if [ -z "$src" ]; then
	echo "downloading Debian's postgresql-$major source package into $build/src" >&2
	src=$(download "$build/src")
fi
echo "building $(basename "$src") into $prefix (log in $build/obj)" >&2
rm -rf "$prefix"
(cd "$build/obj" &&
	"$src/configure" --prefix="$prefix" "${opts[@]}" >configure.log 2>&1 &&
	make -j"$jobs" -s >make.log 2>&1 &&
	make -s install >install.log 2>&1 &&
	for d in src/test/isolation "${contrib[@]/#/contrib/}"; do
		make -C "$d" -j"$jobs" -s install >>install.log 2>&1 || exit 1
	done) ||
	{ tail -n 40 "$build"/obj/*.log >&2; echo "PostgreSQL $major build failed: see $build/obj" >&2; exit 1; }
# the assert build's valgrind runs need PostgreSQL's suppressions
cp "$src/src/tools/valgrind.supp" "$("$prefix/bin/pg_config" --sharedir)/valgrind.supp"
{ echo "$want"; cat "$build/src/version" 2>/dev/null || echo "$src"; } >"$stamp"
rm -rf "$build"
echo "$prefix/bin/pg_config"
