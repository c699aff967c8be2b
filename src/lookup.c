/*-------------------------------------------------------------------------
 *
 * lookup.c
 *	  Point reads on a pkmerge table: the newest committed or buffered
 *	  version of one key (bloom filter and block index keep it to at most
 *	  one block per run), of many keys in ascending order (a cursor that
 *	  reads each run forward), and the row behind a TID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/snapmgr.h"

#include "lookup.h"
#include "pg_compat.h"
#include "run.h"
#include "run_read.h"
#include "tid.h"

/* the row of run at ordinal, rh in block b */
static void
version_from_run(const RunInfo *run, const RunBlock *b, RunRowHeader *rh,
				 uint64 ordinal, PkVersion *v)
{
	v->tup = heap_copy_minimal_tuple(RUN_ROW_TUPLE(rh), 0);
	v->kind = RUN_ROW_KIND(rh);
	v->seq = run_row_seq(run, rh);
	v->cid = InvalidCommandId;
	pk_tid_from_row(&v->tid, run_block_row_id(run, b, (uint32) (ordinal - b->first_row)));
}

/*
 * Where key lookups found rows lately, for tables with row ids: an UPDATE or
 * DELETE by key fetches by TID the version its key's lookup has just
 * found, which would otherwise take the run's map of ids, loaded and
 * sorted once per backend for each run (a compaction's output of a
 * million rows costs each backend a sort of them, as its next update).
 */
#define FOUND_SLOTS 8

typedef struct FoundRow
{
	Oid			relid;
	int64		run_id;
	uint64		id;
	uint64		ordinal;
} FoundRow;

static FoundRow found_rows[FOUND_SLOTS];
static int	found_next = 0;

static void
found_note(PkTable *t, const RunInfo *run, uint64 id, uint64 ordinal)
{
	FoundRow   *f = &found_rows[found_next];

	f->relid = t->relid;
	f->run_id = run->run_id;
	f->id = id;
	f->ordinal = ordinal;
	found_next = (found_next + 1) % FOUND_SLOTS;
}

/*
 * The row of runs with id n, if a lookup found it lately (checked: the
 * row at the ordinal noted has that id).
 */
static bool
found_again(Relation rel, PkTable *t, List *runs, uint64 n, PkVersion *v)
{
	for (int i = 0; i < FOUND_SLOTS; i++)
	{
		FoundRow   *f = &found_rows[i];
		ListCell   *lc;

		if (f->id != n || f->relid != t->relid)
			continue;
		foreach(lc, runs)
		{
			RunInfo    *run = lfirst(lc);
			RunBlock   *pinned;
			RunRowHeader *rh;
			bool		same;

			if (run->run_id != f->run_id || run->kind != RUN_DATA)
				continue;
			rh = run_row_at(rel, t, run, f->ordinal, &pinned);
			if (rh == NULL)
				return false;
			same = run_block_row_id(run, pinned, (uint32) (f->ordinal - pinned->first_row)) == n;
			if (same)
				version_from_run(run, pinned, rh, f->ordinal, v);
			run_block_release(pinned);
			return same;
		}
	}
	return false;
}

/* The buffered record at pos, newer than any committed version. */
static void
version_from_buffer(WriteBuffer *wb, int64 pos, PkVersion *v)
{
	WbEntry    *e = wbuf_entry(wb, pos);

	v->tup = heap_copy_minimal_tuple(e->tup, 0);
	v->kind = e->kind;
	v->seq = PG_UINT64_MAX;
	v->cid = e->cid;
}

/*
 * The row rh of run (at ordinal, in block b) goes to *v if it is newer
 * than the version there (any, when not *found).
 */
static bool
take_if_newer(const RunInfo *run, const RunBlock *b, RunRowHeader *rh,
			  uint64 ordinal, PkVersion *v, bool *found)
{
	if (*found && run_row_seq(run, rh) <= v->seq)
		return false;
	if (*found)
		pfree(v->tup);
	version_from_run(run, b, rh, ordinal, v);
	*found = true;
	return true;
}

/*
 * Can run hold key, by its first and last keys?  Only told for a table
 * keyed by one integer column, whose keys' text the catalog row of a run
 * holds (integers' text is the same in every session, unlike dates' or
 * floats'); read once into the run's RunInfo.  A run passed over here
 * costs no look at its index or bloom filter: the runs of a level are
 * disjoint, and a new connection's first lookup touches fewer pages of the
 * shared caches.
 */
static bool
in_int_range(const PkTable *t, RunInfo *run, const Datum *key)
{
	int64		k;

	if (!t->int_key)
		return true;
	if (run->int_range == 0)
	{
		char	   *end_min;
		char	   *end_max;

		run->int_range = -1;
		if (run->min_key != NULL && run->max_key != NULL)
		{
			errno = 0;
			run->int_min = strtoi64(run->min_key, &end_min, 10);
			run->int_max = strtoi64(run->max_key, &end_max, 10);
			if (errno == 0 && end_min != run->min_key && *end_min == '\0' &&
				end_max != run->max_key && *end_max == '\0')
				run->int_range = 1;
		}
	}
	if (run->int_range < 0)
		return true;
	k = pk_int_key(t, key);
	return k >= run->int_min && k <= run->int_max;
}

/*
 * Probe run for key; if it holds a version newer than *v (any, when not
 * *found), that version goes to *v.
 */
static void
probe_run(Relation rel, PkTable *t, RunInfo *run, const Datum *key,
		  uint32 hash, PkVersion *v, bool *found)
{
	RunRowHeader *rh;
	uint64		ordinal;
	RunBlock   *pinned;

	if (*found && (uint64) run->max_seq < v->seq)
		return;					/* only older versions there */
	if (!in_int_range(t, run, key) ||
		!run_lookup(rel, t, run, key, hash, &rh, &ordinal, &pinned))
		return;
	/* noted whether the table has ids or not (a read by key never asks) */
	if (take_if_newer(run, pinned, rh, ordinal, v, found))
		found_note(t, run, pk_tid_number(&v->tid), ordinal);
	run_block_release(pinned);
}

/*
 * The last answer of lookup_committed, in this transaction.  A statement's
 * scan by key, its check at UPDATE or DELETE that the version it read is
 * still its key's newest, and the lookup producer's commit ask the same
 * question of the same runs when no commit of the table came between
 * them: runs are immutable, so the answer is the same.  A run is told by
 * its id and extent (ids are taken again only after an abort, and the
 * memo goes at every transaction end and savepoint rollback).
 */
typedef struct MemoRun
{
	int64		run_id;
	int64		max_seq;
	BlockNumber start_block;
} MemoRun;

typedef struct LookupMemo
{
	bool		valid;
	Oid			relid;
	uint32		hash;
	MinimalTuple key;			/* pk_key_form */
	int			nruns;
	int			maxruns;
	MemoRun    *runs;			/* in list order */
	bool		found;
	PkVersion	v;				/* tup: the memo's copy */
} LookupMemo;

static LookupMemo memo;
static MemoryContext memo_cxt = NULL;

static bool
memo_same_runs(List *runs)
{
	int			i = 0;
	ListCell   *lc;

	if (list_length(runs) != memo.nruns)
		return false;
	foreach(lc, runs)
	{
		RunInfo    *run = lfirst(lc);

		if (run->run_id != memo.runs[i].run_id ||
			run->max_seq != memo.runs[i].max_seq ||
			run->start_block != memo.runs[i].start_block)
			return false;
		i++;
	}
	return true;
}

/* lookup_committed's answer for key among runs, if the memo has it */
static bool
memo_get(PkTable *t, List *runs, const Datum *key, uint32 hash, PkVersion *v,
		 bool *found)
{
	Datum		memokey[INDEX_MAX_KEYS];

	if (!memo.valid || memo.relid != t->relid || memo.hash != hash ||
		!memo_same_runs(runs))
		return false;
	pk_key_deform(t, memo.key, memokey);
	if (pk_key_cmp(t, memokey, key) != 0)
		return false;
	*found = memo.found;
	if (memo.found)
	{
		*v = memo.v;
		v->tup = heap_copy_minimal_tuple(memo.v.tup, 0);
	}
	return true;
}

static void
memo_put(PkTable *t, List *runs, const Datum *key, uint32 hash,
		 const PkVersion *v, bool found)
{
	MemoryContext old;
	int			i = 0;
	ListCell   *lc;

	if (memo_cxt == NULL)
		memo_cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge lookup memo",
										 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(memo_cxt);
	memo.valid = false;
	if (memo.key != NULL)
		pfree(memo.key);
	memo.key = pk_key_form(t, key);
	if (memo.v.tup != NULL)
		pfree(memo.v.tup);
	memo.v.tup = NULL;
	if (list_length(runs) > memo.maxruns)
	{
		memo.maxruns = Max(list_length(runs), 2 * memo.maxruns);
		if (memo.runs != NULL)
			pfree(memo.runs);
		memo.runs = palloc(sizeof(MemoRun) * memo.maxruns);
	}
	foreach(lc, runs)
	{
		RunInfo    *run = lfirst(lc);

		memo.runs[i].run_id = run->run_id;
		memo.runs[i].max_seq = run->max_seq;
		memo.runs[i].start_block = run->start_block;
		i++;
	}
	memo.nruns = i;
	memo.relid = t->relid;
	memo.hash = hash;
	memo.found = found;
	if (found)
	{
		memo.v = *v;
		memo.v.tup = heap_copy_minimal_tuple(v->tup, 0);
	}
	memo.valid = true;
	MemoryContextSwitchTo(old);
}

/*
 * The transaction ended or a savepoint rolled back.  The memo's memory is
 * kept for the next one unless a large row made it large.
 */
void
lookup_forget(void)
{
	memo.valid = false;
	if (memo_cxt == NULL || MemoryContextMemAllocated(memo_cxt, false) <= 64 * 1024)
		return;
	MemoryContextReset(memo_cxt);
	memo.key = NULL;
	memo.v.tup = NULL;
	memo.runs = NULL;
	memo.maxruns = 0;
}

/*
 * The newest version of key among runs (tombstones included).  Runs are
 * not sorted by sequence number, and whether they overlap in them is not
 * assumed: every run that may hold a newer version than the one found is
 * probed.  The level-0 runs come first, then the levels upwards, which
 * hold older rows the higher they are: once a newer level has the key, the
 * older ones (their newest rows older than its version) are skipped, run
 * index, bloom filter and block.  In a table of small commits most keys
 * are in the levels, a third or so in a level above the bottom.
 */
bool
lookup_committed(Relation rel, PkTable *t, List *runs, const Datum *key,
				 uint32 hash, PkVersion *v)
{
	bool		found = false;

	if (runs == NIL)
		return false;
	if (memo_get(t, runs, key, hash, v, &found))
		return found;
	/* a pass per level that has runs (up to num_levels: not one per level) */
	for (int level = 0; level >= 0;)
	{
		int			next = -1;
		ListCell   *lc;

		foreach(lc, runs)
		{
			RunInfo    *run = lfirst(lc);

			if (run->level == level)
				probe_run(rel, t, run, key, hash, v, &found);
			else if (run->level > level && (next < 0 || run->level < next))
				next = run->level;
		}
		level = next;
	}
	memo_put(t, runs, key, hash, v, found);
	return found;
}

/*
 * Newest versions of keys looked up in ascending order, among the same
 * runs each time: lookup_committed's answers, from a seeker per run
 * (run_seek) that goes on from the row it found last.  A commit of many
 * keys (the lookup producer's) reads each block of the runs it looks in
 * once, in order, and finds most keys a row or two past the last one.
 */
struct LookupCursor
{
	Relation	rel;
	PkTable    *t;
	int			nruns;
	RunSeeker  *seekers;		/* level 0 first, then the levels upwards */
};

/* lookup_committed's order: by level, in list order within one */
static int
seeker_cmp(const void *a, const void *b)
{
	const RunSeeker *x = a;
	const RunSeeker *y = b;

	if (x->run->level != y->run->level)
		return x->run->level < y->run->level ? -1 : 1;
	return (x->listpos > y->listpos) - (x->listpos < y->listpos);
}

LookupCursor *
lookup_cursor_begin(Relation rel, PkTable *t, List *runs)
{
	LookupCursor *c = palloc(sizeof(LookupCursor));
	ListCell   *lc;

	c->rel = rel;
	c->t = t;
	c->nruns = 0;
	c->seekers = palloc(sizeof(RunSeeker) * Max(list_length(runs), 1));
	foreach(lc, runs)
	{
		run_seek_init(&c->seekers[c->nruns], lfirst(lc));
		c->seekers[c->nruns].listpos = c->nruns;
		c->nruns++;
	}
	qsort(c->seekers, c->nruns, sizeof(RunSeeker), seeker_cmp);
	return c;
}

/* lookup_committed of key, greater than every key looked up before */
bool
lookup_cursor_next(LookupCursor *c, const Datum *key, uint32 hash, PkVersion *v)
{
	bool		found = false;

	for (int i = 0; i < c->nruns; i++)
	{
		RunSeeker  *s = &c->seekers[i];
		RunRowHeader *rh;
		uint64		ordinal;

		if (found && (uint64) s->run->max_seq < v->seq)
			continue;			/* only older versions there */
		if (run_seek(c->rel, c->t, s, key, hash, &rh, &ordinal))
			(void) take_if_newer(s->run, run_seek_block(s), rh, ordinal, v, &found);
	}
	return found;
}

void
lookup_cursor_end(LookupCursor *c)
{
	for (int i = 0; i < c->nruns; i++)
		run_seek_end(&c->seekers[i]);
	pfree(c->seekers);
	pfree(c);
}

/*
 * The newest version of key in the write buffer visible to curcid.
 */
bool
lookup_buffered(WriteBuffer *wb, PkTable *t, const Datum *key, uint32 hash,
				CommandId curcid, PkVersion *v)
{
	int64		pos;

	if (wb == NULL)
		return false;
	pos = wbuf_lookup(wb, t, key, hash, curcid);
	if (pos < 0)
		return false;
	version_from_buffer(wb, pos, v);
	wbuf_tid(wb, (uint32) pos, &v->tid);
	return true;
}

/*
 * The row a TID names, whatever version of its key it is.
 */
bool
lookup_tid(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
		   ItemPointer tid, PkVersion *v)
{
	uint64		n;
	ListCell   *lc;

	if (!pk_tid_valid(tid))
		return false;
	n = pk_tid_number(tid);
	if (pk_table_row_ids(t) || pk_tid_is_wbuf(tid))
	{
		int64		pos = wbuf_find_tid(wb, tid);

		if (pos >= 0)
		{
			version_from_buffer(wb, pos, v);
			v->tid = *tid;
			return true;
		}
		if (!pk_table_row_ids(t))
			return false;
		if (found_again(rel, t, runs, n, v))
			return true;
	}
	foreach(lc, runs)
	{
		RunInfo    *run = lfirst(lc);
		RunBlock   *pinned;
		RunRowHeader *rh;
		uint64		ordinal;

		if (pk_table_row_ids(t))
		{
			/* a row id: any data run may hold it */
			if (run->kind != RUN_DATA || !run_find_id(rel, t, run, n, &ordinal))
				continue;
		}
		else if (n < (uint64) run->row_base ||
				 n >= (uint64) (run->row_base + run->record_count))
			continue;
		else
			ordinal = n - run->row_base;
		rh = run_row_at(rel, t, run, ordinal, &pinned);
		if (rh == NULL)
			return false;
		version_from_run(run, pinned, rh, ordinal, v);
		run_block_release(pinned);
		return true;
	}
	return false;
}
