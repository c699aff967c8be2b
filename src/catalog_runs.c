/*-------------------------------------------------------------------------
 *
 * catalog_runs.c
 *	  The rows of pkchangelog.runs: a run's row in and out (RunInfo), its
 *	  updates as a commit, a compaction or VACUUM FULL moves it, its
 *	  retirement, the runs of a range of snapshots, the run ids, the
 *	  extents runs occupy in a table's file, and pruning the rows of runs
 *	  no snapshot sees any more.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/indexing.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"

#include "catalog_runs.h"
#include "pg_compat.h"

/*
 * Scan positioned on the version of a run's row that snapshot sees (*tup
 * invalid if none); end it with systable_endscan.
 */
SysScanDesc
cat_run_row_find(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup)
{
	ScanKeyData key[2];
	SysScanDesc scan;

	ScanKeyInit(&key[0], Anum_runs_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_runs_run_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(run_id));
	scan = systable_beginscan(crel, cat_index_oid("runs"), true, snapshot, 2, key);
	*tup = systable_getnext(scan);
	return scan;
}

/* the same, for a row snapshot must see */
SysScanDesc
cat_run_row_as(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup)
{
	SysScanDesc scan = cat_run_row_find(crel, relid, run_id, snapshot, tup);

	if (!HeapTupleIsValid(*tup))
		elog(ERROR, "run %lld of relation %u is gone", (long long) run_id, relid);
	return scan;
}

/*
 * The latest version of a run's row (ours to change: callers hold the
 * locks that order changes of it).
 */
static SysScanDesc
run_row(Relation crel, Oid relid, int64 run_id, HeapTuple *tup)
{
	return cat_run_row_as(crel, relid, run_id, GetLatestSnapshot(), tup);
}

static int
run_id_cmp(const ListCell *a, const ListCell *b)
{
	int64		ra = ((RunInfo *) lfirst(a))->run_id;
	int64		rb = ((RunInfo *) lfirst(b))->run_id;

	return (ra > rb) - (ra < rb);
}

/*
 * Sort a list of runs in run id order.  Lists are mostly made from sorted
 * ones with a run or two added at the end (a commit's data run, whose id
 * is below the others'): an insertion sort orders those in linear time,
 * and gives way to list_sort when it finds the list far from sorted.
 */
void
cat_runs_sort(List *runs)
{
	int			n = list_length(runs);
	int			moves = 0;

	for (int i = 1; i < n; i++)
	{
		ListCell	cell = runs->elements[i];
		int64		id = ((RunInfo *) lfirst(&cell))->run_id;
		int			j = i;

		while (j > 0 && ((RunInfo *) lfirst(&runs->elements[j - 1]))->run_id > id)
		{
			runs->elements[j] = runs->elements[j - 1];
			j--;
			if (++moves > 4 * n)
			{
				runs->elements[j] = cell;
				list_sort(runs, run_id_cmp);
				return;
			}
		}
		runs->elements[j] = cell;
	}
}

/* the run's row snapshot sees, or NULL (a run with a row of its own) */
RunInfo *
cat_run_find(Oid relid, int64 run_id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	HeapTuple	tup;
	SysScanDesc scan = cat_run_row_find(crel, relid, run_id, snapshot, &tup);
	RunInfo    *r = HeapTupleIsValid(tup) ? cat_run_from_tuple(crel, tup) : NULL;

	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return r;
}

/* update columns of a run's row: values[i] into column attnums[i] */
void
cat_run_update(Oid relid, int64 run_id, int ncols, const int *attnums,
		   const Datum *newvalues, bool own_run)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	Datum		values[Natts_runs] = {0};
	bool		nulls[Natts_runs] = {0};
	bool		replace[Natts_runs] = {0};

	cat_note_change(relid, own_run);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	/* a data run kept in its snapshot's row has no row of its own to update */
	scan = run_id < 0 ? cat_run_row_find(crel, relid, run_id, GetLatestSnapshot(), &tup) :
		run_row(crel, relid, run_id, &tup);
	if (!HeapTupleIsValid(tup))
	{
		systable_endscan(scan);
		table_close(crel, RowExclusiveLock);
		return;
	}
	for (int i = 0; i < ncols; i++)
	{
		values[attnums[i] - 1] = newvalues[i];
		replace[attnums[i] - 1] = true;
	}
	CatalogTupleUpdate(crel, &tup->t_self,
					   heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace));
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/* a compaction's output gets its snapshot id when the compaction commits */
void
cat_run_set_snapshot(Oid relid, int64 run_id, int64 snapshot_id)
{
	int			attnum = Anum_runs_created_snapshot;
	Datum		value = Int64GetDatum(snapshot_id);

	cat_run_update(relid, run_id, 1, &attnum, &value, false);
}

/*
 * VACUUM FULL copied a run into the table's new storage (space_rewrite):
 * its row names the new file and place; the run id stays, as it is in the
 * run's header and in the table's list of data runs.
 */
void
cat_run_move(Oid relid, int64 run_id, Oid relfilenode, BlockNumber start_block,
			 int64 row_base)
{
	int			attnums[3] = {Anum_runs_relfilenode, Anum_runs_start_block, Anum_runs_row_base};
	Datum		values[3] = {ObjectIdGetDatum(relfilenode), Int64GetDatum((int64) start_block),
	Int64GetDatum(row_base)};

	cat_run_update(relid, run_id, 3, attnums, values, false);
}

/* a spilled run joins its commit: its sequence number and snapshot id */
void
cat_run_finalize(Oid relid, int64 run_id, int64 seq, int64 snapshot_id)
{
	int			attnums[3] = {Anum_runs_min_seq, Anum_runs_max_seq, Anum_runs_created_snapshot};
	Datum		values[3] = {Int64GetDatum(seq), Int64GetDatum(seq), Int64GetDatum(snapshot_id)};

	cat_run_update(relid, run_id, 3, attnums, values, true);
}

/*
 * A commit's data run replaced by compaction, kept as its snapshot's delta:
 * readers whose MVCC snapshot predates the compaction still see it as data.
 * A new version of the row, a HOT one when its page has room (no column
 * it changes is indexed): readers whose snapshot sees the tables row
 * version naming the run find the old version by run id.
 */
void
cat_run_retire(Oid relid, const RunInfo *run)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	Datum		values[Natts_runs] = {0};
	bool		nulls[Natts_runs] = {0};
	bool		replace[Natts_runs] = {0};
	HeapTuple	delta;

	cat_note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	scan = run_row(crel, relid, run->run_id, &tup);
	values[Anum_runs_kind - 1] = CStringGetTextDatum("delta");
	replace[Anum_runs_kind - 1] = true;
	/* (before catalog 0.5 the run keeps its pages) */
	if (run->stream && RelationGetDescr(crel)->natts >= Anum_runs_stream)
	{
		/* its pages are free once no snapshot sees the row's old version */
		values[Anum_runs_stream - 1] = PointerGetDatum(cat_stream_bytea(run));
		values[Anum_runs_start_block - 1] = Int64GetDatum(0);
		values[Anum_runs_nblocks - 1] = Int32GetDatum(0);
		values[Anum_runs_size_bytes - 1] = Int64GetDatum(run->stream_len);
		replace[Anum_runs_stream - 1] = true;
		replace[Anum_runs_start_block - 1] = true;
		replace[Anum_runs_nblocks - 1] = true;
		replace[Anum_runs_size_bytes - 1] = true;
	}
	delta = heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace);
	CatalogTupleUpdate(crel, &tup->t_self, delta);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Ordered scan of the runs of relid created by snapshots in (from, to],
 * through runs_snapshot: in snapshot then run order, without reading the
 * table's other runs.  End it with cat_runs_of_snapshots_end.
 */
SysScanDesc
cat_runs_of_snapshots_begin(Relation crel, Relation *irel, Oid relid, int64 from,
						int64 to, Snapshot snapshot)
{
	ScanKeyData key[3];

	*irel = index_open(cat_oid("runs_snapshot", false), AccessShareLock);
	/* heap column numbers: systable_beginscan_ordered maps them to the index's */
	ScanKeyInit(&key[0], Anum_runs_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_runs_created_snapshot, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(from));
	ScanKeyInit(&key[2], Anum_runs_created_snapshot, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(to));
	return systable_beginscan_ordered(crel, *irel, snapshot, 3, key);
}

void
cat_runs_of_snapshots_end(SysScanDesc scan, Relation irel)
{
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
}

/*
 * The changelog and delta runs (and data runs written by commits) created
 * by snapshots in (from, to], in snapshot then run order.
 */
List *
cat_runs_of_snapshots(Oid relid, int64 from, int64 to, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	Relation	irel;
	SysScanDesc scan = cat_runs_of_snapshots_begin(crel, &irel, relid, from, to, snapshot);
	HeapTuple	tup;
	List	   *result = NIL;

	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		RunInfo    *r = cat_run_from_tuple(crel, tup);

		if ((r->kind != RUN_DATA || r->from_commit) && r->kind != RUN_LOG)
			result = lappend(result, r);
	}
	cat_runs_of_snapshots_end(scan, irel);
	table_close(crel, AccessShareLock);
	return result;
}

RunInfo *
cat_run_from_tuple(Relation crel, HeapTuple tup)
{
	Datum		v[Natts_runs];
	bool		n[Natts_runs];
	RunInfo    *r = palloc0(sizeof(RunInfo));

	heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
	r->run_id = DatumGetInt64(v[Anum_runs_run_id - 1]);
	r->relfilenode = DatumGetObjectId(v[Anum_runs_relfilenode - 1]);
	r->level = DatumGetInt32(v[Anum_runs_level - 1]);
	{
		char	   *kind = TextDatumGetCString(v[Anum_runs_kind - 1]);

		r->kind = strcmp(kind, "changelog") == 0 ? RUN_CHANGELOG :
			strcmp(kind, "delta") == 0 ? RUN_DELTA :
			strcmp(kind, "log") == 0 ? RUN_LOG : RUN_DATA;
	}
	r->from_commit = DatumGetBool(v[Anum_runs_from_commit - 1]);
	r->start_block = (BlockNumber) DatumGetInt64(v[Anum_runs_start_block - 1]);
	r->nblocks = DatumGetInt32(v[Anum_runs_nblocks - 1]);
	r->record_count = DatumGetInt64(v[Anum_runs_record_count - 1]);
	r->size_bytes = DatumGetInt64(v[Anum_runs_size_bytes - 1]);
	r->row_base = DatumGetInt64(v[Anum_runs_row_base - 1]);
	r->min_seq = DatumGetInt64(v[Anum_runs_min_seq - 1]);
	r->max_seq = DatumGetInt64(v[Anum_runs_max_seq - 1]);
	r->index_offset = DatumGetInt64(v[Anum_runs_index_offset - 1]);
	r->bloom_offset = DatumGetInt64(v[Anum_runs_bloom_offset - 1]);
	r->created_snapshot = DatumGetInt64(v[Anum_runs_created_snapshot - 1]);
	r->min_key = n[Anum_runs_min_key - 1] ? NULL : TextDatumGetCString(v[Anum_runs_min_key - 1]);
	r->max_key = n[Anum_runs_max_key - 1] ? NULL : TextDatumGetCString(v[Anum_runs_max_key - 1]);
	if (RelationGetDescr(crel)->natts >= Anum_runs_stream && !n[Anum_runs_stream - 1])
	{
		bytea	   *b = DatumGetByteaPP(v[Anum_runs_stream - 1]);

		r->stream_len = VARSIZE_ANY_EXHDR(b);
		r->stream = palloc(r->stream_len);
		memcpy(r->stream, VARDATA_ANY(b), r->stream_len);
	}
	return r;
}

void
cat_run_insert(Oid relid, const RunInfo *r)
{
	Relation	crel;
	Datum		v[Natts_runs];
	bool		n[Natts_runs] = {0};

	cat_note_change(relid, true);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	v[Anum_runs_relid - 1] = ObjectIdGetDatum(relid);
	v[Anum_runs_run_id - 1] = Int64GetDatum(r->run_id);
	v[Anum_runs_relfilenode - 1] = ObjectIdGetDatum(r->relfilenode);
	v[Anum_runs_level - 1] = Int32GetDatum(r->level);
	v[Anum_runs_kind - 1] = CStringGetTextDatum(cat_run_kinds[r->kind]);
	v[Anum_runs_from_commit - 1] = BoolGetDatum(r->from_commit);
	v[Anum_runs_start_block - 1] = Int64GetDatum((int64) r->start_block);
	v[Anum_runs_nblocks - 1] = Int32GetDatum(r->nblocks);
	v[Anum_runs_record_count - 1] = Int64GetDatum(r->record_count);
	v[Anum_runs_size_bytes - 1] = Int64GetDatum(r->size_bytes);
	v[Anum_runs_row_base - 1] = Int64GetDatum(r->row_base);
	v[Anum_runs_min_seq - 1] = Int64GetDatum(r->min_seq);
	v[Anum_runs_max_seq - 1] = Int64GetDatum(r->max_seq);
	v[Anum_runs_index_offset - 1] = Int64GetDatum(r->index_offset);
	v[Anum_runs_bloom_offset - 1] = Int64GetDatum(r->bloom_offset);
	v[Anum_runs_created_snapshot - 1] = Int64GetDatum(r->created_snapshot);
	if (r->min_key)
		v[Anum_runs_min_key - 1] = CStringGetTextDatum(r->min_key);
	else
		n[Anum_runs_min_key - 1] = true;
	if (r->max_key)
		v[Anum_runs_max_key - 1] = CStringGetTextDatum(r->max_key);
	else
		n[Anum_runs_max_key - 1] = true;
	if (r->stream)
	{
		if (RelationGetDescr(crel)->natts < Anum_runs_stream)
			elog(ERROR, "run %lld has no pages, and the catalog no column for its bytes",
				 (long long) r->run_id);
		v[Anum_runs_stream - 1] = PointerGetDatum(cat_stream_bytea(r));
	}
	else
		n[Anum_runs_stream - 1] = true;
	CatalogTupleInsert(crel, heap_form_tuple(RelationGetDescr(crel), v, n));
	table_close(crel, RowExclusiveLock);
	/* the rest of the commit or compaction finds it */
	CommandCounterIncrement();
}

/* a compaction's input run: its row goes, its blocks stay until VACUUM */
void
cat_run_delete(Oid relid, int64 run_id)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;

	cat_note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);

	/*
	 * A data run kept in its snapshot's row (a negative id) has no row of
	 * its own unless expiration moved it to one: its bytes go with the
	 * snapshot's row.
	 */
	scan = run_id < 0 ? cat_run_row_find(crel, relid, run_id, GetLatestSnapshot(), &tup) :
		run_row(crel, relid, run_id, &tup);
	if (HeapTupleIsValid(tup))
		CatalogTupleDelete(crel, &tup->t_self);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
}

int64
cat_next_run_id(void)
{
	return nextval_internal(cat_oid("run_id_seq", false), false);
}

/*
 * Block extents [start, start + nblocks) that runs of relid in storage
 * relfilenode occupy or may still be read from: every row still in the
 * catalog (dead rows too: a standby or an old snapshot may read them until
 * VACUUM removes the row), except rows of transactions that aborted or
 * crashed, which nobody ever saw.  List of (start, nblocks) int lists.
 *
 * The scan must not skip index entries marked killed: an index scan of
 * the primary marks an entry so once no snapshot *of the primary* can see
 * its row, without any WAL record a standby would resolve a conflict by,
 * while a standby query may still be reading the run.  Only removing the
 * row (VACUUM, pruning) or the entry (btree deletion) tells the standby,
 * by a conflict that cancels such queries first.
 */
List *
cat_used_extents(Oid relid, Oid relfilenode)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "runs", relid, SnapshotAny);
	HeapTuple	tup;
	List	   *extents = NIL;

	if (scan->iscan)
		scan->iscan->ignore_killed_tuples = false;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		BlockNumber start;
		int32		nblocks;

		if (cat_inserter_aborted(tup))
			continue;			/* aborted or crashed: never visible */
		if (DatumGetObjectId(heap_getattr(tup, Anum_runs_relfilenode,
										  RelationGetDescr(crel), &isnull)) != relfilenode)
			continue;
		start = (BlockNumber) DatumGetInt64(heap_getattr(tup, Anum_runs_start_block,
														 RelationGetDescr(crel), &isnull));
		nblocks = DatumGetInt32(heap_getattr(tup, Anum_runs_nblocks,
											 RelationGetDescr(crel), &isnull));
		extents = lappend(extents, list_make2_int(start, nblocks));
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return extents;
}

static int
block_cmp(const void *a, const void *b)
{
	BlockNumber ba = *(const BlockNumber *) a;
	BlockNumber bb = *(const BlockNumber *) b;

	return (ba > bb) - (ba < bb);
}

/*
 * Prune the catalog pages that hold rows of relid's runs deleted by
 * transactions no snapshot can see past any more, as reading a full page
 * does (heap_page_prune, WAL-logged with the horizon standbys resolve
 * conflicts by), whether the page is full or not: the blocks of those runs
 * are then free for cat_used_extents, without waiting for the catalog's
 * next VACUUM.  A page another backend has pinned is left to VACUUM.
 * Returns true when rows deleted by such transactions are still visible to
 * some snapshot, or a page was pinned: a later call may find more.
 */
bool
cat_prune_runs(Oid relid)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "runs", relid, SnapshotAny);
	GlobalVisState *vistest = GlobalVisTestFor(crel);
	HeapTuple	tup;
	BlockNumber *blocks = NULL;
	int			nblocks = 0;
	int			capacity = 0;
	bool		pending = false;

	if (RecoveryInProgress())
	{
		systable_endscan(scan);
		table_close(crel, AccessShareLock);
		return false;
	}
	if (scan->iscan)
		scan->iscan->ignore_killed_tuples = false;
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		HeapTupleHeader h = tup->t_data;
		TransactionId xmax;

		if ((h->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask) ||
			(h->t_infomask & HEAP_XMAX_IS_MULTI))
			continue;
		xmax = HeapTupleHeaderGetRawXmax(h);
		if (!GlobalVisTestIsRemovableXid(vistest, xmax))
		{
			pending = true;
			continue;
		}
		if (nblocks == capacity)
		{
			capacity = Max(64, capacity * 2);
			blocks = blocks ? repalloc(blocks, sizeof(BlockNumber) * capacity) :
				palloc(sizeof(BlockNumber) * capacity);
		}
		blocks[nblocks++] = ItemPointerGetBlockNumber(&tup->t_self);
	}
	systable_endscan(scan);

	if (nblocks > 0)
		qsort(blocks, nblocks, sizeof(BlockNumber), block_cmp);
	for (int i = 0; i < nblocks; i++)
	{
		Buffer		buf;

		if (i > 0 && blocks[i] == blocks[i - 1])
			continue;
		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(crel, blocks[i]);
		if (ConditionalLockBufferForCleanup(buf))
		{
			compat_prune_page(crel, buf, vistest);
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		else
			pending = true;
		ReleaseBuffer(buf);
	}
	table_close(crel, AccessShareLock);
	return pending;
}
