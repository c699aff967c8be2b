/*-------------------------------------------------------------------------
 *
 * index_cache.c
 *	  The shared cache of run indexes: each run's block index with its key
 *	  range, and its bloom filter, built by the first backend that reads the run and read
 *	  in place by every other, in pkchangelog.shared_index_cache_size of
 *	  shared memory, so that a new connection's first lookup finds them
 *	  ready and no backend keeps copies of its own (run_read.c builds and
 *	  reads them; this file only stores them).
 *
 * An index and a bloom filter each take one contiguous object of its own
 * size (a few kB for a small run; for a run of a million keys about 0.5 MB
 * of index and 1.2 MB of filter), so the objects are laid
 * out one after the other in a ring: a new one goes at the head, and room
 * is made by evicting the oldest from the tail.  Indexes are built once
 * per run and server, far less often than blocks are read, and an index
 * evicted while still used is built again on its next use.  One LWLock
 * guards the ring and the hash table from a run's key to its object.
 *
 *	- A lookup finds the key under the lock, shared, and pins the object
 *	  (an atomic count of pins in its header).
 *	- A new object is reserved under the lock, exclusive, pinned by its
 *	  builder and not yet in the table; the builder fills it without the
 *	  lock and enters its key (if another backend entered the key
 *	  meanwhile, that object serves and this one just ages out).
 *	- Eviction takes the tail object out of the table under the lock,
 *	  exclusive, only while it has no pin; a pinned tail stops it, and the
 *	  caller then keeps the index it built to itself.
 *
 * An object's bytes thus never change while it is pinned or in the table.
 * Pins are the backend's own: it notes each and gives back all of them at
 * the end of every transaction (errors included) and at exit.  The main
 * shared memory segment is at the same address in every backend, so an
 * object may hold pointers into itself.
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

#include "guc.h"
#include "index_cache.h"
#include "pin_notes.h"

/* the table's capacity: one entry per this many bytes of the ring */
#define ICACHE_BYTES_PER_ENTRY	(4 * 1024)

typedef struct IcacheObject
{
	pg_atomic_uint32 pins;
	bool		in_table;		/* changed only under the lock, exclusive */
	Size		size;			/* of the object, this header included */
	BcacheKey	key;
} IcacheObject;

#define OBJECT_HEADER	MAXALIGN(sizeof(IcacheObject))

typedef struct IcacheShared
{
	LWLockPadded lock;
	Size		capacity;		/* bytes of the ring */
	Size		head;			/* where the next object goes */
	Size		tail;			/* the oldest object */
	Size		wrap_at;		/* objects end here, then go on from 0 */
	uint64		nobjects;
} IcacheShared;

typedef struct IcacheEntry
{
	BcacheKey	key;
	Size		offset;
} IcacheEntry;

static IcacheShared *shared = NULL;
static char *ring = NULL;
static HTAB *table = NULL;

/* the objects this backend pinned */
static PinNotes notes;

static Size
ring_capacity(void)
{
	return (Size) pk_shared_index_cache_size * 1024;
}

static long
table_entries(void)
{
	return (long) Max(ring_capacity() / ICACHE_BYTES_PER_ENTRY, 64);
}

Size
icache_shmem_size(void)
{
	Size		size;

	if (ring_capacity() == 0)
		return 0;
	size = add_size(sizeof(IcacheShared), ring_capacity());
	size = add_size(size, PG_CACHE_LINE_SIZE);
	return add_size(size, hash_estimate_size(table_entries(), sizeof(IcacheEntry)));
}

void
icache_shmem_init(int tranche)
{
	bool		found;
	HASHCTL		info;

	if (ring_capacity() == 0)
		return;
	shared = ShmemInitStruct("pkchangelog index cache", sizeof(IcacheShared), &found);
	ring = ShmemInitStruct("pkchangelog index cache ring",
						   add_size(ring_capacity(), PG_CACHE_LINE_SIZE), &found);
	ring = (char *) TYPEALIGN(PG_CACHE_LINE_SIZE, ring);
	if (!found)
	{
		LWLockInitialize(&shared->lock.lock, tranche);
		shared->capacity = ring_capacity();
		shared->head = shared->tail = 0;
		shared->wrap_at = shared->capacity;
		shared->nobjects = 0;
	}
	info.keysize = sizeof(BcacheKey);
	info.entrysize = sizeof(IcacheEntry);
	table = ShmemInitHash("pkchangelog index cache table",
						  table_entries(), table_entries(),
						  &info, HASH_ELEM | HASH_BLOBS);
}

/* whether the server has the cache (pkchangelog.shared_index_cache_size > 0) */
bool
icache_enabled(void)
{
	return shared != NULL;
}

static inline IcacheObject *
object_at(Size offset)
{
	return (IcacheObject *) (ring + offset);
}

static void
unpin_all_at_exit(int code, Datum arg)
{
	icache_unpin_all();
}

static inline void *
pinned(Size offset)
{
	pin_notes_add(&notes, offset);
	return (char *) object_at(offset) + OBJECT_HEADER;
}

/* the object key names, pinned, or NULL if the cache holds it not */
void *
icache_get(const BcacheKey *key)
{
	IcacheEntry *e;
	Size		offset = 0;

	pin_notes_reserve(&notes, unpin_all_at_exit);
	LWLockAcquire(&shared->lock.lock, LW_SHARED);
	e = hash_search(table, key, HASH_FIND, NULL);
	if (e != NULL)
	{
		offset = e->offset;
		pg_atomic_fetch_add_u32(&object_at(offset)->pins, 1);
	}
	LWLockRelease(&shared->lock.lock);
	return e != NULL ? pinned(offset) : NULL;
}

/*
 * Evict the tail object; false if it is pinned (in use, or being filled).
 * The caller holds the lock, exclusive.
 */
static bool
evict_tail(void)
{
	IcacheObject *o = object_at(shared->tail);

	if (pg_atomic_read_u32(&o->pins) > 0)
		return false;
	if (o->in_table)
		hash_search(table, &o->key, HASH_REMOVE, NULL);
	shared->tail += o->size;
	if (--shared->nobjects == 0)
	{
		shared->head = shared->tail = 0;
		shared->wrap_at = shared->capacity;
	}
	else if (shared->tail == shared->wrap_at)
	{
		shared->tail = 0;
		shared->wrap_at = shared->capacity;
	}
	return true;
}

/*
 * The offset where an object of size bytes can go, evicting what must go
 * for it; false if a pinned object is in the way.  The caller holds the
 * lock, exclusive.
 */
static bool
make_room(Size size, Size *at)
{
	for (;;)
	{
		if (shared->nobjects == 0)
		{
			*at = 0;
			return true;
		}
		if (shared->head > shared->tail)
		{
			/* objects in [tail, head): room after them, or from 0 */
			if (shared->capacity - shared->head >= size)
			{
				*at = shared->head;
				return true;
			}
			if (shared->tail >= size)
			{
				shared->wrap_at = shared->head;
				*at = 0;
				return true;
			}
		}
		else if (shared->tail - shared->head >= size)
		{
			/* objects in [tail, wrap_at) and [0, head) */
			*at = shared->head;
			return true;
		}
		if (!evict_tail())
			return false;
	}
}

/*
 * Reserve an object of size bytes for key, pinned: the caller fills the
 * size bytes returned and then calls icache_publish.  NULL if it cannot
 * be stored (larger than half the cache, or a pinned object in the way).
 */
void *
icache_reserve(const BcacheKey *key, Size size, Size *handle)
{
	Size		total = OBJECT_HEADER + MAXALIGN(size);
	Size		at;
	IcacheObject *o;

	if (total > shared->capacity / 2)
		return NULL;
	pin_notes_reserve(&notes, unpin_all_at_exit);
	LWLockAcquire(&shared->lock.lock, LW_EXCLUSIVE);
	if (!make_room(total, &at))
	{
		LWLockRelease(&shared->lock.lock);
		return NULL;
	}
	o = object_at(at);
	pg_atomic_init_u32(&o->pins, 1);
	o->in_table = false;
	o->size = total;
	o->key = *key;
	shared->head = at + total;
	shared->nobjects++;
	LWLockRelease(&shared->lock.lock);
	*handle = at;
	return pinned(at);
}

/*
 * Enter a filled object's key.  Returns the object that serves, pinned:
 * the one reserved, or another backend's of the same key entered first
 * (the reserved one then keeps its pin until the transaction ends).
 */
void *
icache_publish(Size handle)
{
	IcacheObject *o = object_at(handle);
	IcacheEntry *e;
	bool		found;
	Size		serving = handle;

	pin_notes_reserve(&notes, unpin_all_at_exit);
	LWLockAcquire(&shared->lock.lock, LW_EXCLUSIVE);
	e = hash_search(table, &o->key, HASH_ENTER_NULL, &found);
	if (e != NULL && found)
	{
		serving = e->offset;
		pg_atomic_fetch_add_u32(&object_at(serving)->pins, 1);
	}
	else if (e != NULL)
	{
		e->offset = handle;
		o->in_table = true;
	}
	LWLockRelease(&shared->lock.lock);
	if (serving == handle)
		return (char *) o + OBJECT_HEADER;
	return pinned(serving);
}

/* give back every pin the backend holds (transaction end, exit) */
void
icache_unpin_all(void)
{
	while (notes.n > 0)
		pg_atomic_fetch_sub_u32(&object_at(notes.held[--notes.n])->pins, 1);
}
