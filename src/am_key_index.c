/*-------------------------------------------------------------------------
 *
 * am_key_index.c
 *	  The pkmerge_key index access method: a virtual index with no entries
 *	  of its own that backs a pkmerge table's primary key.  Its scans seek
 *	  into the merge tree, so the planner uses it for key equality, key
 *	  ranges, ORDER BY key and parameterized nested loops.
 *
 * Scan keys are btree's (the operator classes are btree's, copied by the
 * extension script).  Equality on every key column is a point lookup
 * (bloom filter, one block per run); otherwise the merge iterator seeks to
 * the lower bound of the leading columns and stops past the upper bound of
 * the first one, every key being checked on each row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/reloptions.h"
#include "access/relscan.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/pathnodes.h"
#include "pgstat.h"
#include "storage/predicate.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "am_scan.h"
#include "lookup.h"
#include "pg_compat.h"
#include "run_list.h"
#include "run_merge.h"

PG_FUNCTION_INFO_V1(pkmerge_key_handler);
PG_FUNCTION_INFO_V1(pk_key_index_btree_opclasses);

typedef struct KeyScanOpaque
{
	MemoryContext cxt;			/* runs list: lives as long as the scan */
	MemoryContext passcxt;		/* merge state of one pass */
	List	   *runs;
	bool		have_runs;
	PkTable    *table;
	MergeIter  *iter;
	bool		point;			/* equality on the whole key */
	bool		done;
	Datum		eq[INDEX_MAX_KEYS]; /* point: the key, in column types */
	int			nseek;			/* leading columns with a lower bound */
	Datum		seek[INDEX_MAX_KEYS];
	bool	   *stoppable;		/* per scan key: failing it ends the scan */
	PkVersion	version;		/* point lookup's result */
	/* backward scans: the matching rows, collected forward, then popped */
	bool		collected;
	int			nrows;
	ItemPointerData *tids;
	MinimalTuple *tups;
} KeyScanOpaque;

/*
 * btree's operator class that the pkmerge_key class opclass copies (the
 * extension script's copies: same input type, same operators), or
 * InvalidOid if there is none.
 */
static Oid
btree_original(Oid opclass)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	Form_pg_opclass form;
	Oid			original = InvalidOid;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclass);
	form = (Form_pg_opclass) GETSTRUCT(tup);
	if (form->opcmethod == BTREE_AM_OID)
		original = opclass;
	else
	{
		Oid			type = form->opcintype;
		Oid			candidate = GetDefaultOpClass(type, BTREE_AM_OID);
		bool		same = OidIsValid(candidate);

		for (int s = BTLessStrategyNumber; same && s <= BTGreaterStrategyNumber; s++)
			same = get_opfamily_member(form->opcfamily, type, type, s) ==
				get_opfamily_member(get_opclass_family(candidate), type, type, s);
		if (same)
			original = candidate;
	}
	ReleaseSysCache(tup);
	return original;
}

/*
 * A pkmerge_key index takes btree's operator classes in place of the
 * copies DefineIndex gave it (an index's classes must be its access
 * method's there): the same operators and strategy numbers, so scans and
 * plans are unchanged, and PostgreSQL takes the key as the referenced key
 * of a foreign key, which it accepts only with b-tree operator classes
 * (tablecmds.c).  pg_index.indclass and the index's dependencies on its
 * classes change; a class without a btree original stays.
 */
static void
key_use_btree_opclasses(Oid indexoid)
{
	Relation	pg_index = table_open(IndexRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(indexoid));
	Datum		values[Natts_pg_index] = {0};
	bool		nulls[Natts_pg_index] = {0};
	bool		replace[Natts_pg_index] = {0};
	oidvector  *indclass;
	oidvector  *changed;
	bool		isnull;
	bool		any = false;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	indclass = (oidvector *) DatumGetPointer(heap_getattr(tup, Anum_pg_index_indclass,
														  RelationGetDescr(pg_index),
														  &isnull));
	changed = buildoidvector(indclass->values, indclass->dim1);
	for (int i = 0; i < indclass->dim1; i++)
	{
		Oid			original = btree_original(indclass->values[i]);

		bool		seen = false;

		if (!OidIsValid(original) || original == indclass->values[i])
			continue;
		/* one dependency per class, however many columns have it */
		for (int j = 0; j < i; j++)
			seen |= indclass->values[j] == indclass->values[i];
		if (!seen)
			changeDependencyFor(RelationRelationId, indexoid, OperatorClassRelationId,
								indclass->values[i], original);
		changed->values[i] = original;
		any = true;
	}
	if (any)
	{
		HeapTuple	newtup;

		values[Anum_pg_index_indclass - 1] = PointerGetDatum(changed);
		replace[Anum_pg_index_indclass - 1] = true;
		newtup = heap_modify_tuple(tup, RelationGetDescr(pg_index), values, nulls, replace);
		CatalogTupleUpdate(pg_index, &newtup->t_self, newtup);
		CommandCounterIncrement();
	}
	table_close(pg_index, RowExclusiveLock);
}

/*
 * pk_key_index_btree_opclasses(index): the update script's way to give
 * the key indexes made before 0.14 btree's operator classes.
 */
Datum
pk_key_index_btree_opclasses(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	bool		is_key;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index %u does not exist", indexoid)));
	is_key = ((Form_pg_class) GETSTRUCT(tup))->relam == get_index_am_oid("pkmerge_key", false);
	ReleaseSysCache(tup);
	if (!is_key)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a pkmerge_key index", get_rel_name(indexoid))));
	key_use_btree_opclasses(indexoid);
	PG_RETURN_VOID();
}

/*
 * The pkmerge_key index must be the primary key of a pkmerge table, on
 * exactly its key columns.
 */
static IndexBuildResult *
key_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	PkTable    *t;

	if (!pk_is_pkmerge(heap))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pkmerge_key indexes can only be built on pkmerge tables"),
				 errhint("\"%s\" is not a pkmerge table: give its index another access method, such as btree.",
						 RelationGetRelationName(heap))));
	/* not ii_Unique: a REINDEX may build without the uniqueness check */
	if (!index->rd_index->indisunique || indexInfo->ii_Expressions != NIL ||
		indexInfo->ii_Predicate != NIL ||
		indexInfo->ii_NumIndexAttrs != indexInfo->ii_NumIndexKeyAttrs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("a pkmerge_key index must be a plain primary key of pkmerge table \"%s\"",
						RelationGetRelationName(heap))));

	key_use_btree_opclasses(RelationGetRelid(index));

	/*
	 * Within CREATE TABLE the index is built before sql_ddl.c stores the table's
	 * options, from the same PRIMARY KEY clause: nothing to compare yet.
	 */
	if (!pk_has_key_option(heap))
		return result;
	t = pk_table(heap);
	for (int i = 0; i < t->nkeys; i++)
		if (indexInfo->ii_NumIndexKeyAttrs != t->nkeys ||
			indexInfo->ii_IndexAttrNumbers[i] != t->keys[i].attnum)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("a pkmerge_key index must be the primary key (%s) of pkmerge table \"%s\"",
							t->opts.primary_key, t->relname)));
	return result;
}

static void
key_buildempty(Relation index)
{
	/* nothing stored */
}

static bool
key_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
		   Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	/* no entries: the merge tree is the index; keys are unique by merge */
	return true;
}

static IndexBulkDeleteResult *
key_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	return stats;
}

static IndexBulkDeleteResult *
key_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	return stats;
}

/*
 * Costs: a point lookup reads at most one block per run; other scans read
 * the selected fraction of the merged runs.  The table's pages stand in
 * for the index's, which has none.
 */
static void
key_costestimate(struct PlannerInfo *root, struct IndexPath *path,
				 double loop_count, Cost *indexStartupCost,
				 Cost *indexTotalCost, Selectivity *indexSelectivity,
				 double *indexCorrelation, double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs = {0};
	double		pages = Max(index->rel->pages, 1);

	index->pages = pages;
	genericcostestimate(root, path, loop_count, &costs);
	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	/* rows come in key order, and the "heap" fetch is free (handed over) */
	*indexCorrelation = 1.0;
	*indexPages = costs.numIndexPages;
}

static bytea *
key_options(Datum reloptions, bool validate)
{
	if (validate && reloptions != (Datum) 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pkmerge_key indexes take no options")));
	return NULL;
}

static bool
key_validate(Oid opclassoid)
{
	return true;
}

/* the scan's memory is going (also without key_endscan: an error) */
static void
key_memory_gone(void *arg)
{
	scan_handoff_forget(arg);
}

static IndexScanDesc
key_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	KeyScanOpaque *so = palloc0(sizeof(KeyScanOpaque));
	MemoryContextCallback *cb;

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge_key scan",
									ALLOCSET_SMALL_SIZES);
	so->passcxt = AllocSetContextCreate(so->cxt, "pkmerge_key pass",
										ALLOCSET_DEFAULT_SIZES);

	/*
	 * Rows handed over to the fetch (scan_handoff) live in so->cxt.  An
	 * error or a savepoint rollback deletes it without key_endscan; the
	 * handoff must not outlive it.
	 */
	cb = MemoryContextAlloc(so->cxt, sizeof(MemoryContextCallback));
	cb->func = key_memory_gone;
	cb->arg = so;
	MemoryContextRegisterResetCallback(so->cxt, cb);
	scan->opaque = so;
	return scan;
}

/*
 * A scan key's argument as a value of the key column's type, when that is
 * exact (integer widening, and narrowing of a value in range; float
 * widening); false otherwise: the key is then only a filter.
 */
static bool
arg_as_column(ScanKey key, Oid coltype, Datum *out)
{
	Oid			argtype = OidIsValid(key->sk_subtype) ? key->sk_subtype : coltype;
	int64		i;

	if (argtype == coltype)
	{
		*out = key->sk_argument;
		return true;
	}
	if (coltype == FLOAT8OID && argtype == FLOAT4OID)
	{
		*out = Float8GetDatum((float8) DatumGetFloat4(key->sk_argument));
		return true;
	}
	if (argtype == INT8OID)
		i = DatumGetInt64(key->sk_argument);
	else if (argtype == INT4OID)
		i = DatumGetInt32(key->sk_argument);
	else if (argtype == INT2OID)
		i = DatumGetInt16(key->sk_argument);
	else
		return false;
	if (coltype == INT8OID)
		*out = Int64GetDatum(i);
	else if (coltype == INT4OID && i >= PG_INT32_MIN && i <= PG_INT32_MAX)
		*out = Int32GetDatum((int32) i);
	else if (coltype == INT2OID && i >= PG_INT16_MIN && i <= PG_INT16_MAX)
		*out = Int16GetDatum((int16) i);
	else
		return false;
	return true;
}

static void
key_endpass(KeyScanOpaque *so)
{
	scan_handoff(so, NULL, InvalidOid, NULL, NULL);	/* its row is about to go */
	if (so->iter)
		merge_end(so->iter);
	so->iter = NULL;
	so->collected = false;
	so->nrows = 0;
	MemoryContextReset(so->passcxt);
}

static void
key_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
		   ScanKey orderbys, int norderbys)
{
	KeyScanOpaque *so = scan->opaque;
	bool		eqset[INDEX_MAX_KEYS] = {0};
	bool		lowset[INDEX_MAX_KEYS] = {0};
	Datum		low[INDEX_MAX_KEYS];

	key_endpass(so);
	/* the cumulative statistics' idx_scan, as btree counts it */
	pgstat_count_index_scan(scan->indexRelation);
	if (scankey && nscankeys > 0)
		memmove(scan->keyData, scankey, nscankeys * sizeof(ScanKeyData));
	so->table = pk_table(scan->heapRelation);
	so->done = false;
	so->point = false;
	so->nseek = 0;
	if (so->stoppable == NULL)
		so->stoppable = MemoryContextAllocZero(so->cxt,
											   sizeof(bool) * Max(scan->numberOfKeys, 1));

	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		k = &scan->keyData[i];
		int			col = k->sk_attno - 1;
		Oid			coltype = so->table->keys[col].typid;
		Datum		v;

		/*
		 * Rows come in leading-column order: one past an upper bound of it
		 * ends the scan, and so does one past the equality the scan was
		 * positioned at (below: when the argument converts).
		 */
		so->stoppable[i] = k->sk_attno == 1 &&
			(k->sk_strategy == BTLessStrategyNumber ||
			 k->sk_strategy == BTLessEqualStrategyNumber);
		if (k->sk_flags & SK_ISNULL)
		{
			so->done = true;	/* key = NULL matches nothing */
			return;
		}
		if (!arg_as_column(k, coltype, &v))
			continue;
		if (k->sk_strategy == BTEqualStrategyNumber)
		{
			so->eq[col] = v;
			eqset[col] = true;
			so->stoppable[i] = k->sk_attno == 1;
		}
		else if (k->sk_strategy == BTGreaterEqualStrategyNumber ||
				 k->sk_strategy == BTGreaterStrategyNumber)
		{
			/* several lower bounds: the largest */
			if (!lowset[col] ||
				ApplySortComparator(v, false, low[col], false, &so->table->keys[col].ssup) > 0)
				low[col] = v;
			lowset[col] = true;
		}
	}
	so->point = true;
	for (int c = 0; c < so->table->nkeys; c++)
		so->point &= eqset[c];
	/* seek prefix: leading equal columns, then at most one lower bound */
	for (int c = 0; c < so->table->nkeys; c++)
	{
		if (eqset[c])
			so->seek[so->nseek++] = so->eq[c];
		else
		{
			if (lowset[c])
				so->seek[so->nseek++] = low[c];
			break;
		}
	}
}

static bool
row_matches(IndexScanDesc scan, KeyScanOpaque *so, const Datum *keys, bool *stop)
{
	*stop = false;
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		k = &scan->keyData[i];

		if (!DatumGetBool(FunctionCall2Coll(&k->sk_func, k->sk_collation,
											keys[k->sk_attno - 1], k->sk_argument)))
		{
			*stop = so->stoppable[i];
			return false;
		}
	}
	return true;
}

static CommandId
snapshot_curcid(Snapshot snapshot)
{
	return snapshot && IsMVCCSnapshot(snapshot) ? snapshot->curcid : InvalidCommandId;
}

static bool
key_next(IndexScanDesc scan)
{
	KeyScanOpaque *so = scan->opaque;
	Relation	heap = scan->heapRelation;
	WriteBuffer *wb = wbuf_get(RelationGetRelid(heap), false);
	MergeRow	row;
	bool		stop;

	/* the row handed over last is about to go */
	scan_handoff(so, NULL, InvalidOid, NULL, NULL);
	if (so->done)
		return false;
	if (!so->have_runs)
	{
		MemoryContext old = MemoryContextSwitchTo(so->cxt);

		/* the scan's snapshot does not change across rescans */
		so->runs = runlist_visible(heap, scan->xs_snapshot);
		/* SERIALIZABLE: a read of the table, at table granularity */
		PredicateLockRelation(heap, scan->xs_snapshot);
		so->have_runs = true;
		MemoryContextSwitchTo(old);
	}

	if (so->point)
	{
		uint32		hash = pk_key_hash(so->table, so->eq);
		MemoryContext old = MemoryContextSwitchTo(so->passcxt);
		bool		found;

		so->done = true;
		found = lookup_buffered(wb, so->table, so->eq, hash,
								snapshot_curcid(scan->xs_snapshot), &so->version) ||
			lookup_committed(heap, so->table, so->runs, so->eq, hash, &so->version);
		MemoryContextSwitchTo(old);
		if (!found || !PK_KIND_IS_ADD(so->version.kind))
			return false;
		{
			Datum		keys[INDEX_MAX_KEYS];

			pk_row_key(so->table, so->version.tup, keys);
			if (!row_matches(scan, so, keys, &stop))
				return false;
		}
		scan->xs_heaptid = so->version.tid;
		scan->xs_recheck = false;
		scan_handoff(so, scan->xs_heapfetch, RelationGetRelid(heap), &so->version.tid,
					 so->version.tup);
		return true;
	}

	if (so->iter == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(so->passcxt);

		so->iter = merge_begin(heap, so->table, so->runs, wb,
							   snapshot_curcid(scan->xs_snapshot), NULL, false, true);
		if (so->nseek > 0)
			merge_seek(so->iter, so->seek, so->nseek);
		MemoryContextSwitchTo(old);
	}
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(so->passcxt);
		bool		found = merge_next(so->iter, &row);

		MemoryContextSwitchTo(old);
		if (!found)
			break;
		if (row_matches(scan, so, row.keys, &stop))
		{
			scan->xs_heaptid = row.tid;
			scan->xs_recheck = false;
			scan_handoff(so, scan->xs_heapfetch, RelationGetRelid(heap), &row.tid, row.tup);
			return true;
		}
		if (stop)
			break;
	}
	so->done = true;
	return false;
}

/*
 * Backward (ORDER BY key DESC): the planner assumes any ordered index can
 * run backward.  The matching rows are collected in key order once and
 * returned from the last.  A real reverse merge would avoid reading the
 * whole range for a LIMIT; it is not there yet.
 */
static bool
key_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	KeyScanOpaque *so = scan->opaque;
	MemoryContext old;
	int			cap = 64;

	if (ScanDirectionIsForward(dir))
		return key_next(scan);
	if (!so->collected)
	{
		so->tids = MemoryContextAlloc(so->cxt, sizeof(ItemPointerData) * cap);
		so->tups = MemoryContextAlloc(so->cxt, sizeof(MinimalTuple) * cap);
		while (key_next(scan))
		{
			if (so->nrows == cap)
			{
				cap *= 2;
				so->tids = repalloc_huge(so->tids, sizeof(ItemPointerData) * cap);
				so->tups = repalloc_huge(so->tups, sizeof(MinimalTuple) * cap);
			}
			old = MemoryContextSwitchTo(so->cxt);
			so->tids[so->nrows] = scan->xs_heaptid;
			so->tups[so->nrows++] = heap_copy_minimal_tuple(scan_handoff_tuple(), 0);
			MemoryContextSwitchTo(old);
		}
		so->collected = true;
	}
	if (so->nrows == 0)
		return false;
	so->nrows--;
	scan->xs_heaptid = so->tids[so->nrows];
	scan->xs_recheck = false;
	scan_handoff(so, scan->xs_heapfetch, RelationGetRelid(scan->heapRelation),
				 &so->tids[so->nrows],
				 so->tups[so->nrows]);
	return true;
}

static void
key_endscan(IndexScanDesc scan)
{
	KeyScanOpaque *so = scan->opaque;

	key_endpass(so);
	MemoryContextDelete(so->cxt);
	pfree(so);
}

Datum
pkmerge_key_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = BTMaxStrategyNumber;
	/*
	 * Support 1 is the comparison function; the index's classes are btree's
	 * (key_use_btree_opclasses), whose families have btree's other support
	 * functions too, unused here but loaded with the classes.
	 */
	amroutine->amsupport = BTNProcs;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = true;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = true;
	amroutine->amcanmulticol = true;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = 0;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = key_build;
	amroutine->ambuildempty = key_buildempty;
	amroutine->aminsert = key_insert;
	amroutine->ambulkdelete = key_bulkdelete;
	amroutine->amvacuumcleanup = key_vacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = key_costestimate;
	amroutine->amoptions = key_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = NULL;
	amroutine->amvalidate = key_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = key_beginscan;
	amroutine->amrescan = key_rescan;
	amroutine->amgettuple = key_gettuple;
	amroutine->amgetbitmap = NULL;
	amroutine->amendscan = key_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;
	IndexAmNumbersAsBtree(amroutine);

	PG_RETURN_POINTER(amroutine);
}
