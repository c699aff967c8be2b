/*-------------------------------------------------------------------------
 *
 * key_types.c
 *	  The operators a key column is ordered and hashed with: its type's
 *	  default btree ordering (runs are sorted by it) and default hash
 *	  function (bloom filters and key filters are built with it).
 *
 *	  The type cache finds both by scanning pg_opclass for the type's
 *	  default classes, a cost each new backend pays in its first query of a
 *	  pkmerge table (a heap table's plan and scan need neither).  For the
 *	  types of PostgreSQL's bootstrap catalogs, whose default classes are
 *	  pinned (another class cannot become the default while they are, nor
 *	  can they be dropped), the answer never changes: the first backend to
 *	  find both keeps them in shared memory for the others.  Other types,
 *	  and a type found without either (a class created later could give it
 *	  one), take the type cache every time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "storage/shmem.h"
#include "utils/typcache.h"

#include "key_types.h"
#include "shmem_slots.h"

/* hashed by type, a collision takes the type cache */
#define NSLOTS 64

typedef struct KeyTypeSlot
{
	slock_t		lock;
	Oid			typid;			/* InvalidOid: empty */
	Oid			lt_opr;
	Oid			hash_proc;
} KeyTypeSlot;

static KeyTypeSlot *slots = NULL;

Size
keytypes_shmem_size(void)
{
	return mul_size(NSLOTS, sizeof(KeyTypeSlot));
}

void
keytypes_shmem_init(void)
{
	slots = pk_shmem_slots("pkchangelog key types", NSLOTS, sizeof(KeyTypeSlot));
}

/*
 * typid's default btree "<" operator and default hash function, each
 * InvalidOid if the type has none.
 */
void
keytype_ops(Oid typid, Oid *lt_opr, Oid *hash_proc)
{
	KeyTypeSlot *slot = slots ? &slots[typid % NSLOTS] : NULL;
	TypeCacheEntry *tc;
	bool		found = false;

	if (slot != NULL && typid < FirstGenbkiObjectId)
	{
		SpinLockAcquire(&slot->lock);
		if (slot->typid == typid)
		{
			*lt_opr = slot->lt_opr;
			*hash_proc = slot->hash_proc;
			found = true;
		}
		SpinLockRelease(&slot->lock);
		if (found)
			return;
	}
	tc = lookup_type_cache(typid, TYPECACHE_LT_OPR | TYPECACHE_HASH_PROC);
	*lt_opr = tc->lt_opr;
	*hash_proc = tc->hash_proc;
	if (slot != NULL && typid < FirstGenbkiObjectId &&
		OidIsValid(*lt_opr) && OidIsValid(*hash_proc))
	{
		SpinLockAcquire(&slot->lock);
		if (slot->typid == InvalidOid)
		{
			slot->lt_opr = *lt_opr;
			slot->hash_proc = *hash_proc;
			slot->typid = typid;
		}
		SpinLockRelease(&slot->lock);
	}
}
