/*-------------------------------------------------------------------------
 *
 * catalog_lock.c
 *	  The per-table locks that order changes of a pkmerge table's catalog
 *	  rows: this file owns the locks and how they are waited for, their
 *	  callers what each one guards.
 *
 *	  commit lock      snapshot ids and sequence numbers in commit order
 *	  compaction lock  one compaction or expiration of a table at a time
 *	  level-0 lock     who picks level-0 runs to merge (cat_level0_lock)
 *	  space lock       a run's blocks chosen and reserved together
 *	  consumer lock    one pk_consume of a consumer at a time
 *
 *	  Each is a heavyweight lock on an object whose class is a catalog
 *	  table and whose id is the table's relid, so the deadlock detector
 *	  sees it and it goes with the transaction (the space lock, held
 *	  briefly, is released by its caller).  Where a transaction waits for
 *	  several: compaction lock, level-0 lock, then commit lock; the space
 *	  lock last.  A writer only tries the first two, never waiting.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>

#include "access/twophase.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/condition_variable.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/shmem.h"
#include "utils/inval.h"
#include "utils/resowner.h"

#include "catalog.h"
#include "catalog_consumers.h"
#include "catalog_lock.h"
#include "run_publish.h"

/* how long a committer waits unqueued, and how long it sleeps at a time */
#define COMMIT_QUEUE_AFTER_MS 20
#define COMMIT_SLEEP_MS 1
/* how often a committer yields the CPU before it first sleeps */
#define COMMIT_YIELDS 8

/*
 * The tables whose commit locks this transaction took, so that the waiters
 * are woken once transaction end has released them; more than
 * HELD_COMMIT_LOCKS: theirs find out by the sleep's timeout.
 */
#define HELD_COMMIT_LOCKS 8
static Oid	held[HELD_COMMIT_LOCKS];
static int	nheld = 0;

/*
 * Shared memory, per table (database and relid, hashed): the condition
 * variable its committers sleep on while its commit lock is taken; tables
 * sharing one wake each other.
 */
#define NWAKESLOTS 256
static ConditionVariable *commit_wake = NULL;

Size
cat_lock_shmem_size(void)
{
	return mul_size(NWAKESLOTS, sizeof(ConditionVariable));
}

void
cat_lock_shmem_init(void)
{
	bool		found;

	commit_wake = ShmemInitStruct("pkchangelog commit lock waiters",
								  cat_lock_shmem_size(), &found);
	if (!found)
		for (int i = 0; i < NWAKESLOTS; i++)
			ConditionVariableInit(&commit_wake[i]);
}

/* the condition variable of relid's committers; NULL before shared memory */
static ConditionVariable *
commit_wake_cv(Oid relid)
{
	uint32		key[2] = {MyDatabaseId, relid};

	if (commit_wake == NULL)
		return NULL;
	return &commit_wake[hash_bytes((const unsigned char *) key, sizeof(key)) %
						NWAKESLOTS];
}

/* wake one committer waiting for a table's commit lock, now released */
static void
commit_wake_one(Oid relid)
{
	ConditionVariable *cv = commit_wake_cv(relid);

	if (cv != NULL)
		ConditionVariableSignal(cv);
}

/*
 * After the transaction's locks are released at its end (resource owner
 * callbacks of the lock phase run after it; so do PREPARE's, whose locks
 * went to the prepared transaction: the waiters woken then queue for them
 * once their wait is long enough).
 */
static void
lock_release_callback(ResourceReleasePhase phase, bool isCommit,
					  bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_LOCKS || !isTopLevel)
		return;
	for (int i = 0; i < nheld; i++)
		commit_wake_one(held[i]);
	nheld = 0;
}

void
cat_lock_init(void)
{
	RegisterResourceReleaseCallback(lock_release_callback, NULL);
}

/*
 * Lock held from a table's commit step until transaction end, or until the
 * commit is visible (write_commit.c releases it then): snapshot ids,
 * sequence numbers, the lookup producer and conflict checks all see the
 * previous commit complete.
 *
 * Every committer of a table contends for it, and holds it for tens of
 * microseconds, so it is not queued for at first: a heavyweight lock
 * released with a waiter queued is granted to that waiter, which holds it
 * asleep until the kernel runs it (on a busy machine hundreds of
 * microseconds, in which no committer of the table gets on).  A committer
 * that finds it taken yields the CPU up to COMMIT_YIELDS times, trying
 * again after each (with more committers than cores the holder is often
 * preempted, and a yield most often runs it for less than a sleep and a
 * wake-up cost), then sleeps on the table's condition variable and tries
 * again when a holder's release (early, or at its transaction end) wakes
 * it: whichever committer runs when the lock comes free takes it, as with
 * an LWLock.  After COMMIT_QUEUE_AFTER_MS it queues as usual, so that the
 * deadlock detector sees the wait (the commit step can wait for other
 * heavyweight locks while holding this one), lock_timeout applies, and
 * nobody takes the lock before it.  Releases that wake no one (a prepared
 * transaction's, at COMMIT PREPARED) are covered by the sleep's timeout.
 */
LOCKTAG
cat_commit_lock(Oid relid)
{
	LOCKTAG		tag;
	LockAcquireResult res;
	ConditionVariable *cv = commit_wake_cv(relid);
	instr_time	start;
	bool		waited = false;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, 0);
	for (int yields = 0;; yields++)
	{
		res = LockAcquire(&tag, ExclusiveLock, false, true);
		if (res != LOCKACQUIRE_NOT_AVAIL || cv == NULL)
			break;
		if (yields < COMMIT_YIELDS)
		{
			sched_yield();
			continue;
		}
		if (!waited)
		{
			INSTR_TIME_SET_CURRENT(start);
			ConditionVariablePrepareToSleep(cv);
			waited = true;
		}
		else
		{
			instr_time	now;

			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MILLISEC(now) >= COMMIT_QUEUE_AFTER_MS)
				break;
		}
		(void) ConditionVariableTimedSleep(cv, COMMIT_SLEEP_MS,
										   PG_WAIT_EXTENSION);
	}
	if (waited)
		ConditionVariableCancelSleep();
	/* queued: others' conditional requests now fail, so none overtakes us */
	if (res == LOCKACQUIRE_NOT_AVAIL)
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	/* what readers of the list the last holder published must not see */
	run_publish_note_writer(relid, GetTopTransactionId());
	/* as LockDatabaseObject: see what the previous holder committed */
	AcceptInvalidationMessages();
	if (nheld < HELD_COMMIT_LOCKS)
		held[nheld++] = relid;
	return tag;
}

/*
 * The commit lock if it is free now, to transaction end (the background
 * worker's rounds do not wait for committers, nor for a prepared
 * transaction that holds it).
 */
bool
cat_commit_trylock(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, 0);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	AcceptInvalidationMessages();
	if (nheld < HELD_COMMIT_LOCKS)
		held[nheld++] = relid;
	return true;
}

/*
 * The xid of a prepared transaction that holds the table's commit lock
 * (its rows are in runs that no snapshot sees before COMMIT PREPARED), or
 * InvalidTransactionId.
 */
TransactionId
cat_commit_lock_prepared(Oid relid)
{
	LOCKTAG		tag;
	VirtualTransactionId *vxids;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, 0);
	vxids = GetLockConflicts(&tag, ExclusiveLock, NULL);
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		TransactionId xid;
		bool		more;

		/* recovered at startup: its vxid is its xid; else cloned at PREPARE */
		if (VirtualTransactionIdIsRecoveredPreparedXact(*vxids))
			return (TransactionId) vxids->localTransactionId;
		xid = TwoPhaseGetXidByVirtualXID(*vxids, &more);
		if (TransactionIdIsValid(xid))
			return xid;
	}
	return InvalidTransactionId;
}

/* release a commit lock before transaction end; reads no catalog */
void
cat_commit_unlock(const LOCKTAG *tag)
{
	LockRelease(tag, ExclusiveLock, false);
	/* the object's id (SET_LOCKTAG_OBJECT): the table's relid */
	commit_wake_one(tag->locktag_field3);
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

/*
 * Lock subid of the table's object to transaction end (wait: if taken,
 * wait for it), then see what its last holder committed, as
 * LockDatabaseObject does.
 */
static LockAcquireResult
table_object_lock(Oid relid, uint16 subid, bool wait)
{
	LOCKTAG		tag;
	LockAcquireResult res;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, subid);
	res = LockAcquire(&tag, ExclusiveLock, false, !wait);
	if (res == LOCKACQUIRE_OK)
		AcceptInvalidationMessages();
	return res;
}

/* the compaction lock if it is free now (writers do not wait for it) */
bool
cat_compaction_trylock(Oid relid)
{
	return table_object_lock(relid, 1, false) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * The level-0 lock, held to transaction end unless cat_level0_unlock
 * releases it; returns whether this call took it (false: the transaction
 * held it already).  A compaction takes it with the compaction lock but
 * holds it only until it has picked its inputs; then a writer at the stop
 * trigger may take it to merge the level-0 runs committed since, beside
 * that compaction.  Expiration holds it throughout, as such a merge reads
 * the snapshots' rows it removes.
 */
bool
cat_level0_lock(Oid relid)
{
	return table_object_lock(relid, 2, true) == LOCKACQUIRE_OK;
}

/*
 * The level-0 lock if it is free now (writers do not wait for it); *fresh,
 * if not NULL, says whether this call took it (false: the transaction
 * held it already).
 */
bool
cat_level0_trylock(Oid relid, bool *fresh)
{
	LockAcquireResult res = table_object_lock(relid, 2, false);

	if (fresh != NULL)
		*fresh = res == LOCKACQUIRE_OK;
	return res != LOCKACQUIRE_NOT_AVAIL;
}

/* release the level-0 lock before transaction end */
void
cat_level0_unlock(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid, 2);
	LockRelease(&tag, ExclusiveLock, false);
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
