/*-------------------------------------------------------------------------
 *
 * catalog_lock.h
 *	  The per-table locks that order changes of the catalog rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_LOCK_H
#define PK_CATALOG_LOCK_H

#include "storage/lock.h"

/* catalog_lock.c */
extern Size cat_lock_shmem_size(void);
extern void cat_lock_shmem_init(void);
extern void cat_lock_init(void);
extern LOCKTAG cat_commit_lock(Oid relid);
extern bool cat_commit_trylock(Oid relid);
extern void cat_commit_unlock(const LOCKTAG *tag);
extern TransactionId cat_commit_lock_prepared(Oid relid);
extern void cat_compaction_lock(Oid relid);
extern bool cat_compaction_trylock(Oid relid);
extern bool cat_level0_lock(Oid relid);
extern bool cat_level0_trylock(Oid relid, bool *fresh);
extern void cat_level0_unlock(Oid relid);
extern void cat_space_lock(Oid relid);
extern void cat_space_unlock(Oid relid);
extern void cat_consumer_lock(Oid relid, const char *consumer_id);

#endif							/* PK_CATALOG_LOCK_H */
