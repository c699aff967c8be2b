/*-------------------------------------------------------------------------
 *
 * expire.c
 *	  Snapshot expiration (DESIGN §7): the oldest snapshots beyond the
 *	  retention options go, with their changelog and delta runs.
 *
 * A snapshot is kept while it is among the newest *_num_retained_min, and
 * expired when more than *_num_retained_max newer ones exist or it is older
 * than *_time_retained.  A snapshot and its changelog expire together, under
 * the longer of the snapshot and changelog retentions (the changelog ones
 * default to the snapshot ones).  Expiration goes from the oldest snapshot
 * and stops at the first one kept, so retained ids stay dense.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "expire.h"
#include "pktable.h"

int64
expire_snapshots(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	PkOptions  *o = &pk_table(rel)->opts;
	int64		keep_min = Max(o->snapshot_num_retained_min, o->changelog_num_retained_min);
	int64		keep_max = Max(o->snapshot_num_retained_max, o->changelog_num_retained_max);
	int64		keep_ms = Max(o->snapshot_time_retained, o->changelog_time_retained);
	TimestampTz cutoff = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), -keep_ms);
	List	   *snaps;
	ListCell   *lc;
	int64		last = 0;
	int64		expired = 0;

	/* one maintainer of a table at a time; commits go on meanwhile */
	cat_compaction_lock(relid);
	last = cat_table_state_peek(relid).last_snapshot_id;

	/* from the oldest, a batch at a time, until one is kept */
	for (;;)
	{
		snaps = cat_snapshots_oldest(relid, 0, last - keep_min, 64, GetLatestSnapshot());
		if (snaps == NIL)
			return expired;
		foreach(lc, snaps)
		{
			SnapshotInfo *si = lfirst(lc);

			if (last - si->snapshot_id < keep_max && si->commit_time >= cutoff)
				return expired;
			cat_snapshot_expire(relid, si->snapshot_id);
			expired++;
		}
	}
	return expired;
}
