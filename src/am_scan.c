/*-------------------------------------------------------------------------
 *
 * am_scan.c
 *	  Reads through the table AM: sequential scans (the merge of the runs
 *	  a snapshot sees and the transaction's own buffer), ANALYZE sampling,
 *	  and fetches by TID with their visibility checks.
 *
 * A row is visible to a snapshot when its run is (catalog MVCC) or it is
 * in the own buffer from an earlier command, and no newer version of its
 * key is visible: exactly what the merge yields.
 *
 * Parallel sequential scans split the key space at the block indexes of
 * the runs: every PK_CHUNK_BLOCKS-th block's first key of every run starts
 * a chunk, and the participants take chunks in turn, each merging every
 * run over its chunk's key range.  Workers cannot see the leader's write
 * buffer: when the leader has one for the table, it scans alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/nodeFuncs.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "am_scan.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "lookup.h"
#include "pg_compat.h"
#include "run_list.h"
#include "run_merge.h"
#include "run_read.h"
#include "table_desc.h"
#include "tid.h"
#include "write_buffer.h"

/* blocks per run per chunk bound of a parallel scan (8 kB of rows each) */
#define PK_CHUNK_BLOCKS 32

typedef struct PkParallelScanData
{
	ParallelTableScanDescData base;
	bool		leader_only;	/* the leader has buffered writes */
	pg_atomic_uint32 next_chunk;
} PkParallelScanData;

typedef struct PkScanDesc
{
	TableScanDescData base;
	MemoryContext cxt;			/* runs and merge state of one pass */
	MergeIter  *iter;
	BufferAccessStrategy strategy;

	/* parallel: the chunks (chunks_prepare) and whether one is being read */
	PkParallelScanData *pscan;
	bool		alone;			/* scans everything: leader_only leader */
	bool		idle;			/* has nothing to scan: leader_only worker */
	Datum	  **bounds;			/* nchunks first keys, in key order */
	uint32		nchunks;
	bool		in_chunk;

	/* ANALYZE: row i of the merge is reported in block i * nblocks / est */
	BlockNumber nblocks;
	double		est_rows;
	uint64		pos;
	BlockNumber target;
	bool		pending;
	MergeRow	row;

	/* bitmap scans: the TIDs of the current bitmap page left to fetch */
	OffsetNumber bm_offsets[PK_TIDS_PER_BLOCK];
	int			bm_n;
	int			bm_next;
	BlockNumber bm_block;
} PkScanDesc;

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;

static void scan_check_worker(Relation rel);

/*
 * The row the key index returned last, for the fetch that follows it.  The
 * tuple lives in the index scan's memory (owner): the scan clears the
 * handoff before it moves on, and a reset callback on its memory clears it
 * when that memory goes some other way (an error ending the scan, a
 * savepoint rollback dropping its portal).
 */
static struct
{
	const void *owner;
	const void *fetch;			/* the index scan's fetch state */
	Oid			relid;
	ItemPointerData tid;
	MinimalTuple tup;
}			handoff;

static CommandId
snapshot_cid(Snapshot snapshot)
{
	/* an MVCC snapshot sees earlier commands only; the others see all */
	if (snapshot && IsMVCCSnapshot(snapshot))
		return snapshot->curcid;
	return InvalidCommandId;
}

TableScanDesc
scan_begin(Relation rel, Snapshot snapshot, int nkeys, struct ScanKeyData *key,
		   ParallelTableScanDesc pscan, uint32 flags)
{
	PkScanDesc *scan = palloc0(sizeof(PkScanDesc));

	/* the cumulative statistics' seq_scan, as heap counts it */
	if (flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(rel);
	if (pscan)
	{
		scan->pscan = (PkParallelScanData *) pscan;
		scan->alone = scan->pscan->leader_only && !IsParallelWorker();
		scan->idle = scan->pscan->leader_only && IsParallelWorker();
		/* the leader scans alone, unless it does not take part */
		if (scan->idle && (!parallel_leader_participation ||
						   debug_parallel_query != DEBUG_PARALLEL_OFF))
			scan_check_worker(rel);
	}
	scan->base.rs_rd = rel;
	scan->base.rs_parallel = pscan;
	scan->base.rs_snapshot = snapshot;
	scan->base.rs_nkeys = nkeys;
	scan->base.rs_key = key;
	scan->base.rs_flags = flags;
	scan->cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge scan",
									  ALLOCSET_DEFAULT_SIZES);
	/* a SO_TEMP_SNAPSHOT is registered by the caller, released by scan_end */
	return &scan->base;
}

static void
scan_reset(PkScanDesc *scan)
{
	if (scan->iter)
		merge_end(scan->iter);
	scan->iter = NULL;
	scan->bounds = NULL;
	scan->nchunks = 0;
	scan->in_chunk = false;
	scan->pending = false;
	scan->pos = 0;
	scan->bm_n = scan->bm_next = 0;
	MemoryContextReset(scan->cxt);
}

void
scan_end(TableScanDesc sscan)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;

	scan_reset(scan);
	MemoryContextDelete(scan->cxt);
	if (scan->strategy)
		FreeAccessStrategy(scan->strategy);
	if (sscan->rs_flags & SO_TEMP_SNAPSHOT)
		UnregisterSnapshot(sscan->rs_snapshot);
	pfree(scan);
}

void
scan_rescan(TableScanDesc sscan, struct ScanKeyData *key, bool set_params,
			bool allow_strat, bool allow_sync, bool allow_pagemode)
{
	scan_reset((PkScanDesc *) sscan);
}

/* qsort_arg comparator of chunk bounds (pointers to full keys) */
static int
bound_cmp(const void *a, const void *b, void *arg)
{
	return pk_key_cmp((PkTable *) arg, *(Datum *const *) a, *(Datum *const *) b);
}

/*
 * Parallel scans: the chunk bounds, the first keys of every
 * PK_CHUNK_BLOCKS-th block of every run, sorted and distinct.  Chunk i is
 * [bounds[i], bounds[i + 1]), the last one open above; bounds[0] is the
 * smallest key of all, so the chunks cover everything.  A chunk holds about
 * PK_CHUNK_BLOCKS blocks of rows whether the runs overlap or not.
 */
static void
chunks_prepare(PkScanDesc *scan, List *runs)
{
	PkTable    *t = pk_table(scan->base.rs_rd);
	int			n = 0;
	int			distinct = 0;
	ListCell   *lc;

	foreach(lc, runs)
	{
		RunIndex   *idx = run_index_get(scan->base.rs_rd, t, lfirst(lc));

		n += (idx->nblocks + PK_CHUNK_BLOCKS - 1) / PK_CHUNK_BLOCKS;
	}
	scan->bounds = palloc(sizeof(Datum *) * Max(n, 1));
	n = 0;
	foreach(lc, runs)
	{
		RunIndex   *idx = run_index_get(scan->base.rs_rd, t, lfirst(lc));

		for (uint32 b = 0; b < idx->nblocks; b += PK_CHUNK_BLOCKS)
			scan->bounds[n++] = &idx->first_keys[(Size) b * t->nkeys];
	}
	qsort_arg(scan->bounds, n, sizeof(Datum *), bound_cmp, t);
	for (int i = 0; i < n; i++)
		if (distinct == 0 || pk_key_cmp(t, scan->bounds[distinct - 1], scan->bounds[i]) != 0)
			scan->bounds[distinct++] = scan->bounds[i];
	scan->nchunks = distinct;
}

/*
 * Claim the next chunk and seek to it; false when none is left.  Every
 * participant computes the same chunks: they share the snapshot, so they
 * see the same runs.
 */
static bool
chunk_next(PkScanDesc *scan)
{
	PkTable    *t = pk_table(scan->base.rs_rd);
	uint32		i = pg_atomic_fetch_add_u32(&scan->pscan->next_chunk, 1);

	if (i >= scan->nchunks)
		return false;
	merge_set_end(scan->iter, i + 1 < scan->nchunks ? scan->bounds[i + 1] : NULL);
	merge_seek(scan->iter, scan->bounds[i], t->nkeys);
	return true;
}

/*
 * A parallel worker reading a table its leader's transaction has buffered
 * writes to would miss them.  The planner keeps such plans away
 * (pk_set_rel_pathlist); a plan made before the writes may still come.
 */
static void
scan_check_worker(Relation rel)
{
	if (IsParallelWorker() && wbuf_leader_writes(RelationGetRelid(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a parallel worker cannot read pkmerge table \"%s\" while the transaction has writes to it that are not committed",
						RelationGetRelationName(rel)),
				 errdetail("The writes are in the leader's memory until commit."),
				 errhint("Commit first, or SET max_parallel_workers_per_gather = 0 for the query.")));
}

static void
scan_start(PkScanDesc *scan)
{
	Relation	rel = scan->base.rs_rd;
	MemoryContext old;
	List	   *runs;
	bool		parallel = scan->pscan && !scan->alone;

	if (!scan->pscan)
		scan_check_worker(rel);
	old = MemoryContextSwitchTo(scan->cxt);
	runs = runlist_visible(rel, scan->base.rs_snapshot);

	/* SERIALIZABLE: a read of the table, at table granularity */
	if (scan->base.rs_snapshot)
		PredicateLockRelation(rel, scan->base.rs_snapshot);
	/*
	 * Big sequential reads go through a ring, as heap's do.  It lives as
	 * long as the scan, not in cxt, which every rescan resets.
	 */
	if (scan->strategy == NULL && RelationGetNumberOfBlocks(rel) > NBuffers / 4)
	{
		MemoryContextSwitchTo(GetMemoryChunkContext(scan));
		scan->strategy = GetAccessStrategy(BAS_BULKREAD);
		MemoryContextSwitchTo(scan->cxt);
	}
	/* a parallel participant never has own writes to merge (leader_only) */
	scan->iter = merge_begin(rel, pk_table(rel), runs,
							 parallel ? NULL : wbuf_get(RelationGetRelid(rel), false),
							 snapshot_cid(scan->base.rs_snapshot),
							 scan->strategy, false, false);
	if (parallel)
		chunks_prepare(scan, runs);
	MemoryContextSwitchTo(old);
}

/*
 * Stores row tup of rel, at tid, in slot: a minimal tuple slot as
 * pk_slot_callbacks makes them, or a heap tuple slot (ANALYZE's, the
 * logical replication apply worker's), which gets a copy as a heap tuple
 * with an invalid xmin.  should_free: the slot owns tup.
 */
void
scan_store_row(Relation rel, MinimalTuple tup, bool should_free, ItemPointer tid,
			   TupleTableSlot *slot)
{
	if (TTS_IS_MINIMALTUPLE(slot))
		ExecStoreMinimalTuple(tup, slot, should_free);
	else
	{
		HeapTuple	htup = heap_tuple_from_minimal_tuple(tup);

		if (should_free)
			pfree(tup);
		htup->t_self = *tid;
		htup->t_tableOid = RelationGetRelid(rel);
		ExecStoreHeapTuple(htup, slot, true);
	}
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = *tid;
}

static void
store_row(Relation rel, MergeRow *row, TupleTableSlot *slot)
{
	scan_store_row(rel, row->tup, false, &row->tid, slot);
}

bool
scan_getnextslot(TableScanDesc sscan, ScanDirection direction, TupleTableSlot *slot)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;
	MergeRow	row;
	bool		found;
	MemoryContext old;

	if (ScanDirectionIsBackward(direction))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backward scans of pkmerge table \"%s\" are not supported",
						RelationGetRelationName(sscan->rs_rd)),
				 errhint("Declare the cursor without SCROLL, or fetch forward only.")));
	if (scan->idle)
	{
		ExecClearTuple(slot);
		return false;
	}
	if (scan->iter == NULL)
		scan_start(scan);
	old = MemoryContextSwitchTo(scan->cxt);
	if (scan->pscan && !scan->alone)
	{
		/* a parallel participant: rows of its chunks only */
		for (;;)
		{
			if (!scan->in_chunk && !(scan->in_chunk = chunk_next(scan)))
			{
				found = false;
				break;
			}
			if ((found = merge_next(scan->iter, &row)))
				break;
			scan->in_chunk = false;
		}
	}
	else
		found = merge_next(scan->iter, &row);
	MemoryContextSwitchTo(old);
	if (!found)
	{
		ExecClearTuple(slot);
		return false;
	}
	store_row(sscan->rs_rd, &row, slot);
	pgstat_count_heap_getnext(sscan->rs_rd);
	return true;
}

/*
 * What a sequential scan reads: the records of the visible data runs (keys
 * written several times count several times until compaction, which
 * bounds that by its size amplification) and of the buffer, and the pages
 * of those runs (not the file's: changelog and delta runs of retained
 * snapshots and free space are in it too).  estimate: for the planner,
 * the run list may be the one this backend saw up to a second ago
 * (runlist_recent_runs), which spares a catalog read per planned statement.
 */
double
scan_count_rows(Relation rel, BlockNumber *pages, bool estimate)
{
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	double		n = wb ? wb->n : 0;
	List	   *runs;
	ListCell   *lc;

	if (!estimate || !runlist_recent_runs(rel, &runs))
		runs = runlist_visible(rel, GetActiveSnapshot());
	*pages = 0;
	foreach(lc, runs)
	{
		n += ((RunInfo *) lfirst(lc))->record_count;
		*pages += ((RunInfo *) lfirst(lc))->nblocks;
	}
	return n;
}

bool
scan_analyze_block(TableScanDesc sscan, BlockNumber blockno)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;

	if (scan->iter == NULL)
	{
		BlockNumber pages;

		scan->nblocks = RelationGetNumberOfBlocks(sscan->rs_rd);
		scan->est_rows = Max(scan_count_rows(sscan->rs_rd, &pages, false), 1);
		scan_start(scan);
	}
	scan->target = blockno;
	return true;
}

bool
scan_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
						double *liverows, double *deadrows, TupleTableSlot *slot)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;

	for (;;)
	{
		BlockNumber blk;

		if (!scan->pending)
		{
			MemoryContext old = MemoryContextSwitchTo(scan->cxt);
			bool		found = merge_next(scan->iter, &scan->row);

			MemoryContextSwitchTo(old);
			if (!found)
				return false;
			scan->pending = true;
		}
		blk = (BlockNumber) Min((double) scan->pos * scan->nblocks / scan->est_rows,
								scan->nblocks - 1);
		if (blk > scan->target)
			return false;		/* belongs to a later block */
		scan->pending = false;
		scan->pos++;
		if (blk == scan->target)
		{
			/* a heap tuple slot (pk_slot_callbacks): the row with its TID */
			scan_store_row(sscan->rs_rd, scan->row.tup, false, &scan->row.tid, slot);
			*liverows += 1;
			return true;
		}
	}
}

/* ---- parallel scans: the shared state ---- */

Size
scan_parallel_estimate(Relation rel)
{
	return sizeof(PkParallelScanData);
}

Size
scan_parallel_initialize(Relation rel, ParallelTableScanDesc pscan)
{
	PkParallelScanData *p = (PkParallelScanData *) pscan;
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);

	ParallelScanSetRelation(&p->base, rel);
	p->base.phs_syncscan = false;
	p->leader_only = wb != NULL && wb->n > 0;
	pg_atomic_init_u32(&p->next_chunk, 0);
	return sizeof(PkParallelScanData);
}

void
scan_parallel_reinitialize(Relation rel, ParallelTableScanDesc pscan)
{
	pg_atomic_write_u32(&((PkParallelScanData *) pscan)->next_chunk, 0);
}

/* ---- fetches by TID ---- */

/*
 * The key index hands over the row it returns to its scan's fetch (fetch:
 * its IndexFetchTableData; tup stays valid until its scan moves on, which
 * clears the handoff first: scan_handoff(owner, .., NULL)).  Only that
 * fetch takes it: another scan fetching the same version (a unique check,
 * another index's scan while a cursor rests on the row) has a snapshot of
 * its own.
 */
void
scan_handoff(const void *owner, const void *fetch, Oid relid, ItemPointer tid,
			 MinimalTuple tup)
{
	if (tup == NULL)
	{
		scan_handoff_forget(owner);
		return;
	}
	handoff.owner = owner;
	handoff.fetch = fetch;
	handoff.relid = relid;
	if (tid)
		handoff.tid = *tid;
	handoff.tup = tup;
}

/* owner's memory is going: a row it handed over must not be read again */
void
scan_handoff_forget(const void *owner)
{
	if (handoff.owner == owner)
	{
		handoff.owner = NULL;
		handoff.tup = NULL;
	}
}

/* the handed-over row, if it is the one asked for */
static bool
fetch_handoff(Relation rel, ItemPointer tid, TupleTableSlot *slot)
{
	if (handoff.tup == NULL || handoff.relid != RelationGetRelid(rel) ||
		!ItemPointerEquals(&handoff.tid, tid))
		return false;
	scan_store_row(rel, heap_copy_minimal_tuple(handoff.tup, 0), true, tid, slot);
	return true;
}

/* the row last handed over (the key index's backward scans collect them) */
MinimalTuple
scan_handoff_tuple(void)
{
	return handoff.tup;
}

IndexFetchTableData *
fetch_begin(Relation rel)
{
	IndexFetchTableData *scan = palloc0(sizeof(IndexFetchTableData));

	scan_check_worker(rel);
	scan->rel = rel;
	return scan;
}

void
fetch_reset(IndexFetchTableData *scan)
{
}

void
fetch_end(IndexFetchTableData *scan)
{
	pfree(scan);
}

/*
 * A dirty snapshot reports back the in-progress transaction a caller must
 * wait for (fetch_dirty); none yet.
 */
static void
clear_dirty(Snapshot snapshot)
{
	if (snapshot && snapshot->snapshot_type == SNAPSHOT_DIRTY)
	{
		snapshot->xmin = InvalidTransactionId;
		snapshot->xmax = InvalidTransactionId;
		snapshot->speculativeToken = 0;
	}
}

/*
 * Is v, found at tid in runs or the buffer, the version of its key that
 * snapshot sees?  Its key's newest version there must be it.
 */
static bool
version_is_newest(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
				  ItemPointer tid, Snapshot snapshot, PkVersion *v)
{
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;
	PkVersion	newest;
	int64		pos = wbuf_find_tid(wb, tid);

	if (pos >= 0 && !wbuf_visible(wb, (uint32) pos, snapshot_cid(snapshot)))
		return false;
	pk_row_key(t, v->tup, key);
	hash = pk_key_hash(t, key);
	if (!lookup_buffered(wb, t, key, hash, snapshot_cid(snapshot), &newest) &&
		!lookup_committed(rel, t, runs, key, hash, &newest))
		return false;
	return ItemPointerEquals(&newest.tid, tid) && PK_KIND_IS_ADD(newest.kind);
}

/* the hash of v's key */
static uint32
version_hash(PkTable *t, PkVersion *v)
{
	Datum		key[INDEX_MAX_KEYS];

	pk_row_key(t, v->tup, key);
	return pk_key_hash(t, key);
}

/* what fetch_dirty found */
typedef enum DirtyFetch
{
	DIRTY_NONE,					/* no live version */
	DIRTY_FOUND,				/* a committed or own live version, in *v */
	DIRTY_IN_PROGRESS			/* another transaction's, in snapshot->xmin */
} DirtyFetch;

/*
 * A dirty snapshot (a unique or exclusion check, logical replication's
 * apply looking for a row): the version at tid if it is its key's newest
 * committed or own version.
 *
 * Another running transaction may have written the key of a committed
 * version (an UPDATE, a DELETE or an upsert of it: the backend says so in
 * shared memory, rowids_key_writer); then its xid goes to snapshot->xmax,
 * as heap names a row's updater.  A row id no committed run holds may be
 * another running transaction's: in its write buffer or spilled runs (the
 * backend says so, rowids_holder), or in the runs of a prepared one, which
 * holds the table's commit lock; then its xid goes to snapshot->xmin, and
 * the row is unknown.  The caller waits for the transaction and looks
 * again (btree's unique check, which holds the leaf page's lock
 * meanwhile); when this backend holds no LWLock (an index scan's check),
 * the wait is here, and the row returned is what the fetch finds after.
 * Runs are read again after the shared entries, which a transaction clears
 * only once its commit is visible.
 */
static DirtyFetch
fetch_dirty(Relation rel, ItemPointer tid, Snapshot snapshot, PkVersion *v)
{
	PkTable    *t = pk_table(rel);
	Oid			relid = RelationGetRelid(rel);
	WriteBuffer *wb = wbuf_get(relid, false);
	bool		ids = pk_table_row_ids(t);

	for (;;)
	{
		List	   *runs = runlist_visible(rel, GetLatestSnapshot());
		TransactionId xid = InvalidTransactionId;
		bool		found = lookup_tid(rel, t, runs, wb, tid, v);

		if (!found && ids &&
			!TransactionIdIsValid(xid = rowids_holder(relid, pk_tid_number(tid))))
		{
			runs = runlist_visible(rel, GetLatestSnapshot());
			found = lookup_tid(rel, t, runs, wb, tid, v);
			if (!found && !TransactionIdIsValid(xid = cat_commit_lock_prepared(relid)))
				return DIRTY_NONE;
		}
		if (found)
		{
			if (!version_is_newest(rel, t, runs, wb, tid, snapshot, v))
				return DIRTY_NONE;
			if (!ids || wbuf_find_tid(wb, tid) >= 0 ||
				!TransactionIdIsValid(xid = rowids_key_writer(relid, version_hash(t, v))))
				return DIRTY_FOUND;
			if (InterruptHoldoffCount > 0)
			{
				snapshot->xmax = xid;
				return DIRTY_FOUND;
			}
		}
		else if (!ids)
			return DIRTY_NONE;
		else if (InterruptHoldoffCount > 0)
		{
			snapshot->xmin = xid;
			return DIRTY_IN_PROGRESS;
		}
		XactLockTableWait(xid, rel, tid, XLTW_None);
	}
}

/*
 * The version at tid if it is the one snapshot sees of its key (any
 * version for SnapshotAny: it fetches old rows for triggers and
 * RETURNING).
 */
static bool
fetch_visible(Relation rel, ItemPointer tid, Snapshot snapshot, PkVersion *v)
{
	PkTable    *t = pk_table(rel);
	List	   *runs;
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;
	PkVersion	newest;

	clear_dirty(snapshot);
	if (snapshot && IsMVCCSnapshot(snapshot))
		PredicateLockRelation(rel, snapshot);
	if (snapshot == SnapshotAny)
	{
		/*
		 * Any version (UPDATE fetches the row it replaces, triggers the rows
		 * they fire for): the current runs hold it nearly always; reading
		 * every run still on disk is the exception.
		 */
		return lookup_tid(rel, t, runlist_visible(rel, GetLatestSnapshot()), wb, tid, v) ||
			lookup_tid(rel, t, runlist_visible(rel, SnapshotAny), wb, tid, v);
	}
	if (snapshot && snapshot->snapshot_type == SNAPSHOT_DIRTY)
		return fetch_dirty(rel, tid, snapshot, v) == DIRTY_FOUND;
	runs = runlist_visible(rel, snapshot);
	if (!lookup_tid(rel, t, runs, wb, tid, v))
	{
		/*
		 * A TID from a newer list of runs (ON CONFLICT's arbiter looks at
		 * the latest ones): a compaction committed since the snapshot may
		 * have moved the version to new TIDs.  It is still the version the
		 * snapshot sees if that is its key's newest there, by sequence
		 * number (compaction keeps them).
		 */
		if (wbuf_find_tid(wb, tid) >= 0 || (!pk_table_row_ids(t) && pk_tid_is_wbuf(tid)) ||
			!lookup_tid(rel, t, runlist_visible(rel, GetLatestSnapshot()), wb, tid, v))
			return false;
		pk_row_key(t, v->tup, key);
		hash = pk_key_hash(t, key);
		return !lookup_buffered(wb, t, key, hash, snapshot_cid(snapshot), &newest) &&
			lookup_committed(rel, t, runs, key, hash, &newest) &&
			newest.seq == v->seq && PK_KIND_IS_ADD(newest.kind);
	}
	return version_is_newest(rel, t, runs, wb, tid, snapshot, v);
}

bool
fetch_tuple(IndexFetchTableData *scan, ItemPointer tid, Snapshot snapshot,
			TupleTableSlot *slot, bool *call_again, bool *all_dead)
{
	Relation	rel = scan->rel;

	*call_again = false;
	if (all_dead)
		*all_dead = false;
	clear_dirty(snapshot);
	/* the key index merged the row already: no second read */
	if (handoff.fetch == scan && fetch_handoff(rel, tid, slot))
		return true;
	if (snapshot && snapshot->snapshot_type == SNAPSHOT_DIRTY)
	{
		PkVersion	v;

		scan_check_worker(rel);
		switch (fetch_dirty(rel, tid, snapshot, &v))
		{
			case DIRTY_NONE:
				return false;
			case DIRTY_FOUND:
				scan_store_row(rel, v.tup, true, tid, slot);
				return true;
			case DIRTY_IN_PROGRESS:
				/* a row not to be seen: the caller only waits */
				ExecStoreAllNullTuple(slot);
				slot->tts_tid = *tid;
				slot->tts_tableOid = RelationGetRelid(rel);
				return true;
		}
	}
	return fetch_row_version(rel, tid, snapshot, slot);
}

bool
fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
				  TupleTableSlot *slot)
{
	PkVersion	v;

	scan_check_worker(rel);
	/* any version: UPDATE fetching the row the key index just returned */
	if (snapshot == SnapshotAny && fetch_handoff(rel, tid, slot))
		return true;
	if (!fetch_visible(rel, tid, snapshot, &v))
		return false;
	scan_store_row(rel, v.tup, true, tid, slot);
	return true;
}

/* ---- bitmap scans ---- */

/*
 * The TIDs of a bitmap page to fetch: those it lists (noffsets of them),
 * or every TID of the block when the page is lossy (noffsets < 0).  A
 * pkmerge TID names a row version (tid.h), so a page is a range of row
 * ids; most of a lossy page's name nothing.  True if there are any.
 */
bool
scan_bitmap_page(TableScanDesc sscan, BlockNumber blockno,
				 const OffsetNumber *offsets, int noffsets)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;

	scan->bm_block = blockno;
	scan->bm_next = 0;
	if (noffsets < 0)
	{
		for (int i = 0; i < PK_TIDS_PER_BLOCK; i++)
			scan->bm_offsets[i] = (OffsetNumber) (i + 1);
		scan->bm_n = PK_TIDS_PER_BLOCK;
	}
	else
	{
		scan->bm_n = Min(noffsets, PK_TIDS_PER_BLOCK);
		memcpy(scan->bm_offsets, offsets, sizeof(OffsetNumber) * scan->bm_n);
	}
	return scan->bm_n > 0;
}

/*
 * The next row of the bitmap page that the scan's snapshot sees, as an
 * index scan fetches it; false when the page has no more.
 */
bool
scan_bitmap_next(TableScanDesc sscan, TupleTableSlot *slot)
{
	PkScanDesc *scan = (PkScanDesc *) sscan;

	while (scan->bm_next < scan->bm_n)
	{
		ItemPointerData tid;
		PkVersion	v;

		CHECK_FOR_INTERRUPTS();
		ItemPointerSet(&tid, scan->bm_block, scan->bm_offsets[scan->bm_next++]);
		if (!pk_tid_valid(&tid) ||
			!fetch_visible(sscan->rs_rd, &tid, sscan->rs_snapshot, &v))
			continue;
		scan_store_row(sscan->rs_rd, v.tup, true, &tid, slot);
		return true;
	}
	ExecClearTuple(slot);
	return false;
}

/*
 * PostgreSQL 15 asks this only from ON CONFLICT under REPEATABLE READ and
 * SERIALIZABLE (ExecCheckTupleVisible): a conflicting row the transaction's
 * snapshot does not see is a serialization failure, unless the transaction
 * wrote it itself.  The executor would read xmin from the slot to tell,
 * which a pkmerge slot does not carry, so the answer is given here.
 */
bool
fetch_satisfies_snapshot(Relation rel, TupleTableSlot *slot, Snapshot snapshot)
{
	PkVersion	v;

	if (pk_tid_is_wbuf(&slot->tts_tid) ||
		wbuf_find_tid(wbuf_get(RelationGetRelid(rel), false), &slot->tts_tid) >= 0)
		return true;			/* our own row */
	if (fetch_visible(rel, &slot->tts_tid, snapshot, &v))
		return true;
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
	return false;
}

/*
 * Planner: an index-only scan needs an index that hands back its columns;
 * PostgreSQL plans one with any index when the query needs no column
 * (count(*)), and the key index (pkmerge_key) hands back none, which the
 * executor would report as an error ("no data returned for index-only
 * scan").  Such paths of a pkmerge table become plain index scans (not
 * dropped: the paths they beat are gone already).
 */
static void
plain_returnless_index_only(List *paths)
{
	ListCell   *lc;

	foreach(lc, paths)
	{
		Path	   *path = lfirst(lc);
		bool		returns = false;

		if (!IsA(path, IndexPath) || path->pathtype != T_IndexOnlyScan)
			continue;
		for (int i = 0; i < ((IndexPath *) path)->indexinfo->ncolumns; i++)
			returns |= ((IndexPath *) path)->indexinfo->canreturn[i];
		if (!returns)
			path->pathtype = T_IndexScan;
	}
}

static void
fix_returnless_index_only(RelOptInfo *rel, RangeTblEntry *rte)
{
	if (rte->rtekind != RTE_RELATION || !pk_relid_is_pkmerge(rte->relid))
		return;
	plain_returnless_index_only(rel->pathlist);
	plain_returnless_index_only(rel->partial_pathlist);
}

/*
 * Planner: a table this transaction has written must stay out of parallel
 * plans altogether (workers cannot see its buffered writes).  The hook
 * runs after the table's paths are made, which took parallel safety from
 * consider_parallel: they are corrected too.
 */
static void
pk_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	ListCell   *lc;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	fix_returnless_index_only(rel, rte);
	/* any buffer of the table: workers check for one (wbuf_leader_writes) */
	if (rte->rtekind != RTE_RELATION || !rel->consider_parallel ||
		wbuf_get(rte->relid, false) == NULL)
		return;
	rel->consider_parallel = false;
	rel->partial_pathlist = NIL;
	foreach(lc, rel->pathlist)
		((Path *) lfirst(lc))->parallel_safe = false;
}

/* the bitmap scans of pkmerge tables in a plan read nothing ahead */
static bool
no_prefetch_walker(PlanState *ps, void *context)
{
	if (ps == NULL)
		return false;
	if (IsA(ps, BitmapHeapScanState) &&
		pk_is_pkmerge(((ScanState *) ps)->ss_currentRelation))
		compat_bitmap_scan_no_prefetch(ps);
	return planstate_tree_walker(ps, no_prefetch_walker, context);
}

static void
pk_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (queryDesc->planstate)
		(void) no_prefetch_walker(queryDesc->planstate, NULL);
}

void
scan_init(void)
{
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = pk_set_rel_pathlist;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = pk_executor_start;
}
