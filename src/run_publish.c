/*-------------------------------------------------------------------------
 *
 * run_publish.c
 *	  What commits publish in shared memory so that other backends need not
 *	  read the catalog for it (run_list.c is the reader): per table, the
 *	  data run list and counters of the pkchangelog.tables version the
 *	  latest commit wrote, with the contents of a snapshot taken once it
 *	  was visible; the transaction that has taken the table's commit lock
 *	  since; and a ring of the rows of the runs the latest commits wrote.
 *
 *	  Slots are per table (database and relid, with the RelFileLocator where
 *	  the runs are), hashed into fixed arrays, each naming the table it
 *	  holds: tables of databases copied from one template share relids and
 *	  relfilenodes, so the whole identity is the tag, and a collision costs
 *	  a reader a read of the catalog.  The lists and rings are copied under
 *	  LWLocks (up to 2.3 kB), the commit lock holders under spinlocks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "run_publish.h"
#include "shmem_slots.h"

/* the bytes of a PublishedRuns that hold something (the ids come last) */
#define PUBLISHED_RUNS_SIZE(p) \
	(offsetof(PublishedRuns, run_ids) + sizeof(int64) * (p)->nruns)

/*
 * per table: the run list its latest commit published, under lock (a
 * copy of up to 2.3 kB: an LWLock, shared by readers)
 */
#define NRUNSLOTS 1024
typedef struct RunListSlot
{
	LWLock		lock;
	PublishedRuns pub;
} RunListSlot;

static RunListSlot *run_lists = NULL;

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
 * per table: the latest commits' run rows, under lock (a search of 72 ids
 * and a copy of up to 2 kB: an LWLock, shared by readers), in two rings by
 * size: a small commit's run (a few hundred bytes packed) takes one of
 * many small slots, a compaction's run kept in its row one of a few large
 * ones.  A committed run's row does not change while the run is in the
 * same file, and its id is never reused.  Under concurrent 1-row commits a
 * backend may come back to the table dozens of commits later (two cores,
 * four clients: with 16 slots, about one in eight of the runs its list
 * lacked was read from the commit log again).  The ring goes to the tables
 * committing most often: a table takes it over from another.
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
#define LARGE_SLOT MAXALIGN(offsetof(PublishedRun, bytes) + MAX_PUBLISHED_RUN_BYTES)

/* the run ids apart from the rows: a search reads a few cache lines */
typedef struct RunRing
{
	LWLock		lock;
	RelFileLocator node;
	Oid			relid;
	int			next_small;
	int			next_large;
	int64		small_ids[RUN_RING_SMALL];	/* 0: none */
	int64		large_ids[RUN_RING_LARGE];
	char		small[RUN_RING_SMALL][SMALL_SLOT];
	char		large[RUN_RING_LARGE][LARGE_SLOT];
} RunRing;

static RunRing *run_rings = NULL;

Size
run_publish_shmem_size(void)
{
	Size		size = mul_size(NRUNSLOTS, sizeof(RunListSlot));

	size = add_size(size, mul_size(NWRITERSLOTS, sizeof(StateWriterSlot)));
	return add_size(size, mul_size(NRUNRINGS, sizeof(RunRing)));
}

void
run_publish_shmem_init(int tranche)
{
	run_lists = pk_shmem_lwlock_slots("pkchangelog published run lists", NRUNSLOTS,
									  sizeof(RunListSlot), tranche);
	state_writers = pk_shmem_slots("pkchangelog commit lock holders", NWRITERSLOTS,
								   sizeof(StateWriterSlot));
	run_rings = pk_shmem_lwlock_slots("pkchangelog published run rows", NRUNRINGS,
									  sizeof(RunRing), tranche);
}

/* where a table's slots are, in the per-table arrays */
static uint32
table_hash(const RelFileLocator *node, Oid relid)
{
	return hash_combine(hash_bytes((const unsigned char *) node, sizeof(RelFileLocator)),
						relid);
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
run_publish_list(const PublishedRuns *p)
{
	RunListSlot *slot;
	StateWriterSlot *w;

	if (run_lists == NULL)
		return;
	slot = &run_lists[table_hash(&p->node, p->relid) % NRUNSLOTS];
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	memcpy(&slot->pub, p, PUBLISHED_RUNS_SIZE(p));
	LWLockRelease(&slot->lock);

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
 * latest for a snapshot that sees xid committed (catalog_lock.c).
 */
void
run_publish_note_writer(Oid relid, TransactionId xid)
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

/* The run list last published for the table (node and relid), if any. */
bool
run_publish_latest(const RelFileLocator *node, Oid relid, PublishedRuns *p)
{
	RunListSlot *slot;
	bool		found = false;

	if (run_lists == NULL)
		return false;
	slot = &run_lists[table_hash(node, relid) % NRUNSLOTS];
	LWLockAcquire(&slot->lock, LW_SHARED);
	if (slot->pub.relid == relid && RelFileLocatorEquals(slot->pub.node, *node))
	{
		memcpy(p, &slot->pub, PUBLISHED_RUNS_SIZE(&slot->pub));
		found = true;
	}
	LWLockRelease(&slot->lock);
	return found;
}

/*
 * The run list last published for the table, as run_publish_latest, and the
 * transaction that has taken its commit lock since (*writer; invalid if
 * none).  False for *writer_known when that is not known: the slot holds
 * another table or lost track, or it changed while the list was read.
 */
bool
run_publish_state(const RelFileLocator *node, Oid relid, PublishedRuns *p,
				  TransactionId *writer, bool *writer_known)
{
	StateWriterSlot *w;
	uint64		gen;
	bool		found;

	*writer = InvalidTransactionId;
	*writer_known = false;
	if (state_writers == NULL)
		return run_publish_latest(node, relid, p);
	w = writer_slot(relid);
	SpinLockAcquire(&w->mutex);
	*writer_known = w->dbid == MyDatabaseId && w->relid == relid && !w->unknown;
	*writer = w->writer;
	gen = w->gen;
	SpinLockRelease(&w->mutex);
	found = run_publish_latest(node, relid, p);
	SpinLockAcquire(&w->mutex);
	*writer_known &= w->gen == gen;
	SpinLockRelease(&w->mutex);
	return found;
}

/*
 * Publish the row of a run a commit wrote (its bytes as pack_run packs
 * them), once the commit is visible.  The table takes the ring over from
 * another table that had it.
 */
static void
ring_put(const RelFileLocator *node, Oid relid, int64 run_id,
		 const char *bytes, Size len)
{
	RunRing    *ring;
	PublishedRun *pr;

	if (run_rings == NULL || len > MAX_PUBLISHED_RUN_BYTES)
		return;
	ring = &run_rings[table_hash(node, relid) % NRUNRINGS];
	LWLockAcquire(&ring->lock, LW_EXCLUSIVE);
	if (ring->relid != relid || !RelFileLocatorEquals(ring->node, *node))
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
	LWLockRelease(&ring->lock);
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
 * MAX_PUBLISHED_RUN_BYTES): its length, 0 if it is not published.
 */
static Size
ring_get(const RelFileLocator *node, Oid relid, int64 run_id, char *bytes)
{
	RunRing    *ring;
	PublishedRun *pr;
	Size		len = 0;

	if (run_rings == NULL)
		return 0;
	ring = &run_rings[table_hash(node, relid) % NRUNRINGS];
	LWLockAcquire(&ring->lock, LW_SHARED);
	if (ring->relid == relid && RelFileLocatorEquals(ring->node, *node) &&
		(pr = ring_find(ring, run_id)) != NULL)
	{
		len = pr->len;
		memcpy(bytes, pr->bytes, len);
	}
	LWLockRelease(&ring->lock);
	return len;
}

/*
 * A run's row as published in shared memory: the RunInfo without its
 * pointers, then its keys (with their NULs) and its stream.
 */
typedef struct PackedRun
{
	RunInfo		info;
	uint32		min_len;		/* 0: NULL */
	uint32		max_len;
	bool		has_stream;
} PackedRun;

/* run packed into buf (MAX_PUBLISHED_RUN_BYTES), its length; 0: too long */
static Size
pack_run(const RunInfo *run, char *buf)
{
	PackedRun	h;
	Size		len;
	char	   *p;

	h.info = *run;
	h.info.min_key = h.info.max_key = h.info.stream = NULL;
	h.min_len = run->min_key ? strlen(run->min_key) + 1 : 0;
	h.max_len = run->max_key ? strlen(run->max_key) + 1 : 0;
	h.has_stream = run->stream != NULL;
	len = sizeof(PackedRun) + h.min_len + h.max_len +
		(h.has_stream ? run->stream_len : 0);
	if (len > MAX_PUBLISHED_RUN_BYTES)
		return 0;
	memcpy(buf, &h, sizeof(PackedRun));
	p = buf + sizeof(PackedRun);
	memcpy(p, run->min_key, h.min_len);
	p += h.min_len;
	memcpy(p, run->max_key, h.max_len);
	p += h.max_len;
	if (h.has_stream)
		memcpy(p, run->stream, run->stream_len);
	return len;
}

/*
 * The table's run run_id as a commit published it, into *run, its keys and
 * stream in buf (MAX_PUBLISHED_RUN_BYTES); false if it is not published.
 */
bool
run_publish_find_run(const RelFileLocator *node, Oid relid, int64 run_id,
					 char *buf, RunInfo *run)
{
	PackedRun	h;
	char	   *p;

	if (ring_get(node, relid, run_id, buf) == 0)
		return false;
	memcpy(&h, buf, sizeof(PackedRun));
	*run = h.info;
	p = buf + sizeof(PackedRun);
	if (h.min_len > 0)
		run->min_key = p;
	p += h.min_len;
	if (h.max_len > 0)
		run->max_key = p;
	p += h.max_len;
	if (h.has_stream)
		run->stream = p;
	return true;
}

/*
 * Publish the row of a run a commit wrote, once the commit is visible (a
 * run too long for a slot is not).
 */
void
run_publish_run(const RelFileLocator *node, Oid relid, const RunInfo *run)
{
	char		buf[MAX_PUBLISHED_RUN_BYTES];
	Size		len = pack_run(run, buf);

	if (len > 0)
		ring_put(node, relid, run->run_id, buf, len);
}

/*
 * Does snapshot see the version of the tables row pub names?  It does if
 * it sees the commit that published it and not the transaction that has
 * taken the table's commit lock since, if any (writer; the state writer slot keeps it
 * while writer_known): the table's state changes only under that lock, and
 * its publisher still held it.  Not for the writer itself, whose own
 * changes it sees; and any writer that has ended counts as seen (whether
 * it committed is not asked).
 *
 * Otherwise, as a last resort: does snapshot see exactly the transactions
 * that the snapshot of pub's commit saw, and so the same version?  The
 * running xids are compared in the order the snapshots list them (the
 * procarray's): a different order only misses.  A snapshot leaves its own
 * transaction out of its running xids, where the publisher's has it if
 * this transaction had its xid by then (every writer of a pkmerge table
 * has, the committers waiting for the commit lock among them): that xid
 * is running for both, and what this transaction wrote itself the caller
 * rules out (cat_runs_changed, cat_table_written_here).
 */
bool
run_publish_sees(Snapshot snapshot, const PublishedRuns *pub,
				 TransactionId writer, bool writer_known)
{
	TransactionId me = GetTopTransactionIdIfAny();
	int			j = 0;

	if (writer_known && snapshot->snapshot_type == SNAPSHOT_MVCC &&
		!snapshot->takenDuringRecovery && !snapshot->suboverflowed &&
		!XidInMVCCSnapshot(pub->xmin, snapshot) &&
		(!TransactionIdIsValid(writer) ||
		 (!TransactionIdEquals(writer, me) && XidInMVCCSnapshot(writer, snapshot))))
		return true;
	if (snapshot->suboverflowed || snapshot->subxcnt > 0 ||
		snapshot->xcnt > MAX_PUBLISHED_XIP ||
		pub->snap_xmin != snapshot->xmin || pub->snap_xmax != snapshot->xmax)
		return false;
	if (pub->snap_xcnt == (int) snapshot->xcnt)
		return memcmp(pub->snap_xip, snapshot->xip,
					  sizeof(TransactionId) * snapshot->xcnt) == 0;
	if (!TransactionIdIsValid(me) || pub->snap_xcnt != (int) snapshot->xcnt + 1)
		return false;
	for (int i = 0; i < pub->snap_xcnt; i++)
	{
		if (pub->snap_xip[i] == me)
			continue;
		if (j == (int) snapshot->xcnt || pub->snap_xip[i] != snapshot->xip[j])
			return false;
		j++;
	}
	return j == (int) snapshot->xcnt;
}

/*
 * Where the version of rel's tables row last published is (a hint for
 * cat_table_state under the commit lock: the version the last commit or
 * compaction wrote, if it published).  False if none was published.
 */
bool
run_publish_row(Relation rel, ItemPointerData *row)
{
	PublishedRuns pub;

	if (!run_publish_latest(&RelationLocator(rel), rel->rd_id, &pub))
		return false;
	*row = pub.row;
	return true;
}
