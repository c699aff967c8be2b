/*-------------------------------------------------------------------------
 *
 * wal_rmgr.c
 *	  The library's custom WAL resource manager: its RmgrData table, which
 *	  sends each record type to the file that owns it, as heapam_handler.c
 *	  is heap's table of callbacks.  One resource manager (its id the GUC
 *	  pkchangelog.wal_rmgr_id) carries three kinds of record, whose info
 *	  values do not overlap:
 *
 *	  0x00                    the change stream (changelog_wal.c)
 *	  0x30                    a run page, a compressed image (run_wal.c)
 *	  0x10 0x20 0x40-0x60 0x90  the commit log's appends and resolutions
 *	                          (commit_log_wal.c)
 *
 *	  Redo applies the pages' records and skips the change records, whose
 *	  rows the pages hold; decoding reads only the change records.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bufmask.h"
#include "access/xlog_internal.h"

#include "changelog_wal.h"
#include "commit_log_wal.h"
#include "guc.h"
#include "run_wal.h"
#include "wal_rmgr.h"

StaticAssertDecl(XLOG_PK_CHANGES != XLOG_PK_RUN_PAGE &&
				 (XLOG_PK_RUN_PAGE & ~XLOG_PK_LOG_INIT_PAGE) != XLOG_PK_LOG_APPEND &&
				 XLOG_PK_RUN_PAGE != XLOG_PK_LOG_RESOLVE &&
				 !XLOG_PK_LOG_IS_NEXT(XLOG_PK_RUN_PAGE),
				 "the resource manager's record types overlap");

static void
wal_rmgr_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_PK_RUN_PAGE)
		run_wal_redo(record);
	else if (info != XLOG_PK_CHANGES)
		commit_log_wal_redo(record);
}

static const char *
wal_rmgr_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_PK_CHANGES)
		return "CHANGES";
	if ((info & ~XLR_INFO_MASK) == XLOG_PK_RUN_PAGE)
		return "RUN_PAGE";
	return commit_log_wal_identify(info);
}

static void
wal_rmgr_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_PK_RUN_PAGE)
		run_wal_desc(buf, record);
	else if (info == XLOG_PK_CHANGES)
		changelog_wal_desc(buf, record);
	else
		commit_log_wal_desc(buf, record);
}

/*
 * wal_consistency_checking = 'pkchangelog': redo rebuilds the pages byte
 * for byte, but for the LSN and checksum the page image taken at logging
 * time predates.
 */
static void
wal_rmgr_mask(char *page, BlockNumber blkno)
{
	mask_page_lsn_and_checksum(page);
}

static RmgrData pk_rmgr = {
	.rm_name = "pkchangelog",
	.rm_redo = wal_rmgr_redo,
	.rm_desc = wal_rmgr_desc,
	.rm_identify = wal_rmgr_identify,
	.rm_mask = wal_rmgr_mask,
	.rm_decode = changelog_wal_decode,
};

/* from _PG_init, after the GUCs: the id is pkchangelog.wal_rmgr_id */
void
wal_rmgr_register(void)
{
	RegisterCustomRmgr((RmgrId) pk_wal_rmgr_id, &pk_rmgr);
}
