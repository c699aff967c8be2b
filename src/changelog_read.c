/*-------------------------------------------------------------------------
 *
 * changelog_read.c
 *	  A table's change stream, the RowKind records of the snapshots in
 *	  (from, to], in commit then production order: changelog_scan, read by
 *	  pk_changes(rel, from_snapshot, to_snapshot) (each row as jsonb), by
 *	  pk_consume (from a consumer's position, which it moves) and by the
 *	  WAL records of logical decoding (changelog_wal.c).
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
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
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
#include "catalog_consumers.h"
#include "catalog_runs.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "catalog_lock.h"
#include "changelog_read.h"
#include "pg_compat.h"
#include "run_cursor.h"

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
 * the data runs a commit wrote (once compaction replaced them, delta
 * runs); for the others, its changelog runs.
 */
static bool
snapshot_uses(const SnapshotInfo *si, const RunInfo *r)
{
	if (strcmp(si->producer, prod_name(PK_PRODUCER_NONE)) == 0)
		return si->kind != COMMIT_COMPACT && r->from_commit && r->kind != RUN_CHANGELOG;
	return r->kind == RUN_CHANGELOG;
}

/*
 * Does a TRUNCATE (an OVERWRITE snapshot) appear in the stream as one
 * record of RowKind "TRUNCATE" (row NULL) rather than as the -D of every
 * row it removed?  For none (the stream is what was written) and input
 * (what the writers supplied): the TRUNCATE itself, at no cost.  lookup
 * and full-compaction promise a complete stream of row changes, so they
 * write the -D records (am_dml.c, collect_removed).
 */
bool
changelog_truncate_is_record(const SnapshotInfo *si)
{
	return strcmp(si->producer, prod_name(PK_PRODUCER_NONE)) == 0 ||
		strcmp(si->producer, prod_name(PK_PRODUCER_INPUT)) == 0;
}

/*
 * Before a reader hands out snapshots: the WAL flushed up to where it is
 * written now, so every commit its MVCC snapshot sees is durable.  With
 * group commit a commit is visible from its commit record on, shortly
 * before its flush (write_commit.c); a consumer that read a snapshot a
 * crash then took back would skip the different commit that reuses its
 * id.  Nothing to wait for on a standby, which sees flushed WAL only.
 */
static void
changelog_wait_durable(void)
{
	XLogRecPtr	end;

	if (RecoveryInProgress())
		return;

	/*
	 * Where the next record will start, after the header of a page nothing
	 * is written to yet: the WAL written so far ends at that page's start.
	 */
	end = GetXLogInsertRecPtr();
	if (XLogSegmentOffset(end, wal_segment_size) == SizeOfXLogLongPHD)
		end -= SizeOfXLogLongPHD;
	else if (end % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		end -= SizeOfXLogShortPHD;
	XLogFlush(end);
}

/* the newest snapshot id snapshot sees of relid, 0 if none */
static int64
latest_snapshot(Oid relid, Snapshot snapshot)
{
	TransactionId xmin;
	TableState	st;

	return cat_table_version(relid, snapshot, NULL, &xmin, &st) ? st.last_snapshot_id : 0;
}

/*
 * pk_current_snapshot(rel) -> bigint: the newest snapshot the caller's MVCC
 * snapshot sees, 0 when the table has none yet: where a poller of
 * pk_changes reads up to.  Table-level metadata, like pk_snapshots.
 */
PG_FUNCTION_INFO_V1(pk_current_snapshot);
Datum
pk_current_snapshot(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);

	pk_check_table(relid);
	changelog_wait_durable();
	PG_RETURN_INT64(latest_snapshot(relid, GetActiveSnapshot()));
}

/*
 * The range (from, to] of a pk_changes call, checked against the snapshots
 * the caller sees: it must start at or after the oldest retained snapshot's
 * predecessor (else changes in it have expired: never a partial range) and
 * at or before the newest one (else the numbering the caller knows is not
 * this table's: it was created anew, by a restore say).  NULL from: the
 * oldest retained on; NULL to: the newest.
 */
static void
changes_range(Relation rel, bool from_null, int64 *from, bool to_null, int64 *to)
{
	Oid			relid = RelationGetRelid(rel);
	int64		latest = latest_snapshot(relid, GetActiveSnapshot());
	List	   *first = cat_snapshots_oldest(relid, 0, PG_INT64_MAX, 1, GetActiveSnapshot());
	int64		oldest = first ? ((SnapshotInfo *) linitial(first))->snapshot_id : latest + 1;

	if (from_null)
		*from = oldest - 1;
	if (to_null)
		*to = PG_INT64_MAX;
	if (*from < 0 || *to < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot ids are not negative"),
				 errhint("Snapshot ids start at 1; from_snapshot 0 reads from the first one.")));
	if (*to < *from)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_snapshot %lld is before from_snapshot %lld",
						(long long) *to, (long long) *from),
				 errhint("pk_changes returns the changes of the snapshots after from_snapshot, up to to_snapshot.")));
	if (*from > latest)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_snapshot %lld is beyond the newest snapshot %lld of table \"%s\"",
						(long long) *from, (long long) latest, RelationGetRelationName(rel)),
				 errdetail("Snapshot ids are numbered from 1 for each table as created: a table created anew, for example by a restore from a dump, starts again at 1."),
				 errhint("Read the newest snapshot id with pk_current_snapshot(); a consumer whose position is beyond it must read the table again from its oldest snapshot.")));
	if (*from < oldest - 1)
		ereport(ERROR,
				(errcode(ERRCODE_SNAPSHOT_TOO_OLD),
				 errmsg("the changes after snapshot %lld of table \"%s\" are no longer retained",
						(long long) *from, RelationGetRelationName(rel)),
				 *from + 1 == oldest - 1 ?
				 errdetail("The oldest snapshot retained is %lld: snapshot %lld has expired, or went with a TRUNCATE.",
						   (long long) oldest, (long long) oldest - 1) :
				 errdetail("The oldest snapshot retained is %lld: snapshots %lld to %lld have expired, or went with a TRUNCATE.",
						   (long long) oldest, (long long) *from + 1, (long long) oldest - 1),
				 errhint("Read the stream more often than the table's retention options (snapshot_time_retained, changelog_time_retained and the *_num_retained_* ones) keep it, or read it again from snapshot %lld after taking the table's rows afresh.",
						 (long long) oldest - 1)));
}

static void scan_snapshots(Relation rel, List *snaps, List *runs,
						   ChangeCallback cb, void *arg);

/*
 * Runs in stream order: by snapshot, then by the sequence numbers their
 * commit gave them (a TRUNCATE's removals first, then the runs spilled
 * after it, then the commit's own), then as written.
 */
static int
run_order_cmp(const ListCell *a, const ListCell *b)
{
	const RunInfo *ra = lfirst(a);
	const RunInfo *rb = lfirst(b);

	if (ra->created_snapshot != rb->created_snapshot)
		return ra->created_snapshot < rb->created_snapshot ? -1 : 1;
	if (ra->min_seq != rb->min_seq)
		return ra->min_seq < rb->min_seq ? -1 : 1;
	return (ra->run_id > rb->run_id) - (ra->run_id < rb->run_id);
}

/* snapshots changelog_scan reads at a time: its memory, whatever the range */
#define SCAN_BATCH_SNAPSHOTS	1024

/*
 * Calls cb for every record of the snapshots in (from, to] that snapshot
 * sees, in stream order: a TRUNCATE record (tup NULL) where
 * changelog_truncate_is_record says so, then each run's rows.  The tuple
 * is valid during the call only; memory the callback allocates in
 * CurrentMemoryContext is reset after each row.  The snapshots and their
 * runs are read SCAN_BATCH_SNAPSHOTS at a time, so a range of any length
 * (a consumer's backlog of small commits) is read in bounded memory.
 * pk_changes and the WAL records for logical decoding (changelog_wal.c)
 * both read the stream here, so they cannot differ.
 */
void
changelog_scan(Relation rel, int64 from, int64 to, Snapshot snapshot,
			   ChangeCallback cb, void *arg)
{
	Oid			relid = RelationGetRelid(rel);
	MemoryContext batchcxt = AllocSetContextCreate(CurrentMemoryContext,
												   "pkmerge change batch",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(batchcxt);

	while (from < to)
	{
		List	   *snaps = cat_snapshots_range(relid, from, to, SCAN_BATCH_SNAPSHOTS,
												snapshot);
		int64		upto = list_length(snaps) < SCAN_BATCH_SNAPSHOTS ? to :
			((SnapshotInfo *) llast(snaps))->snapshot_id;

		if (snaps != NIL)
			scan_snapshots(rel, snaps, cat_runs_of_snapshots(relid, from, upto, snapshot),
						   cb, arg);
		from = upto;
		MemoryContextReset(batchcxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(batchcxt);
}

/*
 * The same for the one snapshot si describes, which the caller has just
 * written (a commit or compaction step): its row is not read again, nor
 * are the rows of its runs when the caller has them (snapshot NULL: runs
 * is every run the step made that is in a row of pkchangelog.runs); else
 * snapshot, which sees the step's writes, reads them.
 */
void
changelog_scan_snapshot(Relation rel, const SnapshotInfo *si, List *runs,
						Snapshot snapshot, ChangeCallback cb, void *arg)
{
	if (snapshot != NULL)
		runs = cat_runs_of_snapshots(RelationGetRelid(rel), si->snapshot_id - 1,
									 si->snapshot_id, snapshot);
	scan_snapshots(rel, list_make1((SnapshotInfo *) si), runs, cb, arg);
}

/* every record of run r, as a change of snapshot si */
static void
scan_run(Relation rel, PkTable *t, const SnapshotInfo *si, const RunInfo *r,
		 MemoryContext rowcxt, ChangeCallback cb, void *arg)
{
	RunCursor	cur;

	run_cursor_open_once(&cur, rel, t, r);
	for (run_cursor_start(&cur); !cur.done; run_cursor_next(&cur))
	{
		RunRowHeader *rh = run_cursor_row(&cur);
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(rowcxt);
		cb(arg, si, RUN_ROW_KIND(rh), RUN_ROW_TUPLE(rh));
		MemoryContextSwitchTo(old);
		MemoryContextReset(rowcxt);
	}
	run_cursor_close(&cur);
}

/* changelog_scan of snaps, the snapshots runs were read for (in any order) */
static void
scan_snapshots(Relation rel, List *snaps, List *runs, ChangeCallback cb, void *arg)
{
	PkTable    *t = pk_table(rel);
	ListCell   *rc;
	ListCell   *sc;
	MemoryContext rowcxt;
	MemoryContext old;

	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge change",
								   ALLOCSET_DEFAULT_SIZES);
	list_sort(runs, run_order_cmp);
	rc = list_head(runs);
	foreach(sc, snaps)
	{
		SnapshotInfo *si = lfirst(sc);

		/* none and input record a TRUNCATE as one; see changelog_truncate_is_record */
		if (si->kind == COMMIT_OVERWRITE && changelog_truncate_is_record(si))
		{
			old = MemoryContextSwitchTo(rowcxt);
			cb(arg, si, PK_CHANGE_TRUNCATE, NULL);
			MemoryContextSwitchTo(old);
			MemoryContextReset(rowcxt);
		}
		for (; rc && ((RunInfo *) lfirst(rc))->created_snapshot <= si->snapshot_id;
			 rc = lnext(runs, rc))
		{
			RunInfo    *r = lfirst(rc);

			if (r->created_snapshot != si->snapshot_id || !snapshot_uses(si, r))
				continue;

			/*
			 * A run in a storage that a TRUNCATE or VACUUM FULL committed
			 * since the caller's snapshot replaced: not in rel's file any
			 * more (VACUUM FULL moved it, TRUNCATE expired it).  Leaving it
			 * out would return part of the range.
			 */
			if (r->relfilenode != RelationFileNumber(rel))
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not read the changes of pkmerge table \"%s\" as of this transaction's snapshot",
								RelationGetRelationName(rel)),
						 errdetail("A TRUNCATE or VACUUM FULL of the table committed after the snapshot was taken."),
						 errhint("Run pk_changes again in a new transaction.")));
			scan_run(rel, t, si, r, rowcxt, cb, arg);
		}

		/*
		 * The commit's data and changelog runs kept in the snapshot's row
		 * come after the runs its spills wrote.  They have no pages:
		 * whatever storage the table has now, they are readable.
		 */
		if (si->data && snapshot_uses(si, si->data))
			scan_run(rel, t, si, si->data, rowcxt, cb, arg);
		if (si->changelog && snapshot_uses(si, si->changelog))
			scan_run(rel, t, si, si->changelog, rowcxt, cb, arg);
	}
	MemoryContextDelete(rowcxt);
}

/* pk_changes' state for its callback */
typedef struct ChangesOut
{
	ReturnSetInfo *rsinfo;
	FmgrInfo	to_jsonb;
	TupleDesc	desc;
	Oid			relid;
} ChangesOut;

static void
changes_put(void *arg, const SnapshotInfo *si, int kind, MinimalTuple mt)
{
	ChangesOut *out = arg;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	values[0] = Int64GetDatum(si->snapshot_id);
	values[3] = CStringGetTextDatum(si->producer);
	if (kind == PK_CHANGE_TRUNCATE)
	{
		values[1] = CStringGetTextDatum("TRUNCATE");
		nulls[2] = true;
	}
	else
	{
		HeapTupleData htup;

		htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
		htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
		ItemPointerSetInvalid(&htup.t_self);
		htup.t_tableOid = out->relid;
		values[1] = CStringGetTextDatum(rowkind_names[kind]);
		values[2] = FunctionCall1(&out->to_jsonb,
								  heap_copy_tuple_as_datum(&htup, out->desc));
	}
	tuplestore_putvalues(out->rsinfo->setResult, out->rsinfo->setDesc, values, nulls);
}

/*
 * The table whose stream a caller reads: SELECT on it, checked before its
 * lock is requested.  The stream holds every row ever written: where
 * row-level security hides some rows from the caller, it cannot be
 * filtered by policies written for the rows' current state.
 */
static Relation
open_stream(Oid relid, const char *func)
{
	Relation	rel = pk_open_table(relid, AccessShareLock, ACL_SELECT);

	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot apply the row-level security policies of table \"%s\"",
						func, RelationGetRelationName(rel)),
				 errhint("Read the change stream as the table's owner or as a role with BYPASSRLS.")));
	return rel;
}

/* the records of (from, to] as rows of rsinfo's tuplestore */
static void
changes_output(Relation rel, int64 from, int64 to, ReturnSetInfo *rsinfo)
{
	ChangesOut	out;

	out.rsinfo = rsinfo;
	out.desc = RelationGetDescr(rel);
	out.relid = RelationGetRelid(rel);
	init_to_jsonb(&out.to_jsonb, rel);
	changelog_wait_durable();
	/* the caller's MVCC snapshot: a change stream of committed snapshots */
	changelog_scan(rel, from, to, GetActiveSnapshot(), changes_put, &out);
}

PG_FUNCTION_INFO_V1(pk_changes);
Datum
pk_changes(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	int64		from = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1);
	int64		to = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(relid))
		PG_RETURN_VOID();
	rel = open_stream(relid, "pk_changes");
	changes_range(rel, PG_ARGISNULL(1), &from, PG_ARGISNULL(2), &to);
	changes_output(rel, from, to, rsinfo);
	table_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * pk_consume(rel, consumer_id, max_snapshots): the changes after the
 * consumer's position, at most max_snapshots snapshots of them (NULL: up
 * to the newest), and the position moved past them, in the caller's
 * transaction: a rollback delivers them again, a commit never.  A new
 * consumer starts at the oldest retained snapshot.  One call per consumer
 * at a time (cat_consumer_lock); under READ COMMITTED the call reads the
 * position and the stream with a snapshot taken once it holds the lock,
 * under REPEATABLE READ and SERIALIZABLE a position another transaction
 * moved since the transaction's snapshot is a serialization failure.  A
 * position before the oldest retained snapshot is pk_changes' error
 * (72000): never a gap.
 */
PG_FUNCTION_INFO_V1(pk_consume);
Datum
pk_consume(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *consumer;
	Relation	rel;
	bool		found;
	int64		next = 0;
	int64		next_seen;
	int64		from = 0;
	int64		to = 0;
	int64		latest;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(relid))
		PG_RETURN_VOID();
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("consumer_id must not be NULL"),
				 errhint("Name the consumer whose position pk_consume reads and moves.")));
	if (!PG_ARGISNULL(2) && PG_GETARG_INT32(2) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_snapshots must not be negative"),
				 errhint("Give the number of snapshots to consume at most, or NULL for all up to the newest.")));
	consumer = text_to_cstring(PG_GETARG_TEXT_PP(1));
	rel = open_stream(relid, "pk_consume");

	cat_consumer_lock(relid, consumer);
	found = cat_consumer_get(relid, consumer, GetLatestSnapshot(), &next);
	if (IsolationUsesXactSnapshot())
	{
		if (found != cat_consumer_get(relid, consumer, GetActiveSnapshot(), &next_seen) ||
			(found && next != next_seen))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent pk_consume"),
					 errdetail("Consumer \"%s\" of table \"%s\" consumed changes in a transaction that committed after this one's snapshot.",
							   consumer, RelationGetRelationName(rel)),
					 errhint("Retry the transaction.")));
	}
	else
		PushActiveSnapshot(GetLatestSnapshot());

	/* a new consumer starts from the oldest retained snapshot */
	from = next - 1;
	changes_range(rel, !found, &from, true, &to);
	if (!PG_ARGISNULL(2))
		to = from + PG_GETARG_INT32(2);
	latest = latest_snapshot(relid, GetActiveSnapshot());
	to = Min(to, latest);
	changes_output(rel, from, to, rsinfo);
	if (!found || to + 1 != next)
		cat_consumer_set(relid, consumer, to + 1);

	if (!IsolationUsesXactSnapshot())
		PopActiveSnapshot();
	table_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * pk_consumer_drop(rel, consumer_id) -> boolean: forgets a consumer (false
 * if there was none), so that it holds no snapshot any more and its next
 * pk_consume starts afresh from the oldest retained snapshot.  SELECT on
 * the table, as pk_consume needs; the consumer's lock, as pk_consume takes.
 */
PG_FUNCTION_INFO_V1(pk_consumer_drop);
Datum
pk_consumer_drop(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *consumer = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Relation	rel = open_stream(relid, "pk_consumer_drop");
	bool		found;

	cat_consumer_lock(relid, consumer);
	found = cat_consumer_drop(relid, consumer);
	table_close(rel, AccessShareLock);
	PG_RETURN_BOOL(found);
}
