/*-------------------------------------------------------------------------
 *
 * run_wal.h
 *	  The WAL of a run's pages: one record per page, its bytes compressed
 *	  again when wal_compression is on.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_WAL_H
#define PK_RUN_WAL_H

#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/bufmgr.h"

/* the record's type, under the library's resource manager (wal_rmgr.c) */
#define XLOG_PK_RUN_PAGE		0x30

/*
 * the zstd level a page's payload is compressed again at for its record,
 * with wal_compression on
 */
#define RUN_WAL_ZSTD_LEVEL		1

/* a run page's payload as its record carries it, made before the page */
typedef struct RunPageWal
{
	uint16		payload_len;	/* bytes after the page header */
	uint16		stored_len;		/* bytes of data */
	bool		compressed;		/* data is a zstd frame (else the payload) */
	PGAlignedBlock data;
} RunPageWal;

extern void run_wal_log_page(Buffer buffer, RunPageWal *pw);
extern void run_wal_redo(XLogReaderState *record);
extern void run_wal_desc(StringInfo buf, XLogReaderState *record);

#endif							/* PK_RUN_WAL_H */
