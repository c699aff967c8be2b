/*-------------------------------------------------------------------------
 *
 * run_space.c
 *	  Chooses where a new run's blocks go: the end of the file, or, after
 *	  VACUUM found gaps, the first gap between the extents of existing runs
 *	  that is large enough.  Space of runs that are gone (their catalog rows
 *	  removed by VACUUM, or written by transactions that aborted or crashed)
 *	  is thereby reused.  Gives the file's unused end back (VACUUM), and
 *	  lays the live runs out again from the first block of a new file
 *	  (VACUUM FULL).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xloginsert.h"
#include "common/hashfn.h"
#include "catalog.h"
#include "catalog_runs.h"
#include "catalog_tables.h"
#include "catalog/storage.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "run_list.h"
#include "run_space.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "commit_log.h"
#include "pg_compat.h"
#include "shmem_slots.h"
#include "table_desc.h"
#include "tid.h"

/*
 * Shared memory, per relation file (RelFileLocator, hashed into NSLOTS): where
 * the used part of the file ends (extend() lays blocks ahead of use;
 * without it, runs go after the file's end until the next VACUUM), and the
 * gaps VACUUM found between its runs, which new runs fill first (without
 * them, new runs are appended).  Read and set under the table's space
 * lock; a slot's owner and values change together under its spinlock: a
 * value read under another file's name would place runs over live ones.
 * The gaps are in block order; a taken gap shrinks from its start.
 */
#define NSLOTS 4096
#define MAX_GAPS 64				/* kept per file: the largest ones */

typedef struct SpaceGap
{
	BlockNumber start;
	BlockNumber len;
} SpaceGap;

typedef struct FileEndSlot
{
	LWLock		lock;
	RelFileLocator node;
	BlockNumber end;
	int			ngaps;
	SpaceGap	gaps[MAX_GAPS];
} FileEndSlot;

static FileEndSlot *file_end = NULL;

Size
space_shmem_size(void)
{
	return mul_size(NSLOTS, sizeof(FileEndSlot));
}

void
space_shmem_init(int tranche)
{
	file_end = pk_shmem_lwlock_slots("pkchangelog file ends", NSLOTS,
									 sizeof(FileEndSlot), tranche);
}

static FileEndSlot *
file_end_slot(const RelFileLocator *node)
{
	return &file_end[hash_bytes((const unsigned char *) node, sizeof(RelFileLocator)) % NSLOTS];
}

/*
 * Where the used part of a relation file ends (the file may be longer),
 * or InvalidBlockNumber when not known: files sharing a slot just take it
 * from each other, and a miss makes the caller fall back to the file size.
 */
static BlockNumber
file_end_get(const RelFileLocator *node)
{
	FileEndSlot *slot;
	BlockNumber end = InvalidBlockNumber;

	if (file_end == NULL || LocatorFileNumber(*node) == InvalidOid)
		return InvalidBlockNumber;
	slot = file_end_slot(node);
	LWLockAcquire(&slot->lock, LW_SHARED);
	if (RelFileLocatorEquals(slot->node, *node))
		end = slot->end;
	LWLockRelease(&slot->lock);
	return end;
}

/*
 * Set where the used part of the file ends.  gaps: the free extents below
 * it (VACUUM, in block order), which replace the slot's; NULL keeps the
 * slot's gaps if it holds this file's.
 */
static void
file_end_set(const RelFileLocator *node, BlockNumber end, const SpaceGap *gaps, int ngaps)
{
	FileEndSlot *slot;

	if (file_end == NULL)
		return;
	slot = file_end_slot(node);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (gaps != NULL || !RelFileLocatorEquals(slot->node, *node))
	{
		slot->ngaps = Min(ngaps, MAX_GAPS);
		if (slot->ngaps > 0)
			memcpy(slot->gaps, gaps, sizeof(SpaceGap) * slot->ngaps);
	}
	slot->node = *node;
	slot->end = end;
	LWLockRelease(&slot->lock);
}

/*
 * Take nblocks from the first gap of the file that has room (first fit,
 * so the file's end empties first and VACUUM can give it back).  False
 * when no gap known has room.
 */
static bool
file_end_take_gap(const RelFileLocator *node, BlockNumber nblocks, BlockNumber *start)
{
	FileEndSlot *slot;
	bool		found = false;

	if (file_end == NULL || LocatorFileNumber(*node) == InvalidOid)
		return false;
	slot = file_end_slot(node);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (RelFileLocatorEquals(slot->node, *node))
	{
		for (int i = 0; i < slot->ngaps; i++)
		{
			SpaceGap   *g = &slot->gaps[i];

			if (g->len < nblocks)
				continue;
			*start = g->start;
			g->start += nblocks;
			g->len -= nblocks;
			if (g->len == 0)
			{
				slot->ngaps--;
				memmove(g, g + 1, sizeof(SpaceGap) * (slot->ngaps - i));
			}
			found = true;
			break;
		}
	}
	LWLockRelease(&slot->lock);
	return found;
}

static int
extent_cmp(const ListCell *a, const ListCell *b)
{
	int			sa = linitial_int((List *) lfirst(a));
	int			sb = linitial_int((List *) lfirst(b));

	return (sa > sb) - (sa < sb);
}

/* the larger gap first, the earlier of equal ones */
static int
gap_len_cmp(const void *a, const void *b)
{
	const SpaceGap *ga = a;
	const SpaceGap *gb = b;

	if (ga->len != gb->len)
		return (ga->len < gb->len) - (ga->len > gb->len);
	return (ga->start > gb->start) - (ga->start < gb->start);
}

static int
gap_start_cmp(const void *a, const void *b)
{
	const SpaceGap *ga = a;
	const SpaceGap *gb = b;

	return (ga->start > gb->start) - (ga->start < gb->start);
}

/*
 * Extend the file over the blocks up to end now: writers of runs placed
 * after ours must find their blocks where they were told, whatever order
 * the pages are then written in.  Small commits would otherwise extend the
 * file a page at a time, each with its own write of a zero page: the file
 * grows ahead by an eighth of its size (at most 128 blocks) instead,
 * through one write of its new last block (the blocks before it stay a
 * hole until their runs write them, as hash indexes do).
 */
static void
extend(Relation rel, BlockNumber end, BlockNumber nblocks)
{
	PGAlignedBlock zero;
	BlockNumber target = end + Min(nblocks / 8, 128);

	memset(zero.data, 0, BLCKSZ);
	LockRelationForExtension(rel, ExclusiveLock);
	if (smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM) < target)
		smgrextend(RelationGetSmgr(rel), MAIN_FORKNUM, target - 1, zero.data, false);
	UnlockRelationForExtension(rel, ExclusiveLock);
}

/*
 * Place a finished run: choose its blocks and insert its catalog row, which
 * reserves them for other allocators even before this transaction commits
 * (they read the catalog with SnapshotAny).  Blocks go into the first gap
 * large enough that VACUUM found between runs (kept in shared memory, so
 * placing a run costs the same however many runs the catalog holds), else
 * at the end of the file.  Row numbers follow from the blocks (tid.h), so
 * they need no bookkeeping.  The space lock covers only the choice and the
 * row, so a long compaction does not hold up commits.
 *
 * A data run whose rows have no ids (without_ids) names them by these row
 * numbers, which a table with row ids hands out as ids: refused if the
 * table got them since its writer began (CREATE INDEX CONCURRENTLY of its
 * first index holds the space lock until it commits them: am_index.c).
 */
void
space_reserve(Relation rel, RunInfo *run, bool without_ids)
{
	Oid			relid = RelationGetRelid(rel);
	BlockNumber nblocks;
	BlockNumber used_end;
	BlockNumber start;
	BlockNumber end;

	cat_space_lock(relid);
	if (without_ids && pk_table_rowids_now(pk_table(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to the first index of pkmerge table \"%s\", built concurrently",
						RelationGetRelationName(rel)),
				 errdetail("The transaction wrote rows to the table without row ids before the index was started."),
				 errhint("The transaction might succeed if retried.")));
	nblocks = RelationGetNumberOfBlocks(rel);
	used_end = file_end_get(&RelationLocator(rel));
	if (used_end == InvalidBlockNumber || used_end > nblocks)
	{
		/* not known (or not this file's): append, and forget any gaps */
		SpaceGap	none[1];

		used_end = nblocks;
		file_end_set(&RelationLocator(rel), used_end, none, 0);
	}
	if (!file_end_take_gap(&RelationLocator(rel), (BlockNumber) run->nblocks, &start) ||
		start + run->nblocks > used_end)
		start = used_end;
	if ((uint64) start + run->nblocks >= PK_MAX_RUN_BLOCK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pkmerge table \"%s\" is too large", RelationGetRelationName(rel)),
				 errdetail("Runs can be placed in the first %u blocks of the file.",
						   (unsigned) PK_MAX_RUN_BLOCK),
				 errhint("Compact and VACUUM the table to reuse the space of old runs.")));
	run->start_block = start;
	run->row_base = (int64) start * PK_ROWS_PER_PAGE;
	cat_run_insert(relid, run);

	end = run->start_block + run->nblocks;
	if (end > nblocks)
		extend(rel, end, nblocks);
	file_end_set(&RelationLocator(rel), Max(end, used_end), NULL, 0);
	cat_space_unlock(relid);
}

/*
 * Give the blocks after the last run's extent back to the file system.
 * Unlike heap, no AccessExclusiveLock is needed (nor sent to standbys, where
 * it would cancel queries): readers only read blocks of runs in the catalog,
 * and the space lock keeps writers from placing runs meanwhile.
 */
void
space_truncate(Relation rel, BlockNumber *before, BlockNumber *after,
			   BlockNumber *used)
{
	List	   *extents;
	ListCell   *lc;
	BlockNumber end = 0;
	SpaceGap   *gaps;
	int			ngaps = 0;

	*used = 0;
	cat_space_lock(RelationGetRelid(rel));
	extents = cat_used_extents(RelationGetRelid(rel), RelationFileNumber(rel));
	gaps = palloc(sizeof(SpaceGap) * (list_length(extents) + 1));
	/* in block order: the gaps between them (extents may overlap) */
	list_sort(extents, extent_cmp);
	foreach(lc, extents)
	{
		List	   *e = lfirst(lc);
		BlockNumber s = (BlockNumber) linitial_int(e);

		if (s > end)
		{
			gaps[ngaps].start = end;
			gaps[ngaps].len = s - end;
			ngaps++;
		}
		end = Max(end, s + (BlockNumber) lsecond_int(e));
		*used += lsecond_int(e);
	}
	*before = RelationGetNumberOfBlocks(rel);
	if (end < *before)
		RelationTruncate(rel, end);
	*after = Min(end, *before);

	/*
	 * New runs fill the gaps first: the largest ones, in block order.  The
	 * first ones in block order are often single blocks a commit log page
	 * left among long-lived runs, while expiration frees whole stretches
	 * of the file's history further on: kept alone, they were used up in
	 * a moment and the file grew at its end until the next call.
	 */
	if (ngaps > MAX_GAPS)
	{
		qsort(gaps, ngaps, sizeof(SpaceGap), gap_len_cmp);
		ngaps = MAX_GAPS;
		qsort(gaps, ngaps, sizeof(SpaceGap), gap_start_cmp);
	}
	file_end_set(&RelationLocator(rel), end, gaps, ngaps);
	cat_space_unlock(RelationGetRelid(rel));
}

static int
run_start_cmp(const ListCell *a, const ListCell *b)
{
	BlockNumber sa = ((RunInfo *) lfirst(a))->start_block;
	BlockNumber sb = ((RunInfo *) lfirst(b))->start_block;

	return (sa > sb) - (sa < sb);
}

/*
 * VACUUM FULL: copy every run of rel that the transaction sees (its data
 * runs, and the changelog and delta runs of the retained snapshots) into
 * dst, the new storage that PostgreSQL swaps in for rel's when the command
 * commits, one after the other from block 0, and point their catalog rows
 * there.  Pages are copied as they are: a run's bytes hold offsets from its
 * first block and its run id, never its place, and its row numbers follow
 * from the place its catalog row names.  Each page is WAL-logged as a full
 * image, as run_write.c writes them.  Nobody else reads or writes rel
 * meanwhile (AccessExclusiveLock).  Returns the runs and pages copied.
 */
void
space_rewrite(Relation rel, Relation dst, int *nruns, BlockNumber *npages)
{
	Oid			relid = RelationGetRelid(rel);
	List	   *runs = NIL;
	ListCell   *lc;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	bool		needs_wal = RelationNeedsWAL(dst);
	BlockNumber next = 0;
	PGAlignedBlock copy;
	TableState	state;
	MemoryContext runcxt;
	MemoryContext old;
	bool		row_ids = rowids_enabled(relid);

	foreach(lc, runlist_catalog(relid, GetLatestSnapshot(), false))
	{
		RunInfo    *r = lfirst(lc);

		if (r->relfilenode == RelationFileNumber(rel))
			runs = lappend(runs, r);
	}
	/* in the order they had: the file's oldest runs stay first */
	list_sort(runs, run_start_cmp);

	runcxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge run move",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(runcxt);
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);

		for (int32 i = 0; i < r->nblocks; i++)
		{
			Buffer		src;
			Buffer		buf;

			CHECK_FOR_INTERRUPTS();
			src = ReadBufferExtended(rel, MAIN_FORKNUM, r->start_block + i,
									 RBM_NORMAL, strategy);
			LockBuffer(src, BUFFER_LOCK_SHARE);
			memcpy(copy.data, BufferGetPage(src), BLCKSZ);
			UnlockReleaseBuffer(src);

			/* dst is new and ours alone: no extension lock is needed */
			buf = ReadBufferExtended(dst, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
			if (BufferGetBlockNumber(buf) != next + i)
				elog(ERROR, "new storage of relation %u extended to block %u, not %u",
					 relid, BufferGetBlockNumber(buf), next + i);
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			/* a commit log page says which file it is a page of */
			if (r->kind == RUN_LOG)
				log_format_page_moved((Page) copy.data, RelationFileNumber(dst));
			START_CRIT_SECTION();
			memcpy(BufferGetPage(buf), copy.data, BLCKSZ);
			MarkBufferDirty(buf);
			if (needs_wal)
				log_newpage_buffer(buf, true);
			END_CRIT_SECTION();
			UnlockReleaseBuffer(buf);
		}
		/*
		 * A run in its catalog row keeps the row numbers its run id gave;
		 * so does every run of a table with row ids, whose runs written
		 * before its first index have their row numbers as ids
		 * (am_index.c), which other runs' ids must not meet
		 */
		cat_run_move(relid, r->run_id, RelationFileNumber(dst), next,
					 r->stream || row_ids ? r->row_base : (int64) next * PK_ROWS_PER_PAGE);
		next += r->nblocks;
		MemoryContextReset(runcxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(runcxt);
	FreeAccessStrategy(strategy);

	/*
	 * A new version of the table's catalog row, though its counters and
	 * run list stay: run lists cached under a version (run_list.c) hold
	 * the runs' places, which are in the old file.
	 */
	(void) cat_commit_lock(relid);
	state = cat_table_state(relid, NULL);
	/* with the block its commit log page now has */
	if (state.log_run != 0)
	{
		RunInfo    *page = cat_run_find(relid, state.log_run, GetLatestSnapshot());

		if (page == NULL)
			elog(ERROR, "log run %lld of relation %u not found",
				 (long long) state.log_run, relid);
		state.log_block = page->start_block;
	}
	cat_table_state_update(relid, &state);

	/* the new file has no gaps, and ends after its last run */
	file_end_set(&RelationLocator(dst), next, NULL, 0);
	*nruns = list_length(runs);
	*npages = next;
}
