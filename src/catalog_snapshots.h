/*-------------------------------------------------------------------------
 *
 * catalog_snapshots.h
 *	  A table's snapshots: rows and commit log records (catalog_snapshots.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_SNAPSHOTS_H
#define PK_CATALOG_SNAPSHOTS_H

#include "catalog.h"

struct CommitRecord;

/* catalog_snapshots.c */
extern RunInfo *cat_snapshot_data(Relation crel, const Datum *v, const bool *n);
extern RunInfo *cat_snapshot_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot);
extern List *cat_logged_snapshots(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot,
				 bool with_changelog);
extern void cat_log_records_each(Relation rel, Snapshot snapshot,
								 void (*cb) (const struct CommitRecord *rec, void *arg),
								 void *arg);
extern void cat_log_expired(Oid relid, int64 from, int64 upto);
extern SnapshotInfo *cat_snapshot_insert(Oid relid, int64 snapshot_id, CommitKind kind,
								int64 total, int64 delta, int64 changelog,
								const char *producer, double duration_ms,
								RunInfo *changelog_run, RunInfo *data_run);
extern List *cat_snapshots_range(Oid relid, int64 from, int64 to, int limit,
								 Snapshot snapshot);
extern List *cat_snapshots_oldest(Oid relid, int64 from, int64 to, int limit,
								  Snapshot snapshot);
extern void cat_snapshot_expire(Oid relid, int64 snapshot_id, const TableState *st);

#endif							/* PK_CATALOG_SNAPSHOTS_H */
