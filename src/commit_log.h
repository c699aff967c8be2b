/*-------------------------------------------------------------------------
 *
 * commit_log.h
 *	  A pkmerge table's commit log: the snapshots of small commits, kept as
 *	  records on log pages of the table's own file instead of rows of
 *	  pkchangelog.snapshots (commit_log.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_COMMIT_LOG_H
#define PK_COMMIT_LOG_H

#include "access/transam.h"
#include "access/xlogreader.h"
#include "utils/rel.h"

#include "catalog.h"
#include "table_options.h"

/* a small commit's snapshot, as its record holds it */
typedef struct CommitRecord
{
	int64		snapshot_id;
	FullTransactionId xid;
	TimestampTz commit_time;
	CommitKind	kind;
	PkProducer	producer;
	char	   *user;
	int64		total_record_count;
	int64		delta_record_count;
	int64		changelog_record_count;
	double		duration_ms;
	RunInfo    *data;			/* its data run, or NULL */
	RunInfo    *changelog;		/* its changelog run, or NULL */
} CommitRecord;

/* what a record adds to a table's state folded after its row (catalog_tables.c) */
typedef struct CommitFold
{
	int64		snapshot_id;
	int64		seq;			/* its data run's sequence number */
	int64		delta_record_count;
	bool		has_data;		/* (a logged commit always has one) */
} CommitFold;

/* what commit_log_append did */
typedef enum CommitLogAppend
{
	LOG_APPENDED,
	LOG_NEW_PAGE,				/* not there: place a new page and append there */
	LOG_NO_RECORD				/* not there, nor on a new page: write a row */
} CommitLogAppend;

/* commit_log.c */
extern bool commit_log_fits(const CommitRecord *rec);
extern bool pk_block_exists(Relation rel, BlockNumber blkno);
extern bool commit_log_page_current(Relation rel, BlockNumber block);
extern void commit_log_page_moved(Page page, Oid relfilenode);
extern CommitLogAppend commit_log_append(Relation rel, BlockNumber block, bool new_page,
										 CommitRecord *rec);
extern void commit_log_resolve(Relation rel, const TableState *st);
extern List *commit_log_read(Relation rel, const RunInfo *page_run, int64 from,
							 int64 to, const TableState *st, Snapshot snapshot,
							 bool *stopped);
extern List *commit_log_read_folds(Relation rel, const RunInfo *page_run,
								   int64 from, const TableState *st,
								   Snapshot snapshot);
extern void commit_log_redo(XLogReaderState *record);
extern void commit_log_desc(StringInfo buf, XLogReaderState *record);
extern const char *commit_log_identify(uint8 info);

#endif							/* PK_COMMIT_LOG_H */
