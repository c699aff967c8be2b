/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Per-table hints in shared memory, keyed by the table's whole identity
 *	  (database and relid, RelFileNode): where a table file's used part
 *	  ends and the gaps VACUUM found in it that new runs can reuse;
 *	  per backend, which tables its transaction has buffered writes to;
 *	  per table, the data runs its latest commit left, the rows of the
 *	  runs its latest commits wrote, the condition variable its
 *	  committers wait on for its commit lock, and the compaction it has
 *	  running.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_HINTS_H
#define PK_HINTS_H

#include "storage/block.h"
#include "storage/condition_variable.h"
#include "storage/itemptr.h"
#include "storage/relfilenode.h"

/* a run of free blocks in a table's file */
typedef struct SpaceGap
{
	BlockNumber start;
	BlockNumber len;
} SpaceGap;

/* gaps kept per file: the largest ones, in block order */
#define HINTS_MAX_GAPS 64

/*
 * A table's data runs and counters as a commit left them: the version of
 * its pkchangelog.tables row that commit wrote (xmin, snapshot_id), and a
 * snapshot taken once the commit was visible (its xmin, xmax and running
 * xids): a snapshot with the same contents sees that version.  The run ids
 * come last, so that only the nruns used are copied.  A list of more runs
 * is not published: HINTS_MAX_RUN_IDS takes in the small runs the stop
 * trigger allows under default options (about 150) beside a bottom level
 * of about a hundred target-sized runs.
 */
#define HINTS_MAX_RUN_IDS 256
#define HINTS_MAX_XIP 32
typedef struct PublishedRuns
{
	Oid			relid;
	RelFileNode node;
	TransactionId xmin;
	int64		snapshot_id;
	ItemPointerData row;		/* where the version is in pkchangelog.tables */
	TransactionId snap_xmin;
	TransactionId snap_xmax;
	int			snap_xcnt;
	TransactionId snap_xip[HINTS_MAX_XIP];
	/* the version's counters (TableState) */
	int64		last_seq;
	int64		total_record_count;
	int64		last_full_compaction;
	int64		commits;
	int64		log_run;
	int64		log_block;
	int64		row_snapshot_id;
	int			nruns;
	int64		run_ids[HINTS_MAX_RUN_IDS];
} PublishedRuns;


/* the bytes of a run's catalog row a commit publishes (keys, stream) */
#define HINTS_MAX_RUN_BYTES 2048

/* shmem.c */
extern void hints_init(void);
extern ConditionVariable *hints_commit_wake(Oid relid);
extern void hints_set_merging(Oid relid, TransactionId xid, int64 max_seq);
extern bool hints_merging(Oid relid, TransactionId *xid, int64 *max_seq);
extern BlockNumber hints_file_end(const RelFileNode *node);
extern void hints_set_file_end(const RelFileNode *node, BlockNumber end,
							   const SpaceGap *gaps, int ngaps);
extern bool hints_take_gap(const RelFileNode *node, BlockNumber nblocks,
						   BlockNumber *start);
extern void hints_note_writes(Oid relid);
extern void hints_clear_writes(void);
extern bool hints_leader_writes(Oid relid);
extern void hints_publish_runs(const PublishedRuns *p);
extern bool hints_published_runs(const RelFileNode *node, Oid relid,
								 PublishedRuns *p);
extern void hints_note_state_writer(Oid relid, TransactionId xid);
extern bool hints_published_state(const RelFileNode *node, Oid relid,
								  PublishedRuns *p, TransactionId *writer,
								  bool *writer_known);
extern void hints_publish_run(const RelFileNode *node, Oid relid, int64 run_id,
							  const char *bytes, Size len);
extern Size hints_published_run(const RelFileNode *node, Oid relid,
								int64 run_id, char *bytes);

#endif							/* PK_HINTS_H */
