/*-------------------------------------------------------------------------
 *
 * run_read_stats.h
 *	  Per-table counters of the point-lookup block cache, summed over the
 *	  server's backends in shared memory (pk_stats' lookup_cache_*).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_READ_STATS_H
#define PK_RUN_READ_STATS_H

/* run_read_stats.c */
extern Size readstats_shmem_size(void);
extern void readstats_shmem_init(int tranche);
extern void readstats_init(void);
extern void readstats_count(Oid relid, bool hit);
extern void readstats_get(Oid relid, int64 *hits, int64 *misses);

#endif							/* PK_RUN_READ_STATS_H */
