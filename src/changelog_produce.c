/*-------------------------------------------------------------------------
 *
 * changelog_produce.c
 *	  Changelog producers (DESIGN §2), writing a changelog run of RowKind
 *	  records in production order:
 *
 *	  input            at commit: the transaction's records as written
 *	  lookup           at commit: each written key's value before the commit
 *	                   (looked up in the runs committed before) against
 *	                   its value after
 *	  full-compaction  at a compaction into the bottom level: each key written
 *	                   since the previous one, its value then against now
 *
 *	  none writes nothing: its stream is the commits' own data runs.
 *
 * lookup and full-compaction share Paimon's rules (emit_net): absent ->
 * present is +I, present -> absent is -D, present -> present is -U +U
 * (skipped when changelog_row_deduplicate and the rows are equal), absent
 * -> absent is nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "catalog_runs.h"
#include "changelog_produce.h"
#include "lookup.h"
#include "run_merge.h"
#include "run_write.h"

static bool
rows_equal(MinimalTuple a, MinimalTuple b)
{
	return a->t_len == b->t_len && memcmp(a, b, a->t_len) == 0;
}

static void
emit(RunWriter **w, Relation rel, PkTable *t, uint64 seq, PkRowKind kind,
	 MinimalTuple tup, const Datum *keys)
{
	if (*w == NULL)
		*w = run_writer_begin(rel, t, 0, RUN_CHANGELOG, false);
	run_writer_add(*w, seq, kind, tup, keys, 0, RUN_NO_ID);
}

/* one key's net change, before -> after (NULL: absent) */
static void
emit_net(RunWriter **w, Relation rel, PkTable *t, uint64 seq,
		 MinimalTuple before, MinimalTuple after, const Datum *keys)
{
	if (before == NULL && after != NULL)
		emit(w, rel, t, seq, PK_INSERT, after, keys);
	else if (before != NULL && after == NULL)
		emit(w, rel, t, seq, PK_DELETE, before, keys);
	else if (before != NULL && after != NULL &&
			 !(t->opts.changelog_row_deduplicate && rows_equal(before, after)))
	{
		emit(w, rel, t, seq, PK_UPDATE_BEFORE, before, keys);
		emit(w, rel, t, seq, PK_UPDATE_AFTER, after, keys);
	}
}

static RunInfo *
finish(RunWriter *w, int64 snapshot_id)
{
	if (w == NULL || run_writer_nrows(w) == 0)
		return NULL;
	return run_writer_finish(w, snapshot_id);
}

/*
 * A commit of up to this many buffered writes looks up its keys' values
 * before the commit lock (prod_commit_prepare) and, under it, only in the
 * runs committed since; a larger one, all of it under the lock, as it
 * would otherwise keep every old value in memory meanwhile.
 */
#define PROD_EARLY_WRITES 64

struct ProdPrepared
{
	int64		run_id;			/* the changelog run's id */
	int			nkeys;			/* early: the keys written, in merge order */
	MinimalTuple *keys;			/* early: each one */
	PkVersion  *before;			/* early: its newest version there */
	bool	   *found;			/* and whether it has one */
};

/*
 * Does a commit of t with this write buffer look up its keys' old values
 * before the commit lock?  A lookup table's small commit without spills or
 * a TRUNCATE.
 */
bool
prod_looks_up_early(PkTable *t, WriteBuffer *wb)
{
	return t->opts.changelog_producer == PK_PRODUCER_LOOKUP &&
		wb->spills == NIL && wb->truncate_pos < 0 && wb->n <= PROD_EARLY_WRITES;
}

/*
 * Before the commit lock: the changelog run's id, drawn from a sequence
 * (its lock and page, not taken under the commit lock; an id the commit
 * then leaves unused is a gap, as a sequence's cache leaves), and, for a
 * commit prod_looks_up_early says of, its keys' newest versions in the
 * runs committed by then (before).  NULL if the producer writes no
 * changelog at commit.
 */
ProdPrepared *
prod_commit_prepare(Relation rel, PkTable *t, WriteBuffer *wb, List *before)
{
	ProdPrepared *prep;
	MergeIter  *m;
	MergeRow	row;
	int			n = 0;

	if (t->opts.changelog_producer != PK_PRODUCER_INPUT &&
		t->opts.changelog_producer != PK_PRODUCER_LOOKUP)
		return NULL;
	prep = palloc0(sizeof(ProdPrepared));
	prep->run_id = cat_next_run_id();
	if (!prod_looks_up_early(t, wb))
		return prep;
	prep->keys = palloc0(sizeof(MinimalTuple) * Max(wb->n, 1));
	prep->before = palloc0(sizeof(PkVersion) * Max(wb->n, 1));
	prep->found = palloc0(sizeof(bool) * Max(wb->n, 1));
	m = merge_begin(rel, t, NIL, wb, InvalidCommandId, NULL, true, true);
	while (merge_next(m, &row))
	{
		if (n == wb->n)
			elog(ERROR, "more keys than writes in a pkmerge commit");
		prep->keys[n] = pk_key_form(t, row.keys);
		prep->found[n] = lookup_committed(rel, t, before, row.keys,
										  pk_key_hash(t, row.keys),
										  &prep->before[n]);
		n++;
	}
	merge_end(m);
	prep->nkeys = n;
	return prep;
}

/*
 * Under the commit lock: the newest version of the key a commit's merge
 * gives as its i-th (keys, ascending) among the runs committed before
 * (prev_runs), from what prod_commit_prepare found of the same key and
 * the runs committed since (added), or from prev_runs when that cannot
 * answer (early false: a compaction replaced a run looked up in, or
 * nothing was looked up early) through *cursor, begun when first needed
 * (a small commit's keys are all answered early).
 */
static bool
lookup_before(Relation rel, PkTable *t, ProdPrepared *prep, List *added,
			  bool early, int i, List *prev_runs, LookupCursor **cursor,
			  const Datum *keys, PkVersion *v)
{
	uint32		hash = pk_key_hash(t, keys);
	PkVersion	since;
	Datum		prepared[INDEX_MAX_KEYS];

	/* the same key as prod_commit_prepare's i-th (the same buffer) */
	if (early && i < prep->nkeys)
	{
		pk_key_deform(t, prep->keys[i], prepared);
		early = pk_key_cmp(t, prepared, keys) == 0;
	}
	else
		early = false;
	if (!early)
	{
		if (*cursor == NULL)
			*cursor = lookup_cursor_begin(rel, t, prev_runs);
		return lookup_cursor_next(*cursor, keys, hash, v);
	}
	*v = prep->before[i];
	if (!lookup_committed(rel, t, added, keys, hash, &since))
		return prep->found[i];
	if (prep->found[i] && prep->before[i].seq > since.seq)
	{
		pfree(since.tup);
		return true;
	}
	if (prep->found[i])
		pfree(prep->before[i].tup);
	*v = since;
	return true;
}

/*
 * The changelog run of a commit (input and lookup), or NULL when the
 * producer writes none at commit or there is nothing to say.  prev_runs:
 * the data runs committed before this commit; pending: the data runs the
 * transaction spilled (whose input records are in their own changelog
 * runs already).  A small one has no row of its own (in_snapshot_row): the
 * caller hands it to cat_snapshot_insert.  prep: what
 * prod_commit_prepare made of the commit before the commit lock, against
 * runs of which prev_runs has kept all (kept: no compaction since;
 * runlist_added) and added the runs in added.
 */
RunInfo *
prod_commit(Relation rel, PkTable *t, WriteBuffer *wb, List *prev_runs,
			List *pending, int64 snapshot_id, uint64 seq, ProdPrepared *prep,
			bool kept, List *added)
{
	RunWriter  *w = NULL;
	bool		truncated = wb->truncate_pos >= 0;

	if (t->opts.changelog_producer == PK_PRODUCER_INPUT)
	{
		/* as written (wbuf_input_order); writes a TRUNCATE cancelled are not */
		WbSorted   *s = wbuf_sorted_pin(wb, t);
		uint32		n;
		uint32	   *order = wbuf_input_order(wb, t, s->pos, s->npos,
											 truncated ? wb->truncate_pos + 1 : 0,
											 wb->n, NULL, &n);

		for (uint32 i = 0; i < n; i++)
		{
			WbEntry    *e = wbuf_entry(wb, order[i]);

			emit(&w, rel, t, seq, e->kind, e->tup, e->keys);
		}
		pfree(order);
		wbuf_sorted_unpin(wb, s);
	}
	else if (t->opts.changelog_producer == PK_PRODUCER_LOOKUP)
	{
		/* every key written: its newest version, spilled or buffered */
		MergeIter  *m = merge_begin(rel, t, pending, wb, InvalidCommandId,
									NULL, true, true);
		MergeRow	row;
		bool		early = prep != NULL && prep->before != NULL && kept;
		LookupCursor *before_runs = NULL;
		int			i = 0;

		while (merge_next(m, &row))
		{
			PkVersion	before;
			bool		found;
			bool		had;

			CHECK_FOR_INTERRUPTS();
			/* after a TRUNCATE every key was absent before */
			found = !truncated &&
				lookup_before(rel, t, prep, added, early, i, prev_runs,
							  &before_runs, row.keys, &before);
			had = found && PK_KIND_IS_ADD(before.kind);
			emit_net(&w, rel, t, seq, had ? before.tup : NULL,
					 PK_KIND_IS_ADD(row.kind) ? row.tup : NULL, row.keys);
			if (found)
				pfree(before.tup);
			i++;
		}
		merge_end(m);
		if (before_runs != NULL)
			lookup_cursor_end(before_runs);
	}
	if (w)
	{
		run_writer_allow_snapshot_row(w);
		if (prep != NULL)
			run_writer_set_run_id(w, prep->run_id);
	}
	return finish(w, snapshot_id);
}

/*
 * The changelog of a compaction into the bottom level of a full-compaction
 * table: for every key in the runs above the bottom (written since the
 * previous full compaction), its value in the bottom runs against its
 * newest value.  Keys not written since say nothing.  The run's snapshot id
 * is set when the compaction commits.
 */
RunInfo *
prod_full_compaction(Relation rel, PkTable *t, List *upper, List *bottom,
					 uint64 seq)
{
	RunWriter  *w = NULL;
	MergeIter  *m;
	MergeRow	row;

	if (upper == NIL)
		return NULL;
	m = merge_begin(rel, t, upper, NULL, InvalidCommandId, NULL, true, true);
	while (merge_next(m, &row))
	{
		PkVersion	before;
		bool		had;

		CHECK_FOR_INTERRUPTS();
		had = lookup_committed(rel, t, bottom, row.keys, pk_key_hash(t, row.keys), &before) &&
			PK_KIND_IS_ADD(before.kind);
		emit_net(&w, rel, t, seq, had ? before.tup : NULL,
				 PK_KIND_IS_ADD(row.kind) ? row.tup : NULL, row.keys);
		if (had)
			pfree(before.tup);
	}
	merge_end(m);
	return finish(w, 0);
}
