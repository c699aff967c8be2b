/*-------------------------------------------------------------------------
 *
 * maint_expire.h
 *	  Snapshot expiration.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_MAINT_EXPIRE_H
#define PK_MAINT_EXPIRE_H

#include "utils/rel.h"

/* maint_expire.c */
extern int64 expire_snapshots(Relation rel, int64 max_snapshots,
							  int64 last_snapshot_id);
extern void expire_xact_end(bool committed);
extern void expire_subxact_abort(void);

#endif							/* PK_MAINT_EXPIRE_H */
