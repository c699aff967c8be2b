/*-------------------------------------------------------------------------
 *
 * maint_expire.c
 *	  Snapshot expiration (DESIGN §7): the oldest snapshots beyond the
 *	  retention options go, with their changelog and delta runs.
 *
 * A snapshot is kept while it is among the newest *_num_retained_min, and
 * expired when more than *_num_retained_max newer ones exist or it is older
 * than *_time_retained.  A snapshot and its changelog expire together, under
 * the longer of the snapshot and changelog retentions (the changelog ones
 * default to the snapshot ones).  Expiration goes from the oldest snapshot
 * and stops at the first one kept, so retained ids stay dense.  Nor does it
 * pass the oldest snapshot a consumer (pk_consume) has yet to read, unless
 * the consumer has consumed nothing for consumer_expiration_time.
 *
 * Memory stays bounded whatever the backlog: snapshots are read a batch at
 * a time and each is expired in a memory context reset after it, reading
 * only its own catalog rows.  Callers bound the work of one transaction
 * with max_snapshots (the background worker commits a batch at a time), so
 * a long backlog drains over several transactions and an interrupted
 * expiration resumes from the oldest snapshot left.
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
#include "maint_expire.h"
#include "table_desc.h"

/* snapshots read from the catalog at a time */
#define EXPIRE_READ_BATCH 64

/*
 * Expire the snapshots of rel that are due, the oldest first, at most
 * max_snapshots of them (-1: no limit).  Returns how many were expired.
 */
int64
expire_snapshots(Relation rel, int64 max_snapshots)
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
	int64		expired = 0;
	bool		done = false;

	/* one maintainer of a table at a time; commits go on meanwhile */
	cat_compaction_lock(relid);
	st = cat_table_state_peek(relid);
	last = st.last_snapshot_id;
	/* consumers keep what they have yet to read (idle ones do not) */
	floor = cat_consumers_floor(relid, o->consumer_expiration_time > 0 ?
								TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															-o->consumer_expiration_time) : 0);
	upto = Min(last - keep_min, floor - 1);

	/*
	 * Snapshots past the table's row tell the commits folded after it: the
	 * row takes them before any of those goes (under the commit lock, to
	 * the end of the transaction; only a table idle since fewer than 16
	 * small commits has such snapshots due).
	 */
	if (upto > st.row_snapshot_id)
	{
		(void) cat_commit_lock(relid);
		st = cat_table_state_settle(relid);
	}

	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge expiration batch",
									 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batchcxt);

	/* from the oldest, a batch at a time, until one is kept */
	while (!done && expired != max_snapshots)
	{
		List	   *snaps;
		ListCell   *lc;
		int			limit = EXPIRE_READ_BATCH;

		if (max_snapshots >= 0)
			limit = (int) Min(limit, max_snapshots - expired);
		/* the previous batch's list and its item context go */
		MemoryContextReset(batchcxt);
		itemcxt = AllocSetContextCreate(batchcxt, "pkmerge expiration snapshot",
										ALLOCSET_DEFAULT_SIZES);
		snaps = cat_snapshots_oldest(relid, from, upto, limit, GetLatestSnapshot());
		done = list_length(snaps) < limit;
		foreach(lc, snaps)
		{
			SnapshotInfo *si = lfirst(lc);

			CHECK_FOR_INTERRUPTS();
			if (last - si->snapshot_id < keep_max && si->commit_time >= cutoff)
			{
				done = true;
				break;
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
	return expired;
}
