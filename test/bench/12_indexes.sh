#!/usr/bin/env bash
# Secondary indexes, the same two btree indexes on both sides (store_id,
# and amount, which is unique per row: ids times a number prime to 10^6):
#   - bulk upsert of 400k rows into 1M (heap: INSERT ... ON CONFLICT DO
#     UPDATE); target pkmerge at least 1.5x faster;
#   - a point query through the amount index (one match), pgbench 1 client,
#     tps; target >= 0.67x heap's (latency <= 1.5x);
#   - a 1-row UPDATE of the indexed store_id, pgbench 1 and 8 clients, tps;
#     targets >= 0.7x and >= 0.5x heap's;
#   - a full compaction of 1M rows (4 runs) with both indexes, rows/s (heap:
#     VACUUM FULL, which rebuilds its indexes); target >= 0.5M rows/s;
#   - the store_id index's size after the load; target <= 1.2x heap's;
#   - the store_id index after 100 rounds of updating store_id in every row
#     of 100k, each round followed by VACUUM (pkmerge: a compaction first,
#     as the background worker would have made), over its size when built;
#     target <= 2x, as heap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_function pk_compact || exit 0
rows=$(scaled 1000000 4)
loaded=$(scaled 1000000 2)
indexes_sql() { echo "CREATE INDEX $1_store ON $1 (store_id); CREATE INDEX $1_amount ON $1 (amount);"; }

# load_indexed TABLE SPEC ROWS: the table with ids 1..ROWS and both indexes
load_indexed()
{
	sql "$(create_sql "$1" "$2") INSERT INTO $1 $(rows_sql 1 "$3"); $(indexes_sql "$1")
		$(settle_sql "$1" "$2")"
}

# upsert_indexed TABLE SPEC: seconds of the bulk upsert (staged rows) into
# the loaded, indexed table
upsert_indexed()
{
	time_sql "$(create_sql "$1" "$2") INSERT INTO $1 $(rows_sql 1 "$loaded"); $(indexes_sql "$1")
		$(settle_sql "$1" "$2")" "$(upsert_sql "$1" "$2" "SELECT * FROM bench_stage")"
}

point_tps()
{
	pgbench_tps 1 "$loaded" '\set g random(1, :rows)' \
		"SELECT id, note FROM $1 WHERE amount = ((:g::bigint * 7919) % 1000000) / 100.0;"
}
update_tps()
{
	pgbench_tps "$3" "$loaded" '\set id random(1, :rows)' \
		"UPDATE $1 SET store_id = (store_id + 1) % 100 WHERE id = :id;"
}

# compaction_rate TABLE SPEC: rows/s of a full rewrite of 4 runs with the indexes
compaction_rate() { rewrite_rate "$1" "$2" "$(indexes_sql "$1")"; }

# index_mb TABLE SPEC: the store_id index's size after a load
index_mb()
{
	load_indexed "$1" "$2" "$loaded"
	div "$(sql "SELECT pg_relation_size('$1_store')")" 1048576
}

# churn_ratio TABLE SPEC: the store_id index's size after the 100 rounds
# over its size when built
churn_ratio()
{
	local fresh cleanup=" VACUUM $1;" i
	is_heap "$2" || cleanup=" SELECT pk_compact('$1', true); VACUUM $1;"
	load_indexed "$1" "$2" "$churned"
	fresh=$(sql "SELECT pg_relation_size('$1_store')")
	for ((i = 0; i < 100; i++)); do
		sql "UPDATE $1 SET store_id = store_id + 1;$cleanup" >/dev/null
	done
	div "$(sql "SELECT pg_relation_size('$1_store')")" "$fresh"
}
churned=$(scaled 100000 100)

upserted_label="bulk upsert $(human "$upserted") into $(human "$loaded"), 2 indexes"
sql "DROP TABLE IF EXISTS bench_stage;
	CREATE UNLOGGED TABLE bench_stage ${bench_columns/ PRIMARY KEY/};
	INSERT INTO bench_stage $(rows_sql $((loaded / 2 + 1)) $((loaded / 2 + upserted)) 1);
	VACUUM ANALYZE bench_stage;"
compare "$upserted_label" s min 2 a/b ">= 1.5x" upsert_indexed
sql "DROP TABLE bench_stage;"

compare "index size, $(human "$loaded") rows" MB min 1 b/a "<= 1.2x" index_mb
compare "index after 100 updates of $(human "$churned") rows" x min 1 b/a "$BENCH_AM <= 2x" churn_ratio
prepare load_indexed "$loaded"
compare "point query by index, 1 client" tps max 2 b/a ">= 0.67x" point_tps
compare "update indexed column, 1 client" tps max 2 b/a ">= 0.7x" update_tps 1
compare "update indexed column, 8 clients" tps max 2 b/a ">= 0.5x" update_tps 8
compare "full compaction, $(human "$rows") rows, 2 indexes" rows/s max 2 b/a \
	"$BENCH_AM >= 0.5M rows/s" compaction_rate
drop_sides
