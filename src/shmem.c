/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The extension's small shared-memory state, hashed into fixed arrays
 *	  of slots where it is per table, all gone after a restart.  A slot
 *	  names the table it holds (the whole identity: tables of databases
 *	  copied from one template share relids and relfilenodes), so a
 *	  collision only costs a fallback to the slow way:
 *	  - per table (database and relid): whether VACUUM found gaps in its
 *		file that new runs could reuse (run_space.c looks for one before
 *		appending);
 *	  - per relation file (RelFileNode): where the used part of the file
 *		ends (run_space.c extends files ahead of use; without it, runs go after
 *		the file's end until the next VACUUM);
 *	  - per backend: the tables its transaction has buffered writes to,
 *		which its parallel workers must not read without them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "shmem.h"

#define NSLOTS 4096

/*
 * A slot's owner and value change together under its spinlock: a value
 * read under another owner's name would place runs over live ones.
 */
typedef struct FreeSpaceSlot
{
	slock_t		mutex;
	Oid			dbid;
	Oid			relid;
	bool		free_space;
} FreeSpaceSlot;

typedef struct FileEndSlot
{
	slock_t		mutex;
	RelFileNode node;
	BlockNumber end;
} FileEndSlot;

static FreeSpaceSlot *free_space = NULL;
static FileEndSlot *file_end = NULL;

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
	RequestAddinShmemSpace(MAXALIGN(sizeof(FreeSpaceSlot) * NSLOTS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(FileEndSlot) * NSLOTS));
	RequestAddinShmemSpace(MAXALIGN(writes_size()));
}

static void
hints_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	free_space = ShmemInitStruct("pkchangelog free space hints",
								 sizeof(FreeSpaceSlot) * NSLOTS, &found);
	if (!found)
	{
		memset(free_space, 0, sizeof(FreeSpaceSlot) * NSLOTS);
		for (int i = 0; i < NSLOTS; i++)
			SpinLockInit(&free_space[i].mutex);
	}
	file_end = ShmemInitStruct("pkchangelog file end hints",
							   sizeof(FileEndSlot) * NSLOTS, &found);
	if (!found)
	{
		memset(file_end, 0, sizeof(FileEndSlot) * NSLOTS);
		for (int i = 0; i < NSLOTS; i++)
			SpinLockInit(&file_end[i].mutex);
	}
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

static FreeSpaceSlot *
free_space_slot(Oid relid)
{
	return &free_space[hash_combine(hash_uint32(MyDatabaseId), hash_uint32(relid)) % NSLOTS];
}

/*
 * Did VACUUM find gaps in the file of relid (of this database)?  Without
 * a hint (after a restart, or another table took the slot) runs are
 * appended until the next VACUUM says so.
 */
bool
hints_free_space(Oid relid)
{
	FreeSpaceSlot *slot;
	bool		result;

	/* without shared memory (never expected), always look */
	if (free_space == NULL)
		return true;
	slot = free_space_slot(relid);
	SpinLockAcquire(&slot->mutex);
	result = slot->dbid == MyDatabaseId && slot->relid == relid && slot->free_space;
	SpinLockRelease(&slot->mutex);
	return result;
}

void
hints_set_free_space(Oid relid, bool hint)
{
	FreeSpaceSlot *slot;

	if (free_space == NULL)
		return;
	slot = free_space_slot(relid);
	SpinLockAcquire(&slot->mutex);
	slot->dbid = MyDatabaseId;
	slot->relid = relid;
	slot->free_space = hint;
	SpinLockRelease(&slot->mutex);
}

static FileEndSlot *
file_end_slot(const RelFileNode *node)
{
	return &file_end[hash_bytes((const unsigned char *) node, sizeof(RelFileNode)) % NSLOTS];
}

/*
 * Where the used part of a relation file ends (the file may be longer:
 * run_space.c extends it ahead), or InvalidBlockNumber when not known.  Read
 * and set under the table's space lock; files sharing a slot just take it
 * from each other, and a miss makes run_space.c fall back to the file size.
 */
BlockNumber
hints_file_end(const RelFileNode *node)
{
	FileEndSlot *slot;
	BlockNumber end = InvalidBlockNumber;

	if (file_end == NULL || node->relNode == InvalidOid)
		return InvalidBlockNumber;
	slot = file_end_slot(node);
	SpinLockAcquire(&slot->mutex);
	if (RelFileNodeEquals(slot->node, *node))
		end = slot->end;
	SpinLockRelease(&slot->mutex);
	return end;
}

void
hints_set_file_end(const RelFileNode *node, BlockNumber end)
{
	FileEndSlot *slot;

	if (file_end == NULL)
		return;
	slot = file_end_slot(node);
	SpinLockAcquire(&slot->mutex);
	slot->node = *node;
	slot->end = end;
	SpinLockRelease(&slot->mutex);
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

