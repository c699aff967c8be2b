/*-------------------------------------------------------------------------
 *
 * maint_expire.c
 *	  Snapshot expiration (DESIGN §7): the oldest snapshots beyond the
 *	  retention options go, with their changelog and delta runs.
 *
 *	  This file decides which snapshots are due, and remembers per table
 *	  and backend where the next search starts; removing a snapshot's rows
 *	  and runs is catalog_snapshots.c's.  Its callers (the commit step
 *	  every 64th commit, the background worker, pk_expire_snapshots) bound
 *	  the work of one transaction with max_snapshots.
 *
 *	  Expiration goes from the oldest snapshot and stops at the first one
 *	  kept, so retained ids stay dense, and never passes the oldest
 *	  snapshot a consumer has yet to read.  It runs under the table's
 *	  compaction and level-0 locks, so one expiration or compaction of a
 *	  table runs at a time while commits go on; it takes the commit lock
 *	  only to settle the table's row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog_lock.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "catalog_consumers.h"
#include "catalog_snapshots.h"
#include "catalog_tables.h"
#include "maint_expire.h"
#include "relcache_hub.h"
#include "table_desc.h"

/*
 * Snapshots read from the catalog at a time; the first read takes one, as
 * the oldest is mostly kept (expiration runs every 64th commit, and a
 * batch of the commit log's records would take a good part of that commit)
 */
#define EXPIRE_READ_BATCH 64

/*
 * Where this backend's next expiration of a table searches from.  The
 * expired snapshots' index entries stay until the catalog is vacuumed, and
 * a search from the first snapshot would step over all of them each time
 * (thousands a second under 1-row commits), so each backend remembers, per
 * table, up to where every snapshot is gone for good, and searches from
 * there; and the oldest snapshot, when that was found kept, with its
 * commit time: until the retention passes it, nothing is due and no search
 * is made (a writer expires under its commit lock, which every other
 * writer of the table waits for).
 *
 * Every snapshot up to `gone` has been expired by a committed transaction
 * (ids only grow, and an expired snapshot never comes back).  pending: up to
 * where this transaction expired, for `gone` at its commit (forgotten if
 * a subtransaction rolls back: which one expired is not known).  A
 * relcache invalidation of the table (its drop among others) forgets it,
 * so that a table that reuses the OID starts from its first snapshot.
 * xact_expired: this transaction expired snapshots, so what it reads of
 * the catalog may lack rows a rollback would bring back.
 */
#define EXPIRE_STARTS 16

typedef struct ExpireStart
{
	Oid			relid;			/* InvalidOid: a free slot */
	int64		gone;
	int64		pending;		/* 0: this transaction expired none */
	int64		kept;			/* the oldest snapshot, found kept (0: none) */
	TimestampTz kept_time;		/* its commit time */
} ExpireStart;

static ExpireStart starts[EXPIRE_STARTS];
static int	starts_next = 0;	/* the slot a new table takes */
static bool starts_registered = false;
static bool xact_expired = false;

static void
starts_invalidate(Datum arg, Oid relid)
{
	for (int i = 0; i < EXPIRE_STARTS; i++)
		if (relid == InvalidOid || starts[i].relid == relid)
			memset(&starts[i], 0, sizeof(ExpireStart));
}

/* relid's slot, taken (over the oldest taken) if create */
static ExpireStart *
start_of(Oid relid, bool create)
{
	ExpireStart *e;

	for (int i = 0; i < EXPIRE_STARTS; i++)
		if (starts[i].relid == relid)
			return &starts[i];
	if (!create)
		return NULL;
	if (!starts_registered)
	{
		hub_register_relcache(starts_invalidate, (Datum) 0);
		starts_registered = true;
	}
	e = &starts[starts_next];
	starts_next = (starts_next + 1) % EXPIRE_STARTS;
	memset(e, 0, sizeof(ExpireStart));
	e->relid = relid;
	return e;
}

/*
 * At the end of a transaction: what it expired is gone for good if it
 * committed (not when prepared: its deletes may yet be rolled back).
 */
void
expire_xact_end(bool committed)
{
	for (int i = 0; i < EXPIRE_STARTS; i++)
	{
		if (committed && starts[i].pending > starts[i].gone)
			starts[i].gone = starts[i].pending;
		starts[i].pending = 0;
	}
	xact_expired = false;
}

/* a subtransaction rolled back: what it expired comes back */
void
expire_subxact_abort(void)
{
	for (int i = 0; i < EXPIRE_STARTS; i++)
		starts[i].pending = 0;
}

/*
 * Expire the snapshots of rel that are due, the oldest first, at most
 * max_snapshots of them (-1: no limit).  Returns how many were expired.
 * last_snapshot_id: the table's last snapshot id, if the caller knows it
 * (a commit under its commit lock; 0: read it).
 *
 * A snapshot is kept while it is among the newest *_num_retained_min, and
 * expired when more than *_num_retained_max newer ones exist or it is
 * older than *_time_retained.  A snapshot and its changelog expire
 * together, under the longer of the snapshot and changelog retentions
 * (the changelog ones default to the snapshot ones).  No snapshot a
 * consumer (pk_consume) has yet to read goes, unless the consumer has
 * consumed nothing for consumer_expiration_time.
 *
 * Memory stays bounded whatever the backlog: snapshots are read a batch at
 * a time and each is expired in a memory context reset after it, reading
 * only its own catalog rows.  An interrupted expiration resumes from the
 * oldest snapshot left.
 */
int64
expire_snapshots(Relation rel, int64 max_snapshots, int64 last_snapshot_id)
{
	Oid			relid = RelationGetRelid(rel);
	PkOptions  *o = &pk_table(rel)->opts;
	int64		keep_min = Max(o->snapshot_num_retained_min, o->changelog_num_retained_min);
	int64		keep_max = Max(o->snapshot_num_retained_max, o->changelog_num_retained_max);
	int64		keep_ms = Max(o->snapshot_time_retained, o->changelog_time_retained);
	TimestampTz cutoff = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), -keep_ms);
	MemoryContext batchcxt;
	MemoryContext itemcxt;
	MemoryContext old;
	TableState	st;
	int64		last;
	int64		floor;
	int64		upto;
	int64		from = 0;
	int64		first_from;
	int64		expired = 0;
	bool		done = false;
	bool		first = true;
	ExpireStart *start;

	/*
	 * The oldest snapshot as last found kept is kept still: so is every
	 * snapshot after it, and none before it is left.
	 */
	start = start_of(relid, false);
	if (start != NULL && start->kept > 0 && start->kept_time >= cutoff)
	{
		last = last_snapshot_id > 0 ? last_snapshot_id :
			cat_table_state_peek(relid).last_snapshot_id;
		if (start->kept <= last && last - start->kept < keep_max)
			return 0;
	}

	/*
	 * One maintainer of a table at a time; commits go on meanwhile, but no
	 * writer's merge of level-0 runs, which reads their snapshots' rows.  A
	 * commit that expires holds both already (write_commit.c tries them
	 * under its commit lock): these calls then find them held.
	 */
	cat_compaction_lock(relid);
	(void) cat_level0_lock(relid);
	st = cat_table_state_peek(relid);
	last = st.last_snapshot_id;
	/* consumers keep what they have yet to read (idle ones do not) */
	floor = cat_consumers_floor(relid, o->consumer_expiration_time > 0 ?
								TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															-o->consumer_expiration_time) : 0);
	upto = Min(last - keep_min, floor - 1);

	start = start_of(relid, false);
	if (start != NULL)
		from = start->gone;
	first_from = from;
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge expiration batch",
									 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batchcxt);

	/* from the oldest, a batch at a time, until one is kept */
	while (!done && expired != max_snapshots)
	{
		List	   *snaps;
		ListCell   *lc;
		int			limit = first ? 1 : EXPIRE_READ_BATCH;

		if (max_snapshots >= 0)
			limit = (int) Min(limit, max_snapshots - expired);
		/* the previous batch's list and its item context go */
		MemoryContextReset(batchcxt);
		itemcxt = AllocSetContextCreate(batchcxt, "pkmerge expiration snapshot",
										ALLOCSET_DEFAULT_SIZES);
		/*
		 * The latest snapshot: under the compaction lock every earlier
		 * expiration has ended, and this one must see what those removed
		 */
		snaps = cat_snapshots_oldest(relid, from, upto, limit, GetLatestSnapshot());
		done = list_length(snaps) < limit;

		/*
		 * Before the first snapshot this finds, all are gone for good,
		 * unless this transaction expired some (its deletes may be undone)
		 */
		if (first && snaps != NIL && !xact_expired)
		{
			start = start_of(relid, true);
			start->gone = Max(start->gone, ((SnapshotInfo *) linitial(snaps))->snapshot_id - 1);
		}
		first = false;
		foreach(lc, snaps)
		{
			SnapshotInfo *si = lfirst(lc);

			CHECK_FOR_INTERRUPTS();
			if (last - si->snapshot_id < keep_max && si->commit_time >= cutoff)
			{
				/* the oldest of all, kept (not one after this expired some) */
				if (expired == 0 && !xact_expired)
				{
					start = start_of(relid, true);
					start->kept = si->snapshot_id;
					start->kept_time = si->commit_time;
				}
				done = true;
				break;
			}

			/*
			 * Snapshots past the table's row tell the commits folded after
			 * it: the row takes them before any of those goes (under the
			 * commit lock, to the end of the transaction).  Not before:
			 * while the oldest snapshot is kept (the first hour of a
			 * table's commits, by default), every 64th commit would write
			 * the row for nothing.
			 */
			if (si->snapshot_id > st.row_snapshot_id)
			{
				(void) cat_commit_lock(relid);
				MemoryContextSwitchTo(old);
				st = cat_table_state_settle(relid);
				MemoryContextSwitchTo(batchcxt);
			}
			MemoryContextSwitchTo(itemcxt);
			cat_snapshot_expire(relid, si->snapshot_id, &st);
			MemoryContextSwitchTo(batchcxt);
			MemoryContextReset(itemcxt);
			from = si->snapshot_id;
			expired++;
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(batchcxt);
	if (expired > 0)
	{
		start_of(relid, true)->pending = from;
		xact_expired = true;
		/* the commit log's pages whose records all went */
		cat_log_expired(relid, first_from, from);
	}
	return expired;
}
