/*-------------------------------------------------------------------------
 *
 * maint_worker.h
 *	  The background workers: registration, and requests for a table's
 *	  maintenance.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_MAINT_WORKER_H
#define PK_MAINT_WORKER_H

/* maint_worker.c */
extern Size worker_shmem_size(void);
extern void worker_shmem_init(int tranche);
extern void worker_init(void);
extern void worker_request(Oid relid);

#endif							/* PK_MAINT_WORKER_H */
