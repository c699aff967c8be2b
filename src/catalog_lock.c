/*-------------------------------------------------------------------------
 *
 * catalog_lock.c
 *	  The per-table locks that order changes of a pkmerge table's catalog
 *	  rows: the commit lock (snapshot ids and sequence numbers in commit
 *	  order), the compaction lock (one compaction at a time), the space
 *	  lock (a run's blocks chosen and reserved atomically) and a consumer's
 *	  lock (one pk_consume of a consumer at a time).
 *
 * Each is a heavyweight lock on an object of the database whose class is
 * one of the catalog tables and whose id is the table's relid, so the
 * deadlock detector sees them and they go with the transaction (the space
 * lock, held briefly, is released by its caller).  Lock order, where a
 * transaction takes several: compaction lock, then commit lock; the space
 * lock is held only around choosing and reserving a run's blocks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"

#include "catalog.h"
#include "catalog_lock.h"

/*
 * Lock held from a table's commit until transaction end: snapshot ids,
 * sequence numbers, the lookup producer and conflict checks all see the
 * previous commit complete.  A heavyweight lock, so the deadlock detector
 * sees it.
 */
LOCKTAG
cat_commit_lock(Oid relid)
{
	Oid			classid = cat_tables_relid();
	LOCKTAG		tag;

	LockDatabaseObject(classid, relid, 0, ExclusiveLock);
	/* for a release once the commit record is written (write_commit.c) */
	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, classid, relid, 0);
	return tag;
}

/* release a commit lock before transaction end; reads no catalog */
void
cat_commit_unlock(const LOCKTAG *tag)
{
	LockRelease(tag, ExclusiveLock, false);
}

/*
 * One compaction of a table at a time (pk_compact waits for a running one);
 * held to transaction end.  Commits are not blocked by it.
 */
void
cat_compaction_lock(Oid relid)
{
	LockDatabaseObject(cat_tables_relid(), relid, 1, ExclusiveLock);
}

/* the compaction lock if it is free now (writers do not wait for it) */
bool
cat_compaction_trylock(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, 1);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Serializes the choice of a run's blocks and row numbers with the
 * insertion of the run row that reserves them (other allocators see the
 * row, committed or not, through SnapshotAny).  Released once the row is in.
 */
void
cat_space_lock(Oid relid)
{
	LockDatabaseObject(cat_runs_relid(), relid, 0, ExclusiveLock);
}

void
cat_space_unlock(Oid relid)
{
	UnlockDatabaseObject(cat_runs_relid(), relid, 0, ExclusiveLock);
}

/*
 * Lock held by pk_consume until transaction end: a second call for the same
 * consumer waits for the first's transaction, then reads the position it
 * left (never delivers a change twice; a rollback re-delivers).  The
 * object is the consumer's name hashed: two names that collide only wait
 * for each other.
 */
void
cat_consumer_lock(Oid relid, const char *consumer_id)
{
	LockDatabaseObject(cat_consumers_relid(), relid,
					   (int32) hash_bytes((const unsigned char *) consumer_id,
										  (int) strlen(consumer_id)),
					   ExclusiveLock);
}
