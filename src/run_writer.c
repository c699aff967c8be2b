/*-------------------------------------------------------------------------
 *
 * run_writer.c
 *	  Writes one sorted run: rows arrive in key order, are packed into
 *	  zstd-compressed data blocks with CRC32C, followed by the block index
 *	  and a bloom filter; the stream is then laid over freshly allocated
 *	  pages, each WAL-logged as a full-page image.
 *
 * The writer only produces pages and a RunInfo; making the run visible (its
 * pkchangelog.runs row) is the caller's business.  See run_format.h for the
 * layout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/xloginsert.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"

#include "run.h"
#include "tid.h"

struct RunWriter
{
	Relation	rel;
	PkTable    *table;
	int			level;
	RunKind		kind;
	bool		from_commit;
	PkCompression method;
	int			clevel;
	StringInfoData stream;		/* the whole run, header first */
	StringInfoData raw;			/* rows of the open data block */
	uint32		blk_nrows;
	uint64		blk_first_row;
	MinimalTuple blk_first_key;
	StringInfoData index;		/* index entries */
	uint32		nblocks;
	uint64		nrows;
	uint32	   *hashes;
	uint64		hashes_cap;
	uint64		min_seq;
	uint64		max_seq;
	uint64		run_seq;		/* every row's, when set (run_writer_set_seq) */
	char	   *min_key;
	uint32		blk_last_off;	/* offset in raw of the block's last row */
	MinimalTuple last_keytup;	/* key of the last closed block's last row */
};

static ZSTD_CCtx *zstd_cctx = NULL;

RunWriter *
run_writer_begin(Relation rel, PkTable *t, int level, RunKind kind,
				 bool from_commit)
{
	RunWriter  *w = palloc0(sizeof(RunWriter));
	RunHeader	hdr = {0};

	w->rel = rel;
	w->table = t;
	w->level = level;
	w->kind = kind;
	w->from_commit = from_commit;
	w->method = t->opts.compression;
	w->clevel = t->opts.compression_level;
	initStringInfo(&w->stream);
	initStringInfo(&w->raw);
	initStringInfo(&w->index);
	/* header placeholder, filled at finish */
	appendBinaryStringInfo(&w->stream, (char *) &hdr, sizeof(hdr));
	w->hashes_cap = 1024;
	w->hashes = palloc(sizeof(uint32) * w->hashes_cap);
	w->min_seq = PG_UINT64_MAX;
	return w;
}

static void
close_block(RunWriter *w)
{
	RunBlockHeader bh = {0};
	RunIndexEntry ie = {0};
	char	   *payload = w->raw.data;
	size_t		stored = w->raw.len;
	char	   *cbuf = NULL;

	if (w->blk_nrows == 0)
		return;

	/* the run's max key is the last row of its last block */
	{
		Datum		keys[INDEX_MAX_KEYS];
		RunRowHeader *last = (RunRowHeader *) (w->raw.data + w->blk_last_off);

		if (w->last_keytup)
			pfree(w->last_keytup);
		pk_row_key(w->table, RUN_ROW_TUPLE(last), keys);
		w->last_keytup = pk_key_form(w->table, keys);
	}

	/* tiny blocks (single-row commits) gain nothing from zstd but its cost */
	if (w->method == PK_COMPRESSION_ZSTD && w->raw.len >= 512)
	{
		size_t		cap = ZSTD_compressBound(w->raw.len);
		size_t		clen;

		if (zstd_cctx == NULL)
		{
			zstd_cctx = ZSTD_createCCtx();
			if (zstd_cctx == NULL)
				ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
								errmsg("out of memory creating zstd context")));
		}
		cbuf = palloc(cap);
		clen = ZSTD_compressCCtx(zstd_cctx, cbuf, cap, w->raw.data, w->raw.len, w->clevel);
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
	bh.stored_len = stored;
	bh.raw_len = w->raw.len;
	bh.nrows = w->blk_nrows;
	INIT_CRC32C(bh.crc);
	COMP_CRC32C(bh.crc, payload, stored);
	FIN_CRC32C(bh.crc);

	ie.offset = w->stream.len;
	ie.first_row = w->blk_first_row;
	ie.size = sizeof(bh) + stored;
	ie.nrows = w->blk_nrows;
	ie.keylen = w->blk_first_key->t_len;
	appendBinaryStringInfo(&w->stream, (char *) &bh, sizeof(bh));
	appendBinaryStringInfo(&w->stream, payload, stored);

	appendBinaryStringInfo(&w->index, (char *) &ie, sizeof(ie));
	appendStringInfoSpaces(&w->index, MAXALIGN(sizeof(ie)) - sizeof(ie));
	appendBinaryStringInfo(&w->index, (char *) w->blk_first_key, ie.keylen);
	appendStringInfoSpaces(&w->index, RUN_INDEX_ENTRY_SIZE(ie.keylen) -
						   MAXALIGN(sizeof(ie)) - ie.keylen);

	if (cbuf)
		pfree(cbuf);
	pfree(w->blk_first_key);
	w->blk_first_key = NULL;
	resetStringInfo(&w->raw);
	w->blk_nrows = 0;
	w->nblocks++;
}

/*
 * Add a row.  Data runs take rows in strictly ascending key order; a
 * changelog run takes records in production order (its block index and
 * bloom filter are then not used).
 */
void
run_writer_add(RunWriter *w, uint64 seq, PkRowKind kind, MinimalTuple tup,
			   const Datum *keys, uint32 hash)
{
	RunRowHeader rh = {0};
	Size		start;

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
	w->blk_nrows++;

	if (w->nrows == w->hashes_cap)
	{
		w->hashes_cap *= 2;
		w->hashes = repalloc_huge(w->hashes, sizeof(uint32) * w->hashes_cap);
	}
	w->hashes[w->nrows++] = hash;
	w->min_seq = Min(w->min_seq, seq);
	w->max_seq = Max(w->max_seq, seq);
	if (w->min_key == NULL)
		w->min_key = pk_key_text(w->table, keys);

	if (w->raw.len >= RUN_BLOCK_TARGET)
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

uint64
run_writer_nrows(RunWriter *w)
{
	return w->nrows;
}

/* bytes written so far (compressed), for splitting at target_run_size */
uint64
run_writer_stream_size(RunWriter *w)
{
	return w->stream.len + w->raw.len;
}

/*
 * Write the stream's pages.  Each page is WAL-logged as a full image while
 * its buffer is locked, so the page and its WAL record cannot disagree; the
 * run becomes reachable only when the caller inserts its catalog row, which
 * is WAL-logged after these pages.
 */
static void
write_pages(Relation rel, BlockNumber start, uint32 npages, StringInfo stream)
{
	bool		needs_wal = RelationNeedsWAL(rel);

	for (uint32 i = 0; i < npages; i++)
	{
		BlockNumber blkno = start + i;
		Buffer		buf;
		Page		page;
		Size		off = (Size) i * RUN_PAGE_PAYLOAD;
		/* pages past the stream (padding) stay empty */
		Size		n = off < stream->len ? Min(RUN_PAGE_PAYLOAD, stream->len - off) : 0;

		CHECK_FOR_INTERRUPTS();
		/* space_reserve extended the file over the run's blocks */
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK, NULL);
		page = BufferGetPage(buf);
		START_CRIT_SECTION();
		PageInit(page, BLCKSZ, 0);
		memcpy((char *) page + SizeOfPageHeaderData, stream->data + off, n);
		((PageHeader) page)->pd_lower = SizeOfPageHeaderData + n;
		MarkBufferDirty(buf);
		if (needs_wal)
			log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
}

/*
 * Finish the run: index, bloom filter and header; its place and catalog
 * row (space_reserve), then its pages.  The row is visible to others when
 * the transaction commits, by which time the pages are written.
 */
RunInfo *
run_writer_finish(RunWriter *w, int64 created_snapshot)
{
	RunInfo    *run = palloc0(sizeof(RunInfo));
	RunHeader	hdr = {0};
	RunIndexHeader ih = {0};
	RunBloomHeader bh = {0};
	uint8	   *bits;
	uint32		nbits;
	uint32		npages;
	Datum		keys[INDEX_MAX_KEYS];

	close_block(w);

	hdr.index_offset = w->stream.len;
	ih.nentries = w->nblocks;
	ih.len = w->index.len;
	INIT_CRC32C(ih.crc);
	COMP_CRC32C(ih.crc, w->index.data, w->index.len);
	FIN_CRC32C(ih.crc);
	appendBinaryStringInfo(&w->stream, (char *) &ih, sizeof(ih));
	appendBinaryStringInfo(&w->stream, w->index.data, w->index.len);

	hdr.bloom_offset = w->stream.len;
	nbits = Max(64, w->nrows * RUN_BLOOM_BITS_PER_KEY);
	nbits = (nbits + 7) & ~7;
	bits = palloc0(nbits / 8);
	for (uint64 r = 0; r < w->nrows; r++)
		for (uint32 h = 0; h < RUN_BLOOM_NHASHES; h++)
		{
			uint32		bit = run_bloom_bit(w->hashes[r], h, nbits);

			bits[bit / 8] |= 1 << (bit % 8);
		}
	bh.nbits = nbits;
	bh.nhashes = RUN_BLOOM_NHASHES;
	INIT_CRC32C(bh.crc);
	COMP_CRC32C(bh.crc, bits, nbits / 8);
	FIN_CRC32C(bh.crc);
	appendBinaryStringInfo(&w->stream, (char *) &bh, sizeof(bh));
	appendBinaryStringInfo(&w->stream, (char *) bits, nbits / 8);

	run->run_id = cat_next_run_id();
	hdr.magic = RUN_MAGIC;
	hdr.run_id = run->run_id;
	hdr.nrows = w->nrows;
	hdr.nblocks = w->nblocks;
	hdr.stream_len = w->stream.len;
	INIT_CRC32C(hdr.crc);
	COMP_CRC32C(hdr.crc, &hdr, offsetof(RunHeader, crc));
	FIN_CRC32C(hdr.crc);
	memcpy(w->stream.data, &hdr, sizeof(hdr));

	npages = (w->stream.len + RUN_PAGE_PAYLOAD - 1) / RUN_PAGE_PAYLOAD;
	/* a block per PK_ROWS_PER_PAGE rows at least: row numbers come from blocks */
	npages = Max(npages, (w->nrows + PK_ROWS_PER_PAGE - 1) / PK_ROWS_PER_PAGE);
	run->relfilenode = w->rel->rd_node.relNode;
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
	/* the RunInfo lives in the caller's context, the writer may not */
	run->min_key = w->min_key ? pstrdup(w->min_key) : NULL;
	if (w->last_keytup)
	{
		pk_key_deform(w->table, w->last_keytup, keys);
		run->max_key = pk_key_text(w->table, keys);
	}

	space_reserve(w->rel, run);
	write_pages(w->rel, run->start_block, npages, &w->stream);
	return run;
}
