/*-------------------------------------------------------------------------
 *
 * catalog_snapshots.c
 *	  A table's snapshots: the rows of pkchangelog.snapshots merged with the
 *	  records of its commit log (small commits' snapshots, on log pages of
 *	  the table's own file, commit_log.c), in snapshot id order; a commit's
 *	  snapshot row, with the runs it keeps in it; and expiration of rows and
 *	  records.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "catalog_runs.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "commit_log.h"
#include "pg_compat.h"
#include "run_publish.h"
#include "tid.h"

static RunInfo *logged_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot);

/*
 * The storage relid has now, which a run without pages belongs to whatever
 * storage it was written in.  A caller that reads the run holds a lock on
 * the table; pk_runs, which lists runs without one, may find the table
 * dropped meanwhile (InvalidOid: it does not show the storage).
 */
static Oid
current_relfilenode(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	Oid			relfilenode;

	if (!RelationIsValid(rel))
		return InvalidOid;
	relfilenode = RelationFileNumber(rel);
	RelationClose(rel);
	return relfilenode;
}

/*
 * A run a snapshot's row holds in its column anum (v: the deformed row):
 * stored compact (run_format.h), its row count is its block's, which
 * the block's CRC covers when the run is read.  It has no pages, so
 * it is in the table's current storage.
 */
static RunInfo *
snapshot_run(const Datum *v, int anum, RunKind kind)
{
	bytea	   *b = DatumGetByteaPCopy(v[anum - 1]);
	RunInfo    *r = palloc0(sizeof(RunInfo));

	r->kind = kind;
	r->in_snapshot_row = true;
	r->created_snapshot = DatumGetInt64(v[Anum_snapshots_snapshot_id - 1]);
	r->relfilenode = current_relfilenode(DatumGetObjectId(v[Anum_snapshots_relid - 1]));
	r->stream = VARDATA(b);
	r->stream_len = VARSIZE(b) - VARHDRSZ;
	r->size_bytes = r->stream_len;
	r->record_count = run_compact_nrows(r->stream, r->stream_len);
	return r;
}

/* the changelog run a snapshot's row holds (v, n: the deformed row), or NULL */
static RunInfo *
snapshot_changelog(Relation crel, const Datum *v, const bool *n)
{
	RunInfo    *r;

	if (RelationGetDescr(crel)->natts < Anum_snapshots_changelog ||
		n[Anum_snapshots_changelog_run_id - 1] || n[Anum_snapshots_changelog - 1])
		return NULL;
	r = snapshot_run(v, Anum_snapshots_changelog, RUN_CHANGELOG);
	r->run_id = DatumGetInt64(v[Anum_snapshots_changelog_run_id - 1]);
	return r;
}

/*
 * The data run kept in a snapshot's row (values v, nulls n of crel, the
 * snapshots table), or NULL.  Its run id is minus the snapshot's id.
 */
RunInfo *
cat_snapshot_data(Relation crel, const Datum *v, const bool *n)
{
	RunInfo    *r;

	if (RelationGetDescr(crel)->natts < Anum_snapshots_data_max_key ||
		n[Anum_snapshots_data - 1] || n[Anum_snapshots_data_seq - 1])
		return NULL;
	r = snapshot_run(v, Anum_snapshots_data, RUN_DATA);
	r->run_id = -r->created_snapshot;
	r->from_commit = true;
	r->row_base = pk_inline_row_base(r->run_id);
	r->min_seq = r->max_seq = DatumGetInt64(v[Anum_snapshots_data_seq - 1]);
	if (!n[Anum_snapshots_data_min_key - 1])
		r->min_key = TextDatumGetCString(v[Anum_snapshots_data_min_key - 1]);
	if (!n[Anum_snapshots_data_max_key - 1])
		r->max_key = TextDatumGetCString(v[Anum_snapshots_data_max_key - 1]);
	return r;
}

/*
 * The data run kept in relid's snapshot snapshot_id's row as snapshot sees
 * it (NULL: no such row, or none in it).
 */
RunInfo *
cat_snapshot_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	RunInfo    *r = NULL;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(snapshot_id));
	scan = systable_beginscan(crel, cat_index_oid("snapshots"), true, snapshot, 2, key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];

		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		r = cat_snapshot_data(crel, v, n);
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	/* a small commit's snapshot is a record of the commit log */
	if (!HeapTupleIsValid(tup))
		r = logged_data_run(relid, snapshot_id, snapshot);
	return r;
}

/*
 * ---- small commits' snapshots, in the commit log (commit_log.c) ----
 *
 * The functions that show a table's snapshots to every role take no lock
 * of it, so the log's pages are read through the relation's cache entry
 * alone (RelationIdGetRelation): the pages of the file the catalog names,
 * which a TRUNCATE or DROP committing meanwhile removes (the read then
 * fails with an error; it never reads another table's pages).
 */

/*
 * Is a row of pkchangelog.runs a log page of rel's current file?  One of
 * another file, which an MVCC snapshot sees, is a page that a TRUNCATE or
 * VACUUM FULL committed since the snapshot replaced: its records cannot be
 * read any more, and leaving them out would hide snapshots.
 */
static bool
row_is_log_of(Relation crel, HeapTuple tup, Relation rel, Snapshot snapshot)
{
	bool		isnull;

	if (strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
												RelationGetDescr(crel), &isnull)),
			   cat_run_kinds[RUN_LOG]) != 0)
		return false;
	if (DatumGetObjectId(heap_getattr(tup, Anum_runs_relfilenode,
									  RelationGetDescr(crel), &isnull)) == RelationFileNumber(rel))
		return true;
	if (IsMVCCSnapshot(snapshot))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not read the snapshots of pkmerge table \"%s\" as of this transaction's snapshot",
						RelationGetRelationName(rel)),
				 errdetail("A TRUNCATE or VACUUM FULL of the table committed after the snapshot was taken."),
				 errhint("Retry in a new transaction.")));
	return false;
}

/*
 * The first snapshot of the log page that holds snapshot id (the last one
 * that starts at or before it), or 0 if none does: searched backwards from
 * it, without reading the table's older runs.
 */
static int64
log_page_start(Relation rel, int64 id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	Relation	irel;
	SysScanDesc scan = cat_runs_of_snapshots_begin(crel, &irel, RelationGetRelid(rel),
											   PG_INT64_MIN, id, snapshot);
	HeapTuple	tup;
	int64		start = 0;

	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, BackwardScanDirection)))
	{
		bool		isnull;

		if (row_is_log_of(crel, tup, rel, snapshot) &&
			!(snapshot == SnapshotAny && cat_inserter_aborted(tup)))
		{
			start = DatumGetInt64(heap_getattr(tup, Anum_runs_created_snapshot,
											   RelationGetDescr(crel), &isnull));
			break;
		}
	}
	cat_runs_of_snapshots_end(scan, irel);
	table_close(crel, AccessShareLock);
	return start;
}

/*
 * A scan of the log runs of rel's current file that may hold records in
 * (from, to], in order (log_pages_next): a page holds none of them once the
 * next one starts at or before from + 1.  With SnapshotAny, one version of
 * each row.  Pages are returned as the scan goes, so a caller that needs
 * the first few records does not read the rows of every later page.
 */
typedef struct LogPageScan
{
	Relation	rel;
	Relation	crel;
	Relation	irel;
	SysScanDesc scan;
	Snapshot	snapshot;
	int64		from;
	RunInfo    *held;			/* read, not returned yet */
	bool		done;			/* the index scan ended (asking again restarts it) */
} LogPageScan;

static void
log_pages_begin(LogPageScan *s, Relation rel, int64 from, int64 to, Snapshot snapshot)
{
	int64		start = from > 0 ? log_page_start(rel, from + 1, snapshot) : 0;

	s->rel = rel;
	s->snapshot = snapshot;
	s->from = from;
	s->held = NULL;
	s->done = false;
	s->crel = cat_open(CAT_RUNS, AccessShareLock);
	s->scan = cat_runs_of_snapshots_begin(s->crel, &s->irel, RelationGetRelid(rel),
									  start > 0 ? start - 1 : PG_INT64_MIN, to, snapshot);
}

/* the next page, or NULL */
static RunInfo *
log_pages_next(LogPageScan *s)
{
	HeapTuple	tup;

	while (!s->done &&
		   HeapTupleIsValid(tup = systable_getnext_ordered(s->scan, ForwardScanDirection)))
	{
		RunInfo    *r;
		RunInfo    *prev = s->held;

		if (!row_is_log_of(s->crel, tup, s->rel, s->snapshot) ||
			(s->snapshot == SnapshotAny && cat_inserter_aborted(tup)))
			continue;
		r = cat_run_from_tuple(s->crel, tup);
		s->held = r;
		/* another version of the held page, or one that ends before from */
		if (prev != NULL && prev->run_id != r->run_id && r->created_snapshot > s->from + 1)
			return prev;
	}
	/* the last page */
	{
		RunInfo    *last = s->held;

		s->done = true;
		s->held = NULL;
		return last;
	}
}

static void
log_pages_end(LogPageScan *s)
{
	cat_runs_of_snapshots_end(s->scan, s->irel);
	table_close(s->crel, AccessShareLock);
}

/* every page log_pages_next returns, as a list */
static List *
log_runs_between(Relation rel, int64 from, int64 to, Snapshot snapshot)
{
	LogPageScan s;
	RunInfo    *r;
	List	   *result = NIL;

	log_pages_begin(&s, rel, from, to, snapshot);
	while ((r = log_pages_next(&s)) != NULL)
		result = lappend(result, r);
	log_pages_end(&s);
	return result;
}

/*
 * The records of rel's log in (from, to] that snapshot sees, as
 * commit_log_read says (st: the table's state as an MVCC snapshot sees
 * it; NULL snapshot: those a table row the caller sees names), on the
 * pages pages_snapshot sees, in order, at most limit of them (-1: all).
 */
static List *
log_records(Relation rel, int64 from, int64 to, int limit, Snapshot snapshot,
			Snapshot pages_snapshot, const TableState *st)
{
	List	   *result = NIL;
	LogPageScan s;
	RunInfo    *page;

	log_pages_begin(&s, rel, from, to, pages_snapshot);
	while ((page = log_pages_next(&s)) != NULL)
	{
		bool		stopped;

		result = list_concat(result, commit_log_read(rel, page, from, to, st,
													 snapshot, &stopped));
		if (stopped || (limit >= 0 && list_length(result) >= limit))
			break;
	}
	log_pages_end(&s);
	if (limit >= 0 && list_length(result) > limit)
		result = list_truncate(result, limit);
	return result;
}

/*
 * The data run of relid's snapshot snapshot_id kept in its commit log
 * record, which a table row snapshot sees names (NULL: no such record).
 * SnapshotAny: the record's, if its transaction did not abort.
 */
static RunInfo *
logged_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot)
{
	Relation	rel;
	List	   *recs;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return NULL;
	recs = log_records(rel, snapshot_id - 1, snapshot_id, 1,
					   snapshot == SnapshotAny ? SnapshotAny : NULL, snapshot, NULL);
	RelationClose(rel);
	return recs != NIL ? ((CommitRecord *) linitial(recs))->data : NULL;
}

/*
 * The small commits' snapshots in (from, to] that snapshot sees, from the
 * commit log, as snapshots_scan returns them.
 */
List *
cat_logged_snapshots(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot,
				 bool with_changelog)
{
	Relation	rel;
	TableState	st = {0};
	TransactionId xmin;
	List	   *result = NIL;
	ListCell   *lc;
	ItemPointerData hint;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return NIL;
	/*
	 * the visibility rules need the row's snapshot, not the folded state
	 * (the version last published, if snapshot sees it: not its chain)
	 */
	if (!IsMVCCSnapshot(snapshot) ||
		cat_table_row_version(relid, snapshot,
							  run_publish_row(rel, &hint) ? &hint : NULL, &xmin, &st))
	{
		foreach(lc, log_records(rel, from, to, limit, snapshot, snapshot, &st))
		{
			CommitRecord *rec = lfirst(lc);
			SnapshotInfo *si = palloc(sizeof(SnapshotInfo));

			si->snapshot_id = rec->snapshot_id;
			si->kind = rec->kind;
			si->producer = pstrdup(prod_name(rec->producer));
			si->commit_time = rec->commit_time;
			si->changelog = with_changelog ? rec->changelog : NULL;
			si->data = with_changelog ? rec->data : NULL;
			result = lappend(result, si);
		}
	}
	RelationClose(rel);
	return result;
}

/*
 * Each small commit's snapshot of rel that snapshot sees, from the commit
 * log, in order, to cb (pkchangelog.log_snapshots): a page at a time, in
 * memory freed after each page, however many the table retains.
 */
void
cat_log_records_each(Relation rel, Snapshot snapshot,
					 void (*cb) (const CommitRecord *rec, void *arg), void *arg)
{
	TableState	st = {0};
	TransactionId xmin;
	LogPageScan s;
	RunInfo    *page;
	MemoryContext pagecxt;
	MemoryContext old;

	if (!cat_tables_hold_log() ||
		!cat_table_row_version(RelationGetRelid(rel), snapshot, NULL, &xmin, &st))
		return;
	pagecxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge commit log page",
									ALLOCSET_DEFAULT_SIZES);
	log_pages_begin(&s, rel, 0, PG_INT64_MAX, snapshot);
	while ((page = log_pages_next(&s)) != NULL)
	{
		bool		stopped;
		ListCell   *lc;

		old = MemoryContextSwitchTo(pagecxt);
		foreach(lc, commit_log_read(rel, page, 0, PG_INT64_MAX, &st, snapshot, &stopped))
			cb(lfirst(lc), arg);
		MemoryContextSwitchTo(old);
		MemoryContextReset(pagecxt);
		if (stopped)
			break;
	}
	log_pages_end(&s);
	MemoryContextDelete(pagecxt);
}

/* the snapshots of two lists in id order, merged: the first limit (-1: all) */
static List *
merge_snapshots(List *a, List *b, int limit)
{
	List	   *result = NIL;
	int			i = 0;
	int			j = 0;

	while ((i < list_length(a) || j < list_length(b)) &&
		   (limit < 0 || list_length(result) < limit))
	{
		SnapshotInfo *sa = i < list_length(a) ? list_nth(a, i) : NULL;
		SnapshotInfo *sb = j < list_length(b) ? list_nth(b, j) : NULL;

		if (sb == NULL || (sa != NULL && sa->snapshot_id < sb->snapshot_id))
		{
			result = lappend(result, sa);
			i++;
		}
		else
		{
			result = lappend(result, sb);
			j++;
		}
	}
	return result;
}

/*
 * After expiration went from snapshot from (every one up to it expired
 * before) up to snapshot upto: the log pages whose records all expired go
 * (their blocks are freed once VACUUM removes the rows), and the page that
 * holds the next keeps the first one retained.
 */
void
cat_log_expired(Oid relid, int64 from, int64 upto)
{
	Relation	rel;
	List	   *pages;
	RunInfo    *last;
	ListCell   *lc;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return;
	/* the pages that held snapshots in (from, upto + 1] */
	pages = log_runs_between(rel, from, upto + 1, GetLatestSnapshot());
	RelationClose(rel);
	if (pages == NIL)
		return;
	last = llast(pages);
	foreach(lc, pages)
	{
		RunInfo    *r = lfirst(lc);

		if (r != last)
			cat_run_delete(relid, r->run_id);
	}
	if (last->min_seq < upto + 1)
	{
		const int	attnums[] = {Anum_runs_min_seq};
		Datum		values[] = {Int64GetDatum(upto + 1)};

		cat_run_update(relid, last->run_id, 1, attnums, values, false);
	}
	CommandCounterIncrement();
}

/* a snapshot's row; what the change stream reads of it, for its writer */
SnapshotInfo *
cat_snapshot_insert(Oid relid, int64 snapshot_id, CommitKind kind,
					int64 total, int64 delta, int64 changelog,
					const char *producer, double duration_ms,
					RunInfo *changelog_run, RunInfo *data_run)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, RowExclusiveLock);
	Datum		values[Natts_snapshots];
	bool		nulls[Natts_snapshots] = {0};
	NameData	user;
	SnapshotInfo *si = palloc(sizeof(SnapshotInfo));

	si->snapshot_id = snapshot_id;
	si->kind = kind;
	si->producer = pstrdup(producer);
	si->commit_time = GetCurrentTimestamp();
	si->changelog = NULL;
	si->data = NULL;
	namestrcpy(&user, GetUserNameFromId(GetUserId(), false));
	/* text since catalog 0.10 */
	if (TupleDescAttr(RelationGetDescr(crel), Anum_snapshots_commit_user - 1)->atttypid == NAMEOID)
		values[Anum_snapshots_commit_user - 1] = NameGetDatum(&user);
	else
		values[Anum_snapshots_commit_user - 1] = CStringGetTextDatum(NameStr(user));
	values[Anum_snapshots_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_snapshots_snapshot_id - 1] = Int64GetDatum(snapshot_id);
	values[Anum_snapshots_commit_kind - 1] = CStringGetTextDatum(cat_commit_kind_name(kind));
	values[Anum_snapshots_commit_time - 1] = TimestampTzGetDatum(si->commit_time);
	values[Anum_snapshots_commit_xid - 1] = FullTransactionIdGetDatum(GetTopFullTransactionId());
	values[Anum_snapshots_total_record_count - 1] = Int64GetDatum(total);
	values[Anum_snapshots_delta_record_count - 1] = Int64GetDatum(delta);
	values[Anum_snapshots_changelog_record_count - 1] = Int64GetDatum(changelog);
	values[Anum_snapshots_producer - 1] = CStringGetTextDatum(producer);
	values[Anum_snapshots_duration_ms - 1] = Float8GetDatum(duration_ms);
	nulls[Anum_snapshots_changelog_run_id - 1] = nulls[Anum_snapshots_changelog - 1] = true;
	/* a commit's small changelog run (run_writer_allow_snapshot_row) */
	if (changelog_run && changelog_run->in_snapshot_row)
	{
		Assert(RelationGetDescr(crel)->natts >= Anum_snapshots_changelog);
		values[Anum_snapshots_changelog_run_id - 1] = Int64GetDatum(changelog_run->run_id);
		values[Anum_snapshots_changelog - 1] = PointerGetDatum(cat_stream_bytea(changelog_run));
		nulls[Anum_snapshots_changelog_run_id - 1] = nulls[Anum_snapshots_changelog - 1] = false;
		changelog_run->created_snapshot = snapshot_id;
		si->changelog = changelog_run;
	}
	for (int i = Anum_snapshots_data; i <= Anum_snapshots_data_max_key; i++)
		nulls[i - 1] = true;
	/* a commit's small data run (run_writer_allow_snapshot_row) */
	if (data_run && data_run->in_snapshot_row)
	{
		Assert(RelationGetDescr(crel)->natts >= Anum_snapshots_data_max_key &&
			   data_run->run_id == -snapshot_id);
		values[Anum_snapshots_data - 1] = PointerGetDatum(cat_stream_bytea(data_run));
		values[Anum_snapshots_data_seq - 1] = Int64GetDatum(data_run->max_seq);
		nulls[Anum_snapshots_data - 1] = nulls[Anum_snapshots_data_seq - 1] = false;
		if (data_run->min_key)
		{
			values[Anum_snapshots_data_min_key - 1] = CStringGetTextDatum(data_run->min_key);
			nulls[Anum_snapshots_data_min_key - 1] = false;
		}
		if (data_run->max_key)
		{
			values[Anum_snapshots_data_max_key - 1] = CStringGetTextDatum(data_run->max_key);
			nulls[Anum_snapshots_data_max_key - 1] = false;
		}
		si->data = data_run;
	}
	CatalogTupleInsert(crel, heap_form_tuple(RelationGetDescr(crel), values, nulls));
	table_close(crel, RowExclusiveLock);
	return si;
}

/* the snapshots in (from, to], as cat_snapshots_oldest and cat_snapshots_range say */
static List *
snapshots_scan(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot,
			   bool with_changelog)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	Relation	irel = index_open(cat_index_oid("snapshots"), AccessShareLock);
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;
	int			nlimit = limit;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(from));
	ScanKeyInit(&key[2], Anum_snapshots_snapshot_id, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(to));
	scan = systable_beginscan_ordered(crel, irel, snapshot, 3, key);
	while (limit != 0 && HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		SnapshotInfo *si;

		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		si = palloc(sizeof(SnapshotInfo));
		si->snapshot_id = DatumGetInt64(v[Anum_snapshots_snapshot_id - 1]);
		si->kind = strcmp(TextDatumGetCString(v[Anum_snapshots_commit_kind - 1]), "APPEND") == 0 ? COMMIT_APPEND :
			strcmp(TextDatumGetCString(v[Anum_snapshots_commit_kind - 1]), "COMPACT") == 0 ? COMMIT_COMPACT : COMMIT_OVERWRITE;
		si->producer = TextDatumGetCString(v[Anum_snapshots_producer - 1]);
		si->commit_time = DatumGetTimestampTz(v[Anum_snapshots_commit_time - 1]);
		si->changelog = with_changelog ? snapshot_changelog(crel, v, n) : NULL;
		si->data = with_changelog ? cat_snapshot_data(crel, v, n) : NULL;
		result = lappend(result, si);
		if (limit > 0)
			limit--;
	}
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
	table_close(crel, AccessShareLock);
	/* and the small commits', from the commit log */
	return merge_snapshots(result, cat_logged_snapshots(relid, from, to, nlimit, snapshot,
												   with_changelog), nlimit);
}

/*
 * The snapshots (id, commit kind, producer, changelog run kept in the
 * row) in (from, to] that snapshot sees, ascending; the first limit of
 * them (-1: all).
 */
List *
cat_snapshots_range(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot)
{
	return snapshots_scan(relid, from, to, limit, snapshot, true);
}

/*
 * The snapshots in (from, to] in id order, at most limit of them (-1: all),
 * read in index order: the oldest first, without reading the rest.  Their
 * changelog runs are left out (changelog NULL): expiration and counting
 * read many snapshots and none of their changes.
 */
List *
cat_snapshots_oldest(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot)
{
	return snapshots_scan(relid, from, to, limit, snapshot, false);
}

/*
 * Expire one snapshot: its row, and its changelog and delta runs (their
 * blocks are freed once VACUUM removes the rows).  Only that snapshot's
 * catalog rows are read.  The caller holds the compaction lock, so no
 * compaction retires or deletes runs meanwhile; commits only add runs of
 * newer snapshots: st, the table's row as the caller read it under that
 * lock, names every live data run of older snapshots.
 */
void
cat_snapshot_expire(Oid relid, int64 snapshot_id, const TableState *st)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, RowExclusiveLock);
	Relation	irel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(snapshot_id));
	scan = systable_beginscan(crel, cat_index_oid("snapshots"), true, GetLatestSnapshot(), 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		RunInfo    *data;

		found = true;

		/*
		 * The commit's data run kept in the row, still read by queries:
		 * into a row of its own (same run id) before the snapshot's goes.
		 */
		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		data = cat_snapshot_data(crel, v, n);
		if (data && !cat_data_run_is_delta(st, data->run_id, true, snapshot_id))
		{
			data->in_snapshot_row = false;
			cat_run_insert(relid, data);
		}
		CatalogTupleDelete(crel, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);

	/*
	 * A small commit's snapshot, a record of the commit log: its data run
	 * likewise, if still read; the record goes with its page
	 * (cat_log_expired).
	 */
	if (!found && !cat_data_run_is_delta(st, -snapshot_id, true, snapshot_id))
	{
		RunInfo    *data = logged_data_run(relid, snapshot_id, GetLatestSnapshot());

		if (data)
		{
			data->in_snapshot_row = false;
			cat_run_insert(relid, data);
		}
	}

	cat_note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	scan = cat_runs_of_snapshots_begin(crel, &irel, relid, snapshot_id - 1, snapshot_id,
								   GetLatestSnapshot());
	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		isnull;

		/* a log page goes once all its records expired (cat_log_expired) */
		if (strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
													RelationGetDescr(crel), &isnull)),
				   cat_run_kinds[RUN_LOG]) == 0)
			continue;
		/* a commit's data run is still read by queries, unless a delta */
		if (!cat_row_is_live_data(crel, tup, st))
			CatalogTupleDelete(crel, &tup->t_self);
	}
	cat_runs_of_snapshots_end(scan, irel);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}
