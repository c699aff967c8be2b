/*-------------------------------------------------------------------------
 *
 * read_point.c
 *	  Point reads on a pkmerge table: which runs a snapshot sees, the newest
 *	  committed or buffered version of one key (bloom filter and block index
 *	  keep it to at most one block per run), and the row behind a TID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/snapmgr.h"

#include "catalog.h"
#include "catalog_runs.h"
#include "catalog_visible.h"
#include "read_point.h"
#include "run.h"
#include "run_cache.h"
#include "run_read.h"
#include "tid.h"

/*
 * The data runs of rel's current storage that snapshot sees (through the
 * run list cache when it can serve the snapshot).  Catalog rows
 * are read with snapshot itself when it is an MVCC snapshot or SnapshotAny
 * (fetching a version by TID: every run still on disk); for the others
 * (SnapshotDirty, SnapshotSelf) with the latest one, since runs only ever
 * appear committed.
 */
List *
lookup_visible_runs(Relation rel, Snapshot snapshot)
{
	List	   *runs;
	ListCell   *lc;

	if (snapshot == NULL || (!IsMVCCSnapshot(snapshot) && snapshot != SnapshotAny))
		snapshot = GetLatestSnapshot();
	if (runcache_data_runs(rel, snapshot, false, &runs))
		return runs;
	/* the transaction's own changes, or no cacheable snapshot: the catalog */
	foreach(lc, cat_runs_visible(RelationGetRelid(rel), snapshot, true))
	{
		RunInfo    *r = lfirst(lc);

		if (r->kind == RUN_DATA && r->relfilenode == rel->rd_node.relNode)
			runs = lappend(runs, r);
	}
	return runs;
}

/* the committed runs among runs, without the transaction's pending ones */
List *
lookup_committed_runs(List *runs)
{
	List	   *committed = NIL;
	ListCell   *lc;

	foreach(lc, runs)
		if (!run_is_pending(lfirst(lc)))
			committed = lappend(committed, lfirst(lc));
	return committed;
}

/*
 * The runs of committed that before lacks, into *added; false if a run of
 * before is not in committed any more (a compaction replaced it).
 */
bool
lookup_runs_added(List *before, List *committed, List **added)
{
	List	   *b = list_copy(before);
	List	   *c = list_copy(committed);
	int			i = 0;

	cat_runs_sort(b);
	cat_runs_sort(c);
	*added = NIL;
	for (int j = 0; j < list_length(c); j++)
	{
		RunInfo    *run = list_nth(c, j);

		if (i < list_length(b) && ((RunInfo *) list_nth(b, i))->run_id < run->run_id)
			return false;		/* gone */
		if (i < list_length(b) && ((RunInfo *) list_nth(b, i))->run_id == run->run_id)
			i++;
		else
			*added = lappend(*added, run);
	}
	return i == list_length(b);
}

static void
version_from_run(const RunInfo *run, RunRowHeader *rh, uint64 ordinal, PkVersion *v)
{
	v->tup = heap_copy_minimal_tuple(RUN_ROW_TUPLE(rh));
	v->kind = RUN_ROW_KIND(rh);
	v->seq = run_row_seq(run, rh);
	v->cid = InvalidCommandId;
	pk_tid_from_row(&v->tid, run->row_base + ordinal);
}

/*
 * Probe run for key; if it holds a version newer than *v (any, when not
 * *found), that version goes to *v.
 */
static void
probe_run(Relation rel, PkTable *t, RunInfo *run, const Datum *key,
		  uint32 hash, PkVersion *v, bool *found)
{
	RunRowHeader *rh;
	uint64		ordinal;
	RunBlock   *pinned;

	if (*found && (uint64) run->max_seq < v->seq)
		return;					/* only older versions there */
	if (!run_lookup(rel, t, run, key, hash, &rh, &ordinal, &pinned))
		return;
	if (!*found || run_row_seq(run, rh) > v->seq)
	{
		if (*found)
			pfree(v->tup);
		version_from_run(run, rh, ordinal, v);
		*found = true;
	}
	run_block_release(pinned);
}

/*
 * The newest version of key among runs (tombstones included).  Runs are
 * not sorted by sequence number, and whether they overlap in them is not
 * assumed: every run that may hold a newer version than the one found is
 * probed.  The level-0 runs come first, then the levels upwards, which
 * hold older rows the higher they are: once a newer level has the key, the
 * older ones (their newest rows older than its version) are skipped, run
 * index, bloom filter and block.  In a table of small commits most keys
 * are in the levels, a third or so in a level above the bottom.
 */
bool
lookup_committed(Relation rel, PkTable *t, List *runs, const Datum *key,
				 uint32 hash, PkVersion *v)
{
	bool		found = false;

	/* a pass per level that has runs (up to num_levels: not one per level) */
	for (int level = 0; level >= 0;)
	{
		int			next = -1;
		ListCell   *lc;

		foreach(lc, runs)
		{
			RunInfo    *run = lfirst(lc);

			if (run->level == level)
				probe_run(rel, t, run, key, hash, v, &found);
			else if (run->level > level && (next < 0 || run->level < next))
				next = run->level;
		}
		level = next;
	}
	return found;
}

/*
 * The newest version of key in the write buffer visible to curcid.
 */
bool
lookup_buffered(WriteBuffer *wb, PkTable *t, const Datum *key, uint32 hash,
				CommandId curcid, PkVersion *v)
{
	int64		pos;
	WbEntry    *e;

	if (wb == NULL)
		return false;
	pos = wbuf_lookup(wb, t, key, hash, curcid);
	if (pos < 0)
		return false;
	e = wbuf_entry(wb, pos);
	v->tup = heap_copy_minimal_tuple(e->tup);
	v->kind = e->kind;
	v->seq = PG_UINT64_MAX;
	v->cid = e->cid;
	wbuf_tid(wb, (uint32) pos, &v->tid);
	return true;
}

/*
 * The row a TID names, whatever version of its key it is.
 */
bool
lookup_tid(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
		   ItemPointer tid, PkVersion *v)
{
	uint64		n;
	ListCell   *lc;

	if (!pk_tid_valid(tid))
		return false;
	n = pk_tid_number(tid);
	if (pk_tid_is_wbuf(tid))
	{
		int64		pos = wbuf_find_tid(wb, tid);
		WbEntry    *e;

		if (pos < 0)
			return false;
		e = wbuf_entry(wb, pos);
		v->tup = heap_copy_minimal_tuple(e->tup);
		v->kind = e->kind;
		v->seq = PG_UINT64_MAX;
		v->cid = e->cid;
		v->tid = *tid;
		return true;
	}
	foreach(lc, runs)
	{
		RunInfo    *run = lfirst(lc);
		RunBlock   *pinned;
		RunRowHeader *rh;

		if (n < (uint64) run->row_base || n >= (uint64) (run->row_base + run->record_count))
			continue;
		rh = run_row_at(rel, t, run, n - run->row_base, &pinned);
		if (rh == NULL)
			return false;
		version_from_run(run, rh, n - run->row_base, v);
		run_block_release(pinned);
		return true;
	}
	return false;
}
