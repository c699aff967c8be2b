/*-------------------------------------------------------------------------
 *
 * changelog_wal.h
 *	  The change stream in WAL for logical decoding: the custom WAL
 *	  resource manager's records and their decoding (changelog_wal.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CHANGELOG_WAL_H
#define PK_CHANGELOG_WAL_H

#include "access/htup.h"
#include "utils/relcache.h"

#include "catalog.h"

/* changelog_wal.c */
extern void changelog_wal_init(void);
extern void changelog_wal_log_snapshot(Relation rel, const SnapshotInfo *si,
									   List *runs, bool have_runs);
extern int64 changelog_wal_snapshot_of(HeapTuple tuple);

#endif							/* PK_CHANGELOG_WAL_H */
