/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Asks for the library's shared memory and sets it up: one
 *	  shmem_request_hook and one shmem_startup_hook for the library, as
 *	  ipci.c sizes and initializes the server's shared structures.  Each
 *	  part owns its shared state (see the parts below) and exports its
 *	  size and its init; the parts that need LWLocks get the library's
 *	  tranche, "pkchangelog", which wait events show.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"

#include "block_cache.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "index_cache.h"
#include "key_locks.h"
#include "key_types.h"
#include "maint_compaction.h"
#include "maint_worker.h"
#include "run_publish.h"
#include "run_read_stats.h"
#include "run_space.h"
#include "shmem.h"
#include "write_buffer.h"

static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

static void
pk_shmem_request(void)
{
	Size		size = 0;

	if (prev_shmem_request)
		prev_shmem_request();
	size = add_size(size, sizeof(int));	/* the LWLock tranche's id */
	size = add_size(size, space_shmem_size());
	size = add_size(size, wbuf_shmem_size());
	size = add_size(size, run_publish_shmem_size());
	size = add_size(size, cat_lock_shmem_size());
	size = add_size(size, compact_shmem_size());
	size = add_size(size, worker_shmem_size());
	size = add_size(size, readstats_shmem_size());
	size = add_size(size, rowids_shmem_size());
	size = add_size(size, keylocks_shmem_size());
	size = add_size(size, bcache_shmem_size());
	size = add_size(size, icache_shmem_size());
	size = add_size(size, keytypes_shmem_size());
	RequestAddinShmemSpace(size);
}

static void
pk_shmem_startup(void)
{
	bool		found;
	int		   *tranche;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	tranche = ShmemInitStruct("pkchangelog LWLock tranche", sizeof(int), &found);
	if (!found)
		*tranche = LWLockNewTrancheId();
	LWLockRegisterTranche(*tranche, "pkchangelog");
	space_shmem_init(*tranche);
	wbuf_shmem_init();
	run_publish_shmem_init(*tranche);
	cat_lock_shmem_init();
	compact_shmem_init();
	worker_shmem_init(*tranche);
	readstats_shmem_init(*tranche);
	rowids_shmem_init(*tranche);
	keylocks_shmem_init();
	bcache_shmem_init(*tranche);
	icache_shmem_init(*tranche);
	keytypes_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

void
pk_shmem_init(void)
{
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = pk_shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = pk_shmem_startup;
}
