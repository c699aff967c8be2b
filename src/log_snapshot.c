/*-------------------------------------------------------------------------
 *
 * log_snapshot.c
 *	  A snapshot kept as a record of its table's commit log (commit_log.c)
 *	  instead of a row of pkchangelog.snapshots: a small commit's, and a
 *	  compaction's (the background worker's, a writer's at the stop
 *	  trigger); the record is appended to the page the table's row names,
 *	  or to a new page placed when that one is full.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog_runs.h"
#include "miscadmin.h"
#include "utils/timestamp.h"

#include "commit_log.h"
#include "log_snapshot.h"
#include "pg_compat.h"
#include "run_space.h"

/*
 * The snapshot snapshot_id of rel (kind, with the counts, producer and
 * duration it shows, and the runs kept in its row, if any) as a record of
 * the table's commit log: what cat_snapshot_insert returns, or NULL when
 * it cannot be one (a catalog before 0.11, a record too large for a
 * page), for the caller to insert the row.  st: the state the caller
 * writes; when the page it names is full (or gone with a file a TRUNCATE
 * or rewrite replaced), a new page is placed and st names it: the table's
 * row must then be written; a transaction whose record is the full
 * page's last writes a row instead (its records stay on one page, where
 * the next transaction's append resolves them: commit_log.c).  Under the
 * table's commit lock.
 */
SnapshotInfo *
log_snapshot(Relation rel, TableState *st, int64 snapshot_id, CommitKind kind,
			 int64 total, int64 delta, int64 changelog, PkProducer producer,
			 double duration_ms, RunInfo *changelog_run, RunInfo *data_run)
{
	CommitRecord rec = {0};
	SnapshotInfo *si;
	CommitLogAppend done = LOG_NEW_PAGE;

	/*
	 * A record counts once its (top) transaction commits: in a
	 * subtransaction, which may yet roll back, a row is written
	 */
	if (!cat_tables_hold_log() || GetCurrentTransactionNestLevel() > 1)
		return NULL;
	rec.snapshot_id = snapshot_id;
	rec.xid = GetTopFullTransactionId();
	rec.commit_time = GetCurrentTimestamp();
	rec.kind = kind;
	rec.producer = producer;
	rec.user = GetUserNameFromId(GetUserId(), false);
	rec.total_record_count = total;
	rec.delta_record_count = delta;
	rec.changelog_record_count = changelog;
	rec.duration_ms = duration_ms;
	rec.data = data_run;
	rec.changelog = changelog_run;
	if (!log_format_fits(&rec))
		return NULL;
	if (st->log_run != 0)
		done = commit_log_append(rel, (BlockNumber) st->log_block, false, &rec);
	if (done == LOG_NO_RECORD)
		return NULL;
	if (done == LOG_NEW_PAGE)
	{
		RunInfo		page = {0};

		page.run_id = cat_next_run_id();
		page.relfilenode = RelationFileNumber(rel);
		page.kind = RUN_LOG;
		page.nblocks = 1;
		page.size_bytes = BLCKSZ;
		page.created_snapshot = snapshot_id;
		page.min_seq = snapshot_id;
		space_reserve(rel, &page, false);
		st->log_run = page.run_id;
		st->log_block = page.start_block;
		if (commit_log_append(rel, page.start_block, true, &rec) != LOG_APPENDED)
			elog(ERROR, "a commit log record of %u bytes did not fit a new page",
				 (unsigned) (data_run ? data_run->stream_len : 0));
	}
	if (changelog_run)
		changelog_run->created_snapshot = snapshot_id;
	si = palloc(sizeof(SnapshotInfo));
	si->snapshot_id = snapshot_id;
	si->kind = kind;
	si->producer = pstrdup(prod_name(producer));
	si->commit_time = rec.commit_time;
	si->changelog = changelog_run;
	si->data = data_run;
	return si;
}
