/*-------------------------------------------------------------------------
 *
 * maint_compaction.h
 *	  Universal compaction of a table's sorted runs (DESIGN §7).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_MAINT_COMPACTION_H
#define PK_MAINT_COMPACTION_H

#include "utils/rel.h"

/* maint_compaction.c */
extern Size compact_shmem_size(void);
extern void compact_shmem_init(void);
extern int64 compact_table(Relation rel, bool full, bool as_record);
extern int64 compact_table_nowait(Relation rel);
extern int64 compact_level0_beside(Relation rel);
typedef enum CompactDue
{
	COMPACT_NOT_DUE,
	COMPACT_DUE,				/* num_sorted_run_compaction_trigger reached */
	COMPACT_STOP				/* num_sorted_run_stop_trigger reached */
} CompactDue;

extern CompactDue compact_due(Relation rel, List *runs, int spilled, int64 new_bytes);
extern int64 compact_commits_since_full(Relation rel, int64 limit);

#endif							/* PK_MAINT_COMPACTION_H */
