#!/usr/bin/env bash
# Bulk upsert: loads 200k rows, then times writing 400k rows over them (ids
# 100001..500000: 100k overwrite existing keys, 300k are new), commit
# included.  heap needs INSERT ... ON CONFLICT (id) DO UPDATE; on pkmerge a
# plain INSERT is the upsert.  Target: pkmerge at least 3x faster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

compare "$bulk_upsert_label" s min 3 a/b ">= 3x" bulk_upsert_seconds
drop_sides
