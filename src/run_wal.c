/*-------------------------------------------------------------------------
 *
 * run_wal.c
 *	  The WAL of a run's pages: a record per page whose data is the page's
 *	  payload (the bytes after its header), compressed again with zstd at
 *	  level 1 when wal_compression is on, instead of a full-page image.
 *	  Redo initializes the page and copies or decompresses the payload
 *	  into it, so the page replays byte for byte.
 *
 *	  This file owns the record and its redo and description; the writer
 *	  (run_write.c) builds the page and the record's data, compressing
 *	  it, before it locks the buffer and enters the critical section, where
 *	  only the WAL insertion happens.  Redo decompresses with run_read.c's
 *	  context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "storage/bufpage.h"

#include "guc.h"
#include "run_read.h"
#include "run_wal.h"

/* the record's main data; the block's data is the (compressed) payload */
typedef struct xl_pk_run_page
{
	uint16		payload_len;
	bool		compressed;
} xl_pk_run_page;

#define SizeOfPkRunPage (offsetof(xl_pk_run_page, compressed) + sizeof(bool))

/*
 * The record of buffer's page, which the caller has just initialized with
 * pw's payload and marked dirty, in its critical section.
 */
void
run_wal_log_page(Buffer buffer, RunPageWal *pw)
{
	xl_pk_run_page xlrec;
	XLogRecPtr	recptr;

	xlrec.payload_len = pw->payload_len;
	xlrec.compressed = pw->compressed;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfPkRunPage);
	/* redo rebuilds the whole page: no image, after a checkpoint either */
	XLogRegisterBuffer(0, buffer, REGBUF_WILL_INIT);
	if (pw->stored_len > 0)
		XLogRegisterBufData(0, pw->data.data, pw->stored_len);
	recptr = XLogInsert((RmgrId) pk_wal_rmgr_id, XLOG_PK_RUN_PAGE);
	PageSetLSN(BufferGetPage(buffer), recptr);
}

void
run_wal_redo(XLogReaderState *record)
{
	xl_pk_run_page xlrec;
	Buffer		buf;
	Page		page;
	char	   *data;
	Size		len;
	char	   *payload;
	ZSTD_DCtx  *dctx;

	if (XLogRecGetDataLen(record) < SizeOfPkRunPage)
		elog(PANIC, "run page redo: a record of %u bytes", XLogRecGetDataLen(record));
	memcpy(&xlrec, XLogRecGetData(record), SizeOfPkRunPage);
	if (xlrec.payload_len > BLCKSZ - SizeOfPageHeaderData)
		elog(PANIC, "run page redo: a payload of %u bytes", xlrec.payload_len);
	data = XLogRecGetBlockData(record, 0, &len);
	/* made before the buffer is locked */
	dctx = xlrec.compressed ? run_zstd_dctx() : NULL;

	buf = XLogInitBufferForRedo(record, 0);
	page = BufferGetPage(buf);
	PageInit(page, BLCKSZ, 0);
	payload = (char *) page + SizeOfPageHeaderData;
	if (xlrec.compressed)
	{
		size_t		n = ZSTD_decompressDCtx(dctx, payload, BLCKSZ - SizeOfPageHeaderData,
											data, len);

		if (ZSTD_isError(n) || n != xlrec.payload_len)
			elog(PANIC, "run page redo: the payload does not decompress to %u bytes",
				 xlrec.payload_len);
		/* zstd may have used the room after the payload as scratch space */
		memset(payload + n, 0, BLCKSZ - SizeOfPageHeaderData - n);
	}
	else if (len != xlrec.payload_len)
		elog(PANIC, "run page redo: %zu bytes for a payload of %u", len, xlrec.payload_len);
	else if (len > 0)
		memcpy(payload, data, len);
	((PageHeader) page)->pd_lower = SizeOfPageHeaderData + xlrec.payload_len;
	PageSetLSN(page, record->EndRecPtr);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

void
run_wal_desc(StringInfo buf, XLogReaderState *record)
{
	xl_pk_run_page xlrec;
	Size		len = 0;

	if (XLogRecGetDataLen(record) < SizeOfPkRunPage)
		return;
	memcpy(&xlrec, XLogRecGetData(record), SizeOfPkRunPage);
	(void) XLogRecGetBlockData(record, 0, &len);
	appendStringInfo(buf, "payload %u bytes, %s %zu", xlrec.payload_len,
					 xlrec.compressed ? "zstd" : "stored", len);
}
