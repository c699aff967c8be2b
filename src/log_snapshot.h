/*-------------------------------------------------------------------------
 *
 * log_snapshot.h
 *	  A snapshot kept as a record of its table's commit log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_LOG_SNAPSHOT_H
#define PK_LOG_SNAPSHOT_H

#include "catalog.h"
#include "table_options.h"
#include "utils/rel.h"

extern SnapshotInfo *log_snapshot(Relation rel, TableState *st, int64 snapshot_id,
								  CommitKind kind, int64 total, int64 delta,
								  int64 changelog, PkProducer producer, double duration_ms,
								  RunInfo *changelog_run, RunInfo *data_run);

#endif							/* PK_LOG_SNAPSHOT_H */
