/*-------------------------------------------------------------------------
 *
 * run_list.c
 *	  Which runs an MVCC snapshot sees in a pkmerge table: the one question
 *	  scans, DML, lookups, compaction, commits and decoding ask, answered
 *	  here and nowhere else.  A per-backend cache keeps each table's data
 *	  run list with the counters of the same version of its
 *	  pkchangelog.tables row (last snapshot id and sequence number, record
 *	  and commit counts), so that reads do not scan pkchangelog.runs and a
 *	  commit step under the commit lock need not read the catalog either;
 *	  the catalog (catalog_visible.c) answers what the cache cannot.
 *
 *	  The cache is exact by construction: every transaction that changes
 *	  which data runs others see writes a new version of the table's row
 *	  under the commit lock, naming them, and an MVCC snapshot that sees a
 *	  version sees exactly those runs, so the version (its xmin and last
 *	  snapshot id) is the list's key (version_runs).  Commits publish their
 *	  versions for the other backends (run_publish.c).  Hot standbys use
 *	  the cache as primaries do: replay writes the same versions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "catalog_runs.h"
#include "catalog_tables.h"
#include "catalog_visible.h"
#include "pg_compat.h"
#include "run.h"
#include "run_list.h"
#include "run_publish.h"
#include "run_read.h"

typedef struct CacheEntry
{
	Oid			relid;			/* hash key */
	RelFileLocator node;			/* the file the list is of */
	TransactionId xmin;			/* the tables row version of the list */
	int64		snapshot_id;
	MemoryContext cxt;			/* the runs */
	List	   *runs;
	uint64		completions;	/* a snapshot that saw that version, if any */
	TimestampTz found_at;		/* when a snapshot last saw it */
	uint64		rewrites;		/* cat_runs_rewrites() then */
	TableState	state;			/* the version's counters, without data_runs */
	uint64		lent_xact;		/* xact_no of the last lend of its runs */
	List	   *retired;		/* runs it replaced since (in cxt) */
} CacheEntry;

/* how old a list may be to serve the planner's estimates */
#define ESTIMATE_MAX_AGE_MS 1000

static HTAB *cache = NULL;

/*
 * Lending.  version_runs hands out copies of the cached runs that share
 * their keys and streams with the cache (copying every run's stream for
 * each statement was a good part of a 1-row commit's time).  A copy lives
 * no longer than its transaction, so a run replaced in the transaction
 * that last lent it, or dropped with its entry's list in one that lent
 * any of it, is retired instead of freed: kept until the first call of a
 * later transaction.  Past RETIRED_MAX_BYTES retired in one transaction,
 * full copies are handed out instead, so that a long transaction beside a
 * stream of commits and compactions keeps bounded memory.  xact_no counts
 * this backend's transactions (runlist_xact_end).
 */
#define RETIRED_MAX_BYTES (8 * 1024 * 1024)

static uint64 xact_no = 1;
static uint64 retired_xact = 0; /* the transaction that retired, if any */
static Size retired_bytes = 0;
static MemoryContext retired_cxt = NULL;	/* dropped entries' contexts */

/*
 * The tables whose run lists this transaction's commit and compaction
 * steps stored, with the last version they wrote (the catalog's number of
 * that write, and the first snapshot id the transaction made for the
 * table), to publish once the commit is visible (runlist_commit_visible).
 */
#define MAX_PUBLISH 8
static struct
{
	Oid			relid;
	TransactionId xmin;
	int64		snapshot_id;
	int64		first_snapshot_id;
	uint64		writeno;
	uint64		rewrite_mark;	/* cat_runs_rewrite_mark() then */
	ItemPointerData row;
	SubTransactionId subid;		/* the subtransaction that stored it */
}			to_publish[MAX_PUBLISH];
static int	npublish = 0;
static bool publish_overflow = false;	/* more tables than MAX_PUBLISH */

/* relid's place in to_publish; npublish if it has none */
static int
publish_index(Oid relid)
{
	int			i;

	for (i = 0; i < npublish && to_publish[i].relid != relid; i++)
		;
	return i;
}

/*
 * A copy of run in the current memory context, in one allocation: prefix
 * bytes, the RunInfo, its stream (MAXALIGNed, as palloc'd), its keys.
 */
static RunInfo *
copy_run_after(const RunInfo *run, Size prefix)
{
	Size		min_len = run->min_key ? strlen(run->min_key) + 1 : 0;
	Size		max_len = run->max_key ? strlen(run->max_key) + 1 : 0;
	Size		stream_len = run->stream ? run->stream_len : 0;
	char	   *p = (char *) palloc(prefix + MAXALIGN(sizeof(RunInfo)) +
								stream_len + min_len + max_len) + prefix;
	RunInfo    *r = (RunInfo *) p;

	*r = *run;
	p += MAXALIGN(sizeof(RunInfo));
	if (run->stream)
		r->stream = memcpy(p, run->stream, stream_len);
	p += stream_len;
	if (run->min_key)
		r->min_key = memcpy(p, run->min_key, min_len);
	p += min_len;
	if (run->max_key)
		r->max_key = memcpy(p, run->max_key, max_len);
	return r;
}

#define copy_run(run) copy_run_after(run, 0)

/*
 * A cached run is laid out after the number of the transaction that last
 * lent it (see Lending below): its chunk starts there.
 */
#define LENT_PREFIX MAXALIGN(sizeof(uint64))
#define RUN_CHUNK(run) ((char *) (run) - LENT_PREFIX)
#define RUN_LENT(run) (*(uint64 *) RUN_CHUNK(run))

static RunInfo *
cache_run(const RunInfo *run)
{
	RunInfo    *r = copy_run_after(run, LENT_PREFIX);

	RUN_LENT(r) = 0;
	return r;
}

static bool
same_string(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * Are a and b the same run, field for field and byte for byte?  (Every
 * field of RunInfo: the assertion below fails when one is added, so that
 * it is compared here too.)  But the key filter and the integer key range:
 * they follow from the run's keys, and a copy read from the catalog has no
 * filter, nor a range until a lookup reads it.
 */
#if SIZEOF_VOID_P == 8
StaticAssertDecl(sizeof(RunInfo) == 160, "same_run compares every field of RunInfo");
#endif

static bool
same_run(const RunInfo *a, const RunInfo *b)
{
	return a->run_id == b->run_id && a->relfilenode == b->relfilenode &&
		a->level == b->level && a->kind == b->kind &&
		a->from_commit == b->from_commit && a->start_block == b->start_block &&
		a->nblocks == b->nblocks && a->record_count == b->record_count &&
		a->size_bytes == b->size_bytes && a->row_base == b->row_base &&
		a->min_seq == b->min_seq && a->max_seq == b->max_seq &&
		a->index_offset == b->index_offset &&
		a->bloom_offset == b->bloom_offset &&
		a->created_snapshot == b->created_snapshot &&
		a->in_snapshot_row == b->in_snapshot_row &&
		same_string(a->min_key, b->min_key) &&
		same_string(a->max_key, b->max_key) &&
		(a->stream == NULL) == (b->stream == NULL) &&
		(a->stream == NULL ||
		 (a->stream_len == b->stream_len &&
		  (a->stream == b->stream ||
		   memcmp(a->stream, b->stream, a->stream_len) == 0)));
}

/*
 * What the transactions before this one retired goes: no copy of it is
 * left.  Called before anything is lent or retired in a transaction.
 */
static void
free_retired(void)
{
	HASH_SEQ_STATUS status;
	CacheEntry *e;

	if (retired_xact == 0 || retired_xact == xact_no)
		return;
	hash_seq_init(&status, cache);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		ListCell   *lc;

		foreach(lc, e->retired)
			pfree(RUN_CHUNK(lfirst(lc)));
		list_free(e->retired);
		e->retired = NIL;
	}
	if (retired_cxt != NULL)
		MemoryContextReset(retired_cxt);
	retired_xact = 0;
	retired_bytes = 0;
}

/*
 * run, which e no longer holds, goes: now, or once no copy is left.  If
 * replaced (a later version lacks it, not an earlier one stored after a
 * later: a statement's snapshot after the latest), its index and block
 * leave the read caches too (run_read_forget).  The index would otherwise
 * stay until a generation of the index cache ends: with small commits, a
 * run replaced per commit and per backend, tens of thousands of entries,
 * and every probe of the cache's hash table a cache miss.  The block would
 * stay until the block cache's LRU order evicts it, in the place of a live
 * run's.  A snapshot that still sees the run reads it again.
 */
static void
retire_run(CacheEntry *e, RunInfo *run, bool replaced)
{
	if (replaced)
		run_read_forget(run->run_id, run->relfilenode);
	if (RUN_LENT(run) != xact_no)
	{
		pfree(RUN_CHUNK(run));
		return;
	}
	retired_bytes += GetMemoryChunkSpace(RUN_CHUNK(run));
	retired_xact = xact_no;
	e->retired = lappend(e->retired, run);
}

/*
 * Every run of e goes (its context is reset or deleted, as delete says):
 * now, or once no copy is left (the context then moves under retired_cxt,
 * and e gets a new one unless deleted).
 */
static void
retire_all(CacheEntry *e, bool delete)
{
	ListCell   *lc;

	foreach(lc, e->runs)
		run_read_forget(((RunInfo *) lfirst(lc))->run_id,
						 ((RunInfo *) lfirst(lc))->relfilenode);
	if (e->lent_xact != xact_no)
	{
		if (delete)
			MemoryContextDelete(e->cxt);
		else
			MemoryContextReset(e->cxt);
		e->retired = NIL;
		return;
	}
	if (retired_cxt == NULL)
		retired_cxt = AllocSetContextCreate(TopMemoryContext,
											"pkmerge retired run lists",
											ALLOCSET_SMALL_SIZES);
	retired_bytes += MemoryContextMemAllocated(e->cxt, true);
	retired_xact = xact_no;
	MemoryContextSetParent(e->cxt, retired_cxt);
	e->retired = NIL;
	if (!delete)
		e->cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge run list",
									   ALLOCSET_SMALL_SIZES);
}

/* e leaves the cache, with its runs */
static void
drop_entry(CacheEntry *e)
{
	retire_all(e, true);
	hash_search(cache, &e->relid, HASH_REMOVE, NULL);
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
 * Keep runs, sorted by run id, as the list of version (xmin, st's last
 * snapshot id), with st's counters; the entry.  A run the entry already
 * holds, unchanged, is kept as it is (a new version mostly adds a run or
 * two to the last one's: copying every run again for each was a good part
 * of a 1-row commit's time); the others are copied in, and the runs the
 * version no longer has freed.
 */
static CacheEntry *
store(Relation rel, TransactionId xmin, const TableState *st,
	  uint64 completions, List *runs)
{
	CacheEntry *e;
	bool		found;
	ListCell   *lc;
	List	   *kept = NIL;
	MemoryContext old;
	int			i = 0;

	if (cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CacheEntry);
		cache = hash_create("pkmerge run lists", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	free_retired();
	e = hash_search(cache, &rel->rd_id, HASH_ENTER, &found);
	if (!found)
	{
		e->cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge run list",
									   ALLOCSET_SMALL_SIZES);
		e->runs = NIL;
		e->lent_xact = 0;
		e->retired = NIL;
	}
	else if (!RelFileLocatorEquals(e->node, RelationLocator(rel)))
	{
		retire_all(e, false);
		e->runs = NIL;
	}
	old = MemoryContextSwitchTo(e->cxt);
	kept = list_copy(runs);
	cat_runs_sort(kept);

	/*
	 * Both lists in run id order: each run of kept takes the entry's if
	 * that is the same; the entry's runs not taken go once all are copied
	 * (a run passed in may be a lent copy that shares its stream with one
	 * of them).
	 */
	foreach(lc, kept)
	{
		RunInfo    *r = lfirst(lc);
		RunInfo    *known = NULL;

		for (; i < list_length(e->runs); i++)
		{
			RunInfo    *o = list_nth(e->runs, i);

			if (o->run_id > r->run_id)
				break;
			if (o->run_id == r->run_id && (o == r || same_run(o, r)))
			{
				known = o;
				list_nth_cell(e->runs, i)->ptr_value = NULL;
			}
		}
		lfirst(lc) = known ? known : cache_run(r);
	}
	foreach(lc, e->runs)
		if (lfirst(lc) != NULL)
			retire_run(e, lfirst(lc), st->last_snapshot_id > e->snapshot_id);
	MemoryContextSwitchTo(old);
	list_free(e->runs);
	e->runs = kept;
	e->node = RelationLocator(rel);
	e->xmin = xmin;
	e->snapshot_id = st->last_snapshot_id;
	e->state = *st;
	e->state.data_runs = NULL;
	e->state.ndata_runs = 0;
	e->completions = completions;
	e->found_at = GetCurrentTimestamp();
	e->rewrites = cat_runs_rewrites();
	return e;
}

/* rel's run run_id as a commit published it, or NULL */
static RunInfo *
published_run(Relation rel, int64 run_id)
{
	char		buf[MAX_PUBLISHED_RUN_BYTES];
	RunInfo		r;

	if (!run_publish_find_run(&RelationLocator(rel), rel->rd_id, run_id, buf, &r))
		return NULL;
	return copy_run(&r);
}

/*
 * e's runs into *runs (copies lent for the transaction, or full copies
 * past RETIRED_MAX_BYTES retired), its counters into *st if not NULL.
 */
static void
lend(CacheEntry *e, List **runs, TableState *st)
{
	ListCell   *lc;

	*runs = NIL;
	if (retired_bytes < RETIRED_MAX_BYTES)
	{
		RunInfo    *copies = palloc(sizeof(RunInfo) * Max(list_length(e->runs), 1));
		int			n = 0;

		e->lent_xact = xact_no;
		*runs = list_copy(e->runs);
		foreach(lc, *runs)
		{
			RUN_LENT(lfirst(lc)) = xact_no;
			copies[n] = *(RunInfo *) lfirst(lc);
			lfirst(lc) = &copies[n++];
		}
	}
	else
		foreach(lc, e->runs)
			*runs = lappend(*runs, copy_run(lfirst(lc)));
	if (st != NULL)
		*st = e->state;
}

/*
 * The entry of rel that a commit or compaction step of this transaction
 * stored (runlist_store_commit), if it is still what the catalog says:
 * the transaction has written neither the table's row nor committed runs'
 * rows since (a compaction at the stop trigger, then the commit step that
 * reads the runs it left).  The step holds the table's commit lock until
 * the transaction's commit, so no other commit can have come since.
 * NULL otherwise (not stored in this transaction, or the subtransaction
 * that stored it rolled back: runlist_subxact_abort forgot it).
 */
static CacheEntry *
own_version(Relation rel)
{
	int			i = publish_index(rel->rd_id);
	CacheEntry *e;

	if (cache == NULL || i == npublish ||
		to_publish[i].writeno != cat_table_last_write(rel->rd_id) ||
		to_publish[i].rewrite_mark != cat_runs_rewrite_mark())
		return NULL;
	e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	if (e == NULL || !RelFileLocatorEquals(e->node, RelationLocator(rel)) ||
		e->xmin != to_publish[i].xmin ||
		e->snapshot_id != to_publish[i].snapshot_id)
		return NULL;
	return e;
}

/* own_version's runs lent into *runs, its counters into *st; false if none */
static bool
lend_own(Relation rel, List **runs, TableState *st)
{
	CacheEntry *e = own_version(rel);

	if (e == NULL)
		return false;
	free_retired();
	lend(e, runs, st);
	return true;
}

/*
 * The data runs of rel's current file that the version of its tables row
 * seen by snapshot names, in run id order, into *runs (copies lent for the
 * transaction: their keys and streams are the cache's, see Lending), and,
 * if st is not NULL, the version's counters into *st (data_runs not set).
 * False, for the caller to read the catalog, when the cache cannot answer:
 * a snapshot that is not MVCC, a parallel worker (its leader may have
 * pending runs), a table without a row yet, or a transaction that changed
 * the table's runs itself.  committed_only: the caller wants the committed
 * runs alone (as of the latest snapshot), so runs the transaction added
 * (spilled ones, which no version names) do not stand in the way, and
 * after its own compaction the list that compaction stored answers
 * (own_version).
 *
 * How a snapshot finds its version without the catalog:
 *
 *	- Snapshots taken while no transaction completed see the same versions
 *	  (PostgreSQL reuses such snapshots' contents, procarray.c), so the
 *	  version found for one is remembered for the next (its completion
 *	  count).  Copies of snapshots, which statements scan with, lose that
 *	  count.
 *	- A commit, once visible and still holding the commit lock, takes a
 *	  snapshot: it sees the commit's version and no later one (a writer of
 *	  one needs the lock, and completes before it gives it up).  The commit
 *	  publishes the version with its run ids and that snapshot's contents
 *	  (runlist_commit_visible); a snapshot that sees what that one saw
 *	  takes the version from there (run_publish_sees), with the rows of the
 *	  runs the commit wrote.
 *	- A list stored by a subtransaction that then aborts (a compaction
 *	  rolled back to a savepoint) is neither kept nor published: the
 *	  version it names went with the subtransaction.
 *
 * A new version's list takes the runs the table's previous list had (a
 * committed run's row no longer changes) and reads the others, mostly one
 * or two new runs, by key.  A transaction that changed the table's runs
 * itself (its pending runs are visible to it alone) and parallel workers
 * (whose leader may have) read the catalog; a commit whose only changes are
 * its spilled runs still takes the committed ones from here
 * (committed_only).
 */
static bool
version_runs(Relation rel, Snapshot snapshot, bool committed_only,
			 List **runs, TableState *st)
{
	CacheEntry *e = NULL;
	TransactionId xmin;
	TableState	vst;
	uint64		completions;

	*runs = NIL;
	if (snapshot == NULL || !IsMVCCSnapshot(snapshot) || IsParallelWorker())
		return false;
	if (cat_runs_changed(rel->rd_id, committed_only))
	{
		/*
		 * The transaction rewrote the runs: only the committed ones as its
		 * own last step left them (the callers that want committed runs
		 * alone pass the latest snapshot).
		 */
		return committed_only && lend_own(rel, runs, st);
	}
	if (cache != NULL)
	{
		free_retired();
		e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	}
	if (e != NULL && !RelFileLocatorEquals(e->node, RelationLocator(rel)))
		e = NULL;
	completions = snapshot->snapXactCompletionCount;

	/*
	 * The version: remembered for snapshots taken since it was found, or
	 * published by the commit that wrote it for snapshots taken since it
	 * became visible.
	 */
	if (e == NULL || completions == 0 || completions != e->completions)
	{
		PublishedRuns pub;
		TransactionId writer;
		bool		writer_known;
		bool		published = run_publish_state(&RelationLocator(rel), rel->rd_id, &pub,
													  &writer, &writer_known);

		if (published && run_publish_sees(snapshot, &pub, writer, writer_known))
		{
			xmin = pub.xmin;
			vst.last_snapshot_id = pub.snapshot_id;
			vst.ndata_runs = pub.nruns;
			vst.data_runs = pub.run_ids;
			vst.last_seq = pub.last_seq;
			vst.total_record_count = pub.total_record_count;
			vst.last_full_compaction = pub.last_full_compaction;
			vst.commits = pub.commits;
			vst.log_run = pub.log_run;
			vst.log_block = pub.log_block;
			vst.row = pub.row;
			vst.row_snapshot_id = pub.row_snapshot_id;
		}
		else if (!cat_table_version(rel->rd_id, snapshot, published ? &pub.row : NULL,
									&xmin, &vst))
			return false;		/* nothing committed yet */
		if (e == NULL || e->xmin != xmin || e->snapshot_id != vst.last_snapshot_id)
		{
			List	   *vruns = NIL;

			for (int i = 0; i < vst.ndata_runs; i++)
			{
				RunInfo    *r = entry_run(e, vst.data_runs[i]);

				if (r == NULL)
					r = published_run(rel, vst.data_runs[i]);
				if (r == NULL)
				{
					r = cat_run_get(rel->rd_id, vst.data_runs[i], snapshot);

					/*
					 * Published for the other backends as a commit publishes
					 * the runs it wrote: the row of a data run that a snapshot
					 * sees committed does not change while a version names the
					 * run as data (retiring it makes a delta of it for later
					 * versions).  A new backend's first query of the table then
					 * reads no run from the catalog.
					 */
					if (r->relfilenode == RelationFileNumber(rel))
						run_publish_run(&RelationLocator(rel), rel->rd_id, r);
				}

				/* a TRUNCATE this snapshot does not see has replaced the file */
				if (r->relfilenode == RelationFileNumber(rel))
					vruns = lappend(vruns, r);
			}
			e = store(rel, xmin, &vst, completions, vruns);
			list_free(vruns);
		}
		else
		{
			e->completions = completions;
			e->found_at = GetCurrentTimestamp();
			e->rewrites = cat_runs_rewrites();
		}
	}
	lend(e, runs, st);
	return true;
}

bool
runlist_cached(Relation rel, Snapshot snapshot, bool committed_only,
				   List **runs)
{
	return version_runs(rel, snapshot, committed_only, runs, NULL);
}

/*
 * For a commit step, under the commit lock: the committed data runs, as
 * runlist_cached gives them, and the table's counters with them (what
 * cat_table_state would read: the same version, exact by the same
 * argument, data_runs not set).  False: read them from the catalog.  Once
 * the transaction has written the table's row itself, the version it sees
 * is its own: only as the list its own last step stored (a compaction at
 * the stop trigger), never one published before (expiration's settling
 * writes the row keeping the counters but not the row's place).
 */
bool
runlist_committed_state(Relation rel, Snapshot snapshot, List **runs,
						 TableState *st)
{
	*runs = NIL;
	if (cat_table_written_here(rel->rd_id))
		return lend_own(rel, runs, st);
	return version_runs(rel, snapshot, true, runs, st);
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
runlist_recent_runs(Relation rel, List **runs)
{
	CacheEntry *e = NULL;

	if (cache != NULL)
		e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	if (e == NULL || !RelFileLocatorEquals(e->node, RelationLocator(rel)) ||
		IsParallelWorker() || cat_runs_changed(rel->rd_id, false) ||
		e->rewrites != cat_runs_rewrites() ||
		TimestampDifferenceExceeds(e->found_at, GetCurrentStatementStartTimestamp(),
								   ESTIMATE_MAX_AGE_MS))
		return false;
	*runs = e->runs;
	return true;
}

/*
 * A commit or compaction step, under the commit lock, has written the
 * tables row version (at st->row) that names its snapshot (or folded its
 * commit after it): runs is that version's list, st its counters.  Kept
 * for this backend, and published for the others once the transaction is
 * visible, unless a later write of the row replaced it.
 */
void
runlist_store_commit(Relation rel, const TableState *st, List *runs)
{
	int64		snapshot_id = st->last_snapshot_id;
	int			i;

	if (IsParallelWorker())
		return;
	store(rel, GetTopTransactionId(), st, 0, runs);
	i = publish_index(rel->rd_id);
	if (i == MAX_PUBLISH)
	{
		publish_overflow = true;
		return;
	}
	if (i == npublish)
	{
		to_publish[i].relid = rel->rd_id;
		to_publish[i].first_snapshot_id = snapshot_id;
		npublish++;
	}
	to_publish[i].xmin = GetTopTransactionId();
	to_publish[i].snapshot_id = snapshot_id;
	to_publish[i].writeno = cat_table_last_write(rel->rd_id);
	to_publish[i].rewrite_mark = cat_runs_rewrite_mark();
	to_publish[i].row = st->row;
	to_publish[i].subid = GetCurrentSubTransactionId();
}

/*
 * The transaction committed (XACT_EVENT_COMMIT: it is visible) and still
 * holds its commit locks: the run lists its commit steps stored are the
 * ones a snapshot taken now sees.  Remember it with them (its completion
 * count), and publish them with its contents for the other backends.
 */
void
runlist_commit_visible(void)
{
	Snapshot	snap;
	TransactionId xmin = MyProc->xmin;

	if (npublish == 0)
		return;
	snap = GetLatestSnapshot();
	for (int i = 0; i < npublish; i++)
	{
		CacheEntry *e = cache ? hash_search(cache, &to_publish[i].relid,
											HASH_FIND, NULL) : NULL;
		PublishedRuns pub;
		ListCell   *lc;

		if (e == NULL || e->xmin != to_publish[i].xmin ||
			e->snapshot_id != to_publish[i].snapshot_id)
			continue;

		/* the rows of the runs the transaction wrote, committed now */
		foreach(lc, e->runs)
		{
			RunInfo    *r = lfirst(lc);

			if (r->created_snapshot >= to_publish[i].first_snapshot_id)
				run_publish_run(&e->node, e->relid, r);
		}

		/*
		 * A later write of the table's row that stored no list (the
		 * settling of an expiration that expires commits folded after the
		 * row) replaced the version, keeping its snapshot id: the list is
		 * not known to be that of the committed version.  It is taken as
		 * no version's, but its runs stay, for the next version's list to
		 * take by id as it takes any cached run (a committed run's row
		 * does not change): dropping them made that list read every run
		 * again, some from the commit log.  (VACUUM FULL writes the row
		 * again after its compaction stored a list, but for a new file:
		 * lists are kept and published per file, so readers of the new one
		 * would not take it anyway.)
		 */
		if (cat_table_last_write(to_publish[i].relid) != to_publish[i].writeno)
		{
			e->xmin = InvalidTransactionId;
			e->snapshot_id = -1;
			e->completions = 0;
			continue;
		}
		e->completions = snap->snapXactCompletionCount;
		if (list_length(e->runs) > MAX_PUBLISHED_RUNS || snap->suboverflowed ||
			snap->subxcnt > 0 || snap->xcnt > MAX_PUBLISHED_XIP)
			continue;
		pub.relid = to_publish[i].relid;
		pub.node = e->node;
		pub.xmin = e->xmin;
		pub.snapshot_id = e->snapshot_id;
		pub.row = to_publish[i].row;
		pub.snap_xmin = snap->xmin;
		pub.snap_xmax = snap->xmax;
		pub.snap_xcnt = snap->xcnt;
		memcpy(pub.snap_xip, snap->xip, sizeof(TransactionId) * snap->xcnt);
		pub.nruns = 0;
		foreach(lc, e->runs)
			pub.run_ids[pub.nruns++] = ((RunInfo *) lfirst(lc))->run_id;
		pub.last_seq = e->state.last_seq;
		pub.total_record_count = e->state.total_record_count;
		pub.last_full_compaction = e->state.last_full_compaction;
		pub.commits = e->state.commits;
		pub.log_run = e->state.log_run;
		pub.log_block = e->state.log_block;
		pub.row_snapshot_id = e->state.row_snapshot_id;
		run_publish_list(&pub);
	}
	npublish = 0;

	/*
	 * The transaction has left the procarray, which cleared this backend's
	 * xmin; the snapshot advertised one again, and nothing would clear it
	 * before the backend's next snapshot: an idle session would hold back
	 * every VACUUM's horizon (and an assert-enabled build fails at the end
	 * of the commit).  Only the snapshot's contents, copied above, were
	 * used.  (No lock: the backend has no xid, as ProcArrayEndTransaction
	 * clears it then.)
	 */
	MyProc->xmin = xmin;
}

/*
 * A subtransaction aborted (ROLLBACK TO SAVEPOINT around pk_compact, say):
 * the versions of the tables row it wrote are gone with it, so the lists
 * it (or a subtransaction of it: their ids are higher) stored last are
 * neither kept nor published.  Those tables' lists are then taken from
 * the catalog, and the transaction's commit publishes none for them
 * unless a later step stores one again.
 */
void
runlist_subxact_abort(SubTransactionId mySubid)
{
	int			kept = 0;

	for (int i = 0; i < npublish; i++)
	{
		if (to_publish[i].subid >= mySubid)
		{
			CacheEntry *e = cache ? hash_search(cache, &to_publish[i].relid,
												HASH_FIND, NULL) : NULL;

			if (e != NULL)
				drop_entry(e);
			continue;
		}
		to_publish[kept++] = to_publish[i];
	}
	npublish = kept;
}

/*
 * The transaction ended: nothing of it to publish.  If it did not commit
 * (it aborted, or was prepared, and may yet be rolled back), the lists its
 * steps stored go: they may hold a commit's data run kept in its
 * snapshot's row, whose run id (minus the snapshot's id) the next commit
 * takes again with other bytes.
 */
void
runlist_xact_end(bool committed)
{
	if (!committed && cache != NULL)
	{
		HASH_SEQ_STATUS status;
		CacheEntry *e;

		hash_seq_init(&status, cache);
		while ((e = hash_seq_search(&status)) != NULL)
		{
			if (publish_overflow || publish_index(e->relid) < npublish)
				drop_entry(e);
		}
	}
	npublish = 0;
	publish_overflow = false;
	/* what it retired goes at the next call (free_retired) */
	xact_no++;
}

/*
 * The data runs of rel's current storage that snapshot sees: from the
 * cache when it can serve the snapshot, else from the catalog.  Catalog rows
 * are read with snapshot itself when it is an MVCC snapshot or SnapshotAny
 * (fetching a version by TID: every run still on disk); for the others
 * (SnapshotDirty, SnapshotSelf) with the latest one, since runs only ever
 * appear committed.
 */
List *
runlist_visible(Relation rel, Snapshot snapshot)
{
	List	   *runs;
	ListCell   *lc;

	if (snapshot == NULL || (!IsMVCCSnapshot(snapshot) && snapshot != SnapshotAny))
		snapshot = GetLatestSnapshot();
	if (runlist_cached(rel, snapshot, false, &runs))
		return runs;
	/* the transaction's own changes, or no cacheable snapshot: the catalog */
	foreach(lc, cat_runs_visible(RelationGetRelid(rel), snapshot, true))
	{
		RunInfo    *r = lfirst(lc);

		if (r->kind == RUN_DATA && r->relfilenode == RelationFileNumber(rel))
			runs = lappend(runs, r);
	}
	return runs;
}

/* the committed runs among runs, without the transaction's pending ones */
List *
runlist_committed(List *runs)
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
runlist_added(List *before, List *committed, List **added)
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

/*
 * Every run of relid that snapshot sees (data_only: its data runs), of any
 * storage, read from the catalog: for what the cache does not hold, the
 * runs of other kinds (changelog, delta, log) and of other storage, which
 * pk_runs shows and space accounting and VACUUM FULL need.
 */
List *
runlist_catalog(Oid relid, Snapshot snapshot, bool data_only)
{
	return cat_runs_visible(relid, snapshot, data_only);
}
