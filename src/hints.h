/*-------------------------------------------------------------------------
 *
 * hints.h
 *	  Per-table hints in shared memory: whether VACUUM found gaps in a
 *	  table's file that new runs could reuse.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_HINTS_H
#define PK_HINTS_H

/* hints.c */
extern void hints_init(void);
extern bool hints_free_space(Oid relid);
extern void hints_set_free_space(Oid relid, bool hint);

#endif							/* PK_HINTS_H */
