/*-------------------------------------------------------------------------
 *
 * catalog_mat.c
 *	  The rows of pkchangelog.materializations: materialized aggregates
 *	  (mat_define.c, mat_apply.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"

#include "catalog_mat.h"
#include "catalog.h"

/* records a materialized aggregate of relid */
void
cat_mat_insert(Oid relid, Oid aggregate, const char *query, Datum value_tables,
			   int64 created_snapshot)
{
	Relation	crel = cat_open(CAT_MATERIALIZATIONS, RowExclusiveLock);
	Datum		values[Natts_materializations];
	bool		nulls[Natts_materializations] = {0};
	HeapTuple	tup;

	values[Anum_materializations_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_materializations_aggregate - 1] = ObjectIdGetDatum(aggregate);
	values[Anum_materializations_query - 1] = CStringGetTextDatum(query);
	values[Anum_materializations_value_tables - 1] = value_tables;
	values[Anum_materializations_created_snapshot - 1] = Int64GetDatum(created_snapshot);
	tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleInsert(crel, tup);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

static MatRow *
mat_row_from_tuple(Relation crel, HeapTuple tup)
{
	MatRow	   *m = palloc(sizeof(MatRow));
	bool		isnull;

	m->relid = DatumGetObjectId(heap_getattr(tup, Anum_materializations_relid,
											 RelationGetDescr(crel), &isnull));
	m->aggregate = DatumGetObjectId(heap_getattr(tup, Anum_materializations_aggregate,
												 RelationGetDescr(crel), &isnull));
	m->query = TextDatumGetCString(heap_getattr(tup, Anum_materializations_query,
												RelationGetDescr(crel), &isnull));
	m->value_tables = DatumGetArrayTypePCopy(heap_getattr(tup, Anum_materializations_value_tables,
														  RelationGetDescr(crel), &isnull));
	m->created_snapshot = DatumGetInt64(heap_getattr(tup, Anum_materializations_created_snapshot,
													 RelationGetDescr(crel), &isnull));
	return m;
}

/* scan of the row of one aggregate (by its unique index) */
static SysScanDesc
mat_scan(Relation crel, Oid aggregate, Snapshot snapshot)
{
	ScanKeyData key;

	ScanKeyInit(&key, Anum_materializations_aggregate, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(aggregate));
	return systable_beginscan(crel, cat_oid("materializations_aggregate_key", false),
							  true, snapshot, 1, &key);
}

/*
 * The rows whose key is oid (the source's relid; by_aggregate: the
 * aggregate's; InvalidOid: every row) as snapshot sees them (MatRows).  A catalog not yet updated
 * to 0.3 has none.
 */
static List *
mat_rows(Oid oid, bool by_aggregate, Snapshot snapshot)
{
	bool		all = !OidIsValid(oid);
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *rows = NIL;

	if (!OidIsValid(cat_oid("materializations", true)))
		return NIL;
	crel = cat_open(CAT_MATERIALIZATIONS, AccessShareLock);
	if (all)
		scan = systable_beginscan(crel, InvalidOid, false, snapshot, 0, NULL);
	else if (by_aggregate)
		scan = mat_scan(crel, oid, snapshot);
	else
		scan = cat_scan(crel, "materializations", oid, snapshot);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		rows = lappend(rows, mat_row_from_tuple(crel, tup));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return rows;
}

/* the materialized aggregates of relid */
List *
cat_mat_list(Oid relid, Snapshot snapshot)
{
	return mat_rows(relid, false, snapshot);
}

/* every materialized aggregate of the database */
List *
cat_mat_all(Snapshot snapshot)
{
	return mat_rows(InvalidOid, false, snapshot);
}

/* the row of materialized aggregate table aggregate; NULL: it is not one */
MatRow *
cat_mat_get(Oid aggregate, Snapshot snapshot)
{
	List	   *rows = mat_rows(aggregate, true, snapshot);

	return rows == NIL ? NULL : linitial(rows);
}

/*
 * DROP TABLE of an aggregate: its row goes; returns its source
 * (InvalidOid: it was none, or the catalog is gone with DROP EXTENSION).
 */
Oid
cat_mat_delete(Oid aggregate)
{
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			relid = InvalidOid;

	if (!OidIsValid(cat_oid("materializations", true)) ||
		!OidIsValid(cat_oid("materializations_aggregate_key", true)))
		return InvalidOid;
	crel = cat_open(CAT_MATERIALIZATIONS, RowExclusiveLock);
	scan = mat_scan(crel, aggregate, GetLatestSnapshot());
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		relid = mat_row_from_tuple(crel, tup)->relid;
		CatalogTupleDelete(crel, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	return relid;
}

/* the query of aggregate's row becomes query */
void
cat_mat_set_query(Oid aggregate, const char *query)
{
	Relation	crel = cat_open(CAT_MATERIALIZATIONS, RowExclusiveLock);
	SysScanDesc scan = mat_scan(crel, aggregate, GetLatestSnapshot());
	HeapTuple	tup;

	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		values[Natts_materializations] = {0};
		bool		nulls[Natts_materializations] = {0};
		bool		replace[Natts_materializations] = {0};

		values[Anum_materializations_query - 1] = CStringGetTextDatum(query);
		replace[Anum_materializations_query - 1] = true;
		tup = heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace);
		CatalogTupleUpdate(crel, &tup->t_self, tup);
	}
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}
