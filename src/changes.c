/*-------------------------------------------------------------------------
 *
 * changes.c
 *	  pk_changes(rel, from_snapshot, to_snapshot): a table's change stream,
 *	  the RowKind records of the snapshots in (from, to], in commit then
 *	  production order, each row as jsonb.
 *
 * Which records a snapshot has depends on the producer in force when it
 * was committed (recorded with the snapshot): its changelog runs, or for
 * producer none the data run its commit wrote (kept as a delta run when
 * compaction replaced it), i.e. the committed delta as written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "run.h"

static const char *const rowkind_names[] = {"+I", "-U", "+U", "-D"};

/*
 * to_jsonb for rows of the table's type: the function reads its argument's
 * type from the call expression, so it gets one.
 */
static void
init_to_jsonb(FmgrInfo *flinfo, Relation rel)
{
	FuncExpr   *call;

	fmgr_info(F_TO_JSONB, flinfo);
	call = makeFuncExpr(F_TO_JSONB, JSONBOID,
						list_make1(makeNullConst(rel->rd_rel->reltype, -1, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	fmgr_info_set_expr((Node *) call, flinfo);
}

/*
 * Does the snapshot's change stream consist of run r?  For producer none,
 * the data run a commit wrote (after a TRUNCATE in it too: OVERWRITE), also
 * once compaction made it a delta run.
 */
static bool
snapshot_uses(const SnapshotInfo *si, const RunInfo *r)
{
	if (strcmp(si->producer, "none") == 0)
		return si->kind != COMMIT_COMPACT && r->from_commit && r->kind != RUN_CHANGELOG;
	return r->kind == RUN_CHANGELOG;
}

PG_FUNCTION_INFO_V1(pk_changes);
Datum
pk_changes(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	int64		from = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1);
	int64		to = PG_ARGISNULL(2) ? PG_INT64_MAX : PG_GETARG_INT64(2);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	PkTable    *t;
	List	   *snaps;
	List	   *runs;
	ListCell   *lc;
	ListCell   *sc;
	FmgrInfo	to_jsonb;
	TupleDesc	desc;
	MemoryContext rowcxt;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(relid))
		PG_RETURN_VOID();
	/* rows of the table: SELECT on it, checked before its lock is requested */
	rel = pk_open_table(relid, AccessShareLock, ACL_SELECT);

	/*
	 * The stream holds every row ever written: where row-level security
	 * hides some rows from the caller, it cannot be filtered by policies
	 * written for the rows' current state.
	 */
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("pk_changes cannot apply the row-level security policies of table \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("Read the change stream as the table's owner or as a role with BYPASSRLS.")));
	t = pk_table(rel);
	desc = RelationGetDescr(rel);
	init_to_jsonb(&to_jsonb, rel);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pk_changes row",
								   ALLOCSET_DEFAULT_SIZES);

	/* the caller's MVCC snapshot: a change stream of committed snapshots */
	snaps = cat_snapshots_range(relid, from, to, GetActiveSnapshot());
	runs = cat_runs_of_snapshots(relid, from, to, GetActiveSnapshot());
	sc = list_head(snaps);
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);
		RunCursor	cur;

		while (sc && ((SnapshotInfo *) lfirst(sc))->snapshot_id < r->created_snapshot)
			sc = lnext(snaps, sc);
		if (sc == NULL)
			break;
		/* runs of a storage a TRUNCATE replaced are not in rel's file */
		if (((SnapshotInfo *) lfirst(sc))->snapshot_id != r->created_snapshot ||
			!snapshot_uses(lfirst(sc), r) || r->relfilenode != rel->rd_node.relNode)
			continue;

		run_cursor_open(&cur, rel, t, r, NULL);
		for (run_cursor_start(&cur); !cur.done; run_cursor_next(&cur))
		{
			RunRowHeader *rh = run_cursor_row(&cur);
			MinimalTuple mt = RUN_ROW_TUPLE(rh);
			HeapTupleData htup;
			Datum		values[3];
			bool		nulls[3] = {false, false, false};
			MemoryContext old;

			CHECK_FOR_INTERRUPTS();
			old = MemoryContextSwitchTo(rowcxt);
			htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
			htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
			ItemPointerSetInvalid(&htup.t_self);
			htup.t_tableOid = relid;
			values[0] = Int64GetDatum(r->created_snapshot);
			values[1] = CStringGetTextDatum(rowkind_names[RUN_ROW_KIND(rh)]);
			values[2] = FunctionCall1(&to_jsonb, heap_copy_tuple_as_datum(&htup, desc));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			MemoryContextSwitchTo(old);
			MemoryContextReset(rowcxt);
		}
		run_cursor_close(&cur);
	}
	table_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
