/*-------------------------------------------------------------------------
 *
 * key_locks.h
 *	  Row locks of pkmerge tables against the writes that take a key away.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_KEY_LOCKS_H
#define PK_KEY_LOCKS_H

#include "storage/itemptr.h"
#include "utils/relcache.h"

/* key_locks.c */
extern Size keylocks_shmem_size(void);
extern void keylocks_shmem_init(void);
extern void keylocks_init(void);
extern bool keylock_lock(Relation rel, uint32 hash, ItemPointer tid);
extern bool keylock_remove(Relation rel, uint32 hash, ItemPointer tid);

#endif							/* PK_KEY_LOCKS_H */
