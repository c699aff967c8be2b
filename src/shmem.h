/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  The library's shared memory, asked for and set up in one place
 *	  (shmem.c), as ipci.c does for the server: each part that keeps
 *	  shared state owns it and exports xxx_shmem_size() and
 *	  xxx_shmem_init(); shmem.c sums the sizes and calls the inits under
 *	  AddinShmemInitLock, giving the parts that need LWLocks the library's
 *	  tranche.  What a part keeps is all gone after a restart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SHMEM_H
#define PK_SHMEM_H

#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

/* shmem.c */
extern void pk_shmem_init(void);

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

#endif							/* PK_SHMEM_H */
