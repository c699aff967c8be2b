/*-------------------------------------------------------------------------
 *
 * write_commit.c
 *	  The commit step: at pre-commit (or PREPARE TRANSACTION) each pkmerge
 *	  table the transaction wrote becomes one snapshot: its buffer folded
 *	  to one version per key in an L0 run, an APPEND (after a TRUNCATE,
 *	  OVERWRITE) snapshot, and the table's row naming its data runs.
 *
 *	  This file owns the order of that step and how long the commit locks
 *	  are held (group commit); each part is another file's (write_buffer.c,
 *	  write_spill.c, run_write.c, changelog_produce.c, catalog_*.c,
 *	  log_snapshot.c, maint_*.c).
 *
 *	  Tables commit in relid order, so committers take the commit locks in
 *	  one order.  Under a table's commit lock every earlier commit of the
 *	  table is visible; what needs no earlier commit is done before the
 *	  lock.  A run's pages are WAL-logged before the commit record, with
 *	  which its catalog rows become visible: a crash before it leaves pages
 *	  no committed row points to, which run_space.c reuses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "replication/syncrep.h"
#include "storage/predicate.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "am_dml.h"
#include "catalog.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "changelog_produce.h"
#include "changelog_wal.h"
#include "guc.h"
#include "log_snapshot.h"
#include "lookup.h"
#include "maint_compaction.h"
#include "maint_expire.h"
#include "maint_worker.h"
#include "mat.h"
#include "run_list.h"
#include "run_publish.h"
#include "run_read.h"
#include "run_write.h"
#include "write_buffer.h"
#include "write_commit.h"
#include "write_spill.h"

/* tables this transaction's commit leaves due for a compaction */
#define MAX_REQUESTS 8
static Oid	requests[MAX_REQUESTS];
static int	nrequests = 0;

/*
 * Group commit: the commit locks this transaction's commit step took, to
 * release once its commit record is written, and synchronous_commit as it
 * was while the commit is made asynchronous for that (-1: not lowered).
 * More tables than MAX_EARLY: the locks are kept to transaction end.
 */
#define MAX_EARLY 8
static LOCKTAG early[MAX_EARLY];
static int	nearly = 0;
static bool early_overflow = false;
static int	saved_synchronous_commit = -1;

/*
 * The data runs this transaction's commit steps kept in their snapshots'
 * rows.  Their run ids are minus their snapshots' ids, which the next
 * commits take again if this transaction aborts, or is prepared and then
 * rolled back: this backend's caches must not keep their bytes then.
 */
#define MAX_RUNS_IN_ROWS 16
static struct
{
	int64		run_id;
	Oid			relfilenode;
}			runs_in_rows[MAX_RUNS_IN_ROWS];
static int	nruns_in_rows = 0;
static bool runs_in_rows_overflow = false;

static void
note_run_in_row(const RunInfo *run)
{
	if (nruns_in_rows == MAX_RUNS_IN_ROWS)
	{
		runs_in_rows_overflow = true;
		return;
	}
	runs_in_rows[nruns_in_rows].run_id = run->run_id;
	runs_in_rows[nruns_in_rows].relfilenode = run->relfilenode;
	nruns_in_rows++;
}

/* the transaction ended: committed, or its runs' ids may be taken again */
static void
forget_runs_in_rows(bool committed)
{
	if (!committed && runs_in_rows_overflow)
		run_read_forget_all();
	else if (!committed)
		for (int i = 0; i < nruns_in_rows; i++)
			run_read_forget(runs_in_rows[i].run_id, runs_in_rows[i].relfilenode);
	nruns_in_rows = 0;
	runs_in_rows_overflow = false;
}

/* rel's committed data runs as of now (latest snapshot) */
static List *
committed_runs(Relation rel)
{
	List	   *runs;

	if (!runlist_cached(rel, GetLatestSnapshot(), true, &runs))
		runs = runlist_committed(runlist_visible(rel, GetLatestSnapshot()));
	return runs;
}

/*
 * Flush one table's buffer.  Runs the buffer spilled (write_spill.c) take the
 * sequence numbers after the last commit's, in spill order; the buffer's
 * run the next one.  before_read: the committed runs compact_before_commit
 * read just before (NIL: read them here if needed).
 */
static void
commit_table(WriteBuffer *wb, bool preparing, List *before_read)
{
	Relation	rel;
	PkTable    *t;
	WbSorted   *s;
	RunWriter  *w;
	TableState	st;
	bool		truncated = wb->truncate_pos >= 0;
	uint64		nrows;
	int64		spilled_rows;
	int64		spilled_changelog;
	uint64		seq;
	int64		snapshot_id;
	List	   *committed;
	List	   *pending;
	RunInfo    *final = NULL;
	List	   *after = NIL;
	List	   *written;
	bool		have_written;
	CompactDue	due;
	RunInfo    *changelog;
	instr_time	start;
	instr_time	duration;
	LOCKTAG		tag;
	ItemPointerData hint;
	SnapshotInfo *si;
	List	   *before = NIL;
	bool		have_before;
	bool		kept = false;
	List	   *added = NIL;
	bool		prechecked = false;
	bool		have_state;
	int64		log_run;
	ProdPrepared *prep;

	if (wb->n == 0 && wb->spills == NIL)
		return;					/* everything rolled back to a savepoint */
	INSTR_TIME_SET_CURRENT(start);

	/* dropped later in this transaction: nothing to keep */
	rel = try_table_open(wb->relid, RowExclusiveLock);
	if (rel == NULL)
		return;
	t = pk_table(rel);

	/*
	 * The table's first index was built CONCURRENTLY while the transaction
	 * wrote to it (the build waited for it): its buffered rows take ids now,
	 * as the other writers' rows have, in place of buffer TIDs nothing holds
	 * past this point (deferred triggers have fired).
	 */
	if (!wb->ids && wb->n > 0 && pk_table_rowids_now(t))
		wbuf_assign_ids(wb, rowids_reserve(wb->relid, wb->n));

	/*
	 * SERIALIZABLE: readers that read the table after our writes but before
	 * this commit cannot see them either (they are buffered): check again.
	 */
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);

	/*
	 * The lost-update checks against the runs committed so far, before the
	 * commit lock: under it, only the runs committed since are looked at
	 * (dml_check_conflicts_since).  Not after a TRUNCATE of the transaction,
	 * whose removals are written under the lock first.
	 */
	have_before = !truncated && (wb->rmw_snapshot != PG_INT64_MAX ||
								 prod_looks_up_early(t, wb));
	if (have_before)
		before = before_read != NIL ? before_read : committed_runs(rel);
	if (!truncated && wb->rmw_snapshot != PG_INT64_MAX)
	{
		dml_check_conflicts(rel, wb, before, spill_runs(rel, wb));
		prechecked = true;
	}
	/* and what the changelog can be made of before the lock */
	prep = prod_commit_prepare(rel, t, wb, before);

	/* one commit of this table at a time, until our commit record is out */
	tag = cat_commit_lock(wb->relid);
	if (nearly < MAX_EARLY)
		early[nearly++] = tag;
	else
		early_overflow = true;
	/*
	 * The runs as the previous commit left them, with the table's counters
	 * if the run cache has them (not after a TRUNCATE of the transaction,
	 * whose removals are written next).  The latest snapshot, not the
	 * transaction's: taken after the lock, it sees every earlier commit of
	 * the table, as a holder releases the lock only once visible.
	 */
	have_state = !truncated &&
		runlist_committed_state(rel, GetLatestSnapshot(), &committed, &st);
	if (!have_state)
		committed = committed_runs(rel);
	/* the rows a TRUNCATE of the transaction removed, first */
	dml_truncate_finish(rel, wb);
	pending = spill_runs(rel, wb);
	/* what committed since the checks and lookups before the lock */
	if (have_before)
		kept = runlist_added(before, committed, &added);
	if (prechecked)
		dml_check_conflicts_since(rel, wb, kept, added, committed, pending);
	else
		dml_check_conflicts(rel, wb, committed, pending);
	if (!have_state)
		st = cat_table_state(wb->relid,
							 run_publish_row(rel, &hint) ? &hint : NULL);
	snapshot_id = st.last_snapshot_id + 1;

	/* the spilled runs come first */
	seq = st.last_seq + 1 +
		spill_finalize(rel, wb, st.last_seq + 1, snapshot_id,
					   &spilled_rows, &spilled_changelog);

	w = run_writer_begin(rel, t, 0, RUN_DATA, true);
	/* a small commit's run goes in its catalog row: no page, no page image */
	run_writer_allow_inline(w, committed);
	/* and in its snapshot's row, if small enough for one block */
	run_writer_allow_snapshot_row(w);
	s = wbuf_sorted_pin(wb, t);
	for (uint32 i = 0; i < s->npos;)
	{
		uint32		start = i;
		int64		newest;
		WbEntry    *e;

		/* the group of this key: newest first */
		for (i++; i < s->npos && pk_key_cmp(t, wbuf_entry(wb, s->pos[i])->keys,
											wbuf_entry(wb, s->pos[start])->keys) == 0; i++)
			;
		/* its version (none: every entry was written before the TRUNCATE) */
		newest = wbuf_fold(wb, &s->pos[start], i - start, InvalidCommandId);
		if (newest < 0)
			continue;
		e = wbuf_entry(wb, (uint32) newest);
		/* after a TRUNCATE no older run exists for a tombstone to hide */
		if (!PK_KIND_IS_ADD(e->kind) && truncated && pending == NIL)
			continue;
		run_writer_add(w, seq, wbuf_net_kind(wb, &s->pos[start], i - start, newest),
					   e->tup, e->keys, e->hash, wb->ids ? e->id : RUN_NO_ID);
	}
	wbuf_sorted_unpin(wb, s);
	nrows = run_writer_nrows(w);

	if (nrows == 0 && pending == NIL && !truncated)
	{
		table_close(rel, NoLock);
		return;
	}
	if (nrows > 0)
		final = run_writer_finish(w, snapshot_id);
	if (final && final->in_snapshot_row)
		note_run_in_row(final);
	/* lookup: the values before this commit are in the runs committed so far */
	changelog = prod_commit(rel, t, wb, committed, pending, snapshot_id, seq, prep,
							kept, added);

	st.last_snapshot_id = snapshot_id;
	st.commits++;
	st.last_seq = seq;
	nrows += spilled_rows;
	st.total_record_count = (truncated ? 0 : st.total_record_count) + nrows;
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	/* after a TRUNCATE, the new file has no commit log yet */
	if (truncated)
		st.log_run = st.log_block = 0;
	log_run = st.log_run;
	/* a small commit's snapshot: a record of the table's commit log */
	si = NULL;
	if (final && final->in_snapshot_row && pending == NIL && !truncated &&
		(changelog == NULL || changelog->in_snapshot_row))
		si = log_snapshot(rel, &st, snapshot_id, COMMIT_APPEND, st.total_record_count,
						  nrows, changelog ? changelog->record_count : 0,
						  t->opts.changelog_producer,
						  INSTR_TIME_GET_MILLISEC(duration), changelog, final);
	if (si == NULL)
		si = cat_snapshot_insert(wb->relid, snapshot_id,
								 truncated ? COMMIT_OVERWRITE : COMMIT_APPEND,
								 st.total_record_count, nrows,
								 (changelog ? changelog->record_count : 0) + spilled_changelog,
								 prod_name(t->opts.changelog_producer),
								 INSTR_TIME_GET_MILLISEC(duration), changelog, final);
	/* the data runs now: those read under the commit lock, and ours */
	after = list_concat(list_copy(committed), pending);
	if (final)
		after = lappend(after, final);
	cat_table_state_set_runs(&st, after);

	/*
	 * A commit that adds one data run, kept in its snapshot's row, and
	 * nothing else leaves the table's row as it is, for a number of
	 * commits (catalog_tables.c, fold_commits): its snapshot's row says what it
	 * changed.
	 */
	if (final && final->in_snapshot_row && pending == NIL && !truncated &&
		st.log_run == log_run && cat_table_state_folds(&st))
		CommandCounterIncrement();
	else
		cat_table_state_update(wb->relid, &st);
	runlist_store_commit(rel, &st, after);

	/*
	 * The snapshot's changes, read by the decoding records (wal_level =
	 * logical) and the materialized aggregates: a commit without spills or
	 * a TRUNCATE made no runs but these two (those kept in the snapshot's
	 * row are read from si), which they are handed
	 */
	written = NIL;
	if (final && !final->in_snapshot_row)
		written = lappend(written, final);
	if (changelog && !changelog->in_snapshot_row)
		written = lappend(written, changelog);
	have_written = pending == NIL && !truncated;
	changelog_wal_log_snapshot(rel, si, written, have_written);
	/* materialized aggregates (full-compaction's: at its compactions) */
	if (t->opts.changelog_producer != PK_PRODUCER_FULL_COMPACTION)
		mat_maintain(rel, si, written, have_written);

	/*
	 * Enough sorted runs for a compaction (compact_before_commit compacted
	 * at the stop trigger, if it could): the background worker is asked for
	 * one once this commit is visible.  Not for a temporary table, which
	 * the worker cannot read, nor one the worker leaves alone.
	 */
	due = compact_due(rel, after, 0, 0);
	if (due != COMPACT_NOT_DUE && nrequests < MAX_REQUESTS &&
		rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP && t->opts.worker_enabled)
		requests[nrequests++] = wb->relid;
	/*
	 * Expire every 64 commits too (the worker may be off), under the commit
	 * lock: at most 256 snapshots, more than 64 commits and their
	 * compactions add, so a backlog drains without stalling one commit.
	 * Not in a transaction being prepared, which would hold the compaction
	 * lock until COMMIT PREPARED.  Both locks are only tried: they come
	 * before the commit lock in the lock order, so waiting for them here
	 * could deadlock with a compaction waiting for ours.
	 */
	if (snapshot_id % 64 == 0 && !preparing && cat_compaction_trylock(wb->relid) &&
		cat_level0_trylock(wb->relid, NULL))
		(void) expire_snapshots(rel, 256, snapshot_id);
	table_close(rel, NoLock);
}

/*
 * Before the table's commit lock: if the commit would make as many sorted
 * runs as the stop trigger, compact first (Paimon's writers wait for a
 * compaction there), unless one is running already: then merge the
 * level-0 runs committed since it picked its inputs, if enough are there
 * (compact_level0_beside).  The merge then runs
 * beside other commits; only its switch of runs takes the commit lock.
 * Returns the committed runs it read if it did not compact (the commit
 * step's runs before its lock), else NIL.
 */
static List *
compact_before_commit(WriteBuffer *wb)
{
	Relation	rel;
	List	   *committed = NIL;

	if (wb->truncate_pos >= 0 || (wb->n == 0 && wb->spills == NIL))
		return NIL;
	rel = try_table_open(wb->relid, RowExclusiveLock);
	if (rel == NULL)
		return NIL;				/* dropped later in this transaction */
	/* the committed runs, the spilled ones, and the run the buffer makes */
	if (runlist_cached(rel, GetLatestSnapshot(), true, &committed) &&
		compact_due(rel, committed, list_length(spill_runs(rel, wb)),
					wb->n > 0 ? Max(wb->bytes, 1) : 0) == COMPACT_STOP)
	{
		int64		compacted = compact_table_nowait(rel);

		if (compacted > 0)
			committed = NIL;	/* replaced */
		else if (compacted < 0 && cat_level0_trylock(wb->relid, NULL))
		{
			/* a compaction is running: the level-0 runs since its pick */
			if (compact_level0_beside(rel) > 0)
				committed = NIL;
			else
				cat_level0_unlock(wb->relid);
		}
	}
	table_close(rel, NoLock);
	return committed;
}

/*
 * Group commit, at the end of the commit step: the commit record is to be
 * written without its flush (synchronous_commit off for it), so that the
 * commit locks can be released as soon as the transaction is visible and
 * the next commit of the table writes its record while this one flushes.
 * Only when the commit would have waited for the flush, and not with
 * synchronous standbys (a commit must not be visible before they confirm
 * it); never for PREPARE (COMMIT PREPARED flushes with the locks held).
 */
static void
group_commit_prepare(void)
{
	if (!pk_group_commit || nearly == 0 || early_overflow ||
		synchronous_commit <= SYNCHRONOUS_COMMIT_OFF ||
		(SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0'))
		return;
	saved_synchronous_commit = synchronous_commit;
	synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
}

/*
 * After the commit record, at XACT_EVENT_COMMIT: the transaction is visible
 * and its record in WAL (flushed and confirmed by synchronous standbys
 * already, unless group_commit_prepare left the flush out).  The commit
 * locks go now rather than at transaction end, which has more to do: a
 * later commit of the table takes the lock, sees this one's catalog rows
 * and writes its record after this one's, so it is never durable without
 * it; readers that must not see a commit a crash could take back wait for
 * the flush (changelog_wait_durable).  Then the flush that
 * RecordTransactionCommit left out, before COMMIT returns (and the
 * standbys' confirmation, should they have been configured since
 * group_commit_prepare: it returns at once without them).
 */
static void
group_commit_finish(void)
{
	bool		flush = saved_synchronous_commit >= 0;

	if (flush)
		synchronous_commit = saved_synchronous_commit;
	saved_synchronous_commit = -1;
	if (!early_overflow)
		for (int i = 0; i < nearly; i++)
			cat_commit_unlock(&early[i]);
	if (flush && XactLastCommitEnd != InvalidXLogRecPtr)
	{
		XLogFlush(XactLastCommitEnd);
		SyncRepWaitForLSN(XactLastCommitEnd, true);
	}
}

static void
group_commit_forget(void)
{
	if (saved_synchronous_commit >= 0)
		synchronous_commit = saved_synchronous_commit;
	saved_synchronous_commit = -1;
	nearly = 0;
	early_overflow = false;
}

static int
relid_cmp(const ListCell *a, const ListCell *b)
{
	Oid			ra = ((WriteBuffer *) lfirst(a))->relid;
	Oid			rb = ((WriteBuffer *) lfirst(b))->relid;

	return (ra > rb) - (ra < rb);
}

static void
commit_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;
	List	   *tables;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:

			/*
			 * PREPARE TRANSACTION runs the commit step as COMMIT does: the
			 * runs, changelog and snapshot are written by the transaction
			 * and become visible with it at COMMIT PREPARED (or vanish at
			 * ROLLBACK PREPARED), and its commit locks, heavyweight locks
			 * of the transaction, stay held by the prepared transaction
			 * until then, across a restart too.
			 */
			if (wbuf_all() == NIL)
				break;
			/* commit locks in relid order: no deadlock between committers */
			tables = list_copy(wbuf_all());
			list_sort(tables, relid_cmp);

			/*
			 * No statement runs: catalog writes that may TOAST a value (the
			 * tables row's data_runs) need an active snapshot.  An error
			 * pops it with the rest of the aborted transaction.
			 */
			PushActiveSnapshot(GetLatestSnapshot());
			foreach(lc, tables)
			{
				List	   *before = NIL;

				/* a prepared transaction must not hold a compaction */
				if (event == XACT_EVENT_PRE_COMMIT)
					before = compact_before_commit(lfirst(lc));
				commit_table(lfirst(lc), event == XACT_EVENT_PRE_PREPARE, before);
			}
			PopActiveSnapshot();
			list_free(tables);
			if (event == XACT_EVENT_PRE_COMMIT)
				group_commit_prepare();
			break;
		case XACT_EVENT_COMMIT:
			/* while the commit locks are held */
			runlist_commit_visible();
			group_commit_finish();
			for (int i = 0; i < nrequests; i++)
				worker_request(requests[i]);
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			group_commit_forget();
			runlist_xact_end(event == XACT_EVENT_COMMIT);
			forget_runs_in_rows(event == XACT_EVENT_COMMIT);
			lookup_forget();
			expire_xact_end(event == XACT_EVENT_COMMIT);
			nrequests = 0;
			wbuf_forget_all();
			spill_xact_end();
			break;
		default:
			break;
	}
}

/* savepoint events, for the parts that keep per-transaction state */
static void
commit_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		wbuf_subxact_commit(mySubid, parentSubid);
		spill_subxact_commit();
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		wbuf_subxact_abort(mySubid);
		spill_subxact_abort();
		dml_subxact_abort();
		expire_subxact_abort();
		runlist_subxact_abort(mySubid);
		lookup_forget();
	}
}

void
commit_init(void)
{
	RegisterXactCallback(commit_xact_callback, NULL);
	RegisterSubXactCallback(commit_subxact_callback, NULL);
}
