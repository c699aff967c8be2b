/*-------------------------------------------------------------------------
 *
 * space.c
 *	  Chooses where a new run's blocks go: the end of the file, or, after
 *	  VACUUM found gaps, the first gap between the extents of existing runs
 *	  that is large enough.  Space of runs that are gone (their catalog rows
 *	  removed by VACUUM, or written by transactions that aborted or crashed)
 *	  is thereby reused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/storage.h"
#include "nodes/pg_list.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"

#include "hints.h"
#include "run.h"
#include "tid.h"

static int
extent_cmp(const ListCell *a, const ListCell *b)
{
	int			sa = linitial_int((List *) lfirst(a));
	int			sb = linitial_int((List *) lfirst(b));

	return (sa > sb) - (sa < sb);
}

/*
 * Place a finished run: choose its blocks and insert its catalog row, which
 * reserves them for other allocators even before this transaction commits
 * (they read the catalog with SnapshotAny).  Blocks go at the end of the
 * file, unless VACUUM left the hint that the file has gaps: then the first
 * gap large enough.  Row numbers follow from the blocks (tid.h), so they
 * need no bookkeeping.  The space lock covers only the choice and the row,
 * so a long compaction does not hold up commits.
 */
void
space_reserve(Relation rel, RunInfo *run)
{
	Oid			relid = RelationGetRelid(rel);
	BlockNumber start;

	cat_space_lock(relid);
	start = RelationGetNumberOfBlocks(rel);
	if (hints_free_space(relid))
	{
		List	   *extents = cat_used_extents(relid, rel->rd_node.relNode);
		ListCell   *lc;
		BlockNumber next_free = 0;
		bool		gap = false;

		list_sort(extents, extent_cmp);
		foreach(lc, extents)
		{
			BlockNumber s = (BlockNumber) linitial_int((List *) lfirst(lc));
			BlockNumber len = (BlockNumber) lsecond_int((List *) lfirst(lc));

			if (s > next_free)
				gap = true;
			if (s >= next_free && s - next_free >= (BlockNumber) run->nblocks)
				break;
			next_free = Max(next_free, s + len);
		}
		start = next_free;
		/* no gap left inside the file: back to appending */
		if (!gap)
			hints_set_free_space(relid, false);
	}
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

	/*
	 * Extend the file over the new blocks now: writers of runs placed after
	 * ours must find their blocks where they were told, whatever order the
	 * pages are then written in.
	 */
	if (run->start_block + run->nblocks > RelationGetNumberOfBlocks(rel))
	{
		LockRelationForExtension(rel, ExclusiveLock);
		while (RelationGetNumberOfBlocks(rel) < run->start_block + run->nblocks)
			UnlockReleaseBuffer(ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW,
												   RBM_ZERO_AND_LOCK, NULL));
		UnlockRelationForExtension(rel, ExclusiveLock);
	}
	cat_space_unlock(relid);
}

/*
 * Give the blocks after the last run's extent back to the file system.
 * Unlike heap, no AccessExclusiveLock is needed (nor sent to standbys, where
 * it would cancel queries): readers only read blocks of runs in the catalog,
 * and the space lock keeps writers from placing runs meanwhile.
 */
void
space_truncate(Relation rel)
{
	List	   *extents;
	ListCell   *lc;
	BlockNumber end = 0;
	BlockNumber used = 0;

	cat_space_lock(RelationGetRelid(rel));
	extents = cat_used_extents(RelationGetRelid(rel), rel->rd_node.relNode);
	foreach(lc, extents)
	{
		List	   *e = lfirst(lc);

		end = Max(end, (BlockNumber) (linitial_int(e) + lsecond_int(e)));
		used += lsecond_int(e);
	}
	if (end < RelationGetNumberOfBlocks(rel))
		RelationTruncate(rel, end);
	/* gaps inside the file: writers look for them again */
	hints_set_free_space(RelationGetRelid(rel), used < end);
	cat_space_unlock(RelationGetRelid(rel));
}
