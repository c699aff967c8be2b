/*-------------------------------------------------------------------------
 *
 * commit_log_wal.h
 *	  The commit log's WAL records: their types and main data, written by
 *	  commit_log.c and redone by commit_log_wal.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_COMMIT_LOG_WAL_H
#define PK_COMMIT_LOG_WAL_H

#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/off.h"

/*
 * Record types, under the library's resource manager (wal_rmgr.c).  An
 * append of a new page's first record is APPEND | INIT_PAGE; every other
 * append is a NEXT*, without main data: the record goes after the page's
 * last, which it leaves as it is (NEXT) or marks committed or aborted.
 */
#define XLOG_PK_LOG_APPEND			0x10
#define XLOG_PK_LOG_RESOLVE			0x20
#define XLOG_PK_LOG_NEXT			0x40
#define XLOG_PK_LOG_NEXT_COMMITTED	0x50
#define XLOG_PK_LOG_NEXT_ABORTED	0x60
#define XLOG_PK_LOG_INIT_PAGE		0x80	/* with APPEND: the page is new */

#define XLOG_PK_LOG_IS_NEXT(info) \
	((info) == XLOG_PK_LOG_NEXT || (info) == XLOG_PK_LOG_NEXT_COMMITTED || \
	 (info) == XLOG_PK_LOG_NEXT_ABORTED)

/*
 * XLOG_PK_LOG_APPEND's main data: this, then (with XLOG_PK_LOG_INIT_PAGE)
 * the page's first snapshot id (int64, unaligned).  The first WAL format
 * had one 16-byte struct instead (the snapshot id at offset 8, always
 * there), and an APPEND for every record: redo takes both.
 */
typedef struct xl_pk_log_append
{
	OffsetNumber offnum;		/* where the record goes */
	OffsetNumber resolve;		/* the record before it, or InvalidOffsetNumber */
	uint8		resolve_flag;	/* what that one becomes */
} xl_pk_log_append;

#define SizeOfPkLogAppend	(offsetof(xl_pk_log_append, resolve_flag) + sizeof(uint8))
#define SizeOfPkLogAppendV1	16

typedef struct xl_pk_log_resolve
{
	OffsetNumber offnum;
	uint8		flag;			/* LOG_RESOLVED or LOG_DEAD */
} xl_pk_log_resolve;

/* commit_log_wal.c */
extern void commit_log_wal_redo(XLogReaderState *record);
extern void commit_log_wal_desc(StringInfo buf, XLogReaderState *record);
extern const char *commit_log_wal_identify(uint8 info);

#endif							/* PK_COMMIT_LOG_WAL_H */
