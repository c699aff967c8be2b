/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Access to the extension's catalog tables in schema pkchangelog
 *	  (tables, snapshots, runs): typed rows in and out, by direct heap
 *	  access so that their visibility is PostgreSQL MVCC.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_H
#define PK_CATALOG_H

#include "datatype/timestamp.h"
#include "storage/block.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "run_format.h"

/* the schema of the extension's catalog tables (the install script's) */
#define PK_CATALOG_SCHEMA	"pkchangelog"
/* the extension, as CREATE EXTENSION names it */
#define PK_EXTENSION_NAME	"pkchangelog"

/*
 * Column numbers of the catalog tables, in the order of the extension
 * script's CREATE TABLE statements (which says so); catalog.c checks every
 * table's shape against them before it reads a row.
 */
/* pkchangelog.tables */
#define Natts_tables 9
#define Anum_tables_relid 1
#define Anum_tables_last_snapshot_id 2
#define Anum_tables_last_seq 3
#define Anum_tables_total_record_count 4
#define Anum_tables_last_full_compaction 5
#define Anum_tables_data_runs 6
#define Anum_tables_commits 7
#define Anum_tables_log_run 8	/* catalog 0.11 */
#define Anum_tables_log_block 9

/* pkchangelog.snapshots */
#define Natts_snapshots 17
#define Anum_snapshots_relid 1
#define Anum_snapshots_snapshot_id 2
#define Anum_snapshots_commit_kind 3
#define Anum_snapshots_commit_time 4
#define Anum_snapshots_commit_user 5
#define Anum_snapshots_commit_xid 6
#define Anum_snapshots_total_record_count 7
#define Anum_snapshots_delta_record_count 8
#define Anum_snapshots_changelog_record_count 9
#define Anum_snapshots_producer 10
#define Anum_snapshots_duration_ms 11
#define Anum_snapshots_changelog_run_id 12	/* catalog 0.8 */
#define Anum_snapshots_changelog 13
#define Anum_snapshots_data 14	/* catalog 0.9 */
#define Anum_snapshots_data_seq 15
#define Anum_snapshots_data_min_key 16
#define Anum_snapshots_data_max_key 17

/* pkchangelog.runs */
#define Natts_runs 19
#define Anum_runs_relid 1
#define Anum_runs_run_id 2
#define Anum_runs_relfilenode 3
#define Anum_runs_level 4
#define Anum_runs_kind 5
#define Anum_runs_from_commit 6
#define Anum_runs_start_block 7
#define Anum_runs_nblocks 8
#define Anum_runs_record_count 9
#define Anum_runs_size_bytes 10
#define Anum_runs_row_base 11
#define Anum_runs_min_seq 12
#define Anum_runs_max_seq 13
#define Anum_runs_index_offset 14
#define Anum_runs_bloom_offset 15
#define Anum_runs_created_snapshot 16
#define Anum_runs_min_key 17
#define Anum_runs_max_key 18
#define Anum_runs_stream 19		/* catalog 0.5 */

/* pkchangelog.consumers (catalog 0.2: a 0.1 catalog not yet updated has none) */
#define Natts_consumers 4
#define Anum_consumers_relid 1
#define Anum_consumers_consumer_id 2
#define Anum_consumers_next_snapshot_id 3
#define Anum_consumers_last_consumed 4

/* pkchangelog.materializations (catalog 0.3) */
#define Natts_materializations 5
#define Anum_materializations_relid 1
#define Anum_materializations_aggregate 2
#define Anum_materializations_query 3
#define Anum_materializations_value_tables 4
#define Anum_materializations_created_snapshot 5

/* a row of pkchangelog.materializations */
typedef struct MatRow
{
	Oid			relid;			/* the source */
	Oid			aggregate;		/* the aggregate's table */
	char	   *query;			/* nodeToString of the analyzed query */
	struct ArrayType *value_tables; /* oid[]: per output column, 0 or a table */
	int64		created_snapshot;
} MatRow;

/* the counters of pkchangelog.tables, read and written under the commit lock */
typedef struct TableState
{
	int64		last_snapshot_id;
	int64		last_seq;
	int64		total_record_count;
	int64		last_full_compaction;	/* snapshot id; 0: none yet */
	int64	   *data_runs;		/* run ids of the data runs */
	int			ndata_runs;
	int64		commits;		/* APPEND and OVERWRITE snapshots ever */
	int64		log_run;		/* the log page commits append to (0: none) */
	int64		log_block;		/* and its block */
	ItemPointerData row;		/* the row version it was read from */
	int64		row_snapshot_id;	/* that version's last snapshot: those
									 * after it are folded commits */
} TableState;

/* commits folded into a table's state at most (cat_table_state_folds) */
#define CAT_TABLE_FOLD_MAX 64

typedef enum CommitKind
{
	COMMIT_APPEND,
	COMMIT_COMPACT,
	COMMIT_OVERWRITE
} CommitKind;

/* a row of pkchangelog.snapshots, as the change stream needs it */
typedef struct SnapshotInfo
{
	int64		snapshot_id;
	CommitKind	kind;
	char	   *producer;
	TimestampTz commit_time;
	RunInfo    *changelog;		/* its changelog run kept in its row, or NULL */
	RunInfo    *data;			/* its data run kept in its row, or NULL */
} SnapshotInfo;

/* catalog.c */
extern void catalog_init(void);
extern const char *cat_commit_kind_name(CommitKind kind);
extern bool cat_version_accepted(const char *version);
extern bool cat_runs_changed(Oid relid, bool committed_only);
extern void cat_runs_replaced(Oid relid);
extern uint64 cat_runs_rewrites(void);
extern uint64 cat_runs_rewrite_mark(void);
extern List *cat_runs_visible(Oid relid, Snapshot snapshot, bool data_only);
extern void cat_runs_mark_deltas(Oid relid, Snapshot snapshot, List *runs);
extern void cat_run_insert(Oid relid, const RunInfo *run);
extern void cat_truncate(Oid relid);
extern void cat_run_delete(Oid relid, int64 run_id);
extern TableState cat_table_state(Oid relid, const ItemPointerData *hint);
extern TableState cat_table_state_peek(Oid relid);
extern bool cat_table_version(Oid relid, Snapshot snapshot,
							  const ItemPointerData *hint, TransactionId *xmin,
							  TableState *st);
extern void cat_table_state_set_runs(TableState *st, List *runs);
extern RunInfo *cat_run_get(Oid relid, int64 run_id, Snapshot snapshot);
extern RunInfo *cat_run_find(Oid relid, int64 run_id, Snapshot snapshot);
extern void cat_runs_sort(List *runs);
extern bool cat_table_state_folds(const TableState *st);
extern TableState cat_table_state_settle(Oid relid);
extern void cat_table_state_update(Oid relid, TableState *state);
extern uint64 cat_table_last_write(Oid relid);
extern bool cat_table_written_here(Oid relid);
extern bool cat_snapshots_hold_changelogs(void);
extern bool cat_snapshots_hold_data(void);
extern bool cat_tables_hold_log(void);
extern SnapshotInfo *cat_snapshot_insert(Oid relid, int64 snapshot_id, CommitKind kind,
								int64 total, int64 delta, int64 changelog,
								const char *producer, double duration_ms,
								RunInfo *changelog_run, RunInfo *data_run);
extern void cat_run_retire(Oid relid, const RunInfo *run);
extern bool cat_prune_runs(Oid relid);
extern void cat_row_bytes(Oid relid, Snapshot snapshot, int64 *all, int64 *history);
extern bool cat_runs_hold_streams(void);
extern List *cat_runs_of_snapshots(Oid relid, int64 from, int64 to, Snapshot snapshot);
extern List *cat_snapshots_range(Oid relid, int64 from, int64 to, int limit,
								 Snapshot snapshot);
extern List *cat_snapshots_oldest(Oid relid, int64 from, int64 to, int limit,
								  Snapshot snapshot);
extern void cat_snapshot_expire(Oid relid, int64 snapshot_id, const TableState *st);
extern void cat_log_expired(Oid relid, int64 from, int64 upto);
struct CommitRecord;
extern void cat_log_records_each(Relation rel, Snapshot snapshot,
								 void (*cb) (const struct CommitRecord *rec, void *arg),
								 void *arg);
extern void cat_drop_table(Oid relid);
extern bool cat_consumer_get(Oid relid, const char *consumer_id, Snapshot snapshot,
							 int64 *next_snapshot_id);
extern void cat_consumer_set(Oid relid, const char *consumer_id, int64 next_snapshot_id);
extern int64 cat_consumers_floor(Oid relid, TimestampTz idle_before);
extern bool cat_consumer_drop(Oid relid, const char *consumer_id);
extern Oid	cat_consumers_relid(void);
extern void cat_mat_insert(Oid relid, Oid aggregate, const char *query,
						   Datum value_tables, int64 created_snapshot);
extern List *cat_mat_list(Oid relid, Snapshot snapshot);
extern MatRow *cat_mat_get(Oid aggregate, Snapshot snapshot);
extern List *cat_mat_all(Snapshot snapshot);
extern Oid	cat_mat_delete(Oid aggregate);
extern int64 cat_next_run_id(void);
extern Oid	cat_runs_relid(void);
extern Oid	cat_tables_relid(void);
extern List *cat_used_extents(Oid relid, Oid relfilenode);
extern void cat_run_set_snapshot(Oid relid, int64 run_id, int64 snapshot_id);
extern void cat_run_finalize(Oid relid, int64 run_id, int64 seq, int64 snapshot_id);
extern void cat_run_move(Oid relid, int64 run_id, Oid relfilenode,
						 BlockNumber start_block, int64 row_base);

#endif							/* PK_CATALOG_H */
