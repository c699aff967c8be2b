/*-------------------------------------------------------------------------
 *
 * write_buffer.c
 *	  Write buffers: per transaction and table, the log of records written
 *	  (appended, never moved), a key-sorted view of it built on demand for
 *	  readers, lookups of a key's newest version visible to a command, and
 *	  savepoint handling.
 *
 * Buffers live in TopTransactionContext and vanish with the transaction;
 * write_commit.c flushes them at pre-commit.  A reader sees the entries written
 * by earlier commands (cid < its snapshot's curcid), never its own command's
 * (Halloween safety).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "catalog_row_ids.h"
#include "pg_compat.h"
#include "tid.h"
#include "write_buffer.h"

/*
 * Shared memory, per backend (by its PGPROC's number): the pkmerge tables its
 * transaction has buffered writes to, for its parallel workers, which
 * cannot read them (am_scan.c refuses).  Written by the backend only, read
 * by its workers while it waits.
 */
#define WRITER_RELIDS 4
typedef struct BackendWrites
{
	Oid			relids[WRITER_RELIDS];
	bool		overflow;		/* and more */
} BackendWrites;

static BackendWrites *writes = NULL;

Size
wbuf_shmem_size(void)
{
	return mul_size(MaxBackends + NUM_AUXILIARY_PROCS, sizeof(BackendWrites));
}

void
wbuf_shmem_init(void)
{
	bool		found;

	writes = ShmemInitStruct("pkchangelog backend writes", wbuf_shmem_size(), &found);
	if (!found)
		memset(writes, 0, wbuf_shmem_size());
}

/* this backend's transaction buffered writes to relid */
static void
note_writes(Oid relid)
{
	BackendWrites *w;

	if (writes == NULL || MyProc == NULL)
		return;
	w = &writes[GetNumberFromPGProc(MyProc)];
	for (int i = 0; i < WRITER_RELIDS; i++)
		if (w->relids[i] == InvalidOid || w->relids[i] == relid)
		{
			w->relids[i] = relid;
			return;
		}
	w->overflow = true;
}

/* this backend's transaction ended */
static void
clear_writes(void)
{
	if (writes && MyProc)
		memset(&writes[GetNumberFromPGProc(MyProc)], 0, sizeof(BackendWrites));
}

/*
 * In a parallel worker: has the leader's transaction buffered writes to
 * relid?  (Without shared memory, never expected: assume it has.)
 */
bool
wbuf_leader_writes(Oid relid)
{
	BackendWrites *w;

	if (MyProc == NULL || MyProc->lockGroupLeader == NULL ||
		MyProc->lockGroupLeader == MyProc)
		return false;
	if (writes == NULL)
		return true;
	w = &writes[GetNumberFromPGProc(MyProc->lockGroupLeader)];
	if (w->overflow)
		return true;
	for (int i = 0; i < WRITER_RELIDS; i++)
		if (w->relids[i] == relid)
			return true;
	return false;
}

typedef struct WbEntryRef
{
	Oid			relid;			/* hash key */
	WriteBuffer *wb;
} WbEntryRef;

static HTAB *buffers = NULL;
static List *buffer_order = NIL;	/* in order of first write */
static WriteBuffer *last = NULL;	/* the one wbuf_get returned last */
static bool closed = false;		/* wbuf_close: no new writes */

WriteBuffer *
wbuf_get(Oid relid, bool create)
{
	WbEntryRef *ref;
	bool		found;

	if (create && closed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot write to pkmerge table \"%s\" while the transaction commits",
						get_rel_name(relid)),
				 errdetail("The write came from a trigger on a materialized aggregate, which is kept at commit."),
				 errhint("Triggers on a materialized aggregate's table cannot write to pkmerge tables.")));
	/* a statement writing many rows asks for the same buffer each time */
	if (last && last->relid == relid)
		return last;
	if (buffers == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(WbEntryRef);
		ctl.hcxt = TopTransactionContext;
		buffers = hash_create("pkmerge write buffers", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	ref = hash_search(buffers, &relid, create ? HASH_ENTER : HASH_FIND, &found);
	if (ref == NULL)
		return NULL;
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		WriteBuffer *wb = palloc0(sizeof(WriteBuffer));

		wb->relid = relid;
		wb->cxt = AllocSetContextCreate(TopTransactionContext, "pkmerge write buffer",
										ALLOCSET_DEFAULT_SIZES);
		/* no power-of-two rounding: rows are most of a big buffer's memory */
		wb->rowcxt = GenerationContextCreate(wb->cxt, "pkmerge write buffer rows",
											 ALLOCSET_DEFAULT_SIZES);
		wb->maxsegs = 4;
		wb->segs = MemoryContextAlloc(wb->cxt, sizeof(WbEntry *) * wb->maxsegs);
		wb->seg0_cap = 16;
		wb->segs[0] = MemoryContextAlloc(wb->cxt, sizeof(WbEntry) * wb->seg0_cap);
		wb->nsegs = 1;
		wb->truncate_pos = -1;
		wb->rmw_snapshot = PG_INT64_MAX;
		wb->nospill_cid = InvalidCommandId;
		wb->key_blind_cid = InvalidCommandId;
		ref->wb = wb;
		buffer_order = lappend(buffer_order, wb);
		note_writes(relid);
		MemoryContextSwitchTo(old);
	}
	last = ref->wb;
	return last;
}

/*
 * Append a record; the tuple is copied if asked, else it must live in
 * wb->rowcxt already.  Returns its position.
 */
/* room for entry wb->n */
static void
make_room(WriteBuffer *wb)
{
	if (wb->n == PG_UINT32_MAX - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many rows written to one pkmerge table in one transaction"),
				 errhint("Commit in smaller transactions.")));
	if (wb->n < WB_SEG_SIZE)
	{
		if (wb->n == wb->seg0_cap)
		{
			wb->seg0_cap *= 2;
			wb->segs[0] = repalloc(wb->segs[0], sizeof(WbEntry) * wb->seg0_cap);
		}
		return;
	}
	if ((wb->n >> WB_SEG_SHIFT) < wb->nsegs)
		return;
	if (wb->nsegs == wb->maxsegs)
	{
		wb->maxsegs *= 2;
		wb->segs = repalloc(wb->segs, sizeof(WbEntry *) * wb->maxsegs);
	}
	wb->segs[wb->nsegs++] = MemoryContextAlloc(wb->cxt, sizeof(WbEntry) * WB_SEG_SIZE);
}

uint32
wbuf_append(WriteBuffer *wb, PkTable *t, uint8 kind, MinimalTuple tup,
			CommandId cid, bool copy)
{
	MemoryContext old;
	WbEntry    *e;

	make_room(wb);
	old = MemoryContextSwitchTo(wb->rowcxt);
	e = wbuf_entry(wb, wb->n);
	e->tup = tup && copy ? heap_copy_minimal_tuple(tup, 0) : tup;
	e->keys = palloc(sizeof(Datum) * t->nkeys);
	if (tup)
	{
		pk_row_key(t, e->tup, e->keys);
		e->hash = pk_key_hash(t, e->keys);
	}
	wb->nkeys = t->nkeys;
	wb->bytes += wbuf_entry_bytes(wb, e);
	/* once buffer TIDs are out, the transaction keeps them (see write_commit.c) */
	if (!wb->ids && wb->next_tidpos == 0)
		wb->ids = pk_table_row_ids(t);
	if (wb->ids)
	{
		/* a row id, from the transaction's chunk of them */
		if (wb->next_id == wb->end_id)
		{
			uint32		chunk = Min(Max(wb->n, 16), 4096);

			wb->next_id = rowids_reserve(t->relid, chunk);
			wb->end_id = wb->next_id + chunk;
		}
		e->id = wb->next_id++;
	}
	else
		e->id = (uint64) PK_WBUF_BLOCK0 * PK_TIDS_PER_BLOCK + wb->next_tidpos++;
	e->cid = cid;
	e->subid = GetCurrentSubTransactionId();
	e->kind = kind;
	memset(&e->read, 0, sizeof(PkRead));
	if (kind == WB_TRUNCATE)
		wb->truncate_pos = wb->n;
	MemoryContextSwitchTo(old);
	return wb->n++;
}

/* sort positions by key, newest (highest position) first within a key */
static PkTable *sort_table;
static WriteBuffer *sort_wb;

static inline int
pos_cmp(uint32 a, uint32 b)
{
	int			c = pk_key_cmp(sort_table, wbuf_entry(sort_wb, a)->keys,
							   wbuf_entry(sort_wb, b)->keys);

	if (c != 0)
		return c;
	return (a < b) - (a > b);
}

/*
 * What the sort moves: a position with its first key column beside it, so
 * that most comparisons read neither the entry nor its keys (a sort of
 * 400k entries took twice the time through them, each a cache miss).
 */
typedef struct SortItem
{
	Datum		key0;
	uint32		pos;
} SortItem;

static inline int
item_cmp(const SortItem *a, const SortItem *b)
{
	int			c = ApplySortComparator(a->key0, false, b->key0, false,
										(SortSupport) &sort_table->keys[0].ssup);

	if (c == 0 && sort_table->nkeys > 1)
	{
		const Datum *ka = wbuf_entry(sort_wb, a->pos)->keys;
		const Datum *kb = wbuf_entry(sort_wb, b->pos)->keys;

		for (int i = 1; i < sort_table->nkeys && c == 0; i++)
			c = ApplySortComparator(ka[i], false, kb[i], false,
									(SortSupport) &sort_table->keys[i].ssup);
	}
	if (c != 0)
		return c;
	return (a->pos < b->pos) - (a->pos > b->pos);
}

#define ST_SORT sort_items
#define ST_ELEMENT_TYPE SortItem
#define ST_COMPARE(a, b) item_cmp(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The positions of [from, to) other than TRUNCATE marks, by key and newest
 * first within a key, palloc'd.
 */
uint32 *
wbuf_sort_range(WriteBuffer *wb, PkTable *t, uint32 from, uint32 to,
				uint32 *count)
{
	uint32	   *pos = palloc(sizeof(uint32) * Max(to - from, 1));
	SortItem   *items = palloc(sizeof(SortItem) * Max(to - from, 1));
	uint32		n = 0;

	for (uint32 p = from; p < to; p++)
	{
		WbEntry    *e = wbuf_entry(wb, p);

		if (e->kind == WB_TRUNCATE)
			continue;
		items[n].key0 = e->keys[0];
		items[n++].pos = p;
	}
	sort_table = t;
	sort_wb = wb;
	sort_items(items, n);
	for (uint32 i = 0; i < n; i++)
		pos[i] = items[i].pos;
	pfree(items);
	*count = n;
	return pos;
}

/*
 * A sorted view covering every entry so far, pinned for the caller.  The
 * previous view, if no scan holds it, is freed; a new view merges the
 * previous one with the entries appended since, so a stream of small
 * writes and reads costs linear work per read, not a full sort.
 */
WbSorted *
wbuf_sorted_pin(WriteBuffer *wb, PkTable *t)
{
	WbSorted   *prev = wb->sorted;
	WbSorted   *s;
	MemoryContext old;
	uint32		from = prev ? prev->n : 0;
	uint32	   *tail;
	uint32		ntail,
				i = 0,
				j = 0,
				k = 0;

	if (prev && prev->n == wb->n)
	{
		prev->refcount++;
		return prev;
	}

	s = MemoryContextAlloc(wb->cxt, sizeof(WbSorted));
	s->refcount = 1;
	s->n = wb->n;
	s->pos = MemoryContextAllocHuge(wb->cxt, sizeof(uint32) * Max(wb->n, 1));
	tail = wbuf_sort_range(wb, t, from, wb->n, &ntail);
	if (from == 0)
	{
		memcpy(s->pos, tail, sizeof(uint32) * ntail);
		k = ntail;
	}
	else
	{
		while (i < prev->npos && j < ntail)
			s->pos[k++] = pos_cmp(prev->pos[i], tail[j]) <= 0 ? prev->pos[i++] : tail[j++];
		while (i < prev->npos)
			s->pos[k++] = prev->pos[i++];
		while (j < ntail)
			s->pos[k++] = tail[j++];
	}
	s->npos = k;
	pfree(tail);
	old = MemoryContextSwitchTo(wb->cxt);
	wb->views = lappend(wb->views, s);
	MemoryContextSwitchTo(old);

	if (prev)
		wbuf_sorted_unpin(wb, prev);	/* the buffer's own reference */
	wb->sorted = s;
	s->refcount++;				/* the buffer's reference */
	return s;
}

void
wbuf_sorted_unpin(WriteBuffer *wb, WbSorted *s)
{
	if (--s->refcount == 0)
	{
		wb->views = list_delete_ptr(wb->views, s);
		pfree(s->pos);
		pfree(s);
	}
}

/*
 * The memory an entry takes: its row, the entry and its key array (what
 * write_buffer_size bounds).
 */
Size
wbuf_entry_bytes(WriteBuffer *wb, WbEntry *e)
{
	return (e->tup ? e->tup->t_len : 0) + sizeof(WbEntry) + sizeof(Datum) * wb->nkeys;
}

/*
 * How far into the log the views pinned by scans reach: entries below it
 * must stay where they are.
 */
uint32
wbuf_pinned_extent(WriteBuffer *wb)
{
	ListCell   *lc;
	uint32		extent = 0;

	foreach(lc, wb->views)
	{
		WbSorted   *s = lfirst(lc);

		if (s->refcount > (s == wb->sorted ? 1 : 0))
			extent = Max(extent, s->n);
	}
	return extent;
}

/*
 * Take the entries from position from on out of the log, except those
 * keep[p - from] asks to keep, which move down in order (their TIDs stay:
 * they are ids, not positions).  No pinned view may reach from.
 */
void
wbuf_remove(WriteBuffer *wb, uint32 from, const bool *keep)
{
	uint32		to = from;

	Assert(wbuf_pinned_extent(wb) <= from && (int64) from > wb->truncate_pos);
	for (uint32 p = from; p < wb->n; p++)
	{
		WbEntry    *e = wbuf_entry(wb, p);

		if (keep && keep[p - from])
		{
			*wbuf_entry(wb, to++) = *e;
			continue;
		}
		wb->bytes -= wbuf_entry_bytes(wb, e);
		pfree(e->tup);
		pfree(e->keys);
	}
	wb->n = to;
	if (wb->sorted && wb->sorted->n > from)
	{
		wbuf_sorted_unpin(wb, wb->sorted);
		wb->sorted = NULL;
	}
}

/*
 * The table got row ids (its first index) while this buffer holds rows
 * with buffer TIDs: its entries take the ids from first on, in order (the
 * caller reserved them).
 */
void
wbuf_assign_ids(WriteBuffer *wb, uint64 first)
{
	for (uint32 pos = 0; pos < wb->n; pos++)
		wbuf_entry(wb, pos)->id = Max(first, 1) + pos;
	wb->next_id = wb->end_id = 0;
	wb->ids = true;
}

/* the TID of the entry at pos */
void
wbuf_tid(WriteBuffer *wb, uint32 pos, ItemPointer tid)
{
	pk_tid_from_row(tid, wbuf_entry(wb, pos)->id);
}

/*
 * The position of the entry a buffer TID names, or -1 when it is gone
 * (rolled back, or spilled into a run).
 */
int64
wbuf_find_tid(WriteBuffer *wb, ItemPointer tid)
{
	uint64		id = pk_tid_id(tid);
	uint32		lo = 0,
				hi;

	if (wb == NULL || !pk_tid_valid(tid) || wb->n == 0 ||
		id < wbuf_entry(wb, 0)->id)
		return -1;
	hi = wb->n;
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (wbuf_entry(wb, mid)->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < wb->n && wbuf_entry(wb, lo)->id == id &&
		wbuf_entry(wb, lo)->kind != WB_TRUNCATE)
		return lo;
	return -1;
}

bool
wbuf_visible(WriteBuffer *wb, uint32 pos, CommandId curcid)
{
	return pos < wb->n && (int64) pos > wb->truncate_pos &&
		wbuf_entry(wb, pos)->cid < curcid;
}

/* where key's group starts in view s (its entries are newest first) */
static uint32
view_group(WriteBuffer *wb, PkTable *t, WbSorted *s, const Datum *keys)
{
	uint32		lo = 0,
				hi = s->npos;

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (pk_key_cmp(t, wbuf_entry(wb, s->pos[mid])->keys, keys) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The version of a key the buffer holds for a command with curcid: its
 * newest visible entry, except that a read-modify-write retraction whose
 * next older visible entry of the key is a write of the same command
 * yields to that write.  Within one command, the versions it read are
 * taken away first and its writes come after them, as a statement that
 * shifts keys (k = k + 1) needs: row 1 moved onto key 2 before row 2 moved
 * on must not be deleted by row 2's move.  group: one key's positions,
 * newest first.  -1 if none is visible.
 */
int64
wbuf_fold(WriteBuffer *wb, const uint32 *group, uint32 n, CommandId curcid)
{
	int64		newest = -1;

	for (uint32 i = 0; i < n; i++)
	{
		WbEntry    *e;

		if (!wbuf_visible(wb, group[i], curcid))
			continue;
		if (newest < 0)
		{
			newest = group[i];
			if (!wbuf_is_rmw_retraction(wbuf_entry(wb, (uint32) newest)))
				break;
			continue;
		}
		e = wbuf_entry(wb, group[i]);
		if (PK_KIND_IS_ADD(e->kind) &&
			e->cid == wbuf_entry(wb, (uint32) newest)->cid)
			newest = group[i];
		break;
	}
	return newest;
}

/*
 * The RowKind a commit stores for a key whose version is the entry newest
 * (wbuf_fold's): its own, except that a +U over a row the transaction
 * inserted itself is the insert of the final row.  Producer none's stream
 * is these kinds: a row inserted and then updated in one transaction is
 * then an insert (to a subscriber: an insert, not an update of a row it
 * may not have).
 */
PkRowKind
wbuf_net_kind(WriteBuffer *wb, const uint32 *group, uint32 n, int64 newest)
{
	PkRowKind	kind = wbuf_entry(wb, (uint32) newest)->kind;

	if (kind != PK_UPDATE_AFTER)
		return kind;
	for (uint32 i = 0; i < n; i++)
		if (wbuf_visible(wb, group[i], InvalidCommandId) &&
			wbuf_entry(wb, group[i])->kind == PK_INSERT)
			return PK_INSERT;
	return kind;
}

/*
 * The buffer's latest sorted view, made again when more entries than eight
 * times the square root of those it covers came after it.  A point lookup
 * compares the hashes of the entries after the view and binary-searches
 * the view, so a command that alternates reads and writes of n keys (an
 * ON CONFLICT insert, a key-shifting UPDATE) costs O(n^1.5), not a merge
 * of the whole view every few reads.  The factor weighs a hash comparison
 * in the tail against a key comparison in the merge.  The view stays the
 * buffer's (no pin for the caller): nothing appends while the caller uses
 * it.
 */
static WbSorted *
lookup_view(WriteBuffer *wb, PkTable *t)
{
	WbSorted   *s = wb->sorted;

	if (s == NULL || (uint64) (wb->n - s->n) * (wb->n - s->n) > 64 * (uint64) Max(s->n, 64))
	{
		s = wbuf_sorted_pin(wb, t);
		wbuf_sorted_unpin(wb, s);
	}
	return s;
}

/*
 * The position of key's version visible to a command with curcid (see
 * wbuf_fold), or -1.  Looks at the entries appended after the sorted view
 * linearly, then at the key's group in the view.
 */
int64
wbuf_lookup(WriteBuffer *wb, PkTable *t, const Datum *keys, uint32 hash,
			CommandId curcid)
{
	WbSorted   *s;
	uint32		cand[2];
	uint32		ncand = 0;

	if (wb->n == 0)
		return -1;
	s = lookup_view(wb, t);

	/*
	 * wbuf_fold needs the two newest visible entries of the key at most:
	 * those after the view are newer than any in it.
	 */
	for (uint32 p = wb->n; p-- > s->n && ncand < 2;)
	{
		WbEntry    *e = wbuf_entry(wb, p);

		if (e->kind != WB_TRUNCATE && e->hash == hash && wbuf_visible(wb, p, curcid) &&
			pk_key_cmp(t, e->keys, keys) == 0)
			cand[ncand++] = p;
	}
	if (ncand < 2)
	{
		for (uint32 i = view_group(wb, t, s, keys); i < s->npos && ncand < 2; i++)
		{
			if (pk_key_cmp(t, wbuf_entry(wb, s->pos[i])->keys, keys) != 0)
				break;
			if (wbuf_visible(wb, s->pos[i], curcid))
				cand[ncand++] = s->pos[i];
		}
	}
	return wbuf_fold(wb, cand, ncand, curcid);
}

/*
 * Has command cid taken away a version of key by a read-modify-write?  A
 * command does so at most once per key: a second time means it reached the
 * same row twice (TM_SelfModified).
 */
bool
wbuf_retracted_by(WriteBuffer *wb, PkTable *t, const Datum *keys,
				  uint32 hash, CommandId cid)
{
	WbSorted   *s;

	if (wb == NULL || wb->n == 0)
		return false;
	s = lookup_view(wb, t);
	for (uint32 p = s->n; p < wb->n; p++)
	{
		WbEntry    *e = wbuf_entry(wb, p);

		if (e->kind != WB_TRUNCATE && e->hash == hash && e->cid == cid &&
			wbuf_is_rmw_retraction(e) && pk_key_cmp(t, e->keys, keys) == 0)
			return true;
	}
	for (uint32 i = view_group(wb, t, s, keys); i < s->npos; i++)
	{
		WbEntry    *e = wbuf_entry(wb, s->pos[i]);

		if (pk_key_cmp(t, e->keys, keys) != 0)
			break;
		if (e->cid == cid && wbuf_is_rmw_retraction(e))
			return true;
	}
	return false;
}

typedef struct InputMove
{
	uint32		target;			/* the position it goes before */
	uint32		pos;			/* a retraction emitted early */
} InputMove;

static int
input_move_cmp(const void *a, const void *b)
{
	const InputMove *ma = a;
	const InputMove *mb = b;

	if (ma->target != mb->target)
		return ma->target < mb->target ? -1 : 1;
	return (ma->pos > mb->pos) - (ma->pos < mb->pos);
}

/*
 * The order in which the input producer emits the records of [from, to):
 * the order written, except that a retraction wbuf_fold lets yield to
 * writes of its own command goes before the first of those writes, so that
 * replaying the stream gives what the buffer holds.  Positions whose
 * skip[p - from] is set (skip may be NULL) and TRUNCATE marks are left
 * out.  sorted: the positions of a view covering [from, to) (others are
 * ignored).  Returns a palloc'd array of *count positions.
 */
uint32 *
wbuf_input_order(WriteBuffer *wb, PkTable *t, const uint32 *sorted,
				 uint32 nsorted, uint32 from, uint32 to, const bool *skip,
				 uint32 *count)
{
	uint32		len = Max(to - from, 1);
	uint32	   *order = palloc(sizeof(uint32) * len);
	InputMove  *moves = NULL;
	bool	   *moved = NULL;
	uint32		nmoves = 0;
	uint32		n = 0;
	uint32		m = 0;

	for (uint32 i = 0; i < nsorted; i++)
	{
		uint32		z = sorted[i];
		WbEntry    *ze = wbuf_entry(wb, z);
		uint32		target = z;

		if (z < from || z >= to || !wbuf_is_rmw_retraction(ze) ||
			(skip && skip[z - from]))
			continue;
		/* the same command's writes of the key just before it (older) */
		for (uint32 j = i + 1; j < nsorted; j++)
		{
			WbEntry    *e = wbuf_entry(wb, sorted[j]);

			if (sorted[j] < from || e->cid != ze->cid || !PK_KIND_IS_ADD(e->kind) ||
				pk_key_cmp(t, e->keys, ze->keys) != 0)
				break;
			target = sorted[j];
		}
		if (target == z)
			continue;
		if (moves == NULL)
		{
			moves = palloc(sizeof(InputMove) * len);
			moved = palloc0(sizeof(bool) * len);
		}
		moves[nmoves].target = target;
		moves[nmoves++].pos = z;
		moved[z - from] = true;
	}
	if (nmoves > 1)
		qsort(moves, nmoves, sizeof(InputMove), input_move_cmp);

	for (uint32 p = from; p < to; p++)
	{
		while (m < nmoves && moves[m].target == p)
			order[n++] = moves[m++].pos;
		if (wbuf_entry(wb, p)->kind == WB_TRUNCATE || (skip && skip[p - from]) ||
			(moved && moved[p - from]))
			continue;
		order[n++] = p;
	}
	if (moves)
	{
		pfree(moves);
		pfree(moved);
	}
	*count = n;
	return order;
}

/* every buffer of the transaction, in order of first write */
List *
wbuf_all(void)
{
	return buffer_order;
}

/* transaction end: the memory goes with TopTransactionContext */
/*
 * While materialized aggregates are written at commit, writes to pkmerge
 * tables are refused: their tables may have committed already.  Reset at
 * transaction end.
 */
void
wbuf_close(bool close)
{
	closed = close;
}

void
wbuf_forget_all(void)
{
	if (buffers)
		clear_writes();
	closed = false;
	buffers = NULL;
	buffer_order = NIL;
	last = NULL;
}

/*
 * A committed savepoint's entries now belong to its parent.  They are the
 * log's suffix tagged with the savepoint's id.
 */
void
wbuf_subxact_commit(SubTransactionId mysubid, SubTransactionId parentsubid)
{
	ListCell   *lc;
	ListCell   *sc;

	foreach(lc, buffer_order)
	{
		WriteBuffer *wb = lfirst(lc);

		for (uint32 p = wb->n; p-- > 0 && wbuf_entry(wb, p)->subid == mysubid;)
			wbuf_entry(wb, p)->subid = parentsubid;
		foreach(sc, wb->spills)
		{
			WbSpill    *sp = lfirst(sc);

			if (sp->subid == mysubid)
				sp->subid = parentsubid;
		}
		if (wb->removed && wb->removed_subid == mysubid)
			wb->removed_subid = parentsubid;
	}
}

/*
 * ROLLBACK TO: everything written since the savepoint began is the suffix
 * of the log tagged with its id (committed children were re-tagged to it,
 * aborted ones already cut); cut it.  Its spilled runs are gone with the
 * subtransaction's catalog rows.
 */
void
wbuf_subxact_abort(SubTransactionId mysubid)
{
	ListCell   *lc;

	foreach(lc, buffer_order)
	{
		WriteBuffer *wb = lfirst(lc);
		uint32		n = wb->n;
		ListCell   *sc;

		foreach(sc, wb->spills)
		{
			if (((WbSpill *) lfirst(sc))->subid == mysubid)
				wb->spills = foreach_delete_current(wb->spills, sc);
		}
		/* its temporary files belong to the top transaction */
		if (wb->removed && wb->removed_subid == mysubid)
		{
			tuplestore_end(wb->removed);
			wb->removed = NULL;
		}
		while (n > 0 && wbuf_entry(wb, n - 1)->subid == mysubid)
		{
			n--;
			wb->bytes -= wbuf_entry_bytes(wb, wbuf_entry(wb, n));
		}
		if (n == wb->n)
			continue;
		wb->n = n;
		/* positions from n on will be reused: no view may cover them */
		if (wb->sorted)
		{
			wbuf_sorted_unpin(wb, wb->sorted);
			wb->sorted = NULL;
		}
		wb->truncate_pos = -1;
		for (uint32 p = n; p-- > 0;)
			if (wbuf_entry(wb, p)->kind == WB_TRUNCATE)
			{
				wb->truncate_pos = p;
				break;
			}
	}
}
