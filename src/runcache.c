/*-------------------------------------------------------------------------
 *
 * runcache.c
 *	  A per-backend cache of each table's data run list, so that reads do
 *	  not scan pkchangelog.runs every time.  It is safe only where exact:
 *
 *	  - Every transaction that changes a table's runs rows announces it
 *		before the first change (generation++, inflight++) and again when
 *		it has ended, after its commit became visible (generation++,
 *		inflight--, its xid joins the ring of recent enders).
 *	  - A list read from the catalog with snapshot S is kept only if no
 *		change was in flight, none started meanwhile (same generation
 *		before and after), and S sees every change that ended: each
 *		recent ender is complete for S, and S's xmin is past the horizon of
 *		the older ones.  Such an S sees exactly the rows every change left.
 *	  - It serves a later snapshot S' under the same three conditions:
 *		then S' sees exactly what S saw.
 *
 *	  Non-MVCC snapshots, hot standbys (WAL replay changes the catalog
 *	  without announcing it; snapshots taken there stay uncached after a
 *	  promotion) and transactions that change runs themselves (inflight)
 *	  always read the catalog.  A transaction that changed runs
 *	  cannot be prepared: its end could not be announced.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "hints.h"
#include "runcache.h"

typedef struct CacheEntry
{
	Oid			relid;			/* hash key */
	Oid			relfilenode;
	uint64		generation;
	MemoryContext cxt;			/* the runs */
	List	   *runs;
} CacheEntry;

static HTAB *cache = NULL;
static List *changing = NIL;	/* relids this transaction announced */

/* a copy of run in the current memory context */
static RunInfo *
copy_run(const RunInfo *run)
{
	RunInfo    *r = palloc(sizeof(RunInfo));

	*r = *run;
	r->min_key = run->min_key ? pstrdup(run->min_key) : NULL;
	r->max_key = run->max_key ? pstrdup(run->max_key) : NULL;
	return r;
}

/* does snapshot see every change of the state's table that has ended? */
static bool
sees_all_ended(const RunsState *st, Snapshot snapshot)
{
	if (TransactionIdIsValid(st->horizon) &&
		TransactionIdPrecedes(snapshot->xmin, st->horizon))
		return false;
	for (int i = 0; i < RUNS_ENDERS; i++)
		if (TransactionIdIsValid(st->enders[i]) &&
			XidInMVCCSnapshot(st->enders[i], snapshot))
			return false;
	return true;
}

/*
 * Probe the cache for rel's data runs as snapshot sees them.  On a hit,
 * returns a copy; on a miss NIL, with *probe set for runcache_store.
 */
List *
runcache_lookup(Relation rel, Snapshot snapshot, RunCacheProbe *probe)
{
	RunsState  *st = hints_runs_state(RelationGetRelid(rel));
	CacheEntry *e;
	List	   *runs = NIL;
	ListCell   *lc;

	probe->usable = false;
	probe->hit = false;
	if (st == NULL || snapshot == NULL || !IsMVCCSnapshot(snapshot) ||
		snapshot->takenDuringRecovery || RecoveryInProgress())
		return NIL;
	SpinLockAcquire(&st->mutex);
	probe->generation = st->generation;
	probe->usable = st->inflight == 0 && sees_all_ended(st, snapshot);
	SpinLockRelease(&st->mutex);
	if (!probe->usable || cache == NULL)
		return NIL;
	e = hash_search(cache, &rel->rd_id, HASH_FIND, NULL);
	if (e == NULL || e->generation != probe->generation ||
		e->relfilenode != rel->rd_node.relNode)
		return NIL;
	foreach(lc, e->runs)
		runs = lappend(runs, copy_run(lfirst(lc)));
	probe->hit = true;
	return runs;
}

/*
 * After a miss: keep runs (read from the catalog with the probe's
 * snapshot) if nothing changed meanwhile.
 */
void
runcache_store(Relation rel, const RunCacheProbe *probe, List *runs)
{
	RunsState  *st = hints_runs_state(RelationGetRelid(rel));
	CacheEntry *e;
	bool		found;
	bool		same;
	ListCell   *lc;
	MemoryContext old;

	if (!probe->usable)
		return;
	SpinLockAcquire(&st->mutex);
	same = st->generation == probe->generation && st->inflight == 0;
	SpinLockRelease(&st->mutex);
	if (!same)
		return;
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
	MemoryContextSwitchTo(old);
	e->relfilenode = rel->rd_node.relNode;
	e->generation = probe->generation;
}

/* catalog.c: this transaction is about to change relid's runs rows */
void
runcache_note_change(Oid relid)
{
	RunsState  *st = hints_runs_state(relid);
	MemoryContext old;

	if (st == NULL || list_member_oid(changing, relid))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	changing = lappend_oid(changing, relid);
	MemoryContextSwitchTo(old);
	SpinLockAcquire(&st->mutex);
	st->generation++;
	st->inflight++;
	SpinLockRelease(&st->mutex);
}

/*
 * The transaction ended (its commit is visible by now): announce it for
 * every table it changed.
 */
static void
announce_end(void)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	ListCell   *lc;

	foreach(lc, changing)
	{
		RunsState  *st = hints_runs_state(lfirst_oid(lc));
		TransactionId evicted;

		SpinLockAcquire(&st->mutex);
		st->generation++;
		st->inflight--;
		evicted = st->enders[st->next];
		if (TransactionIdIsValid(evicted))
		{
			TransactionId past = evicted;

			TransactionIdAdvance(past);
			if (!TransactionIdIsValid(st->horizon) ||
				TransactionIdFollows(past, st->horizon))
				st->horizon = past;
		}
		st->enders[st->next] = xid;
		st->next = (st->next + 1) % RUNS_ENDERS;
		SpinLockRelease(&st->mutex);
	}
	list_free(changing);
	changing = NIL;
}

static void
runcache_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (changing != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has changed the runs of a pkmerge table"),
						 errhint("Commit the transaction directly.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (changing != NIL)
				announce_end();
			break;
		default:
			break;
	}
}

void
runcache_init(void)
{
	RegisterXactCallback(runcache_xact_callback, NULL);
}
