/*-------------------------------------------------------------------------
 *
 * run_read.h
 *	  Reading sorted runs: block index, bloom filter, data blocks, cursors
 *	  and point lookups.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_READ_H
#define PK_RUN_READ_H

#include "access/htup.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "run_format.h"
#include "table_desc.h"

/* run_read.c */

/* a row of a run with row ids, by id (run_id_map) */
typedef struct RunIdEntry
{
	uint64		id;
	uint64		ordinal;
} RunIdEntry;

/*
 * A run's block index and bloom filter: in the server's shared index cache
 * (index_cache.c), read-only and complete, or cached per backend
 */
typedef struct RunIndex
{
	int64		run_id;
	uint32		nblocks;
	RunIndexEntry *entries;		/* nblocks of them */
	Datum	   *first_keys;		/* nblocks * nkeys, into keybytes */
	char	   *keybytes;		/* the index's entries as stored */
	Size		keybytes_len;
	Datum	   *last_key;		/* the run's last key, once run_lookup
								 * learned it; NULL until then */
	uint32		bloom_nbits;
	bool		bloom_blocked;	/* RUN_BLOOM_BLOCKED: the filter's form */
	uint8	   *bloom;			/* NULL until read (load_bloom); a shared
								 * index's is the cache's object of its own */
	uint64		bloom_offset;	/* of its RunBloomHeader in the stream */
	pg_crc32c	bloom_crc;
	uint32		lookups;		/* keys looked up in the run, bloom unread */
	bool		tight;			/* a compact run's tight form (run_format.h) */
	bool		shared;			/* in the shared index cache: never changed */
} RunIndex;

/* one decompressed data block */
typedef struct RunBlock
{
	uint32		nrows;
	uint64		first_row;		/* ordinal of rows[0] in the run */
	char	   *raw;
	uint32	   *offsets;		/* of each RunRowHeader in raw */
	uint64	   *ids;			/* each row's id (RUN_BLOCK_IDS), or NULL */
	uint64	   *ids_mem;		/* their memory, kept for reuse */
	int			pins;			/* cache: held by cursors; -1: private */
	int			shared_slot;	/* > 0: a view of block_cache.c's slot - 1 */
	Size		raw_cap;		/* allocated sizes, for reuse */
	uint32		offsets_cap;
	uint32		ids_cap;
	char	   *stored;			/* private blocks: the compressed bytes */
	Size		stored_cap;
} RunBlock;

/* a run read by keys in ascending order (run_seek) */
typedef struct RunSeeker
{
	const RunInfo *run;
	RunIndex   *idx;			/* NULL until the first key passes the filters */
	RunBlock   *block;			/* NULL until a block is read; private */
	uint32		blockno;
	uint32		row;			/* rows before it are below every key to come */
	int			listpos;		/* the caller's: its place in a list */
} RunSeeker;

/*
 * The id of row i of block b of run: its own (a table with row ids), or
 * its row number (tid.h)
 */
static inline uint64
run_block_row_id(const RunInfo *run, const RunBlock *b, uint32 i)
{
	return b->ids ? b->ids[i] : (uint64) run->row_base + b->first_row + i;
}

extern char *run_stream_read(Relation rel, const RunInfo *run, uint32 max_len,
							 uint32 *len);
extern RunIndex *run_index_get(Relation rel, PkTable *t, const RunInfo *run);
extern RunIndex *run_index_once(Relation rel, PkTable *t, const RunInfo *run);
extern uint32 run_index_find_block(PkTable *t, RunIndex *idx, const Datum *key,
								   int nprefix, bool strict);
extern RunBlock *run_block_get(Relation rel, PkTable *t, const RunInfo *run,
							   RunIndex *idx, uint32 blockno, bool private,
							   BufferAccessStrategy strategy, RunBlock *spare);
extern uint32 run_block_lower_bound(PkTable *t, RunBlock *b, const Datum *key,
									int nprefix);
extern void run_block_release(RunBlock *b);
extern void run_compact_key_range(Relation rel, PkTable *t, const RunInfo *run,
								  char **min_key, char **max_key);
extern void run_read_forget(int64 run_id, Oid relfilenode);
extern struct ZSTD_DCtx_s *run_zstd_dctx(void);
extern void run_read_forget_all(void);
extern bool run_lookup(Relation rel, PkTable *t, const RunInfo *run,
					   const Datum *key, uint32 hash, RunRowHeader **hdr,
					   uint64 *ordinal, RunBlock **pinned);
extern bool run_id_map(Relation rel, PkTable *t, const RunInfo *run,
					   const RunIdEntry **map, uint64 *n);
extern int64 run_id_map_search(const RunIdEntry *map, uint64 n, uint64 id);
extern bool run_find_id(Relation rel, PkTable *t, const RunInfo *run,
						uint64 id, uint64 *ordinal);
extern void run_seek_init(RunSeeker *s, const RunInfo *run);
extern bool run_seek(Relation rel, PkTable *t, RunSeeker *s, const Datum *key,
					 uint32 hash, RunRowHeader **hdr, uint64 *ordinal);
extern RunBlock *run_seek_block(RunSeeker *s);
extern void run_seek_end(RunSeeker *s);
extern RunRowHeader *run_row_at(Relation rel, PkTable *t, const RunInfo *run,
								uint64 ordinal, RunBlock **pinned);

#endif							/* PK_RUN_READ_H */
