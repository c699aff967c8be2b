/*-------------------------------------------------------------------------
 *
 * catalog_runs.h
 *	  The rows of pkchangelog.runs (catalog_runs.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_RUNS_H
#define PK_CATALOG_RUNS_H

#include "catalog.h"

/* catalog_runs.c */
extern SysScanDesc cat_run_row_find(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup);
extern SysScanDesc cat_run_row_as(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup);
extern void cat_runs_sort(List *runs);
extern RunInfo *cat_run_find(Oid relid, int64 run_id, Snapshot snapshot);
extern void cat_run_update(Oid relid, int64 run_id, int ncols, const int *attnums,
		   const Datum *newvalues, bool own_run);
extern void cat_run_set_snapshot(Oid relid, int64 run_id, int64 snapshot_id);
extern void cat_run_move(Oid relid, int64 run_id, Oid relfilenode,
						 BlockNumber start_block, int64 row_base);
extern void cat_run_finalize(Oid relid, int64 run_id, int64 seq, int64 snapshot_id);
extern void cat_run_retire(Oid relid, const RunInfo *run);
extern SysScanDesc cat_runs_of_snapshots_begin(Relation crel, Relation *irel, Oid relid, int64 from,
						int64 to, Snapshot snapshot);
extern void cat_runs_of_snapshots_end(SysScanDesc scan, Relation irel);
extern List *cat_runs_of_snapshots(Oid relid, int64 from, int64 to, Snapshot snapshot);
extern RunInfo *cat_run_from_tuple(Relation crel, HeapTuple tup);
extern void cat_run_insert(Oid relid, const RunInfo *run);
extern void cat_run_delete(Oid relid, int64 run_id);
extern int64 cat_next_run_id(void);
extern List *cat_used_extents(Oid relid, Oid relfilenode);
extern bool cat_prune_runs(Oid relid);

#endif							/* PK_CATALOG_RUNS_H */
