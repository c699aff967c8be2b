/*-------------------------------------------------------------------------
 *
 * maint_compaction.c
 *	  Universal compaction, as Paimon's UniversalCompaction: pick the sorted
 *	  runs to merge, merge them into an output level (split at
 *	  target_run_size, tombstones dropped at the bottom level), and switch
 *	  inputs for outputs in one COMPACT snapshot, with the full-compaction
 *	  producer's changelog when the output is the bottom level.
 *
 *	  This file owns whether one is due, the pick and the switch; the
 *	  merge is run_merge.c's, the runs run_write.c's, the changelog
 *	  changelog_produce.c's, and the callers run it (at the stop trigger,
 *	  the worker, pk_compact).
 *
 *	  Every L0 run is a sorted run, every level above one sorted run of
 *	  runs with disjoint key ranges.  Rows keep their sequence numbers, so
 *	  a key's newest version wins in the outputs as in the inputs, which
 *	  readers whose MVCC snapshot predates the switch keep reading.  The
 *	  merge runs beside commits; only the switch takes the commit lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog_lock.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "run_write.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "catalog_runs.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "changelog_produce.h"
#include "changelog_wal.h"
#include "maint_compaction.h"
#include "log_snapshot.h"
#include "mat.h"
#include "pg_compat.h"
#include "tid.h"
#include "run_list.h"
#include "run_publish.h"
#include "run_merge.h"
#include "run_read.h"
#include "shmem_slots.h"

/*
 * Shared memory, per table (database and relid, hashed): the compaction
 * running (or last run), by its transaction, and the newest sequence
 * number of the runs it took, so that writers merge the level-0 runs
 * committed since beside it (compact_level0_beside).  A table sharing the
 * slot takes it over: the table losing it gets no merges beside its
 * running one.
 */
#define NMERGESLOTS 256
typedef struct MergeSlot
{
	slock_t		mutex;
	Oid			dbid;
	Oid			relid;
	TransactionId xid;
	int64		max_seq;
} MergeSlot;

static MergeSlot *merges = NULL;

Size
compact_shmem_size(void)
{
	return mul_size(NMERGESLOTS, sizeof(MergeSlot));
}

void
compact_shmem_init(void)
{
	merges = pk_shmem_slots("pkchangelog running compactions", NMERGESLOTS,
							sizeof(MergeSlot));
}

static MergeSlot *
merge_slot(Oid relid)
{
	return &merges[hash_combine(MyDatabaseId, relid) % NMERGESLOTS];
}

/*
 * A compaction by transaction xid took runs of the table with rows up to
 * sequence number max_seq.
 */
static void
set_merging(Oid relid, TransactionId xid, int64 max_seq)
{
	MergeSlot  *m;

	if (merges == NULL)
		return;
	m = merge_slot(relid);
	SpinLockAcquire(&m->mutex);
	m->dbid = MyDatabaseId;
	m->relid = relid;
	m->xid = xid;
	m->max_seq = max_seq;
	SpinLockRelease(&m->mutex);
}

/*
 * The table's last compaction as set_merging set it, if its slot still has
 * it (the caller checks that the transaction is still running).
 */
static bool
merging(Oid relid, TransactionId *xid, int64 *max_seq)
{
	MergeSlot  *m;
	bool		found;

	if (merges == NULL)
		return false;
	m = merge_slot(relid);
	SpinLockAcquire(&m->mutex);
	found = m->dbid == MyDatabaseId && m->relid == relid &&
		TransactionIdIsValid(m->xid);
	*xid = m->xid;
	*max_seq = m->max_seq;
	SpinLockRelease(&m->mutex);
	return found;
}

typedef struct SortedRun
{
	int			level;
	int64		size;			/* as Paimon's file sizes: the runs' pages */
	int64		records;
	List	   *runs;			/* RunInfo */
} SortedRun;

/*
 * Small runs (the runs of small commits beside a large table) are where
 * this departs from Paimon, whose writers flush large files: a level-0 run
 * compaction_small_run_ratio times smaller than the table's largest sorted
 * run is left out of Paimon's pick, which neither counts nor weighs it,
 * and such runs are merged among themselves, into level 0, in tiers by
 * their rows, before anything merges them into a larger run.  So a 1-row
 * commit does not make the next compaction rewrite a level of thousands
 * of rows, however many levels hold runs, and a row is rewritten about
 * once per twelvefold growth of the run holding it.  doc/DECISIONS.md has
 * the figures; test/bench/compaction_sim.py models the picker.
 *
 * Tier 0 holds the runs of fewer than SMALL_RUNS_MAX rows and merges when
 * SMALL_RUNS_MAX of them are there; tier k above it the runs of
 * SMALL_RUNS_MAX * SMALL_RUN_FANIN^(k-1) rows or more (up to the next
 * tier's), which merge when SMALL_RUN_FANIN of them are there
 * (tier_count): sixteen runs of fewer than sixteen rows, then twelve of
 * each size up (16-191 rows, 192-2303, ...).  Towards the stop trigger
 * only, runs beyond their tier's quota (the worker's cue) count
 * SMALL_RUNS_PER_SORTED_RUN to a sorted run.
 */
#define SMALL_RUNS_MAX				16
#define SMALL_RUN_FANIN				12
#define SMALL_TIERS					8
#define SMALL_RUNS_PER_SORTED_RUN	8

/* a level's runs, as count_small adds them up */
typedef struct LevelBytes
{
	int64		bytes;
	bool		found;
} LevelBytes;

/* what count_small finds */
typedef struct SmallRuns
{
	int			nsmall;			/* the youngest level-0 runs that are small */
	int			nrest;			/* the sorted runs that are not */
	int			effective;		/* all of them, towards the stop trigger */
	bool		due;			/* a tier of small runs is full */
} SmallRuns;

/*
 * A run's bytes of rows and block index: what tells small runs apart (by
 * their pages, a 1-row run and a 200-row run are the same size).
 */
static int64
run_bytes(const RunInfo *r)
{
	return r->bloom_offset > 0 ? r->bloom_offset : r->size_bytes;
}

/*
 * A run's size as Paimon's picks weigh it: its pages; a run kept in its
 * catalog row weighs a page, as it would on pages, so that where a small
 * run is kept does not change what is merged.
 */
static int64
run_size(const RunInfo *r)
{
	return r->stream ? BLCKSZ : r->size_bytes;
}

/* the tier of a small run of records rows */
static int
small_tier(int64 records)
{
	int64		bound = SMALL_RUNS_MAX;
	int			tier = 0;

	while (records >= bound && tier < SMALL_TIERS - 1)
	{
		bound *= SMALL_RUN_FANIN;
		tier++;
	}
	return tier;
}

/* how many runs of a tier merge at once */
static int
tier_quota(int tier)
{
	return tier == 0 ? SMALL_RUNS_MAX : SMALL_RUN_FANIN;
}

/* is level-0 run a newer than b, in sorted_runs' order? */
static bool
l0_newer(const RunInfo *a, const RunInfo *b)
{
	if (a->max_seq != b->max_seq)
		return a->max_seq > b->max_seq;
	return a->run_id > b->run_id;
}

static int
l0_newest_first(const ListCell *a, const ListCell *b)
{
	const RunInfo *ra = linitial(((SortedRun *) lfirst(a))->runs);
	const RunInfo *rb = linitial(((SortedRun *) lfirst(b))->runs);

	/* two runs never share their newest row; run ids break a tie anyway */
	return l0_newer(rb, ra) - l0_newer(ra, rb);
}

/* add run r to sorted run sr, made anew when NULL, at level */
static SortedRun *
sorted_run_add(SortedRun *sr, RunInfo *r, int level)
{
	if (sr == NULL)
	{
		sr = palloc0(sizeof(SortedRun));
		sr->level = level;
	}
	sr->size += run_size(r);
	sr->records += r->record_count;
	sr->runs = lappend(sr->runs, r);
	return sr;
}

/*
 * Sorted runs, youngest first: L0 newest to oldest (by their newest rows:
 * a merge of small runs stays where its inputs were), then levels 1..
 */
static List *
sorted_runs(List *runs)
{
	List	   *result = NIL;
	int			maxlevel = 0;
	ListCell   *lc;

	foreach(lc, runs)
		maxlevel = Max(maxlevel, ((RunInfo *) lfirst(lc))->level);
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);

		if (r->level == 0)
			result = lappend(result, sorted_run_add(NULL, r, 0));
	}
	list_sort(result, l0_newest_first);
	for (int level = 1; level <= maxlevel; level++)
	{
		SortedRun  *sr = NULL;

		foreach(lc, runs)
		{
			RunInfo    *r = lfirst(lc);

			if (r->level == level)
				sr = sorted_run_add(sr, r, level);
		}
		if (sr)
			result = lappend(result, sr);
	}
	return result;
}

/*
 * The small runs: the youngest sorted runs compaction_small_run_ratio
 * times smaller than the largest (in bytes; none when the ratio is 0),
 * whether one of their tiers is full, and what all the sorted runs and a
 * run of new_bytes about to be added (none if 0; a small one is counted in
 * tier 0) count as towards the stop trigger: small runs only beyond their
 * tiers' quotas, where the worker is asked to merge them,
 * SMALL_RUNS_PER_SORTED_RUN to one, so that the writers compact first only
 * when the worker has not kept up.  From the runs themselves, without
 * making the sorted runs (every commit asks, compact_due): the small ones
 * are the level-0 runs newer than the newest one that is not small, as the
 * sorted runs list them.
 */
static SmallRuns
count_small(const PkOptions *o, List *runs, int64 new_bytes)
{
	SmallRuns	result = {0};
	int64		largest = 0;
	int			maxlevel = 0;
	int			n = 0;
	int			members[SMALL_TIERS] = {0};
	int			excess = 0;
	const RunInfo *newest_large = NULL;
	ListCell   *lc;
	LevelBytes	stack_levels[16];
	LevelBytes *levels = stack_levels;

	foreach(lc, runs)
		maxlevel = Max(maxlevel, ((const RunInfo *) lfirst(lc))->level);
	if (maxlevel >= lengthof(stack_levels))
		levels = palloc(sizeof(LevelBytes) * (maxlevel + 1));
	memset(levels, 0, sizeof(LevelBytes) * (maxlevel + 1));
	foreach(lc, runs)
	{
		const RunInfo *r = lfirst(lc);

		if (r->level == 0)
		{
			largest = Max(largest, run_bytes(r));
			n++;
		}
		else
		{
			levels[r->level].bytes += run_bytes(r);
			levels[r->level].found = true;
		}
	}
	/* each level above 0 is one sorted run of all its runs */
	for (int level = 1; level <= maxlevel; level++)
	{
		largest = Max(largest, levels[level].bytes);
		n += levels[level].found ? 1 : 0;
	}
	if (o->compaction_small_run_ratio > 0)
	{
		foreach(lc, runs)
		{
			const RunInfo *r = lfirst(lc);

			if (r->level == 0 &&
				run_bytes(r) * o->compaction_small_run_ratio >= largest &&
				(newest_large == NULL || l0_newer(r, newest_large)))
				newest_large = r;
		}
		foreach(lc, runs)
		{
			const RunInfo *r = lfirst(lc);

			if (r->level == 0 && (newest_large == NULL || l0_newer(r, newest_large)))
			{
				result.nsmall++;
				members[small_tier(r->record_count)]++;
			}
		}
	}
	result.nrest = n - result.nsmall;
	result.effective = result.nrest;
	/* the new run: one more small one, or a sorted run of its own */
	if (new_bytes > 0 && o->compaction_small_run_ratio > 0 &&
		new_bytes * o->compaction_small_run_ratio < largest)
		members[0]++;
	else if (new_bytes > 0)
		result.effective++;
	for (int tier = 0; tier < SMALL_TIERS; tier++)
	{
		result.due |= members[tier] >= tier_quota(tier);
		excess += Max(0, members[tier] - tier_quota(tier));
	}
	result.effective += (excess + SMALL_RUNS_PER_SORTED_RUN - 1) /
		SMALL_RUNS_PER_SORTED_RUN;
	return result;
}

/*
 * How many of the youngest sorted runs to merge as a tier of small runs:
 * youngest first, those up to the one that fills its tier's quota first,
 * and the runs of that tier or a lower one after it, which a worker that
 * was busy elsewhere finds there (one merge of them all, not one per
 * quota); the younger runs of other tiers go along, as only adjacent
 * level-0 runs merge.  0 if no tier of the nsmall small ones is full.
 */
static int
tier_count(List *srs, int nsmall)
{
	int			members[SMALL_TIERS] = {0};

	for (int i = 0; i < nsmall; i++)
	{
		int			tier = small_tier(((SortedRun *) list_nth(srs, i))->records);

		if (++members[tier] >= tier_quota(tier))
		{
			while (i + 1 < nsmall &&
				   small_tier(((SortedRun *) list_nth(srs, i + 1))->records) <= tier)
				i++;
			return i + 1;
		}
	}
	return 0;
}

/*
 * Starting from sorted runs [from, start), take in the next (up to the
 * first `limit`) while the candidates together are not much smaller than
 * it (size ratio), by Paimon's sizes.  Returns the index after the last
 * one taken.
 */
static int
ratio_count(const PkOptions *o, List *srs, int from, int start, int limit)
{
	int64		size = 0;
	int			c = start;

	for (int i = from; i < start; i++)
	{
		SortedRun  *sr = list_nth(srs, i);

		size += sr->size;
	}
	while (c < limit)
	{
		SortedRun  *next = list_nth(srs, c);

		if ((double) size * (100.0 + o->compaction_size_ratio) / 100.0 < next->size)
			break;
		size += next->size;
		c++;
	}
	return c;
}

/*
 * How many of the youngest sorted runs to merge, and into which level;
 * 0 when nothing is due.  Small runs first, by their own rule: a full
 * tier merges into one level-0 run (tier_count).  Then Paimon's
 * UniversalCompaction.pick over the sorted runs below the small ones,
 * which neither count nor weigh in it: size amplification first, then
 * size ratio, then the run count; a pick takes the small runs along.
 * runs: the table's data runs; srs: their sorted runs.
 */
static int
pick(const PkOptions *o, List *runs, List *srs, bool force, int *outlevel)
{
	int			n = list_length(srs);
	int			maxlevel = o->num_levels - 1;
	int			count = 0;
	/* the stop trigger as the next commit would find it (a 1-row run) */
	SmallRuns	sm = count_small(o, runs, 1);
	int			nsmall = sm.nsmall;
	int			nrest = sm.nrest;

	if (n == 0)
		return 0;
	if (!force && sm.due)
	{
		int			tiered = tier_count(srs, nsmall);

		if (tiered >= 2)
		{
			*outlevel = 0;
			return tiered;
		}
	}
	if (force)
		count = n;
	else if (nrest >= o->num_sorted_run_compaction_trigger)
	{
		int64		young = 0;
		int64		oldest = ((SortedRun *) llast(srs))->size;

		for (int i = nsmall; i < n - 1; i++)
			young += ((SortedRun *) list_nth(srs, i))->size;
		if (young * 100 > (int64) o->compaction_max_size_amplification_percent * oldest)
			count = n;
		else if ((count = ratio_count(o, srs, nsmall, nsmall + 1, n)) < nsmall + 2 &&
				 nrest > o->num_sorted_run_compaction_trigger)
			count = ratio_count(o, srs, nsmall,
								nsmall + nrest - o->num_sorted_run_compaction_trigger + 1,
								n);
		if (count < nsmall + 2)
			count = 0;
	}

	/*
	 * At the stop trigger (writers compact first), a pick merges something:
	 * the small runs, if nothing else is due (a stop trigger at the
	 * compaction trigger can be reached with the sorted runs below them
	 * short of it).  The worker merges them there too, before a writer has
	 * to.
	 */
	if (!force && count < 2 && nsmall >= 2 &&
		sm.effective >= o->num_sorted_run_stop_trigger)
	{
		*outlevel = 0;
		return nsmall;
	}
	if (count < 2 && !(force && count == 1 && n == 1))
		return 0;

	/*
	 * Output level: just above the first sorted run left out.  Never level
	 * 0, as in Paimon: a pick that would output there takes in the level-0
	 * runs after it up to the first run of a higher level, and outputs to
	 * that level (to the bottom if none is left).  doc/DECISIONS.md has
	 * what keeping outputs at level 0 cost.
	 */
	if (count == n)
		*outlevel = maxlevel;
	else
		*outlevel = Max(0, ((SortedRun *) list_nth(srs, count))->level - 1);
	if (*outlevel == 0)
	{
		while (count < n)
		{
			int			level = ((SortedRun *) list_nth(srs, count++))->level;

			if (level > 0)
			{
				*outlevel = level;
				break;
			}
		}
		if (count == n)
			*outlevel = maxlevel;
	}
	/* the bottom is as far as levels go */
	*outlevel = Min(*outlevel, maxlevel);
	return count;
}

/*
 * Is a compaction due: enough sorted runs below the small ones for one
 * (the compaction trigger), or enough small runs for theirs, or so many
 * sorted runs (small ones counted as count_small says) that writers
 * compact first (the stop trigger)?  runs: the table's data runs;
 * spilled: level-0 runs about to be added, each a sorted run; new_bytes:
 * what the run a commit is about to add from memory holds (0: none; more
 * than its compressed bytes, so it is small only if surely small).
 */
CompactDue
compact_due(Relation rel, List *runs, int spilled, int64 new_bytes)
{
	PkTable    *t = pk_table(rel);
	SmallRuns	sm = count_small(&t->opts, runs, new_bytes);

	if (sm.effective + spilled >= t->opts.num_sorted_run_stop_trigger)
		return COMPACT_STOP;
	if (sm.nrest + spilled >= t->opts.num_sorted_run_compaction_trigger || sm.due)
		return COMPACT_DUE;
	return COMPACT_NOT_DUE;
}

static void
finish_output(Relation rel, RunWriter *w, List **outputs)
{
	if (w && run_writer_nrows(w) > 0)
		*outputs = lappend(*outputs, run_writer_finish(w, 0));
}

/*
 * The table's data runs after the switch: those of the row as the commit
 * lock leaves it (commits since the pick added theirs), less the inputs,
 * plus the outputs.
 */
static void
switch_runs(TableState *st, List *inputs, List *outputs)
{
	int			n = 0;
	ListCell   *lc;
	int64	   *ids = palloc(sizeof(int64) * (st->ndata_runs + list_length(outputs) + 1));

	for (int i = 0; i < st->ndata_runs; i++)
	{
		bool		input = false;

		foreach(lc, inputs)
			input |= ((RunInfo *) lfirst(lc))->run_id == st->data_runs[i];
		if (!input)
			ids[n++] = st->data_runs[i];
	}
	foreach(lc, outputs)
		ids[n++] = ((RunInfo *) lfirst(lc))->run_id;
	st->data_runs = ids;
	st->ndata_runs = n;
}

/* the run of id among runs, NULL if none */
static RunInfo *
find_run(List *runs, int64 id)
{
	ListCell   *lc;

	foreach(lc, runs)
		if (((RunInfo *) lfirst(lc))->run_id == id)
			return lfirst(lc);
	return NULL;
}

/*
 * The switch's version of the table's row names st's runs: hand their list
 * to the run cache (this backend's, and once the compaction is visible the
 * other backends'), so that they need not read the outputs' rows from the
 * catalog.  The list is that of the version the commit lock found (before)
 * less the inputs, plus the outputs; if a run is unknown (before is not
 * cached), nothing is handed over and readers read the catalog.
 */
static void
store_switched(Relation rel, const TableState *st, List *before, List *outputs)
{
	List	   *runs = NIL;

	for (int i = 0; i < st->ndata_runs; i++)
	{
		RunInfo    *r = find_run(outputs, st->data_runs[i]);

		if (r == NULL)
			r = find_run(before, st->data_runs[i]);
		if (r == NULL)
			return;
		runs = lappend(runs, r);
	}
	cat_runs_sort(runs);
	runlist_store_commit(rel, st, runs);
}

/*
 * Is snapshot_id of relid retained, and was it committed under producer
 * none?  Its row is looked up by its key: the retained snapshots are the
 * rows there are (expiration takes the oldest first), and a search for the
 * oldest would step over every index entry of the snapshots expired since
 * the catalog was last vacuumed, thousands a second under 1-row commits.
 * Under the compaction lock or the level-0 lock, which expiration takes
 * both: none runs meanwhile.
 */
static bool
made_under_none(Oid relid, int64 snapshot_id)
{
	List	   *si = cat_snapshots_oldest(relid, snapshot_id - 1, snapshot_id, 1,
										  GetLatestSnapshot());

	return si != NIL && strcmp(((SnapshotInfo *) linitial(si))->producer,
							   prod_name(PK_PRODUCER_NONE)) == 0;
}

/* the widest span of snapshot ids that inputs_under_none reads at once */
#define UNDER_NONE_SPAN 4096

/*
 * Is the snapshot of a commit's run known not to have been made under
 * none without reading it (t->producer_from: made under another producer)?
 * One made under none is read still: it may have expired.
 */
static bool
known_not_under_none(const PkTable *t, const RunInfo *r)
{
	return t->producer_from >= 0 && r->created_snapshot > t->producer_from &&
		t->opts.changelog_producer != PK_PRODUCER_NONE;
}

/*
 * For each of the inputs, in order: is it a run straight from a commit
 * whose snapshot made_under_none says so?  The snapshots made since the
 * table's producer was first seen by this backend were made under it
 * (t->producer_from, which the first call sets: the caller holds a lock on
 * the table, so no ALTER TABLE runs meanwhile, and one that changes the
 * producer later invalidates t): under another producer than none, they
 * need not be read.  A merge of small runs takes dozens of recent
 * commits' runs, whose snapshots are near each other: they are read in
 * one pass over the span, as a lookup each would read the commit log from
 * its page on; runs far apart are looked up one by one.
 */
static bool *
inputs_under_none(Relation rel, PkTable *t, List *inputs)
{
	Oid			relid = RelationGetRelid(rel);
	bool	   *result = palloc0(sizeof(bool) * Max(list_length(inputs), 1));
	int64		lo = PG_INT64_MAX;
	int64		hi = 0;
	int			n = 0;
	int			i = 0;
	bool	   *none = NULL;
	ListCell   *lc;

	if (t->producer_from < 0 && t->opts.changelog_producer != PK_PRODUCER_NONE)
		t->producer_from = cat_table_state_peek(relid).last_snapshot_id;
	foreach(lc, inputs)
	{
		RunInfo    *r = lfirst(lc);

		if (!r->from_commit || known_not_under_none(t, r))
			continue;
		lo = Min(lo, r->created_snapshot);
		hi = Max(hi, r->created_snapshot);
		n++;
	}
	if (n > 1 && hi - lo < UNDER_NONE_SPAN)
	{
		/* the span's snapshots, ascending: which of its ids were none's */
		List	   *sis = cat_snapshots_oldest(relid, lo - 1, hi, -1, GetLatestSnapshot());

		none = palloc0(sizeof(bool) * (hi - lo + 1));
		foreach(lc, sis)
		{
			SnapshotInfo *si = lfirst(lc);

			none[si->snapshot_id - lo] =
				strcmp(si->producer, prod_name(PK_PRODUCER_NONE)) == 0;
		}
	}
	foreach(lc, inputs)
	{
		RunInfo    *r = lfirst(lc);

		if (r->from_commit && !known_not_under_none(t, r))
			result[i] = none ? none[r->created_snapshot - lo] :
				made_under_none(relid, r->created_snapshot);
		i++;
	}
	return result;
}

/* the table's data runs committed as of now, and their sorted runs */
static List *
committed_sorted_runs(Relation rel, List **live)
{
	*live = runlist_committed(runlist_visible(rel, GetLatestSnapshot()));
	return sorted_runs(*live);
}

/* the runs of the first count sorted runs: a compaction's inputs */
static List *
runs_of(List *srs, int count)
{
	List	   *runs = NIL;

	for (int i = 0; i < count; i++)
		runs = list_concat(runs, ((SortedRun *) list_nth(srs, i))->runs);
	return runs;
}

/*
 * Merge inputs, runs of live (the table's data runs as the caller read them
 * under its locks), into outlevel (bottom: the bottom level, with every
 * sorted run merged) and switch them for the outputs in one COMPACT
 * snapshot, under the commit lock.  Returns its id.
 */
static int64
merge_and_switch(Relation rel, List *live, List *inputs, int outlevel, bool bottom,
				 bool as_record, instr_time start)
{
	Oid			relid = RelationGetRelid(rel);
	PkTable    *t = pk_table(rel);
	List	   *outputs = NIL;
	List	   *before;
	ItemPointerData hint;
	SnapshotInfo *si;
	MergeIter  *m;
	MergeRow	row;
	RunWriter  *w = NULL;
	TableState	st;
	int64		in_records = 0;
	bool		kinds_derived;
	int64		out_records = 0;
	int64		snapshot_id = 0;
	ListCell   *lc;
	RunInfo    *changelog = NULL;
	MemoryContext itemcxt;
	MemoryContext old;
	bool	   *under_none;
	instr_time	duration;

	/*
	 * The merge: newest version per key; tombstones survive unless nothing
	 * older than the output exists below it.
	 */
	m = merge_begin(rel, t, inputs, NULL, InvalidCommandId,
					GetAccessStrategy(BAS_BULKREAD), !bottom, true);
	while (merge_next(m, &row))
	{
		CHECK_FOR_INTERRUPTS();
		if (w == NULL)
		{
			w = run_writer_begin(rel, t, outlevel, RUN_DATA, false);
			/* small merges of small runs stay in catalog rows */
			run_writer_allow_inline(w, live);
		}
		/* a table with row ids: each row keeps its id (tid.h) */
		run_writer_add(w, row.seq, row.kind, row.tup, row.keys,
					   pk_key_hash(t, row.keys),
					   pk_table_row_ids(t) ? pk_tid_number(&row.tid) : RUN_NO_ID);
		out_records++;
		if (run_writer_stream_size(w) >= t->opts.target_run_size)
		{
			finish_output(rel, w, &outputs);
			w = NULL;
		}
	}
	merge_end(m);
	finish_output(rel, w, &outputs);

	/* full-compaction: the changelog of every compaction into the bottom */
	if (t->opts.changelog_producer == PK_PRODUCER_FULL_COMPACTION &&
		outlevel == t->opts.num_levels - 1)
	{
		List	   *upper = NIL;
		List	   *lower = NIL;

		foreach(lc, inputs)
		{
			RunInfo    *r = lfirst(lc);

			if (r->level == outlevel)
				lower = lappend(lower, r);
			else
				upper = lappend(upper, r);
		}
		changelog = prod_full_compaction(rel, t, upper, lower, 0);
	}

	/* which inputs' snapshots were made under none, before the lock */
	under_none = inputs_under_none(rel, t, inputs);

	/*
	 * commit: inputs out, outputs in, one COMPACT snapshot.  Last in the
	 * lock order (the compaction or level-0 lock is held); under it the
	 * table's row is read as the last commit left it, with the runs
	 * committed since the pick, which the switch keeps.
	 */
	(void) cat_commit_lock(relid);
	st = cat_table_state(relid, run_publish_row(rel, &hint) ? &hint : NULL);
	/* the runs of that version, unless this transaction rewrote them already */
	if (!runlist_cached(rel, GetLatestSnapshot(), true, &before))
		before = NIL;
	snapshot_id = st.last_snapshot_id + 1;
	/* catalog updates of thousands of runs: their memory goes run by run */
	itemcxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge compaction switch",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(itemcxt);
	foreach(lc, outputs)
	{
		RunInfo    *r = lfirst(lc);

		/* an output in its catalog row gets the row now (run_writer_finish) */
		r->created_snapshot = snapshot_id;
		if (r->stream)
			cat_run_insert(relid, r);
		else
			cat_run_set_snapshot(relid, r->run_id, snapshot_id);
		MemoryContextReset(itemcxt);
	}
	cat_runs_replaced(relid);
	kinds_derived = cat_snapshots_hold_changelogs();
	foreach(lc, inputs)
	{
		RunInfo    *r = lfirst(lc);

		in_records += r->record_count;

		/*
		 * Producer none reads a commit's data run as its change stream:
		 * kept as a delta while its snapshot is retained, if that snapshot
		 * was made under none (the producer may have changed since).  A
		 * delta of an expired snapshot would never be expired (expiration
		 * removes a snapshot's runs with its row).  One in its catalog row
		 * is left as it is: no version of the table's row names it from
		 * now on, which makes it a delta (data_run_is_delta); one on pages
		 * is retired, moving into its row if small (its pages freed).  A
		 * catalog before 0.8, whose pk_stats goes by the rows' kinds, has
		 * every one retired.
		 */
		if (under_none[foreach_current_index(lc)])
		{
			RunInfo		delta = *r;

			if (r->stream == NULL)
			{
				delta.stream = run_stream_read(rel, r, RUN_INLINE_MAX, &delta.stream_len);
				cat_run_retire(relid, &delta);
			}
			else if (!kinds_derived)
			{
				delta.stream = NULL;	/* in its row already */
				cat_run_retire(relid, &delta);
			}
		}
		else
			cat_run_delete(relid, r->run_id);
		MemoryContextReset(itemcxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(itemcxt);
	if (changelog)
		cat_run_set_snapshot(relid, changelog->run_id, snapshot_id);
	st.last_snapshot_id = snapshot_id;
	st.total_record_count += out_records - in_records;
	if (bottom)
		st.last_full_compaction = snapshot_id;
	switch_runs(&st, inputs, outputs);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	/*
	 * Its snapshot a record: not in a file this transaction made (a
	 * TRUNCATE's), whose commit starts the table's log afresh
	 */
	si = NULL;
	if (as_record && changelog == NULL &&
		RelationNewFileSubid(rel) == InvalidSubTransactionId)
		si = log_snapshot(rel, &st, snapshot_id, COMMIT_COMPACT, st.total_record_count,
						  out_records, 0, t->opts.changelog_producer,
						  INSTR_TIME_GET_MILLISEC(duration), NULL, NULL);
	if (si == NULL)
		si = cat_snapshot_insert(relid, snapshot_id, COMMIT_COMPACT,
								 st.total_record_count, out_records,
								 changelog ? changelog->record_count : 0,
								 prod_name(t->opts.changelog_producer),
								 INSTR_TIME_GET_MILLISEC(duration), NULL, NULL);
	cat_table_state_update(relid, &st);
	store_switched(rel, &st, before, outputs);
	/* wal_level = logical: full-compaction's changes, for decoding */
	if (changelog)
		changelog_wal_log_snapshot(rel, si, NIL, false);
	/* and its materialized aggregates */
	if (changelog)
		mat_maintain(rel, si, NIL, false);
	return snapshot_id;
}

/*
 * compact_table once its locks are held; level0_taken: this transaction
 * took the level-0 lock for this compaction (else it held it before: an
 * expiration's, say, which may rely on it), and gives it up after the pick.
 */
static int64
compact_locked(Relation rel, bool full, bool as_record, bool level0_taken)
{
	Oid			relid = RelationGetRelid(rel);
	PkTable    *t = pk_table(rel);
	List	   *live;
	List	   *srs;
	List	   *inputs;
	int			count;
	int			outlevel = 0;
	bool		bottom;
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	/*
	 * After the lock: runs committed before now, none being compacted.  Runs
	 * this transaction spilled are not committed yet: they are not touched.
	 */
	srs = committed_sorted_runs(rel, &live);
	count = pick(&t->opts, live, srs, full, &outlevel);
	if (count == 0)
		return 0;
	inputs = runs_of(srs, count);
	/* a full compaction of what is already one bottom run has nothing to do */
	if (full && list_length(srs) == 1 && ((SortedRun *) linitial(srs))->level == outlevel &&
		list_length(inputs) == 1)
		return 0;
	bottom = (count == list_length(srs));

	/*
	 * The inputs are the youngest sorted runs (pick): every run committed
	 * from now on is newer than all of them.  The level-0 lock goes now, so
	 * that writers at the stop trigger merge those runs while this merge
	 * runs (compact_level0_beside), which into the bottom level of a large
	 * table takes seconds.  Not if this transaction held the lock before
	 * (an expiration's): that holder may rely on it.
	 */
	if (level0_taken)
	{
		int64		max_seq = 0;
		ListCell   *lc;

		foreach(lc, inputs)
			max_seq = Max(max_seq, ((RunInfo *) lfirst(lc))->max_seq);
		/* the slot before the lock goes: the next holder must find it */
		set_merging(relid, GetTopTransactionId(), max_seq);
		cat_level0_unlock(relid);
	}
	return merge_and_switch(rel, live, inputs, outlevel, bottom, as_record, start);
}

/*
 * Compact rel once: full merges every run into the bottom level, otherwise
 * the universal pick decides.  Returns the COMPACT snapshot id, or 0 when
 * there was nothing to do.  The caller's transaction commits the result.
 * The merge runs beside commits; the commit lock is taken for the switch.
 * as_record: the snapshot may be a record of the table's commit log
 * (log_snapshot.c says when it can), unless it carries a changelog: not
 * for the compactions of DDL and VACUUM FULL, which rewrite or copy the
 * table's pages around it.
 */
int64
compact_table(Relation rel, bool full, bool as_record)
{
	Oid			relid = RelationGetRelid(rel);
	bool		level0_taken;

	/* in the lock order (catalog_lock.c); the commit lock at the switch */
	cat_compaction_lock(relid);
	level0_taken = cat_level0_lock(relid);
	return compact_locked(rel, full, as_record, level0_taken);
}

/*
 * compact_table for a writer at the stop trigger, which waits for neither
 * lock: -1 if a compaction holds the compaction lock (the writer may merge
 * beside it, compact_level0_beside), 0 if the level-0 lock is taken or
 * nothing is due.  A level-0 lock this call took is given up after the
 * pick, as compact_table gives up its own, so that other writers merge
 * beside this writer's merge too.
 */
int64
compact_table_nowait(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	bool		level0_taken;

	if (!cat_compaction_trylock(relid))
		return -1;
	if (!cat_level0_trylock(relid, &level0_taken))
		return 0;
	return compact_locked(rel, false, true, level0_taken);
}

/*
 * A writer at the stop trigger while a compaction runs, holding the
 * level-0 lock that compaction gave up (compact_table): merge the level-0
 * runs committed since it picked its inputs, by their tiers, as pick
 * would, into level 0.  Without it, level 0 grows by a run a commit for as
 * long as that merge runs: on a table of a million rows, thousands of runs
 * in seconds, which every commit and lookup then steps over.  The runs
 * taken are disjoint from that merge's inputs, whose rows are all older;
 * both switches go under the commit lock, from the table's row as it is
 * then.  Returns the COMPACT snapshot id, 0 if nothing was merged.
 */
int64
compact_level0_beside(Relation rel)
{
	TransactionId xid;
	int64		taken_seq;
	List	   *live;
	List	   *srs;
	SmallRuns	sm;
	int			since = 0;
	int			count;
	instr_time	start;

	/* its transaction still running: it holds the compaction lock */
	if (!merging(RelationGetRelid(rel), &xid, &taken_seq) ||
		TransactionIdIsCurrentTransactionId(xid) || !TransactionIdIsInProgress(xid))
		return 0;
	INSTR_TIME_SET_CURRENT(start);
	srs = committed_sorted_runs(rel, &live);
	sm = count_small(&pk_table(rel)->opts, live, 1);
	/* the youngest small runs, those newer than everything it took */
	while (since < sm.nsmall && since < list_length(srs))
	{
		SortedRun  *sr = list_nth(srs, since);

		if (sr->level != 0 || ((RunInfo *) linitial(sr->runs))->min_seq <= taken_seq)
			break;
		since++;
	}
	count = tier_count(srs, since);
	if (count < 2)
		return 0;
	return merge_and_switch(rel, live, runs_of(srs, count), 0, false, true, start);
}

/*
 * Commits (APPEND and OVERWRITE snapshots) since the last compaction into
 * the bottom level, counted up to limit: the full-compaction producer's
 * schedule.  Read without the commit lock (a schedule needs no exact
 * count), a batch of snapshots at a time in memory of its own: a table
 * whose full compactions fail keeps piling up commits to count.
 */
int64
compact_commits_since_full(Relation rel, int64 limit)
{
	Oid			relid = RelationGetRelid(rel);
	TableState	st = cat_table_state_peek(relid);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge commit count",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int64		from = st.last_full_compaction;
	int64		n = 0;
	List	   *batch;

	do
	{
		ListCell   *lc;

		MemoryContextReset(cxt);
		batch = cat_snapshots_oldest(relid, from, PG_INT64_MAX, 1024, GetLatestSnapshot());
		foreach(lc, batch)
		{
			SnapshotInfo *si = lfirst(lc);

			if (si->kind != COMMIT_COMPACT)
				n++;
			from = si->snapshot_id;
		}
	} while (list_length(batch) == 1024 && n < limit);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}
