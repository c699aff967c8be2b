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

static int
extent_cmp(const ListCell *a, const ListCell *b)
{
	int			sa = linitial_int((List *) lfirst(a));
	int			sb = linitial_int((List *) lfirst(b));

	return (sa > sb) - (sa < sb);
}

/*
 * Reserve nblocks contiguous blocks of rel's main fork.  The space lock,
 * held to transaction end, keeps other allocators out until the caller's
 * run row, which marks the blocks used, is in the catalog.
 */
BlockNumber
space_alloc(Relation rel, uint32 nblocks)
{
	List	   *extents;
	ListCell   *lc;
	BlockNumber next_free = 0;

	cat_space_lock(RelationGetRelid(rel));
	extents = cat_used_extents(RelationGetRelid(rel), rel->rd_node.relNode);
	list_sort(extents, extent_cmp);
	foreach(lc, extents)
	{
		BlockNumber start = (BlockNumber) linitial_int((List *) lfirst(lc));
		BlockNumber len = (BlockNumber) lsecond_int((List *) lfirst(lc));

		if (start >= next_free && start - next_free >= nblocks)
			return next_free;
		next_free = Max(next_free, start + len);
	}
	return next_free;
}

/*
 * Give the blocks after the last run's extent back to the file system.
 * Readers only read blocks of runs they see, but heap's rule is kept:
 * truncate only under an AccessExclusiveLock obtained without waiting.
 */
void
space_truncate(Relation rel)
{
	List	   *extents;
	ListCell   *lc;
	BlockNumber end = 0;

	if (!ConditionalLockRelation(rel, AccessExclusiveLock))
		return;
	cat_space_lock(RelationGetRelid(rel));
	extents = cat_used_extents(RelationGetRelid(rel), rel->rd_node.relNode);
	foreach(lc, extents)
	{
		List	   *e = lfirst(lc);

		end = Max(end, (BlockNumber) (linitial_int(e) + lsecond_int(e)));
	}
	if (end < RelationGetNumberOfBlocks(rel))
		RelationTruncate(rel, end);
	UnlockRelation(rel, AccessExclusiveLock);
}
