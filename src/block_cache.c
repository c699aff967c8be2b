/*-------------------------------------------------------------------------
 *
 * block_cache.c
 *	  The shared cache of decompressed data blocks: the blocks point
 *	  lookups read (run_read.c), held once for every backend of the server,
 *	  as shared_buffers holds pages, in pkchangelog.block_cache_size of
 *	  shared memory.  A block is decompressed by the first backend that
 *	  needs it; the others read it in place.
 *
 * The cache is an array of slots of BCACHE_SLOT_SIZE bytes, then a few of
 * BCACHE_LARGE_SLOT_SIZE (an eighth of the memory), and a hash
 * table from a block's key to its slot, split into partitions each under
 * its own LWLock, as the buffer manager's (buf_table.c).  A slot's state
 * word counts its pins and its recent uses, and has BUSY set while one
 * backend fills or empties it; a busy slot is pinned by no one.
 *
 *	- A lookup finds the key under its partition's lock, shared, and pins
 *	  the slot by compare-and-swap, unless it is busy (then: a miss).
 *	- A new block takes the slot a clock sweep finds unpinned and not used
 *	  since the sweep last passed, among those large enough for it (a
 *	  small block sweeps every slot, a large one the large slots alone,
 *	  with a hand of its own); setting BUSY succeeds only while the slot
 *	  has no pin.  Its owner takes the old key out of the table, copies the
 *	  block in and enters the new key, each under that key's partition's
 *	  lock, exclusive.  If another backend entered the key meanwhile, its
 *	  slot serves and the new one is left empty.
 *
 * A slot's bytes therefore never change while it is pinned or while a
 * lookup can find its key.  Pins are the backend's own: it notes each slot
 * it pins and gives back what is left at the end of every transaction
 * (errors included) and at exit.  A pinned slot stays out of the sweep;
 * with every slot pinned (more lookups in flight than slots) the caller
 * keeps its block to itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "block_cache.h"
#include "guc.h"
#include "pin_notes.h"

/* hash table partitions (a power of 2) */
#define BCACHE_PARTITIONS	64

/* a slot's state: pins in the low bits, then uses, then BUSY */
#define PIN_ONE			1U
#define PIN_MASK		0x3FFFFU
#define USAGE_SHIFT		18
#define USAGE_ONE		(1U << USAGE_SHIFT)
#define USAGE_MASK		(7U << USAGE_SHIFT)
#define MAX_USAGE		5
#define BUSY			(1U << 21)

#define STATE_PINS(s)	((s) & PIN_MASK)
#define STATE_USAGE(s)	(((s) & USAGE_MASK) >> USAGE_SHIFT)

typedef struct BcacheSlot
{
	pg_atomic_uint32 state;
	bool		in_table;		/* key names it: both changed only when BUSY */
	BcacheKey	key;
} BcacheSlot;

typedef struct BcacheShared
{
	pg_atomic_uint32 hand;		/* the clock sweep's next slot */
	pg_atomic_uint32 large_hand;	/* the large blocks' sweep's, among the
									 * large slots */
	int			nslots;
	int			nsmall;			/* slots below this are small, the others large */
	LWLockPadded locks[BCACHE_PARTITIONS];
	BcacheSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} BcacheShared;

typedef struct BcacheEntry
{
	BcacheKey	key;
	int			slot;
} BcacheEntry;

static BcacheShared *shared = NULL;
static char *slot_bytes = NULL;
static HTAB *table = NULL;

/* the slots this backend pinned */
static PinNotes notes;

/* the large slots: an eighth of the memory, in a cache of at least 8 */
static int
large_slots(void)
{
	int64		bytes = (int64) pk_block_cache_size * 1024;

	return bytes >= 8 * BCACHE_LARGE_SLOT_SIZE ?
		(int) Min(bytes / 8 / BCACHE_LARGE_SLOT_SIZE, INT_MAX / 4) : 0;
}

static int
small_slots(void)
{
	int64		bytes = (int64) pk_block_cache_size * 1024 -
		(int64) large_slots() * BCACHE_LARGE_SLOT_SIZE;

	return (int) Min(bytes / BCACHE_SLOT_SIZE, INT_MAX / 4);
}

static int
cache_slots(void)
{
	return small_slots() + large_slots();
}

static Size
slot_bytes_size(void)
{
	return add_size(mul_size(small_slots(), BCACHE_SLOT_SIZE),
					mul_size(large_slots(), BCACHE_LARGE_SLOT_SIZE));
}

static Size
shared_size(int nslots)
{
	return add_size(offsetof(BcacheShared, slots), mul_size(nslots, sizeof(BcacheSlot)));
}

Size
bcache_shmem_size(void)
{
	int			nslots = cache_slots();
	Size		size;

	if (nslots == 0)
		return 0;
	size = shared_size(nslots);
	size = add_size(size, slot_bytes_size());
	size = add_size(size, PG_CACHE_LINE_SIZE);
	return add_size(size, hash_estimate_size(nslots + BCACHE_PARTITIONS,
											 sizeof(BcacheEntry)));
}

void
bcache_shmem_init(int tranche)
{
	int			nslots = cache_slots();
	bool		found;
	HASHCTL		info;

	if (nslots == 0)
		return;
	shared = ShmemInitStruct("pkchangelog block cache", shared_size(nslots), &found);
	slot_bytes = ShmemInitStruct("pkchangelog block cache slots",
								 add_size(slot_bytes_size(), PG_CACHE_LINE_SIZE),
								 &found);
	slot_bytes = (char *) TYPEALIGN(PG_CACHE_LINE_SIZE, slot_bytes);
	if (!found)
	{
		pg_atomic_init_u32(&shared->hand, 0);
		pg_atomic_init_u32(&shared->large_hand, 0);
		shared->nslots = nslots;
		shared->nsmall = small_slots();
		for (int i = 0; i < BCACHE_PARTITIONS; i++)
			LWLockInitialize(&shared->locks[i].lock, tranche);
		for (int i = 0; i < nslots; i++)
		{
			pg_atomic_init_u32(&shared->slots[i].state, 0);
			shared->slots[i].in_table = false;
		}
	}
	info.keysize = sizeof(BcacheKey);
	info.entrysize = sizeof(BcacheEntry);
	info.num_partitions = BCACHE_PARTITIONS;
	table = ShmemInitHash("pkchangelog block cache table",
						  nslots + BCACHE_PARTITIONS, nslots + BCACHE_PARTITIONS,
						  &info, HASH_ELEM | HASH_BLOBS | HASH_PARTITION);
}

/* whether the server has the cache (pkchangelog.block_cache_size > 0) */
bool
bcache_enabled(void)
{
	return shared != NULL;
}

/* the bytes pieces take in a slot, each MAXALIGNed */
Size
bcache_stored_size(const BcachePiece *pieces, int npieces)
{
	Size		size = 0;

	for (int i = 0; i < npieces; i++)
		size += MAXALIGN(pieces[i].len);
	return size;
}

static inline char *
slot_data(int slot)
{
	int			nsmall = shared->nsmall;

	if (slot < nsmall)
		return slot_bytes + (Size) slot * BCACHE_SLOT_SIZE;
	return slot_bytes + (Size) nsmall * BCACHE_SLOT_SIZE +
		(Size) (slot - nsmall) * BCACHE_LARGE_SLOT_SIZE;
}

static LWLock *
partition_lock(uint32 hash)
{
	return &shared->locks[hash % BCACHE_PARTITIONS].lock;
}

static void
unpin_all_at_exit(int code, Datum arg)
{
	bcache_unpin_all();
}

/*
 * Pin slot unless it is busy: a use counts towards its staying in the
 * cache.  The caller holds the partition lock of the key that named it.
 */
static bool
pin_slot(int slot)
{
	pg_atomic_uint32 *state = &shared->slots[slot].state;
	uint32		old = pg_atomic_read_u32(state);

	for (;;)
	{
		uint32		new;

		if (old & BUSY)
			return false;
		new = old + PIN_ONE;
		if (STATE_USAGE(old) < MAX_USAGE)
			new += USAGE_ONE;
		if (pg_atomic_compare_exchange_u32(state, &old, new))
			return true;
	}
}

/*
 * The block key names, pinned (its slot's number in *slot, for
 * bcache_unpin), or NULL if the cache holds it not.
 */
const char *
bcache_get(const BcacheKey *key, int *slot)
{
	uint32		hash = get_hash_value(table, key);
	LWLock	   *lock = partition_lock(hash);
	BcacheEntry *e;
	bool		pinned = false;

	pin_notes_reserve(&notes, unpin_all_at_exit);
	LWLockAcquire(lock, LW_SHARED);
	e = hash_search_with_hash_value(table, key, hash, HASH_FIND, NULL);
	if (e != NULL)
	{
		*slot = e->slot;
		pinned = pin_slot(e->slot);
	}
	LWLockRelease(lock);
	if (!pinned)
		return NULL;
	pin_notes_add(&notes, *slot);
	return slot_data(*slot);
}

/*
 * A slot of at least size bytes to fill, BUSY: the clock sweep's first
 * unpinned one not used since it last passed; -1 if a few rounds found
 * every such slot pinned.
 */
static int
take_victim(Size size)
{
	bool		large = size > BCACHE_SLOT_SIZE;
	int			first = large ? shared->nsmall : 0;
	int			nslots = shared->nslots - first;
	pg_atomic_uint32 *hand = large ? &shared->large_hand : &shared->hand;
	int64		tries = (int64) nslots * (MAX_USAGE + 2);

	if (nslots == 0)
		return -1;				/* a cache too small for large slots */

	while (tries-- > 0)
	{
		int			slot = first + pg_atomic_fetch_add_u32(hand, 1) % nslots;
		pg_atomic_uint32 *state = &shared->slots[slot].state;
		uint32		old = pg_atomic_read_u32(state);

		if ((old & BUSY) || STATE_PINS(old) > 0)
			continue;
		if (STATE_USAGE(old) > 0)
		{
			/* a use spares it one round (a lost race only spares it more) */
			pg_atomic_compare_exchange_u32(state, &old, old - USAGE_ONE);
			continue;
		}
		if (pg_atomic_compare_exchange_u32(state, &old, BUSY))
			return slot;
	}
	return -1;
}

/* take slot's key out of the table, if its entry still names slot */
static void
remove_key(int slot)
{
	BcacheSlot *s = &shared->slots[slot];
	uint32		hash;
	LWLock	   *lock;
	BcacheEntry *e;

	if (!s->in_table)
		return;
	hash = get_hash_value(table, &s->key);
	lock = partition_lock(hash);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = hash_search_with_hash_value(table, &s->key, hash, HASH_FIND, NULL);
	if (e != NULL && e->slot == slot)
		hash_search_with_hash_value(table, &s->key, hash, HASH_REMOVE, NULL);
	LWLockRelease(lock);
	s->in_table = false;
}

/*
 * Store a block under key: pieces copied one after the other into a slot,
 * each MAXALIGNed (bcache_stored_size bytes, at most BCACHE_LARGE_SLOT_SIZE).
 * Returns the stored bytes pinned, as bcache_get: another backend's copy if
 * it stored the key first; NULL if no slot was free.
 */
const char *
bcache_put(const BcacheKey *key, const BcachePiece *pieces, int npieces, int *slot)
{
	uint32		hash = get_hash_value(table, key);
	LWLock	   *lock = partition_lock(hash);
	BcacheEntry *e;
	bool		found;
	int			victim;
	char	   *p;

	Assert(bcache_stored_size(pieces, npieces) <= BCACHE_LARGE_SLOT_SIZE);
	pin_notes_reserve(&notes, unpin_all_at_exit);
	victim = take_victim(bcache_stored_size(pieces, npieces));
	if (victim < 0)
		return NULL;

	/* nothing below can fail: the slot must not stay busy */
	remove_key(victim);
	p = slot_data(victim);
	for (int i = 0; i < npieces; i++)
	{
		memcpy(p, pieces[i].data, pieces[i].len);
		p += MAXALIGN(pieces[i].len);
	}
	shared->slots[victim].key = *key;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = hash_search_with_hash_value(table, key, hash, HASH_ENTER_NULL, &found);
	if (e != NULL && found && pin_slot(e->slot))
	{
		/* stored meanwhile: that copy serves, ours goes back empty */
		*slot = e->slot;
		LWLockRelease(lock);
		pg_atomic_exchange_u32(&shared->slots[victim].state, 0);
		pin_notes_add(&notes, *slot);
		return slot_data(*slot);
	}
	if (e == NULL)
	{
		/* can't happen: the table has an entry per slot */
		LWLockRelease(lock);
		pg_atomic_exchange_u32(&shared->slots[victim].state, 0);
		return NULL;
	}

	/* new, or stored in a slot being emptied: ours serves */
	e->slot = victim;
	shared->slots[victim].in_table = true;
	/* a full barrier: the slot's bytes and fields are written before */
	pg_atomic_exchange_u32(&shared->slots[victim].state, PIN_ONE | USAGE_ONE);
	LWLockRelease(lock);
	*slot = victim;
	pin_notes_add(&notes, victim);
	return slot_data(victim);
}

/* give back a pin bcache_get or bcache_put took */
void
bcache_unpin(int slot)
{
	for (int i = notes.n - 1; i >= 0; i--)
	{
		if (notes.held[i] == (Size) slot)
		{
			notes.held[i] = notes.held[--notes.n];
			pg_atomic_fetch_sub_u32(&shared->slots[slot].state, PIN_ONE);
			return;
		}
	}
	elog(ERROR, "pkchangelog block cache slot %d is not pinned", slot);
}

/* give back every pin the backend holds (transaction end, exit) */
void
bcache_unpin_all(void)
{
	while (notes.n > 0)
		pg_atomic_fetch_sub_u32(&shared->slots[notes.held[--notes.n]].state, PIN_ONE);
}
