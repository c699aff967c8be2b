/*-------------------------------------------------------------------------
 *
 * catalog_visible.c
 *	  Which runs an MVCC snapshot sees of a table, read from the catalog:
 *	  the data runs its tables row version names, those kept in snapshot
 *	  rows, a run by id wherever its row is, and the bytes a table's rows
 *	  take (run_list.c caches the lists; this file reads them).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog_runs.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "catalog_visible.h"
#include "catalog.h"

/*
 * A run's row as snapshot sees it (it must see one): the run's own row, or,
 * for a commit's data run kept in its snapshot's row (a negative id), that
 * one (its own row if expiration moved it there).
 */
RunInfo *
cat_run_get(Oid relid, int64 run_id, Snapshot snapshot)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	RunInfo    *r;

	if (run_id < 0 && (r = cat_snapshot_data_run(relid, -run_id, snapshot)) != NULL)
		return r;
	crel = cat_open(CAT_RUNS, AccessShareLock);
	scan = cat_run_row_as(crel, relid, run_id, snapshot, &tup);
	r = cat_run_from_tuple(crel, tup);
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return r;
}

/*
 * The data runs an MVCC snapshot sees: those its version of the tables row
 * names, and the runs the transaction itself added that no version names
 * yet (pending ones, numbered snapshot 0, and those of a commit or
 * compaction step before its row update, numbered past the row's last
 * snapshot).  No other run row is visible without a version naming it: a
 * transaction's runs and its tables row become visible together.  A named
 * run the transaction has deleted or retired since (TRUNCATE, a
 * compaction step) is left out, and so are the changelog and delta runs
 * the transaction's own steps made.
 */
static List *
data_runs_visible(Relation crel, Oid relid, Snapshot snapshot)
{
	TransactionId xmin;
	TableState	st = {0};
	List	   *runs = NIL;
	List	   *data = NIL;
	ListCell   *lc;
	Relation	irel;
	SysScanDesc scan;
	HeapTuple	tup;

	if (cat_table_version(relid, snapshot, NULL, &xmin, &st))
	{
		for (int i = 0; i < st.ndata_runs; i++)
		{
			RunInfo    *r;

			if (st.data_runs[i] < 0 &&
				(r = cat_snapshot_data_run(relid, -st.data_runs[i], snapshot)) != NULL)
			{
				runs = lappend(runs, r);
				continue;
			}
			scan = cat_run_row_find(crel, relid, st.data_runs[i], snapshot, &tup);
			if (HeapTupleIsValid(tup))
				runs = lappend(runs, cat_run_from_tuple(crel, tup));
			systable_endscan(scan);
		}
	}
	for (int pass = 0; pass < 2; pass++)
	{
		scan = pass == 0 ?
			cat_runs_of_snapshots_begin(crel, &irel, relid, -1, 0, snapshot) :
			cat_runs_of_snapshots_begin(crel, &irel, relid, st.last_snapshot_id,
									PG_INT64_MAX, snapshot);
		while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
			runs = lappend(runs, cat_run_from_tuple(crel, tup));
		cat_runs_of_snapshots_end(scan, irel);
	}
	foreach(lc, runs)
		if (((RunInfo *) lfirst(lc))->kind == RUN_DATA)
			data = lappend(data, lfirst(lc));
	return data;
}

/*
 * Every data run kept in a row of relid's snapshots that VACUUM has not
 * removed (deleted rows too), but those of aborted transactions: what
 * SnapshotAny sees of them.
 */
static List *
snapshot_data_runs_any(Oid relid)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "snapshots", relid, SnapshotAny);
	HeapTuple	tup;
	List	   *runs = NIL;
	ListCell   *lc;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		RunInfo    *r;

		if (cat_inserter_aborted(tup))
			continue;
		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		if ((r = cat_snapshot_data(crel, v, n)) != NULL)
			runs = lappend(runs, r);
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	/* and those of the commit log's records */
	foreach(lc, cat_logged_snapshots(relid, 0, PG_INT64_MAX, -1, SnapshotAny, true))
	{
		SnapshotInfo *si = lfirst(lc);

		if (si->data)
			runs = lappend(runs, si->data);
	}
	return runs;
}

/*
 * The runs of a table that a snapshot sees (data_only: its data runs).
 * SnapshotAny: every run whose pages are still intact, i.e. whose row
 * VACUUM has not removed (deleted ones too), except runs of aborted
 * transactions; with data_only, every version of a row that was a data run.
 */
List *
cat_runs_visible(Oid relid, Snapshot snapshot, bool data_only)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *runs = NIL;

	if (data_only && snapshot != SnapshotAny)
		runs = data_runs_visible(crel, relid, snapshot);
	else
	{
		scan = cat_scan(crel, "runs", relid, snapshot);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;

			if (snapshot == SnapshotAny && cat_inserter_aborted(tup))
				continue;
			/* (a retained delta's bytes are not copied to be dropped) */
			if (data_only &&
				strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
														RelationGetDescr(crel), &isnull)),
					   cat_run_kinds[RUN_DATA]) != 0)
				continue;
			runs = lappend(runs, cat_run_from_tuple(crel, tup));
		}
		systable_endscan(scan);
		/* with SnapshotAny, the data runs kept in snapshot rows too */
		if (data_only)
			runs = list_concat(runs, snapshot_data_runs_any(relid));
	}
	/* an MVCC snapshot's runs with their kinds: deltas told apart */
	if (!data_only && IsMVCCSnapshot(snapshot))
		cat_runs_mark_deltas(relid, snapshot, runs);
	table_close(crel, AccessShareLock);
	return runs;
}

/*
 * Of runs, the data runs that the version of relid's state snapshot sees
 * no longer names: their kind becomes RUN_DELTA (cat_data_run_is_delta).
 */
void
cat_runs_mark_deltas(Oid relid, Snapshot snapshot, List *runs)
{
	TransactionId xmin;
	TableState	st = {0};
	ListCell   *lc;

	(void) cat_table_version(relid, snapshot, NULL, &xmin, &st);
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);

		if (r->kind == RUN_DATA &&
			cat_data_run_is_delta(&st, r->run_id, r->from_commit, r->created_snapshot))
			r->kind = RUN_DELTA;
	}
}

/*
 * The bytes of relid's rows in pkchangelog.runs and pkchangelog.snapshots
 * that snapshot sees (runs kept in their rows included), and of those the
 * retained history's: snapshot rows, changelog and delta runs with their
 * pages.
 */
void
cat_row_bytes(Oid relid, Snapshot snapshot, int64 *all, int64 *history)
{
	const CatTable which[] = {CAT_RUNS, CAT_SNAPSHOTS};
	TransactionId xmin;
	TableState	st = {0};

	*all = *history = 0;
	/* the data runs it names (deltas are history) */
	(void) cat_table_version(relid, snapshot, NULL, &xmin, &st);
	for (int i = 0; i < lengthof(which); i++)
	{
		Relation	crel = cat_open(which[i], AccessShareLock);
		SysScanDesc scan = cat_scan(crel, cat_table_name(which[i]), relid, snapshot);
		HeapTuple	tup;

		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;

			*all += tup->t_len;
			if (which[i] == CAT_SNAPSHOTS)
			{
				/* a commit's data run kept in the row is live while named */
				Datum		v[Natts_snapshots];
				bool		n[Natts_snapshots];
				RunInfo    *data;

				heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
				data = cat_snapshot_data(crel, v, n);
				*history += tup->t_len;
				if (data && !cat_data_run_is_delta(&st, data->run_id, true, data->created_snapshot))
					*history -= data->stream_len;
				continue;
			}
			if (!cat_row_is_live_data(crel, tup, &st))
				*history += tup->t_len + (int64) BLCKSZ *
					DatumGetInt32(heap_getattr(tup, Anum_runs_nblocks,
											   RelationGetDescr(crel), &isnull));
		}
		systable_endscan(scan);
		table_close(crel, AccessShareLock);
	}
}
