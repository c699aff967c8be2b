/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Per-table hints in shared memory, keyed by the table's whole identity
 *	  (database and relid, RelFileNode): where a table file's used part
 *	  ends and the gaps VACUUM found in it that new runs can reuse;
 *	  per backend, which tables its transaction has buffered writes to.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_HINTS_H
#define PK_HINTS_H

#include "storage/block.h"
#include "storage/relfilenode.h"

/* a run of free blocks in a table's file */
typedef struct SpaceGap
{
	BlockNumber start;
	BlockNumber len;
} SpaceGap;

/* gaps kept per file: the first ones in block order */
#define HINTS_MAX_GAPS 64

/* shmem.c */
extern void hints_init(void);
extern BlockNumber hints_file_end(const RelFileNode *node);
extern void hints_set_file_end(const RelFileNode *node, BlockNumber end,
							   const SpaceGap *gaps, int ngaps);
extern bool hints_take_gap(const RelFileNode *node, BlockNumber nblocks,
						   BlockNumber *start);
extern void hints_note_writes(Oid relid);
extern void hints_clear_writes(void);
extern bool hints_leader_writes(Oid relid);

#endif							/* PK_HINTS_H */
