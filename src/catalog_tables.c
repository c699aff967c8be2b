/*-------------------------------------------------------------------------
 *
 * catalog_tables.c
 *	  A table's row of pkchangelog.tables: its counters and data run list
 *	  (TableState), read and written under the commit lock, with the small
 *	  commits since its last write folded in from the commit log (a small
 *	  commit writes no tables row); the row version a snapshot sees; and
 *	  which data runs are a none commit's deltas.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/indexing.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"

#include "catalog_tables.h"
#include "commit_log.h"
#include "pg_compat.h"

/* the data_runs column: an int8[] of run ids */
static Datum
run_ids_datum(const int64 *ids, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(ids[i]);
	return PointerGetDatum(construct_array(elems, n, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static void
run_ids_from_datum(Datum d, int64 **ids, int *n)
{
	Datum	   *elems;

	deconstruct_array(DatumGetArrayTypeP(d), INT8OID, sizeof(int64),
					  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, NULL, n);
	*ids = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		(*ids)[i] = DatumGetInt64(elems[i]);
}

/* a commit's or compaction's new data runs, for cat_table_state_update */
void
cat_table_state_set_runs(TableState *st, List *runs)
{
	ListCell   *lc;

	st->ndata_runs = 0;
	st->data_runs = palloc(sizeof(int64) * Max(list_length(runs), 1));
	foreach(lc, runs)
		st->data_runs[st->ndata_runs++] = ((RunInfo *) lfirst(lc))->run_id;
}

/*
 * The version of relid's tables row at hint, if snapshot sees that one
 * there (a copy), else NULL.  The hint is a TID another backend published
 * for the version it wrote (run_list.c): checked, not trusted.  A snapshot
 * sees one version of the row at most, so a visible tuple of relid is it,
 * whatever happened to the page since (pruning, VACUUM FULL); the fetch
 * skips the index and the row's chain of earlier versions, which every
 * commit lengthens.
 */
static HeapTuple
table_row_at(Relation crel, Oid relid, const ItemPointerData *hint,
			 Snapshot snapshot)
{
	HeapTupleData tuple;
	Buffer		buf;
	HeapTuple	copy = NULL;
	bool		isnull;

	if (hint == NULL || !ItemPointerIsValid(hint) ||
		!pk_block_exists(crel, ItemPointerGetBlockNumber(hint)))
		return NULL;
	tuple.t_self = *hint;
	if (heap_fetch(crel, snapshot, &tuple, &buf, true) &&
		DatumGetObjectId(heap_getattr(&tuple, Anum_tables_relid,
									  RelationGetDescr(crel), &isnull)) == relid)
		copy = heap_copytuple(&tuple);
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	return copy;
}

static HeapTuple
table_state_tuple(Relation crel, Oid relid, const ItemPointerData *hint)
{
	SysScanDesc scan;
	HeapTuple	tup;

	/* latest snapshot: the commit lock makes the latest committed row final */
	tup = table_row_at(crel, relid, hint, GetLatestSnapshot());
	if (tup)
		return tup;
	scan = cat_scan(crel, "tables", relid, GetLatestSnapshot());
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		tup = heap_copytuple(tup);
	systable_endscan(scan);
	return tup;
}

static TableState
state_from_tuple(Relation crel, HeapTuple tup)
{
	Datum		values[Natts_tables];
	bool		nulls[Natts_tables];
	TableState	st;

	heap_deform_tuple(tup, RelationGetDescr(crel), values, nulls);
	st.last_snapshot_id = DatumGetInt64(values[Anum_tables_last_snapshot_id - 1]);
	st.last_seq = DatumGetInt64(values[Anum_tables_last_seq - 1]);
	st.total_record_count = DatumGetInt64(values[Anum_tables_total_record_count - 1]);
	st.last_full_compaction = DatumGetInt64(values[Anum_tables_last_full_compaction - 1]);
	run_ids_from_datum(values[Anum_tables_data_runs - 1], &st.data_runs, &st.ndata_runs);
	st.commits = DatumGetInt64(values[Anum_tables_commits - 1]);
	st.log_run = RelationGetDescr(crel)->natts >= Anum_tables_log_block ?
		DatumGetInt64(values[Anum_tables_log_run - 1]) : 0;
	st.log_block = st.log_run != 0 ? DatumGetInt64(values[Anum_tables_log_block - 1]) : 0;
	st.row = tup->t_self;
	st.row_snapshot_id = st.last_snapshot_id;
	return st;
}

/* st, with one more commit folded in: its snapshot, run, rows */
static void
fold_one(TableState *st, int *nalloc, int64 snapshot_id, int64 seq, int64 delta)
{
	if (*nalloc == 0)
	{
		int64	   *ids;

		*nalloc = st->ndata_runs + CAT_TABLE_FOLD_MAX;
		ids = palloc(sizeof(int64) * *nalloc);
		memcpy(ids, st->data_runs, sizeof(int64) * st->ndata_runs);
		st->data_runs = ids;
	}
	else if (st->ndata_runs == *nalloc)
	{
		*nalloc *= 2;
		st->data_runs = repalloc(st->data_runs, sizeof(int64) * *nalloc);
	}
	st->last_snapshot_id = snapshot_id;
	st->data_runs[st->ndata_runs++] = -snapshot_id;
	st->last_seq = Max(st->last_seq, seq);
	st->total_record_count += delta;
	st->commits++;
}

/* a commit folded into a table's state: what fold_one adds */
typedef struct FoldedCommit
{
	int64		snapshot_id;
	int64		seq;
	int64		delta;
} FoldedCommit;

static List *
folded_add(List *list, int64 snapshot_id, int64 seq, int64 delta)
{
	FoldedCommit *f = palloc(sizeof(FoldedCommit));

	f->snapshot_id = snapshot_id;
	f->seq = seq;
	f->delta = delta;
	return lappend(list, f);
}

static int
folded_cmp(const ListCell *a, const ListCell *b)
{
	int64		ia = ((FoldedCommit *) lfirst(a))->snapshot_id;
	int64		ib = ((FoldedCommit *) lfirst(b))->snapshot_id;

	return (ia > ib) - (ia < ib);
}

/*
 * fold_commits' part for the commit log: the records after the table's
 * row, added to folded
 */
static List *
fold_logged(Oid relid, Snapshot snapshot, const TableState *st, List *folded)
{
	Relation	rel = RelationIdGetRelation(relid);
	RunInfo		page = {0};
	ListCell   *lc;

	if (!RelationIsValid(rel))
		return folded;
	/* the row names the page by its block: none if not of this file */
	if (!commit_log_page_current(rel, (BlockNumber) st->log_block))
	{
		RelationClose(rel);
		return folded;
	}
	page.run_id = st->log_run;
	page.kind = RUN_LOG;
	page.relfilenode = RelationFileNumber(rel);
	page.start_block = (BlockNumber) st->log_block;
	page.nblocks = 1;
	foreach(lc, commit_log_read_folds(rel, &page, st->row_snapshot_id, st, snapshot))
	{
		CommitFold *f = lfirst(lc);

		if (f->has_data)		/* (a logged commit always has one) */
			folded = folded_add(folded, f->snapshot_id, f->seq, f->delta_record_count);
	}
	RelationClose(rel);
	return folded;
}

/*
 * st, read from a version of relid's tables row, with the commits made
 * since that snapshot sees.  A commit that adds one data run, kept in its
 * snapshot's row, and nothing else does not write the table's row
 * (cat_table_state_folds): its snapshot's row, past the table row's last
 * snapshot, or since catalog 0.11 its commit log record, says all it
 * changed (its id, its run and its sequence number, its rows, one more
 * commit).  Every other write of the table's row (a
 * compaction, a TRUNCATE, a larger commit) writes the folded state, so at
 * most CAT_TABLE_FOLD_MAX snapshot rows are read here.
 */
static void
fold_commits(Oid relid, Snapshot snapshot, TableState *st)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(crel);
	Relation	irel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	int			nalloc = 0;
	List	   *folded = NIL;
	ListCell   *lc;

	if (desc->natts < Anum_snapshots_data_max_key)
	{
		table_close(crel, AccessShareLock);
		return;
	}
	irel = index_open(cat_index_oid("snapshots"), AccessShareLock);
	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(st->last_snapshot_id));
	scan = systable_beginscan_ordered(crel, irel, snapshot, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		isnull;
		int64		seq = DatumGetInt64(heap_getattr(tup, Anum_snapshots_data_seq, desc, &isnull));

		if (isnull)
			continue;			/* cannot be: such a commit writes the row */
		folded = folded_add(folded,
							DatumGetInt64(heap_getattr(tup, Anum_snapshots_snapshot_id,
													   desc, &isnull)),
							seq,
							DatumGetInt64(heap_getattr(tup, Anum_snapshots_delta_record_count,
													   desc, &isnull)));
	}
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
	table_close(crel, AccessShareLock);
	/* and the small commits' records in the commit log, in id order */
	if (st->log_run != 0)
	{
		folded = fold_logged(relid, snapshot, st, folded);
		list_sort(folded, folded_cmp);
	}
	foreach(lc, folded)
	{
		FoldedCommit *f = lfirst(lc);

		fold_one(st, &nalloc, f->snapshot_id, f->seq, f->delta);
	}
}

/*
 * May st, the state after a commit step that added one data run, kept in
 * its snapshot's row, and nothing else, stay out of the table's row
 * (fold_commits)?  While fewer than CAT_TABLE_FOLD_MAX commits are folded.
 */
bool
cat_table_state_folds(const TableState *st)
{
	return st->last_snapshot_id - st->row_snapshot_id < CAT_TABLE_FOLD_MAX;
}

/* the counters as last committed, without the commit lock (zero if none) */
TableState
cat_table_state_peek(Oid relid)
{
	Relation	crel = cat_open(CAT_TABLES, AccessShareLock);
	HeapTuple	tup = table_state_tuple(crel, relid, NULL);
	TableState	st = {0};

	if (HeapTupleIsValid(tup))
	{
		st = state_from_tuple(crel, tup);
		fold_commits(relid, GetLatestSnapshot(), &st);
	}
	table_close(crel, AccessShareLock);
	return st;
}

/*
 * Which version of relid's pkchangelog.tables row snapshot sees: the xid
 * that wrote it, and its contents.  Every commit and compaction that
 * changes the table's runs writes a new version under the commit lock, so
 * the version names the data runs the snapshot sees (run_list.c).  False
 * if the snapshot sees no row (the table has never committed a run).
 * hint (NULL: none): where a version was published (table_row_at).
 */
bool
cat_table_version(Oid relid, Snapshot snapshot, const ItemPointerData *hint,
				  TransactionId *xmin, TableState *st)
{
	if (!cat_table_row_version(relid, snapshot, hint, xmin, st))
		return false;
	fold_commits(relid, snapshot, st);
	return true;
}

/* the same, without the commits folded after the row (st: the row's) */
bool
cat_table_row_version(Oid relid, Snapshot snapshot, const ItemPointerData *hint,
				  TransactionId *xmin, TableState *st)
{
	Relation	crel = cat_open(CAT_TABLES, AccessShareLock);
	HeapTuple	tup = table_row_at(crel, relid, hint, snapshot);
	SysScanDesc scan = NULL;

	if (tup == NULL)
	{
		scan = cat_scan(crel, "tables", relid, snapshot);
		tup = systable_getnext(scan);
	}
	if (HeapTupleIsValid(tup))
	{
		*xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
		*st = state_from_tuple(crel, tup);
	}
	if (scan)
		systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return HeapTupleIsValid(tup);
}

/*
 * The counters of a table, creating its row on first use.  Caller holds the
 * commit lock.  hint (NULL: none): where a version was published.
 */
TableState
cat_table_state(Oid relid, const ItemPointerData *hint)
{
	Relation	crel = cat_open(CAT_TABLES, RowExclusiveLock);
	HeapTuple	tup = table_state_tuple(crel, relid, hint);
	TableState	st = {0};

	if (HeapTupleIsValid(tup))
	{
		st = state_from_tuple(crel, tup);
		fold_commits(relid, GetLatestSnapshot(), &st);
	}
	else
	{
		Datum		values[Natts_tables] = {0};
		bool		nulls[Natts_tables] = {0};

		values[Anum_tables_relid - 1] = ObjectIdGetDatum(relid);
		values[Anum_tables_data_runs - 1] = run_ids_datum(NULL, 0);
		tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
		CatalogTupleInsert(crel, tup);
		st.row = tup->t_self;
		CommandCounterIncrement();
	}
	table_close(crel, RowExclusiveLock);
	return st;
}

/*
 * Writes of tables rows by this backend, numbered from 1: each table's
 * last one.  A cache that publishes the version a write made (run_list.c,
 * as the transaction's commit becomes visible) checks that no later write
 * of the transaction replaced it.
 */
typedef struct TableWrite
{
	Oid			relid;
	uint64		writeno;
	TransactionId xid;			/* the top transaction that wrote it */
} TableWrite;

static HTAB *table_writes = NULL;
static uint64 table_writes_made = 0;

static void
note_table_write(Oid relid)
{
	TableWrite *w;

	if (table_writes == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TableWrite);
		table_writes = hash_create("pkchangelog tables row writes", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS);
	}
	w = hash_search(table_writes, &relid, HASH_ENTER, NULL);
	w->writeno = ++table_writes_made;
	w->xid = GetTopTransactionIdIfAny();
}

/*
 * Has this transaction written relid's tables row (or a subtransaction of
 * it, even one rolled back)?
 */
bool
cat_table_written_here(Oid relid)
{
	TableWrite *w = table_writes ?
		hash_search(table_writes, &relid, HASH_FIND, NULL) : NULL;

	return w != NULL && TransactionIdIsValid(w->xid) &&
		w->xid == GetTopTransactionIdIfAny();
}

/* the number of this backend's last write of relid's tables row (0: none) */
uint64
cat_table_last_write(Oid relid)
{
	TableWrite *w = table_writes ?
		hash_search(table_writes, &relid, HASH_FIND, NULL) : NULL;

	return w ? w->writeno : 0;
}

/*
 * The table's state, written into its row first if commits are folded
 * after it (fold_commits), so that their snapshots' rows may go (a
 * TRUNCATE, expiration).  Caller holds the commit lock.
 */
TableState
cat_table_state_settle(Oid relid)
{
	TableState	st = cat_table_state_peek(relid);

	if (ItemPointerIsValid(&st.row) && st.last_snapshot_id != st.row_snapshot_id)
		cat_table_state_update(relid, &st);
	return st;
}

/*
 * Write st as the table's new row version, over the version cat_table_state
 * read it from (under the commit lock, still the latest: an update of any
 * other fails).  st then names the new version.
 */
void
cat_table_state_update(Oid relid, TableState *st)
{
	Relation	crel = cat_open(CAT_TABLES, RowExclusiveLock);
	Datum		values[Natts_tables];
	bool		nulls[Natts_tables] = {0};
	HeapTuple	newtup;

	if (!ItemPointerIsValid(&st->row))
		elog(ERROR, "pkchangelog.tables row of relation %u was not read", relid);
	values[Anum_tables_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_tables_last_snapshot_id - 1] = Int64GetDatum(st->last_snapshot_id);
	values[Anum_tables_last_seq - 1] = Int64GetDatum(st->last_seq);
	values[Anum_tables_total_record_count - 1] = Int64GetDatum(st->total_record_count);
	values[Anum_tables_last_full_compaction - 1] = Int64GetDatum(st->last_full_compaction);
	values[Anum_tables_data_runs - 1] = run_ids_datum(st->data_runs, st->ndata_runs);
	values[Anum_tables_commits - 1] = Int64GetDatum(st->commits);
	values[Anum_tables_log_run - 1] = Int64GetDatum(st->log_run);
	values[Anum_tables_log_block - 1] = Int64GetDatum(st->log_block);
	newtup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleUpdate(crel, &st->row, newtup);
	st->row = newtup->t_self;
	st->row_snapshot_id = st->last_snapshot_id;
	note_table_write(relid);
	table_close(crel, RowExclusiveLock);
	/* later reads in this transaction (another commit step) see it */
	CommandCounterIncrement();
}

/*
 * Is a run whose row says data (from_commit, created_snapshot: of that
 * row) a delta: a commit's run that compaction replaced and kept for
 * producer none's stream without touching its row?  It is when the
 * version st of the table's row, at or after the run's snapshot, does not
 * name it.
 */
bool
cat_data_run_is_delta(const TableState *st, int64 run_id, bool from_commit,
				  int64 created_snapshot)
{
	if (!from_commit || created_snapshot <= 0 || created_snapshot > st->last_snapshot_id)
		return false;
	for (int i = 0; i < st->ndata_runs; i++)
		if (st->data_runs[i] == run_id)
			return false;
	return true;
}

/*
 * Is a row of pkchangelog.runs a live data run, by what it says and by st,
 * a version of the table's row at or after the run's snapshot (not a
 * changelog run, not a delta retired or told by cat_data_run_is_delta)?
 */
bool
cat_row_is_live_data(Relation crel, HeapTuple tup, const TableState *st)
{
	TupleDesc	desc = RelationGetDescr(crel);
	bool		isnull;

	return strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind, desc, &isnull)),
				  cat_run_kinds[RUN_DATA]) == 0 &&
		!cat_data_run_is_delta(st,
						   DatumGetInt64(heap_getattr(tup, Anum_runs_run_id, desc, &isnull)),
						   DatumGetBool(heap_getattr(tup, Anum_runs_from_commit, desc, &isnull)),
						   DatumGetInt64(heap_getattr(tup, Anum_runs_created_snapshot, desc, &isnull)));
}

/*
 * TRUNCATE: the table's runs are gone with its old storage, and with them
 * the changes of every snapshot so far, which therefore expire.  Caller
 * holds the commit lock.
 */
void
cat_truncate(Oid relid)
{
	/*
	 * The commits folded into the table's state (fold_commits) are told by
	 * snapshot rows about to go: the row takes them first, so that
	 * snapshot ids and commit counts go on from them.
	 */
	(void) cat_table_state_settle(relid);
	cat_note_change(relid, false);
	cat_delete_rows("runs", relid, false);
	cat_delete_rows("snapshots", relid, false);
	CommandCounterIncrement();
}
