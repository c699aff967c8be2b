/*-------------------------------------------------------------------------
 *
 * run_cache_stats.h
 *	  Per-table counters of the point-lookup block cache, summed over the
 *	  server's backends in shared memory (pk_stats' lookup_cache_*).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_CACHE_STATS_H
#define PK_RUN_CACHE_STATS_H

/* run_cache_stats.c */
extern Size cachestats_shmem_size(void);
extern void cachestats_shmem_init(int tranche);
extern void cachestats_init(void);
extern void cachestats_count(Oid relid, bool hit);
extern void cachestats_get(Oid relid, int64 *hits, int64 *misses);

#endif							/* PK_RUN_CACHE_STATS_H */
