/*-------------------------------------------------------------------------
 *
 * tid.h
 *	  TIDs of pkmerge rows (DESIGN §5).  A committed row is named by its row
 *	  number: runs own ranges of row numbers.  A row still in the writing
 *	  transaction's buffer is named by its place in the order of writes
 *	  (never reused), in block numbers no run can reach.  The offset part always stays within
 *	  1..MaxHeapTuplesPerPage, so tidbitmap and GIN never see an invalid one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_TID_H
#define PK_TID_H

#include "access/htup_details.h"
#include "storage/itemptr.h"

#define PK_TIDS_PER_BLOCK	MaxHeapTuplesPerPage
#define PK_WBUF_BLOCK0		((BlockNumber) 0xF0000000)

/*
 * A run placed at block b owns row numbers from b * PK_ROWS_PER_PAGE, and
 * has at least one block per PK_ROWS_PER_PAGE rows (run_write.c pads
 * runs of rows that compress better than that), so the row numbers of
 * runs never overlap while their blocks do not.  Runs must start below
 * PK_MAX_RUN_BLOCK for their TIDs to stay below those of runs without
 * pages.
 */
#define PK_TID_BLOCKS_PER_PAGE 16
#define PK_ROWS_PER_PAGE	(PK_TID_BLOCKS_PER_PAGE * PK_TIDS_PER_BLOCK)

/*
 * A small data run kept in its catalog row (no pages) owns one TID block
 * of its own, chosen by its run id among PK_INLINE_SLOTS; it holds at most
 * PK_TIDS_PER_BLOCK rows.  The writer checks that no live run of the table
 * holds the same block (run ids that far apart rarely live together).  A
 * commit's data run kept in its snapshot's row has minus the snapshot's id
 * as its run id: its block counts down from the last slot.
 */
#define PK_INLINE_BLOCK0	((BlockNumber) 0xC0000000)
#define PK_INLINE_SLOTS		(PK_WBUF_BLOCK0 - PK_INLINE_BLOCK0)
#define PK_MAX_RUN_BLOCK	(PK_INLINE_BLOCK0 / PK_TID_BLOCKS_PER_PAGE)

static inline int64
pk_inline_row_base(int64 run_id)
{
	/* (a data run kept in its snapshot's row has minus the snapshot's id) */
	int64		slot = run_id % (int64) PK_INLINE_SLOTS;

	if (slot < 0)
		slot += PK_INLINE_SLOTS;
	return ((int64) PK_INLINE_BLOCK0 + slot) * PK_TIDS_PER_BLOCK;
}

static inline void
pk_tid_set(ItemPointer tid, uint64 n, BlockNumber base)
{
	ItemPointerSet(tid, base + (BlockNumber) (n / PK_TIDS_PER_BLOCK),
				   (OffsetNumber) (n % PK_TIDS_PER_BLOCK) + 1);
}

static inline void
pk_tid_from_row(ItemPointer tid, uint64 row)
{
	pk_tid_set(tid, row, 0);
}

static inline void
pk_tid_from_wbuf(ItemPointer tid, uint32 pos)
{
	pk_tid_set(tid, pos, PK_WBUF_BLOCK0);
}

static inline bool
pk_tid_is_wbuf(ItemPointer tid)
{
	return ItemPointerGetBlockNumberNoCheck(tid) >= PK_WBUF_BLOCK0;
}

static inline uint64
pk_tid_number(ItemPointer tid)
{
	BlockNumber blk = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (blk >= PK_WBUF_BLOCK0)
		blk -= PK_WBUF_BLOCK0;
	return (uint64) blk * PK_TIDS_PER_BLOCK + (off - 1);
}

/* the number a TID names, write buffer TIDs' whole (what pk_tid_from_row made) */
static inline uint64
pk_tid_id(ItemPointer tid)
{
	return (uint64) ItemPointerGetBlockNumberNoCheck(tid) * PK_TIDS_PER_BLOCK +
		(ItemPointerGetOffsetNumberNoCheck(tid) - 1);
}

static inline bool
pk_tid_valid(ItemPointer tid)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	return off >= 1 && off <= PK_TIDS_PER_BLOCK &&
		ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber;
}

#endif							/* PK_TID_H */
