/*-------------------------------------------------------------------------
 *
 * hints.c
 *	  Per-table hints in shared memory.  VACUUM leaves the hint that a
 *	  table's file has gaps between its runs; writers then look for one
 *	  before appending (space.c).  Tables are hashed into a fixed array of
 *	  slots: a collision only costs a needless look.  After a restart the
 *	  hints are gone, and runs go to the end of the file until the next
 *	  VACUUM.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "hints.h"

#define NSLOTS 4096

static bool *free_space = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

static void
hints_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(bool) * NSLOTS));
}

static void
hints_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	free_space = ShmemInitStruct("pkchangelog free space hints", sizeof(bool) * NSLOTS, &found);
	if (!found)
		memset(free_space, 0, sizeof(bool) * NSLOTS);
	LWLockRelease(AddinShmemInitLock);
}

void
hints_init(void)
{
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = hints_shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = hints_shmem_startup;
}

bool
hints_free_space(Oid relid)
{
	/* without shared memory (never expected), always look */
	return free_space == NULL || free_space[hash_uint32(relid) % NSLOTS];
}

void
hints_set_free_space(Oid relid, bool hint)
{
	/* a plain store: a lost race only delays or repeats a look */
	if (free_space)
		free_space[hash_uint32(relid) % NSLOTS] = hint;
}
