/*-------------------------------------------------------------------------
 *
 * commit_log.c
 *	  A pkmerge table's commit log (DESIGN §4, §5): a small commit's or a
 *	  compaction's snapshot is a record appended to a log page of the
 *	  table's own file, with one WAL record that redo applies, instead of a
 *	  row of pkchangelog.snapshots and its index entry.  This file owns the
 *	  log pages' buffers: appending under the table's commit lock, marking
 *	  records committed or aborted, and which records a snapshot sees.  The
 *	  records' bytes are log_format.c's, their WAL's redo commit_log_wal.c's.
 *
 *	  Log pages are runs of kind 'log' (one page each) in pkchangelog.runs;
 *	  the table's row names the page commits append to (log_run, log_block).
 *	  A log run's row keeps the id of its first snapshot (created_snapshot)
 *	  and, in min_seq, the first one not expired.  Records are page items
 *	  in snapshot order but for aborted transactions' (see record_visible).
 *
 *	  Only the last transaction's records are ever unresolved, so no reader
 *	  looks up an old transaction's status and clog truncation never meets
 *	  a record (the rules: record_visible).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

#include "commit_log.h"
#include "commit_log_wal.h"
#include "guc.h"
#include "pg_compat.h"

/*
 * Does block blkno of rel exist?  If it is in shared buffers it does: a
 * truncation drops the buffers of the blocks it removes before it
 * shortens the file, under an AccessExclusiveLock that the caller's lock
 * on rel excludes (a caller without one reads at its own risk, see
 * catalog_snapshots.c).  That spares the lseek asking for the relation's size costs
 * (PostgreSQL caches sizes only in recovery), at each commit and per
 * statement.
 */
bool
pk_block_exists(Relation rel, BlockNumber blkno)
{
	BufferTag	tag;
	uint32		hash;
	LWLock	   *partition;
	int			id;

	InitBufferTag(&tag, &RelationLocator(rel), MAIN_FORKNUM, blkno);
	hash = BufTableHashCode(&tag);
	partition = BufMappingPartitionLock(hash);
	LWLockAcquire(partition, LW_SHARED);
	id = BufTableLookup(&tag, hash);
	LWLockRelease(partition);
	return id >= 0 || blkno < RelationGetNumberOfBlocks(rel);
}

/*
 * Is block a log page of rel's current file?  The table's row names the
 * page commits append to by its block; a file that replaced the one it
 * was written for (TRUNCATE, a rewrite) has no such page there, or none
 * at all.  VACUUM FULL, which copies the pages, moves it (space_rewrite).
 */
bool
commit_log_page_current(Relation rel, BlockNumber block)
{
	Buffer		buf;
	bool		result;

	if (!pk_block_exists(rel, block))
		return false;
	buf = ReadBuffer(rel, block);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	result = log_format_is_page(BufferGetPage(buf), RelationFileNumber(rel));
	UnlockReleaseBuffer(buf);
	return result;
}

static void
corrupt(Relation rel, BlockNumber block, OffsetNumber off, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("corrupt commit log record in pkmerge table \"%s\"",
					RelationGetRelationName(rel)),
			 errdetail("Block %u, item %u: %s.", block, off, what),
			 errhint("Restore the table from a backup.")));
}

/*
 * The page's first record's commit time, role and ids, which the others
 * are written against.  Reading a record (noerror false), a damaged or
 * missing one is reported as corrupt; to write one, false is returned
 * instead, and the new record is written whole.
 */
static bool
page_base(Relation rel, BlockNumber block, Page page, bool noerror, LogBase *base)
{
	ItemId		iid;
	const char *why;

	if (PageGetMaxOffsetNumber(page) < FirstOffsetNumber)
		why = "a record is written against a first record the page does not have";
	else if (!ItemIdIsNormal(iid = PageGetItemId(page, FirstOffsetNumber)))
		why = "the page's first record, which others are written against, is not one";
	else
		why = log_format_base((const char *) PageGetItem(page, iid),
							  ItemIdGetLength(iid), base);
	if (why != NULL && !noerror)
		corrupt(rel, block, FirstOffsetNumber, why);
	return why == NULL;
}

/*
 * Item off of a log page: its bytes and length; base, which the caller
 * keeps for the page, holds the page's first record's fields once a record
 * written against them is read (base->user NULL: not read yet).  Returns
 * what the codec takes as the record's base: NULL for the first record.
 */
static const LogBase *
page_item(Relation rel, BlockNumber block, Page page, OffsetNumber off,
		  LogBase *base, const char **item, uint32 *len)
{
	ItemId		iid = PageGetItemId(page, off);

	if (!ItemIdIsNormal(iid))
		corrupt(rel, block, off, "the item is not a record");
	*item = (const char *) PageGetItem(page, iid);
	*len = ItemIdGetLength(iid);
	if (off == FirstOffsetNumber)
		return NULL;
	if (base->user == NULL && log_format_needs_base(*item, *len))
		(void) page_base(rel, block, page, false, base);
	return base;
}

/* the header of item off (base as page_item takes it) */
static void
read_header(Relation rel, BlockNumber block, Page page, OffsetNumber off,
			LogBase *base, LogRecordHeader *h)
{
	const char *item;
	uint32		len;
	const LogBase *b = page_item(rel, block, page, off, base, &item, &len);
	const char *why = log_format_header(item, len, b, h);

	if (why)
		corrupt(rel, block, off, why);
}

/* the whole record at off, its CRC checked (base as page_item takes it) */
static CommitRecord *
decode(Relation rel, BlockNumber block, Page page, OffsetNumber off, LogBase *base)
{
	const char *item;
	uint32		len;
	const LogBase *b = page_item(rel, block, page, off, base, &item, &len);
	CommitRecord *rec;
	const char *why = log_format_decode(item, len, b, RelationFileNumber(rel), &rec);

	if (why)
		corrupt(rel, block, off, why);
	return rec;
}

/* what fold_commits takes of the record at off (CommitFold), its CRC checked */
static CommitFold *
decode_fold(Relation rel, BlockNumber block, Page page, OffsetNumber off, LogBase *base)
{
	const char *item;
	uint32		len;
	const LogBase *b = page_item(rel, block, page, off, base, &item, &len);
	CommitFold *f = palloc(sizeof(CommitFold));
	const char *why = log_format_fold(item, len, b, f);

	if (why)
		corrupt(rel, block, off, why);
	return f;
}

/*
 * The status of the record with header h: LOG_RESOLVED (committed),
 * LOG_DEAD (aborted), or 0 while its transaction has not ended.  Its flag
 * if it has one; only a page's last record can be unresolved, and its
 * transaction's status is looked up then.
 */
static uint8
record_status(const LogRecordHeader *h)
{
	TransactionId xid;

	if (h->flags & (LOG_RESOLVED | LOG_DEAD))
		return h->flags & (LOG_RESOLVED | LOG_DEAD);
	xid = XidFromFullTransactionId(FullTransactionIdFromU64(h->xid));
	if (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid))
		return 0;
	return TransactionIdDidCommit(xid) ? LOG_RESOLVED : LOG_DEAD;
}

/*
 * What the unresolved record at off becomes, its transaction having ended
 * (base as read_header takes it)
 */
static uint8
resolution(Relation rel, BlockNumber block, Page page, OffsetNumber off, LogBase *base)
{
	LogRecordHeader h;

	read_header(rel, block, page, off, base, &h);
	if (h.flags & (LOG_RESOLVED | LOG_DEAD))
		return 0;				/* resolved already */
	return record_status(&h);
}

static void
set_flag(Page page, OffsetNumber off, uint8 flag)
{
	log_format_set_flag((char *) PageGetItem(page, PageGetItemId(page, off)), flag);
}

/*
 * Resolve the records of a page (locked exclusively) from item off back,
 * each WAL-logged, while they are unresolved and their transaction has
 * ended: the last transaction's records (more than one if it compacted
 * the table before its commit's record), which are the page's last ones.
 */
static void
resolve_from(Relation rel, Buffer buf, BlockNumber block, OffsetNumber off, LogBase *base)
{
	Page		page = BufferGetPage(buf);
	uint8		flag;

	/* resolution() may read clog: before each critical section */
	for (; off >= FirstOffsetNumber &&
		 (flag = resolution(rel, block, page, off, base)) != 0; off--)
	{
		START_CRIT_SECTION();
		set_flag(page, off, flag);
		MarkBufferDirty(buf);
		if (RelationNeedsWAL(rel))
		{
			xl_pk_log_resolve xlrec = {.offnum = off,.flag = flag};
			XLogRecPtr	recptr;

			XLogBeginInsert();
			XLogRegisterData((char *) &xlrec, sizeof(xlrec));
			XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
			recptr = XLogInsert((RmgrId) pk_wal_rmgr_id, XLOG_PK_LOG_RESOLVE);
			PageSetLSN(page, recptr);
		}
		END_CRIT_SECTION();
	}
}

/* resolve the last records of a page (locked exclusively) */
static void
resolve_last(Relation rel, Buffer buf, BlockNumber block)
{
	LogBase		base = {0};

	resolve_from(rel, buf, block, PageGetMaxOffsetNumber(BufferGetPage(buf)), &base);
}

/*
 * Append rec as the next record of rel's log, on page block, under the
 * table's commit lock.  new_page: the caller has just placed the page
 * (a log run of one block), which this initializes.  LOG_NEW_PAGE if
 * block is not a log page of rel's current file (the table's row was
 * written for a file a TRUNCATE or rewrite replaced), or if rec does not
 * fit it: its last records are then resolved, as a new page takes the
 * next ones.  LOG_NO_RECORD if rec does not fit and the page's last
 * record is this transaction's: a transaction's records are on one page,
 * where the next transaction's append resolves them, so rec is to be a
 * catalog row.
 */
CommitLogAppend
commit_log_append(Relation rel, BlockNumber block, bool new_page, CommitRecord *rec)
{
	uint32		len;
	char	   *item;
	Buffer		buf;
	Page		page;
	LogBase		base = {0};
	xl_pk_log_append xlrec = {0};

	if (new_page)
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_ZERO_AND_LOCK, NULL);
	else
	{
		if (!pk_block_exists(rel, block))
			return LOG_NEW_PAGE;
		buf = ReadBuffer(rel, block);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (!log_format_is_page(BufferGetPage(buf), RelationFileNumber(rel)))
		{
			UnlockReleaseBuffer(buf);
			return LOG_NEW_PAGE;
		}
	}
	page = BufferGetPage(buf);
	/* against the page's first record, if it has one (and it is whole) */
	item = log_format_encode(rec, !new_page && page_base(rel, block, page, true, &base) ?
				  &base : NULL, &len);
	if (!new_page && PageGetFreeSpace(page) < MAXALIGN(len))
	{
		CommitLogAppend result = LOG_NEW_PAGE;
		OffsetNumber last = PageGetMaxOffsetNumber(page);
		LogRecordHeader h;

		if (last >= FirstOffsetNumber)
		{
			FullTransactionId xid;

			read_header(rel, block, page, last, &base, &h);
			xid = FullTransactionIdFromU64(h.xid);
			if (TransactionIdIsCurrentTransactionId(XidFromFullTransactionId(xid)))
				result = LOG_NO_RECORD;
		}
		if (result == LOG_NEW_PAGE)
			resolve_from(rel, buf, block, last, &base);
		UnlockReleaseBuffer(buf);
		pfree(item);
		return result;
	}

	/*
	 * The records before ours: their transactions have ended (the commit
	 * lock), but for this one's own.  The last is resolved with the append;
	 * those of its transaction before it (a compaction's) first.
	 */
	if (!new_page && PageGetMaxOffsetNumber(page) >= FirstOffsetNumber)
	{
		xlrec.resolve = PageGetMaxOffsetNumber(page);
		xlrec.resolve_flag = resolution(rel, block, page, xlrec.resolve, &base);
		if (xlrec.resolve_flag == 0)
			xlrec.resolve = InvalidOffsetNumber;
		else
			resolve_from(rel, buf, block, OffsetNumberPrev(xlrec.resolve), &base);
	}

	START_CRIT_SECTION();
	if (new_page)
		log_format_page_init(page, RelationFileNumber(rel), rec->snapshot_id);
	else if (xlrec.resolve != InvalidOffsetNumber)
		set_flag(page, xlrec.resolve, xlrec.resolve_flag);
	xlrec.offnum = OffsetNumberNext(PageGetMaxOffsetNumber(page));
	if (PageAddItem(page, (Item) item, len, xlrec.offnum, false, false) != xlrec.offnum)
		elog(PANIC, "could not add a commit log record to block %u", block);
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(rel))
	{
		XLogRecPtr	recptr;
		uint8		info;

		XLogBeginInsert();
		if (new_page)
		{
			XLogRegisterData((char *) &xlrec, SizeOfPkLogAppend);
			XLogRegisterData((char *) &rec->snapshot_id, sizeof(int64));
			info = XLOG_PK_LOG_APPEND | XLOG_PK_LOG_INIT_PAGE;
		}
		else
			info = xlrec.resolve == InvalidOffsetNumber ? XLOG_PK_LOG_NEXT :
				xlrec.resolve_flag == LOG_DEAD ? XLOG_PK_LOG_NEXT_ABORTED :
				XLOG_PK_LOG_NEXT_COMMITTED;
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD | (new_page ? REGBUF_WILL_INIT : 0));
		XLogRegisterBufData(0, item, len);
		recptr = XLogInsert((RmgrId) pk_wal_rmgr_id, info);
		PageSetLSN(page, recptr);
	}
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buf);
	pfree(item);
	return LOG_APPENDED;
}

/*
 * The background worker's round: resolve rel's last record, if its
 * transaction has ended, so that no reader ever needs that transaction's
 * status (which clog truncation would take away).  Under the commit lock.
 */
void
commit_log_resolve(Relation rel, const TableState *st)
{
	BlockNumber block;
	Buffer		buf;

	if (st->log_run == 0 || !commit_log_page_current(rel, (BlockNumber) st->log_block))
		return;
	block = (BlockNumber) st->log_block;
	buf = ReadBuffer(rel, block);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	resolve_last(rel, buf, block);
	UnlockReleaseBuffer(buf);
}

/*
 * Is the record with header h visible?  Sets *stop when no later record
 * can be.
 *
 * A record is its committing transaction's: it counts only once that
 * transaction has committed, and an aborted one leaves a record whose
 * snapshot id the next commit takes again.  Commits of a table are
 * serialized by its commit lock, held until the transaction is visible to
 * all (ProcArrayEndTransaction) or aborted, so when a commit appends, the
 * transaction of the record before it has ended: the append marks that
 * record committed (LOG_RESOLVED) or aborted (LOG_DEAD) in the same WAL
 * record.  A transaction may leave two records or more (a compaction's,
 * then its commit's), all on one page: the next append resolves them all.
 * A dead record can have a higher id than those after it: a transaction
 * that compacted the table first took the id after the compaction's,
 * which the next commit takes again.
 *
 * For an MVCC snapshot the table's row it sees (the version V, naming the
 * snapshot V.row_snapshot_id) splits the records:
 *
 *	- up to V's snapshot: V's writer committed after every such record's
 *	  transaction had ended, and the snapshot sees V, so a committed one is
 *	  visible: LOG_RESOLVED ones are, LOG_DEAD ones are not, and an
 *	  unresolved one (the last transaction's: V's writer's own, or one
 *	  before a compaction that wrote V) by its transaction's status;
 *	- past it (at most CAT_TABLE_FOLD_MAX: the commits folded after V): in
 *	  order, each is visible if its transaction is committed and not in the
 *	  snapshot; the first that the snapshot does not see ends them, as every
 *	  later commit came after it.
 *
 * The last records, until another commit of the table resolves them, are
 * resolved by the background worker (commit_log_resolve) on its rounds.
 */
static bool
record_visible(const LogRecordHeader *h, const TableState *st, Snapshot snapshot,
			   bool *stop)
{
	TransactionId xid = XidFromFullTransactionId(FullTransactionIdFromU64(h->xid));

	if (h->flags & LOG_DEAD)
		return false;
	if (TransactionIdIsCurrentTransactionId(xid))
		return true;
	/* no snapshot: a record a visible table row names, so committed if not aborted */
	if (snapshot == NULL)
		return (h->flags & LOG_RESOLVED) || TransactionIdDidCommit(xid);
	if (!IsMVCCSnapshot(snapshot))
	{
		/* SnapshotAny and the like: every record not aborted */
		return (h->flags & LOG_RESOLVED) || TransactionIdIsInProgress(xid) ||
			TransactionIdDidCommit(xid);
	}
	if (h->snapshot_id <= st->row_snapshot_id)
		return (h->flags & LOG_RESOLVED) || TransactionIdDidCommit(xid);
	if (XidInMVCCSnapshot(xid, snapshot))
	{
		*stop = true;
		return false;
	}
	return (h->flags & LOG_RESOLVED) || TransactionIdDidCommit(xid);
}

/*
 * commit_log_read's records, each decoded (CommitRecord) or, with folds,
 * what fold_commits takes of it (CommitFold)
 */
static List *
read_records(Relation rel, const RunInfo *page_run, int64 from, int64 to,
			 const TableState *st, Snapshot snapshot, bool *stopped, bool folds)
{
	BlockNumber block = page_run->start_block;
	Buffer		buf;
	Page		page;
	OffsetNumber maxoff;
	List	   *result = NIL;
	LogBase		base = {0};

	*stopped = false;
	from = Max(from, page_run->min_seq - 1);
	buf = ReadBuffer(rel, block);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!log_format_is_page(page, RelationFileNumber(rel)) ||
		(page_run->created_snapshot != 0 &&
		 log_format_page_first_snapshot(page) != page_run->created_snapshot))
		corrupt(rel, block, 0, "the page is not the log page the catalog names");
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff && !*stopped; off++)
	{
		LogRecordHeader h;

		read_header(rel, block, page, off, &base, &h);
		/* past to: none later is in range, unless this one is aborted */
		if (h.snapshot_id > to && record_status(&h) != LOG_DEAD)
			break;
		if (h.snapshot_id <= from || h.snapshot_id > to)
			continue;
		if (record_visible(&h, st, snapshot, stopped))
			result = lappend(result, folds ? (void *) decode_fold(rel, block, page, off, &base) :
							 (void *) decode(rel, block, page, off, &base));
	}
	UnlockReleaseBuffer(buf);
	return result;
}

/*
 * The records of log page page_run (a log run of rel, which the caller has
 * locked) with snapshot ids in (from, to] that snapshot sees, in order:
 * CommitRecords.  st: the table's state as snapshot sees it (its row's
 * snapshot, row_snapshot_id).  Sets *stopped when a record the snapshot
 * does not see ended them (no later page has any it sees).  A NULL
 * snapshot reads records that a table row the caller sees names: the
 * committed ones.  SnapshotAny reads every record not aborted.
 */
List *
commit_log_read(Relation rel, const RunInfo *page_run, int64 from, int64 to,
				const TableState *st, Snapshot snapshot, bool *stopped)
{
	return read_records(rel, page_run, from, to, st, snapshot, stopped, false);
}

/*
 * What the records of a log page past from that snapshot sees add to the
 * table's state folded after its row (CommitFold, in order): for
 * fold_commits, which reads them for every version of the state.
 */
List *
commit_log_read_folds(Relation rel, const RunInfo *page_run, int64 from,
					  const TableState *st, Snapshot snapshot)
{
	bool		stopped;

	return read_records(rel, page_run, from, PG_INT64_MAX, st, snapshot, &stopped, true);
}

