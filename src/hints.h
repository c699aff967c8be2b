/*-------------------------------------------------------------------------
 *
 * hints.h
 *	  Per-table hints in shared memory: whether VACUUM found gaps in a
 *	  table's file that new runs could reuse, and where its used part ends;
 *	  per backend, which tables its transaction has buffered writes to; per
 *	  table, how its run list changes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_HINTS_H
#define PK_HINTS_H

#include "storage/block.h"
#include "storage/spin.h"

/*
 * How a table's run list changes, for the backends' caches of it
 * (runcache.c): every change of its catalog rows bumps generation when it
 * starts and when its transaction ends; inflight counts the transactions
 * between the two; enders are the last ones to end, horizon is past every
 * one that ended before them.
 */
#define RUNS_ENDERS 8
typedef struct RunsState
{
	slock_t		mutex;
	uint64		generation;
	uint32		inflight;
	int			next;			/* ring position in enders */
	TransactionId horizon;
	TransactionId enders[RUNS_ENDERS];
} RunsState;

/* hints.c */
extern void hints_init(void);
extern bool hints_free_space(Oid relid);
extern void hints_set_free_space(Oid relid, bool hint);
extern BlockNumber hints_file_end(Oid relfilenode);
extern void hints_set_file_end(Oid relfilenode, BlockNumber end);
extern void hints_note_writes(Oid relid);
extern void hints_clear_writes(void);
extern bool hints_leader_writes(Oid relid);
extern RunsState *hints_runs_state(Oid relid);

#endif							/* PK_HINTS_H */
