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

#include "utils/rel.h"

#include "catalog.h"
#include "log_format.h"

/* what commit_log_append did */
typedef enum CommitLogAppend
{
	LOG_APPENDED,
	LOG_NEW_PAGE,				/* not there: place a new page and append there */
	LOG_NO_RECORD				/* not there, nor on a new page: write a row */
} CommitLogAppend;

/* commit_log.c */
extern bool pk_block_exists(Relation rel, BlockNumber blkno);
extern bool commit_log_page_current(Relation rel, BlockNumber block);
extern CommitLogAppend commit_log_append(Relation rel, BlockNumber block, bool new_page,
										 CommitRecord *rec);
extern void commit_log_resolve(Relation rel, const TableState *st);
extern List *commit_log_read(Relation rel, const RunInfo *page_run, int64 from,
							 int64 to, const TableState *st, Snapshot snapshot,
							 bool *stopped);
extern List *commit_log_read_folds(Relation rel, const RunInfo *page_run,
								   int64 from, const TableState *st,
								   Snapshot snapshot);

#endif							/* PK_COMMIT_LOG_H */
