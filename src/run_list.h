/*-------------------------------------------------------------------------
 *
 * run_list.h
 *	  A table's runs as of an MVCC snapshot: the one place scans, DML,
 *	  lookups, compaction, commits and decoding ask which runs a snapshot
 *	  sees, with the per-backend cache of data run lists and counters,
 *	  exact for the snapshots it serves, and the catalog behind it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_LIST_H
#define PK_RUN_LIST_H

#include "utils/rel.h"
#include "utils/snapshot.h"

#include "catalog.h"

/* run_list.c */
extern List *runlist_visible(Relation rel, Snapshot snapshot);
extern List *runlist_committed(List *runs);
extern bool runlist_added(List *before, List *committed, List **added);
extern List *runlist_catalog(Oid relid, Snapshot snapshot, bool data_only);
extern bool runlist_cached(Relation rel, Snapshot snapshot,
						   bool committed_only, List **runs);
extern bool runlist_committed_state(Relation rel, Snapshot snapshot,
									List **runs, TableState *st);
extern bool runlist_recent_runs(Relation rel, List **runs);
extern void runlist_store_commit(Relation rel, const TableState *st,
								 List *runs);
extern void runlist_commit_visible(void);
extern void runlist_subxact_abort(SubTransactionId mySubid);
extern void runlist_xact_end(bool committed);

#endif							/* PK_RUN_LIST_H */
