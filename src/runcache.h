/*-------------------------------------------------------------------------
 *
 * runcache.h
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

/* what a lookup saw, for storing what the caller then read */
typedef struct RunCacheProbe
{
	bool		usable;			/* the snapshot may use (and fill) the cache */
	bool		hit;
	TransactionId xmin;			/* the tables row version it sees */
	int64		snapshot_id;
	uint64		completions;	/* its snapXactCompletionCount */
	int64	   *data_runs;		/* on a miss: the runs the version names */
	int			ndata_runs;
} RunCacheProbe;

/* runcache.c */
extern void runcache_init(void);
extern List *runcache_lookup(Relation rel, Snapshot snapshot, RunCacheProbe *probe);
extern List *runcache_build(Relation rel, Snapshot snapshot,
						   const RunCacheProbe *probe);
extern bool runcache_latest_committed(Relation rel, List **runs);
extern void runcache_store_commit(Relation rel, int64 snapshot_id, List *runs);
extern void runcache_note_change(Oid relid, bool own_run);

#endif							/* PK_RUNCACHE_H */
