/*-------------------------------------------------------------------------
 *
 * catalog_row_ids.c
 *	  Row ids of the pkmerge tables that have secondary indexes (DESIGN
 *	  §6): which tables have them (a row of pkchangelog.row_ids each), and
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
 *	  Each backend says, in shared memory, which ids its transaction took
 *	  of each table (BackendRowIds: the ranges, and the transaction's xid),
 *	  set with the ids it takes under the table's slot's lock and cleared
 *	  when the transaction ends or is prepared (its rows are in runs then).
 *	  VACUUM asks for the horizon (rowids_horizon): ids below it were all
 *	  handed out to transactions that have ended, or to running ones whose
 *	  rows are in runs by then (prepared transactions, spills): an index
 *	  entry of an id below it that no run holds names a version that is
 *	  gone.  A unique check asks which transaction holds an id that no
 *	  committed run has (rowids_holder): another's buffered rows are
 *	  nowhere else to be seen.
 *
 *	  A table gets row ids with its first secondary index.  Built
 *	  CONCURRENTLY, its writers go on meanwhile, and those that began
 *	  writing before have rows without ids: shared memory counts the tables
 *	  given ids (at the commits that give them), so that such a writer
 *	  notices (pk_table_rowids_now), gives its buffered rows ids at commit, and never
 *	  places a run of rows without ids where their numbers could be ids
 *	  handed out since (run_space.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "catalog_row_ids.h"
#include "pg_compat.h"
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
	LWLock		lock;
	Oid			dbid;
	Oid			relid;			/* InvalidOid: free */
	uint64		next;			/* the next id to hand out */
	uint64		limit;			/* the catalog row's next_id */
} RowIdSlot;

static RowIdSlot *slots = NULL;

/*
 * Per backend (by its PGPROC's number): the ids its transaction took of
 * each table it wrote, up to XACT_TABLES of them, then overflow.  A
 * table's ids are up to XACT_RANGES ranges (a chunk that follows the last
 * one extends it; past XACT_RANGES, the last range grows over the chunks
 * of others taken in between: a range may say too much, never too little).
 * A table's entry is written under its slot's lock, which readers hold;
 * written by the backend only.
 */
#define XACT_TABLES 16
#define XACT_RANGES 4
typedef struct IdRange
{
	uint64		from;
	uint64		to;				/* past the last */
} IdRange;

/*
 * The keys a transaction wrote of a table, as a bit per key hash (one of
 * KEY_BITS): a unique check that finds a committed version of such a key
 * waits for the transaction, as heap's waits for a row's updater (a bit
 * shared by other keys costs a needless wait, never a missed one).  Set
 * without a lock (atomically), once the table's entry exists.
 */
#define KEY_BITS 1024
#define KEY_WORDS (KEY_BITS / 64)

typedef struct BackendRowIds
{
	Oid			dbid;
	TransactionId xid;			/* the transaction's (top-level) */
	int			ntables;
	bool		overflow;		/* more tables than entries */
	Oid			relid[XACT_TABLES];
	int			nranges[XACT_TABLES];
	IdRange		ranges[XACT_TABLES][XACT_RANGES];
	pg_atomic_uint64 keys[XACT_TABLES][KEY_WORDS];
} BackendRowIds;

static BackendRowIds *backends = NULL;

/* tables given row ids since startup, counted as their transactions commit */
static pg_atomic_uint64 *enables = NULL;
static bool enable_pending = false; /* this transaction gives a table ids */
static bool published = false;	/* this backend's entry is its transaction's */
static Oid	last_relid = InvalidOid;	/* the table rowids_note_key saw last, */
static int	last_entry = -1;	/* and its entry, while published */

static Size
backends_size(void)
{
	return mul_size(MaxBackends + NUM_AUXILIARY_PROCS, sizeof(BackendRowIds));
}

Size
rowids_shmem_size(void)
{
	return add_size(add_size(mul_size(NSLOTS, sizeof(RowIdSlot)), backends_size()),
					sizeof(pg_atomic_uint64));
}

static void
rowids_xact_callback(XactEvent event, void *arg)
{
	if (enable_pending && (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
						   event == XACT_EVENT_PREPARE))
	{
		/* committed, not yet unlocked: writers waiting for the lock see it */
		if (event == XACT_EVENT_COMMIT && enables)
			pg_atomic_fetch_add_u64(enables, 1);
		enable_pending = false;
	}
	/* ended, or prepared: its rows are in runs */
	if (published && backends && MyProc &&
		(event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		 event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		 event == XACT_EVENT_PARALLEL_ABORT))
	{
		BackendRowIds *b = &backends[GetNumberFromPGProc(MyProc)];

		b->ntables = 0;
		b->overflow = false;
		published = false;
		last_entry = -1;
	}
}

void
rowids_shmem_init(int tranche)
{
	bool		found;

	slots = pk_shmem_lwlock_slots("pkchangelog row ids", NSLOTS, sizeof(RowIdSlot),
								  tranche);
	enables = ShmemInitStruct("pkchangelog row id enables", sizeof(pg_atomic_uint64), &found);
	if (!found)
		pg_atomic_init_u64(enables, 0);
	backends = ShmemInitStruct("pkchangelog backend row ids", backends_size(), &found);
	if (!found)
	{
		memset(backends, 0, backends_size());
		for (int p = 0; p < MaxBackends + NUM_AUXILIARY_PROCS; p++)
			for (int i = 0; i < XACT_TABLES; i++)
				for (int w = 0; w < KEY_WORDS; w++)
					pg_atomic_init_u64(&backends[p].keys[i][w], 0);
	}
}

/* set up in each backend (the library's _PG_init) */
void
rowids_init(void)
{
	RegisterXactCallback(rowids_xact_callback, NULL);
}

/*
 * This backend's entry, set up for its transaction (xid); -1 or the index
 * of relid's table entry, made if there is room (create; the caller holds
 * the table's slot's lock).
 */
static int
table_entry(BackendRowIds *b, Oid relid, TransactionId xid, bool create)
{
	int			i;

	if (!published)
	{
		b->ntables = 0;
		b->overflow = false;
		b->dbid = MyDatabaseId;
		published = true;
	}
	b->xid = xid;
	for (i = 0; i < b->ntables; i++)
		if (b->relid[i] == relid)
			return i;
	if (!create)
		return -1;
	if (b->ntables == XACT_TABLES)
	{
		b->overflow = true;
		return -1;
	}
	b->relid[i] = relid;
	b->nranges[i] = 0;
	for (int w = 0; w < KEY_WORDS; w++)
		pg_atomic_write_u64(&b->keys[i][w], 0);
	pg_write_barrier();
	b->ntables++;
	return i;
}

/*
 * This backend's transaction (xid) takes ids first .. first + n - 1 of
 * relid (the caller holds the table's slot's lock)
 */
static void
note_ids(Oid relid, TransactionId xid, uint64 first, uint32 n)
{
	BackendRowIds *b;
	int			i;
	IdRange    *r;

	if (MyProc == NULL)
		return;
	b = &backends[GetNumberFromPGProc(MyProc)];
	if ((i = table_entry(b, relid, xid, true)) < 0)
		return;
	if (b->nranges[i] == 0)
	{
		b->ranges[i][0].from = first;
		b->ranges[i][0].to = first + n;
		pg_write_barrier();
		b->nranges[i] = 1;
		return;
	}
	r = &b->ranges[i][b->nranges[i] - 1];
	if (r->to != first && b->nranges[i] < XACT_RANGES)
	{
		r++;
		r->from = first;
		r->to = first + n;
		pg_write_barrier();
		b->nranges[i]++;
		return;
	}
	r->to = first + n;
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

/*
 * Does this catalog have pkchangelog.row_ids (catalog 0.13), with its
 * index?  (A restore creates the index after the tables, pkmerge tables
 * too, whose descriptors ask.)
 */
bool
rowids_catalog_present(void)
{
	return OidIsValid(cat_oid("row_ids", true)) && OidIsValid(cat_oid("row_ids_pkey", true));
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

/* how many tables were given row ids since startup (read before the catalog) */
uint64
rowids_enables(void)
{
	uint64		n = enables ? pg_atomic_read_u64(enables) : 0;

	pg_memory_barrier();
	return n;
}

/*
 * Give the table row ids (its first secondary index): its catalog row, with
 * ids from first on, the first reserved ones taken (by the rows its
 * transaction has buffered, wbuf_assign_ids).  The rows already there keep
 * their row numbers as ids, which are all below first.
 */
void
rowids_enable(Oid relid, uint64 first, uint32 reserved)
{
	Relation	crel;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	HeapTuple	tup;
	RowIdSlot  *slot = slot_of(relid);

	crel = table_open(cat_oid("row_ids", false), RowExclusiveLock);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int64GetDatum((int64) (Max(first, 1) + reserved));
	tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleInsert(crel, tup);
	table_close(crel, RowExclusiveLock);
	enable_pending = true;

	/* what a slot knew of an earlier attempt is forgotten */
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot_holds(slot, relid))
		slot->relid = InvalidOid;
	LWLockRelease(&slot->lock);
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
	/* (whoever waits for the rows waits for it: assigned before the lock) */
	TransactionId xid = GetTopTransactionId();

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

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot_holds(slot, relid) && slot->next + n <= slot->limit)
		{
			first = slot->next;
			slot->next += n;
			note_ids(relid, xid, first, n);
			LWLockRelease(&slot->lock);
			return first;
		}
		LWLockRelease(&slot->lock);

		/* a refill: one at a time, under the catalog row's lock */
		crel = table_open(cat_oid("row_ids", false), RowExclusiveLock);
		catalog_next = catalog_next_id(crel, relid, &state, &tup);
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot_holds(slot, relid) && slot->next + n <= slot->limit)
		{
			/* another backend refilled it meanwhile */
			LWLockRelease(&slot->lock);
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
		LWLockRelease(&slot->lock);
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
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot_holds(slot, relid))
			slot->limit = limit;
		LWLockRelease(&slot->lock);
	}
}

/*
 * The horizon of the table's ids (see the header comment): the next id to
 * be handed out, or the first one a running transaction took, if lower
 * (0 if a transaction of this database wrote more tables than its entry
 * holds).  Read under the catalog row's lock, so that no refill is
 * halfway, and the slot's, so that no transaction is between taking ids
 * and saying so.
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
	LWLockAcquire(&slot->lock, LW_SHARED);
	if (slot_holds(slot, relid))
		horizon = slot->next;
	for (int p = 0; p < MaxBackends + NUM_AUXILIARY_PROCS; p++)
	{
		BackendRowIds *b = &backends[p];
		int			n = b->ntables;

		pg_read_barrier();
		if (b->dbid != MyDatabaseId || (n == 0 && !b->overflow))
			continue;
		if (b->overflow)
			horizon = 0;
		for (int i = 0; i < Min(n, XACT_TABLES); i++)
			if (b->relid[i] == relid && b->nranges[i] > 0)
				horizon = Min(horizon, b->ranges[i][0].from);
	}
	LWLockRelease(&slot->lock);
	systable_inplace_update_cancel(state);
	table_close(crel, RowExclusiveLock);
	return horizon;
}

/* does table entry i of b say what the caller asks (arg)? */
typedef bool (*EntryTest) (BackendRowIds *b, int i, const void *arg);

/*
 * The transaction of another backend of this database, still running and
 * not prepared, whose entry for relid passes test (one that wrote more
 * tables than its entry holds passes any); InvalidTransactionId if none.
 */
static TransactionId
other_transaction(Oid relid, EntryTest test, const void *arg)
{
	RowIdSlot  *slot = slot_of(relid);
	TransactionId xid = InvalidTransactionId;
	int			me = MyProc ? GetNumberFromPGProc(MyProc) : -1;

	LWLockAcquire(&slot->lock, LW_SHARED);
	for (int p = 0; p < MaxBackends + NUM_AUXILIARY_PROCS && !TransactionIdIsValid(xid); p++)
	{
		BackendRowIds *b = &backends[p];
		int			n = b->ntables;

		pg_read_barrier();
		if (p == me || b->dbid != MyDatabaseId || (n == 0 && !b->overflow))
			continue;
		if (b->overflow)
			xid = b->xid;
		for (int i = 0; i < Min(n, XACT_TABLES); i++)
			if (b->relid[i] == relid && test(b, i, arg))
				xid = b->xid;
	}
	LWLockRelease(&slot->lock);
	return xid;
}

static bool
entry_holds_id(BackendRowIds *b, int i, const void *arg)
{
	uint64		id = *(const uint64 *) arg;

	for (int k = 0; k < b->nranges[i]; k++)
		if (id >= b->ranges[i][k].from && id < b->ranges[i][k].to)
			return true;
	return false;
}

/*
 * The transaction of another backend, still running and not prepared, that
 * may hold row id of relid in its buffer or its spilled runs;
 * InvalidTransactionId if none.
 */
TransactionId
rowids_holder(Oid relid, uint64 id)
{
	return other_transaction(relid, entry_holds_id, &id);
}

/*
 * This backend's transaction writes (or retracts) a version of a key of
 * relid, whose hash is given.
 */
void
rowids_note_key(Oid relid, uint32 hash)
{
	BackendRowIds *b;
	int			i;
	pg_atomic_uint64 *w;
	uint64		bit = UINT64CONST(1) << (hash % 64);

	if (MyProc == NULL || backends == NULL)
		return;
	b = &backends[GetNumberFromPGProc(MyProc)];
	/* (a writer's rows come one table at a time: no search, mostly) */
	if (published && last_entry >= 0 && last_relid == relid)
		i = last_entry;
	else
		i = published ? table_entry(b, relid, GetTopTransactionId(), false) : -1;
	if (i < 0)
	{
		RowIdSlot  *slot = slot_of(relid);
		TransactionId xid = GetTopTransactionId();

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		i = table_entry(b, relid, xid, true);
		LWLockRelease(&slot->lock);
		if (i < 0)
			return;				/* overflow: counts as every key */
	}
	last_relid = relid;
	last_entry = i;
	w = &b->keys[i][(hash / 64) % KEY_WORDS];
	if ((pg_atomic_read_u64(w) & bit) == 0)
		pg_atomic_fetch_or_u64(w, bit);
}

static bool
entry_wrote_key(BackendRowIds *b, int i, const void *arg)
{
	uint32		hash = *(const uint32 *) arg;

	return (pg_atomic_read_u64(&b->keys[i][(hash / 64) % KEY_WORDS]) &
			(UINT64CONST(1) << (hash % 64))) != 0;
}

/*
 * The transaction of another backend, still running and not prepared, that
 * may have written a version of the key of relid whose hash is given (or
 * retracted it); InvalidTransactionId if none.
 */
TransactionId
rowids_key_writer(Oid relid, uint32 hash)
{
	return other_transaction(relid, entry_wrote_key, &hash);
}
