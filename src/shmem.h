/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  The library's shared memory, asked for and set up in one place
 *	  (shmem.c), as ipci.c does for the server: each part that keeps
 *	  shared state owns it and exports xxx_shmem_size() and
 *	  xxx_shmem_init(); shmem.c sums the sizes and calls the inits under
 *	  AddinShmemInitLock, giving the parts that need LWLocks the library's
 *	  tranche.  What a part keeps is all gone after a restart.  The parts
 *	  make their arrays of slots with shmem_slots.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SHMEM_H
#define PK_SHMEM_H

/* shmem.c */
extern void pk_shmem_init(void);

#endif							/* PK_SHMEM_H */
