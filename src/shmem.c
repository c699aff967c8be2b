/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The extension's small shared-memory state, hashed into fixed arrays
 *	  of slots where it is per table, all gone after a restart.  A slot
 *	  names the table it holds (the whole identity: tables of databases
 *	  copied from one template share relids and relfilenodes), so a
 *	  collision only costs a fallback to the slow way:
 *	  - per relation file (RelFileNode): where the used part of the file
 *		ends (run_space.c extends files ahead of use; without it, runs go
 *		after the file's end until the next VACUUM), and the gaps VACUUM
 *		found between its runs, which new runs fill first (without them,
 *		new runs are appended);
 *	  - per backend: the tables its transaction has buffered writes to,
 *		which its parallel workers must not read without them;
 *	  - per table: the data runs its latest commit left, with a snapshot
 *		taken once that commit was visible (run_cache.c), so that other
 *		backends need not read the table's catalog row to learn them;
 *	  - per table (database and relid): the transaction that took its
 *		commit lock since that list was published, if one has, which a
 *		reader's snapshot must not see for the list to be its own;
 *	  - for fewer tables (those committing often take the slots over): the
 *		rows of the runs their latest commits wrote, so that the other
 *		backends need not read them from pkchangelog.runs either.  A
 *		committed run's row does not change while the run is in the same
 *		file, and its id is never reused;
 *	  - per table: the condition variable its committers wait on for its
 *		commit lock (catalog_lock.c); tables sharing one wake each other;
 *	  - per table: its compaction running, and the newest row it took, so
 *		that writers merge the level-0 runs committed since
 *		(maint_compaction.c); a table whose slot another took over gets
 *		no such merges.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "shmem.h"

#define NSLOTS 4096

/*
 * A slot's owner and values change together under its spinlock: a value
 * read under another owner's name would place runs over live ones.  The
 * gaps are in block order; a taken gap shrinks from its start.
 */
typedef struct FileEndSlot
{
	slock_t		mutex;
	RelFileNode node;
	BlockNumber end;
	int			ngaps;
	SpaceGap	gaps[HINTS_MAX_GAPS];
} FileEndSlot;

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

/* per table: the run list its latest commit published, under mutex */
#define NRUNSLOTS 1024
typedef struct RunListSlot
{
	slock_t		mutex;
	PublishedRuns pub;
} RunListSlot;

static RunListSlot *run_lists = NULL;

/* the bytes of a PublishedRuns that hold something (the ids come last) */
#define PUBLISHED_RUNS_SIZE(p) \
	(offsetof(PublishedRuns, run_ids) + sizeof(int64) * (p)->nruns)

/*
 * per table: the transaction that last took its commit lock since its run
 * list was last published (every change of the table's state is made
 * under that lock, and a publisher still holds it), under mutex.  unknown:
 * other transactions may have taken it since (a second one before a
 * publish, or the slot was taken over from another table, whose record of
 * this one's was lost).  gen moves with every change, so that a reader of
 * this slot and of the run list slot learns whether either changed between
 * its two reads of this one.
 */
#define NWRITERSLOTS 1024
typedef struct StateWriterSlot
{
	slock_t		mutex;
	Oid			dbid;
	Oid			relid;
	TransactionId writer;		/* InvalidTransactionId: none since */
	bool		unknown;
	uint64		gen;
} StateWriterSlot;

static StateWriterSlot *state_writers = NULL;

/*
 * Per table: the compaction running (or last run), by its transaction, and
 * the newest sequence number of the runs it took.  A table sharing the slot
 * takes it over: the table losing it gets no merges beside its running one.
 */
#define NMERGESLOTS 256
typedef struct MergeSlot
{
	slock_t		mutex;
	Oid			dbid;
	Oid			relid;
	TransactionId xid;
	int64		max_seq;
} MergeSlot;

static MergeSlot *merges = NULL;

/*
 * per table: the latest commits' run rows, under mutex, in two rings by
 * size: a small commit's run (a few hundred bytes packed) takes one of
 * many small slots, a compaction's run kept in its row one of a few large
 * ones.  Under concurrent 1-row commits a backend may come back to the
 * table dozens of commits later (two cores, four clients: with 16 slots,
 * about one in eight of the runs its list lacked was read from the commit
 * log again).
 */
#define NRUNRINGS 64
#define RUN_RING_SMALL 64
#define SMALL_RUN_BYTES 512
#define RUN_RING_LARGE 8
typedef struct PublishedRun
{
	Size		len;
	char		bytes[FLEXIBLE_ARRAY_MEMBER];
} PublishedRun;

#define SMALL_SLOT MAXALIGN(offsetof(PublishedRun, bytes) + SMALL_RUN_BYTES)
#define LARGE_SLOT MAXALIGN(offsetof(PublishedRun, bytes) + HINTS_MAX_RUN_BYTES)

/* the run ids apart from the rows: a search reads a few cache lines */
typedef struct RunRing
{
	slock_t		mutex;
	RelFileNode node;
	Oid			relid;
	int			next_small;
	int			next_large;
	int64		small_ids[RUN_RING_SMALL];	/* 0: none */
	int64		large_ids[RUN_RING_LARGE];
	char		small[RUN_RING_SMALL][SMALL_SLOT];
	char		large[RUN_RING_LARGE][LARGE_SLOT];
} RunRing;

static RunRing *run_rings = NULL;

/* per table: its committers' condition variable */
#define NWAKESLOTS 256
static ConditionVariable *commit_wake = NULL;

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
	RequestAddinShmemSpace(MAXALIGN(sizeof(FileEndSlot) * NSLOTS));
	RequestAddinShmemSpace(MAXALIGN(writes_size()));
	RequestAddinShmemSpace(MAXALIGN(sizeof(RunListSlot) * NRUNSLOTS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(StateWriterSlot) * NWRITERSLOTS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(RunRing) * NRUNRINGS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(ConditionVariable) * NWAKESLOTS));
	RequestAddinShmemSpace(MAXALIGN(sizeof(MergeSlot) * NMERGESLOTS));
}

/*
 * An array of nslots slots of slotsize bytes, each starting with its
 * spinlock, zeroed when first made.
 */
static void *
slot_array(const char *name, int nslots, Size slotsize)
{
	bool		found;
	char	   *slots = ShmemInitStruct(name, mul_size(nslots, slotsize), &found);

	if (!found)
	{
		memset(slots, 0, mul_size(nslots, slotsize));
		for (int i = 0; i < nslots; i++)
			SpinLockInit((slock_t *) (slots + i * slotsize));
	}
	return slots;
}

static void
hints_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	file_end = slot_array("pkchangelog file end hints", NSLOTS, sizeof(FileEndSlot));
	writes = ShmemInitStruct("pkchangelog backend writes", writes_size(), &found);
	if (!found)
		memset(writes, 0, writes_size());
	run_lists = slot_array("pkchangelog published run lists", NRUNSLOTS,
						   sizeof(RunListSlot));
	run_rings = slot_array("pkchangelog published run rows", NRUNRINGS,
						   sizeof(RunRing));
	state_writers = slot_array("pkchangelog commit lock holders", NWRITERSLOTS,
							   sizeof(StateWriterSlot));
	merges = slot_array("pkchangelog running compactions", NMERGESLOTS,
						sizeof(MergeSlot));
	commit_wake = ShmemInitStruct("pkchangelog commit lock waiters",
								  sizeof(ConditionVariable) * NWAKESLOTS, &found);
	if (!found)
		for (int i = 0; i < NWAKESLOTS; i++)
			ConditionVariableInit(&commit_wake[i]);
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

/*
 * The condition variable committers of a table of this database sleep on
 * while its commit lock is taken; NULL before shared memory is set up.
 */
ConditionVariable *
hints_commit_wake(Oid relid)
{
	uint32		key[2] = {MyDatabaseId, relid};

	if (commit_wake == NULL)
		return NULL;
	return &commit_wake[hash_bytes((const unsigned char *) key, sizeof(key)) %
						NWAKESLOTS];
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

/*
 * Set where the used part of the file ends.  gaps: the free extents below
 * it (VACUUM, in block order), which replace the slot's; NULL keeps the
 * slot's gaps if it holds this file's.
 */
void
hints_set_file_end(const RelFileNode *node, BlockNumber end,
				   const SpaceGap *gaps, int ngaps)
{
	FileEndSlot *slot;

	if (file_end == NULL)
		return;
	slot = file_end_slot(node);
	SpinLockAcquire(&slot->mutex);
	if (gaps != NULL || !RelFileNodeEquals(slot->node, *node))
	{
		slot->ngaps = Min(ngaps, HINTS_MAX_GAPS);
		if (slot->ngaps > 0)
			memcpy(slot->gaps, gaps, sizeof(SpaceGap) * slot->ngaps);
	}
	slot->node = *node;
	slot->end = end;
	SpinLockRelease(&slot->mutex);
}

/*
 * Take nblocks from the first gap of the file that has room (first fit,
 * so the file's end empties first and VACUUM can give it back).  Under
 * the table's space lock.  False when no gap known has room.
 */
bool
hints_take_gap(const RelFileNode *node, BlockNumber nblocks, BlockNumber *start)
{
	FileEndSlot *slot;
	bool		found = false;

	if (file_end == NULL || node->relNode == InvalidOid)
		return false;
	slot = file_end_slot(node);
	SpinLockAcquire(&slot->mutex);
	if (RelFileNodeEquals(slot->node, *node))
	{
		for (int i = 0; i < slot->ngaps; i++)
		{
			SpaceGap   *g = &slot->gaps[i];

			if (g->len < nblocks)
				continue;
			*start = g->start;
			g->start += nblocks;
			g->len -= nblocks;
			if (g->len == 0)
			{
				slot->ngaps--;
				memmove(g, g + 1, sizeof(SpaceGap) * (slot->ngaps - i));
			}
			found = true;
			break;
		}
	}
	SpinLockRelease(&slot->mutex);
	return found;
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

/* where a table's slots are, in the per-table arrays */
static uint32
table_hash(const RelFileNode *node, Oid relid)
{
	return hash_combine(hash_bytes((const unsigned char *) node, sizeof(RelFileNode)),
						relid);
}

static MergeSlot *
merge_slot(Oid relid)
{
	return &merges[hash_combine(MyDatabaseId, relid) % NMERGESLOTS];
}

/*
 * A compaction by transaction xid took runs of the table with rows up to
 * sequence number max_seq.
 */
void
hints_set_merging(Oid relid, TransactionId xid, int64 max_seq)
{
	MergeSlot  *m;

	if (merges == NULL)
		return;
	m = merge_slot(relid);
	SpinLockAcquire(&m->mutex);
	m->dbid = MyDatabaseId;
	m->relid = relid;
	m->xid = xid;
	m->max_seq = max_seq;
	SpinLockRelease(&m->mutex);
}

/*
 * The table's last compaction as hints_set_merging set it, if its slot
 * still has it (the caller checks that the transaction is still running).
 */
bool
hints_merging(Oid relid, TransactionId *xid, int64 *max_seq)
{
	MergeSlot  *m;
	bool		found;

	if (merges == NULL)
		return false;
	m = merge_slot(relid);
	SpinLockAcquire(&m->mutex);
	found = m->dbid == MyDatabaseId && m->relid == relid &&
		TransactionIdIsValid(m->xid);
	*xid = m->xid;
	*max_seq = m->max_seq;
	SpinLockRelease(&m->mutex);
	return found;
}

/* a table of this database's commit lock holder slot */
static StateWriterSlot *
writer_slot(Oid relid)
{
	return &state_writers[hash_combine(MyDatabaseId, relid) % NWRITERSLOTS];
}

/*
 * Publish a table's run list as a commit left it.  A table sharing the
 * slot takes it over.
 */
void
hints_publish_runs(const PublishedRuns *p)
{
	RunListSlot *slot;
	StateWriterSlot *w;

	if (run_lists == NULL)
		return;
	slot = &run_lists[table_hash(&p->node, p->relid) % NRUNSLOTS];
	SpinLockAcquire(&slot->mutex);
	memcpy(&slot->pub, p, PUBLISHED_RUNS_SIZE(p));
	SpinLockRelease(&slot->mutex);

	/*
	 * Then, the publisher still holding the commit lock, no transaction has
	 * changed the table since: every earlier holder's change is in p.
	 */
	w = writer_slot(p->relid);
	SpinLockAcquire(&w->mutex);
	w->dbid = MyDatabaseId;
	w->relid = p->relid;
	w->writer = InvalidTransactionId;
	w->unknown = false;
	w->gen++;
	SpinLockRelease(&w->mutex);
}

/*
 * The transaction xid has taken relid's commit lock (of this database), to
 * change the table's state: a run list published before is no longer the
 * latest for a snapshot that sees xid committed.
 */
void
hints_note_state_writer(Oid relid, TransactionId xid)
{
	StateWriterSlot *w;

	if (state_writers == NULL)
		return;
	w = writer_slot(relid);
	SpinLockAcquire(&w->mutex);
	if (w->dbid == MyDatabaseId && w->relid == relid)
	{
		if (TransactionIdIsValid(w->writer) && w->writer != xid)
			w->unknown = true;
	}
	else
	{
		w->dbid = MyDatabaseId;
		w->relid = relid;
		w->unknown = true;
	}
	w->writer = xid;
	w->gen++;
	SpinLockRelease(&w->mutex);
}

/*
 * The run list last published for the table, as hints_published_runs, and
 * the transaction that has taken its commit lock since (*writer; invalid if
 * none).  False for *writer_known when that is not known: the slot holds
 * another table or lost track, or it changed while the list was read.
 */
bool
hints_published_state(const RelFileNode *node, Oid relid, PublishedRuns *p,
					  TransactionId *writer, bool *writer_known)
{
	StateWriterSlot *w;
	uint64		gen;
	bool		found;

	*writer = InvalidTransactionId;
	*writer_known = false;
	if (state_writers == NULL)
		return hints_published_runs(node, relid, p);
	w = writer_slot(relid);
	SpinLockAcquire(&w->mutex);
	*writer_known = w->dbid == MyDatabaseId && w->relid == relid && !w->unknown;
	*writer = w->writer;
	gen = w->gen;
	SpinLockRelease(&w->mutex);
	found = hints_published_runs(node, relid, p);
	SpinLockAcquire(&w->mutex);
	*writer_known &= w->gen == gen;
	SpinLockRelease(&w->mutex);
	return found;
}

/* The run list last published for the table (node and relid), if any. */
bool
hints_published_runs(const RelFileNode *node, Oid relid, PublishedRuns *p)
{
	RunListSlot *slot;
	bool		found = false;

	if (run_lists == NULL)
		return false;
	slot = &run_lists[table_hash(node, relid) % NRUNSLOTS];
	SpinLockAcquire(&slot->mutex);
	if (slot->pub.relid == relid && RelFileNodeEquals(slot->pub.node, *node))
	{
		memcpy(p, &slot->pub, PUBLISHED_RUNS_SIZE(&slot->pub));
		found = true;
	}
	SpinLockRelease(&slot->mutex);
	return found;
}

/*
 * Publish the row of a run a commit wrote (its bytes as run_cache.c packs
 * them), once the commit is visible.  The table takes the ring over from
 * another table that had it.
 */
void
hints_publish_run(const RelFileNode *node, Oid relid, int64 run_id,
				  const char *bytes, Size len)
{
	RunRing    *ring;
	PublishedRun *pr;

	if (run_rings == NULL || len > HINTS_MAX_RUN_BYTES)
		return;
	ring = &run_rings[table_hash(node, relid) % NRUNRINGS];
	SpinLockAcquire(&ring->mutex);
	if (ring->relid != relid || !RelFileNodeEquals(ring->node, *node))
	{
		ring->relid = relid;
		ring->node = *node;
		ring->next_small = ring->next_large = 0;
		memset(ring->small_ids, 0, sizeof(ring->small_ids));
		memset(ring->large_ids, 0, sizeof(ring->large_ids));
	}
	if (len <= SMALL_RUN_BYTES)
	{
		ring->small_ids[ring->next_small] = run_id;
		pr = (PublishedRun *) ring->small[ring->next_small];
		ring->next_small = (ring->next_small + 1) % RUN_RING_SMALL;
	}
	else
	{
		ring->large_ids[ring->next_large] = run_id;
		pr = (PublishedRun *) ring->large[ring->next_large];
		ring->next_large = (ring->next_large + 1) % RUN_RING_LARGE;
	}
	pr->len = len;
	memcpy(pr->bytes, bytes, len);
	SpinLockRelease(&ring->mutex);
}

/* the ring's slot holding run_id (either size), or NULL */
static PublishedRun *
ring_find(RunRing *ring, int64 run_id)
{
	for (int i = 0; i < RUN_RING_SMALL; i++)
		if (ring->small_ids[i] == run_id)
			return (PublishedRun *) ring->small[i];
	for (int i = 0; i < RUN_RING_LARGE; i++)
		if (ring->large_ids[i] == run_id)
			return (PublishedRun *) ring->large[i];
	return NULL;
}

/*
 * The published row of the table's run run_id into bytes (room for
 * HINTS_MAX_RUN_BYTES): its length, 0 if it is not published.
 */
Size
hints_published_run(const RelFileNode *node, Oid relid, int64 run_id,
					char *bytes)
{
	RunRing    *ring;
	PublishedRun *pr;
	Size		len = 0;

	if (run_rings == NULL)
		return 0;
	ring = &run_rings[table_hash(node, relid) % NRUNRINGS];
	SpinLockAcquire(&ring->mutex);
	if (ring->relid == relid && RelFileNodeEquals(ring->node, *node) &&
		(pr = ring_find(ring, run_id)) != NULL)
	{
		len = pr->len;
		memcpy(bytes, pr->bytes, len);
	}
	SpinLockRelease(&ring->mutex);
	return len;
}
