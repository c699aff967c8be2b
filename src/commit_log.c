/*-------------------------------------------------------------------------
 *
 * commit_log.c
 *	  A pkmerge table's commit log (DESIGN §4, §5): a small commit's snapshot
 *	  is a record appended to a log page of the table's own file, with one
 *	  WAL record that redo applies, instead of a row of
 *	  pkchangelog.snapshots and its index entry.
 *
 * Log pages are runs of kind 'log' (one page each) in pkchangelog.runs,
 * placed like any run; the table's row names the page commits append to
 * and its block (log_run, log_block), and is written whenever a commit
 * opens a new one.  A log run's row keeps the id of its first snapshot
 * (created_snapshot) and, in min_seq, the first one not expired (records
 * before it are gone).  The records are page items in snapshot order, as
 * commits append them under the table's commit lock, but for aborted
 * transactions' records (below): one whose transaction also committed a
 * compaction of the table first (a writer's at the stop trigger,
 * pk_compact) took the id after that compaction's, which the next commit
 * takes again after it, so a dead record can have a higher id than the
 * records that follow it.
 *
 * Visibility.  A record is its committing transaction's: it counts only
 * once that transaction has committed, and an aborted one leaves a record
 * whose snapshot id the next commit takes again.  Commits of a table are
 * serialized by its commit lock, held until the transaction is visible to
 * all (ProcArrayEndTransaction) or aborted, so when a commit appends, the
 * transaction of the record before it has ended: the append marks that
 * record committed (RESOLVED) or aborted (DEAD) in the same WAL record.
 * A transaction may leave two records or more (a compaction's, then its
 * commit's), all on one page (log_snapshot.c writes a row rather than
 * open a page after its own record): the next append resolves them all.
 * Only the last transaction's records are ever unresolved.  For a reader's MVCC
 * snapshot the table's row it sees (the version V, naming the snapshot
 * V.row_snapshot_id) splits the records:
 *
 *	- up to V's snapshot: V's writer committed after every such record's
 *	  transaction had ended, and the snapshot sees V, so a committed one is
 *	  visible: RESOLVED ones are, DEAD ones are not, and an unresolved one
 *	  (the last transaction's: V's writer's own, or one before a
 *	  compaction that wrote V) by its transaction's status;
 *	- past it (at most CAT_TABLE_FOLD_MAX: the commits folded after V): in
 *	  order, each is visible if its transaction is committed and not in the
 *	  snapshot; the first that the snapshot does not see ends them, as every
 *	  later commit came after it.
 *
 * So no reader looks up the status of an old transaction, and clog
 * truncation never meets a record: the last records, until another commit
 * of the table resolves them, are resolved by the background worker
 * (commit_log_resolve) on its rounds.
 *
 * Each record carries a CRC32C of its bytes but the flags byte; a record
 * that fails it, or whose lengths overrun the item, is reported as
 * corrupt.  Records are read in all of their layouts: the first (a
 * 40-byte header of fixed-width fields), the short one (LOG_SHORT_HEADER:
 * the snapshot id, the transaction id and the duration as varints: about
 * 27 bytes instead of 40), and the one written now for every record but
 * a page's first (LOG_PAGE_RELATIVE): its commit time as a varint from the
 * first record's, its role left out when it is the first record's,
 * (LOG_SEQ_IN_STREAM) its sequence number from its data run's base, and
 * (LOG_IDS_RELATIVE) its snapshot id, transaction id, total count and
 * changelog run id from the first record's, about 22 bytes fewer for a
 * 1-row commit.  A page's first record is never written against another,
 * nor changed, so any record reads with it alone; every reader of a
 * later record, even one that looks at its visibility only, reads the
 * first record too (its CRC checked).
 *
 * An append is one WAL record with the page's block: the first record of
 * a new page with XLOG_PK_LOG_INIT_PAGE, every other one as
 * XLOG_PK_LOG_NEXT*, whose type says what becomes of the record before
 * it, without main data (7 bytes fewer).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "commit_log.h"
#include "guc.h"
#include "run_format.h"
#include "tid.h"

/* WAL record types, under changelog_wal.c's resource manager */
#define XLOG_PK_LOG_APPEND		0x10
#define XLOG_PK_LOG_RESOLVE		0x20
#define XLOG_PK_LOG_INIT_PAGE	0x80	/* with APPEND: the page is new */

/*
 * An append after the page's last record, without main data: the record
 * goes to the item after the last, and the last one is left as it is
 * (NEXT), or marked committed or aborted.  Written for every append but
 * a new page's first.
 */
#define XLOG_PK_LOG_NEXT			0x40
#define XLOG_PK_LOG_NEXT_COMMITTED	0x50
#define XLOG_PK_LOG_NEXT_ABORTED	0x60
#define XLOG_PK_LOG_IS_NEXT(info) \
	((info) == XLOG_PK_LOG_NEXT || (info) == XLOG_PK_LOG_NEXT_COMMITTED || \
	 (info) == XLOG_PK_LOG_NEXT_ABORTED)

#define LOG_PAGE_MAGIC	0x474C4D4B	/* "KMLG" */

/* a log page's special space */
typedef struct LogPageOpaque
{
	uint32		magic;
	Oid			relfilenode;	/* the file it is a page of */
	int64		first_snapshot_id;
} LogPageOpaque;

/* flags, the record's first byte (the only one that changes) */
#define LOG_RESOLVED	0x01	/* its transaction committed */
#define LOG_DEAD		0x02	/* its transaction aborted */

/* parts */
#define LOG_HAS_DATA		0x01
#define LOG_HAS_CHANGELOG	0x02
#define LOG_SHORT_HEADER	0x04	/* the short layout, below */
#define LOG_CHANGELOG_REFS	0x08	/* changelog rows may name data rows */
#define LOG_CHANGELOG_DIFFS	0x10	/* and keep only what differs from them */
#define LOG_PAGE_RELATIVE	0x20	/* time and role against the page's first */
#define LOG_SEQ_IN_STREAM	0x40	/* sequence number against the data's base */
#define LOG_BARE_RUNS		0x80	/* tight runs without magic number and CRC */

/* the kind byte's high bits: ids against the page's first record's, below */
#define LOG_IDS_RELATIVE	0x80
#define LOG_RUNS_PACKED		0x40	/* bare runs' rows packed (run_pack.c) */
#define LOG_KIND_FLAGS		(LOG_IDS_RELATIVE | LOG_RUNS_PACKED)

/* what a tight stream's rows follow: its magic number, its CRC32C */
#define TIGHT_WHOLE_FIXED	(2 * sizeof(uint32))

/*
 * A record: a header, then varints total, delta and changelog record
 * counts, the data run's sequence number and stream length (with
 * LOG_HAS_DATA), the changelog run's id and stream length (with
 * LOG_HAS_CHANGELOG), the role name's length; then the role name, the
 * data stream, the changelog stream.  The header's first 8 bytes are the
 * flags, parts, kind (CommitKind), producer (PkProducer) bytes and the
 * CRC32C of every byte after them; then, in the short layout
 * (LOG_SHORT_HEADER), the commit time (8 bytes) and varints snapshot id,
 * full transaction id and duration in nanoseconds; with LOG_PAGE_RELATIVE
 * as well, the commit time is a varint instead (microseconds from the
 * page's first record's, zigzag: a clock may go back), and a role name of
 * length 0 is that record's; in the first layout, the fields of
 * LogRecordHeader below as they are in memory (40 bytes).  With
 * LOG_SEQ_IN_STREAM the sequence number is counted from the data run's
 * base (its tight stream's header).  Records are unaligned on the page:
 * read by copying out.  A header read in any layout is this struct.
 *
 * With LOG_CHANGELOG_REFS the changelog stream (tight, run_format.h) is
 * kept with each row whose tuple is byte for byte one of the data run's
 * (an input or lookup changelog's +I and +U rows are the rows the commit
 * wrote) naming that row instead: its length varint is 0, followed by
 * the data row's index.  A tuple is never empty, so 0 is no length.  With
 * LOG_CHANGELOG_DIFFS as well (written now), the index is doubled, and
 * odd when the row is not the data row but shares bytes with it (a -U,
 * the value its +U replaced, and the data row of its key): varints the
 * bytes it shares with that row's start and with its end and the length
 * of its own bytes between them follow, then those bytes; a 1-row
 * update's -U then takes a few bytes instead of its tuple.  The stream is
 * expanded back exactly, its own CRC32C then checked as ever.
 *
 * With LOG_BARE_RUNS (written now, when both runs are tight) the runs are
 * kept bare: the data stream without its magic number and CRC32C, the
 * changelog stream's (as kept, with references) row count, then its base
 * sequence number as a varint from the data stream's (zigzag; from 0
 * without a data run), then its rows.  The record's CRC32C covers
 * their bytes; the reader makes each tight stream whole again, its magic
 * number and its CRC32C (of the changelog's rows expanded) computed, so
 * that a run read from a record is what it was before it was written.
 * A 1-row update's record of producer lookup is about 17 bytes shorter.
 *
 * With LOG_IDS_RELATIVE (the kind byte's high bit; written now with
 * LOG_PAGE_RELATIVE) the snapshot id, the transaction id, the total
 * record count and the changelog run's id are varints from those of the
 * page's first record (zigzag; the run id from 0 when that record has no
 * changelog), and the duration is in microseconds: about 8 bytes fewer.
 */
typedef struct LogRecordHeader
{
	uint8		flags;
	uint8		parts;
	uint8		kind;			/* CommitKind */
	uint8		producer;		/* PkProducer */
	pg_crc32c	crc;			/* of everything after it */
	int64		snapshot_id;
	uint64		xid;			/* FullTransactionId */
	TimestampTz commit_time;
	double		duration_ms;
} LogRecordHeader;

#define LOG_HEADER_FIXED	(4 + sizeof(pg_crc32c))	/* what the CRC leaves out */
#define LOG_SHORT_FIXED		(LOG_HEADER_FIXED + sizeof(TimestampTz))

/* the most a record's varints take: 3 of the header, 8 of the body */
#define LOG_VARINTS_MAX		(11 * RUN_VARINT_MAX)

/*
 * XLOG_PK_LOG_APPEND's main data: this, then (with XLOG_PK_LOG_INIT_PAGE)
 * the page's first snapshot id (int64, unaligned).  WAL written by the
 * first build with the commit log has one 16-byte struct instead (the
 * snapshot id at offset 8, always there); redo tells them by length.
 * Appends without XLOG_PK_LOG_INIT_PAGE are written as XLOG_PK_LOG_NEXT*
 * now, but redo still takes them.
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
	uint8		flag;
} xl_pk_log_resolve;

static void
init_page(Page page, Oid relfilenode, int64 first_snapshot_id)
{
	LogPageOpaque *o;

	PageInit(page, BLCKSZ, MAXALIGN(sizeof(LogPageOpaque)));
	o = (LogPageOpaque *) PageGetSpecialPointer(page);
	o->magic = LOG_PAGE_MAGIC;
	o->relfilenode = relfilenode;
	o->first_snapshot_id = first_snapshot_id;
}

/* is page a log page of the file relfilenode? */
static bool
is_log_page(Page page, Oid relfilenode)
{
	LogPageOpaque *o = (LogPageOpaque *) PageGetSpecialPointer(page);

	return !PageIsNew(page) &&
		PageGetSpecialSize(page) == MAXALIGN(sizeof(LogPageOpaque)) &&
		o->magic == LOG_PAGE_MAGIC && o->relfilenode == relfilenode;
}

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

	INIT_BUFFERTAG(tag, rel->rd_node, MAIN_FORKNUM, blkno);
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
	result = is_log_page(BufferGetPage(buf), rel->rd_node.relNode);
	UnlockReleaseBuffer(buf);
	return result;
}

/* a copy of a log page for another file (VACUUM FULL) */
void
commit_log_page_moved(Page page, Oid relfilenode)
{
	((LogPageOpaque *) PageGetSpecialPointer(page))->relfilenode = relfilenode;
}

/* how a changelog stream names data rows (tight_rows) */
typedef enum RefForm
{
	REFS_NONE,					/* it does not: every row has its tuple */
	REFS_WHOLE,					/* LOG_CHANGELOG_REFS: 0, the data row's index */
	REFS_DIFF					/* LOG_CHANGELOG_DIFFS as well, below */
} RefForm;

/* a tight stream's rows (tight_rows) */
typedef struct TightRows
{
	const char *rows;			/* the first row, after the stream's header */
	int			n;
	uint64	   *delta;			/* each row's sequence number delta */
	uint8	   *kind;
	const char **tuple;			/* its tuple, or a reference's own bytes */
	uint32	   *len;			/* their length */
	int		   *ref;			/* the data row a reference names, or -1 */
	uint32	   *prefix;			/* a reference: bytes of that row's start */
	uint32	   *suffix;			/* and of its end, around the own bytes */
} TightRows;

/*
 * Parse a tight stream of len bytes (run_tight_row), whose rows may name
 * data rows as form says.  A reference's data row index is not checked
 * (the caller has the data rows).  False if it is not one or does not add
 * up.
 */
static bool
tight_rows(const char *stream, uint32 len, RefForm form, TightRows *t)
{
	const char *end = stream + len;
	const char *p;
	uint64		nrows;
	uint64		v;

	/* a row takes 3 bytes at least: a count beyond that is no count */
	if ((p = run_tight_header(stream, len, &nrows, &v)) == NULL || nrows > len / 3)
		return false;
	t->rows = p;
	t->n = (int) nrows;
	t->delta = palloc(sizeof(uint64) * Max(t->n, 1));
	t->kind = palloc(sizeof(uint8) * Max(t->n, 1));
	t->tuple = palloc(sizeof(char *) * Max(t->n, 1));
	t->len = palloc(sizeof(uint32) * Max(t->n, 1));
	t->ref = palloc(sizeof(int) * Max(t->n, 1));
	t->prefix = palloc0(sizeof(uint32) * Max(t->n, 1));
	t->suffix = palloc0(sizeof(uint32) * Max(t->n, 1));
	for (int i = 0; i < t->n; i++)
	{
		t->ref[i] = -1;
		if (!run_tight_row(&p, end, &t->delta[i], &t->kind[i], &v))
			return false;
		if (v == 0)
		{
			uint64		ref;
			uint64		prefix = UINT64_MAX;
			uint64		suffix = 0;

			/*
			 * A reference: the data row's index (doubled, odd with a diff),
			 * then the diff's lengths, which only the data row bounds
			 */
			if (form == REFS_NONE || !run_varint_get(&p, end, &ref) ||
				ref > (uint64) PG_INT32_MAX)
				return false;
			v = 0;
			if (form == REFS_DIFF && (ref & 1) &&
				(!run_varint_get(&p, end, &prefix) ||
				 !run_varint_get(&p, end, &suffix) ||
				 !run_varint_get(&p, end, &v) ||
				 prefix >= PG_UINT32_MAX || suffix >= PG_UINT32_MAX))
				return false;
			t->ref[i] = (int) (form == REFS_DIFF ? ref >> 1 : ref);
			t->prefix[i] = (uint32) Min(prefix, PG_UINT32_MAX);
			t->suffix[i] = (uint32) suffix;
		}
		if (v > (uint64) (end - p))
			return false;
		t->tuple[i] = p;
		t->len[i] = (uint32) v;
		p += v;
	}
	return p == end;
}

/*
 * Row i of c's head for a whole tuple of len bytes, as a tight stream
 * writes it (the writer's varints are the shortest, so this is its bytes
 * again), at q; returns where the tuple goes.
 */
static char *
tight_row_head(char *q, const TightRows *c, int i, uint32 len)
{
	q = run_varint_put(q, c->delta[i]);
	*q++ = (char) c->kind[i];
	return run_varint_put(q, len);
}

/* row i of c with its whole tuple (len bytes at tuple) at q; returns the end */
static char *
tight_row_put(char *q, const TightRows *c, int i, const char *tuple, uint32 len)
{
	q = tight_row_head(q, c, i, len);
	memcpy(q, tuple, len);
	return q + len;
}

/*
 * Row i of c kept as a reference to data row j of d (REFS_DIFF): the
 * bytes it shares with that row's start and end, and its own between
 * them.  Returns the end, or NULL if that is no shorter than the row.
 */
static char *
tight_ref_put(char *q, const TightRows *c, int i, const TightRows *d, int j)
{
	const char *a = c->tuple[i];
	const char *b = d->tuple[j];
	uint32		shorter = Min(c->len[i], d->len[j]);
	uint32		prefix = 0;
	uint32		suffix = 0;
	uint32		own;
	char		buf[6 * RUN_VARINT_MAX];
	char	   *h = buf;

	while (prefix < shorter && a[prefix] == b[prefix])
		prefix++;
	while (suffix < shorter - prefix &&
		   a[c->len[i] - 1 - suffix] == b[d->len[j] - 1 - suffix])
		suffix++;
	own = c->len[i] - prefix - suffix;
	h = tight_row_head(h, c, i, 0);	/* length 0: a reference */
	if (prefix == d->len[j] && own == 0)
		h = run_varint_put(h, (uint64) j << 1);	/* the whole row */
	else
	{
		h = run_varint_put(h, ((uint64) j << 1) | 1);
		h = run_varint_put(h, prefix);
		h = run_varint_put(h, suffix);
		h = run_varint_put(h, own);
	}
	/* not shorter than the row with its whole tuple: kept whole */
	if ((h - buf) + own >= (Size) (run_varint_len(c->delta[i]) + 1 +
								   run_varint_len(c->len[i]) + c->len[i]))
		return NULL;
	memcpy(q, buf, h - buf);
	q += h - buf;
	memcpy(q, a + prefix, own);
	return q + own;
}

/*
 * rec's changelog stream with rows kept as references to its data rows
 * (LOG_CHANGELOG_REFS | LOG_CHANGELOG_DIFFS), in *len bytes: a row that is
 * one of them names it, and a row that shares bytes with the data row of
 * its position among them (an input or lookup changelog's -U, the value
 * its +U replaced: the data row of the same key) keeps only the bytes
 * that differ.  NULL if no row is kept so (or it would not be shorter).
 */
static char *
changelog_refs(const CommitRecord *rec, uint32 *len)
{
	TightRows	d;
	TightRows	c;
	const char *stream = rec->changelog ? rec->changelog->stream : NULL;
	char	   *out;
	char	   *q;
	int		   *same;
	bool		any = false;

	if (rec->data == NULL || stream == NULL ||
		!tight_rows(rec->data->stream, rec->data->stream_len, REFS_NONE, &d) ||
		!tight_rows(stream, rec->changelog->stream_len, REFS_NONE, &c) ||
		d.n == 0)
		return NULL;
	/* the data row each changelog row is byte for byte, or -1 */
	same = palloc(sizeof(int) * Max(c.n, 1));
	for (int i = 0; i < c.n; i++)
	{
		same[i] = -1;
		for (int j = 0; j < d.n && same[i] < 0; j++)
			if (d.len[j] == c.len[i] && memcmp(d.tuple[j], c.tuple[i], c.len[i]) == 0)
				same[i] = j;
	}
	out = palloc(rec->changelog->stream_len);
	memcpy(out, stream, c.rows - stream);
	q = out + (c.rows - stream);
	for (int i = 0, near = 0; i < c.n; i++)
	{
		int			j = same[i];
		char	   *next;

		/*
		 * Not one of them: the data row of the next changelog row, which
		 * for a -U is its +U (the row of the same key the commit wrote),
		 * else the data row the last one named.
		 */
		if (j < 0)
			j = i + 1 < c.n && same[i + 1] >= 0 ? same[i + 1] : near;
		near = j;
		/* there is room for the whole row: the stream is not longer */
		if (q - out + run_varint_len(c.delta[i]) + 1 +
			run_varint_len(c.len[i]) + c.len[i] > rec->changelog->stream_len)
			return NULL;
		next = tight_ref_put(q, &c, i, &d, j);
		any |= (next != NULL);
		q = next ? next : tight_row_put(q, &c, i, c.tuple[i], c.len[i]);
	}
	*len = q - out;
	return any ? out : NULL;
}

/*
 * A changelog stream kept with references (klen bytes at kept, in form),
 * expanded against the data stream it names rows of; NULL if either does
 * not add up.
 */
static char *
changelog_expand(const char *data, uint32 dlen, const char *kept, uint32 klen,
				 RefForm form, uint32 *len)
{
	TightRows	d;
	TightRows	c;
	uint64		total;
	char	   *out;
	char	   *q;

	if (!tight_rows(data, dlen, REFS_NONE, &d) || !tight_rows(kept, klen, form, &c))
		return NULL;
	total = c.rows - kept;
	for (int i = 0; i < c.n; i++)
	{
		if (c.ref[i] >= 0)
		{
			uint32		rlen = c.ref[i] < d.n ? d.len[c.ref[i]] : 0;

			if (c.ref[i] >= d.n)
				return NULL;	/* a reference to no data row */
			/* a whole row (UINT32_MAX: no diff), or its parts */
			if (c.prefix[i] == PG_UINT32_MAX)
				c.prefix[i] = rlen;
			if ((uint64) c.prefix[i] + c.suffix[i] > rlen)
				return NULL;
			c.len[i] += c.prefix[i] + c.suffix[i];
		}
		total += 3 * RUN_VARINT_MAX + c.len[i];
	}
	if (total > MaxAllocSize)
		return NULL;
	out = palloc(total);
	memcpy(out, kept, c.rows - kept);
	q = out + (c.rows - kept);
	for (int i = 0; i < c.n; i++)
	{
		const char *row;
		uint32		own;

		if (c.ref[i] < 0)
		{
			q = tight_row_put(q, &c, i, c.tuple[i], c.len[i]);
			continue;
		}
		/* the row: the data row's start and end around its own bytes */
		row = d.tuple[c.ref[i]];
		own = c.len[i] - c.prefix[i] - c.suffix[i];
		q = tight_row_head(q, &c, i, c.len[i]);
		memcpy(q, row, c.prefix[i]);
		memcpy(q + c.prefix[i], c.tuple[i], own);
		memcpy(q + c.prefix[i] + own, row + d.len[c.ref[i]] - c.suffix[i], c.suffix[i]);
		q += c.len[i];
	}
	*len = q - out;
	return out;
}

/*
 * What a record of a page is written and read against: its first record's
 * fields (user NULL: not read yet)
 */
typedef struct LogBase
{
	TimestampTz commit_time;
	char	   *user;
	int64		snapshot_id;
	uint64		xid;
	int64		total_record_count;
	int64		changelog_run_id;	/* 0 without a changelog */
} LogBase;

/*
 * The runs of a record kept bare (LOG_BARE_RUNS), if each it has is a
 * tight stream: *data moved past its magic number and CRC32C, *changelog
 * replaced by its bare form (in the current memory context), their
 * lengths with them.  False, and nothing changed, if one is not tight.
 */
static bool
bare_runs(const char **data, uint32 *dlen, const char **changelog, uint32 *clen,
		  bool *packed)
{
	uint64		nrows = 0;
	uint64		data_base = 0;
	uint64		base = 0;
	const char *rows = NULL;
	char	   *buf;
	char	   *p;

	if ((*data && run_tight_header(*data, *dlen, &nrows, &data_base) == NULL) ||
		(*changelog &&
		 (rows = run_tight_header(*changelog, *clen, &nrows, &base)) == NULL))
		return false;
	/* both packed or both not: one flag tells how to make them whole */
	*packed = run_tight_packed(*data ? *data : *changelog, *data ? *dlen : *clen);
	if (*data && *changelog && run_tight_packed(*changelog, *clen) != *packed)
		return false;
	if (*changelog)
	{
		uint32		nbytes = (uint32) (*changelog + *clen - rows);

		buf = palloc(2 * RUN_VARINT_MAX + nbytes);
		p = run_varint_put(buf, nrows);
		p = run_varint_put(p, run_zigzag((int64) (base - data_base)));
		memcpy(p, rows, nbytes);
		*changelog = buf;
		*clen = (uint32) (p + nbytes - buf);
	}
	if (*data)
	{
		*data += TIGHT_WHOLE_FIXED;
		*dlen -= TIGHT_WHOLE_FIXED;
	}
	return true;
}

/*
 * A bare run's tight stream whole again (LOG_BARE_RUNS): its magic number
 * (packed's with LOG_RUNS_PACKED), a CRC32C of its rows (0 here:
 * whole_run_crc sets it), the len bytes at bare after them, in *wlen
 * bytes.  A changelog's (data_base not NULL) is its row count, its base
 * sequence number from *data_base (zigzag), its rows; NULL if those
 * varints are cut short.
 */
static char *
whole_run(const char *bare, uint32 len, bool packed, const uint64 *data_base, uint32 *wlen)
{
	const char *p = bare;
	const char *end = bare + len;
	uint64		nrows;
	uint64		base;
	uint32		magic = packed ? RUN_MAGIC_PACKED : RUN_MAGIC_TIGHT;
	char	   *out = palloc0(TIGHT_WHOLE_FIXED + 2 * RUN_VARINT_MAX + len);
	char	   *q = out + TIGHT_WHOLE_FIXED;

	memcpy(out, &magic, sizeof(magic));
	if (data_base != NULL)
	{
		if (!run_varint_get(&p, end, &nrows) || !run_varint_get(&p, end, &base))
			return NULL;
		q = run_varint_put(q, nrows);
		q = run_varint_put(q, *data_base + (uint64) run_unzigzag(base));
	}
	memcpy(q, p, end - p);
	*wlen = (uint32) (q + (end - p) - out);
	return out;
}

/* set the CRC32C of a tight stream made whole (whole_run) */
static void
whole_run_crc(char *stream, uint32 len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, stream + TIGHT_WHOLE_FIXED, len - TIGHT_WHOLE_FIXED);
	FIN_CRC32C(crc);
	memcpy(stream + sizeof(uint32), &crc, sizeof(crc));
}

/*
 * The record's bytes, in the current memory context; against base (the
 * page's first record, LOG_PAGE_RELATIVE) unless it is NULL.
 */
static char *
encode(const CommitRecord *rec, const LogBase *base, uint32 *len)
{
	uint32		ulen = strlen(rec->user);
	uint32		dlen = rec->data ? rec->data->stream_len : 0;
	uint32		clen = rec->changelog ? rec->changelog->stream_len : 0;
	char	   *refs = changelog_refs(rec, &clen);
	const char *dstream = rec->data ? rec->data->stream : NULL;
	const char *cstream = rec->changelog ? (refs ? refs : rec->changelog->stream) : NULL;
	bool		packed = false;
	bool		bare = bare_runs(&dstream, &dlen, &cstream, &clen, &packed);
	char	   *buf = palloc(LOG_SHORT_FIXED + LOG_VARINTS_MAX + ulen + dlen + clen);
	char	   *p = buf + LOG_SHORT_FIXED;
	double		ns = rec->duration_ms * 1e6;
	uint64		seq = rec->data ? (uint64) rec->data->max_seq : 0;
	uint64		data_base;
	uint64		nrows;
	uint8		parts = LOG_SHORT_HEADER | (rec->data ? LOG_HAS_DATA : 0) |
		(rec->changelog ? LOG_HAS_CHANGELOG : 0) |
		(refs ? LOG_CHANGELOG_REFS | LOG_CHANGELOG_DIFFS : 0) |
		(bare ? LOG_BARE_RUNS : 0);
	pg_crc32c	crc;

	buf[0] = 0;
	buf[2] = (char) (rec->kind | (bare && packed ? LOG_RUNS_PACKED : 0));
	buf[3] = (char) rec->producer;
	if (base)
	{
		/* the time from the first record's, zigzag (a clock may go back) */
		int64		d = rec->commit_time - base->commit_time;

		parts |= LOG_PAGE_RELATIVE;
		p = run_varint_put(buf + LOG_HEADER_FIXED, run_zigzag(d));
		if (strcmp(rec->user, base->user) == 0)
			ulen = 0;
	}
	else
		memcpy(buf + LOG_HEADER_FIXED, &rec->commit_time, sizeof(TimestampTz));
	if (rec->data &&
		run_tight_header(rec->data->stream, dlen, &nrows, &data_base) != NULL &&
		seq >= data_base)
	{
		parts |= LOG_SEQ_IN_STREAM;
		seq -= data_base;
	}
	buf[1] = (char) parts;
	/* a clock that went back counts as no time; a day as the most */
	ns = ns > 0 ? Min(ns, 86400e9) : 0;
	if (base)
	{
		buf[2] |= LOG_IDS_RELATIVE;
		p = run_varint_put(p, run_zigzag(rec->snapshot_id - base->snapshot_id));
		p = run_varint_put(p, run_zigzag((int64) (U64FromFullTransactionId(rec->xid) -
											  base->xid)));
		p = run_varint_put(p, (uint64) (ns / 1000 + 0.5));
		p = run_varint_put(p, run_zigzag(rec->total_record_count - base->total_record_count));
	}
	else
	{
		p = run_varint_put(p, (uint64) rec->snapshot_id);
		p = run_varint_put(p, U64FromFullTransactionId(rec->xid));
		p = run_varint_put(p, (uint64) (ns + 0.5));
		p = run_varint_put(p, (uint64) rec->total_record_count);
	}
	p = run_varint_put(p, (uint64) rec->delta_record_count);
	p = run_varint_put(p, (uint64) rec->changelog_record_count);
	if (rec->data)
	{
		p = run_varint_put(p, seq);
		p = run_varint_put(p, dlen);
	}
	if (rec->changelog)
	{
		p = run_varint_put(p, base ? run_zigzag(rec->changelog->run_id - base->changelog_run_id) :
						   (uint64) rec->changelog->run_id);
		p = run_varint_put(p, clen);
	}
	p = run_varint_put(p, ulen);
	memcpy(p, rec->user, ulen);
	p += ulen;
	if (dlen)
		memcpy(p, dstream, dlen);
	p += dlen;
	if (clen)
		memcpy(p, cstream, clen);
	p += clen;
	*len = p - buf;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf + LOG_HEADER_FIXED, *len - LOG_HEADER_FIXED);
	FIN_CRC32C(crc);
	memcpy(buf + 4, &crc, sizeof(crc));
	return buf;
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

/* a run of a record (kind, with its stream), as the catalog's readers form them */
static RunInfo *
record_run(Relation rel, RunKind kind, int64 snapshot_id, const char *stream, uint32 len)
{
	RunInfo    *r = palloc0(sizeof(RunInfo));

	r->kind = kind;
	r->in_snapshot_row = true;
	r->created_snapshot = snapshot_id;
	r->relfilenode = rel->rd_node.relNode;
	r->stream = palloc(len);
	memcpy(r->stream, stream, len);
	r->stream_len = len;
	r->size_bytes = len;
	r->record_count = run_compact_nrows(r->stream, len);
	return r;
}

/* the fields after a record's header, up to its runs (parse_body) */
typedef struct LogBody
{
	uint64		counts[3];		/* total, delta and changelog records */
	uint64		seq;			/* as stored (LOG_SEQ_IN_STREAM: from the base) */
	uint64		dlen;
	uint64		run_id;
	uint64		clen;
	uint64		ulen;
	const char *user;			/* ulen bytes, then the runs */
} LogBody;

/* parse the body at p (up to end) of a record whose header is h */
static bool
parse_body(const LogRecordHeader *h, const char *p, const char *end, LogBody *b)
{
	memset(b, 0, sizeof(LogBody));
	for (int i = 0; i < 3; i++)
		if (!run_varint_get(&p, end, &b->counts[i]))
			return false;
	if (((h->parts & LOG_HAS_DATA) &&
		 (!run_varint_get(&p, end, &b->seq) || !run_varint_get(&p, end, &b->dlen))) ||
		((h->parts & LOG_HAS_CHANGELOG) &&
		 (!run_varint_get(&p, end, &b->run_id) || !run_varint_get(&p, end, &b->clen))) ||
		!run_varint_get(&p, end, &b->ulen) || b->ulen >= NAMEDATALEN ||
		b->ulen + b->dlen + b->clen != (uint64) (end - p))
		return false;
	b->user = p;
	return true;
}

/* does item off's CRC32C match its bytes? */
static bool
record_crc_ok(Page page, OffsetNumber off, pg_crc32c stored)
{
	ItemId		iid = PageGetItemId(page, off);
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, (const char *) PageGetItem(page, iid) + LOG_HEADER_FIXED,
				ItemIdGetLength(iid) - LOG_HEADER_FIXED);
	FIN_CRC32C(crc);
	return EQ_CRC32C(crc, stored);
}

static void read_header(Relation rel, BlockNumber block, Page page, OffsetNumber off,
						LogRecordHeader *h, const char **body, const char **end,
						LogBase *base);

/*
 * The page's first record's commit time, role and ids, which the others
 * are written against (its CRC checked: they depend on it).  Reading a record
 * (noerror false), a damaged or missing one is reported as corrupt; to
 * write one, false is returned instead, and the new record is written
 * whole.
 */
static bool
page_base(Relation rel, BlockNumber block, Page page, bool noerror, LogBase *base)
{
	ItemId		iid;
	const char *item;
	LogRecordHeader h;
	const char *body;
	const char *end;
	LogBody b;

	if (PageGetMaxOffsetNumber(page) < FirstOffsetNumber)
	{
		if (noerror)
			return false;
		corrupt(rel, block, FirstOffsetNumber, "a record is written against a first record the page does not have");
	}
	iid = PageGetItemId(page, FirstOffsetNumber);
	item = (const char *) PageGetItem(page, iid);
	if (!ItemIdIsNormal(iid) || ItemIdGetLength(iid) < LOG_SHORT_FIXED ||
		(((uint8) item[1]) & LOG_PAGE_RELATIVE) ||
		(((uint8) item[2]) & LOG_IDS_RELATIVE) ||
		(!(((uint8) item[1]) & LOG_SHORT_HEADER) &&
		 ItemIdGetLength(iid) < sizeof(LogRecordHeader)))
	{
		if (noerror)
			return false;
		corrupt(rel, block, FirstOffsetNumber, "the page's first record, which others are written against, is not one");
	}
	read_header(rel, block, page, FirstOffsetNumber, &h, &body, &end, NULL);
	if (!record_crc_ok(page, FirstOffsetNumber, h.crc) || !parse_body(&h, body, end, &b))
	{
		if (noerror)
			return false;
		corrupt(rel, block, FirstOffsetNumber, "the page's first record, which others are written against, is damaged");
	}
	base->commit_time = h.commit_time;
	base->user = pnstrdup(b.user, b.ulen);
	base->snapshot_id = h.snapshot_id;
	base->xid = h.xid;
	base->total_record_count = (int64) b.counts[0];
	base->changelog_run_id = (h.parts & LOG_HAS_CHANGELOG) ? (int64) b.run_id : 0;
	return true;
}

/*
 * The header of item off, in any of its layouts, checked against the
 * item's length; *body: where the counts start; *end: the item's end.  The
 * CRC covers [item + LOG_HEADER_FIXED, *end) in all.  A record written
 * against the page's first record gets its commit time and ids from it:
 * base holds that record's fields, read into it unless it has them
 * already (base->user not NULL); NULL only for the first record itself.
 * The kind keeps its LOG_IDS_RELATIVE bit.
 */
static void
read_header(Relation rel, BlockNumber block, Page page, OffsetNumber off,
			LogRecordHeader *h, const char **body, const char **end,
			LogBase *base)
{
	ItemId		iid = PageGetItemId(page, off);
	const char *item;
	uint8		parts;

	if (!ItemIdIsNormal(iid) || ItemIdGetLength(iid) < LOG_SHORT_FIXED)
		corrupt(rel, block, off, "the item is not a record");
	item = (const char *) PageGetItem(page, iid);
	*end = item + ItemIdGetLength(iid);
	parts = (uint8) item[1];
	if (parts & (LOG_SHORT_HEADER | LOG_PAGE_RELATIVE))
	{
		uint64		id;
		uint64		ns;
		uint64		zz = 0;

		memcpy(h, item, LOG_HEADER_FIXED);
		*body = item + ((parts & LOG_PAGE_RELATIVE) ? LOG_HEADER_FIXED : LOG_SHORT_FIXED);
		if (((parts & LOG_PAGE_RELATIVE) && !run_varint_get(body, *end, &zz)) ||
			!run_varint_get(body, *end, &id) ||
			!run_varint_get(body, *end, &h->xid) ||
			!run_varint_get(body, *end, &ns))
			corrupt(rel, block, off, "its header is cut short");
		h->snapshot_id = (int64) id;
		h->duration_ms = ns / 1e6;
		if ((parts & LOG_PAGE_RELATIVE) && off == FirstOffsetNumber)
			corrupt(rel, block, off, "the page's first record is written against itself");
		if (!(parts & LOG_PAGE_RELATIVE))
		{
			if (h->kind & LOG_IDS_RELATIVE)
				corrupt(rel, block, off, "its ids are written against no record");
			memcpy(&h->commit_time, item + LOG_HEADER_FIXED, sizeof(TimestampTz));
			return;
		}
		if (base == NULL)
			elog(ERROR, "a commit log record read without its page's first record");
		if (base->user == NULL)
			(void) page_base(rel, block, page, false, base);
		h->commit_time = base->commit_time + run_unzigzag(zz);
		if (h->kind & LOG_IDS_RELATIVE)
		{
			h->snapshot_id = base->snapshot_id + run_unzigzag(id);
			h->xid = base->xid + (uint64) run_unzigzag(h->xid);
			h->duration_ms = ns / 1e3;
		}
	}
	else
	{
		if (ItemIdGetLength(iid) < sizeof(LogRecordHeader))
			corrupt(rel, block, off, "the item is not a record");
		memcpy(h, item, sizeof(*h));
		*body = item + sizeof(*h);
	}
}

/*
 * The data run's sequence number of a record whose header is h and body
 * b, its data stream (bare with LOG_BARE_RUNS: its row count and base
 * first) at data: with LOG_SEQ_IN_STREAM counted from that base.  If the
 * stream's header is damaged (its CRC made to match the record's), the
 * run fails its own checks where it is read, as with any damaged run.
 */
static int64
record_seq(const LogRecordHeader *h, const LogBody *b, const char *data)
{
	uint64		seq = b->seq;
	uint64		nrows;
	uint64		data_base;
	const char *p = data;
	bool		based;

	if (!(h->parts & LOG_SEQ_IN_STREAM))
		return (int64) seq;
	if (h->parts & LOG_BARE_RUNS)
		based = run_varint_get(&p, data + b->dlen, &nrows) &&
			run_varint_get(&p, data + b->dlen, &data_base);
	else
		based = run_tight_header(data, (uint32) b->dlen, &nrows, &data_base) != NULL;
	if (based && data_base <= PG_INT64_MAX - seq)
		seq += data_base;
	return (int64) seq;
}

/*
 * Record off's header and body (up to its runs), its CRC checked, as
 * decode and decode_fold read it (base as read_header takes it), its ids
 * as they are (the kind with its flags, LOG_KIND_FLAGS); a record that
 * fails either is reported as corrupt.
 */
static void
read_record(Relation rel, BlockNumber block, Page page, OffsetNumber off,
			LogBase *base, LogRecordHeader *h, LogBody *b)
{
	const char *p;
	const char *end;

	read_header(rel, block, page, off, h, &p, &end, base);
	if (!record_crc_ok(page, off, h->crc))
		corrupt(rel, block, off, "its CRC does not match");
	if (!parse_body(h, p, end, b))
		corrupt(rel, block, off, "its parts do not add up to its length");
	if (h->kind & LOG_IDS_RELATIVE)
	{
		b->counts[0] = (uint64) (base->total_record_count + run_unzigzag(b->counts[0]));
		if (h->parts & LOG_HAS_CHANGELOG)
			b->run_id = (uint64) (base->changelog_run_id + run_unzigzag(b->run_id));
	}
	if ((h->kind & ~LOG_KIND_FLAGS) > COMMIT_OVERWRITE ||
		h->producer > PK_PRODUCER_FULL_COMPACTION ||
		h->snapshot_id <= 0)
		corrupt(rel, block, off, "its parts do not add up to its length");
}

/*
 * The whole record at off, its CRC checked; base: the page's first
 * record's fields, as read_header takes them (base->user NULL: not read
 * yet), for the next records of the page.
 */
static CommitRecord *
decode(Relation rel, BlockNumber block, Page page, OffsetNumber off, LogBase *base)
{
	LogRecordHeader h;
	LogBody		b;
	const char *p;
	CommitRecord *rec = palloc0(sizeof(CommitRecord));
	int64		seq;
	const char *data;
	uint32		dlen;

	read_record(rel, block, page, off, base, &h, &b);
	rec->snapshot_id = h.snapshot_id;
	rec->xid = FullTransactionIdFromU64(h.xid);
	rec->commit_time = h.commit_time;
	rec->kind = (CommitKind) (h.kind & ~LOG_KIND_FLAGS);
	rec->producer = (PkProducer) h.producer;
	rec->duration_ms = h.duration_ms;
	rec->total_record_count = (int64) b.counts[0];
	rec->delta_record_count = (int64) b.counts[1];
	rec->changelog_record_count = (int64) b.counts[2];
	/* no role: the page's first record's */
	if (b.ulen == 0 && (h.parts & LOG_PAGE_RELATIVE))
		rec->user = pstrdup(base->user);
	else
		rec->user = pnstrdup(b.user, b.ulen);
	p = b.user + b.ulen;
	data = p;
	dlen = (uint32) b.dlen;
	seq = record_seq(&h, &b, p);
	/* bare runs: the data stream whole again (its CRC32C is the record's) */
	if ((h.parts & (LOG_BARE_RUNS | LOG_HAS_DATA)) == (LOG_BARE_RUNS | LOG_HAS_DATA))
	{
		char	   *whole = whole_run(p, dlen, (h.kind & LOG_RUNS_PACKED) != 0, NULL, &dlen);

		whole_run_crc(whole, dlen);
		data = whole;
	}
	if (h.parts & LOG_HAS_DATA)
	{
		rec->data = record_run(rel, RUN_DATA, h.snapshot_id, data, dlen);
		rec->data->run_id = -h.snapshot_id;
		rec->data->from_commit = true;
		rec->data->row_base = pk_inline_row_base(rec->data->run_id);
		rec->data->min_seq = rec->data->max_seq = (int64) seq;
		p += b.dlen;
	}
	if (h.parts & LOG_HAS_CHANGELOG)
	{
		const char *kept = p;
		uint32		klen = (uint32) b.clen;
		const char *changelog;
		uint32		len;
		char	   *whole = NULL;

		/* bare: whole again, its base sequence number from the data run's */
		if (h.parts & LOG_BARE_RUNS)
		{
			uint64		data_base = 0;
			uint64		nrows;
			uint32		wlen;

			if (h.parts & LOG_HAS_DATA)
				(void) run_tight_header(data, dlen, &nrows, &data_base);
			if ((whole = whole_run(kept, klen, (h.kind & LOG_RUNS_PACKED) != 0,
								   &data_base, &wlen)) != NULL)
			{
				kept = whole;
				klen = wlen;
			}
		}
		changelog = kept;
		len = klen;

		/*
		 * Kept with references: expanded.  If that fails, the bytes as kept
		 * stand for the run, whose CRC32C (of the expanded rows; none made
		 * for bare ones) then fails where the run is read: only the change
		 * stream, which needs it, refuses the record, as with any damaged
		 * changelog run.
		 */
		if ((h.parts & (LOG_CHANGELOG_REFS | LOG_HAS_DATA)) ==
			(LOG_CHANGELOG_REFS | LOG_HAS_DATA))
		{
			char	   *expanded = changelog_expand(data, dlen, kept, klen,
												(h.parts & LOG_CHANGELOG_DIFFS) ?
												REFS_DIFF : REFS_WHOLE, &len);

			if (expanded)
			{
				changelog = expanded;
				if (whole)
					whole_run_crc(expanded, len);
			}
			else
				len = klen;
		}
		else if (whole)
			whole_run_crc(whole, klen);
		rec->changelog = record_run(rel, RUN_CHANGELOG, h.snapshot_id, changelog, len);
		rec->changelog->run_id = (int64) b.run_id;
	}
	return rec;
}

/*
 * Can a record hold this commit?  Its runs must be kept in its row (no
 * pages) and the record fit a page with room to spare.
 */
bool
commit_log_fits(const CommitRecord *rec)
{
	uint32		len = LOG_SHORT_FIXED + LOG_VARINTS_MAX + strlen(rec->user) +
		(rec->data ? rec->data->stream_len : 0) +
		(rec->changelog ? rec->changelog->stream_len : 0);

	return (rec->data == NULL || rec->data->in_snapshot_row) &&
		(rec->changelog == NULL || rec->changelog->in_snapshot_row) &&
		MAXALIGN(len) + sizeof(ItemIdData) <=
		BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(LogPageOpaque));
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
	const char *body;
	const char *end;

	read_header(rel, block, page, off, &h, &body, &end, base);
	if (h.flags & (LOG_RESOLVED | LOG_DEAD))
		return 0;				/* resolved already */
	return record_status(&h);
}

static void
set_flag(Page page, OffsetNumber off, uint8 flag)
{
	char	   *item = (char *) PageGetItem(page, PageGetItemId(page, off));

	item[0] = (char) ((uint8) item[0] | flag);
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
		if (!is_log_page(BufferGetPage(buf), rel->rd_node.relNode))
		{
			UnlockReleaseBuffer(buf);
			return LOG_NEW_PAGE;
		}
	}
	page = BufferGetPage(buf);
	/* against the page's first record, if it has one (and it is whole) */
	item = encode(rec, !new_page && page_base(rel, block, page, true, &base) ?
				  &base : NULL, &len);
	if (!new_page && PageGetFreeSpace(page) < MAXALIGN(len))
	{
		CommitLogAppend result = LOG_NEW_PAGE;
		OffsetNumber last = PageGetMaxOffsetNumber(page);
		LogRecordHeader h;
		const char *body;
		const char *end;

		if (last >= FirstOffsetNumber)
		{
			FullTransactionId xid;

			read_header(rel, block, page, last, &h, &body, &end, &base);
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
		init_page(page, rel->rd_node.relNode, rec->snapshot_id);
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
 * Is the record with header h visible, by the rules in the header comment?
 * Sets *stop when no later record can be.
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
 * What fold_commits takes of a record (CommitFold), its CRC checked, as
 * decode would read it but without making its runs (no copy of their
 * bytes, no changelog expanded).
 */
static CommitFold *
decode_fold(Relation rel, BlockNumber block, Page page, OffsetNumber off, LogBase *base)
{
	LogRecordHeader h;
	LogBody		b;
	CommitFold *f = palloc(sizeof(CommitFold));

	read_record(rel, block, page, off, base, &h, &b);
	f->snapshot_id = h.snapshot_id;
	f->delta_record_count = (int64) b.counts[1];
	f->has_data = (h.parts & LOG_HAS_DATA) != 0;
	f->seq = f->has_data ? record_seq(&h, &b, b.user + b.ulen) : 0;
	return f;
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
	LogPageOpaque *o;
	LogBase		base = {0};

	*stopped = false;
	from = Max(from, page_run->min_seq - 1);
	buf = ReadBuffer(rel, block);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	o = (LogPageOpaque *) PageGetSpecialPointer(page);
	if (!is_log_page(page, rel->rd_node.relNode) ||
		(page_run->created_snapshot != 0 && o->first_snapshot_id != page_run->created_snapshot))
		corrupt(rel, block, 0, "the page is not the log page the catalog names");
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff && !*stopped; off++)
	{
		LogRecordHeader h;
		const char *body;
		const char *end;

		read_header(rel, block, page, off, &h, &body, &end, &base);
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

/* ---- redo, description ------------------------------------------------ */

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
commit_log_redo(XLogReaderState *record)
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
			RelFileNode rnode;

			XLogRecGetBlockTag(record, 0, &rnode, NULL, NULL);
			buf = XLogInitBufferForRedo(record, 0);
			init_page(BufferGetPage(buf), rnode.relNode, first_snapshot_id);
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
				set_flag(page, xlrec.resolve, xlrec.resolve_flag);
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
			set_flag(page, xlrec.offnum, xlrec.flag);
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
commit_log_identify(uint8 info)
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
commit_log_desc(StringInfo buf, XLogReaderState *record)
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
