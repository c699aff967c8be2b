/*-------------------------------------------------------------------------
 *
 * run_cursor.c
 *	  Cursors over a sorted run: open without reading a block, then walk
 *	  the run's rows in key order from its first, or seek to the first row
 *	  at or after a key (prefix).  The merge iterator (run_merge.c) keeps
 *	  one per run.  A cursor reads private blocks (run_read.c decodes them,
 *	  bypassing the block cache): a scan reads each block once, and caching
 *	  it would only evict the blocks point lookups keep coming back to.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "run_cursor.h"

/*
 * Load block c->blockno, or the first non-empty one after it, for a
 * cursor; done when none is left.  The writer makes no empty block, but a
 * block of no rows is skipped rather than positioned in.  Cursors read
 * private blocks:
 * a scan reads each block once, so caching it would only evict the blocks
 * point lookups keep coming back to.
 */
static void
cursor_load(RunCursor *c)
{
	/* a private block's memory is reused for the next one */
	RunBlock   *spare = c->block && c->block->pins < 0 ? c->block : NULL;

	if (spare == NULL)
		run_block_release(c->block);
	c->block = NULL;
	c->rowno = 0;
	while (c->blockno < c->index->nblocks)
	{
		c->block = run_block_get(c->rel, c->table, c->run, c->index, c->blockno,
								 true, c->strategy, spare);
		spare = NULL;
		if (c->block->nrows > 0)
			return;
		if (c->block->pins < 0)
			spare = c->block;
		else
			run_block_release(c->block);
		c->block = NULL;
		c->blockno++;
	}
	run_block_release(spare);
	c->done = true;
}

/*
 * Open a cursor on a run without reading a data block: the merge iterator
 * opens a cursor per run and then either starts each at its first row or
 * seeks each to a key, and reading block 0 first would waste a read per
 * run for every seek.
 */
static void
cursor_init(RunCursor *c, Relation rel, PkTable *t, const RunInfo *run,
			BufferAccessStrategy strategy, RunIndex *index)
{
	memset(c, 0, sizeof(RunCursor));
	c->rel = rel;
	c->table = t;
	c->run = run;
	c->strategy = strategy;
	c->index = index;
	c->blockno = 0;
	c->unloaded = true;
}

void
run_cursor_open(RunCursor *c, Relation rel, PkTable *t, const RunInfo *run,
				BufferAccessStrategy strategy)
{
	cursor_init(c, rel, t, run, strategy, run_index_get(rel, t, run));
}

/*
 * The same, for one pass over the run (the change stream reads each run
 * once): a compact run's index is not cached (run_index_once).
 */
void
run_cursor_open_once(RunCursor *c, Relation rel, PkTable *t, const RunInfo *run)
{
	if (!RUN_IS_COMPACT(run))
	{
		run_cursor_open(c, rel, t, run, NULL);
		return;
	}
	cursor_init(c, rel, t, run, NULL, run_index_once(rel, t, run));
}

/* position at the run's first row (cursors open without reading a block) */
void
run_cursor_start(RunCursor *c)
{
	c->unloaded = false;
	c->blockno = 0;
	cursor_load(c);
}

/* advance to the next row in key order, across blocks; done at the end */
void
run_cursor_next(RunCursor *c)
{
	if (c->done)
		return;
	if (++c->rowno < c->block->nrows)
		return;
	c->blockno++;
	cursor_load(c);
}

/*
 * Position at the first row whose first nprefix key columns are >= key.
 */
void
run_cursor_seek(RunCursor *c, const Datum *key, int nprefix)
{
	uint32		blockno;

	if (c->index->nblocks == 0)
	{
		c->done = true;
		return;
	}
	blockno = run_index_find_block(c->table, c->index, key, nprefix, true);
	c->done = false;
	c->unloaded = false;
	if (c->block == NULL || c->blockno != blockno)
	{
		c->blockno = blockno;
		cursor_load(c);
		if (c->done)
			return;
	}
	c->rowno = run_block_lower_bound(c->table, c->block, key, nprefix);
	if (c->rowno >= c->block->nrows)
	{
		c->blockno++;
		cursor_load(c);
	}
}

/* release the cursor's block; the cursor reads as done afterwards */
void
run_cursor_close(RunCursor *c)
{
	run_block_release(c->block);
	c->block = NULL;
	c->done = true;
}
