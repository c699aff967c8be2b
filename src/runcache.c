/*-------------------------------------------------------------------------
 *
 * runcache.c
 *	  Reading a table's data runs from the catalog costs an index scan; every
 *	  statement needs them.  Each backend caches the list, and shared memory
 *	  tells it when the list may have changed: per table (hashed into a
 *	  fixed array of slots, collisions only cost a catalog scan), a count of
 *	  transactions now changing its runs and a version bumped when such a
 *	  transaction ends.
 *
 * A cached list built from MVCC snapshot S0 while no transaction was
 * changing the table's runs is exactly what a later snapshot S sees, as
 * long as the version did not move and still nobody is changing them: any
 * change committed between S0 and S would have moved it.  Snapshots older
 * than S0 (REPEATABLE READ) read the catalog.  A transaction changing the
 * runs bumps the version after its commit is visible (XACT_EVENT_COMMIT
 * comes after ProcArrayEndTransaction), and counts as a changer until then.
 *
 * The same slots carry VACUUM's hint that a table's file has free gaps.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "runcache.h"

#define NSLOTS 4096

typedef struct TableSlot
{
	pg_atomic_uint64 version;
	pg_atomic_uint32 changers;
	bool		free_hint;
} TableSlot;

typedef struct CacheEntry
{
	Oid			relid;			/* hash key */
	uint64		version;
	uint64		completion;		/* snapXactCompletionCount it was built at */
	Oid			relfilenode;
	MemoryContext cxt;
	List	   *runs;
} CacheEntry;

static TableSlot *slots = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;
static HTAB *cache = NULL;
static List *changing = NIL;	/* slots this transaction counts in */

static TableSlot *
slot_of(Oid relid)
{
	return &slots[hash_uint32(relid) % NSLOTS];
}

static void
runcache_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TableSlot) * NSLOTS));
}

static void
runcache_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("pkchangelog table slots", sizeof(TableSlot) * NSLOTS, &found);
	if (!found)
	{
		for (int i = 0; i < NSLOTS; i++)
		{
			pg_atomic_init_u64(&slots[i].version, 0);
			pg_atomic_init_u32(&slots[i].changers, 0);
			slots[i].free_hint = false;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
runcache_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	/* version first: a reader that sees no changer must see the new version */
	foreach(lc, changing)
	{
		TableSlot  *s = lfirst(lc);

		pg_atomic_fetch_add_u64(&s->version, 1);
		pg_atomic_fetch_sub_u32(&s->changers, 1);
	}
	list_free(changing);
	changing = NIL;
}

void
runcache_init(void)
{
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = runcache_shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = runcache_shmem_startup;
	RegisterXactCallback(runcache_xact_callback, NULL);
}

/*
 * This transaction is about to change relid's runs rows: readers stop
 * trusting their caches until it ends.
 */
void
runcache_note_change(Oid relid)
{
	TableSlot  *s = slot_of(relid);
	MemoryContext old;

	if (list_member_ptr(changing, s))
		return;
	pg_atomic_fetch_add_u32(&s->changers, 1);
	pg_memory_barrier();
	old = MemoryContextSwitchTo(TopMemoryContext);
	changing = lappend(changing, s);
	MemoryContextSwitchTo(old);
}

/* a copy of a run list in the current memory context */
static List *
copy_runs(List *runs)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, runs)
	{
		RunInfo    *copy = palloc(sizeof(RunInfo));

		memcpy(copy, lfirst(lc), sizeof(RunInfo));
		copy->min_key = copy->max_key = NULL;	/* not kept */
		result = lappend(result, copy);
	}
	return result;
}

static bool
cacheable(Snapshot snapshot)
{
	return snapshot && snapshot->snapshot_type == SNAPSHOT_MVCC &&
		snapshot->snapXactCompletionCount != 0;
}

/*
 * The cached data runs of rel for snapshot (a copy) when *token comes back
 * PG_UINT64_MAX; otherwise NIL, and *token is what runcache_store needs
 * (0: do not store).  A hit may be NIL too: a table without runs.
 */
List *
runcache_lookup(Relation rel, Snapshot snapshot, uint64 *token)
{
	TableSlot  *s = slot_of(RelationGetRelid(rel));
	Oid			relid = RelationGetRelid(rel);
	CacheEntry *e;
	uint64		version;

	*token = 0;
	if (slots == NULL || !cacheable(snapshot))
		return NULL;
	if (pg_atomic_read_u32(&s->changers) != 0)
		return NULL;
	pg_read_barrier();
	version = pg_atomic_read_u64(&s->version);
	if (cache)
	{
		e = hash_search(cache, &relid, HASH_FIND, NULL);
		if (e && e->version == version && e->relfilenode == rel->rd_node.relNode &&
			snapshot->snapXactCompletionCount >= e->completion)
		{
			/* a copy: the entry may be replaced while the caller reads */
			*token = PG_UINT64_MAX;
			return copy_runs(e->runs);
		}
	}
	*token = version + 1;		/* never 0 */
	return NULL;
}

/*
 * Keep runs (read from the catalog with snapshot after runcache_lookup gave
 * token) if still nobody changed the table's runs meanwhile.
 */
void
runcache_store(Relation rel, Snapshot snapshot, uint64 token, List *runs)
{
	TableSlot  *s = slot_of(RelationGetRelid(rel));
	Oid			relid = RelationGetRelid(rel);
	CacheEntry *e;
	bool		found;
	MemoryContext old;

	if (token == 0 || token == PG_UINT64_MAX)
		return;
	pg_read_barrier();
	if (pg_atomic_read_u32(&s->changers) != 0 ||
		pg_atomic_read_u64(&s->version) != token - 1)
		return;
	if (cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CacheEntry);
		cache = hash_create("pkmerge run lists", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(cache, &relid, HASH_ENTER, &found);
	if (!found)
		e->cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge run list",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(e->cxt);
	old = MemoryContextSwitchTo(e->cxt);
	e->runs = copy_runs(runs);
	MemoryContextSwitchTo(old);
	e->version = token - 1;
	e->completion = snapshot->snapXactCompletionCount;
	e->relfilenode = rel->rd_node.relNode;
}

bool
runcache_free_hint(Oid relid)
{
	return slots == NULL || slot_of(relid)->free_hint;
}

void
runcache_set_free_hint(Oid relid, bool hint)
{
	if (slots)
		slot_of(relid)->free_hint = hint;
}
