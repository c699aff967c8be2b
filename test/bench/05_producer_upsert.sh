#!/usr/bin/env bash
# Cost of the lookup producer: the bulk upsert of 01_bulk_upsert.sh (400k
# rows over 200k) on two pkmerge tables, changelog_producer 'none' and
# 'lookup' (which looks up every written key at commit to emit -U/+U).
# Target: lookup <= 1.5x none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_producers || exit 0
sides none "$(producer_spec none)" lookup "$(producer_spec lookup)"
compare "$bulk_upsert_label" s min 2 b/a "<= 1.5x" bulk_upsert_seconds
drop_sides
