/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The extension's catalog tables (schema pkchangelog) as every layer
 *	  sees them: their column numbers, a table's state (TableState), a
 *	  snapshot (SnapshotInfo, CommitKind), and the plumbing catalog.c
 *	  gives the files that read and write them (catalog_*.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_H
#define PK_CATALOG_H

#include "access/genam.h"
#include "datatype/timestamp.h"
#include "storage/lockdefs.h"
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

typedef enum CommitKind
{
	COMMIT_APPEND,
	COMMIT_COMPACT,
	COMMIT_OVERWRITE
} CommitKind;

/* commits folded into a table's state at most (cat_table_state_folds) */
#define CAT_TABLE_FOLD_MAX 64

/* the catalog tables, as cat_open opens them */
typedef enum CatTable
{
	CAT_TABLES,
	CAT_SNAPSHOTS,
	CAT_RUNS,
	CAT_CONSUMERS,
	CAT_MATERIALIZATIONS
} CatTable;

/* pkchangelog.runs.kind, by RunKind */
extern const char *const cat_run_kinds[];

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
extern void cat_note_change(Oid relid, bool own_run);
extern void cat_runs_replaced(Oid relid);
extern bool cat_runs_changed(Oid relid, bool committed_only);
extern uint64 cat_runs_rewrite_mark(void);
extern uint64 cat_runs_rewrites(void);
extern void catalog_init(void);
extern Oid cat_oid(const char *relname, bool missing_ok);
extern Oid cat_index_oid(const char *relname);
extern SysScanDesc cat_scan(Relation crel, const char *relname, Oid relid, Snapshot snapshot);
extern const char *cat_table_name(CatTable which);
extern Relation cat_open(CatTable which, LOCKMODE lockmode);
extern bytea *cat_stream_bytea(const RunInfo *r);
extern bool cat_runs_hold_streams(void);
extern bool cat_snapshots_hold_changelogs(void);
extern bool cat_snapshots_hold_data(void);
extern bool cat_tables_hold_log(void);
extern const char *cat_commit_kind_name(CommitKind kind);
extern bool cat_inserter_aborted(HeapTuple tup);
extern void cat_delete_rows(const char *relname, Oid relid, bool missing_ok);
extern void cat_drop_table(Oid relid);
extern Oid	cat_runs_relid(void);
extern Oid	cat_tables_relid(void);
extern bool cat_version_accepted(const char *version);

#endif							/* PK_CATALOG_H */
