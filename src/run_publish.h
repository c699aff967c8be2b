/*-------------------------------------------------------------------------
 *
 * run_publish.h
 *	  The run lists and run rows commits publish in shared memory, for
 *	  other backends' run lists (run_publish.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_PUBLISH_H
#define PK_RUN_PUBLISH_H

#include "storage/itemptr.h"
#include "pg_compat.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "run_format.h"

/*
 * A table's data runs and counters as a commit left them: the version of
 * its pkchangelog.tables row that commit wrote (xmin, snapshot_id), and a
 * snapshot taken once the commit was visible (its xmin, xmax and running
 * xids): a snapshot with the same contents sees that version.  The run ids
 * come last, so that only the nruns used are copied.  A list of more runs
 * is not published: MAX_PUBLISHED_RUNS takes in the small runs the stop
 * trigger allows under default options (about 150) beside a bottom level
 * of about a hundred target-sized runs.
 */
#define MAX_PUBLISHED_RUNS 256
#define MAX_PUBLISHED_XIP 32
typedef struct PublishedRuns
{
	Oid			relid;
	RelFileLocator node;
	TransactionId xmin;
	int64		snapshot_id;
	ItemPointerData row;		/* where the version is in pkchangelog.tables */
	TransactionId snap_xmin;
	TransactionId snap_xmax;
	int			snap_xcnt;
	TransactionId snap_xip[MAX_PUBLISHED_XIP];
	/* the version's counters (TableState) */
	int64		last_seq;
	int64		total_record_count;
	int64		last_full_compaction;
	int64		commits;
	int64		log_run;
	int64		log_block;
	int64		row_snapshot_id;
	int			nruns;
	int64		run_ids[MAX_PUBLISHED_RUNS];
} PublishedRuns;

/* room for a published run row (run_publish_find_run) */
#define MAX_PUBLISHED_RUN_BYTES 2048

/* run_publish.c */
extern Size run_publish_shmem_size(void);
extern void run_publish_shmem_init(int tranche);
extern void run_publish_list(const PublishedRuns *p);
extern void run_publish_note_writer(Oid relid, TransactionId xid);
extern bool run_publish_latest(const RelFileLocator *node, Oid relid,
							   PublishedRuns *p);
extern bool run_publish_row(Relation rel, ItemPointerData *row);
extern bool run_publish_state(const RelFileLocator *node, Oid relid,
							  PublishedRuns *p, TransactionId *writer,
							  bool *writer_known);
extern bool run_publish_sees(Snapshot snapshot, const PublishedRuns *pub,
							 TransactionId writer, bool writer_known);
extern void run_publish_run(const RelFileLocator *node, Oid relid,
							const RunInfo *run);
extern bool run_publish_find_run(const RelFileLocator *node, Oid relid,
								 int64 run_id, char *buf, RunInfo *run);

#endif							/* PK_RUN_PUBLISH_H */
