/*-------------------------------------------------------------------------
 *
 * log_format.c
 *	  The bytes of a commit log page (commit_log.c): its special space and
 *	  its records.  A record is encoded from a CommitRecord, and decoded
 *	  back, read for its header, or for what it adds to a table's state.
 *
 *	  Nothing here touches a buffer, a lock, WAL or a transaction's status:
 *	  bytes in, structs out, so that the codec can be tested and fuzzed on
 *	  its own.  A reader returns what is wrong with a record instead of
 *	  raising an error; the caller, which knows the table, block and item,
 *	  reports it as corruption.  A record's CRC32C covers its bytes but its
 *	  flags, which the commit log sets when the record's transaction ends.
 *
 *	  Records are written against their page's first record (LogBase),
 *	  which is never written against another nor changed, so any record
 *	  reads with that one alone.  Every layout the format has had is read;
 *	  why each came is in doc/DECISIONS.md, "The commit log".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_crc32c.h"
#include "utils/memutils.h"

#include "log_format.h"
#include "run_format.h"
#include "tid.h"

#define LOG_PAGE_MAGIC	0x474C4D4B	/* "KMLG" */

/* a log page's special space */
typedef struct LogPageOpaque
{
	uint32		magic;
	Oid			relfilenode;	/* the file it is a page of */
	int64		first_snapshot_id;
} LogPageOpaque;

/*
 * A record is a header, then varints: the total, delta and changelog
 * record counts; with LOG_HAS_DATA the data run's sequence number and
 * stream length; with LOG_HAS_CHANGELOG the changelog run's id and stream
 * length; the role name's length.  Then the role name, the data stream
 * and the changelog stream.  Records are unaligned on the page: read by
 * copying out.
 *
 * The header's first 8 bytes are the flags, parts, kind and producer
 * bytes and the CRC32C of every byte after them.  What follows is one of
 * three layouts, each read into LogRecordHeader:
 *
 *	- the first: the rest of LogRecordHeader as it is in memory (40 bytes
 *	  in all);
 *	- LOG_SHORT_HEADER: the commit time (8 bytes), then varints snapshot
 *	  id, full transaction id and duration in nanoseconds;
 *	- LOG_PAGE_RELATIVE (every record written but a page's first): the
 *	  commit time as a varint, microseconds from the first record's
 *	  (zigzag: a clock may go back); a role name of length 0 is the first
 *	  record's; with LOG_IDS_RELATIVE (the kind byte's high bit) the
 *	  snapshot id, transaction id, total record count and changelog run id
 *	  are varints from the first record's (zigzag; the run id from 0 when
 *	  that one has no changelog) and the duration is in microseconds.
 *
 * With LOG_SEQ_IN_STREAM the sequence number counts from the data run's
 * base (its tight stream's header).
 *
 * With LOG_CHANGELOG_REFS the changelog stream (tight, run_format.h) names
 * a data row instead of repeating it: a row's length varint 0 (a tuple is
 * never empty), then the data row's index.  With LOG_CHANGELOG_DIFFS as
 * well the index is doubled, and odd when the row only shares bytes with
 * that data row (a -U and the +U of its key): varints the bytes it shares
 * with the row's start and with its end and the length of its own bytes
 * between them follow, then those bytes.  The stream expands back exactly
 * (its own CRC32C is checked as ever).
 *
 * With LOG_BARE_RUNS the runs are kept bare: the data stream without its
 * magic number and CRC32C; the changelog stream's row count, its base
 * sequence number as a varint from the data stream's (zigzag; from 0
 * without a data run), its rows.  The reader makes each stream whole again,
 * magic number and CRC32C computed, so a run read from a record is the run
 * that was written.  LOG_RUNS_PACKED (the kind byte) says their magic
 * number is the packed one (run_pack.c).
 */
/* parts, the record's second byte */
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

#define LOG_HEADER_FIXED	(4 + sizeof(pg_crc32c))	/* what the CRC leaves out */
#define LOG_SHORT_FIXED		(LOG_HEADER_FIXED + sizeof(TimestampTz))

/* the most a record's varints take: 3 of the header, 8 of the body */
#define LOG_VARINTS_MAX		(11 * RUN_VARINT_MAX)

/* ---- pages ------------------------------------------------------------ */

void
log_format_page_init(Page page, Oid relfilenode, int64 first_snapshot_id)
{
	LogPageOpaque *o;

	PageInit(page, BLCKSZ, MAXALIGN(sizeof(LogPageOpaque)));
	o = (LogPageOpaque *) PageGetSpecialPointer(page);
	o->magic = LOG_PAGE_MAGIC;
	o->relfilenode = relfilenode;
	o->first_snapshot_id = first_snapshot_id;
}

/* is page a log page of the file relfilenode? */
bool
log_format_is_page(Page page, Oid relfilenode)
{
	LogPageOpaque *o = (LogPageOpaque *) PageGetSpecialPointer(page);

	return !PageIsNew(page) &&
		PageGetSpecialSize(page) == MAXALIGN(sizeof(LogPageOpaque)) &&
		o->magic == LOG_PAGE_MAGIC && o->relfilenode == relfilenode;
}

/* the snapshot id of a log page's first record, as it was placed */
int64
log_format_page_first_snapshot(Page page)
{
	return ((LogPageOpaque *) PageGetSpecialPointer(page))->first_snapshot_id;
}

/* a copy of a log page for another file (VACUUM FULL) */
void
log_format_page_moved(Page page, Oid relfilenode)
{
	((LogPageOpaque *) PageGetSpecialPointer(page))->relfilenode = relfilenode;
}

/*
 * Can a record hold this commit?  Its runs must be kept in its row (no
 * pages) and the record fit a page with room to spare.
 */
bool
log_format_fits(const CommitRecord *rec)
{
	uint32		len = LOG_SHORT_FIXED + LOG_VARINTS_MAX + strlen(rec->user) +
		(rec->data ? rec->data->stream_len : 0) +
		(rec->changelog ? rec->changelog->stream_len : 0);

	return (rec->data == NULL || rec->data->in_snapshot_row) &&
		(rec->changelog == NULL || rec->changelog->in_snapshot_row) &&
		MAXALIGN(len) + sizeof(ItemIdData) <=
		BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(LogPageOpaque));
}
/* ---- writing records -------------------------------------------------- */

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
char *
log_format_encode(const CommitRecord *rec, const LogBase *base, uint32 *len)
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
/* ---- reading records -------------------------------------------------- */

/* a run of a record (kind, with its stream), as the catalog's readers form them */
static RunInfo *
record_run(Oid relfilenode, RunKind kind, int64 snapshot_id, const char *stream, uint32 len)
{
	RunInfo    *r = palloc0(sizeof(RunInfo));

	r->kind = kind;
	r->in_snapshot_row = true;
	r->created_snapshot = snapshot_id;
	r->relfilenode = relfilenode;
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
/* does the record of len bytes at item match its CRC32C, stored? */
static bool
record_crc_ok(const char *item, uint32 len, pg_crc32c stored)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, item + LOG_HEADER_FIXED, len - LOG_HEADER_FIXED);
	FIN_CRC32C(crc);
	return EQ_CRC32C(crc, stored);
}

/*
 * Is the record written against its page's first record, which its reader
 * must then pass (log_format_base)?
 */
bool
log_format_needs_base(const char *item, uint32 len)
{
	return len >= LOG_HEADER_FIXED && (((uint8) item[1]) & LOG_PAGE_RELATIVE);
}

/*
 * The header of the record of len bytes at item, in any of its layouts,
 * checked against its length; *body: where the counts start.  base: the
 * page's first record's fields, for a record written against them; NULL
 * when item is that first record.  The kind keeps its LOG_IDS_RELATIVE
 * bit.  NULL, or what is wrong.
 */
static const char *
read_header(const char *item, uint32 len, const LogBase *base,
			LogRecordHeader *h, const char **body)
{
	const char *end = item + len;
	uint8		parts;
	uint64		id;
	uint64		ns;
	uint64		zz = 0;

	if (len < LOG_SHORT_FIXED)
		return "the item is not a record";
	parts = (uint8) item[1];
	if (!(parts & (LOG_SHORT_HEADER | LOG_PAGE_RELATIVE)))
	{
		/* the first layout */
		if (len < sizeof(LogRecordHeader))
			return "the item is not a record";
		memcpy(h, item, sizeof(*h));
		*body = item + sizeof(*h);
		return NULL;
	}
	memcpy(h, item, LOG_HEADER_FIXED);
	*body = item + ((parts & LOG_PAGE_RELATIVE) ? LOG_HEADER_FIXED : LOG_SHORT_FIXED);
	if (((parts & LOG_PAGE_RELATIVE) && !run_varint_get(body, end, &zz)) ||
		!run_varint_get(body, end, &id) ||
		!run_varint_get(body, end, &h->xid) ||
		!run_varint_get(body, end, &ns))
		return "its header is cut short";
	h->snapshot_id = (int64) id;
	h->duration_ms = ns / 1e6;
	if (!(parts & LOG_PAGE_RELATIVE))
	{
		if (h->kind & LOG_IDS_RELATIVE)
			return "its ids are written against no record";
		memcpy(&h->commit_time, item + LOG_HEADER_FIXED, sizeof(TimestampTz));
		return NULL;
	}
	if (base == NULL)
		return "the page's first record is written against itself";
	Assert(base->user != NULL);
	h->commit_time = base->commit_time + run_unzigzag(zz);
	if (h->kind & LOG_IDS_RELATIVE)
	{
		h->snapshot_id = base->snapshot_id + run_unzigzag(id);
		h->xid = base->xid + (uint64) run_unzigzag(h->xid);
		h->duration_ms = ns / 1e3;
	}
	return NULL;
}

/* the record's header (read_header), for its status and visibility */
const char *
log_format_header(const char *item, uint32 len, const LogBase *base,
				  LogRecordHeader *h)
{
	const char *body;

	return read_header(item, len, base, h, &body);
}

/*
 * A page's first record's commit time, role and ids, which the others are
 * written against (its CRC checked: they depend on it).  NULL, or what is
 * wrong.
 */
const char *
log_format_base(const char *item, uint32 len, LogBase *base)
{
	const char *damaged = "the page's first record, which others are written against, is damaged";
	LogRecordHeader h;
	const char *body;
	LogBody		b;

	if (len < LOG_SHORT_FIXED ||
		(((uint8) item[1]) & LOG_PAGE_RELATIVE) ||
		(((uint8) item[2]) & LOG_IDS_RELATIVE) ||
		(!(((uint8) item[1]) & LOG_SHORT_HEADER) && len < sizeof(LogRecordHeader)))
		return "the page's first record, which others are written against, is not one";
	if (read_header(item, len, NULL, &h, &body) != NULL ||
		!record_crc_ok(item, len, h.crc) || !parse_body(&h, body, item + len, &b))
		return damaged;
	base->commit_time = h.commit_time;
	base->user = pnstrdup(b.user, b.ulen);
	base->snapshot_id = h.snapshot_id;
	base->xid = h.xid;
	base->total_record_count = (int64) b.counts[0];
	base->changelog_run_id = (h.parts & LOG_HAS_CHANGELOG) ? (int64) b.run_id : 0;
	return NULL;
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
 * The record's header and body (up to its runs), its CRC checked, its ids
 * as they are (the kind with its flags, LOG_KIND_FLAGS).  NULL, or what
 * is wrong.
 */
static const char *
read_record(const char *item, uint32 len, const LogBase *base,
			LogRecordHeader *h, LogBody *b)
{
	const char *p;
	const char *why;

	if ((why = read_header(item, len, base, h, &p)) != NULL)
		return why;
	if (!record_crc_ok(item, len, h->crc))
		return "its CRC does not match";
	if (!parse_body(h, p, item + len, b))
		return "its parts do not add up to its length";
	if (h->kind & LOG_IDS_RELATIVE)
	{
		b->counts[0] = (uint64) (base->total_record_count + run_unzigzag(b->counts[0]));
		if (h->parts & LOG_HAS_CHANGELOG)
			b->run_id = (uint64) (base->changelog_run_id + run_unzigzag(b->run_id));
	}
	if ((h->kind & ~LOG_KIND_FLAGS) > COMMIT_OVERWRITE ||
		h->producer > PK_PRODUCER_FULL_COMPACTION ||
		h->snapshot_id <= 0)
		return "its parts do not add up to its length";
	return NULL;
}

/*
 * The whole record of len bytes at item, its CRC checked, into *recp (in
 * the current memory context), its runs those of the file relfilenode;
 * base as read_header takes it.  NULL, or what is wrong.
 */
const char *
log_format_decode(const char *item, uint32 len, const LogBase *base,
				  Oid relfilenode, CommitRecord **recp)
{
	LogRecordHeader h;
	LogBody		b;
	const char *p;
	CommitRecord *rec;
	int64		seq;
	const char *data;
	uint32		dlen;
	const char *why;

	if ((why = read_record(item, len, base, &h, &b)) != NULL)
		return why;
	rec = palloc0(sizeof(CommitRecord));
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
		rec->data = record_run(relfilenode, RUN_DATA, h.snapshot_id, data, dlen);
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
		uint32		changelog_len;
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
		changelog_len = klen;

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
												REFS_DIFF : REFS_WHOLE, &changelog_len);

			if (expanded)
			{
				changelog = expanded;
				if (whole)
					whole_run_crc(expanded, changelog_len);
			}
			else
				changelog_len = klen;
		}
		else if (whole)
			whole_run_crc(whole, klen);
		rec->changelog = record_run(relfilenode, RUN_CHANGELOG, h.snapshot_id, changelog, changelog_len);
		rec->changelog->run_id = (int64) b.run_id;
	}
	*recp = rec;
	return NULL;
}

/*
 * What fold_commits takes of a record (CommitFold), its CRC checked, as
 * log_format_decode reads it but without making its runs (no copy of
 * their bytes, no changelog expanded).  NULL, or what is wrong.
 */
const char *
log_format_fold(const char *item, uint32 len, const LogBase *base, CommitFold *f)
{
	LogRecordHeader h;
	LogBody		b;
	const char *why;

	if ((why = read_record(item, len, base, &h, &b)) != NULL)
		return why;
	f->snapshot_id = h.snapshot_id;
	f->delta_record_count = (int64) b.counts[1];
	f->has_data = (h.parts & LOG_HAS_DATA) != 0;
	f->seq = f->has_data ? record_seq(&h, &b, b.user + b.ulen) : 0;
	return NULL;
}

/* set a flag of a record (its first byte, which its CRC32C leaves out) */
void
log_format_set_flag(char *item, uint8 flag)
{
	item[0] = (char) ((uint8) item[0] | flag);
}
