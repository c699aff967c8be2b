/*-------------------------------------------------------------------------
 *
 * am_dml.c
 *	  Row writes of pkmerge tables.  Every write is a record appended to the
 *	  transaction's write buffer; a plain INSERT does not read (it is an
 *	  upsert) unless row-level security applies.  pk_write's statements are
 *	  recorded with the RowKind pk_write was given.
 *	  UPDATE, DELETE and row locks first check that the version they act on
 *	  is still its key's newest; the rest of DESIGN §4's "no lost update"
 *	  rule is enforced at commit by dml_check_conflicts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog_tables.h"
#include "catalog_lock.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "run.h"
#include "run_list.h"
#include "run_cursor.h"
#include "run_write.h"
#include "storage/predicate.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "am_dml.h"
#include "catalog_row_ids.h"
#include "am_scan.h"
#include "key_locks.h"
#include "lookup.h"
#include "pg_compat.h"
#include "run_merge.h"
#include "write_spill.h"

/*
 * The runs the latest snapshot sees, computed once per command and table:
 * a bulk UPDATE checks each row against them without a catalog scan per
 * row.  Commits that land during the command are caught at commit.
 *
 * Why not run_list.c alone: that cache answers for one MVCC snapshot from
 * committed catalog state and stands aside once the transaction has
 * changed the table's runs (spills, compaction); this list is for one
 * command, includes the transaction's pending runs, and carries what the
 * read-modify-write check needs besides (the newest sequence number and
 * snapshot id).  It asks lookup.c, which uses run_list.c when it can.
 */
static struct
{
	LocalTransactionId lxid;
	Oid			relid;
	CommandId	cid;
	MemoryContext cxt;
	List	   *runs;			/* with the transaction's own pending runs */
	List	   *committed;		/* without */
	uint64		max_seq;
	int64		max_snapshot;
}			latest;

/*
 * A savepoint rolled back: the list may name pending runs the savepoint
 * spilled, and the command counter does not go back.
 */
void
dml_subxact_abort(void)
{
	latest.lxid = InvalidLocalTransactionId;
}

/*
 * The latest runs, and a PkRead for a read made against them (base_seq to
 * be filled by the caller).  latest.committed has the committed ones.
 */
static List *
latest_runs(Relation rel, CommandId cid, PkRead *read)
{
	ListCell   *lc;
	MemoryContext old;

	if (latest.cxt && latest.lxid == ProcLocalTransactionId(MyProc) &&
		latest.relid == RelationGetRelid(rel) && latest.cid == cid)
	{
		read->read_seq = latest.max_seq + 1;
		read->snapshot_id = latest.max_snapshot;
		read->base_seq = 0;
		return latest.runs;
	}
	if (latest.cxt == NULL)
		latest.cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge latest runs",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(latest.cxt);
	old = MemoryContextSwitchTo(latest.cxt);
	latest.runs = runlist_visible(rel, GetLatestSnapshot());
	latest.committed = runlist_committed(latest.runs);
	MemoryContextSwitchTo(old);
	latest.max_seq = 0;
	latest.max_snapshot = 0;
	/* what others committed: the transaction's own pending runs date nothing */
	foreach(lc, latest.committed)
	{
		latest.max_seq = Max(latest.max_seq, (uint64) ((RunInfo *) lfirst(lc))->max_seq);
		latest.max_snapshot = Max(latest.max_snapshot, ((RunInfo *) lfirst(lc))->created_snapshot);
	}
	latest.lxid = ProcLocalTransactionId(MyProc);
	latest.relid = RelationGetRelid(rel);
	latest.cid = cid;
	read->read_seq = latest.max_seq + 1;
	read->snapshot_id = latest.max_snapshot;
	read->base_seq = 0;
	return latest.runs;
}

/*
 * pk_write's statement, whose write is recorded as pk_write says
 * (sql_funcs.c sets it around the statement).
 */
static DmlRecordAs *record_as = NULL;

DmlRecordAs *
dml_record_as(DmlRecordAs *ra)
{
	DmlRecordAs *prev = record_as;

	record_as = ra;
	return prev;
}

/* the pk_write this write of the command belongs to, if any */
static DmlRecordAs *
recorded_as(Relation rel, CommandId cid)
{
	if (record_as && record_as->cid == cid &&
		record_as->relid == RelationGetRelid(rel))
		return record_as;
	return NULL;
}

/*
 * Has the key of tup a row, among the transaction's own writes and the
 * newest commits?  *read is the look, as a read of the key's absence that
 * the commit checks again (dml_check_conflicts): a row committed after it
 * fails the commit instead of being overwritten unseen.
 */
static bool
key_has_row(Relation rel, PkTable *t, MinimalTuple tup, CommandId cid,
			PkRead *read)
{
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	List	   *runs = latest_runs(rel, cid, read);
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;
	PkVersion	v;

	pk_row_key(t, tup, key);
	hash = pk_key_hash(t, key);
	if (lookup_buffered(wb, t, key, hash, InvalidCommandId, &v) ||
		lookup_committed(rel, t, runs, key, hash, &v))
		return PK_KIND_IS_ADD(v.kind);
	return false;
}

/*
 * Row-level security: a write of a new row (INSERT, or UPDATE to a new
 * key) over a key that has a row would replace that row under the INSERT
 * (or UPDATE) policies of the new row alone, while heap's
 * ON CONFLICT DO UPDATE applies the UPDATE policies' USING to the row it
 * replaces.  Where policies apply to the user, such a write is refused;
 * the key's absence is then a read (*read) the commit checks again.
 * Returns whether policies apply.
 */
static bool
rls_check_new_key(Relation rel, PkTable *t, MinimalTuple tup, CommandId cid,
				  PkRead *read)
{
	if (!rel->rd_rel->relrowsecurity ||
		check_enable_rls(RelationGetRelid(rel), InvalidOid, true) != RLS_ENABLED)
		return false;
	if (key_has_row(rel, t, tup, cid, read))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("new row would replace an existing row of table \"%s\", which row-level security does not allow",
						t->relname),
				 errdetail("A row-level security policy applies to the table: a row is replaced only by an update, under the UPDATE policies."),
				 errhint("Use INSERT ... ON CONFLICT (...) DO UPDATE, or pk_write's '+U', which apply the UPDATE policies to the row replaced.")));
	return true;
}

/*
 * The row to store for a slot: every attribute, external TOAST values
 * fetched (pkmerge tables have no TOAST table; rows are stored whole).
 */
static MinimalTuple
dml_slot_row(Relation rel, TupleTableSlot *slot)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Datum	   *values = NULL;
	MinimalTuple tup;

	slot_getallattrs(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		Datum		v = slot->tts_values[i];

		if (slot->tts_isnull[i] || TupleDescAttr(desc, i)->attlen != -1 ||
			!VARATT_IS_EXTERNAL(DatumGetPointer(v)))
			continue;
		if (values == NULL)
		{
			values = palloc(sizeof(Datum) * desc->natts);
			memcpy(values, slot->tts_values, sizeof(Datum) * desc->natts);
		}
		values[i] = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(v)));
	}
	tup = heap_form_minimal_tuple(desc, values ? values : slot->tts_values, slot->tts_isnull, 0);
	if (values)
	{
		for (int i = 0; i < desc->natts; i++)
			if (values[i] != slot->tts_values[i])
				pfree(DatumGetPointer(values[i]));
		pfree(values);
	}
	return tup;
}

/*
 * Append a record.  The buffer takes a copy of tup, unless owned: then tup
 * was made in the buffer's memory context (buffer_row) and is kept as is.
 */
static void
append(Relation rel, PkTable *t, PkRowKind kind, MinimalTuple tup, CommandId cid,
	   const PkRead *read, bool owned, ItemPointer tid)
{
	WriteBuffer *wb;
	uint32		pos;

	pk_table_check_keyed(t);
	wb = wbuf_get(RelationGetRelid(rel), true);
	/* the transaction must have an xid: its snapshot is recorded at commit */
	(void) GetCurrentTransactionId();
	/* SERIALIZABLE: a write of the table, against readers of the table */
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	pos = wbuf_append(wb, t, kind, tup, cid, !owned);
	/* unique checks of other transactions wait for this one (am_scan.c) */
	if (pk_table_row_ids(t))
		rowids_note_key(RelationGetRelid(rel), wbuf_entry(wb, pos)->hash);
	if (read)
	{
		wbuf_entry(wb, pos)->read = *read;
		if (read->read_seq != PG_UINT64_MAX)
			wb->rmw_snapshot = Min(wb->rmw_snapshot, read->snapshot_id);
	}
	if (tid)
		wbuf_tid(wb, pos, tid);
	/* positions move when the buffer spills: the TID does not */
	spill_after_write(rel, t, wb);
}

/* the slot's row, made where the write buffer keeps its rows */
static MinimalTuple
buffer_row(Relation rel, TupleTableSlot *slot)
{
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);
	MemoryContext old = MemoryContextSwitchTo(wb->rowcxt);
	MinimalTuple tup = dml_slot_row(rel, slot);

	MemoryContextSwitchTo(old);
	return tup;
}

/*
 * INSERT.  A plain one is a blind write (upsert), except where row-level
 * security applies (rls_check_new_key).  The insert of
 * INSERT ... ON CONFLICT (speculative) found the key absent: that is a
 * read, and a version committed after it must fail our commit.
 */
void
dml_insert(Relation rel, TupleTableSlot *slot, CommandId cid, bool speculative)
{
	PkTable    *t = pk_table(rel);
	MinimalTuple tup = buffer_row(rel, slot);
	PkRead		read;
	DmlRecordAs *ra = recorded_as(rel, cid);
	bool		absent_read;

	pk_check_key_not_null(t, tup);
	/* ON CONFLICT on other columns: blind on the key (am_onconflict.c) */
	if (speculative)
	{
		WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);

		if (wb->key_blind_cid == cid)
			speculative = false;
	}
	absent_read = speculative;

	/*
	 * ON CONFLICT found the key absent (base_seq 0).  The runs that date
	 * the read must agree: a version committed between the arbiter's look
	 * and now would otherwise pass the commit check as "older than the read".
	 * Unless the transaction's own writes hold the key (it deleted it, or
	 * moved it away by a key update): then they made it absent, and the
	 * committed version under them is no news.
	 */
	if (speculative)
	{
		WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);
		Datum		key[INDEX_MAX_KEYS];
		uint32		hash;
		PkVersion	v;

		/* the command checks its proposed rows against each other: no spill */
		wb->nospill_cid = Min(wb->nospill_cid, cid);
		(void) latest_runs(rel, cid, &read);
		pk_row_key(t, tup, key);
		hash = pk_key_hash(t, key);
		if (!lookup_buffered(wb, t, key, hash, InvalidCommandId, &v) &&
			lookup_committed(rel, t, latest.runs, key, hash, &v) &&
			v.seq < PK_PENDING_SEQ && PK_KIND_IS_ADD(v.kind))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update"),
					 errdetail("Key %s of pkmerge table \"%s\" was inserted by a transaction that committed after this one looked for it.",
							   pk_key_text(t, key), t->relname),
					 errhint("Retry the transaction.")));
	}
	else
		absent_read = rls_check_new_key(rel, t, tup, cid, &read);
	/* pk_write's +U that found no row to update inserts a +U */
	append(rel, t, ra ? ra->kind : PK_INSERT, tup, cid,
		   absent_read ? &read : NULL, true, &slot->tts_tid);
	/* the cumulative statistics' n_tup_ins (an upsert counts as an insert) */
	pgstat_count_heap_insert(rel, 1);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * INSERT ... ON CONFLICT inserted the row at tid, then found another
 * transaction's row in an arbiter index (it appeared after the command
 * looked): the row goes again, as heap's speculative insertion kills its
 * tuple, and the command looks again.  It is the buffer's last entry.
 */
void
dml_cancel_insert(Relation rel, ItemPointer tid)
{
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	int64		pos = wb ? wbuf_find_tid(wb, tid) : -1;

	if (pos < 0 || pos != (int64) wb->n - 1 || wbuf_pinned_extent(wb) > (uint32) pos)
		elog(ERROR, "speculative insert into pkmerge table \"%s\" is not its buffer's last entry",
			 RelationGetRelationName(rel));
	wbuf_remove(wb, (uint32) pos, NULL);
}

/*
 * pk_write's -U or -D of a key its DELETE deleted no row of: the record is
 * written all the same (a tombstone; the input producer's stream keeps it
 * as given) if the key has no row now either, as a read of its absence.
 * A row the DELETE left alone (hidden by row-level security, kept by a
 * trigger, committed after its snapshot) stays.  Returns whether the
 * record was written.
 */
bool
dml_write_absent(Relation rel, PkRowKind kind, MinimalTuple tup)
{
	PkTable    *t = pk_table(rel);
	CommandId	cid = GetCurrentCommandId(true);
	PkRead		read;

	pk_check_key_not_null(t, tup);
	if (key_has_row(rel, t, tup, cid, &read))
		return false;
	append(rel, t, kind, tup, cid, &read, false, NULL);
	return true;
}

/*
 * Is the version at tid still its key's newest?  Own writes count first
 * (TM_SelfModified, as heap reports a row this transaction already
 * changed); then commits that came after the version was read.  On TM_Ok,
 * *old holds the version, *hash its key's hash and *read_seq what commit
 * must re-check against.
 */
static TM_Result
check_current(Relation rel, PkTable *t, ItemPointer tid, CommandId cid,
			  Snapshot snapshot, TM_FailureData *tmfd, PkVersion *old,
			  PkRead *read, uint32 *hash_out)
{
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	List	   *runs;
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;
	PkVersion	v;
	PkVersion	spilled;
	bool		found;
	bool		self;

	memset(tmfd, 0, sizeof(TM_FailureData));
	runs = latest_runs(rel, cid, read);
	/*
	 * The row's run may have been compacted away since the caller's
	 * snapshot, or be newer than the command's list of runs.
	 */
	if (!lookup_tid(rel, t, runs, wb, tid, old) &&
		!lookup_tid(rel, t, runlist_visible(rel, snapshot), wb, tid, old) &&
		!lookup_tid(rel, t, runlist_visible(rel, GetLatestSnapshot()), wb, tid, old))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to pkmerge table \"%s\": the row's run is gone",
						t->relname),
				 errdetail("A compaction or TRUNCATE committed after this statement read the row.")));
	pk_row_key(t, old->tup, key);
	hash = *hash_out = pk_key_hash(t, key);
	read->base_seq = old->seq;

	/*
	 * A newer version of our own: in the buffer, or spilled by this command.
	 * Unless the newer version is another row this command moved onto the
	 * key (a key update) and the command has not taken the old version away
	 * yet: a statement shifting keys acts on every row it matched.  (A
	 * command that moves keys does not spill while it runs, so the moved
	 * row is in the buffer.)
	 */
	if (lookup_buffered(wb, t, key, hash, InvalidCommandId, &v))
		self = !ItemPointerEquals(&v.tid, &old->tid) &&
			!(v.cid == cid && PK_KIND_IS_ADD(v.kind) &&
			  !wbuf_retracted_by(wb, t, key, hash, cid) &&
			  !spill_lookup_since(rel, t, wb, cid, key, hash, &spilled));
	else
		self = spill_lookup_since(rel, t, wb, cid, key, hash, &v) &&
			!ItemPointerEquals(&v.tid, &old->tid);
	if (self)
	{
		tmfd->ctid = v.tid;
		tmfd->xmax = GetCurrentTransactionId();
		tmfd->cmax = v.cid;
		return TM_SelfModified;
	}
	if (old->seq == PG_UINT64_MAX && old->cid >= cid)
		return TM_Invisible;	/* written by this very command, as heap says */
	if (old->seq >= PK_PENDING_SEQ)
	{
		read->read_seq = PG_UINT64_MAX;	/* own row: nobody else can change it */
		return TM_Ok;
	}
	found = lookup_committed(rel, t, latest.committed, key, hash, &v);
	if (!found || v.seq != old->seq || !PK_KIND_IS_ADD(v.kind))
	{
		tmfd->xmax = InvalidTransactionId;
		if (found && PK_KIND_IS_ADD(v.kind))
		{
			tmfd->ctid = v.tid;
			return TM_Updated;
		}
		tmfd->ctid = old->tid;
		return TM_Deleted;
	}
	return TM_Ok;
}

/*
 * A lock (or a removal) of the key of the version at tid, which waited if
 * another transaction removed (or locked) the key: then the runs it
 * committed meanwhile are read, and the caller reads the row again.
 */
static bool
key_waited(Relation rel, uint32 hash, ItemPointer tid, bool removal)
{
	if (!(removal ? keylock_remove(rel, hash, tid) : keylock_lock(rel, hash, tid)))
		return false;
	latest.lxid = InvalidLocalTransactionId;
	return true;
}

/*
 * DELETE (and pk_write's -U and -D, which are DELETE statements): the key
 * goes, after the transactions that lock it (a foreign key's check of a
 * row referencing it) have ended (key_locks.c).
 */
TM_Result
dml_delete(Relation rel, ItemPointer tid, CommandId cid, Snapshot snapshot,
		   TM_FailureData *tmfd)
{
	PkTable    *t = pk_table(rel);
	PkVersion	old;
	PkRead		read;
	TM_Result	res;
	uint32		hash;
	DmlRecordAs *ra = recorded_as(rel, cid);

	do
	{
		res = check_current(rel, t, tid, cid, snapshot, tmfd, &old, &read, &hash);
		if (res != TM_Ok)
			return res;
	} while (key_waited(rel, hash, tid, true));
	/* pk_write's -U or -D: its RowKind and row */
	if (ra)
		append(rel, t, ra->kind, ra->row, cid, &read, false, NULL);
	else
		append(rel, t, PK_DELETE, old.tup, cid, &read, false, NULL);
	pgstat_count_heap_delete(rel);
	return TM_Ok;
}

TM_Result
dml_update(Relation rel, ItemPointer otid, TupleTableSlot *slot, CommandId cid,
		   Snapshot snapshot, TM_FailureData *tmfd)
{
	PkTable    *t = pk_table(rel);
	PkVersion	old;
	PkRead		read;
	TM_Result	res;
	MinimalTuple tup = NULL;
	Datum		oldkey[INDEX_MAX_KEYS];
	Datum		newkey[INDEX_MAX_KEYS];
	uint32		hash;
	bool		moved;

again:
	res = check_current(rel, t, otid, cid, snapshot, tmfd, &old, &read, &hash);
	if (res != TM_Ok)
		return res;
	if (tup == NULL)
	{
		tup = buffer_row(rel, slot);
		pk_check_key_not_null(t, tup);
		pk_row_key(t, tup, newkey);
	}
	pk_row_key(t, old.tup, oldkey);
	moved = pk_key_cmp(t, oldkey, newkey) != 0;
	if (moved && key_waited(rel, hash, otid, true))
		goto again;				/* a lock of the old key ended meanwhile */
	if (!moved)
	{
		/* pk_write's +U is recorded as given: without the old row's -U */
		if (!recorded_as(rel, cid))
			append(rel, t, PK_UPDATE_BEFORE, old.tup, cid, &read, false, NULL);
		append(rel, t, PK_UPDATE_AFTER, tup, cid, &read, true, &slot->tts_tid);
	}
	else
	{
		/*
		 * A key change is a delete of the old key and an insert of the new.
		 * Another row of this command may move onto the old key later, or
		 * has already (wbuf_fold orders the two): the command's records
		 * stay in the buffer until it ends, where both are seen.
		 */
		WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);
		PkRead		newread;
		bool		rls = rls_check_new_key(rel, t, tup, cid, &newread);

		wb->nospill_cid = Min(wb->nospill_cid, cid);
		append(rel, t, PK_DELETE, old.tup, cid, &read, false, NULL);
		append(rel, t, PK_INSERT, tup, cid, rls ? &newread : NULL, true,
			   &slot->tts_tid);
	}
	pgstat_count_heap_update(rel, false, false);
	slot->tts_tableOid = RelationGetRelid(rel);
	return TM_Ok;
}

/*
 * Row locks (SELECT FOR UPDATE, the READ COMMITTED re-check of UPDATE and
 * DELETE, a foreign key's check).  A lock succeeds when the version is its
 * key's newest, and with TUPLE_LOCK_FLAG_FIND_LAST_VERSION moves to the
 * newest committed version, which the executor re-evaluates (EvalPlanQual).
 * pkmerge keeps no lock in the row: against writers changing it, commit
 * checks what was read; against a removal of the key, which would leave a
 * foreign key's reference dangling, the lock waits for the remover and the
 * remover for the lock (key_locks.c), whatever the lock's mode.
 */
TM_Result
dml_lock(Relation rel, ItemPointer tid, Snapshot snapshot, TupleTableSlot *slot,
		 CommandId cid, uint8 flags, TM_FailureData *tmfd)
{
	PkTable    *t = pk_table(rel);
	PkVersion	old;
	PkRead		read;
	TM_Result	res;
	ItemPointerData locked;
	uint32		hash;

again:
	res = check_current(rel, t, tid, cid, snapshot, tmfd, &old, &read, &hash);

	/*
	 * Only ON CONFLICT DO UPDATE locks a row its own command wrote (two
	 * proposed rows with one key); heap's executor would read xmin from the
	 * slot to word this error, which a pkmerge slot does not carry.
	 */
	if (res == TM_Invisible)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("ON CONFLICT DO UPDATE command cannot affect row a second time"),
				 errhint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")));
	if (res == TM_Updated && (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION))
	{
		PkVersion	newest;
		List	   *runs;
		PkRead		again;
		WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);

		runs = latest_runs(rel, cid, &again);
		if (!lookup_tid(rel, t, runs, wb, &tmfd->ctid, &newest))
			return TM_Deleted;
		/* (a newer version of the same key: the hash check_current gave) */
		if (key_waited(rel, hash, &tmfd->ctid, false))
			goto again;
		*tid = tmfd->ctid;
		tmfd->traversed = true;
		locked = *tid;
		scan_store_row(rel, newest.tup, true, &locked, slot);
		return TM_Ok;
	}
	if (res != TM_Ok)
		return res;
	if (key_waited(rel, hash, tid, false))
		goto again;				/* a removal of the key ended meanwhile */
	/* tid may be the slot's own tts_tid (the apply worker's), which storing resets */
	locked = *tid;
	scan_store_row(rel, old.tup, true, &locked, slot);
	return TM_Ok;
}

/*
 * The rows a TRUNCATE removes, for the producers whose stream is complete
 * (lookup, full-compaction; none and input record the TRUNCATE itself,
 * changelog_read.c), as their consumers know them: the committed rows, or for
 * full-compaction those of the bottom
 * level (the table as of the last compaction into it, which its stream has
 * told).  Into a tuplestore of the buffer (temporary files beyond
 * work_mem), until the commit writes them as a changelog run
 * (dml_truncate_finish).
 */
static void
collect_removed(Relation rel, PkTable *t, WriteBuffer *wb)
{
	List	   *runs = runlist_committed(runlist_visible(rel, GetLatestSnapshot()));
	List	   *read = NIL;
	ListCell   *lc;
	MergeIter  *m;
	MergeRow	row;
	TupleTableSlot *slot;
	MemoryContext old;
	ResourceOwner saved_owner;

	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);

		if (t->opts.changelog_producer != PK_PRODUCER_FULL_COMPACTION ||
			r->level == t->opts.num_levels - 1)
			read = lappend(read, r);
	}
	if (read == NIL)
		return;
	/*
	 * Its temporary files outlive the statement, until the commit: they
	 * belong to the top transaction (a subtransaction's abort ends the
	 * store, write_buffer.c).
	 */
	old = MemoryContextSwitchTo(wb->cxt);
	saved_owner = CurrentResourceOwner;
	CurrentResourceOwner = TopTransactionResourceOwner;
	wb->removed = tuplestore_begin_heap(false, false, work_mem);
	CurrentResourceOwner = saved_owner;
	MemoryContextSwitchTo(old);
	wb->removed_subid = GetCurrentSubTransactionId();
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	m = merge_begin(rel, t, read, NULL, InvalidCommandId, NULL, false, false);
	while (merge_next(m, &row))
	{
		CHECK_FOR_INTERRUPTS();
		ExecStoreMinimalTuple(row.tup, slot, false);
		tuplestore_puttupleslot(wb->removed, slot);
	}
	merge_end(m);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * At commit, the rows the transaction's TRUNCATE removed: a changelog run
 * of -D records, numbered before every run the transaction wrote after the
 * TRUNCATE, so that replaying the stream of the OVERWRITE snapshot deletes
 * every row, then adds the new ones.  (Written at commit, not before: a
 * second TRUNCATE in the transaction truncates the file the first one made.)
 */
void
dml_truncate_finish(Relation rel, WriteBuffer *wb)
{
	PkTable    *t;
	RunWriter  *w = NULL;
	TupleTableSlot *slot;
	Datum		keys[INDEX_MAX_KEYS];
	WbSpill    *sp;
	MemoryContext old;

	if (wb->removed == NULL)
		return;
	t = pk_table(rel);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(wb->removed, true, false, slot))
	{
		bool		shouldfree;
		MinimalTuple mt = ExecFetchSlotMinimalTuple(slot, &shouldfree);

		CHECK_FOR_INTERRUPTS();
		if (w == NULL)
			w = run_writer_begin(rel, t, 0, RUN_CHANGELOG, false);
		pk_row_key(t, mt, keys);
		run_writer_add(w, 0, PK_DELETE, mt, keys, 0, RUN_NO_ID);
		if (shouldfree)
			pfree(mt);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(wb->removed);
	wb->removed = NULL;
	if (w == NULL)
		return;
	run_writer_set_seq(w, PK_PENDING_SEQ + ++wb->nspills);
	old = MemoryContextSwitchTo(wb->cxt);
	sp = palloc0(sizeof(WbSpill));
	sp->changelog = run_writer_finish(w, 0);
	sp->max_cid = GetCurrentCommandId(false);
	sp->subid = GetCurrentSubTransactionId();
	/* first of the runs of the new storage: it takes the first seq */
	wb->spills = lcons(sp, wb->spills);
	MemoryContextSwitchTo(old);
}

/*
 * TRUNCATE (a new relfilenode for an existing table): its runs go with the
 * old storage, in this transaction, and the snapshots whose changes they
 * held expire; rows written before it are hidden.  The first TRUNCATE of
 * the transaction keeps the rows it removes for the change stream of the
 * producers that retract them (later ones remove only rows never
 * committed).
 */
void
dml_truncate(Relation rel)
{
	PkTable    *t = pk_table(rel);
	WriteBuffer *wb;

	/* a table without a key has never held a row */
	if (t->nkeys == 0)
		return;
	wb = wbuf_get(RelationGetRelid(rel), true);
	if (wb->truncate_pos < 0 && wb->removed == NULL &&
		(t->opts.changelog_producer == PK_PRODUCER_LOOKUP ||
		 t->opts.changelog_producer == PK_PRODUCER_FULL_COMPACTION))
		collect_removed(rel, t, wb);
	/* the table's row is written: under the lock its commit would take */
	(void) cat_commit_lock(RelationGetRelid(rel));
	cat_truncate(RelationGetRelid(rel));
	append(rel, t, WB_TRUNCATE, NULL, GetCurrentCommandId(true), NULL, false, NULL);
}

/*
 * The lost-update check of one read key: refuse if its key changed since.
 * added: committed holds only the runs committed since an earlier check
 * that passed, and none it saw is gone, so that a key none of them holds
 * kept its version.
 */
static void
check_read(Relation rel, PkTable *t, List *committed, bool added,
		   const Datum *keys, uint32 hash, const PkRead *read)
{
	PkVersion	v;
	bool		found = lookup_committed(rel, t, committed, keys, hash, &v);
	bool		changed;

	if (read->base_seq == 0)
		changed = found && v.seq >= read->read_seq;
	else
		changed = found ? v.seq != read->base_seq : !added;
	if (changed)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update"),
				 errdetail("Key %s of pkmerge table \"%s\" was changed by a transaction that committed after this one read it.",
						   pk_key_text(t, keys), t->relname),
				 errhint("Retry the transaction.")));
}

/* check_read for each read of the transaction: its buffer's and its spills' */
static void
check_reads(Relation rel, PkTable *t, WriteBuffer *wb, List *committed,
			bool added, List *pending)
{
	ListCell   *lc;

	for (uint32 p = 0; p < wb->n; p++)
	{
		WbEntry    *e = wbuf_entry(wb, p);

		if (e->read.read_seq == 0 || e->read.read_seq == PG_UINT64_MAX ||
			(int64) p < wb->truncate_pos)
			continue;
		check_read(rel, t, committed, added, e->keys, e->hash, &e->read);
	}
	foreach(lc, pending)
	{
		RunInfo    *run = lfirst(lc);
		RunCursor	cur;

		if (run->kind != RUN_DATA)
			continue;
		run_cursor_open(&cur, rel, t, run, NULL);
		for (run_cursor_start(&cur); !cur.done; run_cursor_next(&cur))
		{
			RunRowHeader *rh = run_cursor_row(&cur);
			PkRead		read;
			Datum		keys[INDEX_MAX_KEYS];

			spill_decode_read(RUN_ROW_SEQ(rh), &read);
			if (read.read_seq == 0)
				continue;
			pk_row_key(t, RUN_ROW_TUPLE(rh), keys);
			check_read(rel, t, committed, added, keys, pk_key_hash(t, keys), &read);
		}
		run_cursor_close(&cur);
	}
}

/*
 * At commit (under the commit lock, or before it with
 * dml_check_conflicts_since under it): a read-modify-write whose key changed
 * after it was read would silently overwrite that change; refuse (SQLSTATE
 * 40001).  The key changed if its newest committed version now is not the
 * one read (base_seq; for a key read as absent: if a version committed after
 * the read exists).  A deletion counts even when a compaction into the
 * bottom has since dropped its tombstone: the version read is then gone.
 * Nothing can have changed if no commit created a run since the reads (in
 * snapshot ids, which commits take in commit order).  The reads are in the
 * buffer's entries and in the rows of the transaction's pending runs
 * (write_spill.c).
 */
void
dml_check_conflicts(Relation rel, WriteBuffer *wb, List *committed,
					List *pending)
{
	ListCell   *lc;
	bool		newer = false;

	if (wb->rmw_snapshot == PG_INT64_MAX)
		return;					/* no read-modify-write */
	foreach(lc, committed)
		newer |= ((RunInfo *) lfirst(lc))->created_snapshot > wb->rmw_snapshot;
	if (newer)
		check_reads(rel, pk_table(rel), wb, committed, false, pending);
}

/*
 * Under the commit lock, after dml_check_conflicts passed against the runs
 * committed when it ran, before the lock was taken: only what committed
 * since can have changed a key read.  With every run of those still there
 * (kept: no compaction since; runlist_added), a key changed exactly if
 * a run added since holds a version of it, which is newer than the reads;
 * otherwise every read is checked again.  The commit lock, which
 * serializes the table's commits, then covers the newest runs' checks
 * alone.
 */
void
dml_check_conflicts_since(Relation rel, WriteBuffer *wb, bool kept,
						  List *added, List *committed, List *pending)
{
	if (wb->rmw_snapshot == PG_INT64_MAX)
		return;
	if (!kept)
		dml_check_conflicts(rel, wb, committed, pending);
	else if (added != NIL)
		check_reads(rel, pk_table(rel), wb, added, true, pending);
}
