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

#include "storage/block.h"
#include "datatype/timestamp.h"
#include "utils/snapshot.h"

typedef enum RunKind
{
	RUN_DATA,					/* read by queries */
	RUN_CHANGELOG,				/* RowKind records of one snapshot */
	RUN_DELTA					/* a compacted commit's data, kept for "none" */
} RunKind;

/* a row of pkchangelog.runs */
typedef struct RunInfo
{
	int64		run_id;
	Oid			relfilenode;
	int32		level;
	RunKind		kind;
	bool		from_commit;	/* written by a commit, not by compaction */
	BlockNumber start_block;
	int32		nblocks;
	int64		record_count;
	int64		size_bytes;
	int64		row_base;		/* first row number (TIDs) */
	int64		min_seq;
	int64		max_seq;
	int64		index_offset;
	int64		bloom_offset;
	int64		created_snapshot;
	char	   *min_key;
	char	   *max_key;
} RunInfo;

/* the counters of pkchangelog.tables, read and written under the commit lock */
typedef struct TableState
{
	int64		last_snapshot_id;
	int64		last_seq;
	int64		total_record_count;
	int64		last_full_compaction;	/* snapshot id; 0: none yet */
	int64	   *data_runs;		/* run ids of the data runs */
	int			ndata_runs;
} TableState;

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
} SnapshotInfo;

/* catalog.c */
extern List *cat_runs_visible(Oid relid, Snapshot snapshot, bool data_only);
extern void cat_run_insert(Oid relid, const RunInfo *run);
extern void cat_truncate(Oid relid);
extern void cat_run_delete(Oid relid, int64 run_id);
extern void cat_compaction_lock(Oid relid);
extern bool cat_compaction_trylock(Oid relid);
extern void cat_commit_lock(Oid relid);
extern TableState cat_table_state(Oid relid);
extern TableState cat_table_state_peek(Oid relid);
extern bool cat_table_version(Oid relid, Snapshot snapshot, TransactionId *xmin,
							  TableState *st);
extern void cat_table_state_set_runs(TableState *st, List *runs);
extern RunInfo *cat_run_get(Oid relid, int64 run_id, Snapshot snapshot);
extern void cat_table_state_update(Oid relid, const TableState *state);
extern void cat_snapshot_insert(Oid relid, int64 snapshot_id, CommitKind kind,
								int64 total, int64 delta, int64 changelog,
								const char *producer, double duration_ms);
extern void cat_run_retire(Oid relid, int64 run_id);
extern List *cat_runs_of_snapshots(Oid relid, int64 from, int64 to, Snapshot snapshot);
extern List *cat_snapshots_range(Oid relid, int64 from, int64 to, Snapshot snapshot);
extern List *cat_snapshots_oldest(Oid relid, int64 from, int64 to, int limit,
								  Snapshot snapshot);
extern void cat_snapshot_expire(Oid relid, int64 snapshot_id);
extern void cat_drop_table(Oid relid);
extern int64 cat_next_run_id(void);
extern Oid	cat_runs_relid(void);
extern List *cat_used_extents(Oid relid, Oid relfilenode);
extern void cat_space_lock(Oid relid);
extern void cat_space_unlock(Oid relid);
extern void cat_run_set_snapshot(Oid relid, int64 run_id, int64 snapshot_id);
extern void cat_run_finalize(Oid relid, int64 run_id, int64 seq, int64 snapshot_id);

#endif							/* PK_CATALOG_H */
