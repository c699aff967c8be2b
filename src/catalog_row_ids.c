/*-------------------------------------------------------------------------
 *
 * catalog_row_ids.c
 *	  Row ids of the pkmerge tables that have secondary indexes (DESIGN
 *	  §11): which tables have them (a row of pkchangelog.row_ids each), and
 *	  the ids handed out to the row versions their transactions write.
 *
 *	  A table's ids come from one counter in shared memory, refilled in
 *	  steps of ROWID_STEP from its catalog row, whose next_id says where the
 *	  ids never handed out begin.  A refill first raises next_id in place
 *	  (WAL-logged, not transactional: a rollback keeps it), then hands the
 *	  ids below it out; a row version reaches WAL (its index entries, its
 *	  run) only after the refill's record, so after a crash, or on a
 *	  promoted standby, the counter starts again at next_id above every id
 *	  that may be anywhere.  Ids are handed out in ascending order: a
 *	  transaction's write buffer takes them in chunks, and its entries'
 *	  ids ascend with their positions.
 *
 *	  VACUUM asks for the horizon (rowids_horizon): ids below it were all
 *	  handed out before, to transactions that VACUUM then waits for.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "catalog_row_ids.h"
#include "shmem_slots.h"
#include "tid.h"

/* ids a refill reserves in the catalog row at once */
#define ROWID_STEP		(UINT64CONST(1) << 20)

/*
 * Ids are TIDs (tid.h) below the blocks of runs kept in catalog rows,
 * whose row numbers a table had before its first index may still name.
 */
#define ROWID_LIMIT		((uint64) PK_INLINE_BLOCK0 * PK_TIDS_PER_BLOCK)

#define NSLOTS 1024

typedef struct RowIdSlot
{
	slock_t		mutex;
	Oid			dbid;
	Oid			relid;			/* InvalidOid: free */
	uint64		next;			/* the next id to hand out */
	uint64		limit;			/* the catalog row's next_id */
} RowIdSlot;

static RowIdSlot *slots = NULL;

Size
rowids_shmem_size(void)
{
	return mul_size(NSLOTS, sizeof(RowIdSlot));
}

void
rowids_shmem_init(void)
{
	slots = pk_shmem_slots("pkchangelog row ids", NSLOTS, sizeof(RowIdSlot));
}

static RowIdSlot *
slot_of(Oid relid)
{
	uint32		key[2] = {MyDatabaseId, relid};

	if (slots == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pkchangelog must be loaded via shared_preload_libraries to write to tables with indexes")));
	return &slots[hash_bytes((const unsigned char *) key, sizeof(key)) % NSLOTS];
}

static inline bool
slot_holds(RowIdSlot *slot, Oid relid)
{
	return slot->relid == relid && slot->dbid == MyDatabaseId;
}

/* does this catalog have pkchangelog.row_ids (catalog 0.13)? */
bool
rowids_catalog_present(void)
{
	return OidIsValid(cat_oid("row_ids", true));
}

/* does the table have row ids? */
bool
rowids_enabled(Oid relid)
{
	Relation	crel;
	SysScanDesc scan;
	bool		found;

	if (!rowids_catalog_present())
		return false;
	crel = table_open(cat_oid("row_ids", false), AccessShareLock);
	scan = cat_scan(crel, "row_ids", relid, NULL);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return found;
}

/*
 * Give the table row ids (its first secondary index): its catalog row, with
 * ids from first on.  The rows already there keep their row numbers as
 * ids, which are all below first.
 */
void
rowids_enable(Oid relid, uint64 first)
{
	Relation	crel;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	HeapTuple	tup;
	RowIdSlot  *slot = slot_of(relid);

	crel = table_open(cat_oid("row_ids", false), RowExclusiveLock);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum((int64) Max(first, 1));
	tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleInsert(crel, tup);
	table_close(crel, RowExclusiveLock);

	/* what a slot knew of an earlier attempt is forgotten */
	SpinLockAcquire(&slot->mutex);
	if (slot_holds(slot, relid))
		slot->relid = InvalidOid;
	SpinLockRelease(&slot->mutex);
}

/*
 * Lock the table's catalog row for an update in place (*state), and return
 * its next_id and the row (*tup, a copy).
 */
static uint64
catalog_next_id(Relation crel, Oid relid, void **state, HeapTuple *tup)
{
	ScanKeyData key;
	bool		isnull;
	Datum		next;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	systable_inplace_update_begin(crel, cat_index_oid("row_ids"), true, NULL,
								  1, &key, tup, state);
	if (!HeapTupleIsValid(*tup))
		elog(ERROR, "row ids of relation %u are not in pkchangelog.row_ids", relid);
	next = heap_getattr(*tup, 2, RelationGetDescr(crel), &isnull);
	if (isnull)
		elog(ERROR, "row ids of relation %u have no next_id", relid);
	return (uint64) DatumGetInt64(next);
}

/*
 * n ids for rows of the table; returns the first (the others follow it).
 */
uint64
rowids_reserve(Oid relid, uint32 n)
{
	RowIdSlot  *slot = slot_of(relid);

	for (;;)
	{
		Relation	crel;
		void	   *state;
		HeapTuple	tup;
		HeapTuple	newtup;
		uint64		catalog_next;
		uint64		limit;
		uint64		first;
		Datum		values[2] = {0};
		bool		nulls[2] = {false, false};
		bool		replace[2] = {false, true};

		SpinLockAcquire(&slot->mutex);
		if (slot_holds(slot, relid) && slot->next + n <= slot->limit)
		{
			first = slot->next;
			slot->next += n;
			SpinLockRelease(&slot->mutex);
			return first;
		}
		SpinLockRelease(&slot->mutex);

		/* a refill: one at a time, under the catalog row's lock */
		crel = table_open(cat_oid("row_ids", false), RowExclusiveLock);
		catalog_next = catalog_next_id(crel, relid, &state, &tup);
		SpinLockAcquire(&slot->mutex);
		if (slot_holds(slot, relid) && slot->next + n <= slot->limit)
		{
			/* another backend refilled it meanwhile */
			SpinLockRelease(&slot->mutex);
			systable_inplace_update_cancel(state);
			table_close(crel, RowExclusiveLock);
			continue;
		}
		/*
		 * The slot is this table's from now on, with no room until the new
		 * next_id is logged: rowids_horizon reads it under the row's lock.
		 * Ids below catalog_next (or the slot's next) may be in use.
		 */
		if (!slot_holds(slot, relid))
		{
			slot->dbid = MyDatabaseId;
			slot->relid = relid;
			slot->next = catalog_next;
		}
		slot->limit = slot->next;
		limit = Max(slot->next, catalog_next) + Max(ROWID_STEP, n);
		SpinLockRelease(&slot->mutex);
		if (limit > ROWID_LIMIT)
		{
			systable_inplace_update_cancel(state);
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("pkmerge table \"%s\" has used up its row ids",
							get_rel_name(relid)),
					 errdetail("Each row version written to a table with indexes takes an id, below %llu.",
							   (unsigned long long) ROWID_LIMIT),
					 errhint("Copy the rows into a new table.")));
		}
		values[1] = Int64GetDatum((int64) limit);
		newtup = heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace);
		/* WAL-logged before any id below limit is handed out */
		systable_inplace_update_finish(state, newtup);
		table_close(crel, RowExclusiveLock);

		/* (another table may have taken the slot meanwhile: then retry) */
		SpinLockAcquire(&slot->mutex);
		if (slot_holds(slot, relid))
			slot->limit = limit;
		SpinLockRelease(&slot->mutex);
	}
}

/*
 * The lowest id a transaction may yet be handed out for the table: every
 * id below it was handed out before (or never will be).  Read under the
 * catalog row's lock, so that no refill is halfway.
 */
uint64
rowids_horizon(Oid relid)
{
	RowIdSlot  *slot = slot_of(relid);
	Relation	crel;
	void	   *state;
	HeapTuple	tup;
	uint64		horizon;

	crel = table_open(cat_oid("row_ids", false), RowExclusiveLock);
	horizon = catalog_next_id(crel, relid, &state, &tup);
	SpinLockAcquire(&slot->mutex);
	if (slot_holds(slot, relid))
		horizon = slot->next;
	SpinLockRelease(&slot->mutex);
	systable_inplace_update_cancel(state);
	table_close(crel, RowExclusiveLock);
	return horizon;
}
