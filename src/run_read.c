/*-------------------------------------------------------------------------
 *
 * run_read.c
 *	  Reads sorted runs: a run's block index and bloom filter (cached per
 *	  backend), its data blocks (CRC-checked, decompressed; cached for point
 *	  lookups in the server's shared block cache, block_cache.c, or where
 *	  that is off or a block does not fit its slots, in a bounded LRU cache
 *	  per backend; counted per table by run_read_stats.c), and point lookups
 *	  by key or by row number.  Cursors in key order are run_cursor.c's,
 *	  over the blocks read here.
 *
 * Runs are immutable and their blocks are reused only after the catalog
 * row of the run is gone, so cached copies never go stale while a snapshot
 * can see the run.  Caches are keyed by the run's relfilenode and run id:
 * run ids come from the extension's sequence and start again at 1 when
 * the extension is created again, relfilenodes are not reused while a
 * file of that name exists.  The backend's caches are emptied besides when
 * the catalog itself is another one (pkchangelog.runs has another OID), so
 * nothing of a dropped extension's tables is ever decoded for a new one;
 * the shared cache's keys name the database, the tablespace and that
 * catalog as well.
 *
 * Nothing read from a run is trusted before it is checked: every part's
 * CRC first, and no length is allocated by before its CRC matched and it
 * fits the run (run_format.h says what must hold).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/xact.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/bufmgr.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "block_cache.h"
#include "catalog.h"
#include "guc.h"
#include "index_cache.h"
#include "pg_compat.h"
#include "relcache_hub.h"
#include "run_read_stats.h"
#include "run_pack.h"
#include "run_read.h"

/* block cache capacity, bytes of decompressed blocks */
#define BLOCK_CACHE_BYTES	(32 * 1024 * 1024)
/* a bloom filter this small is read with its run's index (about 52k keys) */
#define BLOOM_EAGER_BYTES	(64 * 1024)
/* ... a larger one once a backend has looked up this many keys in the run */
#define BLOOM_LOAD_AFTER	16

typedef struct BlockKey
{
	int64		run_id;
	Oid			relfilenode;
	uint32		blockno;
} BlockKey;

typedef struct BlockCacheEntry
{
	BlockKey	key;
	RunBlock   *block;
	Size		bytes;
	dlist_node	lru;
} BlockCacheEntry;

typedef struct IndexKey
{
	int64		run_id;
	Oid			relfilenode;
	uint32		unused;			/* zero: the key is hashed as bytes */
} IndexKey;

typedef struct IndexCacheEntry
{
	IndexKey	key;
	RunIndex   *index;
	uint64		generation;		/* its memory: index_gen[generation % 2] */
	uint32		nblocks;		/* the index's (a shared one may be gone) */
	uint64		pin_epoch;		/* a shared index: pinned in the transaction
								 * of this epoch; 0: not shared */
	uint8	   *bloom;			/* a shared index's bloom filter, pinned in the
								 * transaction of bloom_epoch, or NULL */
	uint64		bloom_epoch;
	bool		ids_loaded;		/* id_map read (run_find_id) */
	uint64		nids;			/* rows in id_map; 0: ids are row numbers */
	RunIdEntry *id_map;			/* the rows by id */
} IndexCacheEntry;

/*
 * In front of the index cache's hash table, the entries last found, by a
 * hash of their key (a query probes the same few dozen runs for every key
 * it looks up, three times a 1-row update: a dynahash search per probe was
 * the most of a point lookup's time in its runs).  An entry stands only
 * while it is of the current generation, whose memory holds its index;
 * whatever removes entries from the hash table clears these too.
 */
#define INDEX_FRONT_SIZE 1024

typedef struct IndexFrontEntry
{
	IndexKey	key;
	IndexCacheEntry *entry;		/* NULL: empty */
	uint64		generation;
} IndexFrontEntry;

static IndexFrontEntry index_front[INDEX_FRONT_SIZE];

static inline IndexFrontEntry *
index_front_slot(int64 run_id, Oid relfilenode)
{
	uint64		h = (uint64) run_id ^ ((uint64) relfilenode << 32);

	/* murmur3's finalizer: every bit of the key moves the slot */
	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return &index_front[h % INDEX_FRONT_SIZE];
}

static MemoryContext reader_cxt = NULL;
static MemoryContext index_cxt = NULL;
static MemoryContext index_gen[2];	/* children of index_cxt */
static uint64 index_generation = 0;
static Size index_new_bytes = 0;	/* loaded into it, not taken from the last */
static HTAB *block_cache = NULL;
static HTAB *index_cache = NULL;
static dlist_head block_lru = DLIST_STATIC_INIT(block_lru);
static Size block_cache_bytes = 0;
static int	block_pins = 0;		/* pins held on cached blocks */
static RunBlock *shared_scratch = NULL; /* decodes blocks for the shared cache */
static ZSTD_DCtx *zstd_dctx = NULL;

/*
 * Transactions of this backend, counted from 1: the shared indexes it
 * pinned in one are given back at its end (index_cache.c)
 */
static uint64 xact_epoch = 1;

/* the backend's zstd decompression context, made on first use */
ZSTD_DCtx *
run_zstd_dctx(void)
{
	if (zstd_dctx == NULL && (zstd_dctx = ZSTD_createDCtx()) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("out of memory creating zstd context")));
	return zstd_dctx;
}

/* the OID of the pkchangelog.runs the cached runs are of, when checked */
static Oid	cache_catalog = InvalidOid;
static bool cache_catalog_checked = false;

/* empty the index cache: its hash table and generations are made again */
static void
index_cache_reset(void)
{
	memset(index_front, 0, sizeof(index_front));
	MemoryContextReset(index_cxt);
	index_cache = NULL;
	index_new_bytes = 0;
}

/* the previous generation goes: the entries in it were not used since */
static void
index_cache_next_generation(void)
{
	HASH_SEQ_STATUS status;
	IndexCacheEntry *e;

	hash_seq_init(&status, index_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		if (e->generation != index_generation)
			hash_search(index_cache, &e->key, HASH_REMOVE, NULL);
	index_generation++;
	MemoryContextReset(index_gen[index_generation % 2]);
	index_new_bytes = 0;
}

/*
 * At transaction end no cursor or lookup holds a block any more, but an
 * error may have left pins behind (a cursor's close is not reached when
 * its scan fails); clearing them lets those blocks be evicted again.  The
 * index cache is kept across transactions (indexes of immutable runs stay
 * valid), in generations: once pkchangelog.run_index_cache_size of indexes of runs
 * it did not hold were loaded into the current one, the previous one goes
 * with the entries still in it, and a new one begins.  An index used
 * since moved to the current generation when it was used (read again: no
 * pointer to it survives the transaction), so what goes are the runs
 * compaction has replaced, one per small commit, which this backend will
 * not read again.  Memory stays below two generations and what the live
 * runs' indexes take.  The hash table holds about the live runs: the run
 * list cache takes replaced runs' entries out as it sees them go
 * (run_read_forget), whereas a generation of small commits' runs is tens
 * of thousands of entries.
 */
static void
reader_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS status;
	BlockCacheEntry *e;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE && event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PARALLEL_ABORT)
		return;
	/* no cursor survives the transaction: drop pins an error left behind */
	if (bcache_enabled())
		bcache_unpin_all();
	if (icache_enabled())
		icache_unpin_all();
	xact_epoch++;
	if (block_cache && block_pins > 0)
	{
		hash_seq_init(&status, block_cache);
		while ((e = hash_seq_search(&status)) != NULL)
			e->block->pins = 0;
		block_pins = 0;
	}
	if (index_cache && index_new_bytes > (Size) pk_run_index_cache_size * 1024)
		index_cache_next_generation();
}

/* pkchangelog.runs may have been dropped (or all caches are being reset) */
static void
reader_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == cache_catalog)
		cache_catalog_checked = false;
}

/*
 * The caches live in TopMemoryContext, per backend, and are made on first
 * use: most backends never read a run.
 */
static void
reader_init(void)
{
	HASHCTL		ctl;

	if (reader_cxt)
		return;
	reader_cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge block cache",
									   ALLOCSET_DEFAULT_SIZES);
	index_cxt = AllocSetContextCreate(TopMemoryContext, "pkmerge run index cache",
									  ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(BlockKey);
	ctl.entrysize = sizeof(BlockCacheEntry);
	ctl.hcxt = reader_cxt;
	block_cache = hash_create("pkmerge block cache", 1024, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	RegisterXactCallback(reader_xact_callback, NULL);
	hub_register_relcache(reader_relcache_callback, (Datum) 0);
}

/* an unpinned block leaves the cache */
static void
drop_cached_block(BlockCacheEntry *e)
{
	dlist_delete(&e->lru);
	block_cache_bytes -= e->bytes;
	pfree(e->block->raw);
	pfree(e->block->offsets);
	if (e->block->ids_mem)
		pfree(e->block->ids_mem);
	pfree(e->block);
	hash_search(block_cache, &e->key, HASH_REMOVE, NULL);
}

/*
 * Forget what the caches hold of run run_id of relfilenode: a commit's data
 * run kept in its snapshot's row is named by the snapshot's id, which the
 * next commit takes again if this one aborts (or its prepared transaction
 * is rolled back), with other bytes; and a run compaction replaced
 * (run_list.c).  Its blocks go too, as many as its index, if cached,
 * says it has (the first one otherwise: a block is cached only with its
 * run's index, but a generation of the index cache may have ended since),
 * unless a cursor still pins one (none does at transaction end).
 */
void
run_read_forget(int64 run_id, Oid relfilenode)
{
	IndexKey	ikey;
	BlockKey	bkey;
	IndexCacheEntry *ie;
	uint32		nblocks = 1;

	if (index_cache != NULL)
	{
		memset(&ikey, 0, sizeof(ikey));
		ikey.run_id = run_id;
		ikey.relfilenode = relfilenode;
		ie = hash_search(index_cache, &ikey, HASH_FIND, NULL);
		if (ie != NULL)
		{
			nblocks = Max(ie->nblocks, 1);
			hash_search(index_cache, &ikey, HASH_REMOVE, NULL);
		}
		index_front_slot(run_id, relfilenode)->entry = NULL;
	}
	if (block_cache != NULL && block_cache_bytes > 0)
	{
		memset(&bkey, 0, sizeof(bkey));
		bkey.run_id = run_id;
		bkey.relfilenode = relfilenode;
		for (bkey.blockno = 0; bkey.blockno < nblocks; bkey.blockno++)
		{
			BlockCacheEntry *e = hash_search(block_cache, &bkey, HASH_FIND, NULL);

			if (e != NULL && e->block->pins == 0)
				drop_cached_block(e);
		}
	}
}

/* the same for every run: more of them than the caller kept track of */
void
run_read_forget_all(void)
{
	HASH_SEQ_STATUS status;
	BlockCacheEntry *e;

	if (index_cache != NULL)
		index_cache_reset();
	if (block_cache != NULL)
	{
		hash_seq_init(&status, block_cache);
		while ((e = hash_seq_search(&status)) != NULL)
			if (e->block->pins == 0)
				drop_cached_block(e);
	}
}

/*
 * Empty both caches when the catalog is not the one their runs are of
 * (DROP EXTENSION and CREATE EXTENSION: run ids start again).  No cursor
 * can be open then: dropping the extension dropped every pkmerge table,
 * which PostgreSQL refuses while a query of this backend uses it.  Pinned
 * blocks (none expected) are left to their holders.
 */
static void
reader_check_catalog(void)
{
	Oid			catalog;
	dlist_mutable_iter it;

	/* first: an invalidation while looking it up makes the next call look again */
	cache_catalog_checked = true;
	catalog = cat_runs_relid();
	if (catalog == cache_catalog)
		return;
	cache_catalog = catalog;
	dlist_foreach_modify(it, &block_lru)
	{
		BlockCacheEntry *e = dlist_container(BlockCacheEntry, lru, it.cur);

		if (e->block->pins == 0)
			drop_cached_block(e);
	}
	/* (nothing to empty before the first index: the front is zeroed memory) */
	if (index_cache != NULL)
		index_cache_reset();
}

/*
 * Every check of what was read from a run fails through here: the data is
 * damaged, not the request, so the error is ERRCODE_DATA_CORRUPTED with
 * where it was found, and the hint points to the copies that may be
 * intact.
 */
static void
corrupt(Relation rel, const RunInfo *run, const char *what, int64 where, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("corrupt %s %lld of run %lld in pkmerge table \"%s\"",
					what, (long long) where, (long long) run->run_id,
					RelationGetRelationName(rel)),
			 errdetail("%s", detail),
			 errhint("Restore the table from a backup or a physical standby.")));
}

/*
 * Copy len bytes of the run's stream from offset off into dst: from its
 * pages, or from its catalog row.
 */
static void
read_stream(Relation rel, const RunInfo *run, uint64 off, uint64 len, char *dst,
			BufferAccessStrategy strategy)
{
	if (run->stream)
	{
		if (off > run->stream_len || len > run->stream_len - off)
			corrupt(rel, run, "offset", off, "The offset lies beyond the run's bytes.");
		memcpy(dst, run->stream + off, len);
		return;
	}
	while (len > 0)
	{
		uint64		pg = off / RUN_PAGE_PAYLOAD;
		uint32		inpg = off % RUN_PAGE_PAYLOAD;
		uint32		n = Min(len, RUN_PAGE_PAYLOAD - inpg);
		Buffer		buf;
		Page		page;

		if (pg >= (uint64) run->nblocks)
			corrupt(rel, run, "offset", off, "The offset lies beyond the run's blocks.");
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, run->start_block + pg,
								 RBM_NORMAL, strategy);
		/* run pages are immutable while the run is visible: share lock for the copy */
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (((PageHeader) page)->pd_lower < SizeOfPageHeaderData + inpg + n)
		{
			UnlockReleaseBuffer(buf);
			corrupt(rel, run, "page", run->start_block + pg,
					"The page holds fewer bytes than the run's index says.");
		}
		memcpy(dst, (char *) page + SizeOfPageHeaderData + inpg, n);
		UnlockReleaseBuffer(buf);
		dst += n;
		off += n;
		len -= n;
	}
}

/*
 * The stream of a run kept in pages, into memory (for its catalog row:
 * a retired commit's delta), if it is at most max_len bytes long; its
 * parts are checked whenever they are read from there.  NULL when longer.
 */
char *
run_stream_read(Relation rel, const RunInfo *run, uint32 max_len, uint32 *len)
{
	RunHeader	hdr;
	char	   *bytes;

	read_stream(rel, run, 0, sizeof(hdr), (char *) &hdr, NULL);
	if (hdr.stream_len > max_len || hdr.stream_len < sizeof(hdr))
		return NULL;
	bytes = palloc(hdr.stream_len);
	read_stream(rel, run, 0, hdr.stream_len, bytes, NULL);
	*len = (uint32) hdr.stream_len;
	return bytes;
}

/* CRC-32C of len bytes: the checksum every part of a run carries */
static pg_crc32c
crc_of(const void *data, Size len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

/* a run of the format before this one's: said plainly, not as damage */
static void
old_format(Relation rel, const RunInfo *run)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("run %lld of pkmerge table \"%s\" has an unsupported format",
					(long long) run->run_id, RelationGetRelationName(rel)),
			 errdetail("The run was written by an earlier build of pkchangelog 0.1 (run format 1); this build reads run format 2."),
			 errhint("Read the table with the build that wrote it, and load its rows into a table created by this build.")));
}

static void load_bloom(Relation rel, const RunInfo *run, RunIndex *idx,
					   MemoryContext cxt);
static void read_bloom(Relation rel, const RunInfo *run, const RunIndex *idx,
					   uint8 *bits);
static IndexCacheEntry *index_entry(Relation rel, PkTable *t, const RunInfo *run);
static RunBlock *decode_block(Relation rel, const RunInfo *run, RunIndex *idx,
							  uint32 blockno, BufferAccessStrategy strategy,
							  MemoryContext cxt, RunBlock *reuse);
static bool run_bloom_may_contain(const RunIndex *idx, const uint8 *bloom,
								  uint32 hash);

/* the key of row row of block b, copied into cxt */
static Datum *
block_key_copy(PkTable *t, const RunBlock *b, uint32 row, MemoryContext cxt)
{
	Datum		keys[INDEX_MAX_KEYS];
	MemoryContext old;
	Datum	   *copy;

	pk_row_key(t, RUN_ROW_TUPLE((RunRowHeader *) (b->raw + b->offsets[row])), keys);
	old = MemoryContextSwitchTo(cxt);
	copy = palloc(sizeof(Datum) * t->nkeys);
	pk_key_deform(t, pk_key_form(t, keys), copy);
	MemoryContextSwitchTo(old);
	return copy;
}

/*
 * The index of a run stored compact (run_format.h): one entry for its one
 * block, whose first row gives the entry's key, and a bloom filter made
 * from its rows' keys, as the writer would have (a changelog run's lets
 * every key pass).  Only the key is kept: the block is read through the
 * block cache when a row is.
 */
static RunIndex *
load_compact_index(Relation rel, PkTable *t, const RunInfo *run, MemoryContext gen)
{
	uint32		magic;
	RunBlockHeader bh;
	RunIndex   *idx;
	RunBlock   *b;
	uint32		nbits;
	uint64		nrows;

	read_stream(rel, run, 0, sizeof(magic), (char *) &magic, NULL);
	if (magic != RUN_MAGIC_COMPACT && magic != RUN_MAGIC_TIGHT && magic != RUN_MAGIC_PACKED)
		corrupt(rel, run, "header at offset", 0, "Not a compact run's magic number.");
	if (magic == RUN_MAGIC_COMPACT)
	{
		read_stream(rel, run, sizeof(magic), sizeof(bh), (char *) &bh, NULL);
		nrows = bh.nrows;
	}
	else
		nrows = run_compact_nrows(run->stream, run->stream_len);
	if (nrows == 0 || nrows != (uint64) run->record_count)
		corrupt(rel, run, "block", 0, "The block's row count does not match the catalog.");

	idx = MemoryContextAllocZero(gen, sizeof(RunIndex));
	idx->run_id = run->run_id;
	idx->nblocks = 1;
	idx->tight = (magic != RUN_MAGIC_COMPACT);
	idx->entries = MemoryContextAllocZero(gen, sizeof(RunIndexEntry));
	/* a tight block is the whole stream, its magic number included */
	idx->entries[0].offset = idx->tight ? 0 : sizeof(magic);
	idx->entries[0].size = run->stream_len - idx->entries[0].offset;
	idx->entries[0].nrows = nrows;
	/* checks the block against the entry, its CRC and its rows */
	b = decode_block(rel, run, idx, 0, NULL, CurrentMemoryContext, NULL);
	idx->first_keys = block_key_copy(t, b, 0, gen);
	/* the one block is the last: run_lookup needs not read it for this */
	idx->last_key = block_key_copy(t, b, b->nrows - 1, gen);

	nbits = TYPEALIGN(RUN_BLOOM_BLOCK_BITS,
					  Max(RUN_BLOOM_BLOCK_BITS, b->nrows * RUN_BLOOM_BITS_PER_KEY));
	idx->bloom_nbits = nbits;
	idx->bloom_blocked = true;
	idx->bloom = MemoryContextAllocZero(gen, nbits / 8);
	if (run->kind == RUN_CHANGELOG)
		memset(idx->bloom, 0xFF, nbits / 8);
	else
	{
		for (uint32 i = 0; i < b->nrows; i++)
		{
			Datum		key[INDEX_MAX_KEYS];

			pk_row_key(t, RUN_ROW_TUPLE((RunRowHeader *) (b->raw + b->offsets[i])), key);
			run_bloom_add(idx->bloom, nbits, pk_key_hash(t, key));
		}
	}
	pfree(b->raw);
	pfree(b->offsets);
	if (b->ids_mem)
		pfree(b->ids_mem);
	pfree(b);
	return idx;
}

/*
 * Read and check a run's header, block index and (when small) bloom
 * filter, into cxt.  Each length is checked against the run header (itself
 * checked against the catalog) before anything is allocated by it.
 */
static RunIndex *
load_index(Relation rel, PkTable *t, const RunInfo *run, MemoryContext cxt)
{
	RunHeader	hdr;
	RunIndexHeader ih;
	RunBloomHeader bh;
	RunIndex   *idx;
	char	   *entries;
	uint64		off = 0;
	uint64		block_off = sizeof(RunHeader);
	uint64		first_row = 0;
	pg_crc32c	crc;
	MemoryContext old;

	if (RUN_IS_COMPACT(run))
		return load_compact_index(rel, t, run, cxt);
	read_stream(rel, run, 0, sizeof(hdr), (char *) &hdr, NULL);
	if (hdr.crc != crc_of(&hdr, offsetof(RunHeader, crc)))
		corrupt(rel, run, "header at block", run->start_block, "CRC32C mismatch.");
	if (hdr.magic == RUN_MAGIC_V1)
		old_format(rel, run);
	if (hdr.magic != RUN_MAGIC || hdr.run_id != run->run_id ||
		hdr.index_offset != (uint64) run->index_offset ||
		hdr.bloom_offset != (uint64) run->bloom_offset ||
		hdr.nrows != (uint64) run->record_count)
		corrupt(rel, run, "header at block", run->start_block,
				"The run header does not match the catalog.");
	if (hdr.index_offset < sizeof(RunHeader) ||
		hdr.bloom_offset < hdr.index_offset + sizeof(RunIndexHeader) ||
		hdr.stream_len < hdr.bloom_offset + sizeof(RunBloomHeader) ||
		(run->stream ? hdr.stream_len != run->stream_len :
		 hdr.stream_len > (uint64) run->nblocks * RUN_PAGE_PAYLOAD))
		corrupt(rel, run, "header at block", run->start_block,
				"The run's parts do not fit in its blocks.");

	/* the index: one entry per data block, up to the bloom filter */
	read_stream(rel, run, hdr.index_offset, sizeof(ih), (char *) &ih, NULL);
	if (ih.nentries != hdr.nblocks ||
		ih.len != hdr.bloom_offset - hdr.index_offset - sizeof(ih) ||
		(uint64) ih.nentries * RUN_INDEX_ENTRY_SIZE(0) > ih.len)
		corrupt(rel, run, "index at offset", hdr.index_offset,
				"The index header does not match the run header.");
	old = MemoryContextSwitchTo(cxt);
	entries = MemoryContextAllocHuge(CurrentMemoryContext, Max(ih.len, 1));
	read_stream(rel, run, hdr.index_offset + sizeof(ih), ih.len, entries, NULL);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, entries, ih.len);
	COMP_CRC32C(crc, RUN_CRC_FIELDS(&ih), RUN_CRC_FIELDS_LEN(&ih));
	FIN_CRC32C(crc);
	if (crc != ih.crc)
		corrupt(rel, run, "index at offset", hdr.index_offset, "CRC32C mismatch.");

	idx = palloc0(sizeof(RunIndex));
	idx->run_id = run->run_id;
	idx->nblocks = ih.nentries;
	idx->keybytes = entries;
	idx->keybytes_len = ih.len;
	idx->entries = MemoryContextAllocHuge(CurrentMemoryContext,
										  sizeof(RunIndexEntry) * Max(ih.nentries, 1));
	idx->first_keys = MemoryContextAllocHuge(CurrentMemoryContext,
											 sizeof(Datum) * t->nkeys * Max(ih.nentries, 1));
	for (uint32 i = 0; i < ih.nentries; i++)
	{
		RunIndexEntry *e = (RunIndexEntry *) (entries + off);
		MinimalTuple key = (MinimalTuple) ((char *) e + MAXALIGN(sizeof(RunIndexEntry)));

		if (off + MAXALIGN(sizeof(RunIndexEntry)) > ih.len ||
			off + RUN_INDEX_ENTRY_SIZE(e->keylen) > ih.len ||
			e->keylen < SizeofMinimalTupleHeader || key->t_len != e->keylen)
			corrupt(rel, run, "index at offset", hdr.index_offset, "Entry out of range.");
		/* blocks follow each other, and so do their rows: none can go missing */
		if (e->offset != block_off || e->size < sizeof(RunBlockHeader) ||
			e->size > hdr.index_offset - block_off ||
			e->first_row != first_row || e->nrows == 0 ||
			e->nrows > hdr.nrows - first_row)
			corrupt(rel, run, "index at offset", hdr.index_offset,
					psprintf("Entry %u does not continue the blocks and rows before it.", i));
		idx->entries[i] = *e;
		pk_key_deform(t, key, &idx->first_keys[i * t->nkeys]);
		block_off += e->size;
		first_row += e->nrows;
		off += RUN_INDEX_ENTRY_SIZE(e->keylen);
	}
	if (off != ih.len || block_off != hdr.index_offset || first_row != hdr.nrows)
		corrupt(rel, run, "index at offset", hdr.index_offset,
				"The index does not cover the run's blocks and rows.");

	/* the bloom filter: the rest of the stream */
	read_stream(rel, run, hdr.bloom_offset, sizeof(bh), (char *) &bh, NULL);
	if (bh.nbits == 0 ||
		bh.nbits % (bh.nhashes == RUN_BLOOM_BLOCKED ? RUN_BLOOM_BLOCK_BITS : 8) != 0 ||
		(bh.nhashes != RUN_BLOOM_BLOCKED && bh.nhashes != RUN_BLOOM_NHASHES) ||
		bh.nbits / 8 != hdr.stream_len - hdr.bloom_offset - sizeof(bh))
		corrupt(rel, run, "bloom filter at offset", hdr.bloom_offset, "Size out of range.");
	idx->bloom_nbits = bh.nbits;
	idx->bloom_blocked = (bh.nhashes == RUN_BLOOM_BLOCKED);
	idx->bloom_offset = hdr.bloom_offset;
	idx->bloom_crc = bh.crc;
	MemoryContextSwitchTo(old);
	if (bh.nbits / 8 <= BLOOM_EAGER_BYTES)
		load_bloom(rel, run, idx, cxt);
	return idx;
}

/*
 * Read and check a run's bloom filter, into cxt (the index's memory).
 */
static void
load_bloom(Relation rel, const RunInfo *run, RunIndex *idx, MemoryContext cxt)
{
	uint8	   *bits = MemoryContextAllocHuge(cxt, idx->bloom_nbits / 8);

	read_bloom(rel, run, idx, bits);
	idx->bloom = bits;
}

/* Read and check a run's bloom filter, into bits (bloom_nbits / 8 bytes) */
static void
read_bloom(Relation rel, const RunInfo *run, const RunIndex *idx, uint8 *bits)
{
	RunBloomHeader bh;
	pg_crc32c	crc;

	read_stream(rel, run, idx->bloom_offset, sizeof(bh), (char *) &bh, NULL);
	read_stream(rel, run, idx->bloom_offset + sizeof(bh), idx->bloom_nbits / 8,
				(char *) bits, NULL);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, RUN_CRC_FIELDS(&bh), RUN_CRC_FIELDS_LEN(&bh));
	COMP_CRC32C(crc, bits, idx->bloom_nbits / 8);
	FIN_CRC32C(crc);
	if (bh.crc != idx->bloom_crc || bh.nbits != idx->bloom_nbits || crc != bh.crc)
		corrupt(rel, run, "bloom filter at offset", idx->bloom_offset, "CRC32C mismatch.");
}

/* the key of run's objects in the shared index cache (kind 0 or 1) */
static void
shared_key(Relation rel, const RunInfo *run, uint32 kind, BcacheKey *key)
{
	memset(key, 0, sizeof(BcacheKey));
	key->db = MyDatabaseId;
	key->spc = LocatorTablespace(RelationLocator(rel));
	key->relfilenode = run->relfilenode;
	key->catalog = cache_catalog;
	key->run_id = run->run_id;
	key->blockno = kind;
}

#define SHARED_INDEX	0
#define SHARED_BLOOM	1

/*
 * The bloom filter of a run whose index is shared: shared too, pinned for
 * the transaction in its entry, read and checked by the first backend
 * that probes it; the backend's own if the cache has no room for it.
 */
static const uint8 *
shared_bloom(Relation rel, PkTable *t, const RunInfo *run, RunIndex *idx)
{
	IndexCacheEntry *e = index_entry(rel, t, run);
	BcacheKey	key;
	Size		handle;
	uint8	   *bits;

	if (e->bloom != NULL && (e->bloom_epoch == xact_epoch || e->bloom_epoch == 0))
		return e->bloom;
	shared_key(rel, run, SHARED_BLOOM, &key);
	if ((bits = icache_get(&key)) == NULL)
	{
		if ((bits = icache_reserve(&key, idx->bloom_nbits / 8, &handle)) != NULL)
		{
			read_bloom(rel, run, idx, bits);
			bits = icache_publish(handle);
		}
		else
		{
			/* kept with the entry for its generation (epoch 0) */
			bits = MemoryContextAllocHuge(index_gen[index_generation % 2],
										  idx->bloom_nbits / 8);
			read_bloom(rel, run, idx, bits);
			e->bloom = bits;
			e->bloom_epoch = 0;
			return bits;
		}
	}
	e->bloom = bits;
	e->bloom_epoch = xact_epoch;
	return bits;
}

/*
 * May the run hold the key of this hash?  The block index alone finds the
 * one block a key can be in, and reading that block answers too; the bloom
 * filter spares that read for keys the run lacks.  A shared index's filter
 * is read once for the server, on first use; a backend's own large filter
 * only once it has looked up BLOOM_LOAD_AFTER keys in the run: reading it
 * whole (1.2 MB for a million keys, every page of it a first touch of
 * shared memory for a new backend) costs more than a few block reads, and
 * a short session may never need it.
 */
static bool
bloom_may_contain(Relation rel, PkTable *t, const RunInfo *run, RunIndex *idx,
				  uint32 hash)
{
	if (idx->shared)
		return run_bloom_may_contain(idx, shared_bloom(rel, t, run, idx), hash);
	if (idx->bloom == NULL)
	{
		if (++idx->lookups < BLOOM_LOAD_AFTER)
			return true;
		load_bloom(rel, run, idx, index_gen[index_generation % 2]);
	}
	return run_bloom_may_contain(idx, idx->bloom, hash);
}

/*
 * A run's index in the server's shared index cache, pinned until the
 * transaction ends; built and stored there if the cache holds it not,
 * with its last key, which a shared index is never changed to learn (its
 * bloom filter is an object of its own, shared_bloom).  NULL if the cache
 * has no room for it: the index built is then *local, in *local_cxt, a
 * child of the current context.
 */
static RunIndex *
shared_index(Relation rel, PkTable *t, const RunInfo *run, RunIndex **local,
			 MemoryContext *local_cxt)
{
	BcacheKey	key;
	RunIndex   *idx;
	RunIndex   *s;
	MemoryContext tmp;
	MemoryContext old;
	MinimalTuple last = NULL;
	Size		keys_size;
	Size		handle;
	char	   *p;
	uint64		off = 0;

	*local = NULL;
	shared_key(rel, run, SHARED_INDEX, &key);
	if ((s = icache_get(&key)) != NULL)
		return s;

	tmp = AllocSetContextCreate(CurrentMemoryContext, "pkmerge run index",
								ALLOCSET_DEFAULT_SIZES);
	idx = load_index(rel, t, run, tmp);
	if (idx->nblocks > 0)
	{
		RunBlock   *b = run_block_get(rel, t, run, idx, idx->nblocks - 1, false,
									  NULL, NULL);

		idx->last_key = block_key_copy(t, b, b->nrows - 1, tmp);
		run_block_release(b);
		old = MemoryContextSwitchTo(tmp);
		last = pk_key_form(t, idx->last_key);
		MemoryContextSwitchTo(old);
	}

	/* RunIndex, entries, their bytes, first keys, last key */
	keys_size = MAXALIGN(sizeof(Datum) * t->nkeys);
	p = icache_reserve(&key,
					   MAXALIGN(sizeof(RunIndex)) +
					   MAXALIGN(sizeof(RunIndexEntry) * idx->nblocks) +
					   MAXALIGN(idx->keybytes_len) +
					   keys_size * idx->nblocks +
					   (last ? MAXALIGN(last->t_len) + keys_size : 0),
					   &handle);
	if (p == NULL)
	{
		*local = idx;
		*local_cxt = tmp;
		return NULL;
	}
	s = (RunIndex *) p;
	*s = *idx;
	s->shared = true;
	s->bloom = NULL;
	p += MAXALIGN(sizeof(RunIndex));
	s->entries = (RunIndexEntry *) p;
	memcpy(p, idx->entries, sizeof(RunIndexEntry) * idx->nblocks);
	p += MAXALIGN(sizeof(RunIndexEntry) * idx->nblocks);
	s->keybytes = p;
	memcpy(p, idx->keybytes, idx->keybytes_len);
	p += MAXALIGN(idx->keybytes_len);
	/* first keys point into the entries' bytes: deformed again from the copy */
	s->first_keys = (Datum *) p;
	for (uint32 i = 0; i < idx->nblocks; i++)
	{
		RunIndexEntry *e = (RunIndexEntry *) (s->keybytes + off);

		pk_key_deform(t, (MinimalTuple) ((char *) e + MAXALIGN(sizeof(RunIndexEntry))),
					  &s->first_keys[i * t->nkeys]);
		off += RUN_INDEX_ENTRY_SIZE(e->keylen);
	}
	p += keys_size * idx->nblocks;
	if (last)
	{
		memcpy(p, last, last->t_len);
		s->last_key = (Datum *) (p + MAXALIGN(last->t_len));
		pk_key_deform(t, (MinimalTuple) p, s->last_key);
	}
	s = icache_publish(handle);
	MemoryContextDelete(tmp);
	return s;
}

/* a backend's entry of the index cache can serve in this transaction */
static inline bool
entry_usable(const IndexCacheEntry *e)
{
	return e->generation == index_generation &&
		(e->pin_epoch == 0 || e->pin_epoch == xact_epoch);
}

/*
 * The backend's entry of a run's index.  The index is the shared cache's
 * (pinned again in each transaction that uses it: between transactions it
 * may have been evicted) for a run stored in pages, when the server has
 * that cache and it has room; otherwise the backend's own, loaded on first
 * use and again when used in a new generation of the cache (a bloom filter
 * read later goes to the current generation too: the index is in it).  A
 * run kept in its catalog row stays with the backend: it is small, and
 * named by an id that a later run of other bytes may take
 * (run_read_forget).
 */
static IndexCacheEntry *
index_entry(Relation rel, PkTable *t, const RunInfo *run)
{
	IndexCacheEntry *e;
	bool		found;
	IndexKey	key;
	RunIndex   *idx = NULL;
	RunIndex   *local = NULL;
	MemoryContext local_cxt = NULL;
	IndexFrontEntry *front;
	MemoryContext gen;

	reader_init();
	if (!cache_catalog_checked)
		reader_check_catalog();
	front = index_front_slot(run->run_id, run->relfilenode);
	if (front->entry != NULL && front->generation == index_generation &&
		front->key.run_id == run->run_id && front->key.relfilenode == run->relfilenode &&
		entry_usable(front->entry))
		return front->entry;
	if (index_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(IndexKey);
		ctl.entrysize = sizeof(IndexCacheEntry);
		ctl.hcxt = index_cxt;
		index_cache = hash_create("pkmerge run index cache", 256, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		for (int i = 0; i < 2; i++)
			index_gen[i] = AllocSetContextCreate(index_cxt, "pkmerge run index generation",
												 0, 8 * 1024, 16 * 1024);
	}
	memset(&key, 0, sizeof(key));
	key.run_id = run->run_id;
	key.relfilenode = run->relfilenode;
	e = hash_search(index_cache, &key, HASH_FIND, NULL);
	if (e == NULL || !entry_usable(e))
	{
		gen = index_gen[index_generation % 2];
		if (icache_enabled() && run->stream == NULL && IsTransactionState())
			idx = shared_index(rel, t, run, &local, &local_cxt);
		if (idx == NULL && local != NULL)
		{
			MemoryContextSetParent(local_cxt, gen);
			index_new_bytes += MemoryContextMemAllocated(local_cxt, true);
			idx = local;
		}
		else if (idx == NULL)
		{
			Size		before = MemoryContextMemAllocated(gen, false);

			idx = load_index(rel, t, run, gen);
			if (e == NULL)
				index_new_bytes += MemoryContextMemAllocated(gen, false) - before;
		}
		found = (e != NULL);
		if (!found)
			e = hash_search(index_cache, &key, HASH_ENTER, NULL);
		/* an id map is in the memory of its entry's generation */
		if (!found || e->generation != index_generation)
		{
			e->bloom = NULL;
			e->ids_loaded = false;
			e->nids = 0;
			e->id_map = NULL;
		}
		e->index = idx;
		e->nblocks = idx->nblocks;
		e->generation = index_generation;
		e->pin_epoch = idx->shared ? xact_epoch : 0;
	}
	front->key = key;
	front->entry = e;
	front->generation = index_generation;
	return e;
}

/* the block index and bloom filter of a run (index_entry) */
RunIndex *
run_index_get(Relation rel, PkTable *t, const RunInfo *run)
{
	return index_entry(rel, t, run)->index;
}

/*
 * Can the run hold a key of this hash?  False is certain (a key added sets
 * every bit its hash names), true only likely: with RUN_BLOOM_BITS_PER_KEY
 * bits per key about 1% of absent keys pass, in either form of the filter
 * (run_format.h), and a point lookup reads no block of a run its key is
 * not in the other 99% of the time.
 */
static bool
run_bloom_may_contain(const RunIndex *idx, const uint8 *bloom, uint32 hash)
{
	uint32		nbits = idx->bloom_nbits;

	if (idx->bloom_blocked)
		return run_bloom_test(bloom, nbits, hash);
	/* a filter of the earlier form: seven bits anywhere */
	for (uint32 h = 0; h < RUN_BLOOM_NHASHES; h++)
	{
		uint32		bit = run_bloom_bit(hash, h, nbits);

		if ((bloom[bit / 8] & (1 << (bit % 8))) == 0)
			return false;
	}
	return true;
}

/* room in b for a block of raw_len decoded bytes and nrows rows */
static void
block_reserve(RunBlock *b, Size raw_len, uint32 nrows, MemoryContext cxt)
{
	if (b->raw_cap < raw_len || b->raw == NULL)
	{
		if (b->raw)
			pfree(b->raw);
		b->raw_cap = Max(Max(raw_len, 1), 2 * b->raw_cap);
		b->raw = MemoryContextAllocHuge(cxt, b->raw_cap);
	}
	if (b->offsets_cap < nrows || b->offsets == NULL)
	{
		if (b->offsets)
			pfree(b->offsets);
		b->offsets_cap = Max(Max(nrows, 1), 2 * b->offsets_cap);
		b->offsets = MemoryContextAllocHuge(cxt, sizeof(uint32) * b->offsets_cap);
	}
}

/* room for nrows ids in b (RUN_BLOCK_IDS) */
static void
reserve_ids(RunBlock *b, uint32 nrows, MemoryContext cxt)
{
	if (b->ids_cap < nrows || b->ids_mem == NULL)
	{
		if (b->ids_mem)
			pfree(b->ids_mem);
		b->ids_cap = Max(Max(nrows, 1), 2 * b->ids_cap);
		b->ids_mem = MemoryContextAllocHuge(cxt, sizeof(uint64) * b->ids_cap);
	}
	b->ids = b->ids_mem;
}

static int
id_entry_cmp(const void *a, const void *b)
{
	uint64		x = ((const RunIdEntry *) a)->id;
	uint64		y = ((const RunIdEntry *) b)->id;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * The rows of run by id, read once per backend into its index cache
 * entry (e, of the current generation): every block is decoded, and their
 * ids sorted.  A run whose blocks carry no ids (written before the table
 * had row ids) has its row numbers as ids: nothing is kept.
 */
static void
load_id_map(Relation rel, PkTable *t, const RunInfo *run, IndexCacheEntry *e)
{
	MemoryContext gen = index_gen[index_generation % 2];
	Size		before = MemoryContextMemAllocated(gen, false);
	RunIdEntry *map = NULL;
	uint64		n = 0;
	RunBlock   *spare = NULL;
	RunIndex   *idx = e->index;

	for (uint32 blockno = 0; blockno < idx->nblocks; blockno++)
	{
		RunBlock   *b;

		CHECK_FOR_INTERRUPTS();
		b = decode_block(rel, run, idx, blockno, NULL, CurrentMemoryContext, spare);
		spare = b;
		if (b->ids == NULL)
			break;
		if (map == NULL)
			map = MemoryContextAllocHuge(gen, sizeof(RunIdEntry) * (Size) run->record_count);
		if (n + b->nrows > (uint64) run->record_count)
			corrupt(rel, run, "block", blockno, "The run holds more rows than its catalog row says.");
		for (uint32 i = 0; i < b->nrows; i++)
		{
			map[n].id = b->ids[i];
			map[n].ordinal = b->first_row + i;
			n++;
		}
	}
	if (spare)
	{
		if (spare->stored)
			pfree(spare->stored);
		pfree(spare->raw);
		pfree(spare->offsets);
		if (spare->ids_mem)
			pfree(spare->ids_mem);
		pfree(spare);
	}
	if (map != NULL)
		qsort(map, n, sizeof(RunIdEntry), id_entry_cmp);
	e->id_map = map;
	e->nids = n;
	e->ids_loaded = true;
	index_new_bytes += MemoryContextMemAllocated(gen, false) - before;
}

/*
 * The rows of a run with row ids by id (*map, *n entries), as this backend
 * caches them until the run's entry leaves the cache; false if the run's
 * rows have their row numbers as ids.
 */
bool
run_id_map(Relation rel, PkTable *t, const RunInfo *run, const RunIdEntry **map,
		   uint64 *n)
{
	IndexCacheEntry *e = index_entry(rel, t, run);

	if (!e->ids_loaded)
		load_id_map(rel, t, run, e);
	*map = e->id_map;
	*n = e->nids;
	return e->id_map != NULL;
}

/*
 * The ordinal of the row of run whose id (tid.h) is id, if it holds one.
 */
bool
run_find_id(Relation rel, PkTable *t, const RunInfo *run, uint64 id, uint64 *ordinal)
{
	IndexCacheEntry *e = index_entry(rel, t, run);
	int64		i;

	if (!e->ids_loaded)
		load_id_map(rel, t, run, e);
	if (e->id_map == NULL)
	{
		if (id < (uint64) run->row_base ||
			id >= (uint64) (run->row_base + run->record_count))
			return false;
		*ordinal = id - run->row_base;
		return true;
	}
	i = run_id_map_search(e->id_map, e->nids, id);
	if (i < 0)
		return false;
	*ordinal = e->id_map[i].ordinal;
	return true;
}

/* the entry of map (n entries, by id) for id, or -1 */
int64
run_id_map_search(const RunIdEntry *map, uint64 n, uint64 id)
{
	uint64		lo = 0,
				hi = n;

	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (map[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && map[lo].id == id ? (int64) lo : -1;
}

/*
 * Check a block of the usual form (stored: its header and payload, as
 * the index entry ie says) and decompress it into b; returns its
 * decoded length.
 */
static uint32
decode_stored(Relation rel, const RunInfo *run, const RunIndexEntry *ie,
			  uint32 blockno, const char *stored, RunBlock *b, MemoryContext cxt)
{
	RunBlockHeader bh;
	pg_crc32c	crc;

	memcpy(&bh, stored, sizeof(bh));
	if (bh.stored_len != ie->size - sizeof(bh) || bh.nrows != ie->nrows)
		corrupt(rel, run, "block", blockno, "The block header does not match the run's index.");
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, RUN_CRC_FIELDS(&bh), RUN_CRC_FIELDS_LEN(&bh));
	COMP_CRC32C(crc, stored + sizeof(bh), bh.stored_len);
	FIN_CRC32C(crc);
	if (crc != bh.crc)
		corrupt(rel, run, "block", blockno,
				psprintf("CRC32C mismatch: stored %08X, computed %08X.", bh.crc, crc));
	/* raw_len must agree with the payload before memory is taken for it */
	if (RUN_BLOCK_METHOD(bh.method) == PK_COMPRESSION_ZSTD)
	{
		if (ZSTD_getFrameContentSize(stored + sizeof(bh), bh.stored_len) != bh.raw_len)
			corrupt(rel, run, "block", blockno,
					"The zstd frame's size does not match the block header.");
	}
	else if (RUN_BLOCK_METHOD(bh.method) != PK_COMPRESSION_NONE)
		corrupt(rel, run, "block", blockno, "Unknown compression method.");
	else if (bh.raw_len != bh.stored_len)
		corrupt(rel, run, "block", blockno, "The block's lengths disagree.");
	/* rows of a table with row ids: a data run's, or a delta run's (was one) */
	if ((bh.method & RUN_BLOCK_IDS) && run->kind != RUN_DATA && run->kind != RUN_DELTA)
		corrupt(rel, run, "block", blockno, "The block has row ids, which only data runs have.");
	if (bh.nrows > bh.raw_len / sizeof(RunRowHeader))
		corrupt(rel, run, "block", blockno, "The block holds more rows than fit in it.");

	b->nrows = bh.nrows;
	block_reserve(b, bh.raw_len, bh.nrows, cxt);
	if (bh.method & RUN_BLOCK_IDS)
		reserve_ids(b, bh.nrows, cxt);
	else
		b->ids = NULL;
	if (RUN_BLOCK_METHOD(bh.method) == PK_COMPRESSION_ZSTD)
	{
		size_t		n;

		n = ZSTD_decompressDCtx(run_zstd_dctx(), b->raw, bh.raw_len, stored + sizeof(bh), bh.stored_len);

		if (ZSTD_isError(n) || n != bh.raw_len)
			corrupt(rel, run, "block", blockno, "zstd could not decompress it.");
	}
	else
		memcpy(b->raw, stored + sizeof(bh), bh.raw_len);
	return bh.raw_len;
}

/*
 * Check a compact run's tight form, packed or not (stored: its whole
 * stream, len bytes, of nrows rows as its index says) and expand it into
 * b as the usual form's rows; returns their length.  Every varint and
 * length is checked against the stream's end before anything is taken by
 * it, and a packed row is unpacked with the table's descriptor
 * (run_pack.c).
 */
static uint32
expand_tight(Relation rel, const RunInfo *run, const char *stored, uint32 len,
			 uint32 nrows, RunBlock *b, MemoryContext cxt)
{
	const char *end = stored + len;
	const char *p = stored + 2 * sizeof(uint32);
	const char *rows;
	pg_crc32c	crc;
	pg_crc32c	stored_crc;
	uint64		n;
	uint64		base;
	Size		raw_len = 0;
	uint32		off = 0;
	bool		packed = run_tight_packed(stored, len);
	TupleDesc	desc = RelationGetDescr(rel);

	if (len < 2 * sizeof(uint32))
		corrupt(rel, run, "block", 0, "The block is shorter than its header.");
	memcpy(&stored_crc, stored + sizeof(uint32), sizeof(stored_crc));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, p, end - p);
	FIN_CRC32C(crc);
	if (crc != stored_crc)
		corrupt(rel, run, "block", 0,
				psprintf("CRC32C mismatch: stored %08X, computed %08X.", stored_crc, crc));
	if (!run_varint_get(&p, end, &n) || n != nrows ||
		!run_varint_get(&p, end, &base) || base > RUN_MAX_SEQ)
		corrupt(rel, run, "block", 0, "The block header does not match the run's index.");

	/* the rows' decoded length, each row checked */
	rows = p;
	for (uint32 i = 0; i < nrows; i++)
	{
		uint64		delta;
		uint64		tlen;
		uint8		kind;
		uint32		ulen;

		if (!run_tight_row(&p, end, &delta, &kind, &tlen) ||
			delta > RUN_MAX_SEQ - base || kind > PK_DELETE ||
			tlen > (uint64) (end - p))
			corrupt(rel, run, "block", 0, "A row lies outside the block.");
		if (packed && !run_unpack_row(desc, p, (uint32) tlen, NULL, 0, &ulen))
			corrupt(rel, run, "block", 0, "A packed row does not unpack.");
		if (!packed)
			ulen = (uint32) tlen;
		if (ulen < offsetof(MinimalTupleData, t_bits) - MINIMAL_TUPLE_DATA_OFFSET ||
			raw_len + RUN_ROW_SIZE((Size) ulen + MINIMAL_TUPLE_DATA_OFFSET) > MaxAllocSize)
			corrupt(rel, run, "block", 0, "A row lies outside the block.");
		p += tlen;
		raw_len += RUN_ROW_SIZE(ulen + MINIMAL_TUPLE_DATA_OFFSET);
	}
	if (p != end)
		corrupt(rel, run, "block", 0, "The block's lengths disagree.");

	b->nrows = nrows;
	block_reserve(b, raw_len, nrows, cxt);
	p = rows;
	for (uint32 i = 0; i < nrows; i++)
	{
		RunRowHeader *rh = (RunRowHeader *) (b->raw + off);
		MinimalTuple tup = RUN_ROW_TUPLE(rh);
		uint64		delta = 0;
		uint64		tlen = 0;
		uint8		kind = 0;
		uint32		ulen = 0;

		(void) run_tight_row(&p, end, &delta, &kind, &tlen);
		rh->seq_kind = RUN_ROW_MAKE(base + delta, kind);
		memset(tup, 0, MINIMAL_TUPLE_DATA_OFFSET);
		if (packed)
			(void) run_unpack_row(desc, p, (uint32) tlen,
								  (char *) tup + MINIMAL_TUPLE_DATA_OFFSET,
								  PG_UINT32_MAX, &ulen);
		else
		{
			ulen = (uint32) tlen;
			memcpy((char *) tup + MINIMAL_TUPLE_DATA_OFFSET, p, tlen);
		}
		tup->t_len = ulen + MINIMAL_TUPLE_DATA_OFFSET;
		p += tlen;
		off += RUN_ROW_SIZE(tup->t_len);
	}
	return (uint32) raw_len;
}

/*
 * Read, check and decode one data block into memory of cxt.
 */
static RunBlock *
decode_block(Relation rel, const RunInfo *run, RunIndex *idx, uint32 blockno,
			 BufferAccessStrategy strategy, MemoryContext cxt, RunBlock *reuse)
{
	RunIndexEntry *ie = &idx->entries[blockno];
	char	   *stored;
	RunBlock   *b;
	uint32		raw_len;
	uint32		off = 0;

	/* a sequential reader's buffers are reused from block to block */
	b = reuse ? reuse : MemoryContextAllocZero(cxt, sizeof(RunBlock));
	if (b->stored_cap < ie->size)
	{
		if (b->stored)
			pfree(b->stored);
		b->stored_cap = Max(ie->size, 2 * b->stored_cap);
		b->stored = MemoryContextAllocHuge(cxt, b->stored_cap);
	}
	stored = b->stored;
	read_stream(rel, run, ie->offset, ie->size, stored, strategy);
	if (idx->tight)
	{
		raw_len = expand_tight(rel, run, stored, ie->size, ie->nrows, b, cxt);
		b->ids = NULL;
	}
	else
		raw_len = decode_stored(rel, run, ie, blockno, stored, b, cxt);
	b->first_row = ie->first_row;
	if (reuse == NULL)
	{
		/* cached blocks keep only what they need */
		pfree(b->stored);
		b->stored = NULL;
		b->stored_cap = 0;
	}

	for (uint32 i = 0; i < b->nrows; i++)
	{
		RunRowHeader *rh = (RunRowHeader *) (b->raw + off);

		if (off + sizeof(RunRowHeader) + sizeof(uint32) > raw_len ||
			off + RUN_ROW_SIZE(RUN_ROW_TUPLE(rh)->t_len) > raw_len ||
			RUN_ROW_KIND(rh) > PK_DELETE)
			corrupt(rel, run, "block", blockno, "A row lies outside the block.");
		b->offsets[i] = off;
		off += RUN_ROW_SIZE(RUN_ROW_TUPLE(rh)->t_len);
	}
	if (b->ids)
	{
		/* the rows' ids follow them, to the payload's end */
		const char *p = b->raw + off;
		const char *end = b->raw + raw_len;
		uint64		id = 0;

		for (uint32 i = 0; i < b->nrows; i++)
		{
			uint64		delta;

			if (!run_varint_get(&p, end, &delta))
				corrupt(rel, run, "block", blockno, "A row's id lies outside the block.");
			id += (uint64) run_unzigzag(delta);
			b->ids[i] = id;
		}
		if (p != end)
			corrupt(rel, run, "block", blockno, "The block's lengths disagree.");
	}
	return b;
}

/*
 * Make room for need bytes by dropping the least recently used blocks.
 * Pinned blocks are skipped, not waited for: a cursor or a lookup holds
 * them, and the cache may exceed its size until they are released, which
 * bounds the excess by what the running statements hold.
 */
static void
evict_blocks(Size need)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &block_lru)
	{
		BlockCacheEntry *e = dlist_container(BlockCacheEntry, lru, it.cur);

		if (block_cache_bytes + need <= BLOCK_CACHE_BYTES)
			break;
		if (e->block->pins == 0)
			drop_cached_block(e);
	}
}

/*
 * A block in the shared cache (block_cache.c): this header, then the
 * rows' bytes, their offsets and, if the block has them, their ids.
 */
typedef struct SharedBlockHeader
{
	uint64		first_row;
	uint32		nrows;
	uint32		raw_len;		/* the rows' bytes */
	bool		has_ids;
} SharedBlockHeader;

/* a block of the shared cache, pinned, as a RunBlock of the transaction's */
static RunBlock *
shared_view(const char *data, int slot)
{
	const SharedBlockHeader *h = (const SharedBlockHeader *) data;
	const char *p = data + MAXALIGN(sizeof(SharedBlockHeader));
	RunBlock   *b = MemoryContextAllocZero(TopTransactionContext, sizeof(RunBlock));

	b->nrows = h->nrows;
	b->first_row = h->first_row;
	b->raw = (char *) p;
	p += MAXALIGN(h->raw_len);
	b->offsets = (uint32 *) p;
	p += MAXALIGN(sizeof(uint32) * h->nrows);
	b->ids = h->has_ids ? (uint64 *) p : NULL;
	b->pins = 1;
	b->shared_slot = slot + 1;
	return b;
}

/*
 * Store a decoded block in the shared cache; NULL if it does not fit a
 * slot or no slot is free.
 */
static RunBlock *
shared_store(const BcacheKey *key, const RunBlock *b)
{
	SharedBlockHeader h;
	BcachePiece pieces[4];
	int			n = 0;
	const char *data;
	int			slot;

	memset(&h, 0, sizeof(h));
	h.first_row = b->first_row;
	h.nrows = b->nrows;
	if (b->nrows > 0)
	{
		RunRowHeader *last = (RunRowHeader *) (b->raw + b->offsets[b->nrows - 1]);

		h.raw_len = b->offsets[b->nrows - 1] + RUN_ROW_SIZE(RUN_ROW_TUPLE(last)->t_len);
	}
	h.has_ids = b->ids != NULL;
	pieces[n++] = (BcachePiece) {&h, sizeof(h)};
	pieces[n++] = (BcachePiece) {b->raw, h.raw_len};
	pieces[n++] = (BcachePiece) {b->offsets, sizeof(uint32) * b->nrows};
	if (b->ids)
		pieces[n++] = (BcachePiece) {b->ids, sizeof(uint64) * b->nrows};
	if (bcache_stored_size(pieces, n) > BCACHE_LARGE_SLOT_SIZE)
		return NULL;
	data = bcache_put(key, pieces, n, &slot);
	return data ? shared_view(data, slot) : NULL;
}

/*
 * A data block, pinned.  A private block (cursors: sequential reads) is
 * the caller's own, decoded into spare's memory if given, and bypasses the
 * caches; otherwise (point lookups) it comes from and goes to the shared
 * block cache, or the backend's if the shared one has no room for it (or
 * the server none).  Release with run_block_release.
 */
RunBlock *
run_block_get(Relation rel, PkTable *t, const RunInfo *run, RunIndex *idx,
			  uint32 blockno, bool private, BufferAccessStrategy strategy,
			  RunBlock *spare)
{
	BlockKey	key;
	BcacheKey	skey;
	bool		shared = bcache_enabled() && TopTransactionContext != NULL;
	BlockCacheEntry *e;
	bool		found;
	RunBlock   *b;

	reader_init();
	if (blockno >= idx->nblocks)
		corrupt(rel, run, "block number", blockno, "The block lies beyond the run's block index.");
	if (private)
	{
		b = decode_block(rel, run, idx, blockno, strategy, CurrentMemoryContext, spare);
		b->pins = -1;			/* private */
		return b;
	}

	if (shared)
	{
		const char *data;
		int			slot;

		memset(&skey, 0, sizeof(skey));
		skey.db = MyDatabaseId;
		skey.spc = LocatorTablespace(RelationLocator(rel));
		skey.relfilenode = run->relfilenode;
		skey.catalog = cache_catalog;
		skey.run_id = run->run_id;
		skey.blockno = blockno;
		if ((data = bcache_get(&skey, &slot)) != NULL)
		{
			readstats_count(RelationGetRelid(rel), true);
			return shared_view(data, slot);
		}
	}
	memset(&key, 0, sizeof(key));
	key.run_id = run->run_id;
	key.relfilenode = run->relfilenode;
	key.blockno = blockno;
	e = block_cache_bytes > 0 ? hash_search(block_cache, &key, HASH_FIND, NULL) : NULL;
	if (e)
	{
		readstats_count(RelationGetRelid(rel), true);
		dlist_move_tail(&block_lru, &e->lru);
		e->block->pins++;
		block_pins++;
		return e->block;
	}
	readstats_count(RelationGetRelid(rel), false);
	if (shared)
	{
		RunBlock   *view;

		/* decoded into the backend's scratch block, kept from miss to miss */
		shared_scratch = decode_block(rel, run, idx, blockno, NULL, reader_cxt,
									  shared_scratch);
		if ((view = shared_store(&skey, shared_scratch)) != NULL)
			return view;
		/* too large for a slot, or none free: the scratch block is cached here */
		b = shared_scratch;
		shared_scratch = NULL;
		if (b->stored)
			pfree(b->stored);
		b->stored = NULL;
		b->stored_cap = 0;
	}
	else
		b = decode_block(rel, run, idx, blockno, NULL, reader_cxt, NULL);
	e = hash_search(block_cache, &key, HASH_ENTER, &found);
	e->block = b;
	e->bytes = GetMemoryChunkSpace(b->raw) + GetMemoryChunkSpace(b->offsets) +
		(b->ids_mem ? GetMemoryChunkSpace(b->ids_mem) : 0);
	evict_blocks(e->bytes);
	block_cache_bytes += e->bytes;
	dlist_push_tail(&block_lru, &e->lru);
	b->pins = 1;
	block_pins++;
	return b;
}

/*
 * Give back a block run_block_get returned.  A private block is freed at
 * once (a sequential scan would otherwise fill memory with blocks it never
 * reads again); a cached one only loses its pin and stays for later
 * lookups until evict_blocks (or the shared cache's sweep) needs its room.
 */
void
run_block_release(RunBlock *b)
{
	if (b == NULL)
		return;
	if (b->shared_slot > 0)
	{
		bcache_unpin(b->shared_slot - 1);
		pfree(b);
	}
	else if (b->pins < 0)
	{
		if (b->stored)
			pfree(b->stored);
		pfree(b->raw);
		pfree(b->offsets);
		if (b->ids_mem)
			pfree(b->ids_mem);
		pfree(b);
	}
	else if (b->pins > 0)
	{
		b->pins--;
		block_pins--;
	}
}

/*
 * A compact run's index for one pass over the run, made in
 * CurrentMemoryContext instead of the index cache, whose current
 * generation only a transaction's end lets go: a pass over a backlog of
 * small commits' runs then does not hold an index per run until then.
 * Making it costs about what a cache lookup saves: the run's one block is
 * decoded, as a reader of the run decodes it anyway.
 */
RunIndex *
run_index_once(Relation rel, PkTable *t, const RunInfo *run)
{
	Assert(RUN_IS_COMPACT(run));
	reader_init();
	return load_compact_index(rel, t, run, CurrentMemoryContext);
}

/*
 * The first and last keys of a compact run (its one block), as text: its
 * catalog row may lack them (a small commit's, run_write.c).
 */
void
run_compact_key_range(Relation rel, PkTable *t, const RunInfo *run,
					  char **min_key, char **max_key)
{
	RunBlock   *b;
	Datum		keys[INDEX_MAX_KEYS];

	Assert(RUN_IS_COMPACT(run));
	/* read once, as pk_runs reads every small commit's: not cached */
	b = run_block_get(rel, t, run, run_index_once(rel, t, run), 0, true, NULL, NULL);
	pk_row_key(t, RUN_ROW_TUPLE((RunRowHeader *) (b->raw + b->offsets[0])), keys);
	*min_key = pk_key_text(t, keys);
	pk_row_key(t, RUN_ROW_TUPLE((RunRowHeader *) (b->raw + b->offsets[b->nrows - 1])),
			   keys);
	*max_key = pk_key_text(t, keys);
	run_block_release(b);
}

/*
 * The last block whose first key is <= key (strict: < key), comparing the
 * first nprefix key columns; 0 when key precedes them all.  A seek by a
 * prefix must be strict: rows equal in the prefix may start in the block
 * before the first block that begins with it.
 */
uint32
run_index_find_block(PkTable *t, RunIndex *idx, const Datum *key, int nprefix,
					 bool strict)
{
	uint32		lo = 0,
				hi = idx->nblocks;

	/* invariant: blocks < lo start before key; blocks >= hi do not */
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;
		int			c = pk_key_cmp_n(t, &idx->first_keys[mid * t->nkeys], key, nprefix);

		if (strict ? c < 0 : c <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

/* first row from row lo on whose key prefix is >= key (nrows if none) */
static uint32
lower_bound_from(PkTable *t, RunBlock *b, const Datum *key, int nprefix, uint32 lo)
{
	uint32		hi = b->nrows;
	Datum		rowkey[INDEX_MAX_KEYS];

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;
		RunRowHeader *rh = (RunRowHeader *) (b->raw + b->offsets[mid]);

		pk_row_key(t, RUN_ROW_TUPLE(rh), rowkey);
		if (pk_key_cmp_n(t, rowkey, key, nprefix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* first row of a block whose key prefix is >= key (nrows if none) */
uint32
run_block_lower_bound(PkTable *t, RunBlock *b, const Datum *key, int nprefix)
{
	return lower_bound_from(t, b, key, nprefix, 0);
}

/*
 * Find key in a run: key filter (a small run's), the run's key range,
 * bloom filter, then the one block that can hold it.  The range goes
 * first: a table loaded in one statement is many runs of disjoint keys,
 * where a key is in one run's range and each other run's bloom filter
 * costs cache misses for nothing (43 runs of a 20M-row load: most of a
 * lookup's time).  A run's last key is learned from its last block
 * (through the block cache) the first time the run is probed, unless
 * loading a compact run's index, which decodes its one block, found it.
 * On success the row's block stays pinned in *pinned.
 */
bool
run_lookup(Relation rel, PkTable *t, const RunInfo *run, const Datum *key,
		   uint32 hash, RunRowHeader **hdr, uint64 *ordinal, RunBlock **pinned)
{
	RunIndex   *idx;
	uint32		blockno;
	RunBlock   *b;
	uint32		row;

	*pinned = NULL;
	if (!run_key_filter_may_contain(run, hash))
		return false;
	idx = run_index_get(rel, t, run);
	if (idx->nblocks == 0 || pk_key_cmp(t, &idx->first_keys[0], key) > 0)
		return false;
	if (idx->last_key == NULL)
	{
		/* learned once, into the index's memory (a shared one has it) */
		Assert(!idx->shared);
		b = run_block_get(rel, t, run, idx, idx->nblocks - 1, false, NULL, NULL);
		if (b->nrows > 0)
			idx->last_key = block_key_copy(t, b, b->nrows - 1, GetMemoryChunkContext(idx));
		run_block_release(b);
	}
	if ((idx->last_key != NULL && pk_key_cmp(t, idx->last_key, key) < 0) ||
		!bloom_may_contain(rel, t, run, idx, hash))
		return false;
	blockno = run_index_find_block(t, idx, key, t->nkeys, false);
	b = run_block_get(rel, t, run, idx, blockno, false, NULL, NULL);
	row = run_block_lower_bound(t, b, key, t->nkeys);
	if (row < b->nrows)
	{
		Datum		rowkey[INDEX_MAX_KEYS];
		RunRowHeader *rh = (RunRowHeader *) (b->raw + b->offsets[row]);

		pk_row_key(t, RUN_ROW_TUPLE(rh), rowkey);
		if (pk_key_cmp(t, rowkey, key) == 0)
		{
			*hdr = rh;
			*ordinal = b->first_row + row;
			*pinned = b;
			return true;
		}
	}
	run_block_release(b);
	return false;
}

/*
 * A run read by keys in ascending order (run_seek): the bulk form of
 * run_lookup, for a commit that looks up each key it writes.  The block of
 * the last key sought stays decoded, and the next key is looked for from
 * the row after it: a key in the same block costs a compare or a few, not
 * a search of the block index, a block cache lookup and a binary search of
 * the block.  The seeker's block is its own (private, bypassing the block
 * cache, which a bulk pass would flush), reused from block to block.
 */
void
run_seek_init(RunSeeker *s, const RunInfo *run)
{
	memset(s, 0, sizeof(RunSeeker));
	s->run = run;
}

/*
 * Find key in the seeker's run, key greater than every key sought before.
 * On success *hdr is the row, valid until the next run_seek or
 * run_seek_end.
 */
bool
run_seek(Relation rel, PkTable *t, RunSeeker *s, const Datum *key, uint32 hash,
		 RunRowHeader **hdr, uint64 *ordinal)
{
	RunBlock   *b;
	uint32		lo;
	Datum		rowkey[INDEX_MAX_KEYS];

	if (!run_key_filter_may_contain(s->run, hash))
		return false;
	if (s->idx == NULL)
		s->idx = run_index_get(rel, t, s->run);
	if (s->idx->nblocks == 0)
		return false;
	/*
	 * Another block: the one the key would be in, if not this one, and if
	 * the bloom filter lets it hold the key (in the block already read, the
	 * rows answer at less than a probe of the filter costs)
	 */
	if (s->block == NULL ||
		(s->blockno + 1 < s->idx->nblocks &&
		 pk_key_cmp(t, &s->idx->first_keys[(s->blockno + 1) * t->nkeys], key) <= 0))
	{
		uint32		blockno;

		if (!bloom_may_contain(rel, t, s->run, s->idx, hash))
			return false;
		blockno = run_index_find_block(t, s->idx, key, t->nkeys, false);

		if (pk_key_cmp(t, &s->idx->first_keys[blockno * t->nkeys], key) > 0)
			return false;		/* before the run's first key */
		s->block = run_block_get(rel, t, s->run, s->idx, blockno, true, NULL, s->block);
		s->blockno = blockno;
		s->row = 0;
	}
	b = s->block;

	/* the first row >= key, from the last one found: the next, mostly */
	lo = s->row;
	for (int probes = 0; lo < b->nrows; probes++)
	{
		if (probes == 4)
		{
			lo = lower_bound_from(t, b, key, t->nkeys, lo);
			break;
		}
		pk_row_key(t, RUN_ROW_TUPLE((RunRowHeader *) (b->raw + b->offsets[lo])), rowkey);
		if (pk_key_cmp(t, rowkey, key) >= 0)
			break;
		lo++;
	}
	s->row = lo;
	if (lo == b->nrows)
		return false;
	*hdr = (RunRowHeader *) (b->raw + b->offsets[lo]);
	pk_row_key(t, RUN_ROW_TUPLE(*hdr), rowkey);
	if (pk_key_cmp(t, rowkey, key) != 0)
		return false;
	*ordinal = b->first_row + lo;
	return true;
}

/* the block a seeker's last row is in (run_seek) */
RunBlock *
run_seek_block(RunSeeker *s)
{
	return s->block;
}

void
run_seek_end(RunSeeker *s)
{
	run_block_release(s->block);
	s->block = NULL;
}

/*
 * The row with the given ordinal in the run; its block stays pinned.
 */
RunRowHeader *
run_row_at(Relation rel, PkTable *t, const RunInfo *run, uint64 ordinal,
		   RunBlock **pinned)
{
	RunIndex   *idx = run_index_get(rel, t, run);
	uint32		lo = 0,
				hi = idx->nblocks;
	RunBlock   *b;

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (idx->entries[mid].first_row <= ordinal)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ordinal >= idx->entries[lo - 1].first_row + idx->entries[lo - 1].nrows)
	{
		*pinned = NULL;
		return NULL;
	}
	b = run_block_get(rel, t, run, idx, lo - 1, false, NULL, NULL);
	*pinned = b;
	return (RunRowHeader *) (b->raw + b->offsets[ordinal - b->first_row]);
}
