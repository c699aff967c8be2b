/*-------------------------------------------------------------------------
 *
 * write_spill.c
 *	  Spilling: a write buffer that outgrows its table's write_buffer_size
 *	  writes part of itself out as an L0 run of the still running
 *	  transaction (a pending run), and the commit renumbers pending runs
 *	  into their place in the table's sequence order (spill_finalize).
 *
 *	  This file owns which entries may go and when, the pending runs, and
 *	  the executor hooks that tell which commands still run; the buffer is
 *	  write_buffer.c's, writing a run run_write.c's.
 *
 *	  A spilled entry must read as it did in the buffer.  A pending run's
 *	  catalog row is visible, through MVCC, to every command after the one
 *	  that inserted it and to no earlier one, so no entry a running command
 *	  can see may go (try_spill).  Readers let the buffer win over runs, and
 *	  pending runs are numbered above committed ones (run.h), so a key that
 *	  an entry left in the buffer holds stays whole there (keys_held_before).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog_runs.h"
#include "pg_compat.h"
#include "run.h"
#include "run_write.h"
#include "write_spill.h"

/* a read of a key found absent: the read's read_seq, flagged */
#define SPILL_READ_ABSENT	(UINT64CONST(1) << 55)

/* the executors running in this backend, and what they see */
typedef struct RunningReader
{
	QueryDesc  *qd;
	CommandId	curcid;
	int			nestlevel;
} RunningReader;

static RunningReader *readers = NULL;
static int	nreaders = 0;
static int	maxreaders = 0;

static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

static void spill_at_statement_end(void);

static void
spill_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	if (nreaders == maxreaders)
	{
		maxreaders = Max(8, maxreaders * 2);
		readers = readers
			? repalloc(readers, sizeof(RunningReader) * maxreaders)
			: MemoryContextAlloc(TopMemoryContext, sizeof(RunningReader) * maxreaders);
	}
	readers[nreaders].qd = queryDesc;
	readers[nreaders].curcid = queryDesc->estate->es_snapshot ?
		queryDesc->estate->es_snapshot->curcid : FirstCommandId;
	readers[nreaders].nestlevel = GetCurrentTransactionNestLevel();
	nreaders++;
}

static void
spill_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);

	for (int i = nreaders; i-- > 0;)
		if (readers[i].qd == queryDesc)
		{
			readers[i] = readers[--nreaders];
			break;
		}
	spill_at_statement_end();
}

/*
 * The first command whose writes no running executor sees: an executor
 * sees the commands before its snapshot's curcid.
 */
static CommandId
running_floor(void)
{
	CommandId	floor = FirstCommandId;

	for (int i = 0; i < nreaders; i++)
		floor = Max(floor, readers[i].curcid);
	return floor;
}

/* executors of a transaction that ended never reach ExecutorEnd */
void
spill_xact_end(void)
{
	nreaders = 0;
}

/*
 * A savepoint released: executors it started (cursors) run on in its
 * parent, whose later rollback ends them.
 */
void
spill_subxact_commit(void)
{
	int			level = GetCurrentTransactionNestLevel();

	for (int i = 0; i < nreaders; i++)
		if (readers[i].nestlevel >= level)
			readers[i].nestlevel = level - 1;
}

void
spill_subxact_abort(void)
{
	int			level = GetCurrentTransactionNestLevel();

	for (int i = nreaders; i-- > 0;)
		if (readers[i].nestlevel >= level)
			readers[i] = readers[--nreaders];
}

static bool
has_after_row_triggers(Relation rel, bool deferrable_only)
{
	TriggerDesc *td = rel->trigdesc;

	if (td == NULL)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *tg = &td->triggers[i];

		if (TRIGGER_FOR_ROW(tg->tgtype) && TRIGGER_FOR_AFTER(tg->tgtype) &&
			(!deferrable_only || tg->tgdeferrable))
			return true;
	}
	return false;
}

/*
 * The read a key's records left, as its spilled row carries it.  A
 * read-modify-write leaves what it read (PkRead) for the commit's
 * lost-update check; a spilled key keeps it in its row's sequence field,
 * which pending runs do not use (run_row_seq reads the catalog's).
 */
static uint64
encode_read(const PkRead *read)
{
	if (read->read_seq == 0 || read->read_seq == PG_UINT64_MAX)
		return 0;				/* a blind write, or a read of our own row */
	if (read->base_seq != 0)
		return read->base_seq;
	return SPILL_READ_ABSENT | read->read_seq;
}

/* what a spilled row's sequence field says was read (read_seq 0: nothing) */
void
spill_decode_read(uint64 stored, PkRead *read)
{
	memset(read, 0, sizeof(PkRead));
	if (stored == 0)
		return;
	if (stored & SPILL_READ_ABSENT)
		read->read_seq = stored & ~SPILL_READ_ABSENT;
	else
	{
		read->base_seq = stored;
		read->read_seq = 1;
	}
}

/*
 * Keys of the suffix [from, n) that entries before it (after the last
 * TRUNCATE) hold too: keep[i] for the suffix's position from + i.
 */
static bool *
keys_held_before(WriteBuffer *wb, PkTable *t, uint32 from,
				 const uint32 *sorted, uint32 nsorted)
{
	bool	   *keep = palloc0(sizeof(bool) * Max(wb->n - from, 1));
	uint32		nbefore;
	uint32	   *before = wbuf_sort_range(wb, t, (uint32) (wb->truncate_pos + 1),
										 from, &nbefore);
	uint32		i = 0,
				j = 0;

	while (i < nsorted && j < nbefore)
	{
		int			c = pk_key_cmp(t, wbuf_entry(wb, sorted[i])->keys,
								   wbuf_entry(wb, before[j])->keys);

		if (c < 0)
			i++;
		else if (c > 0)
			j++;
		else
			keep[sorted[i++] - from] = true;
	}
	pfree(before);
	return keep;
}

/*
 * Write [from, n) out, but for the keys kept, and take it out of the log.
 * Each spilled key goes out once, as its newest version; the input
 * producer's records go out as a changelog run, in the order written.
 * False if every key was kept.
 */
static bool
spill_range(Relation rel, PkTable *t, WriteBuffer *wb, uint32 from)
{
	uint32		nsorted;
	uint32	   *sorted = wbuf_sort_range(wb, t, from, wb->n, &nsorted);
	bool	   *keep = keys_held_before(wb, t, from, sorted, nsorted);
	RunWriter  *w = run_writer_begin(rel, t, 0, RUN_DATA, true);
	uint64		seq;
	CommandId	max_cid = FirstCommandId;
	WbSpill    *sp;
	MemoryContext old;

	for (uint32 i = 0; i < nsorted;)
	{
		uint32		start = i;
		WbEntry    *e = wbuf_entry(wb, sorted[start]);
		uint64		read = 0;

		/* the group of this key, newest first; at most one read not our own */
		for (; i < nsorted && pk_key_cmp(t, wbuf_entry(wb, sorted[i])->keys, e->keys) == 0; i++)
		{
			WbEntry    *g = wbuf_entry(wb, sorted[i]);

			read = Max(read, encode_read(&g->read));
			max_cid = Max(max_cid, g->cid);
		}
		if (keep[sorted[start] - from])
			continue;
		/* the suffix lies after the last TRUNCATE: a version is visible */
		e = wbuf_entry(wb, (uint32) wbuf_fold(wb, &sorted[start], i - start,
											   InvalidCommandId));
		run_writer_add(w, read, e->kind, e->tup, e->keys, e->hash,
					   wb->ids ? e->id : RUN_NO_ID);
	}
	if (run_writer_nrows(w) == 0)
		return false;			/* every key is held before the suffix */

	/* a pending number, above every committed one, until spill_finalize */
	seq = PK_PENDING_SEQ + ++wb->nspills;
	run_writer_set_seq(w, seq);
	old = MemoryContextSwitchTo(wb->cxt);
	sp = palloc(sizeof(WbSpill));
	/* its row is this subtransaction's: ROLLBACK TO removes it */
	sp->run = run_writer_finish(w, 0);
	sp->changelog = NULL;
	sp->max_cid = max_cid;
	sp->subid = GetCurrentSubTransactionId();
	wb->spills = lappend(wb->spills, sp);
	MemoryContextSwitchTo(old);

	if (t->opts.changelog_producer == PK_PRODUCER_INPUT)
	{
		RunWriter  *cw = run_writer_begin(rel, t, 0, RUN_CHANGELOG, false);
		uint32		norder;
		uint32	   *order = wbuf_input_order(wb, t, sorted, nsorted, from, wb->n,
											 keep, &norder);

		for (uint32 i = 0; i < norder; i++)
		{
			WbEntry    *e = wbuf_entry(wb, order[i]);

			run_writer_add(cw, 0, e->kind, e->tup, e->keys, 0, RUN_NO_ID);
		}
		pfree(order);
		run_writer_set_seq(cw, seq);
		old = MemoryContextSwitchTo(wb->cxt);
		sp->changelog = run_writer_finish(cw, 0);
		MemoryContextSwitchTo(old);
	}
	wbuf_remove(wb, from, keep);
	pfree(sorted);
	pfree(keep);
	return true;
}

/*
 * Spill the longest suffix of the log whose entries
 *	  - were written by the current subtransaction (ROLLBACK TO then drops
 *		the run's row with the rest of the subtransaction),
 *	  - are invisible to every running executor (cid >= its curcid: the
 *		executor hooks above keep the curcids of those running),
 *	  - come after the last TRUNCATE, and after what the sorted views that
 *		scans hold reach (wbuf_pinned_extent),
 *	  - do not belong to an INSERT ... ON CONFLICT still running, which
 *		checks its own proposed rows against each other, or a statement
 *		that moves keys (wbuf_fold orders its records), nor to a command
 *		nested in one (nospill_cid),
 * and only when the suffix is worth a run (half the buffer size).
 */
static void
try_spill(Relation rel, PkTable *t, WriteBuffer *wb)
{
	CommandId	floor = running_floor();
	SubTransactionId subid = GetCurrentSubTransactionId();
	uint32		from = wb->n;
	uint32		extent = wbuf_pinned_extent(wb);
	Size		bytes = 0;

	while (from > extent && (int64) from - 1 > wb->truncate_pos)
	{
		WbEntry    *e = wbuf_entry(wb, from - 1);

		if (e->subid != subid || e->cid < floor || e->cid >= wb->nospill_cid)
			break;
		bytes += wbuf_entry_bytes(wb, e);
		from--;
	}
	if (bytes < (Size) t->opts.write_buffer_size / 2 ||
		!spill_range(rel, t, wb, from))
	{
		/* not yet: look again when the buffer has grown by a quarter */
		wb->spill_check_bytes = wb->bytes + t->opts.write_buffer_size / 4;
		return;
	}
	wb->spill_check_bytes = wb->bytes;
}

/*
 * After a write: spill when the buffer is over its size, unless AFTER ROW
 * triggers may still name its rows by TID.  A spilled row's TID comes from
 * its run's blocks, and AFTER ROW triggers name rows by TID until their
 * statement ends (deferred ones until commit): tables with AFTER ROW
 * triggers spill only between statements (spill_at_statement_end), tables
 * with deferrable ones never.
 */
void
spill_after_write(Relation rel, PkTable *t, WriteBuffer *wb)
{
	if (wb->bytes <= (Size) t->opts.write_buffer_size ||
		wb->bytes <= wb->spill_check_bytes ||
		has_after_row_triggers(rel, false))
		return;
	try_spill(rel, t, wb);
}

/*
 * At the end of every statement, the tables over their size spill what the
 * executors still running cannot see.  It catches transactions of many
 * small statements, and tables with AFTER ROW triggers, whose events have
 * fired by now.
 */
static void
spill_at_statement_end(void)
{
	ListCell   *lc;

	foreach(lc, wbuf_all())
	{
		WriteBuffer *wb = lfirst(lc);
		Relation	rel;
		PkTable    *t;

		/* no command runs: an ON CONFLICT that did has ended */
		if (nreaders == 0)
			wb->nospill_cid = InvalidCommandId;
		/* write_buffer_size is 1MB at least */
		if (wb->bytes <= 1024 * 1024)
			continue;
		rel = try_table_open(wb->relid, NoLock);
		if (rel == NULL)
			continue;			/* dropped in this transaction */
		t = pk_table(rel);
		if (wb->bytes > (Size) t->opts.write_buffer_size &&
			!has_after_row_triggers(rel, true) &&
			(nreaders == 0 || !has_after_row_triggers(rel, false)))
			try_spill(rel, t, wb);
		table_close(rel, NoLock);
	}
}

/*
 * Did a command from cid on write key into a spilled run?  (A row updated
 * twice by one command: heap says TM_SelfModified the second time.)
 */
bool
spill_lookup_since(Relation rel, PkTable *t, WriteBuffer *wb, CommandId cid,
				   const Datum *key, uint32 hash, PkVersion *v)
{
	ListCell   *lc;
	List	   *runs = NIL;
	bool		found;

	if (wb == NULL)
		return false;
	foreach(lc, wb->spills)
	{
		WbSpill    *sp = lfirst(lc);

		if (sp->run && sp->max_cid >= cid)
			runs = lappend(runs, sp->run);
	}
	if (runs == NIL)
		return false;
	found = lookup_committed(rel, t, runs, key, hash, v);
	list_free(runs);
	if (found)
		v->cid = cid;
	return found;
}

/*
 * The data runs the transaction spilled and still has (ROLLBACK TO takes a
 * savepoint's out of wb->spills), in rel's current file (a TRUNCATE since
 * gave the table a new one), oldest first.
 */
List *
spill_runs(Relation rel, WriteBuffer *wb)
{
	List	   *runs = NIL;
	ListCell   *lc;

	foreach(lc, wb->spills)
	{
		RunInfo    *r = ((WbSpill *) lfirst(lc))->run;

		if (r && r->relfilenode == RelationFileNumber(rel))
			runs = lappend(runs, r);
	}
	return runs;
}

/*
 * At commit, under the commit lock: the spills the transaction still has
 * (spill_runs, and the changelog runs of a TRUNCATE's removed rows) take
 * the sequence numbers from first_seq on, in the order they were made, and
 * the snapshot id; each spill's data run and the input producer's
 * changelog run share one.  Their RunInfos are renumbered too.
 * Returns how many sequence numbers were used; *rows and *changelog_rows
 * count their records.
 */
int
spill_finalize(Relation rel, WriteBuffer *wb, uint64 first_seq,
			   int64 snapshot_id, int64 *rows, int64 *changelog_rows)
{
	Oid			relid = RelationGetRelid(rel);
	ListCell   *lc;
	int			used = 0;

	*rows = 0;
	*changelog_rows = 0;
	foreach(lc, wb->spills)
	{
		WbSpill    *sp = lfirst(lc);
		int64		seq = (int64) first_seq + used;

		if ((sp->run ? sp->run : sp->changelog)->relfilenode != RelationFileNumber(rel))
			continue;
		/* a TRUNCATE's removals have a changelog run alone */
		if (sp->run)
		{
			*rows += sp->run->record_count;
			cat_run_finalize(relid, sp->run->run_id, seq, snapshot_id);
			sp->run->min_seq = sp->run->max_seq = seq;
			sp->run->created_snapshot = snapshot_id;
		}
		if (sp->changelog)
		{
			*changelog_rows += sp->changelog->record_count;
			cat_run_finalize(relid, sp->changelog->run_id, seq, snapshot_id);
		}
		used++;
	}
	return used;
}

void
spill_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = spill_executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = spill_executor_end;
}
