#!/usr/bin/env bash
# Installs the Debian packages pkchangelog needs to build and test, when they
# are missing and we are root.  Idempotent; silent when nothing is missing.
set -euo pipefail

pkgs=(postgresql-15 postgresql-server-dev-15 libzstd-dev libipc-run-perl libdbd-pg-perl zstd)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "missing packages: ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
