/*-------------------------------------------------------------------------
 *
 * space.c
 *	  Chooses where a new run's blocks go: the first gap between the
 *	  extents of existing runs that is large enough, else the end of the
 *	  file.  Space of runs that are gone (their catalog rows removed by
 *	  VACUUM, or written by transactions that aborted or crashed) is thereby
 *	  reused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/storage.h"
#include "nodes/pg_list.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"

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
 * Place a finished run: choose its blocks (the first gap large enough,
 * else the end of the file) and its row numbers (past every catalogued
 * run's), and insert its catalog row, which reserves both for other
 * allocators even before this transaction commits.  The space lock covers
 * only the choice and the insertion, so long compactions do not hold up
 * commits.
 */
void
space_reserve(Relation rel, RunInfo *run)
{
	Oid			relid = RelationGetRelid(rel);
	List	   *extents;
	ListCell   *lc;
	BlockNumber next_free = 0;
	int64		next_row;

	cat_space_lock(relid);
	extents = cat_used_extents(relid, rel->rd_node.relNode, &next_row);
	list_sort(extents, extent_cmp);
	foreach(lc, extents)
	{
		BlockNumber start = (BlockNumber) linitial_int((List *) lfirst(lc));
		BlockNumber len = (BlockNumber) lsecond_int((List *) lfirst(lc));

		if (start >= next_free && start - next_free >= (BlockNumber) run->nblocks)
			break;
		next_free = Max(next_free, start + len);
	}
	if (next_row + run->record_count > (int64) PK_MAX_ROW)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pkmerge table \"%s\" has run out of row numbers",
						RelationGetRelationName(rel)),
				 errhint("VACUUM the table after compacting it to recycle row numbers.")));
	run->start_block = next_free;
	run->row_base = next_row;
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
	int64		next_row;

	cat_space_lock(RelationGetRelid(rel));
	extents = cat_used_extents(RelationGetRelid(rel), rel->rd_node.relNode, &next_row);
	foreach(lc, extents)
	{
		List	   *e = lfirst(lc);

		end = Max(end, (BlockNumber) (linitial_int(e) + lsecond_int(e)));
	}
	if (end < RelationGetNumberOfBlocks(rel))
		RelationTruncate(rel, end);
	cat_space_unlock(RelationGetRelid(rel));
}
