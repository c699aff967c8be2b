/*-------------------------------------------------------------------------
 *
 * key_locks.c
 *	  Row locks of pkmerge tables against the writes that take a key away
 *	  (DELETE, an UPDATE of the key): a foreign key's check of the
 *	  referenced row (SELECT ... FOR KEY SHARE) and a removal of that row
 *	  wait for each other, as on heap, so that neither commits a reference
 *	  to a row the other removes.
 *
 *	  pkmerge keeps no lock in its rows.  Each backend says in shared
 *	  memory which keys of which tables its transaction locked and which it
 *	  took away (BackendKeys: a bit per key hash and use, KEY_BITS per
 *	  table, XACT_TABLES tables, then "every key of every table"), with its
 *	  xid.  A locker sets its bit, then looks for another transaction's
 *	  removal of the key and waits for it (the caller then reads the row
 *	  again); a remover sets its bit, then looks for lockers of the key and
 *	  waits for them.  Each sets its own bit before it looks, with full
 *	  barriers between, so of two that meet at least one sees the other
 *	  (both: a deadlock, which the lock manager reports).  A bit shared by
 *	  other keys costs a needless wait, never a missed one.  Counters of
 *	  the transactions using a table's bits (per table hash) spare a writer
 *	  the walk over the other backends when nobody locks the table's keys.
 *	  A transaction's bits stay until it ends (a savepoint's rollback keeps
 *	  them: needless waits at most).
 *
 *	  A prepared transaction keeps its locks and removals as heavyweight
 *	  locks, which also survive a restart: at PREPARE it takes a share lock
 *	  on each "locked keys" or "removed keys" object of a table its keys
 *	  fall in (one of PREPARED_BUCKETS per table and use, by key hash; its
 *	  bits are cleared then).  With prepared transactions possible, a
 *	  remover waits for the prepared lockers of its key's bucket, and a
 *	  locker for the prepared removers, by taking the conflicting lock for
 *	  a moment.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "catalog.h"
#include "key_locks.h"
#include "pg_compat.h"

#define XACT_TABLES 16
#define KEY_BITS 1024
#define KEY_WORDS (KEY_BITS / 64)
#define NCOUNTERS 1024

typedef enum KeyUse
{
	KEY_LOCKED = 0,
	KEY_REMOVED = 1,
	KEY_USES
} KeyUse;

typedef struct BackendKeys
{
	Oid			dbid;
	TransactionId xid;			/* the transaction's (top-level) */
	int			ntables;
	bool		overflow;		/* more tables than entries: every key */
	/* while it waits (see wait_other): for whom, as which use of which key */
	TransactionId waits_for;
	int			waits_use;
	uint32		waits_hash;
	Oid			waits_relid;
	Oid			relid[XACT_TABLES];
	pg_atomic_uint64 bits[XACT_TABLES][KEY_USES][KEY_WORDS];
} BackendKeys;

typedef struct KeyLocksShared
{
	pg_atomic_uint32 overflowed;	/* backends whose entry overflowed */
	/* transactions with bits of a use for a table hashed here */
	pg_atomic_uint32 users[NCOUNTERS][KEY_USES];
	BackendKeys backends[FLEXIBLE_ARRAY_MEMBER];
} KeyLocksShared;

static KeyLocksShared *shared = NULL;

/* this backend's transaction */
static bool published = false;	/* its entry is this transaction's */
static bool counted[XACT_TABLES][KEY_USES];
/* bits whose walk found nobody to wait for (see wait_other) */
static uint64 settled[XACT_TABLES][KEY_USES][KEY_WORDS];
static Oid	last_relid = InvalidOid;	/* the table noted last, and its */
static int	last_entry = -1;	/* entry, while published */
static List *prepare_tables[KEY_USES];	/* every table, for PREPARE */

static int
nprocs(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

Size
keylocks_shmem_size(void)
{
	return add_size(offsetof(KeyLocksShared, backends),
					mul_size(nprocs(), sizeof(BackendKeys)));
}

void
keylocks_shmem_init(void)
{
	bool		found;

	shared = ShmemInitStruct("pkchangelog key locks", keylocks_shmem_size(), &found);
	if (found)
		return;
	memset(shared, 0, keylocks_shmem_size());
	pg_atomic_init_u32(&shared->overflowed, 0);
	for (int c = 0; c < NCOUNTERS; c++)
		for (int u = 0; u < KEY_USES; u++)
			pg_atomic_init_u32(&shared->users[c][u], 0);
	for (int p = 0; p < nprocs(); p++)
		for (int i = 0; i < XACT_TABLES; i++)
			for (int u = 0; u < KEY_USES; u++)
				for (int w = 0; w < KEY_WORDS; w++)
					pg_atomic_init_u64(&shared->backends[p].bits[i][u][w], 0);
}

static pg_atomic_uint32 *
users_of(Oid relid, KeyUse use)
{
	uint32		key[2] = {MyDatabaseId, relid};

	return &shared->users[hash_bytes((const unsigned char *) key, sizeof(key)) % NCOUNTERS][use];
}

/*
 * The heavyweight lock a prepared transaction keeps for its use of the keys
 * of relid whose hashes fall in bucket (the hash's bit within its word:
 * PREPARED_BUCKETS of them).
 */
#define PREPARED_BUCKETS 64
static LOCKTAG
prepared_tag(Oid relid, KeyUse use, int bucket)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, cat_tables_relid(), relid,
					   1 + use * PREPARED_BUCKETS + bucket);
	return tag;
}

/*
 * At PREPARE: for each table whose keys the transaction locked or removed,
 * a share lock per bucket its keys fall in (every bucket of a table past
 * the entry's room).
 */
static void
keep_prepared(BackendKeys *b)
{
	for (int u = 0; u < KEY_USES; u++)
	{
		ListCell   *lc;

		foreach(lc, prepare_tables[u])
		{
			Oid			relid = lfirst_oid(lc);
			uint64		buckets = ~UINT64CONST(0);

			for (int i = 0; i < Min(b->ntables, XACT_TABLES); i++)
				if (b->relid[i] == relid)
				{
					buckets = 0;
					for (int w = 0; w < KEY_WORDS; w++)
						buckets |= pg_atomic_read_u64(&b->bits[i][u][w]);
				}
			for (int k = 0; k < PREPARED_BUCKETS; k++)
				if (buckets & (UINT64CONST(1) << k))
				{
					LOCKTAG		tag = prepared_tag(relid, u, k);

					(void) LockAcquire(&tag, ShareLock, false, false);
				}
		}
	}
}

static void
forget(void)
{
	BackendKeys *b = &shared->backends[GetNumberFromPGProc(MyProc)];

	for (int i = 0; i < Min(b->ntables, XACT_TABLES); i++)
		for (int u = 0; u < KEY_USES; u++)
			if (counted[i][u])
				pg_atomic_fetch_sub_u32(users_of(b->relid[i], u), 1);
	if (b->overflow)
		pg_atomic_fetch_sub_u32(&shared->overflowed, 1);
	b->ntables = 0;
	b->overflow = false;
	b->waits_for = InvalidTransactionId;
	memset(counted, 0, sizeof(counted));
	memset(settled, 0, sizeof(settled));
	published = false;
	last_entry = -1;
	for (int u = 0; u < KEY_USES; u++)
		prepare_tables[u] = NIL;	/* (TopTransactionContext's) */
}

static void
keylocks_xact_callback(XactEvent event, void *arg)
{
	if (!published || shared == NULL || MyProc == NULL)
		return;
	if (event == XACT_EVENT_PRE_PREPARE)
		keep_prepared(&shared->backends[GetNumberFromPGProc(MyProc)]);
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
			 event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
			 event == XACT_EVENT_PARALLEL_ABORT)
		forget();
}

/* set up in each backend (the library's _PG_init) */
void
keylocks_init(void)
{
	RegisterXactCallback(keylocks_xact_callback, NULL);
}

/*
 * This backend's entry for relid in its transaction, made if need be; -1
 * when the entry has no room left (it counts as every table's then).
 */
static int
my_entry(BackendKeys *b, Oid relid)
{
	int			i;

	if (published && last_entry >= 0 && last_relid == relid)
		return last_entry;
	if (!published)
	{
		b->ntables = 0;
		b->overflow = false;
		b->dbid = MyDatabaseId;
		b->xid = GetTopTransactionId();
		published = true;
	}
	for (i = 0; i < b->ntables; i++)
		if (b->relid[i] == relid)
			break;
	if (i == b->ntables)
	{
		if (i == XACT_TABLES)
		{
			if (!b->overflow)
			{
				b->overflow = true;
				pg_atomic_fetch_add_u32(&shared->overflowed, 1);
			}
			return -1;
		}
		b->relid[i] = relid;
		for (int u = 0; u < KEY_USES; u++)
			for (int w = 0; w < KEY_WORDS; w++)
				pg_atomic_write_u64(&b->bits[i][u][w], 0);
		pg_write_barrier();
		b->ntables++;
	}
	last_relid = relid;
	last_entry = i;
	return i;
}

/*
 * This transaction locks or removes (use) the key of relid whose hash is
 * given: its bit is set, and counted, before the caller looks at others'.
 * Returns the table's entry, -1 if it has none.
 */
static int
note(Oid relid, uint32 hash, KeyUse use)
{
	BackendKeys *b = &shared->backends[GetNumberFromPGProc(MyProc)];
	int			i = my_entry(b, relid);
	pg_atomic_uint64 *w;
	uint64		bit = UINT64CONST(1) << (hash % 64);

	if (i < 0 || !counted[i][use])
	{
		if (!list_member_oid(prepare_tables[use], relid))
		{
			MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

			prepare_tables[use] = lappend_oid(prepare_tables[use], relid);
			MemoryContextSwitchTo(old);
		}
		if (i < 0)
			return i;			/* overflowed: a full barrier made it seen */
		pg_atomic_fetch_add_u32(users_of(relid, use), 1);
		counted[i][use] = true;
	}
	w = &b->bits[i][use][(hash / 64) % KEY_WORDS];
	/* (a bit set before was set with a full barrier, before this) */
	if ((pg_atomic_read_u64(w) & bit) == 0)
		pg_atomic_fetch_or_u64(w, bit);
	return i;
}

/*
 * The transaction of another backend of this database, running and not
 * prepared, that may lock or remove (use) the key of relid whose hash is
 * given; InvalidTransactionId if none.
 */
static TransactionId
other_user(Oid relid, uint32 hash, KeyUse use)
{
	int			me = GetNumberFromPGProc(MyProc);
	TransactionId myxid = GetTopTransactionIdIfAny();
	uint64		bit = UINT64CONST(1) << (hash % 64);
	int			word = (hash / 64) % KEY_WORDS;

	if (pg_atomic_read_u32(users_of(relid, use)) == 0 &&
		pg_atomic_read_u32(&shared->overflowed) == 0)
		return InvalidTransactionId;
	for (int p = 0; p < nprocs(); p++)
	{
		BackendKeys *b = &shared->backends[p];
		int			n = b->ntables;
		TransactionId xid = b->xid;

		pg_read_barrier();
		if (p == me || b->dbid != MyDatabaseId || !TransactionIdIsValid(xid))
			continue;
		if (b->overflow)
			return xid;
		/* one that waits for this transaction over this very key hash */
		if (b->waits_for == myxid && TransactionIdIsValid(myxid))
		{
			pg_read_barrier();
			if (b->waits_use == use && b->waits_hash == hash && b->waits_relid == relid)
				continue;
		}
		for (int i = 0; i < Min(n, XACT_TABLES); i++)
			if (b->relid[i] == relid &&
				(pg_atomic_read_u64(&b->bits[i][use][word]) & bit) != 0)
				return xid;
	}
	return InvalidTransactionId;
}

/*
 * Wait for the prepared transactions that keep a use of keys of relid in
 * the bucket of hash, if any: true if there were some (the caller reads
 * the row again).
 */
static bool
wait_prepared(Oid relid, uint32 hash, KeyUse use)
{
	LOCKTAG		tag = prepared_tag(relid, use, hash % PREPARED_BUCKETS);

	if (max_prepared_xacts == 0)
		return false;
	if (LockAcquire(&tag, RowExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
	{
		LockRelease(&tag, RowExclusiveLock, false);
		return false;
	}
	(void) LockAcquire(&tag, RowExclusiveLock, false, false);
	LockRelease(&tag, RowExclusiveLock, false);
	return true;
}

/*
 * Wait for xid, which uses the key whose hash is given in the other way.
 * Published while it waits, when this transaction's bit of the key's hash
 * is not settled (it has locked or removed no key of that hash yet, and
 * cannot while xid's bit is set): xid, walking for the same key, goes on
 * without waiting for this one, which waits for it anyway.  Without that,
 * a transaction locking a key again after a remover ended, while the next
 * remover waits for it, would wait for that remover: a deadlock that heap,
 * whose waiters queue for the row, does not have (t/044 met it).
 */
static void
wait_for(Relation rel, TransactionId xid, uint32 hash, KeyUse mine,
		 bool has_entry, ItemPointer tid, XLTW_Oper oper)
{
	BackendKeys *b = &shared->backends[GetNumberFromPGProc(MyProc)];

	if (has_entry)
	{
		b->waits_use = mine;
		b->waits_hash = hash;
		b->waits_relid = RelationGetRelid(rel);
		pg_write_barrier();
		b->waits_for = xid;
	}
	PG_TRY();
	{
		XactLockTableWait(xid, rel, tid, oper);
	}
	PG_FINALLY();
	{
		b->waits_for = InvalidTransactionId;
	}
	PG_END_TRY();
}

/*
 * Wait for another transaction's use of the key other than this one's.
 * True if the caller must read the row again: it waited, or (a lock) its
 * bit was not seen by others when it read the row.
 *
 * A bit whose walk found nobody is settled for the rest of the
 * transaction: a transaction of the other use that sets the bit later
 * sees this one's and waits for it, and one that had set it and ended
 * before the walk is visible to any read after the walk.  So a settled
 * bit needs no walk (also a lock of a key this transaction locked before,
 * which a remover may wait on: waiting for it would be a deadlock heap
 * does not have), and a lock reads its row again once after its bit
 * settles: the row read before the walk may predate a removal committed
 * just before it.  A removal needs no second read: a lock it did not see
 * either waits for it or ended before its walk, and then PostgreSQL's
 * check after the removal sees what that lock's transaction referenced.
 */
static bool
wait_other(Relation rel, uint32 hash, KeyUse mine, ItemPointer tid, XLTW_Oper oper)
{
	Oid			relid = RelationGetRelid(rel);
	KeyUse		theirs = (mine == KEY_LOCKED) ? KEY_REMOVED : KEY_LOCKED;
	TransactionId xid;
	int			i;
	uint64		bit = UINT64CONST(1) << (hash % 64);
	int			word = (hash / 64) % KEY_WORDS;

	if (shared == NULL || MyProc == NULL)
		return false;
	i = note(relid, hash, mine);
	if (i >= 0 && (settled[i][mine][word] & bit) != 0)
		return false;
	xid = other_user(relid, hash, theirs);
	if (TransactionIdIsValid(xid))
	{
		wait_for(rel, xid, hash, mine, i >= 0, tid, oper);
		return true;
	}
	if (wait_prepared(relid, hash, theirs))
		return true;
	if (i >= 0)
		settled[i][mine][word] |= bit;
	return mine == KEY_LOCKED;
}

/*
 * A row lock of the key whose hash is given (the version at tid): waits
 * for a transaction taking the key away.  True if the caller must read
 * the row again (and lock again): it waited, or its lock was not settled
 * when the caller read the row.
 */
bool
keylock_lock(Relation rel, uint32 hash, ItemPointer tid)
{
	return wait_other(rel, hash, KEY_LOCKED, tid, XLTW_Lock);
}

/*
 * A removal of the key whose hash is given (the version at tid, by a
 * DELETE or an UPDATE of the key): waits for the transactions that lock
 * the key.  True if it waited: the caller reads the row again, and
 * removes again.
 */
bool
keylock_remove(Relation rel, uint32 hash, ItemPointer tid)
{
	return wait_other(rel, hash, KEY_REMOVED, tid, XLTW_Delete);
}
