/*-------------------------------------------------------------------------
 *
 * am_scan.h
 *	  Reads through the table AM: sequential scans (also parallel), ANALYZE
 *	  sampling and fetches by TID.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_AM_SCAN_H
#define PK_AM_SCAN_H

#include "access/relscan.h"
#include "access/tableam.h"

/* am_scan.c */
extern TableScanDesc scan_begin(Relation rel, Snapshot snapshot, int nkeys,
								struct ScanKeyData *key,
								ParallelTableScanDesc pscan, uint32 flags);
extern void scan_end(TableScanDesc sscan);
extern void scan_rescan(TableScanDesc sscan, struct ScanKeyData *key,
						bool set_params, bool allow_strat, bool allow_sync,
						bool allow_pagemode);
extern bool scan_getnextslot(TableScanDesc sscan, ScanDirection direction,
							 TupleTableSlot *slot);
extern bool scan_analyze_block(TableScanDesc sscan, BlockNumber blockno);
extern bool scan_bitmap_page(TableScanDesc sscan, BlockNumber blockno,
							 const OffsetNumber *offsets, int noffsets);
extern bool scan_bitmap_next(TableScanDesc sscan, TupleTableSlot *slot);
extern void scan_store_row(Relation rel, MinimalTuple tup, bool should_free,
						   ItemPointer tid, TupleTableSlot *slot);
extern bool scan_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
									double *liverows, double *deadrows,
									TupleTableSlot *slot);
extern IndexFetchTableData *fetch_begin(Relation rel);
extern void fetch_reset(IndexFetchTableData *scan);
extern void fetch_end(IndexFetchTableData *scan);
extern bool fetch_tuple(IndexFetchTableData *scan, ItemPointer tid,
						Snapshot snapshot, TupleTableSlot *slot,
						bool *call_again, bool *all_dead);
extern bool fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
							  TupleTableSlot *slot);
extern bool fetch_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
									 Snapshot snapshot);
extern void scan_handoff(const void *owner, const void *fetch, Oid relid,
						 ItemPointer tid, MinimalTuple tup);
extern void scan_handoff_forget(const void *owner);
extern MinimalTuple scan_handoff_tuple(void);
extern double scan_count_rows(Relation rel, BlockNumber *pages, bool estimate);
extern void scan_init(void);
extern Size scan_parallel_estimate(Relation rel);
extern Size scan_parallel_initialize(Relation rel, ParallelTableScanDesc pscan);
extern void scan_parallel_reinitialize(Relation rel, ParallelTableScanDesc pscan);

#endif							/* PK_AM_SCAN_H */
