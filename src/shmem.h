/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Per-table hints in shared memory, keyed by the table's whole identity
 *	  (database and relid, RelFileNode): whether VACUUM found gaps in a
 *	  table's file that new runs could reuse, and where its used part ends;
 *	  per backend, which tables its transaction has buffered writes to.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_HINTS_H
#define PK_HINTS_H

#include "storage/block.h"
#include "storage/relfilenode.h"

/* shmem.c */
extern void hints_init(void);
extern bool hints_free_space(Oid relid);
extern void hints_set_free_space(Oid relid, bool hint);
extern BlockNumber hints_file_end(const RelFileNode *node);
extern void hints_set_file_end(const RelFileNode *node, BlockNumber end);
extern void hints_note_writes(Oid relid);
extern void hints_clear_writes(void);
extern bool hints_leader_writes(Oid relid);

#endif							/* PK_HINTS_H */
