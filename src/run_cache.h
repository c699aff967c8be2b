/*-------------------------------------------------------------------------
 *
 * run_cache.h
 *	  The per-backend cache of tables' data run lists, exact for the
 *	  snapshots it serves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUNCACHE_H
#define PK_RUNCACHE_H

#include "utils/rel.h"
#include "utils/snapshot.h"

#include "catalog.h"

/* run_cache.c */
extern bool runcache_data_runs(Relation rel, Snapshot snapshot,
							   bool committed_only, List **runs);
extern bool runcache_recent_runs(Relation rel, List **runs);
extern void runcache_store_commit(Relation rel, int64 snapshot_id,
								  const ItemPointerData *row, List *runs);
extern bool runcache_published_row(Relation rel, ItemPointerData *row);
extern void runcache_commit_visible(void);
extern void runcache_xact_end(bool committed);

#endif							/* PK_RUNCACHE_H */
