/*-------------------------------------------------------------------------
 *
 * run.h
 *	  Sequence numbers of runs' rows, which the writers and readers of runs
 *	  share (run_write.h writes a run, run_read.h reads one, run_space.h
 *	  places it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_H
#define PK_RUN_H

#include "access/htup.h"
#include "utils/rel.h"

#include "run_format.h"

/*
 * Sequence numbers.  Commits take them from pkchangelog.tables.last_seq;
 * a run of a transaction still writing (spilled from its write buffer,
 * write_spill.c) is numbered PK_PENDING_SEQ + its spill ordinal until its commit
 * renumbers it: above every committed row, below the buffer's.
 */
#define PK_PENDING_SEQ		(UINT64CONST(1) << 54)

static inline bool
run_is_pending(const RunInfo *run)
{
	return (uint64) run->min_seq >= PK_PENDING_SEQ;
}

/*
 * A row's sequence number.  A run whose rows share one (every commit's)
 * carries it in its catalog row, which is what counts: a spilled run is
 * renumbered at commit without rewriting its pages.
 */
static inline uint64
run_row_seq(const RunInfo *run, const RunRowHeader *rh)
{
	return run->min_seq == run->max_seq ? (uint64) run->min_seq : RUN_ROW_SEQ(rh);
}

#endif							/* PK_RUN_H */
