/*-------------------------------------------------------------------------
 *
 * run_format.h
 *	  A sorted run: its on-disk format, shared by run_write.c (which writes
 *	  it) and run_read.c (which reads it), and RunInfo, the descriptor of
 *	  one run that the catalog keeps and every layer passes around.
 *
 * A run occupies the contiguous blocks [start_block, start_block + nblocks)
 * of the relation's main fork, or, if small and never addressed by TIDs
 * (a changelog run, a retained commit's delta), no block: its catalog
 * row holds the stream (RunInfo.stream, nblocks 0).  Each block is a standard page (PageInit,
 * no items) whose bytes after the page header carry the next
 * RUN_PAGE_PAYLOAD bytes of the run's *stream*:
 *
 *   stream offset 0     RunHeader
 *                       data block 0 ... data block n-1
 *   index_offset        RunIndexHeader, then one RunIndexEntry + first key
 *                       (a key-only MinimalTuple, MAXALIGNed) per data block
 *   bloom_offset        RunBloomHeader, then the filter's bits
 *
 * A data block is a RunBlockHeader followed by its payload, compressed or
 * not as the header says.  Decompressed, the payload is nrows records,
 * each a RunRowHeader followed by the row as a MinimalTuple, MAXALIGNed, so
 * rows are read in place.  Rows are in primary-key order, one per key.
 *
 * Every part carries a CRC32C that covers its header's other fields as
 * well as its bytes, so a bit flip anywhere is reported, never decoded,
 * and no length is trusted (nothing is allocated by it) before its CRC
 * matched.  The parts must also fit together: the index has one entry per
 * data block of the run header, the entries' blocks follow each other
 * from the end of the RunHeader to index_offset and their rows number
 * 0 .. nrows - 1 without a gap, nrows is the catalog's record_count, and
 * each part ends where the next begins.  A lost block can thus never pass
 * as a shorter run.
 *
 *   page:  [PageHeaderData | stream bytes ... (pd_lower) | unused]
 *
 * Format 2 (RUN_MAGIC "KMRGRUN2").  Format 1 ("KMRGRUN1", unreleased
 * builds of 0.1) left the index header and the block header's lengths out
 * of its CRCs; it is not read (run_read.c says so).
 *
 * A run kept in its catalog row with a single data block (every small
 * commit's run) may be stored compact instead: no run header, block index
 * or bloom filter, which would be most of a 1-row run's bytes and of the
 * WAL that logs its row (and, at wal_level = logical, every update of it):
 *
 *   stream offset 0     uint32 RUN_MAGIC_COMPACT ("KMRC")
 *                       RunBlockHeader, then its payload
 *
 * The catalog row tells it apart (index_offset and bloom_offset 0; a
 * format 2 stream's index follows its RunHeader); its row says what the
 * header would (run id, nrows).  The reader makes the one-entry index
 * and the bloom filter from the block when it loads the run.
 *
 * A compact run whose block is not compressed (every 1-row commit's) is
 * stored tight instead, without the alignment and the fixed-width
 * fields that a block read in place needs, which were half of a 1-row
 * run's bytes:
 *
 *   stream offset 0     uint32 RUN_MAGIC_TIGHT ("KMRT")
 *                       uint32 CRC32C of every byte after it
 *                       varint nrows, varint base_seq
 *                       per row: varint seq - base_seq, uint8 PkRowKind,
 *                       varint len, then len bytes: the row's MinimalTuple
 *                       from t_infomask2 on (its t_len is len +
 *                       MINIMAL_TUPLE_DATA_OFFSET)
 *
 * A tight stream whose rows all pack (run_pack.c) is stored packed:
 * RUN_MAGIC_PACKED ("KMRP") instead, and each row's len bytes are its
 * tuple packed: without alignment padding, its header's fields and its
 * small integers as varints.
 *
 * (varint: unsigned LEB128.)  The reader expands the block into the form
 * above (run_read.c); every compact form is read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_FORMAT_H
#define PK_RUN_FORMAT_H

#include "access/htup_details.h"
#include "port/pg_crc32c.h"
#include "storage/block.h"
#include "storage/bufpage.h"

#define RUN_PAGE_PAYLOAD	(BLCKSZ - SizeOfPageHeaderData)
#define RUN_MAGIC			UINT64CONST(0x324E555247524D4B)	/* "KMRGRUN2" */
#define RUN_MAGIC_V1		UINT64CONST(0x314E555247524D4B)	/* "KMRGRUN1" */
#define RUN_MAGIC_COMPACT	0x43524D4B	/* "KMRC" */
#define RUN_MAGIC_TIGHT		0x54524D4B	/* "KMRT" */
#define RUN_MAGIC_PACKED	0x50524D4B	/* "KMRP" */

/* a run stored compact (in its catalog row, one data block) */
#define RUN_IS_COMPACT(run) ((run)->stream != NULL && (run)->index_offset == 0)

/*
 * Runs whose stream is at most this long may live in their catalog row
 * (below the size at which the row would be TOASTed).
 */
#define RUN_INLINE_MAX		1536

/*
 * A data block closes when its decompressed rows reach this size: a point
 * lookup that misses the block cache decompresses one, and at 8 kB (a heap
 * page's worth of rows) it costs half what 16 kB blocks did, for runs about
 * 3% larger and scans as fast (DECISIONS).
 */
#define RUN_BLOCK_TARGET	(8 * 1024)

/*
 * and a changelog run's block at this size: changelog runs are read in
 * order, never probed for a key, so a larger block costs no lookup its
 * decompression, and zstd compresses 64 kB in three quarters of the time
 * it takes for four blocks of 16 kB (its per-call setup), a little smaller
 */
#define RUN_CHANGELOG_BLOCK_TARGET (64 * 1024)

/* RowKind of a record (DESIGN §1) */
typedef enum PkRowKind
{
	PK_INSERT = 0,				/* +I */
	PK_UPDATE_BEFORE = 1,		/* -U */
	PK_UPDATE_AFTER = 2,		/* +U */
	PK_DELETE = 3				/* -D */
} PkRowKind;

/* +I and +U add a row; -U and -D retract one (tombstones in data runs) */
#define PK_KIND_IS_ADD(k)	((k) == PK_INSERT || (k) == PK_UPDATE_AFTER)

typedef struct RunHeader
{
	uint64		magic;
	int64		run_id;
	uint64		nrows;
	uint64		index_offset;
	uint64		bloom_offset;
	uint64		stream_len;
	uint32		nblocks;		/* data blocks */
	pg_crc32c	crc;			/* of the fields above */
} RunHeader;

/*
 * A data block of a table with row ids (tid.h) carries each row's id after
 * its rows, in the decompressed payload: nrows varints, each the zigzag
 * delta of its row's id from the row before's (the first's from 0).  Its
 * header's method then has RUN_BLOCK_IDS set.  A block with ids is never
 * stored tight.
 */
#define RUN_BLOCK_IDS		0x100
#define RUN_NO_ID			PG_UINT64_MAX	/* a row without one */
#define RUN_BLOCK_METHOD(m) ((m) & ~RUN_BLOCK_IDS)

typedef struct RunBlockHeader
{
	pg_crc32c	crc;			/* of the fields below, then the stored payload */
	uint32		stored_len;		/* payload bytes that follow */
	uint32		raw_len;		/* decompressed */
	uint32		nrows;
	uint32		method;			/* PkCompression, | RUN_BLOCK_IDS */
} RunBlockHeader;

/*
 * A row's header: its sequence number (commit order; the highest wins a
 * key) in the high 56 bits, its PkRowKind in the low 8.  The MinimalTuple
 * follows at once (8 bytes keep it aligned) and carries its own length.
 */
typedef struct RunRowHeader
{
	uint64		seq_kind;
} RunRowHeader;

#define RUN_ROW_SEQ(hdr)	((hdr)->seq_kind >> 8)
#define RUN_ROW_KIND(hdr)	((uint8) ((hdr)->seq_kind & 0xFF))
#define RUN_ROW_MAKE(seq, kind) (((uint64) (seq) << 8) | (uint8) (kind))
#define RUN_MAX_SEQ			(PG_UINT64_MAX >> 8)
#define RUN_ROW_SIZE(tuplen) MAXALIGN(sizeof(RunRowHeader) + (tuplen))
#define RUN_ROW_TUPLE(hdr)	((MinimalTuple) ((char *) (hdr) + sizeof(RunRowHeader)))

StaticAssertDecl(sizeof(RunRowHeader) == MAXIMUM_ALIGNOF,
				 "a row's tuple must follow its header aligned");

/* the longest varint: a uint64 in 7-bit groups */
#define RUN_VARINT_MAX		10

/* append v as a varint at p; returns the byte after it */
static inline char *
run_varint_put(char *p, uint64 v)
{
	while (v >= 0x80)
	{
		*p++ = (char) (v | 0x80);
		v >>= 7;
	}
	*p++ = (char) v;
	return p;
}

/* the bytes run_varint_put takes for v */
static inline int
run_varint_len(uint64 v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* zigzag: a signed value as an unsigned varint's, and back */
static inline uint64
run_zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
run_unzigzag(uint64 v)
{
	return (int64) ((v >> 1) ^ (~(v & 1) + 1));
}

/*
 * Read a varint at *p, which must end before end: advances *p and returns
 * true, or returns false (cut short, or longer than a uint64).
 */
static inline bool
run_varint_get(const char **p, const char *end, uint64 *v)
{
	uint64		r = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7)
	{
		uint8		b = (uint8) *(*p)++;

		r |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
		{
			*v = r;
			return true;
		}
	}
	return false;
}

/*
 * The next row of a tight stream at *p (before end): its sequence number's
 * delta from the stream's base, its kind and its tuple's length, *p moved
 * to the tuple.  False if they are cut short; the caller checks the values.
 */
static inline bool
run_tight_row(const char **p, const char *end, uint64 *delta, uint8 *kind,
			  uint64 *tlen)
{
	if (!run_varint_get(p, end, delta) || *p >= end)
		return false;
	*kind = (uint8) *(*p)++;
	return run_varint_get(p, end, tlen);
}

/*
 * The header of a tight stream (packed or not) of len bytes: its row
 * count and base sequence number, without checking its CRC; returns where
 * its rows begin, or NULL if it is not a tight stream or is cut short.
 */
static inline const char *
run_tight_header(const char *stream, uint32 len, uint64 *nrows, uint64 *base)
{
	const char *p = stream + 2 * sizeof(uint32);
	uint32		magic;

	if (len < 2 * sizeof(uint32))
		return NULL;
	memcpy(&magic, stream, sizeof(magic));
	if ((magic != RUN_MAGIC_TIGHT && magic != RUN_MAGIC_PACKED) ||
		!run_varint_get(&p, stream + len, nrows) ||
		!run_varint_get(&p, stream + len, base))
		return NULL;
	return p;
}

/* is the stream of len bytes a packed tight stream? */
static inline bool
run_tight_packed(const char *stream, uint32 len)
{
	uint32		magic = 0;

	if (len >= sizeof(uint32))
		memcpy(&magic, stream, sizeof(magic));
	return magic == RUN_MAGIC_PACKED;
}

/*
 * The row count a compact stream (either form) gives, without checking
 * it (its CRC is checked when the run is read); 0 if it is too short.
 */
static inline uint64
run_compact_nrows(const char *stream, uint32 len)
{
	uint32		magic;
	uint64		nrows = 0;
	uint64		base;

	if (len < sizeof(uint32))
		return 0;
	memcpy(&magic, stream, sizeof(magic));
	if (magic == RUN_MAGIC_TIGHT || magic == RUN_MAGIC_PACKED)
	{
		if (run_tight_header(stream, len, &nrows, &base) == NULL)
			return 0;
	}
	else if (len >= sizeof(uint32) + sizeof(RunBlockHeader))
	{
		RunBlockHeader bh;

		memcpy(&bh, stream + sizeof(uint32), sizeof(bh));
		nrows = bh.nrows;
	}
	return nrows;
}

typedef struct RunIndexHeader
{
	pg_crc32c	crc;			/* of the entries that follow, then the fields below */
	uint32		nentries;		/* the run header's nblocks */
	uint64		len;			/* bytes of entries: up to bloom_offset */
} RunIndexHeader;

typedef struct RunIndexEntry
{
	uint64		offset;			/* stream offset of the RunBlockHeader */
	uint64		first_row;		/* ordinal of its first row in the run */
	uint32		size;			/* header + stored payload */
	uint32		nrows;
	uint32		keylen;			/* the key-only MinimalTuple that follows */
} RunIndexEntry;

#define RUN_INDEX_ENTRY_SIZE(keylen) MAXALIGN(MAXALIGN(sizeof(RunIndexEntry)) + (keylen))

typedef struct RunBloomHeader
{
	pg_crc32c	crc;			/* of the fields below, then the bits */
	uint32		nbits;			/* up to stream_len: a multiple of 8, and of
								 * RUN_BLOOM_BLOCK_BITS when blocked */
	uint32		nhashes;		/* RUN_BLOOM_BLOCKED or RUN_BLOOM_NHASHES */
} RunBloomHeader;

/* the bytes of a header that its CRC covers: those after the CRC */
#define RUN_CRC_FIELDS(hdr) ((const char *) (hdr) + sizeof(pg_crc32c))
#define RUN_CRC_FIELDS_LEN(hdr) (sizeof(*(hdr)) - sizeof(pg_crc32c))

StaticAssertDecl(sizeof(RunBlockHeader) == 5 * sizeof(uint32) &&
				 sizeof(RunIndexHeader) == 16 && sizeof(RunBloomHeader) == 12,
				 "CRCs cover headers without padding bytes");

/*
 * The bloom filter, RUN_BLOOM_BITS_PER_KEY bits per key, is blocked: a
 * key's bits are all in one 64-byte block of the filter, one bit in each
 * of its eight 8-byte words, so a probe reads one cache line (and touches
 * one page of a new backend's memory) where a filter whose probes spread
 * over all its bits read seven; about 1% of absent keys pass either way.
 * Its header's nhashes says which form the filter has: RUN_BLOOM_BLOCKED,
 * or RUN_BLOOM_NHASHES for the earlier form, seven bits anywhere by double
 * hashing, which runs written before keep and readers still read.
 */
#define RUN_BLOOM_BITS_PER_KEY	10
#define RUN_BLOOM_NHASHES		7
#define RUN_BLOOM_BLOCKED		0x10008
#define RUN_BLOOM_BLOCK_BITS	512
/* nbits is a uint32: a run of more than ~429M keys has a fuller filter */
#define RUN_BLOOM_MAX_BITS		(PG_UINT32_MAX & ~(RUN_BLOOM_BLOCK_BITS - 1))

/* the earlier form's probes: double hashing on the key's 32-bit hash */
static inline uint32
run_bloom_bit(uint32 hash, uint32 i, uint32 nbits)
{
	uint32		h2 = (hash >> 17) | (hash << 15);

	return (hash + i * (h2 | 1)) % nbits;
}

/*
 * Where a blocked filter's block for a key's hash starts (a byte offset),
 * and the positions of its bits in the block's eight words: the block by
 * the hash's scaled value, the positions six bits each from a 64-bit mix
 * of it.
 */
static inline Size
run_bloom_block(uint32 nbits, uint32 hash, uint64 *positions)
{
	uint64		nblocks = nbits / RUN_BLOOM_BLOCK_BITS;
	uint64		z = (((uint64) hash << 32) | hash) ^ UINT64CONST(0x9e3779b97f4a7c15);

	/* splitmix64's finalizer */
	z = (z ^ (z >> 30)) * UINT64CONST(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94d049bb133111eb);
	*positions = z ^ (z >> 31);
	return (Size) (((uint64) hash * nblocks) >> 32) * (RUN_BLOOM_BLOCK_BITS / 8);
}

/* set the bits of a key's hash in a blocked filter of nbits bits */
static inline void
run_bloom_add(uint8 *bits, uint32 nbits, uint32 hash)
{
	uint64		pos;
	uint8	   *block = bits + run_bloom_block(nbits, hash, &pos);

	for (int w = 0; w < 8; w++, pos >>= 6)
		block[w * 8 + (pos & 63) / 8] |= 1 << (pos & 7);
}

/* may a blocked filter hold the key of this hash?  False is certain. */
static inline bool
run_bloom_test(const uint8 *bits, uint32 nbits, uint32 hash)
{
	uint64		pos;
	const uint8 *block = bits + run_bloom_block(nbits, hash, &pos);

	for (int w = 0; w < 8; w++, pos >>= 6)
	{
		if ((block[w * 8 + (pos & 63) / 8] & (1 << (pos & 7))) == 0)
			return false;
	}
	return true;
}

typedef enum RunKind
{
	RUN_DATA,					/* read by queries */
	RUN_CHANGELOG,				/* RowKind records of one snapshot */
	RUN_DELTA,					/* a compacted commit's data, kept for "none" */
	RUN_LOG						/* a page of commit log records (commit_log.c) */
} RunKind;

/*
 * A run as the catalog describes it (a row of pkchangelog.runs): where its
 * blocks are, where its parts start, what it holds.
 */
typedef struct RunInfo
{
	int64		run_id;
	Oid			relfilenode;
	int32		level;
	RunKind		kind;
	bool		from_commit;	/* written by a commit, not by compaction */
	BlockNumber start_block;
	int32		nblocks;
	int64		record_count;
	int64		size_bytes;
	int64		row_base;		/* first row number (TIDs) */
	int64		min_seq;
	int64		max_seq;
	int64		index_offset;
	int64		bloom_offset;
	int64		created_snapshot;
	char	   *min_key;
	char	   *max_key;
	char	   *stream;			/* kept in its catalog row: the whole stream */
	uint32		stream_len;
	bool		in_snapshot_row;	/* that row is its snapshot's (a commit's
									 * changelog run, catalog 0.8) */
	uint64		key_filter;		/* a small data run's keys (run_key_filter_bits),
								 * as its writer made it; 0: not known */
	/*
	 * min_key and max_key as integers, for a table keyed by one integer
	 * column (lookup.c): read from them when first needed.
	 */
	int8		int_range;		/* 0: not read yet; 1: read; -1: not integers */
	int64		int_min;
	int64		int_max;
} RunInfo;

/*
 * The key filter of a data run of at most RUN_KEY_FILTER_MAX_ROWS rows: a
 * 64-bit bloom filter of its keys' hashes, three bits a key, kept in its
 * RunInfo only (its writer makes it, and commits publish it with the run's
 * row, run_list.c; a run read from the catalog has none).  A point lookup
 * passes over the runs of other backends' small commits with it, without
 * loading their indexes.  False positives: about 1 in 10,000 keys for a
 * 1-row run, 1 in 20 for an 8-row one.  A run's keys set at least one bit,
 * so 0 means "not known", never "no key".
 */
#define RUN_KEY_FILTER_MAX_ROWS	8

static inline uint64
run_key_filter_bits(uint32 hash)
{
	return (UINT64CONST(1) << (hash & 63)) |
		(UINT64CONST(1) << ((hash >> 6) & 63)) |
		(UINT64CONST(1) << ((hash >> 12) & 63));
}

/* can run hold a key of this hash, by its key filter? */
static inline bool
run_key_filter_may_contain(const RunInfo *run, uint32 hash)
{
	uint64		bits = run_key_filter_bits(hash);

	return run->key_filter == 0 || (run->key_filter & bits) == bits;
}

#endif							/* PK_RUN_FORMAT_H */
