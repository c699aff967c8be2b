/*-------------------------------------------------------------------------
 *
 * run_cache.h
 *	  The per-backend cache of tables' data run lists and counters, exact
 *	  for the snapshots it serves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_CACHE_H
#define PK_RUN_CACHE_H

#include "utils/rel.h"
#include "utils/snapshot.h"

#include "catalog.h"

/* run_cache.c */
extern Size runcache_shmem_size(void);
extern void runcache_shmem_init(int tranche);
extern void runcache_note_state_writer(Oid relid, TransactionId xid);
extern bool runcache_data_runs(Relation rel, Snapshot snapshot,
							   bool committed_only, List **runs);
extern bool runcache_committed_state(Relation rel, Snapshot snapshot,
									 List **runs, TableState *st);
extern bool runcache_recent_runs(Relation rel, List **runs);
extern void runcache_store_commit(Relation rel, const TableState *st,
								  List *runs);
extern bool runcache_published_row(Relation rel, ItemPointerData *row);
extern void runcache_commit_visible(void);
extern void runcache_subxact_abort(SubTransactionId mySubid);
extern void runcache_xact_end(bool committed);

#endif							/* PK_RUN_CACHE_H */
