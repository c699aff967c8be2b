/*-------------------------------------------------------------------------
 *
 * catalog_consumers.c
 *	  The rows of pkchangelog.consumers: consumer positions (pk_consume).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_collation.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog_consumers.h"
#include "catalog.h"

Oid
cat_consumers_relid(void)
{
	return cat_oid("consumers", false);
}

/* scan positioned on the row of (relid, consumer_id) that snapshot sees */
static SysScanDesc
consumer_scan(Relation crel, Oid relid, const char *consumer_id, Snapshot snapshot)
{
	ScanKeyData key[2];

	ScanKeyInit(&key[0], Anum_consumers_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	/* the key's collation is the column's, the database default */
	ScanKeyEntryInitialize(&key[1], 0, Anum_consumers_consumer_id, BTEqualStrategyNumber,
						   InvalidOid, DEFAULT_COLLATION_OID, F_TEXTEQ,
						   CStringGetTextDatum(consumer_id));
	return systable_beginscan(crel, cat_index_oid("consumers"), true, snapshot, 2, key);
}

/* the consumer's position as snapshot sees it; false: no such consumer */
bool
cat_consumer_get(Oid relid, const char *consumer_id, Snapshot snapshot,
				 int64 *next_snapshot_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, AccessShareLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, snapshot);
	HeapTuple	tup = systable_getnext(scan);
	bool		isnull;

	if (HeapTupleIsValid(tup))
		*next_snapshot_id = DatumGetInt64(heap_getattr(tup, Anum_consumers_next_snapshot_id,
													   RelationGetDescr(crel), &isnull));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return HeapTupleIsValid(tup);
}

/*
 * Sets the consumer's position (creating the consumer), consumed now.  The
 * caller holds the consumer's lock (cat_consumer_lock), so the row the
 * latest snapshot sees is the one to replace.
 */
void
cat_consumer_set(Oid relid, const char *consumer_id, int64 next_snapshot_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, RowExclusiveLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, GetLatestSnapshot());
	HeapTuple	tup = systable_getnext(scan);
	Datum		values[Natts_consumers];
	bool		nulls[Natts_consumers] = {0};
	HeapTuple	newtup;

	values[Anum_consumers_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_consumers_consumer_id - 1] = CStringGetTextDatum(consumer_id);
	values[Anum_consumers_next_snapshot_id - 1] = Int64GetDatum(next_snapshot_id);
	values[Anum_consumers_last_consumed - 1] = TimestampTzGetDatum(GetCurrentTimestamp());
	newtup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	if (HeapTupleIsValid(tup))
		CatalogTupleUpdate(crel, &tup->t_self, newtup);
	else
		CatalogTupleInsert(crel, newtup);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * The oldest snapshot a consumer of relid has yet to read (PG_INT64_MAX:
 * none): expiration keeps it and every newer one.  A consumer that
 * consumed nothing since idle_before (0: none is idle) holds nothing, so
 * an abandoned one does not keep snapshots forever; it stays, and its next
 * pk_consume finds its position expired (an error, not a gap) until
 * pk_consumer_drop starts it afresh.  No consumers catalog (an extension
 * not yet updated to 0.2): none.
 */
int64
cat_consumers_floor(Oid relid, TimestampTz idle_before)
{
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	int64		floor = PG_INT64_MAX;

	if (!OidIsValid(cat_oid("consumers", true)))
		return floor;
	crel = cat_open(CAT_CONSUMERS, AccessShareLock);
	scan = cat_scan(crel, "consumers", relid, GetLatestSnapshot());
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		TimestampTz last = DatumGetTimestampTz(heap_getattr(tup, Anum_consumers_last_consumed,
															RelationGetDescr(crel), &isnull));

		if (idle_before == 0 || last >= idle_before)
			floor = Min(floor, DatumGetInt64(heap_getattr(tup, Anum_consumers_next_snapshot_id,
														  RelationGetDescr(crel), &isnull)));
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return floor;
}

/* drops a consumer; false if there was none */
bool
cat_consumer_drop(Oid relid, const char *consumer_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, RowExclusiveLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, GetLatestSnapshot());
	HeapTuple	tup = systable_getnext(scan);
	bool		found = HeapTupleIsValid(tup);

	if (found)
		CatalogTupleDelete(crel, &tup->t_self);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	return found;
}
