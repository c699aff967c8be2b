/*-------------------------------------------------------------------------
 *
 * hints.c
 *	  The extension's small shared-memory state, hashed into fixed arrays
 *	  of slots where it is per table (a collision only costs a needless
 *	  look, or a fallback to the slow way), all gone after a restart:
 *	  - per table: whether VACUUM found gaps in its file that new runs could
 *		reuse (space.c looks for one before appending);
 *	  - per relfilenode: where the used part of the file ends (space.c
 *		extends files ahead of use; without it, runs go after the file's
 *		end until the next VACUUM);
 *	  - per backend: the tables its transaction has buffered writes to,
 *		which its parallel workers must not read without them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "hints.h"

#define NSLOTS 4096

static bool *free_space = NULL;
static pg_atomic_uint64 *file_end = NULL;	/* relfilenode << 32 | block */

/*
 * Per backend (by pgprocno): the pkmerge tables its transaction has
 * buffered writes to, for its parallel workers, which cannot read them.
 * Written by the backend only, read by its workers while it waits.
 */
#define WRITER_RELIDS 4
typedef struct BackendWrites
{
	Oid			relids[WRITER_RELIDS];
	bool		overflow;		/* and more */
} BackendWrites;

static BackendWrites *writes = NULL;

static Size
writes_size(void)
{
	return mul_size(MaxBackends + NUM_AUXILIARY_PROCS, sizeof(BackendWrites));
}
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

static void
hints_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(bool) * NSLOTS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(pg_atomic_uint64) * NSLOTS));
	RequestAddinShmemSpace(MAXALIGN(writes_size()));
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
	file_end = ShmemInitStruct("pkchangelog file end hints",
							   sizeof(pg_atomic_uint64) * NSLOTS, &found);
	if (!found)
		for (int i = 0; i < NSLOTS; i++)
			pg_atomic_init_u64(&file_end[i], 0);
	writes = ShmemInitStruct("pkchangelog backend writes", writes_size(), &found);
	if (!found)
		memset(writes, 0, writes_size());
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

/*
 * Where the used part of a relation file ends (the file may be longer:
 * space.c extends it ahead), or InvalidBlockNumber when not known.  Read
 * and set under the table's space lock; tables sharing a slot just take
 * it from each other, and a miss makes space.c fall back to the file size.
 */
BlockNumber
hints_file_end(Oid relfilenode)
{
	uint64		v;

	if (file_end == NULL)
		return InvalidBlockNumber;
	v = pg_atomic_read_u64(&file_end[hash_uint32(relfilenode) % NSLOTS]);
	if ((Oid) (v >> 32) != relfilenode || relfilenode == InvalidOid)
		return InvalidBlockNumber;
	return (BlockNumber) (v & 0xFFFFFFFF);
}

void
hints_set_file_end(Oid relfilenode, BlockNumber end)
{
	if (file_end)
		pg_atomic_write_u64(&file_end[hash_uint32(relfilenode) % NSLOTS],
							((uint64) relfilenode << 32) | end);
}

/* this backend's transaction buffered writes to relid */
void
hints_note_writes(Oid relid)
{
	BackendWrites *w;

	if (writes == NULL || MyProc == NULL)
		return;
	w = &writes[MyProc->pgprocno];
	for (int i = 0; i < WRITER_RELIDS; i++)
		if (w->relids[i] == InvalidOid || w->relids[i] == relid)
		{
			w->relids[i] = relid;
			return;
		}
	w->overflow = true;
}

/* this backend's transaction ended */
void
hints_clear_writes(void)
{
	if (writes && MyProc)
		memset(&writes[MyProc->pgprocno], 0, sizeof(BackendWrites));
}

/*
 * In a parallel worker: has the leader's transaction buffered writes to
 * relid?  (Without shared memory, never expected: assume it has.)
 */
bool
hints_leader_writes(Oid relid)
{
	BackendWrites *w;

	if (MyProc == NULL || MyProc->lockGroupLeader == NULL ||
		MyProc->lockGroupLeader == MyProc)
		return false;
	if (writes == NULL)
		return true;
	w = &writes[MyProc->lockGroupLeader->pgprocno];
	if (w->overflow)
		return true;
	for (int i = 0; i < WRITER_RELIDS; i++)
		if (w->relids[i] == relid)
			return true;
	return false;
}

