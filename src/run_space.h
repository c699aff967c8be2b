/*-------------------------------------------------------------------------
 *
 * run_space.h
 *	  Where a run's blocks go in its table's file, and giving space back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_SPACE_H
#define PK_RUN_SPACE_H

#include "storage/block.h"
#include "utils/rel.h"

#include "run_format.h"

/* run_space.c */
extern Size space_shmem_size(void);
extern void space_shmem_init(int tranche);
extern void space_reserve(Relation rel, RunInfo *run, bool without_ids);
extern void space_truncate(Relation rel, BlockNumber *before,
						   BlockNumber *after, BlockNumber *used);
extern void space_rewrite(Relation rel, Relation dst, int *nruns,
						  BlockNumber *npages);

#endif							/* PK_RUN_SPACE_H */
