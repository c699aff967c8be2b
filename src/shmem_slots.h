/*-------------------------------------------------------------------------
 *
 * shmem_slots.h
 *	  Arrays of slots in shared memory, for the parts that keep state per
 *	  table there (shmem.c sets them up): each slot starts with the lock
 *	  that guards it, a spinlock or, where readers copy or search more
 *	  than a few dozen instructions' worth, an LWLock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SHMEM_SLOTS_H
#define PK_SHMEM_SLOTS_H

#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

/*
 * An array of nslots slots of slotsize bytes, each starting with its
 * spinlock, zeroed and their spinlocks initialized when first made (the
 * caller holds AddinShmemInitLock).  For state hashed into fixed slots by
 * table: a slot names the table it holds, so a collision only costs a
 * fallback to the slow way.
 */
static inline void *
pk_shmem_slots(const char *name, int nslots, Size slotsize)
{
	bool		found;
	char	   *slots = ShmemInitStruct(name, mul_size(nslots, slotsize), &found);

	if (!found)
	{
		memset(slots, 0, mul_size(nslots, slotsize));
		for (int i = 0; i < nslots; i++)
			SpinLockInit((slock_t *) (slots + i * slotsize));
	}
	return slots;
}

/*
 * The same, each slot starting with an LWLock of the library's tranche:
 * for slots whose readers copy or search more than a few dozen
 * instructions' worth, which a spinlock must not guard.
 */
static inline void *
pk_shmem_lwlock_slots(const char *name, int nslots, Size slotsize, int tranche)
{
	bool		found;
	char	   *slots = ShmemInitStruct(name, mul_size(nslots, slotsize), &found);

	if (!found)
	{
		memset(slots, 0, mul_size(nslots, slotsize));
		for (int i = 0; i < nslots; i++)
			LWLockInitialize((LWLock *) (slots + i * slotsize), tranche);
	}
	return slots;
}

#endif							/* PK_SHMEM_SLOTS_H */
