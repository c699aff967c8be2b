/*-------------------------------------------------------------------------
 *
 * run_write.c
 *	  Writes one sorted run: rows arrive in key order, are packed into
 *	  zstd-compressed data blocks with CRC32C, followed by the block index
 *	  and a bloom filter; the stream is then laid over freshly allocated
 *	  pages, each WAL-logged, or, when it is small, kept in the run's
 *	  catalog row.  See run_format.h for the layout.
 *
 *	  This file owns a run's bytes and their writing; where the blocks go
 *	  is run_space.c's, the pages' WAL records run_wal.c's, and what the
 *	  run means for the table (a data run, a changelog) the caller's.
 *
 *	  A run of any size is written in bounded memory: its place can only
 *	  be chosen once its size is known, so the stream is built first (in a
 *	  temporary file past pkchangelog.run_memory_limit), then copied into
 *	  its pages.  Its catalog row, inserted when the blocks are chosen,
 *	  reserves them at once and becomes visible with the writing
 *	  transaction's commit, by when the pages are written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/xlog.h"
#include "catalog.h"
#include "catalog_runs.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "run_pack.h"
#include "run_space.h"
#include "run_wal.h"
#include "storage/buffile.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"

#include "guc.h"
#include "pg_compat.h"
#include "run_write.h"
#include "tid.h"

/*
 * A byte stream kept in memory up to pkchangelog.run_memory_limit, then
 * (all of it) in a temporary file; appended to, then read once from the
 * start.  The file is closed when the run is finished, or by the resource
 * owner when an error ends the transaction first.  A writer has three:
 * the stream, the block index and the keys' hashes (for the bloom filter).
 * Past their limits, what stays in memory is one data block and, at the
 * end, the bloom filter (10 bits per key, at most 512 MB).
 */
typedef struct Spool
{
	MemoryContext cxt;			/* the writer's */
	char	   *mem;
	Size		len;			/* bytes in mem */
	Size		cap;
	BufFile    *file;			/* every byte, once they outgrew mem */
	uint64		total;			/* bytes appended */
	uint64		pos;			/* bytes read */
} Spool;

struct RunWriter
{
	Relation	rel;
	PkTable    *table;
	int			level;
	RunKind		kind;
	bool		from_commit;
	PkCompression method;
	int			clevel;
	Spool		stream;			/* the run: a RunHeader's room, data blocks ... */
	StringInfoData raw;			/* rows of the open data block */
	StringInfoData ids;			/* and their ids (RUN_BLOCK_IDS), if any */
	uint64		blk_last_id;	/* the id of the block's last row */
	bool		has_ids;		/* its rows have ids */
	uint32		blk_nrows;
	uint64		blk_first_row;
	MinimalTuple blk_first_key;
	Spool		index;			/* index entries */
	pg_crc32c	index_crc;		/* of the entries so far */
	uint32		nblocks;
	uint64		nrows;
	Spool		hashes;			/* uint32 per row (data runs: the bloom filter's) */
	uint64		key_filter;		/* of the first RUN_KEY_FILTER_MAX_ROWS rows */
	uint64		min_seq;
	uint64		max_seq;
	uint64		run_seq;		/* every row's, when set (run_writer_set_seq) */
	MinimalTuple first_keytup;	/* key of the run's first row */
	uint32		blk_last_off;	/* offset in raw of the block's last row */
	MinimalTuple last_keytup;	/* key of the last closed block's last row */
	bool		inline_ok;		/* a small data run may go in its row */
	bool		snapshot_row_ok;	/* a small run: in its snapshot's row */
	int64		run_id;			/* drawn by the caller (0: at finish) */
	List	   *live;			/* the table's live data runs, then */
};

static ZSTD_CCtx *zstd_cctx = NULL;

/* the backend's zstd compression context, made on first use */
static ZSTD_CCtx *
cctx(void)
{
	if (zstd_cctx == NULL && (zstd_cctx = ZSTD_createCCtx()) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("out of memory creating zstd context")));
	return zstd_cctx;
}

/* bytes a spool may keep in memory */
static Size
spool_limit(void)
{
	return Min((Size) pk_run_memory_limit * 1024, MaxAllocSize);
}

static void
spool_init(Spool *s, Size initial)
{
	memset(s, 0, sizeof(Spool));
	s->cxt = CurrentMemoryContext;
	s->cap = Min(initial, spool_limit());
	s->mem = palloc(s->cap);
}

static void
spool_append(Spool *s, const void *data, Size len)
{
	Size		limit = spool_limit();

	s->total += len;
	if (s->file == NULL && s->len + len <= s->cap)
	{
		memcpy(s->mem + s->len, data, len);
		s->len += len;
		return;
	}
	if (s->file == NULL && s->len + len <= limit)
	{
		s->cap = Min(Max(2 * s->cap, s->len + len), limit);
		s->mem = repalloc(s->mem, s->cap);
		memcpy(s->mem + s->len, data, len);
		s->len += len;
		return;
	}
	if (s->file == NULL)
	{
		/* too big for memory: everything goes to a temporary file */
		MemoryContext old = MemoryContextSwitchTo(s->cxt);

		s->file = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
		BufFileWrite(s->file, s->mem, s->len);
		pfree(s->mem);
		s->mem = NULL;
		s->len = s->cap = 0;
	}
	BufFileWrite(s->file, unconstify(void *, data), len);
}

static void
spool_rewind(Spool *s)
{
	s->pos = 0;
	if (s->file && BufFileSeek(s->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file of a pkmerge run: %m")));
}

/*
 * The next n bytes: in place in memory, or read from the file into buf
 * (n bytes at least).
 */
static const char *
spool_read(Spool *s, Size n, char *buf)
{
	const char *p = buf;

	Assert(s->pos + n <= s->total);
	if (s->file == NULL)
		p = s->mem + s->pos;
	else
	{
		size_t		got = BufFileRead(s->file, buf, n);

		if (got != n)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read a temporary file of a pkmerge run: read only %zu of %zu bytes",
							got, n)));
	}
	s->pos += n;
	return p;
}

/* append all of src to dst */
static void
spool_copy(Spool *dst, Spool *src)
{
	PGAlignedBlock buf;

	spool_rewind(src);
	if (src->file == NULL)
		spool_append(dst, src->mem, src->len);
	else
		while (src->pos < src->total)
		{
			Size		n = Min(src->total - src->pos, BLCKSZ);

			spool_append(dst, spool_read(src, n, buf.data), n);
		}
}

static void
spool_free(Spool *s)
{
	if (s->file)
		BufFileClose(s->file);
	if (s->mem)
		pfree(s->mem);
	memset(s, 0, sizeof(Spool));
}

RunWriter *
run_writer_begin(Relation rel, PkTable *t, int level, RunKind kind,
				 bool from_commit)
{
	RunWriter  *w = palloc0(sizeof(RunWriter));
	RunHeader	hdr;

	w->rel = rel;
	w->table = t;
	w->level = level;
	w->kind = kind;
	w->from_commit = from_commit;
	w->method = t->opts.compression;
	w->clevel = t->opts.compression_level;
	spool_init(&w->stream, BLCKSZ);
	initStringInfo(&w->raw);
	initStringInfo(&w->ids);
	spool_init(&w->index, 1024);
	INIT_CRC32C(w->index_crc);
	spool_init(&w->hashes, 1024);
	/* the header's room: write_pages puts it there */
	memset(&hdr, 0, sizeof(hdr));
	spool_append(&w->stream, &hdr, sizeof(hdr));
	w->min_seq = PG_UINT64_MAX;
	return w;
}

/*
 * A small data run of this writer may live in its catalog row, beside the
 * table's live data runs (live, a list of RunInfo): its row numbers then
 * come from its run id (tid.h) and must not be any of theirs.
 */
void
run_writer_allow_inline(RunWriter *w, List *live)
{
	Assert(w->kind == RUN_DATA);
	w->inline_ok = true;
	w->live = live;
}

/*
 * A small run of this writer (a commit's) may be kept in the row of its
 * snapshot rather than in a row of its own: a changelog run (catalog 0.8),
 * which lives exactly as long, or a data run allowed inline (catalog 0.9),
 * whose run id is then minus the snapshot's (a reader finds the row by
 * it).  The caller passes it to cat_snapshot_insert.
 */
void
run_writer_allow_snapshot_row(RunWriter *w)
{
	Assert(w->kind == RUN_CHANGELOG || (w->kind == RUN_DATA && w->inline_ok));
	w->snapshot_row_ok = w->kind == RUN_CHANGELOG ? cat_snapshots_hold_changelogs() :
		cat_snapshots_hold_data();
}

/*
 * Does the run go in its catalog row?  Changelog runs when small; data runs
 * when small, allowed, and the TID block their run id names is free.
 */
static bool
finish_inline(RunWriter *w, RunInfo *run)
{
	ListCell   *lc;

	if (w->stream.total > RUN_INLINE_MAX || !cat_runs_hold_streams())
		return false;
	if (w->kind == RUN_CHANGELOG)
		return true;
	if (w->kind != RUN_DATA || !w->inline_ok || w->nrows > PK_TIDS_PER_BLOCK)
		return false;
	run->row_base = pk_inline_row_base(run->run_id);
	foreach(lc, w->live)
	{
		if (((RunInfo *) lfirst(lc))->row_base == run->row_base)
		{
			run->row_base = 0;
			return false;
		}
	}
	return true;
}

/*
 * Does a commit's data run go in its snapshot's row
 * (run_writer_allow_snapshot_row)?  When compact and the TID block that
 * minus the snapshot's id names is free (finish_inline); it then has that
 * run id.
 */
static bool
finish_data_in_snapshot_row(RunWriter *w, RunInfo *run, int64 created_snapshot)
{
	if (w->kind != RUN_DATA || !w->snapshot_row_ok || created_snapshot <= 0 ||
		w->nblocks != 1)
		return false;
	run->run_id = -created_snapshot;
	return finish_inline(w, run);
}

static void
close_block(RunWriter *w)
{
	RunBlockHeader bh;
	RunIndexEntry *ie;
	Size		iesize;
	char	   *payload;
	size_t		stored;
	char	   *cbuf = NULL;

	if (w->blk_nrows == 0)
		return;
	/* the rows' ids follow them */
	if (w->ids.len > 0)
		appendBinaryStringInfo(&w->raw, w->ids.data, w->ids.len);
	payload = w->raw.data;
	stored = w->raw.len;

	/* the run's max key is the last row of its last block */
	{
		Datum		keys[INDEX_MAX_KEYS];
		RunRowHeader *last = (RunRowHeader *) (w->raw.data + w->blk_last_off);

		if (w->last_keytup)
			pfree(w->last_keytup);
		pk_row_key(w->table, RUN_ROW_TUPLE(last), keys);
		w->last_keytup = pk_key_form(w->table, keys);
	}

	memset(&bh, 0, sizeof(bh));
	bh.method = PK_COMPRESSION_NONE;
	/* tiny blocks (single-row commits) gain nothing from zstd but its cost */
	if (w->method == PK_COMPRESSION_ZSTD && w->raw.len >= 512)
	{
		size_t		cap = ZSTD_compressBound(w->raw.len);
		size_t		clen;

		/* a row may be up to 1 GB: so may its block, and more its bound */
		cbuf = MemoryContextAllocHuge(CurrentMemoryContext, cap);
		clen = ZSTD_compressCCtx(cctx(), cbuf, cap, w->raw.data, w->raw.len, w->clevel);
		if (ZSTD_isError(clen))
			elog(ERROR, "zstd compression failed: %s", ZSTD_getErrorName(clen));
		/* keep incompressible blocks as they are */
		if (clen < w->raw.len)
		{
			payload = cbuf;
			stored = clen;
			bh.method = PK_COMPRESSION_ZSTD;
		}
	}
	if (w->ids.len > 0)
		bh.method |= RUN_BLOCK_IDS;
	bh.stored_len = stored;
	bh.raw_len = w->raw.len;
	bh.nrows = w->blk_nrows;
	INIT_CRC32C(bh.crc);
	COMP_CRC32C(bh.crc, RUN_CRC_FIELDS(&bh), RUN_CRC_FIELDS_LEN(&bh));
	COMP_CRC32C(bh.crc, payload, stored);
	FIN_CRC32C(bh.crc);

	/* the entry, zero-padded (its CRC covers the padding too) */
	iesize = RUN_INDEX_ENTRY_SIZE(w->blk_first_key->t_len);
	ie = palloc0(iesize);
	ie->offset = w->stream.total;
	ie->first_row = w->blk_first_row;
	ie->size = sizeof(bh) + stored;
	ie->nrows = w->blk_nrows;
	ie->keylen = w->blk_first_key->t_len;
	memcpy((char *) ie + MAXALIGN(sizeof(RunIndexEntry)), w->blk_first_key, ie->keylen);
	spool_append(&w->stream, &bh, sizeof(bh));
	spool_append(&w->stream, payload, stored);
	spool_append(&w->index, ie, iesize);
	COMP_CRC32C(w->index_crc, ie, iesize);

	pfree(ie);
	if (cbuf)
		pfree(cbuf);
	pfree(w->blk_first_key);
	w->blk_first_key = NULL;
	resetStringInfo(&w->raw);
	resetStringInfo(&w->ids);
	w->blk_last_id = 0;
	w->blk_nrows = 0;
	w->nblocks++;
}

/*
 * Add a row.  Data runs take rows in strictly ascending key order; a
 * changelog run takes records in production order (its block index and
 * bloom filter are then not used).  id: the row's id (tid.h), for a data
 * run of a table with row ids; RUN_NO_ID for every row of any other run.
 */
void
run_writer_add(RunWriter *w, uint64 seq, PkRowKind kind, MinimalTuple tup,
			   const Datum *keys, uint32 hash, uint64 id)
{
	RunRowHeader rh = {0};
	Size		start;

	/* a block is one allocation: a row near 1 GB starts a block of its own */
	if (w->blk_nrows > 0 && w->raw.len + RUN_ROW_SIZE(tup->t_len) > MaxAllocSize)
		close_block(w);
	if (w->blk_nrows == 0)
	{
		w->blk_first_row = w->nrows;
		w->blk_first_key = pk_key_form(w->table, keys);
	}
	Assert(seq <= RUN_MAX_SEQ);
	rh.seq_kind = RUN_ROW_MAKE(seq, kind);
	start = w->raw.len;
	w->blk_last_off = start;
	appendBinaryStringInfo(&w->raw, (char *) &rh, sizeof(rh));
	appendBinaryStringInfo(&w->raw, (char *) tup, tup->t_len);
	appendStringInfoSpaces(&w->raw, RUN_ROW_SIZE(tup->t_len) - (w->raw.len - start));

	/*
	 * A tuple read back from a tuplestore's file (a spilled TRUNCATE, a
	 * spilled write buffer) leaves its header padding unset; the block is
	 * compressed, checksummed and WAL-logged, so every byte must be defined.
	 */
	memset(w->raw.data + start + sizeof(rh) + offsetof(MinimalTupleData, mt_padding),
		   0, MINIMAL_TUPLE_PADDING);
	w->blk_nrows++;
	Assert((id != RUN_NO_ID) == (w->ids.len > 0 || w->blk_nrows == 1));
	if (id != RUN_NO_ID)
	{
		char		buf[RUN_VARINT_MAX];
		char	   *end = run_varint_put(buf, run_zigzag((int64) (id - w->blk_last_id)));

		appendBinaryStringInfo(&w->ids, buf, end - buf);
		w->blk_last_id = id;
		w->has_ids = true;
	}

	/* changelog runs are read in order, never probed: no filters */
	if (w->kind != RUN_CHANGELOG)
	{
		spool_append(&w->hashes, &hash, sizeof(hash));
		if (w->nrows < RUN_KEY_FILTER_MAX_ROWS)
			w->key_filter |= run_key_filter_bits(hash);
	}
	w->nrows++;
	w->min_seq = Min(w->min_seq, seq);
	w->max_seq = Max(w->max_seq, seq);
	if (w->first_keytup == NULL)
		w->first_keytup = pk_key_form(w->table, keys);

	if (w->raw.len >= (w->kind == RUN_CHANGELOG ? RUN_CHANGELOG_BLOCK_TARGET : RUN_BLOCK_TARGET))
		close_block(w);
}

/*
 * One sequence number for every row, kept in the run's catalog row
 * (run_row_seq): the per-row ones are then not read as sequence numbers.
 */
void
run_writer_set_seq(RunWriter *w, uint64 seq)
{
	w->run_seq = seq;
}

/*
 * The run's id, drawn by the caller beforehand (a commit draws its
 * changelog run's before the commit lock, which a sequence's own lock and
 * page would otherwise lengthen); not for a data run a snapshot's row may
 * keep, whose id is minus the snapshot's.
 */
void
run_writer_set_run_id(RunWriter *w, int64 run_id)
{
	Assert(w->kind != RUN_DATA);
	w->run_id = run_id;
}

uint64
run_writer_nrows(RunWriter *w)
{
	return w->nrows;
}

/* bytes written so far (compressed), for splitting at target_run_size */
uint64
run_writer_stream_size(RunWriter *w)
{
	return w->stream.total + w->raw.len;
}

/*
 * pw: the WAL record's data for a page whose payload is len bytes at
 * payload (run_wal.c): with wal_compression on (any method), compressed
 * again at RUN_WAL_ZSTD_LEVEL, as PostgreSQL then compresses its page
 * images; as it is when off, or if that does not shrink it.  The payload's
 * blocks are zstd at the table's compression_level, by default -1, which
 * stores literals without Huffman coding for faster reads; level 1
 * entropy-codes them, the trade of CPU for WAL bytes that wal_compression
 * chooses.  Outside a critical section: compressing may allocate.
 */
static void
page_wal_data(RunPageWal *pw, const char *payload, Size len)
{
	size_t		clen = 0;

	pw->payload_len = (uint16) len;
	pw->compressed = false;
	if (len > 0 && wal_compression != WAL_COMPRESSION_NONE)
	{
		/* at most len - 1 bytes: else the payload is stored as it is */
		clen = ZSTD_compressCCtx(cctx(), pw->data.data, len - 1, payload, len,
								 RUN_WAL_ZSTD_LEVEL);
		pw->compressed = !ZSTD_isError(clen);
	}
	if (pw->compressed)
		pw->stored_len = (uint16) clen;
	else
	{
		memcpy(pw->data.data, payload, len);
		pw->stored_len = (uint16) len;
	}
}

/*
 * Write the stream's pages, the run header at its start.  Each page is
 * WAL-logged (run_wal.c) while its buffer is locked, so the page and its
 * WAL record cannot disagree.  The run's catalog row, inserted just before
 * to reserve the blocks, becomes visible only with the transaction's
 * commit record, which comes after these pages' records in WAL.
 */
static void
write_pages(Relation rel, BlockNumber start, uint32 npages, Spool *stream,
			const RunHeader *hdr)
{
	bool		needs_wal = RelationNeedsWAL(rel);
	PGAlignedBlock buf;
	PGAlignedBlock payload;
	RunPageWal *wal = needs_wal ? palloc(sizeof(RunPageWal)) : NULL;

	spool_rewind(stream);
	for (uint32 i = 0; i < npages; i++)
	{
		BlockNumber blkno = start + i;
		Buffer		buffer;
		Page		page;
		/* pages past the stream (padding) stay empty */
		Size		n = Min(RUN_PAGE_PAYLOAD, stream->total - stream->pos);

		CHECK_FOR_INTERRUPTS();
		/*
		 * The page's payload and its WAL record's data, before the buffer is
		 * locked: reading the file or compressing may fail
		 */
		memcpy(payload.data, spool_read(stream, n, buf.data), n);
		if (i == 0)
			memcpy(payload.data, hdr, sizeof(RunHeader));
		if (needs_wal)
			page_wal_data(wal, payload.data, n);
		/*
		 * space_reserve extended the file over the run's blocks, and its row
		 * keeps any other writer off them: the zeroed page is ours alone
		 */
		buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK, NULL);
		page = BufferGetPage(buffer);
		/* the change and its record as one: an error in between PANICs */
		START_CRIT_SECTION();
		PageInit(page, BLCKSZ, 0);
		memcpy((char *) page + SizeOfPageHeaderData, payload.data, n);
		((PageHeader) page)->pd_lower = SizeOfPageHeaderData + n;
		MarkBufferDirty(buffer);
		if (needs_wal)
			run_wal_log_page(buffer, wal);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buffer);
	}
}

/*
 * The bloom filter of a data run, from the hashes of its keys (blocked,
 * run_format.h); a changelog run gets the smallest filter, every bit set
 * (it is never probed).
 */
static void
append_bloom(RunWriter *w)
{
	RunBloomHeader bh;
	uint64		nbits;
	uint8	   *bits;

	nbits = w->kind == RUN_CHANGELOG ? 64 :
		TYPEALIGN64(RUN_BLOOM_BLOCK_BITS,
					Min(Max((uint64) RUN_BLOOM_BLOCK_BITS,
							w->nrows * RUN_BLOOM_BITS_PER_KEY),
						RUN_BLOOM_MAX_BITS));
	bits = palloc0(nbits / 8);
	if (w->kind == RUN_CHANGELOG)
		memset(bits, 0xFF, nbits / 8);
	else
	{
		PGAlignedBlock buf;

		spool_rewind(&w->hashes);
		while (w->hashes.pos < w->hashes.total)
		{
			Size		n = Min(w->hashes.total - w->hashes.pos, BLCKSZ);
			const uint32 *hashes = (const uint32 *) spool_read(&w->hashes, n, buf.data);

			for (Size r = 0; r < n / sizeof(uint32); r++)
				run_bloom_add(bits, (uint32) nbits, hashes[r]);
		}
	}
	memset(&bh, 0, sizeof(bh));
	bh.nbits = (uint32) nbits;
	/* the filter no probe reads keeps the earlier form's 8 bytes */
	bh.nhashes = w->kind == RUN_CHANGELOG ? RUN_BLOOM_NHASHES : RUN_BLOOM_BLOCKED;
	INIT_CRC32C(bh.crc);
	COMP_CRC32C(bh.crc, RUN_CRC_FIELDS(&bh), RUN_CRC_FIELDS_LEN(&bh));
	COMP_CRC32C(bh.crc, bits, nbits / 8);
	FIN_CRC32C(bh.crc);
	spool_append(&w->stream, &bh, sizeof(bh));
	spool_append(&w->stream, bits, nbits / 8);
	pfree(bits);
}

/*
 * The tight form (run_format.h) of an uncompressed block of nrows rows
 * (raw, raw_len bytes), in a new stream of *len bytes: packed if every row
 * packs (run_pack.c) with desc, the table's descriptor.
 */
static char *
tight_stream(TupleDesc desc, const char *raw, uint32 raw_len, uint32 nrows, uint32 *len)
{
	/* the rows packed, each with its length first */
	Size		packed_max = raw_len + (Size) nrows * (RUN_VARINT_MAX + RUN_PACK_MAX(0));
	char	   *packed = palloc(packed_max);
	char	   *q = packed;
	Size		tight_len = 0;
	char	   *out;
	char	   *p;
	uint32		magic = RUN_MAGIC_PACKED;
	uint64		base = RUN_MAX_SEQ;
	uint32		off;
	pg_crc32c	crc;

	off = 0;
	for (uint32 i = 0; i < nrows; i++)
	{
		RunRowHeader *rh = (RunRowHeader *) (raw + off);
		MinimalTuple tup = RUN_ROW_TUPLE(rh);
		uint32		n = tup->t_len - MINIMAL_TUPLE_DATA_OFFSET;

		base = Min(base, RUN_ROW_SEQ(rh));
		tight_len += run_varint_len(n) + n;
		if (magic == RUN_MAGIC_PACKED)
		{
			char		row[RUN_VARINT_MAX];
			uint32		plen = run_pack_row(desc, (char *) tup + MINIMAL_TUPLE_DATA_OFFSET,
											n, q + RUN_VARINT_MAX);

			if (plen == 0)
				magic = RUN_MAGIC_TIGHT;
			else
			{
				uint32		hlen = (uint32) (run_varint_put(row, plen) - row);

				memmove(q + hlen, q + RUN_VARINT_MAX, plen);
				memcpy(q, row, hlen);
				q += hlen + plen;
			}
		}
		off += RUN_ROW_SIZE(tup->t_len);
	}
	/* packed only if shorter as well */
	if (magic == RUN_MAGIC_PACKED && q - packed >= tight_len)
		magic = RUN_MAGIC_TIGHT;
	/* each row's sequence number and kind, then its bytes and their length */
	out = palloc(2 * sizeof(uint32) + 2 * RUN_VARINT_MAX +
				 (Size) nrows * (RUN_VARINT_MAX + 1) + tight_len);
	p = out + 2 * sizeof(uint32);
	p = run_varint_put(p, nrows);
	p = run_varint_put(p, base);
	off = 0;
	q = packed;
	for (uint32 i = 0; i < nrows; i++)
	{
		RunRowHeader *rh = (RunRowHeader *) (raw + off);
		MinimalTuple tup = RUN_ROW_TUPLE(rh);
		uint32		n = tup->t_len - MINIMAL_TUPLE_DATA_OFFSET;
		const char *bytes = (char *) tup + MINIMAL_TUPLE_DATA_OFFSET;

		p = run_varint_put(p, RUN_ROW_SEQ(rh) - base);
		*p++ = (char) RUN_ROW_KIND(rh);
		if (magic == RUN_MAGIC_PACKED)
		{
			uint64		plen = 0;

			(void) run_varint_get((const char **) &q, packed + packed_max, &plen);
			n = (uint32) plen;
			bytes = q;
			q += n;
		}
		p = run_varint_put(p, n);
		memcpy(p, bytes, n);
		p += n;
		off += RUN_ROW_SIZE(tup->t_len);
	}
	Assert(off == raw_len);
	*len = p - out;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, out + 2 * sizeof(uint32), *len - 2 * sizeof(uint32));
	FIN_CRC32C(crc);
	memcpy(out, &magic, sizeof(magic));
	memcpy(out + sizeof(magic), &crc, sizeof(crc));
	return out;
}

/*
 * A run in its catalog row with one data block: its stream becomes a
 * compact form (run_format.h): tight if the block is not compressed, else
 * the block alone after a magic number.
 */
static void
compact_stream(TupleDesc desc, RunInfo *run, const RunHeader *hdr)
{
	uint32		magic = RUN_MAGIC_COMPACT;
	uint32		block_len = (uint32) (hdr->index_offset - sizeof(RunHeader));
	RunBlockHeader bh;

	run->index_offset = 0;
	run->bloom_offset = 0;
	memcpy(&bh, run->stream + sizeof(RunHeader), sizeof(bh));
	if (bh.method == PK_COMPRESSION_NONE)
	{
		uint32		len;
		char	   *tight = tight_stream(desc, run->stream + sizeof(RunHeader) + sizeof(bh),
										 bh.raw_len, bh.nrows, &len);

		pfree(run->stream);
		run->stream = tight;
		run->stream_len = len;
		return;
	}
	memmove(run->stream + sizeof(magic), run->stream + sizeof(RunHeader), block_len);
	memcpy(run->stream, &magic, sizeof(magic));
	run->stream_len = sizeof(magic) + block_len;
}

/*
 * Finish the run: index, bloom filter and header; its place and catalog
 * row (space_reserve), then its pages.  The row is visible to others when
 * the transaction commits, by which time the pages are written.  A small
 * run (a changelog run, or a data run allowed to: run_writer_allow_inline)
 * has no pages: its catalog row holds its bytes.  Such a data run whose
 * snapshot is not known yet (created_snapshot 0: a compaction's output) is
 * returned without its row, which the caller inserts (cat_run_insert) once
 * it knows the snapshot: there are no blocks to reserve meanwhile.
 */
RunInfo *
run_writer_finish(RunWriter *w, int64 created_snapshot)
{
	RunInfo    *run = palloc0(sizeof(RunInfo));
	RunHeader	hdr;
	RunIndexHeader ih;
	uint32		npages;
	Datum		keys[INDEX_MAX_KEYS];
	bool		data_in_snapshot_row;

	close_block(w);

	memset(&hdr, 0, sizeof(hdr));
	memset(&ih, 0, sizeof(ih));
	hdr.index_offset = w->stream.total;
	ih.nentries = w->nblocks;
	ih.len = w->index.total;
	ih.crc = w->index_crc;
	COMP_CRC32C(ih.crc, RUN_CRC_FIELDS(&ih), RUN_CRC_FIELDS_LEN(&ih));
	FIN_CRC32C(ih.crc);
	spool_append(&w->stream, &ih, sizeof(ih));
	spool_copy(&w->stream, &w->index);
	spool_free(&w->index);

	hdr.bloom_offset = w->stream.total;
	append_bloom(w);
	spool_free(&w->hashes);

	data_in_snapshot_row = finish_data_in_snapshot_row(w, run, created_snapshot);
	if (!data_in_snapshot_row)
		run->run_id = w->run_id > 0 ? w->run_id : cat_next_run_id();
	hdr.magic = RUN_MAGIC;
	hdr.run_id = run->run_id;
	hdr.nrows = w->nrows;
	hdr.nblocks = w->nblocks;
	hdr.stream_len = w->stream.total;
	INIT_CRC32C(hdr.crc);
	COMP_CRC32C(hdr.crc, &hdr, offsetof(RunHeader, crc));
	FIN_CRC32C(hdr.crc);

	npages = (w->stream.total + RUN_PAGE_PAYLOAD - 1) / RUN_PAGE_PAYLOAD;
	/* a block per PK_ROWS_PER_PAGE rows at least: row numbers come from blocks */
	npages = Max(npages, (w->nrows + PK_ROWS_PER_PAGE - 1) / PK_ROWS_PER_PAGE);
	run->relfilenode = RelationFileNumber(w->rel);
	run->level = w->level;
	run->kind = w->kind;
	run->from_commit = w->from_commit;
	run->nblocks = npages;
	run->record_count = w->nrows;
	run->size_bytes = (int64) npages * BLCKSZ;
	run->min_seq = w->run_seq ? w->run_seq : w->nrows ? w->min_seq : 0;
	run->max_seq = w->run_seq ? w->run_seq : w->nrows ? w->max_seq : 0;
	run->index_offset = hdr.index_offset;
	run->bloom_offset = hdr.bloom_offset;
	run->created_snapshot = created_snapshot;
	if (w->kind == RUN_DATA && w->nrows <= RUN_KEY_FILTER_MAX_ROWS)
		run->key_filter = w->key_filter;

	/*
	 * Its first and last keys as text (pk_runs), in the caller's context:
	 * not for a run kept in its snapshot's row, whose row would carry them
	 * in every small commit's WAL; pk_runs reads them from its block.
	 */
	if (!data_in_snapshot_row && w->first_keytup && w->last_keytup)
	{
		pk_key_deform(w->table, w->first_keytup, keys);
		run->min_key = pk_key_text(w->table, keys);
		pk_key_deform(w->table, w->last_keytup, keys);
		run->max_key = pk_key_text(w->table, keys);
	}

	if (data_in_snapshot_row || finish_inline(w, run))
	{
		/* a small run: its bytes go into its catalog row */
		const char *bytes;

		run->stream_len = (uint32) w->stream.total;
		run->stream = palloc(run->stream_len);
		spool_rewind(&w->stream);
		bytes = spool_read(&w->stream, run->stream_len, run->stream);
		if (bytes != run->stream)
			memcpy(run->stream, bytes, run->stream_len);
		memcpy(run->stream, &hdr, sizeof(RunHeader));
		if (w->nblocks == 1)
			compact_stream(RelationGetDescr(w->rel), run, &hdr);
		run->nblocks = 0;
		run->size_bytes = run->stream_len;
		if (data_in_snapshot_row ||
			(w->kind == RUN_CHANGELOG && w->snapshot_row_ok && RUN_IS_COMPACT(run)))
			run->in_snapshot_row = true;
		else if (w->kind != RUN_DATA || created_snapshot != 0)
			cat_run_insert(RelationGetRelid(w->rel), run);
	}
	else
	{
		/* the row first, under the space lock: the blocks are then ours */
		space_reserve(w->rel, run, w->kind == RUN_DATA && !w->has_ids);
		write_pages(w->rel, run->start_block, npages, &w->stream, &hdr);
	}
	spool_free(&w->stream);
	return run;
}
