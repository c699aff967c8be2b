#!/usr/bin/env bash
# make deb: builds the Debian package postgresql-15-pkchangelog (debian/,
# pg_buildext) with dpkg-buildpackage in a copy of the tree under /tmp,
# which also runs the regression suites against the built files
# (debian/tests/installcheck, on a throwaway cluster), and copies the .deb
# to $DEB_OUT (default: the top directory).  Run as root, it first installs
# the build dependencies debian/control names, from Debian's packages,
# when some are missing.  Prints the .deb's path last.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${DEB_OUT:-$top}

die() { echo "make deb: $*" >&2; exit 1; }

command -v dpkg-buildpackage >/dev/null || [ "$(id -u)" -eq 0 ] ||
	die "dpkg-buildpackage not found (Debian: dpkg-dev; as root, make deb installs it)"
if ! (cd "$top" && dpkg-checkbuilddeps >/dev/null 2>&1); then
	[ "$(id -u)" -eq 0 ] ||
		die "missing build dependencies: $(cd "$top" && dpkg-checkbuilddeps 2>&1 | sed 's/.*Unmet build dependencies: //'); run make deb as root to install them"
	echo "installing the build dependencies of debian/control"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	(cd "$top" && apt-get build-dep -y -q ./) >/dev/null
fi

build=$(mktemp -d /tmp/pkchangelog-deb.XXXXXX)
trap 'rm -rf "$build"' EXIT
# the build-time tests' cluster runs as postgres and reads the tree
chmod 755 "$build"
src=$build/pkchangelog
mkdir "$src"
# the files git tracks and would track (uncommitted changes included), or,
# outside a git checkout (a PGXN zip), the tree less what a build leaves
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$src")
else
	(cd "$top" && tar cf - --exclude='*.o' --exclude='*.so' --exclude='*.deb' \
		--exclude=results --exclude=output_iso --exclude=tmp_check .) | (cd "$src" && tar xf -)
fi
log=$build/build.log
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
	tail -n 80 "$log"
	die "dpkg-buildpackage failed (the log's end is above)"
fi
grep -E '^(test |permutation |.*tests passed|.*tests failed)' "$log" | grep -vE '\.\.\. +ok' || true
debs=("$build"/postgresql-*-pkchangelog_*.deb)
[ -e "${debs[0]}" ] || die "dpkg-buildpackage made no postgresql-*-pkchangelog package"
cp "${debs[@]}" "$out/"
for d in "${debs[@]}"; do
	echo "$out/$(basename "$d")"
done
