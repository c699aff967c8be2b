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
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "replication/decode.h"
#include "utils/relcache.h"

#include "catalog.h"

/* the change records' type, under the library's resource manager (wal_rmgr.c) */
#define XLOG_PK_CHANGES		0x00

/* changelog_wal.c */
extern void changelog_wal_desc(StringInfo buf, XLogReaderState *record);
extern void changelog_wal_decode(LogicalDecodingContext *ctx, XLogRecordBuffer *buf);
extern void changelog_wal_log_snapshot(Relation rel, const SnapshotInfo *si,
									   List *runs, bool have_runs);
extern int64 changelog_wal_snapshot_of(HeapTuple tuple);

#endif							/* PK_CHANGELOG_WAL_H */
