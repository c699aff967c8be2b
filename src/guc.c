/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The extension's configuration parameters (pkchangelog.*).
 *
 * Parameters are defined here and read by the parts that use them; this
 * file holds no other logic.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "guc.h"


bool		pk_worker_enabled = true;
bool		pk_default_worker_enabled = true;
bool		pk_group_commit = true;
int			pk_worker_naptime = 1000;
int			pk_worker_request_delay = 20;
int			pk_run_index_cache_size = 4096;	/* kB */
int			pk_run_memory_limit = 64 * 1024;	/* kB */
int			pk_block_cache_size = 128 * 1024;	/* kB */
int			pk_shared_index_cache_size = 128 * 1024;	/* kB */
int			pk_wal_rmgr_id = PK_WAL_RMGR_ID_DEFAULT;

void
pk_guc_init(void)
{
	DefineCustomBoolVariable("pkchangelog.worker_enabled",
							 "Runs compaction, the full-compaction schedule and snapshot expiration in background workers.",
							 "Off: writers still compact at num_sorted_run_stop_trigger; pk_compact and pk_expire_snapshots do the rest.",
							 &pk_worker_enabled, true, PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("pkchangelog.default_worker_enabled",
							 "Sets the table option worker_enabled of pkmerge tables created without it.",
							 "Off: a new table is created with worker_enabled = false, which the background worker leaves alone (as default_tablespace, it is stored with the table at CREATE TABLE).",
							 &pk_default_worker_enabled, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("pkchangelog.group_commit",
							 "Lets the commits of one pkmerge table share WAL flushes.",
							 "On: a transaction that wrote pkmerge tables releases their commit locks once its commit record is written and is visible to other sessions from then on; COMMIT still returns after the WAL flush, and pk_changes, pk_consume and pk_current_snapshot wait for it. Off: such a transaction becomes visible after its flush, and commits of one table flush one at a time.",
							 &pk_group_commit, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.worker_naptime",
							"Time between two rounds of a pkchangelog background worker over its database's tables.",
							NULL,
							&pk_worker_naptime, 1000, 10, 3600 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.worker_request_delay",
							"Time a pkchangelog background worker waits after compacting what writers asked for before it serves their next requests.",
							"Requests that come meanwhile are served together: fewer, larger compactions. 0 serves each as it comes. Writers still compact themselves at num_sorted_run_stop_trigger.",
							&pk_worker_request_delay, 20, 0, 10000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.run_memory_limit",
							"Memory a run being written keeps its stream, block index and key hashes in before it moves them to a temporary file.",
							"A developer setting: tests lower it to write small runs through temporary files.",
							&pk_run_memory_limit, 64 * 1024, 64, 1024 * 1024, PGC_USERSET,
							GUC_UNIT_KB | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.run_index_cache_size",
							"Run indexes a backend loads before it frees those of the runs it has not read since it last reached this size.",
							"A backend caches the block indexes and bloom filters that pkchangelog.shared_index_cache_size does not hold (small commits' runs, and every run with that setting at 0); runs that compaction replaced (one per small commit) are not read again. A backend keeps about twice this size, besides the indexes of the runs it reads.",
							&pk_run_index_cache_size, 4096, 64, 1024 * 1024, PGC_USERSET,
							GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.block_cache_size",
							"Shared memory that holds decompressed data blocks of pkmerge tables for every backend's point lookups.",
							"A key lookup decompresses the block that holds the key once for the whole server while the block stays here. 0: each backend caches 32MB of blocks of its own instead.",
							&pk_block_cache_size, 128 * 1024, 0, MAX_KILOBYTES, PGC_POSTMASTER,
							GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.shared_index_cache_size",
							"Shared memory that holds the block indexes and bloom filters of pkmerge tables' runs for every backend.",
							"A run's index is read out of its pages and checked once for the whole server while it stays here. 0: each backend keeps the indexes of the runs it reads (pkchangelog.run_index_cache_size).",
							&pk_shared_index_cache_size, 128 * 1024, 0, MAX_KILOBYTES, PGC_POSTMASTER,
							GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("pkchangelog.wal_rmgr_id",
							"The id of pkchangelog's custom WAL resource manager, whose records carry pkmerge changes for logical decoding.",
							"Change it only if another extension uses the same id (ids 128 to 255 are for extensions); WAL written with one id is decoded only by a server started with the same id.",
							&pk_wal_rmgr_id, PK_WAL_RMGR_ID_DEFAULT, 129, 255, PGC_POSTMASTER,
							0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("pkchangelog");
}
