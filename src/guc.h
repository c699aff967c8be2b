/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The extension's configuration parameters (pkchangelog.*).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_GUC_H
#define PK_GUC_H

/* guc.c */
extern bool pk_worker_enabled;
extern bool pk_default_worker_enabled;
extern bool pk_group_commit;
extern int	pk_worker_naptime;
extern int	pk_worker_request_delay;
extern int	pk_run_index_cache_size;
extern int	pk_run_memory_limit;
extern int	pk_block_cache_size;
extern int	pk_shared_index_cache_size;
extern int	pk_wal_rmgr_id;

/* pkchangelog.wal_rmgr_id's default: a custom id no listed extension uses */
#define PK_WAL_RMGR_ID_DEFAULT	172
extern void pk_guc_init(void);

#endif							/* PK_GUC_H */
