/*-------------------------------------------------------------------------
 *
 * run_cache.c
 *	  A per-backend cache of each table's data run list, so that reads do
 *	  not scan pkchangelog.runs.  It is exact by construction:
 *
 *	  - Every transaction that changes which data runs others see (a commit,
 *		a compaction) writes a new version of the table's pkchangelog.tables
 *		row under the commit lock, naming the data runs (data_runs).  An
 *		MVCC snapshot that sees one version sees exactly the runs it names:
 *		the version (the xid that wrote it, with its last snapshot id) is
 *		the key of the list.
 *	  - A new version's list takes the runs the table's previous list had
 *		(a committed run's row no longer changes) and reads the others by
 *		key; a commit stores its own result.
 *	  - Snapshots taken while no transaction completed see the same
 *		versions (PostgreSQL reuses such snapshots' contents, procarray.c),
 *		so the version found for one is remembered for the next.
 *
 *	  A transaction that changed the table's runs itself (its pending runs
 *	  are visible to it alone) and parallel workers (whose leader may have)
 *	  read the catalog; a commit whose only changes are its spilled runs
 *	  still takes the committed ones from the cache (committed_only).  Hot standbys use the cache like primaries: replay
 *	  writes the same versions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "run_cache.h"

typedef struct CacheEntry
{
	Oid			relid;			/* hash key */
	Oid			relfilenode;
	TransactionId xmin;			/* the tables row version of the list */
	int64		snapshot_id;
	MemoryContext cxt;			/* the runs */
	List	   *runs;
	uint64		completions;	/* a snapshot that saw that version, if any */
	TimestampTz found_at;		/* when a snapshot last saw it */
	uint64		rewrites;		/* cat_runs_rewrites() then */
} CacheEntry;

/* how old a list may be to serve the planner's estimates */
#define ESTIMATE_MAX_AGE_MS 1000

static HTAB *cache = NULL;

/* a copy of run in the current memory context */
static RunInfo *
copy_run(const RunInfo *run)
{
	RunInfo    *r = palloc(sizeof(RunInfo));

	*r = *run;
	r->min_key = run->min_key ? pstrdup(run->min_key) : NULL;
	r->max_key = run->max_key ? pstrdup(run->max_key) : NULL;
	if (run->stream)
	{
		r->stream = palloc(run->stream_len);
		memcpy(r->stream, run->stream, run->stream_len);
	}
	return r;
}

static int
run_id_cmp(const ListCell *a, const ListCell *b)
{
	int64		ra = ((RunInfo *) lfirst(a))->run_id;
	int64		rb = ((RunInfo *) lfirst(b))->run_id;

	return (ra > rb) - (ra < rb);
}

/* keep runs as the list of version (xmin, snapshot_id), in run id order */
static void
store(Relation rel, TransactionId xmin, int64 snapshot_id, uint64 completions,
	  List *runs)
{
	CacheEntry *e;
	bool		found;
	ListCell   *lc;
	MemoryContext old;

	if (cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CacheEntry);
		cache = hash_create("pkmerge run lists", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(cache, &rel->rd_id, HASH_ENTER, &found);
	if (!found)
		e->cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge run list",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(e->cxt);
	old = MemoryContextSwitchTo(e->cxt);
	e->runs = NIL;
	foreach(lc, runs)
		e->runs = lappend(e->runs, copy_run(lfirst(lc)));
	list_sort(e->runs, run_id_cmp);
	MemoryContextSwitchTo(old);
	e->relfilenode = rel->rd_node.relNode;
	e->xmin = xmin;
	e->snapshot_id = snapshot_id;
	e->completions = completions;
	e->found_at = GetCurrentTimestamp();
	e->rewrites = cat_runs_rewrites();
}

/* the run among the entry's (sorted by run id) with that id, if any */
static RunInfo *
entry_run(CacheEntry *e, int64 run_id)
{
	int			lo = 0;
	int			hi = e ? list_length(e->runs) - 1 : -1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		RunInfo    *r = list_nth(e->runs, mid);

		if (r->run_id == run_id)
			return r;
		if (r->run_id < run_id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * The data runs of rel's current file that the version of its tables row
 * seen by snapshot names, in run id order, into *runs (a copy).  False,
 * for the caller to read the catalog, when the cache cannot answer: a
 * snapshot that is not MVCC, a parallel worker (its leader may have
 * pending runs), a table without a row yet, or a transaction that changed
 * the table's runs itself.  committed_only: the caller wants the committed
 * runs alone, so runs the transaction added (spilled ones, which no
 * version names) do not stand in the way, only other changes do.
 *
 * A new version's list takes the runs the table's previous list had (a
 * committed run's row no longer changes) and reads the others, mostly one
 * or two new runs, by key.
 */
bool
runcache_data_runs(Relation rel, Snapshot snapshot, bool committed_only,
				   List **runs)
{
	CacheEntry *e = NULL;
	TransactionId xmin;
	TableState	st;
	uint64		completions;
	ListCell   *lc;

	*runs = NIL;
	if (snapshot == NULL || !IsMVCCSnapshot(snapshot) || IsParallelWorker() ||
		cat_runs_changed(rel->rd_id, committed_only))
		return false;
	if (cache != NULL)
		e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	if (e != NULL && e->relfilenode != rel->rd_node.relNode)
		e = NULL;
	completions = snapshot->snapXactCompletionCount;

	/* the version: remembered for snapshots taken since it was found */
	if (e == NULL || completions == 0 || completions != e->completions)
	{
		if (!cat_table_version(rel->rd_id, snapshot, &xmin, &st))
			return false;		/* nothing committed yet */
		if (e == NULL || e->xmin != xmin || e->snapshot_id != st.last_snapshot_id)
		{
			for (int i = 0; i < st.ndata_runs; i++)
			{
				RunInfo    *known = entry_run(e, st.data_runs[i]);
				RunInfo    *r = known ? copy_run(known) :
					cat_run_get(rel->rd_id, st.data_runs[i], snapshot);

				/* a TRUNCATE this snapshot does not see has replaced the file */
				if (r->relfilenode == rel->rd_node.relNode)
					*runs = lappend(*runs, r);
			}
			list_sort(*runs, run_id_cmp);
			store(rel, xmin, st.last_snapshot_id, completions, *runs);
			return true;
		}
		e->completions = completions;
		e->found_at = GetCurrentTimestamp();
		e->rewrites = cat_runs_rewrites();
	}
	foreach(lc, e->runs)
		*runs = lappend(*runs, copy_run(lfirst(lc)));
	return true;
}

/*
 * rel's data runs as a snapshot saw them less than ESTIMATE_MAX_AGE_MS ago,
 * for the planner's estimates: no catalog read, where the exact list costs
 * one per statement whenever any transaction has completed since (a table
 * under concurrent commits).  A plan made from a second-old size is as
 * good as one from pg_class's reltuples, which heap's estimates scale.
 * The cache's own list, to read before the next call.  False, for the
 * caller to read the catalog, when no such list is cached, or this
 * transaction changed the table's runs, or one of this backend's since
 * rewrote some table's (a compaction whose result the backend would
 * otherwise plan without).
 */
bool
runcache_recent_runs(Relation rel, List **runs)
{
	CacheEntry *e = NULL;

	if (cache != NULL)
		e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	if (e == NULL || e->relfilenode != rel->rd_node.relNode ||
		IsParallelWorker() || cat_runs_changed(rel->rd_id, false) ||
		e->rewrites != cat_runs_rewrites() ||
		TimestampDifferenceExceeds(e->found_at, GetCurrentStatementStartTimestamp(),
								   ESTIMATE_MAX_AGE_MS))
		return false;
	*runs = e->runs;
	return true;
}

/*
 * A commit, under the commit lock, has written the tables row version that
 * names its snapshot_id: runs (the data runs committed before it, and its
 * own) are that version's list, unless the transaction also changed runs
 * committed before (compacted them, or truncated the table).
 */
void
runcache_store_commit(Relation rel, int64 snapshot_id, List *runs)
{
	if (!cat_runs_changed(rel->rd_id, true) && !IsParallelWorker())
		store(rel, GetTopTransactionId(), snapshot_id, 0, runs);
}

