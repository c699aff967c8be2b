/*-------------------------------------------------------------------------
 *
 * commit_log_wal.c
 *	  Redo and description of the commit log's WAL records (their types:
 *	  commit_log_wal.h), as brin_xlog.c is BRIN's.  An append carries the
 *	  record's bytes as block data, so redo adds the item where the
 *	  original did and sets the flag of the record it resolved; a page's
 *	  first append initializes it.  Redo reads no record's contents: the
 *	  record format (log_format.c) is the writer's and the readers'.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogutils.h"
#include "storage/bufmgr.h"

#include "commit_log_wal.h"
#include "log_format.h"
#include "pg_compat.h"

/*
 * An append's main data, in either layout (xl_pk_log_append); the page's
 * first snapshot id is there only with XLOG_PK_LOG_INIT_PAGE.  False if
 * its length is neither's.  A NEXT (info) has none: xlrec's offnum is
 * left invalid, for redo to take the item after the page's last, and its
 * resolve_flag says what becomes of that one.
 */
static bool
append_data(XLogReaderState *record, uint8 info, xl_pk_log_append *xlrec,
			int64 *first_snapshot_id)
{
	const char *data = XLogRecGetData(record);
	Size		len = XLogRecGetDataLen(record);
	Size		at = len == SizeOfPkLogAppendV1 ? 8 : SizeOfPkLogAppend;

	*first_snapshot_id = 0;
	if (XLOG_PK_LOG_IS_NEXT(info))
	{
		xlrec->offnum = xlrec->resolve = InvalidOffsetNumber;
		xlrec->resolve_flag = info == XLOG_PK_LOG_NEXT_COMMITTED ? LOG_RESOLVED :
			info == XLOG_PK_LOG_NEXT_ABORTED ? LOG_DEAD : 0;
		return len == 0;
	}
	if (len < SizeOfPkLogAppend || (len > at && len != at + sizeof(int64)))
		return false;
	memcpy(xlrec, data, SizeOfPkLogAppend);
	*first_snapshot_id = 0;
	if (len == at + sizeof(int64))
		memcpy(first_snapshot_id, data + at, sizeof(int64));
	return true;
}

void
commit_log_wal_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	XLogRecPtr	lsn = record->EndRecPtr;
	Buffer		buf;
	Page		page;

	if ((info & ~XLOG_PK_LOG_INIT_PAGE) == XLOG_PK_LOG_APPEND || XLOG_PK_LOG_IS_NEXT(info))
	{
		xl_pk_log_append xlrec = {0};
		int64		first_snapshot_id;
		XLogRedoAction action;

		if (!append_data(record, info, &xlrec, &first_snapshot_id))
			elog(PANIC, "commit log redo: an append record of %u bytes",
				 XLogRecGetDataLen(record));
		if (info & XLOG_PK_LOG_INIT_PAGE)
		{
			RelFileLocator rnode;

			XLogRecGetBlockTag(record, 0, &rnode, NULL, NULL);
			buf = XLogInitBufferForRedo(record, 0);
			log_format_page_init(BufferGetPage(buf), LocatorFileNumber(rnode), first_snapshot_id);
			action = BLK_NEEDS_REDO;
		}
		else
			action = XLogReadBufferForRedo(record, 0, &buf);
		if (action == BLK_NEEDS_REDO)
		{
			Size		len;
			char	   *item = XLogRecGetBlockData(record, 0, &len);

			page = BufferGetPage(buf);
			if (xlrec.offnum == InvalidOffsetNumber)
			{
				/* a NEXT: after the page's last record, which it resolves */
				xlrec.offnum = OffsetNumberNext(PageGetMaxOffsetNumber(page));
				if (xlrec.resolve_flag != 0 && xlrec.offnum > FirstOffsetNumber)
					xlrec.resolve = OffsetNumberPrev(xlrec.offnum);
			}
			if (xlrec.resolve != InvalidOffsetNumber)
				log_format_set_flag(PageGetItem(page, PageGetItemId(page, xlrec.resolve)),
									xlrec.resolve_flag);
			if (PageAddItem(page, (Item) item, len, xlrec.offnum, false, false) != xlrec.offnum)
				elog(PANIC, "commit log redo: could not add the record at item %u",
					 xlrec.offnum);
			PageSetLSN(page, lsn);
			MarkBufferDirty(buf);
		}
		if (BufferIsValid(buf))
			UnlockReleaseBuffer(buf);
	}
	else if (info == XLOG_PK_LOG_RESOLVE)
	{
		xl_pk_log_resolve xlrec;

		memcpy(&xlrec, XLogRecGetData(record), sizeof(xlrec));
		if (XLogReadBufferForRedo(record, 0, &buf) == BLK_NEEDS_REDO)
		{
			page = BufferGetPage(buf);
			log_format_set_flag(PageGetItem(page, PageGetItemId(page, xlrec.offnum)),
								xlrec.flag);
			PageSetLSN(page, lsn);
			MarkBufferDirty(buf);
		}
		if (BufferIsValid(buf))
			UnlockReleaseBuffer(buf);
	}
	else
		elog(PANIC, "commit log redo: unknown record type %u", info);
}

const char *
commit_log_wal_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_PK_LOG_APPEND:
			return "LOG_APPEND";
		case XLOG_PK_LOG_APPEND | XLOG_PK_LOG_INIT_PAGE:
			return "LOG_APPEND+INIT";
		case XLOG_PK_LOG_RESOLVE:
			return "LOG_RESOLVE";
		case XLOG_PK_LOG_NEXT:
			return "LOG_APPEND_NEXT";
		case XLOG_PK_LOG_NEXT_COMMITTED:
			return "LOG_APPEND_NEXT+COMMITTED";
		case XLOG_PK_LOG_NEXT_ABORTED:
			return "LOG_APPEND_NEXT+ABORTED";
	}
	return NULL;
}

void
commit_log_wal_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (XLOG_PK_LOG_IS_NEXT(info))
		appendStringInfo(buf, "after the last item%s", info == XLOG_PK_LOG_NEXT ? "" :
						 info == XLOG_PK_LOG_NEXT_ABORTED ? ", which aborted" :
						 ", which committed");
	else if ((info & ~XLOG_PK_LOG_INIT_PAGE) == XLOG_PK_LOG_APPEND)
	{
		xl_pk_log_append xlrec;
		int64		first_snapshot_id;

		if (!append_data(record, info, &xlrec, &first_snapshot_id))
		{
			appendStringInfo(buf, "malformed (%u bytes)", XLogRecGetDataLen(record));
			return;
		}
		appendStringInfo(buf, "item %u", xlrec.offnum);
		if (xlrec.resolve != InvalidOffsetNumber)
			appendStringInfo(buf, ", item %u %s", xlrec.resolve,
							 xlrec.resolve_flag == LOG_DEAD ? "aborted" : "committed");
		if (info & XLOG_PK_LOG_INIT_PAGE)
			appendStringInfo(buf, ", new page from snapshot %lld",
							 (long long) first_snapshot_id);
	}
	else if (info == XLOG_PK_LOG_RESOLVE)
	{
		xl_pk_log_resolve xlrec;

		memcpy(&xlrec, XLogRecGetData(record), sizeof(xlrec));
		appendStringInfo(buf, "item %u %s", xlrec.offnum,
						 xlrec.flag == LOG_DEAD ? "aborted" : "committed");
	}
}
