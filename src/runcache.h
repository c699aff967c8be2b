/*-------------------------------------------------------------------------
 *
 * runcache.h
 *	  Per-backend cache of the data runs a table's readers see, kept valid
 *	  by per-table change counters in shared memory; and the free-space
 *	  hints VACUUM leaves for writers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUNCACHE_H
#define PK_RUNCACHE_H

#include "utils/rel.h"
#include "utils/snapshot.h"

/* runcache.c */
extern void runcache_init(void);
extern void runcache_note_change(Oid relid);
extern List *runcache_lookup(Relation rel, Snapshot snapshot, uint64 *token);
extern void runcache_store(Relation rel, Snapshot snapshot, uint64 token, List *runs);
extern bool runcache_free_hint(Oid relid);
extern void runcache_set_free_hint(Oid relid, bool hint);

#endif							/* PK_RUNCACHE_H */
