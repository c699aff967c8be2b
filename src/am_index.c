/*-------------------------------------------------------------------------
 *
 * am_index.c
 *	  Secondary indexes of pkmerge tables (DESIGN §6): building an index
 *	  from the table's rows, each named by its row id, and VACUUM's removal
 *	  of the index entries whose row versions no run holds any more.
 *
 *	  A table gets row ids with its first secondary index, when that index
 *	  is built: from then on every row version written takes an id
 *	  (catalog_row_ids.c) that compaction keeps, and that is its TID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/multixact.h"
#include "access/xact.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "commands/trigger.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "am_index.h"
#include "catalog.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "catalog_visible.h"
#include "pg_compat.h"
#include "run_list.h"
#include "run_read.h"
#include "table_desc.h"
#include "tid.h"
#include "write_buffer.h"

/*
 * The first row id of a table that gets its first secondary index: above
 * the row number of every row in its runs' pages (the rows of runs kept in
 * catalog rows have numbers above every id: tid.h), which stay those
 * rows' ids.  VACUUM FULL keeps them (space_rewrite).
 */
static uint64
first_row_id(Relation rel)
{
	uint64		first = 1;
	ListCell   *lc;

	foreach(lc, cat_runs_visible(RelationGetRelid(rel), SnapshotAny, false))
	{
		RunInfo    *r = lfirst(lc);

		if (r->stream == NULL)
			first = Max(first, (uint64) (r->row_base + r->record_count));
	}
	return first;
}

/*
 * Give the table row ids (its first secondary index): ids above the row
 * numbers of its runs, the first ones to the rows this transaction has
 * buffered (wb, or NULL), which had buffer TIDs.
 */
static void
enable_row_ids(Relation rel, WriteBuffer *wb)
{
	uint32		buffered = wb != NULL ? wb->n : 0;
	uint64		first;

	if (!rowids_catalog_present())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("indexes on pkmerge table \"%s\" need the catalog of pkchangelog 0.13",
						RelationGetRelationName(rel)),
				 errhint("Run ALTER EXTENSION pkchangelog UPDATE.")));
	first = first_row_id(rel);

	/* the table's relcache entry, and so its PkTable, change at the next command */
	rowids_enable(RelationGetRelid(rel), first, buffered);
	if (buffered > 0)
		wbuf_assign_ids(wb, first);
	CacheInvalidateRelcache(rel);
}

/*
 * CREATE INDEX CONCURRENTLY of the table's first secondary index, in the
 * transaction that makes the index (before PostgreSQL commits it): the
 * table gets row ids there, so that every writer that comes after uses
 * them.  The writers it waits for before the build may have written rows
 * without ids: they take ids at commit (write_commit.c), and a run of rows
 * without ids placed after the ids are out fails (space_reserve).  The
 * space lock, held until the commit, keeps such runs from taking row
 * numbers first_row_id did not see.
 */
void
index_concurrent_first(Relation rel)
{
	if (pk_table_row_ids(pk_table(rel)))
		return;
	cat_space_lock(RelationGetRelid(rel));
	enable_row_ids(rel, NULL);
}

/*
 * Build an index of a pkmerge table: each row the latest snapshot sees,
 * with its row id (a plain CREATE INDEX keeps writers out meanwhile;
 * CONCURRENTLY adds the rows written meanwhile later, index_validate).  The
 * row versions older snapshots see are not indexed: the index is marked
 * for use by snapshots taken after it only (indcheckxmin, as heap marks
 * an index built over broken HOT chains).
 */
double
index_build_scan(Relation table_rel, Relation index_rel, IndexInfo *index_info,
				 IndexBuildCallback callback, void *callback_state,
				 TableScanDesc scan)
{
	PkTable    *t = pk_table(table_rel);
	Oid			relid = RelationGetRelid(table_rel);
	WriteBuffer *wb = wbuf_get(relid, false);
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	ExprState  *predicate;
	Snapshot	snapshot = NULL;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	double		reltuples = 0;

	/*
	 * The first index of a table its transaction has written (a restore in
	 * one transaction: the rows, then the indexes): the buffered rows get
	 * ids in place of their buffer TIDs, which nothing may hold past this
	 * command but a subtransaction to roll back or a deferred trigger to
	 * fire (spilled rows keep their row numbers, as committed ones do)
	 */
	if (!pk_table_row_ids(t) && wb != NULL && wb->n > 0 &&
		(GetCurrentTransactionNestLevel() > 1 || AfterTriggerPendingOnRel(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot build the first index of pkmerge table \"%s\" in a subtransaction or with triggers pending after writing to it",
						RelationGetRelationName(table_rel)),
				 errhint("Build the index outside the savepoint, or commit the writes first.")));
	if (scan != NULL && !IsMVCCSnapshot(scan->rs_snapshot))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a parallel index build is not supported on pkmerge table \"%s\"",
						RelationGetRelationName(table_rel)),
				 errhint("Set max_parallel_maintenance_workers to 0, or reset the table's parallel_workers.")));
	if (!pk_table_row_ids(t))
		enable_row_ids(table_rel, wb);
	index_info->ii_BrokenHotChain = true;

	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	if (scan == NULL)
	{
		snapshot = RegisterSnapshot(GetLatestSnapshot());
		scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);
	}
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(index_info, slot, estate, values, isnull);
		callback(index_rel, &slot->tts_tid, values, isnull, true, callback_state);
		reltuples += 1;
	}
	table_endscan(scan);
	if (snapshot)
		UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
	return reltuples;
}

/* qsort comparator of encoded TIDs */
static int
tid_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * CREATE INDEX CONCURRENTLY's second pass: insert into the index every row
 * snapshot sees whose row id it lacks (rows written between the build's
 * snapshot and the index's being ready for writers).  state's tuplesort
 * holds the index's TIDs, sorted; the rows come in key order, so the TIDs
 * are read into an array to probe.  The table has row ids by then: its
 * first index's build gave them (index_concurrent_first).
 */
void
index_validate(Relation table_rel, Relation index_rel, IndexInfo *index_info,
			   Snapshot snapshot, ValidateIndexState *state)
{
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	ExprState  *predicate;
	TableScanDesc scan;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	int64	   *tids;
	int64		ntids = 0;
	int64		cap = 1024;
	Datum		d;
	bool		dnull;

	if (!pk_table_row_ids(pk_table(table_rel)))
		elog(ERROR, "pkmerge table \"%s\" has no row ids to validate an index with",
			 RelationGetRelationName(table_rel));
	tids = palloc(sizeof(int64) * cap);
	while (tuplesort_getdatum(state->tuplesort, true, false, &d, &dnull, NULL))
	{
		if (dnull)
			continue;
		if (ntids == cap)
		{
			cap *= 2;
			tids = repalloc_huge(tids, sizeof(int64) * cap);
		}
		tids[ntids++] = DatumGetInt64(d);
		state->itups += 1;
	}
	/* (sorted by the caller; sorted again, in case) */
	qsort(tids, ntids, sizeof(int64), tid_cmp);

	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		int64		tid = itemptr_encode(&slot->tts_tid);

		CHECK_FOR_INTERRUPTS();
		state->htups += 1;
		if (bsearch(&tid, tids, ntids, sizeof(int64), tid_cmp) != NULL)
			continue;
		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(index_info, slot, estate, values, isnull);
		index_insert(index_rel, values, isnull, &slot->tts_tid, table_rel,
					 index_info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, index_info);
		state->tups_inserted += 1;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
	pfree(tids);
}

/* ---- VACUUM ---- */

/* the ids a run holds, for index_entry_dead */
typedef struct LiveRun
{
	const RunIdEntry *map;		/* by id; NULL: ids from first on */
	uint64		n;
	uint64		first;
} LiveRun;

typedef struct LiveIds
{
	uint64		horizon;		/* ids from here on may be in use */
	int			nruns;
	LiveRun    *runs;
	/* or a bit per id in [lo, horizon), set when a run holds it */
	uint64		lo;
	uint8	   *bits;
	int64		removed;
} LiveIds;

/* the most memory the bits of the live ids may take (then: runs' maps) */
#define LIVE_BITS_MAX	((uint64) 512 * 1024 * 1024)

static bool
run_holds(const LiveRun *r, uint64 id)
{
	if (r->map == NULL)
		return id >= r->first && id - r->first < r->n;
	return run_id_map_search(r->map, r->n, id) >= 0;
}

/* ambulkdelete's callback: is the entry's row version gone? */
static bool
index_entry_dead(ItemPointer tid, void *arg)
{
	LiveIds    *live = arg;
	uint64		id = pk_tid_number(tid);

	if (id >= live->horizon)
		return false;
	if (live->bits != NULL)
	{
		if (id >= live->lo &&
			(live->bits[(id - live->lo) / 8] & (1 << ((id - live->lo) % 8))) != 0)
			return false;
		live->removed++;
		return true;
	}
	for (int i = 0; i < live->nruns; i++)
		if (run_holds(&live->runs[i], id))
			return false;
	live->removed++;
	return true;
}

/*
 * Set live->bits: one per id below the horizon that a run holds, from the
 * least such id on.  An index's entries come in its order, not by id: a
 * probe of a bit, not of every run's map, for each (a map search per run
 * took a sixth of the machine under an 8-client update load).  Not when
 * the span would take more than LIVE_BITS_MAX.
 */
static void
live_bits(LiveIds *live)
{
	uint64		lo = PG_UINT64_MAX;
	uint64		span;

	for (int i = 0; i < live->nruns; i++)
	{
		LiveRun    *r = &live->runs[i];

		if (r->n > 0)
			lo = Min(lo, r->map ? r->map[0].id : r->first);
	}
	if (lo >= live->horizon)
		return;
	span = live->horizon - lo;
	if (span / 8 + 1 > LIVE_BITS_MAX)
		return;
	live->lo = lo;
	live->bits = MemoryContextAllocHuge(CurrentMemoryContext, span / 8 + 1);
	memset(live->bits, 0, span / 8 + 1);
	for (int i = 0; i < live->nruns; i++)
	{
		LiveRun    *r = &live->runs[i];

		for (uint64 j = 0; j < r->n; j++)
		{
			uint64		id = r->map ? r->map[j].id : r->first + j;

			if (id >= live->horizon)
				break;			/* ids ascend */
			live->bits[(id - lo) / 8] |= 1 << ((id - lo) % 8);
		}
	}
}

/*
 * VACUUM of a table with row ids: remove from each secondary index the
 * entries of the row versions no run holds any more (compaction dropped
 * them, or their transaction aborted, or a command of it replaced them).
 * Every data run in the catalog counts, committed or not (those of old
 * snapshots, of prepared transactions, spilled by running ones); rows
 * still buffered by a running transaction have ids from the horizon on
 * (rowids_horizon), which are kept.  Nothing is waited for.
 */
void
index_vacuum(Relation rel, VacuumParams *params, BufferAccessStrategy bstrategy)
{
	PkTable    *t = pk_table(rel);
	Relation   *indrels;
	int			nindexes;
	LiveIds		live = {0};
	List	   *runs;
	ListCell   *lc;
	MemoryContext cxt;
	MemoryContext old;
	double		ntuples = 0;

	if (!pk_table_row_ids(t) || params->index_cleanup == VACOPTVALUE_DISABLED)
		return;
	vac_open_indexes(rel, RowExclusiveLock, &nindexes, &indrels);
	if (nindexes == 0)
	{
		vac_close_indexes(nindexes, indrels, NoLock);
		return;
	}
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge index vacuum",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	live.horizon = rowids_horizon(RelationGetRelid(rel));
	runs = cat_runs_visible(RelationGetRelid(rel), SnapshotAny, true);
	live.runs = palloc0(sizeof(LiveRun) * Max(list_length(runs), 1));
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);
		LiveRun    *lr = &live.runs[live.nruns];

		if (r->kind != RUN_DATA || r->relfilenode != RelationFileNumber(rel))
			continue;
		if (!run_id_map(rel, t, r, &lr->map, &lr->n))
		{
			lr->first = (uint64) r->row_base;
			lr->n = (uint64) r->record_count;
		}
		ntuples += (double) r->record_count;
		live.nruns++;
	}
	live_bits(&live);

	for (int i = 0; i < nindexes; i++)
	{
		IndexVacuumInfo ivinfo;
		IndexBulkDeleteResult *stats;

		/* the key index (pkmerge_key) holds no entries: it reads the runs */
		if (indrels[i]->rd_index->indisprimary)
			continue;
		memset(&ivinfo, 0, sizeof(ivinfo));
		ivinfo.index = indrels[i];
		IndexVacuumInfoSetTable(&ivinfo, rel);
		ivinfo.estimated_count = true;
		ivinfo.message_level = (params->options & VACOPT_VERBOSE) ? INFO : DEBUG2;
		ivinfo.num_heap_tuples = ntuples;
		ivinfo.strategy = bstrategy;
		live.removed = 0;
		stats = index_bulk_delete(&ivinfo, NULL, index_entry_dead, &live);
		stats = index_vacuum_cleanup(&ivinfo, stats);
		if (stats != NULL && !stats->estimated_count)
			vac_update_relstats(indrels[i], stats->num_pages, stats->num_index_tuples,
								0, 0, false, InvalidTransactionId, InvalidMultiXactId,
								NULL, NULL, false);
		ereport(ivinfo.message_level,
				(errmsg("index \"%s\" of pkmerge table \"%s\": %lld entries of row versions no run holds removed",
						RelationGetRelationName(indrels[i]), RelationGetRelationName(rel),
						(long long) live.removed),
				 stats ? errdetail("The index has %.0f entries in %u pages.",
								   stats->num_index_tuples, stats->num_pages) : 0));
	}
	vac_close_indexes(nindexes, indrels, NoLock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}
