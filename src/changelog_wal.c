/*-------------------------------------------------------------------------
 *
 * changelog_wal.c
 *	  The change stream in WAL, for logical decoding (DESIGN §9): a
 *	  snapshot's changes written as records of the library's resource
 *	  manager, and decoded as row changes of the pkmerge relation, which
 *	  every output plugin then receives.
 *
 *	  This file owns the change records: their format, when they are
 *	  written, and their decoding.  The changes are read back from the runs
 *	  the snapshot wrote (changelog_read.c), so the decoded stream is
 *	  pk_changes' stream.  Run pages and the commit log have records of
 *	  their own (run_wal.c, commit_log_wal.c), which wal_rmgr.c dispatches;
 *	  redo skips a change record, as the pages holding its rows are
 *	  restored by theirs.
 *
 *	  A snapshot's records are written by the transaction that produced
 *	  it, before its commit record, so they decode as that transaction's
 *	  changes; a -U and its +U always share a record.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "catalog/catalog.h"
#include "miscadmin.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/reorderbuffer.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"

#include "changelog_read.h"
#include "changelog_wal.h"
#include "guc.h"
#include "pg_compat.h"

/* a record holds rows up to about this many bytes */
#define PK_WAL_BATCH		(64 * 1024)

/*
 * A record's header; nchanges entries follow, each a kind byte, the
 * MinimalTuple's length (4 bytes, unaligned) and the MinimalTuple.
 */
typedef struct xl_pk_changes
{
	RelFileLocator node;			/* the table's storage, as at logging */
	int64		snapshot_id;
	uint32		nchanges;
} xl_pk_changes;

#define SizeOfPkChangeEntry		(1 + sizeof(uint32))

/*
 * The kind of an entry after a -D or -U of a table whose replica identity
 * is not FULL: the old row as that identity gives it (length 0: none).
 * Not a PkRowKind.
 */
#define PK_WAL_IDENTITY		0x40

/* the rows of one snapshot being batched into records */
typedef struct WalBatch
{
	Relation	rel;
	xl_pk_changes hdr;
	StringInfoData buf;
	char		replident;		/* the table's replica identity */
	Bitmapset  *identity;		/* DEFAULT, INDEX: its columns (attnum
								 * - FirstLowInvalidHeapAttributeNumber) */
	MinimalTuple before;		/* a -U whose identity entry is to come */
	MemoryContext cxt;			/* holds it (rows come in a context reset
								 * after each) */
} WalBatch;

static void
batch_flush(WalBatch *b)
{
	if (b->hdr.nchanges == 0)
		return;
	XLogBeginInsert();
	XLogRegisterData((char *) &b->hdr, sizeof(b->hdr));
	XLogRegisterData(b->buf.data, b->buf.len);
	/* the origin of a replicated write, for subscribers' origin filters */
	XLogSetRecordFlags(XLOG_INCLUDE_ORIGIN);
	(void) XLogInsert(pk_wal_rmgr_id, XLOG_PK_CHANGES);
	b->hdr.nchanges = 0;
	resetStringInfo(&b->buf);
}

static void
batch_append(WalBatch *b, uint8 kind, MinimalTuple tup)
{
	uint32		len = tup ? tup->t_len : 0;

	appendBinaryStringInfo(&b->buf, (char *) &kind, 1);
	appendBinaryStringInfo(&b->buf, (char *) &len, sizeof(len));
	if (tup)
		appendBinaryStringInfo(&b->buf, (char *) tup, len);
	b->hdr.nchanges++;
}

/* does the identity column attnum hold the same value in a and b? */
static bool
identity_column_same(TupleDesc desc, HeapTuple a, HeapTuple b, int attnum)
{
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	bool		anull;
	bool		bnull;
	Datum		av = heap_getattr(a, attnum, desc, &anull);
	Datum		bv = heap_getattr(b, attnum, desc, &bnull);

	if (anull || bnull)
		return anull == bnull;
	return datum_image_eq(av, bv, att->attbyval, att->attlen);
}

/*
 * The identity entry of the -D or -U before (after: the +U that follows a
 * -U, or NULL).  The pkchangelog output plugin always receives complete
 * rows, its contract; every other plugin receives the old row as the
 * table's replica identity gives it, as heap's own records would.  FULL
 * (what a pkmerge table gets with a producer other than none) needs no
 * entry: the row is whole.  DEFAULT and INDEX get the identity columns of
 * before, the others NULL, or nothing when after keeps every identity
 * column's stored value (heap logs no old key then); NOTHING nothing.
 */
static void
batch_identity(WalBatch *b, MinimalTuple before, MinimalTuple after)
{
	TupleDesc	desc = RelationGetDescr(b->rel);
	HeapTupleData hb;
	HeapTupleData ha;
	Datum	   *values;
	bool	   *nulls;
	bool		changed = after == NULL;
	MinimalTuple key;

	if (b->replident == REPLICA_IDENTITY_NOTHING || b->identity == NULL)
	{
		batch_append(b, PK_WAL_IDENTITY, NULL);
		return;
	}
	hb.t_len = before->t_len + MINIMAL_TUPLE_OFFSET;
	hb.t_data = (HeapTupleHeader) ((char *) before - MINIMAL_TUPLE_OFFSET);
	if (after)
	{
		ha.t_len = after->t_len + MINIMAL_TUPLE_OFFSET;
		ha.t_data = (HeapTupleHeader) ((char *) after - MINIMAL_TUPLE_OFFSET);
	}
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	heap_deform_tuple(&hb, desc, values, nulls);
	for (int i = 0; i < desc->natts; i++)
	{
		if (!bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, b->identity))
			nulls[i] = true;
		else if (!changed && !identity_column_same(desc, &hb, &ha, i + 1))
			changed = true;
	}
	if (!changed)
		batch_append(b, PK_WAL_IDENTITY, NULL);
	else
	{
		key = heap_form_minimal_tuple(desc, values, nulls, 0);
		batch_append(b, PK_WAL_IDENTITY, key);
		pfree(key);
	}
	pfree(values);
	pfree(nulls);
}

/* the identity entry of a -U that no +U followed: a retraction alone */
static void
batch_lone_before(WalBatch *b)
{
	if (b->before == NULL)
		return;
	batch_identity(b, b->before, NULL);
	pfree(b->before);
	b->before = NULL;
}

static void
batch_add(void *arg, const SnapshotInfo *si, int kind, MinimalTuple tup)
{
	WalBatch   *b = arg;

	/*
	 * A TRUNCATE needs no record here: PostgreSQL logs one for every
	 * logically logged relation (ExecuteTruncateGuts), pkmerge tables
	 * included, and decodes it as a TRUNCATE change.  So an OVERWRITE
	 * snapshot leaves out what stands for the TRUNCATE in pk_changes: the
	 * TRUNCATE record (none, input), or the -D of every removed row
	 * (lookup, full-compaction).
	 */
	if (kind == PK_CHANGE_TRUNCATE ||
		(si->kind == COMMIT_OVERWRITE && kind == PK_DELETE &&
		 !changelog_truncate_is_record(si)))
		return;
	/* a pending -U's identity entry: before its +U, or on its own */
	if (b->before && kind == PK_UPDATE_AFTER)
	{
		batch_identity(b, b->before, tup);
		pfree(b->before);
		b->before = NULL;
	}
	else
		batch_lone_before(b);
	/* a -U and its +U share a record: flush before the -U, never between */
	if (kind != PK_UPDATE_AFTER &&
		b->buf.len > 0 && b->buf.len + SizeOfPkChangeEntry + tup->t_len > PK_WAL_BATCH)
		batch_flush(b);
	batch_append(b, (uint8) kind, tup);
	if (b->replident == REPLICA_IDENTITY_FULL)
		return;
	if (kind == PK_DELETE)
		batch_identity(b, tup, NULL);
	else if (kind == PK_UPDATE_BEFORE)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		b->before = heap_copy_minimal_tuple(tup, 0);
		MemoryContextSwitchTo(old);
	}
}

/* 15.8: slot creation no longer restores serialized snapshots */
#define PK_SLOT_CREATION_FIXED	150008

/*
 * May a logical replication slot decode the current transaction's records?
 * Only a slot of the table's database can, and only one that exists when
 * they are written: a slot created later logs the transactions running
 * while it is being created (this one, once it has its xid) and outputs
 * none of them, becoming consistent only once they have all ended
 * (snapbuild.c).  So with no such slot no record is written, and a server
 * at wal_level = logical that nobody decodes pays nothing for them.
 * Before 15.8 a slot being created could start from a serialized snapshot
 * and become consistent at once: then the answer is always yes.
 */
static bool
decodable_now(void)
{
	static int	server_version = 0;
	int			nslots;
	int			nactive;

	if (server_version == 0)
		server_version = atoi(GetConfigOption("server_version_num", false, false));
	if (server_version < PK_SLOT_CREATION_FIXED)
		return true;
	/* the xid first: a slot created after the count sees us running */
	(void) GetTopTransactionId();
	return ReplicationSlotsCountDBSlots(MyDatabaseId, &nslots, &nactive);
}

/*
 * Writes the changes of rel's snapshot si, which the current transaction
 * has just made (its catalog rows and runs are written), as
 * records of this resource manager.  have_runs: runs is every run of the
 * step kept in a row of pkchangelog.runs, as it wrote them (a small
 * commit's: no catalog read); else they are read back.  Nothing unless
 * wal_level is logical, the table is logically logged (not temporary or
 * unlogged) and a logical replication slot of the database exists.
 */
void
changelog_wal_log_snapshot(Relation rel, const SnapshotInfo *si, List *runs,
						   bool have_runs)
{
	WalBatch	b;
	Snapshot	snapshot = NULL;

	if (!RelationIsLogicallyLogged(rel) || !decodable_now())
		return;
	if (!have_runs)
	{
		/*
		 * The snapshot's catalog rows were written by this very command:
		 * the latest snapshot, taken after the increment, sees them.
		 */
		CommandCounterIncrement();
		snapshot = RegisterSnapshot(GetLatestSnapshot());
	}
	b.rel = rel;
	b.hdr.node = RelationLocator(rel);
	b.hdr.snapshot_id = si->snapshot_id;
	b.hdr.nchanges = 0;
	initStringInfo(&b.buf);
	b.replident = rel->rd_rel->relreplident;
	b.identity = NULL;
	if (b.replident == REPLICA_IDENTITY_DEFAULT || b.replident == REPLICA_IDENTITY_INDEX)
		b.identity = RelationGetIdentityKeyBitmap(rel);
	b.before = NULL;
	b.cxt = CurrentMemoryContext;
	changelog_scan_snapshot(rel, si, runs, snapshot, batch_add, &b);
	batch_lone_before(&b);
	batch_flush(&b);
	pfree(b.buf.data);
	if (snapshot)
		UnregisterSnapshot(snapshot);
}

/*
 * The description of a change record (the resource manager's rm_desc for
 * XLOG_PK_CHANGES)
 */
void
changelog_wal_desc(StringInfo buf, XLogReaderState *record)
{
	xl_pk_changes hdr;

	if (XLogRecGetDataLen(record) < sizeof(hdr))
		return;
	memcpy(&hdr, XLogRecGetData(record), sizeof(hdr));
	appendStringInfo(buf, "rel %u/%u/%u snapshot %lld changes %u",
					 LocatorTablespace(hdr.node), LocatorDatabase(hdr.node), LocatorFileNumber(hdr.node),
					 (long long) hdr.snapshot_id, hdr.nchanges);
}

/* ---- decoding ---------------------------------------------------------- */

/*
 * The decoded tuple of a stored row: the MinimalTuple behind a zeroed heap
 * tuple header (as heap_tuple_from_minimal_tuple builds it), the snapshot
 * id in xmin and xmax.
 */
static ReorderBufferTuple
decoded_tuple(ReorderBuffer *rb, const char *data, uint32 len, int64 snapshot_id)
{
	ReorderBufferTuple tb = ReorderBufferAllocTupleBuf(rb, len + MINIMAL_TUPLE_OFFSET);
	HeapTuple	tuple = ReorderBufferTupleHeap(tb);
	HeapTupleHeader h = tuple->t_data;

	tuple->t_len = len + MINIMAL_TUPLE_OFFSET;
	ItemPointerSetInvalid(&tuple->t_self);
	tuple->t_tableOid = InvalidOid;
	memcpy((char *) h + MINIMAL_TUPLE_OFFSET, data, len);
	memset(h, 0, offsetof(HeapTupleHeaderData, t_infomask2));
	h->t_choice.t_heap.t_xmin = (TransactionId) ((uint64) snapshot_id >> 32);
	h->t_choice.t_heap.t_xmax = (TransactionId) ((uint64) snapshot_id & 0xFFFFFFFF);
	return tb;
}

/*
 * The snapshot id of a decoded row, which decoded_tuple keeps in the
 * header's xmin and xmax (a decoded tuple does not otherwise use them);
 * for the pkchangelog output plugin.
 */
int64
changelog_wal_snapshot_of(HeapTuple tuple)
{
	HeapTupleHeader h = tuple->t_data;

	return (int64) (((uint64) h->t_choice.t_heap.t_xmin << 32) |
					h->t_choice.t_heap.t_xmax);
}

static void
queue_change(LogicalDecodingContext *ctx, XLogRecordBuffer *buf,
			 const xl_pk_changes *hdr, ReorderBufferChangeType action,
			 ReorderBufferTuple oldtuple, ReorderBufferTuple newtuple)
{
	ReorderBufferChange *change = ReorderBufferAllocChange(ctx->reorder);

	change->action = action;
	change->origin_id = XLogRecGetOrigin(buf->record);
	ChangeRelLocator(change) = hdr->node;
	/* the change owns its tuples now: the reorder buffer frees them */
	change->data.tp.oldtuple = oldtuple;
	change->data.tp.newtuple = newtuple;
	change->data.tp.clear_toast_afterwards = true;
	ReorderBufferQueueChange(ctx->reorder, XLogRecGetXid(buf->record),
							 buf->origptr, change, false);
}

/* one entry of a record, as the decoder reads it */
typedef struct DecodedEntry
{
	uint8		kind;			/* a PkRowKind or PK_WAL_IDENTITY */
	ReorderBufferTuple tuple;	/* NULL: an empty identity entry */
} DecodedEntry;

/*
 * Queues a record's rows as row changes of its table:
 *
 *	  +I          INSERT of the row
 *	  -U then +U  UPDATE carrying the old row and the new one
 *	  +U alone    UPDATE without an old row
 *	  -D          DELETE carrying the old row (for producer none, the key)
 *	  -U alone    DELETE of the old row (input: a retraction with no +U)
 *
 * The old row is the identity entry's where one follows (batch_identity),
 * unless the slot's plugin is pkchangelog.  As heap_decode does for heap
 * records: only once the snapshot builder has a full snapshot and wants
 * this transaction's changes, not when fast-forwarding, only for the
 * slot's database, and not for an origin the plugin filters out.
 */
void
changelog_wal_decode(LogicalDecodingContext *ctx, XLogRecordBuffer *buf)
{
	XLogReaderState *r = buf->record;
	TransactionId xid = XLogRecGetXid(r);
	xl_pk_changes hdr;
	const char *p;
	const char *end;
	DecodedEntry *entries;
	bool		complete_rows;

	ReorderBufferProcessXid(ctx->reorder, xid, buf->origptr);
	/* the commit log's and run pages' records carry no changes to decode */
	if ((XLogRecGetInfo(r) & ~XLR_INFO_MASK) != XLOG_PK_CHANGES)
		return;
	if (SnapBuildCurrentState(ctx->snapshot_builder) < SNAPBUILD_FULL_SNAPSHOT)
		return;
	if (!SnapBuildProcessChange(ctx->snapshot_builder, xid, buf->origptr) ||
		ctx->fast_forward)
		return;
	memcpy(&hdr, XLogRecGetData(r), sizeof(hdr));
	if (LocatorDatabase(hdr.node) != ctx->slot->data.database)
		return;
	if (ctx->callbacks.filter_by_origin_cb != NULL &&
		filter_by_origin_cb_wrapper(ctx, XLogRecGetOrigin(r)))
		return;
	complete_rows = strcmp(NameStr(ctx->slot->data.plugin), "pkchangelog") == 0;

	p = XLogRecGetData(r) + sizeof(hdr);
	end = XLogRecGetData(r) + XLogRecGetDataLen(r);
	entries = palloc(sizeof(DecodedEntry) * (hdr.nchanges + 1));
	for (uint32 i = 0; i < hdr.nchanges; i++)
	{
		uint8		kind;
		uint32		len;

		if (end - p < SizeOfPkChangeEntry)
			elog(ERROR, "pkchangelog WAL record at %X/%X is truncated",
				 LSN_FORMAT_ARGS(buf->origptr));
		kind = (uint8) p[0];
		memcpy(&len, p + 1, sizeof(len));
		p += SizeOfPkChangeEntry;
		if (end - p < len ||
			(len < SizeofMinimalTupleHeader && !(kind == PK_WAL_IDENTITY && len == 0)))
			elog(ERROR, "pkchangelog WAL record at %X/%X is truncated",
				 LSN_FORMAT_ARGS(buf->origptr));
		if (kind > PK_DELETE && kind != PK_WAL_IDENTITY)
			elog(ERROR, "unexpected row kind %u in pkchangelog WAL record at %X/%X",
				 kind, LSN_FORMAT_ARGS(buf->origptr));
		entries[i].kind = kind;
		/* an identity entry is left out where complete rows go */
		entries[i].tuple = len == 0 || (kind == PK_WAL_IDENTITY && complete_rows) ? NULL :
			decoded_tuple(ctx->reorder, p, len, hdr.snapshot_id);
		p += len;
	}
	entries[hdr.nchanges].kind = PK_INSERT;	/* a sentinel, never looked at */

	for (uint32 i = 0; i < hdr.nchanges; i++)
	{
		DecodedEntry *e = &entries[i];
		ReorderBufferTuple old = e->tuple;

		/* the identity entry after a -D or -U gives the old row */
		if ((e->kind == PK_DELETE || e->kind == PK_UPDATE_BEFORE) &&
			i + 1 < hdr.nchanges && entries[i + 1].kind == PK_WAL_IDENTITY)
		{
			i++;
			if (!complete_rows)
			{
				/* the identity's row stands in: the whole row goes back */
				if (old)
					ReorderBufferFreeTuple(ctx->reorder, old);
				old = entries[i].tuple;
			}
		}
		switch (e->kind)
		{
			case PK_INSERT:
				queue_change(ctx, buf, &hdr, REORDER_BUFFER_CHANGE_INSERT, NULL, e->tuple);
				break;
			case PK_UPDATE_AFTER:
				queue_change(ctx, buf, &hdr, REORDER_BUFFER_CHANGE_UPDATE, NULL, e->tuple);
				break;
			case PK_DELETE:
				queue_change(ctx, buf, &hdr, REORDER_BUFFER_CHANGE_DELETE, old, NULL);
				break;
			case PK_UPDATE_BEFORE:
				/* a -U waits for its +U, the next entry */
				if (i + 1 < hdr.nchanges && entries[i + 1].kind == PK_UPDATE_AFTER)
				{
					i++;
					queue_change(ctx, buf, &hdr, REORDER_BUFFER_CHANGE_UPDATE, old,
								 entries[i].tuple);
				}
				else
					queue_change(ctx, buf, &hdr, REORDER_BUFFER_CHANGE_DELETE, old, NULL);
				break;
			default:
				elog(ERROR, "pkchangelog WAL record at %X/%X has an identity entry after no -U or -D",
					 LSN_FORMAT_ARGS(buf->origptr));
		}
	}
	pfree(entries);
}
