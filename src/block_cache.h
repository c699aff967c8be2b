/*-------------------------------------------------------------------------
 *
 * block_cache.h
 *	  The shared cache of decompressed data blocks (block_cache.c): the
 *	  blocks point lookups read, held once for the whole server in
 *	  pkchangelog.block_cache_size of shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_BLOCK_CACHE_H
#define PK_BLOCK_CACHE_H

/*
 * What names a block's bytes for the server's lifetime (run_read.c says
 * why no key is ever reused for other bytes).  Hashed as bytes: zero it
 * before filling it in.
 */
typedef struct BcacheKey
{
	Oid			db;
	Oid			spc;
	Oid			relfilenode;
	Oid			catalog;		/* pkchangelog.runs: run ids restart with it */
	int64		run_id;
	uint32		blockno;
	uint32		unused;
} BcacheKey;

/* one piece of what a block is stored as (bcache_put copies them in order) */
typedef struct BcachePiece
{
	const void *data;
	Size		len;			/* each piece starts MAXALIGNed */
} BcachePiece;

/*
 * Slots come in two sizes: most blocks (8 kB of rows) take a small one; a
 * block of wide rows, or of a run written when blocks held 16 kB of rows,
 * a large one, an eighth of the cache's memory.  Larger blocks are not
 * shared.
 */
#define BCACHE_SLOT_SIZE	(12 * 1024)
#define BCACHE_LARGE_SLOT_SIZE	(24 * 1024)

/* block_cache.c */
extern Size bcache_shmem_size(void);
extern void bcache_shmem_init(int tranche);
extern bool bcache_enabled(void);
extern Size bcache_stored_size(const BcachePiece *pieces, int npieces);
extern const char *bcache_get(const BcacheKey *key, int *slot);
extern const char *bcache_put(const BcacheKey *key, const BcachePiece *pieces,
							  int npieces, int *slot);
extern void bcache_unpin(int slot);
extern void bcache_unpin_all(void);

#endif							/* PK_BLOCK_CACHE_H */
