/*-------------------------------------------------------------------------
 *
 * run_merge.c
 *	  The merge iterator: a binary heap over run cursors and the write
 *	  buffer's sorted view yields, per key, the version with the highest
 *	  sequence number (the buffer's are newer than any run's), dropping
 *	  tombstones unless asked to keep them (compaction into upper levels).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/binaryheap.h"

#include "run.h"
#include "run_merge.h"
#include "run_cursor.h"
#include "tid.h"

typedef struct MergeSource
{
	/* a run cursor, or the write buffer when run is NULL */
	const RunInfo *run;
	RunCursor	cur;
	uint32		bi;				/* buffer: index into sorted->pos */
	bool		valid;
	Datum		keys[INDEX_MAX_KEYS];
	uint64		seq;
	uint8		kind;
	MinimalTuple tup;
	uint64		number;			/* row number or buffer position */
	/* run: rows after the current one that win without comparing (below) */
	uint32		free;
	uint32		last_block;		/* the block last_keys is of */
	bool		last_valid;
	Datum		last_keys[INDEX_MAX_KEYS];	/* its last row's key */
} MergeSource;

/*
 * The write buffer view a merge pinned.  It outlives the MergeIter (it is
 * freed with the memory context merge_begin ran in), so that the reset
 * callback can unpin a view whose merge never reached merge_end: an error
 * or a savepoint rollback ending the scan.  Otherwise the view would stay
 * pinned for the rest of the transaction, and a pinned view keeps the
 * buffer from spilling (wbuf_pinned_extent).
 */
typedef struct ViewPin
{
	MemoryContextCallback cb;
	Oid			relid;
	WriteBuffer *wb;
	WbSorted   *sorted;			/* NULL once unpinned */
} ViewPin;

struct MergeIter
{
	PkTable    *table;
	WriteBuffer *wb;
	WbSorted   *sorted;
	ViewPin    *pin;
	CommandId	curcid;
	bool		keep_tombstones;
	int			nsources;
	MergeSource *src;
	binaryheap *heap;
	int			advance;		/* source to move on at the next call, or -1 */
	bool		started;		/* sources loaded (by merge_next or merge_seek) */
	bool		need_keys;		/* the caller reads MergeRow.keys */
	const Datum *end;			/* keys from here on are not yielded, or NULL */
};

/* the fields of a run source's current row; its key if asked for */
static inline void
run_row_fields(MergeIter *m, MergeSource *s, bool keys)
{
	RunRowHeader *rh = run_cursor_row(&s->cur);

	s->tup = RUN_ROW_TUPLE(rh);
	s->seq = run_row_seq(s->run, rh);
	s->kind = RUN_ROW_KIND(rh);
	s->number = run_block_row_id(s->run, s->cur.block, s->cur.rowno);
	if (keys)
		pk_row_key(m->table, s->tup, s->keys);
}

/* load the source's current row, skipping invisible buffer entries */
static void
source_load(MergeIter *m, MergeSource *s)
{
	if (s->run)
	{
		s->free = 0;
		if (s->cur.unloaded)
			run_cursor_start(&s->cur);
		s->valid = !s->cur.done;
		if (!s->valid)
			return;
		/* a lone source is not compared: its keys only if asked for */
		run_row_fields(m, s, m->nsources > 1 || m->need_keys || m->end);
		return;
	}

	/*
	 * The buffer's view holds every version of a key, newest first: take
	 * the first visible one and step over the rest of the key's group.
	 */
	s->valid = false;
	while (s->bi < m->sorted->npos)
	{
		uint32		start = s->bi;
		WbEntry    *e = wbuf_entry(m->wb, m->sorted->pos[start]);
		uint32		next = start + 1;
		int64		pos;

		while (next < m->sorted->npos &&
			   pk_key_cmp(m->table, wbuf_entry(m->wb, m->sorted->pos[next])->keys, e->keys) == 0)
			next++;
		s->bi = next;
		pos = wbuf_fold(m->wb, &m->sorted->pos[start], next - start, m->curcid);
		if (pos < 0)
			continue;
		e = wbuf_entry(m->wb, (uint32) pos);
		s->valid = true;
		s->tup = e->tup;
		s->seq = PG_UINT64_MAX;
		s->kind = e->kind;
		s->number = pos;
		memcpy(s->keys, e->keys, sizeof(Datum) * m->table->nkeys);
		return;
	}
}

/*
 * The winner s of a key: when every key left in its current block is below
 * the smallest key of the other sources (other; NULL: none left) and below
 * the end, those rows win as they come, without comparisons (runs of a
 * bulk load written in key order do not overlap).
 */
static void
source_set_free(MergeIter *m, MergeSource *s, MergeSource *other)
{
	uint32		left;

	s->free = 0;
	if (s->run == NULL || (left = s->cur.block->nrows - 1 - s->cur.rowno) == 0)
		return;
	if (other || m->end)
	{
		if (!s->last_valid || s->last_block != s->cur.blockno)
		{
			RunRowHeader *rh = (RunRowHeader *)
				(s->cur.block->raw + s->cur.block->offsets[s->cur.block->nrows - 1]);

			pk_row_key(m->table, RUN_ROW_TUPLE(rh), s->last_keys);
			s->last_block = s->cur.blockno;
			s->last_valid = true;
		}
		if (other && pk_key_cmp(m->table, s->last_keys, other->keys) >= 0)
			return;
		if (m->end && pk_key_cmp(m->table, s->last_keys, m->end) >= 0)
			return;
	}
	s->free = left;
}

static void
source_advance(MergeIter *m, MergeSource *s)
{
	if (s->run)
		run_cursor_next(&s->cur);
	source_load(m, s);
}

/* binaryheap is a max-heap: the smallest key, then the highest seq, is "largest" */
static int
source_cmp(Datum a, Datum b, void *arg)
{
	MergeIter  *m = arg;
	MergeSource *sa = &m->src[DatumGetInt32(a)];
	MergeSource *sb = &m->src[DatumGetInt32(b)];
	int			c = pk_key_cmp(m->table, sa->keys, sb->keys);

	if (c != 0)
		return -c;
	return (sa->seq > sb->seq) - (sa->seq < sb->seq);
}

static void
rebuild_heap(MergeIter *m)
{
	binaryheap_reset(m->heap);
	for (int i = 0; i < m->nsources; i++)
		if (m->src[i].valid)
			binaryheap_add_unordered(m->heap, Int32GetDatum(i));
	binaryheap_build(m->heap);
	m->advance = -1;
}

/*
 * The memory of a merge is going without merge_end: unpin its view, if the
 * buffer still exists (after the transaction ended it is gone, and the
 * view with it).
 */
static void
view_pin_release(void *arg)
{
	ViewPin    *pin = arg;

	if (pin->sorted && wbuf_get(pin->relid, false) == pin->wb)
		wbuf_sorted_unpin(pin->wb, pin->sorted);
	pin->sorted = NULL;
}

MergeIter *
merge_begin(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
			CommandId curcid, BufferAccessStrategy strategy,
			bool keep_tombstones, bool need_keys)
{
	MergeIter  *m = palloc0(sizeof(MergeIter));
	ListCell   *lc;
	int			i = 0;

	m->table = t;
	m->wb = wb && wb->n > 0 ? wb : NULL;
	m->curcid = curcid;
	m->keep_tombstones = keep_tombstones;
	m->need_keys = need_keys;
	m->nsources = list_length(runs) + (m->wb ? 1 : 0);
	m->src = palloc0(sizeof(MergeSource) * Max(m->nsources, 1));
	foreach(lc, runs)
	{
		MergeSource *s = &m->src[i++];

		s->run = lfirst(lc);
		run_cursor_open(&s->cur, rel, t, s->run, strategy);
	}
	if (m->wb)
	{
		m->sorted = wbuf_sorted_pin(m->wb, t);
		m->pin = palloc(sizeof(ViewPin));
		m->pin->relid = m->wb->relid;
		m->pin->wb = m->wb;
		m->pin->sorted = m->sorted;
		m->pin->cb.func = view_pin_release;
		m->pin->cb.arg = m->pin;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, &m->pin->cb);
	}
	m->heap = binaryheap_allocate(Max(m->nsources, 1), source_cmp, m);
	m->advance = -1;
	return m;
}

/*
 * Yield only keys below end (a full key, kept by the caller; NULL: no
 * bound) from the next merge_seek on: the chunks of a parallel scan.
 */
void
merge_set_end(MergeIter *m, const Datum *end)
{
	m->end = end;
}

/*
 * Reposition every source at the first key whose first nprefix columns are
 * >= key.
 */
void
merge_seek(MergeIter *m, const Datum *key, int nprefix)
{
	for (int i = 0; i < m->nsources; i++)
	{
		MergeSource *s = &m->src[i];

		/* a run starting at or past the end has nothing here: not read */
		if (s->run && m->end && s->cur.index->nblocks > 0 &&
			pk_key_cmp(m->table, s->cur.index->first_keys, m->end) >= 0)
		{
			s->valid = false;
			continue;
		}
		if (s->run)
			run_cursor_seek(&s->cur, key, nprefix);
		else
		{
			uint32		lo = 0,
						hi = m->sorted->npos;

			while (lo < hi)
			{
				uint32		mid = lo + (hi - lo) / 2;

				if (pk_key_cmp_n(m->table, wbuf_entry(m->wb, m->sorted->pos[mid])->keys,
								 key, nprefix) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			s->bi = lo;
		}
		source_load(m, s);
	}
	rebuild_heap(m);
	m->started = true;
}

static void
fill_row(MergeIter *m, MergeSource *s, MergeRow *row)
{
	row->tup = s->tup;
	row->keys = s->keys;
	row->kind = s->kind;
	row->seq = s->seq;
	row->run = s->run;
	if (s->run)
		pk_tid_from_row(&row->tid, s->number);
	else
		wbuf_tid(m->wb, (uint32) s->number, &row->tid);
}

/*
 * The next key's newest version.  Older versions of the same key are
 * stepped over at once; the winner's source moves on at the next call, so
 * row->tup stays valid until then.
 */
bool
merge_next(MergeIter *m, MergeRow *row)
{
	if (!m->started)
	{
		for (int i = 0; i < m->nsources; i++)
			source_load(m, &m->src[i]);
		rebuild_heap(m);
		m->started = true;
	}

	/* one source (a compacted table, no own writes): no heap to keep */
	if (m->nsources == 1 && m->end == NULL)
	{
		MergeSource *s = &m->src[0];

		for (;;)
		{
			if (m->advance >= 0)
				source_advance(m, s);
			m->advance = 0;
			if (!s->valid)
				return false;
			if (PK_KIND_IS_ADD(s->kind) || m->keep_tombstones)
			{
				fill_row(m, s, row);
				return true;
			}
		}
	}

	for (;;)
	{
		int			w;
		MergeSource *s;

		if (m->advance >= 0)
		{
			MergeSource *prev = &m->src[m->advance];

			if (prev->free > 0)
			{
				/* a row that wins as it comes: prev stays on top */
				prev->free--;
				run_cursor_next(&prev->cur);
				run_row_fields(m, prev, m->need_keys);
				if (!PK_KIND_IS_ADD(prev->kind) && !m->keep_tombstones)
					continue;
				fill_row(m, prev, row);
				return true;
			}
			source_advance(m, prev);
			if (prev->valid)
				binaryheap_replace_first(m->heap, Int32GetDatum(m->advance));
			else
				binaryheap_remove_first(m->heap);
			m->advance = -1;
		}
		if (binaryheap_empty(m->heap))
			return false;

		w = DatumGetInt32(binaryheap_first(m->heap));
		s = &m->src[w];
		if (m->end && pk_key_cmp(m->table, s->keys, m->end) >= 0)
			return false;		/* the rest is past the end */

		/* the losers of this key: move them past it */
		binaryheap_remove_first(m->heap);
		while (!binaryheap_empty(m->heap))
		{
			int			o = DatumGetInt32(binaryheap_first(m->heap));
			MergeSource *os = &m->src[o];

			if (pk_key_cmp(m->table, os->keys, s->keys) != 0)
				break;
			source_advance(m, os);
			if (os->valid)
				binaryheap_replace_first(m->heap, Int32GetDatum(o));
			else
				binaryheap_remove_first(m->heap);
		}
		source_set_free(m, s, binaryheap_empty(m->heap) ? NULL :
						&m->src[DatumGetInt32(binaryheap_first(m->heap))]);
		binaryheap_add(m->heap, Int32GetDatum(w));
		m->advance = w;

		if (!PK_KIND_IS_ADD(s->kind) && !m->keep_tombstones)
			continue;
		fill_row(m, s, row);
		return true;
	}
}

void
merge_end(MergeIter *m)
{
	for (int i = 0; i < m->nsources; i++)
		if (m->src[i].run)
			run_cursor_close(&m->src[i].cur);
	if (m->pin)
		view_pin_release(m->pin);
	binaryheap_free(m->heap);
	pfree(m->src);
	pfree(m);
}
