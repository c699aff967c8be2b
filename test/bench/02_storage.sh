#!/usr/bin/env bash
# Storage: 1M rows (bigint, bigint, numeric(18,2), 21..37-character text),
# pg_total_relation_size right after the load: heap table plus its primary
# key index (after VACUUM) against the pkmerge table (runs plus its virtual
# key index).  Target: pkmerge <= 0.35x of heap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rows=$(scaled 1000000)

# total_mb TABLE SPEC: the table's size on disk, indexes included, in MB.
total_mb() { sql "SELECT pg_total_relation_size('$1') / 1048576.0;"; }

prepare load "$rows"
compare "size of $(human "$rows") rows" MB min 1 b/a "<= 0.35x" total_mb
drop_sides
