/*-------------------------------------------------------------------------
 *
 * run_read_stats.c
 *	  Per-table counters of the point-lookup block cache (run_read.c),
 *	  summed over every backend of the server, the background worker
 *	  included, since server start: what pk_stats reports as
 *	  lookup_cache_hits and lookup_cache_misses.
 *
 * The cache itself is per backend; its counters are per table so that
 * pk_stats(rel) describes rel, and shared so that a monitoring session
 * sees the lookups of the sessions doing them.  A lookup only bumps a
 * counter in backend memory; the counts go to shared memory, under one
 * lock, when the transaction ends (or when a transaction has counted more
 * tables than the backend keeps), so the hot path never takes a lock.
 *
 * Shared memory holds NSLOTS slots tagged with (database, table), found by
 * probing up to PROBE slots from the tag's hash.  A table finding none of
 * them free takes over the least-used one, whose counts then start again:
 * with fewer tables doing lookups than slots, counts are exact until a
 * restart.  Slots are not freed at DROP TABLE; they are taken over.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "run_read_stats.h"

#define NSLOTS 4096
#define PROBE 8
/* tables one backend counts before it hands their counts over early */
#define NLOCAL 16

typedef struct CacheStatsSlot
{
	Oid			dbid;			/* InvalidOid: free */
	Oid			relid;
	uint64		hits;
	uint64		misses;
} CacheStatsSlot;

typedef struct CacheStatsShared
{
	LWLock		lock;
	CacheStatsSlot slots[NSLOTS];
} CacheStatsShared;

typedef struct LocalCount
{
	Oid			relid;
	uint64		hits;
	uint64		misses;
} LocalCount;

static CacheStatsShared *shared = NULL;
static LocalCount local[NLOCAL];
static int	nlocal = 0;
static int	last = 0;			/* local[] entry counted last */

Size
readstats_shmem_size(void)
{
	return sizeof(CacheStatsShared);
}

void
readstats_shmem_init(int tranche)
{
	bool		found;

	shared = ShmemInitStruct("pkchangelog cache stats", sizeof(CacheStatsShared), &found);
	if (!found)
	{
		memset(shared->slots, 0, sizeof(shared->slots));
		LWLockInitialize(&shared->lock, tranche);
	}
}

static uint32
slot_hash(Oid dbid, Oid relid)
{
	return hash_combine(hash_uint32(dbid), hash_uint32(relid)) % NSLOTS;
}

/*
 * The slot of (dbid, relid), or NULL.  With take, a free slot or the
 * least-used one of the probe window is taken for it when it has none.
 * Caller holds the lock (exclusive with take).
 */
static CacheStatsSlot *
find_slot(Oid dbid, Oid relid, bool take)
{
	uint32		h = slot_hash(dbid, relid);
	CacheStatsSlot *victim = NULL;

	for (int i = 0; i < PROBE; i++)
	{
		CacheStatsSlot *s = &shared->slots[(h + i) % NSLOTS];

		if (s->dbid == dbid && s->relid == relid)
			return s;
		/* the first free slot, else the least-used one */
		if (victim == NULL ||
			(victim->dbid != InvalidOid &&
			 (s->dbid == InvalidOid ||
			  s->hits + s->misses < victim->hits + victim->misses)))
			victim = s;
	}
	if (!take)
		return NULL;
	victim->dbid = dbid;
	victim->relid = relid;
	victim->hits = 0;
	victim->misses = 0;
	return victim;
}

/* hand this backend's counts over to shared memory */
static void
flush(void)
{
	if (nlocal == 0)
		return;
	if (shared != NULL)
	{
		LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
		for (int i = 0; i < nlocal; i++)
		{
			CacheStatsSlot *s = find_slot(MyDatabaseId, local[i].relid, true);

			s->hits += local[i].hits;
			s->misses += local[i].misses;
		}
		LWLockRelease(&shared->lock);
	}
	nlocal = 0;
	last = 0;
}

static void
readstats_xact_callback(XactEvent event, void *arg)
{
	/* also at abort: the lookups happened */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		flush();
}

void
readstats_init(void)
{
	RegisterXactCallback(readstats_xact_callback, NULL);
}

/* a point lookup of relid found its block in the cache (hit) or not */
void
readstats_count(Oid relid, bool hit)
{
	LocalCount *c;

	if (last >= nlocal || local[last].relid != relid)
	{
		for (last = 0; last < nlocal && local[last].relid != relid; last++)
			;
		if (last == nlocal)
		{
			/* LWLocks may be taken in a transaction at any time */
			if (nlocal == NLOCAL)
				flush();
			local[nlocal].relid = relid;
			local[nlocal].hits = 0;
			local[nlocal].misses = 0;
			last = nlocal++;
		}
	}
	c = &local[last];
	if (hit)
		c->hits++;
	else
		c->misses++;
}

/*
 * relid's counts: every backend's handed-over counts, plus this backend's
 * not yet handed over (so a session sees its own lookups at once).
 */
void
readstats_get(Oid relid, int64 *hits, int64 *misses)
{
	*hits = 0;
	*misses = 0;
	if (shared != NULL)
	{
		CacheStatsSlot *s;

		LWLockAcquire(&shared->lock, LW_SHARED);
		s = find_slot(MyDatabaseId, relid, false);
		if (s != NULL)
		{
			*hits = s->hits;
			*misses = s->misses;
		}
		LWLockRelease(&shared->lock);
	}
	for (int i = 0; i < nlocal; i++)
		if (local[i].relid == relid)
		{
			*hits += local[i].hits;
			*misses += local[i].misses;
		}
}
