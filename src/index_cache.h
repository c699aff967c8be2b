/*-------------------------------------------------------------------------
 *
 * index_cache.h
 *	  The shared cache of run indexes (index_cache.c): block indexes, bloom
 *	  filters and key ranges of runs, held once for the whole server in
 *	  pkchangelog.shared_index_cache_size of shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_INDEX_CACHE_H
#define PK_INDEX_CACHE_H

#include "block_cache.h"		/* BcacheKey: an index is keyed as block 0 */

/* index_cache.c */
extern Size icache_shmem_size(void);
extern void icache_shmem_init(int tranche);
extern bool icache_enabled(void);
extern void *icache_get(const BcacheKey *key);
extern void *icache_reserve(const BcacheKey *key, Size size, Size *handle);
extern void *icache_publish(Size handle);
extern void icache_unpin_all(void);

#endif							/* PK_INDEX_CACHE_H */
