/*-------------------------------------------------------------------------
 *
 * maint_worker.c
 *	  Background workers: a launcher, registered at server start, keeps one
 *	  worker per database running; each worker, where the extension is
 *	  installed, goes over the pkmerge tables every worker_naptime, and
 *	  between rounds serves writers' requests for compactions.
 *
 *	  This file owns when, where and as whom maintenance runs, and the
 *	  shared table of databases and requests; what a compaction, an
 *	  expiration or a reclaim of space does is maint_compaction.c's,
 *	  maint_expire.c's and run_space.c's.
 *
 *	  Each step on a table is a transaction of its own, run as the table's
 *	  owner in a security-restricted operation (key comparisons may run the
 *	  owner's code), so that memory and lost work stay bounded and an error
 *	  on one table does not stop the others.  No session is waited for
 *	  long: a table locked by another waits for the next round, and a
 *	  compaction gives up on a commit lock after COMPACT_LOCK_TIMEOUT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "catalog_runs.h"
#include "catalog_tables.h"
#include "catalog_lock.h"
#include "commit_log.h"
#include "guc.h"
#include "maint_compaction.h"
#include "maint_expire.h"
#include "maint_worker.h"
#include "run_space.h"
#include "table_desc.h"

PGDLLEXPORT void pk_launcher_main(Datum arg);
PGDLLEXPORT void pk_worker_main(Datum arg);

#define MAX_WORKED_DATABASES 256
/* a database without the extension is looked at again after this many naptimes */
#define NO_EXTENSION_RECHECK_NAPS 30

/* tables a database's worker is asked to compact, kept at once */
#define MAX_REQUESTS 16
/* how long a worker waits for more requests, at most, before it leaves */
#define WORKER_LINGER_MS 1000

/* snapshots expired per transaction, and time spent expiring a table per round */
#define WORKER_EXPIRE_BATCH 1000
#define WORKER_EXPIRE_MS 2000

/*
 * A table's freed space is looked for at most this often (it reads every
 * run row of the table), and only when there may be some: the table's row
 * in pkchangelog.tables changed since the last look (a commit or a
 * compaction), the worker expired snapshots of it, or the last look left
 * rows some snapshot still saw.  A compaction that waited COMPACT_LOCK_TIMEOUT
 * for the table's commit lock gives up (a prepared transaction holds it
 * until COMMIT PREPARED, which may take long), and the table's next
 * compaction waits COMPACT_BACKOFF_MS.  Per table, in the tables a worker
 * remembers (TableClock).
 */
#define RECLAIM_MS 2000
#define COMPACT_LOCK_TIMEOUT "1s"
#define COMPACT_BACKOFF_MS 10000
#define CLOCK_TABLES 64
typedef struct TableClock
{
	Oid			relid;
	TimestampTz when;
	TransactionId version;		/* reclaimed: xmin of its tables row then */
	bool		pending;		/* reclaimed: more may be freed */
} TableClock;
static TableClock blocked[CLOCK_TABLES];	/* last lock timeout */

/*
 * Last reclaims: in shared memory (the database's slot below), so that
 * they outlive a worker, which leaves when idle; in the worker's memory
 * when the slots are all taken.
 */
static TableClock local_reclaimed[CLOCK_TABLES];
static TableClock *reclaimed = local_reclaimed;

/* one database's part of WorkerShared */
typedef struct WorkedDatabase
{
	Oid			db;
	TimestampTz not_before;		/* no worker started before this */
	Latch	   *worker;			/* its worker's latch, while it takes requests */
	int			nrequests;
	bool		overflow;		/* more requests than fit: look at every table */
	Oid			requests[MAX_REQUESTS];
	TableClock	reclaimed[CLOCK_TABLES];	/* its worker's alone */
} WorkedDatabase;

/*
 * Shared between the launcher, the workers and the writers.  A worker
 * leaves when a naptime passes without requests, so that DROP DATABASE
 * (which waits only a few seconds for other sessions to leave) is not
 * held up by an idle worker.
 */
typedef struct WorkerShared
{
	LWLock		lock;			/* scans of dbs and requests: not a spinlock */
	Latch	   *launcher;
	int			ndbs;
	WorkedDatabase dbs[MAX_WORKED_DATABASES];
} WorkerShared;

static WorkerShared *shared = NULL;

Size
worker_shmem_size(void)
{
	return sizeof(WorkerShared);
}

void
worker_shmem_init(int tranche)
{
	bool		found;

	shared = ShmemInitStruct("pkchangelog workers", sizeof(WorkerShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(WorkerShared));
		LWLockInitialize(&shared->lock, tranche);
	}
}

/* db's part of the shared table, added if new; NULL when full (lock held) */
static WorkedDatabase *
shared_slot(Oid db)
{
	WorkedDatabase *d;

	for (int i = 0; i < shared->ndbs; i++)
		if (shared->dbs[i].db == db)
			return &shared->dbs[i];
	if (shared->ndbs == MAX_WORKED_DATABASES)
		return NULL;
	d = &shared->dbs[shared->ndbs++];
	memset(d, 0, sizeof(WorkedDatabase));
	d->db = db;
	return d;
}

static void
set_not_before(Oid db, TimestampTz t)
{
	WorkedDatabase *d;

	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	if ((d = shared_slot(db)) != NULL)
		d->not_before = t;
	LWLockRelease(&shared->lock);
}

/* may db get a worker now?  only_requested: only if it has requests */
static bool
may_start(Oid db, bool only_requested)
{
	WorkedDatabase *d;
	bool		result;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	d = shared_slot(db);
	result = d != NULL && now >= d->not_before &&
		(!only_requested || d->nrequests > 0 || d->overflow);
	LWLockRelease(&shared->lock);
	return result;
}

/*
 * Ask for the compaction of relid, in the current database, now: wake its
 * worker, or the launcher to start one.  Called after the commit that
 * made it due, so that the worker sees that commit's runs.
 */
void
worker_request(Oid relid)
{
	WorkedDatabase *d;
	Latch	   *wake = NULL;

	if (!pk_worker_enabled || shared == NULL)
		return;
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	if ((d = shared_slot(MyDatabaseId)) != NULL)
	{
		int			i;
		bool		queued;

		for (i = 0; i < d->nrequests && d->requests[i] != relid; i++)
			;
		queued = i < d->nrequests;
		if (!queued && d->nrequests < MAX_REQUESTS)
			d->requests[d->nrequests++] = relid;
		else if (!queued)
			d->overflow = true;

		/*
		 * A worker finds a request still queued by itself: no signal (each
		 * is a system call), as when every commit of a busy table asks again.
		 */
		if (!queued || d->not_before != 0 || !d->worker)
			wake = d->worker ? d->worker : shared->launcher;
		/* a writer of a pkmerge table: the extension is installed here now */
		d->not_before = 0;
	}
	LWLockRelease(&shared->lock);
	if (wake)
		SetLatch(wake);
}

void
worker_init(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 10;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "pkchangelog");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "pk_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "pkchangelog launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "pkchangelog launcher");
	RegisterBackgroundWorker(&bgw);
}

/* settings changed by a reload (worker_enabled = off stops the work) */
static void
reload_config(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/* wait up to timeout ms for the latch; true if it was set */
static bool
wait_latch(long timeout)
{
	int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   timeout, PG_WAIT_EXTENSION);

	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	reload_config();
	return (rc & WL_LATCH_SET) != 0;
}

/* the databases workers may connect to, in the caller's memory context */
static List *
databases(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			result = lappend_oid(result, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

static void
launcher_shmem_exit(int code, Datum arg)
{
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	if (shared->launcher == MyLatch)
		shared->launcher = NULL;
	LWLockRelease(&shared->lock);
}

/* the launcher's workers, by database: handles live in TopMemoryContext */
typedef struct Launched
{
	Oid			db;
	BackgroundWorkerHandle *handle;
} Launched;

static Launched launched[MAX_WORKED_DATABASES];
static int	nlaunched = 0;

static bool
running(BackgroundWorkerHandle *handle)
{
	pid_t		pid;

	return GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED;
}

static bool
worker_running(Oid db)
{
	for (int i = 0; i < nlaunched; i++)
		if (launched[i].db == db)
			return running(launched[i].handle);
	return false;
}

static void
launch(Oid db)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	MemoryContext old;
	int			i;

	for (i = 0; i < nlaunched && launched[i].db != db; i++)
		;
	if (i == MAX_WORKED_DATABASES)
		return;
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "pkchangelog");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "pk_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "pkchangelog worker for database %u", db);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "pkchangelog worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(db);
	bgw.bgw_notify_pid = MyProcPid;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		MemoryContextSwitchTo(old);
		ereport(LOG,
				(errmsg("pkchangelog could not start a worker for database %u", db),
				 errhint("Raise max_worker_processes.")));
		return;
	}
	MemoryContextSwitchTo(old);
	if (i == nlaunched)
		nlaunched++;
	else
		pfree(launched[i].handle);
	launched[i].db = db;
	launched[i].handle = handle;
}

/* is db among the n sorted OIDs of dbs? */
static bool
exists(const Oid *dbs, int n, Oid db)
{
	return bsearch(&db, dbs, n, sizeof(Oid), oid_cmp) != NULL;
}

/*
 * Forget databases that are gone (dbs: those that exist), in the launcher's
 * table and in the shared one, so that created and dropped databases never
 * fill them.  A database whose worker still runs is kept.
 */
static void
forget_dropped(List *dbs)
{
	int			ndbs = list_length(dbs);
	Oid		   *sorted = palloc(sizeof(Oid) * Max(ndbs, 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, dbs)
		sorted[n++] = lfirst_oid(lc);
	qsort(sorted, ndbs, sizeof(Oid), oid_cmp);

	n = 0;
	for (int i = 0; i < nlaunched; i++)
	{
		if (!exists(sorted, ndbs, launched[i].db) && !running(launched[i].handle))
			pfree(launched[i].handle);
		else
			launched[n++] = launched[i];
	}
	nlaunched = n;

	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	n = 0;
	for (int i = 0; i < shared->ndbs; i++)
		if (exists(sorted, ndbs, shared->dbs[i].db) || shared->dbs[i].worker != NULL)
			shared->dbs[n++] = shared->dbs[i];
	shared->ndbs = n;
	LWLockRelease(&shared->lock);
}

/*
 * The launcher: connected to no database, it starts a worker for each
 * database that has none running, every naptime, and at once for a
 * database whose writers asked for a compaction.
 */
void
pk_launcher_main(Datum arg)
{
	TimestampTz last_full = 0;
	MemoryContext round = AllocSetContextCreate(TopMemoryContext, "pkchangelog launcher round",
												ALLOCSET_DEFAULT_SIZES);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	before_shmem_exit(launcher_shmem_exit, 0);
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	shared->launcher = MyLatch;
	LWLockRelease(&shared->lock);

	for (;;)
	{
		ListCell   *lc;
		List	   *dbs;
		TimestampTz now = GetCurrentTimestamp();
		/* every naptime all databases; when woken between, those that asked */
		bool		only_requested = !TimestampDifferenceExceeds(last_full, now,
																 pk_worker_naptime);

		if (!only_requested)
			last_full = now;
		MemoryContextReset(round);
		MemoryContextSwitchTo(round);
		if (pk_worker_enabled)
		{
			dbs = databases();
			if (!only_requested)
				forget_dropped(dbs);
			foreach(lc, dbs)
			{
				Oid			db = lfirst_oid(lc);

				if (!worker_running(db) && may_start(db, only_requested))
					launch(db);
			}
		}
		/* until the next full round, unless a request comes first */
		(void) wait_latch(Max(1, pk_worker_naptime -
							  (GetCurrentTimestamp() - last_full) / 1000));
	}
}

/*
 * The pkmerge tables of the worker's database.  Other sessions' temporary
 * tables are left out: their pages are in those sessions' local buffers,
 * out of any other backend's reach (their own sessions compact them at the
 * stop trigger and expire every 64 commits).
 */
static List *
pkmerge_tables(void)
{
	List	   *result = NIL;
	Oid			am = pk_table_am_oid();
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(am))
		return NIL;
	rel = table_open(RelationRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tup);

		if (c->relkind == RELKIND_RELATION && c->relam == am &&
			c->relpersistence != RELPERSISTENCE_TEMP)
			result = lappend_oid(result, c->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * relid's slot in clock: its own, or the one set longest ago (an empty
 * one first), which it then takes over with a time of 0.
 */
static TableClock *
clock_slot(TableClock *clock, Oid relid)
{
	TableClock *slot = &clock[0];

	for (int i = 0; i < CLOCK_TABLES; i++)
	{
		if (clock[i].relid == relid)
			return &clock[i];
		if (clock[i].when < slot->when)
			slot = &clock[i];
	}
	slot->relid = relid;
	slot->when = 0;
	slot->version = InvalidTransactionId;
	slot->pending = true;
	return slot;
}

/*
 * Is it time to look for relid's freed space?  Noted as done if so (a
 * failure is not retried before RECLAIM_MS either).
 */
static bool
reclaim_due(Oid relid)
{
	TimestampTz now = GetCurrentTimestamp();
	TableClock *slot = clock_slot(reclaimed, relid);

	if (!TimestampDifferenceExceeds(slot->when, now, RECLAIM_MS))
		return false;
	slot->when = now;
	return true;
}

/* has relid's compaction waited in vain for its commit lock lately? */
static bool
compaction_blocked(Oid relid)
{
	return !TimestampDifferenceExceeds(clock_slot(blocked, relid)->when,
									   GetCurrentTimestamp(), COMPACT_BACKOFF_MS);
}

/* what one transaction of a table's maintenance does */
typedef enum MaintainStep
{
	STEP_COMPACT,				/* compaction when due, full when scheduled */
	STEP_EXPIRE,				/* a batch of snapshot expiration */
	STEP_RECLAIM				/* free space found, the file's end given back */
} MaintainStep;

/*
 * One step of a table's maintenance, in the current transaction.  Returns
 * the snapshots expired (STEP_EXPIRE), 0 for a compaction, -1 when the
 * table was skipped.
 *
 * The work runs as the table's owner, in a security-restricted operation
 * with its GUC changes undone at the end, as autovacuum's ANALYZE does: key
 * comparisons, hashes and output functions of the key's types may be user
 * code, which must never run with the worker's rights.  An error unwinds
 * both with the transaction.
 */
static int64
maintain_step(Oid relid, MaintainStep step)
{
	Relation	rel;
	PkTable    *t;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int64		result = 0;

	/* skip a table being dropped, altered or truncated: next round */
	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
		return -1;
	/* dropped since the list was made */
	rel = try_table_open(relid, NoLock);
	if (rel == NULL)
		return -1;

	/*
	 * Not ours (the OID of a dropped table reused), another session's
	 * temporary table (a writer's request can name one), one whose option
	 * worker_enabled is off, or a compaction running.  The compaction lock,
	 * taken without waiting, is held to the end of this step's transaction,
	 * so no other compaction or expiration of the table runs beside it.
	 */
	if (!pk_is_pkmerge(rel) || rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP ||
		!pk_table(rel)->opts.worker_enabled ||
		!cat_compaction_trylock(relid))
	{
		table_close(rel, NoLock);
		return -1;
	}

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(rel->rd_rel->relowner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();

	t = pk_table(rel);
	/* a prepared transaction may hold the commit lock: do not wait forever */
	if (step == STEP_COMPACT)
		(void) set_config_option("lock_timeout", COMPACT_LOCK_TIMEOUT, PGC_SUSET,
								 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	if (step == STEP_EXPIRE)
		result = expire_snapshots(rel, WORKER_EXPIRE_BATCH, 0);
	else if (step == STEP_RECLAIM)
	{
		BlockNumber before;
		BlockNumber after;
		BlockNumber used;

		TableClock *slot = clock_slot(reclaimed, relid);
		TransactionId version = InvalidTransactionId;
		TableState	st;

		/* a version unlike the last look's: a commit or compaction since */
		(void) cat_table_version(relid, GetActiveSnapshot(), NULL, &version, &st);
		if (slot->pending || version != slot->version)
		{
			slot->pending = cat_prune_runs(relid);
			slot->version = version;

			/*
			 * Not under ANALYZE or VACUUM (their lock): from PostgreSQL 17
			 * on, ANALYZE reads its sampled blocks itself, up to the size
			 * the file had when it began, and a block truncated away
			 * meanwhile fails it.  Next round, then.
			 */
			if (ConditionalLockRelation(rel, ShareUpdateExclusiveLock))
				space_truncate(rel, &before, &after, &used);
			else
				slot->pending = true;
		}

		/*
		 * The commit log's last record, once its transaction ended, is
		 * marked so, so that no reader ever asks for the status of an old
		 * transaction (commit_log.c).  Last: the commit lock, if free, is
		 * held to the end of this short transaction.
		 */
		if (st.log_run != 0 && cat_commit_trylock(relid))
		{
			TableState	latest = cat_table_state_peek(relid);

			commit_log_resolve(rel, &latest);
		}
	}
	else if (t->opts.changelog_producer == PK_PRODUCER_FULL_COMPACTION &&
			 compact_commits_since_full(rel, t->opts.full_compaction_delta_commits) >=
			 t->opts.full_compaction_delta_commits)
		(void) compact_table(rel, true, true);
	else
		(void) compact_table(rel, false, true);	/* nothing if not due */

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	table_close(rel, NoLock);
	return result;
}

/*
 * maintain_step in a transaction of its own.  An error is logged and
 * counts as a skip (-1): it does not stop the other tables.
 */
static int64
maintain_in_xact(Oid relid, MaintainStep step, MemoryContext round)
{
	volatile int64 result = -1;

	MemoryContextSwitchTo(round);
	PG_TRY();
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, step == STEP_EXPIRE ?
							   "pkchangelog expiration" : step == STEP_RECLAIM ?
							   "pkchangelog space reclaim" : "pkchangelog compaction");
		result = maintain_step(relid, step);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		/* log it, and go on with the other tables */
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(round);
		if (step == STEP_COMPACT && geterrcode() == ERRCODE_LOCK_NOT_AVAILABLE)
			clock_slot(blocked, relid)->when = GetCurrentTimestamp();
		EmitErrorReport();
		AbortOutOfAnyTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
		result = -1;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(round);
	return result;
}

/*
 * Maintain the tables: compaction when due (compact_due; the
 * full-compaction producer's full compaction every
 * full_compaction_delta_commits commits), the space of runs gone found for
 * new runs to reuse and the file's unused end given back (as VACUUM does,
 * at most every RECLAIM_MS per table), then (unless only compaction was
 * asked for) expiration in batches of WORKER_EXPIRE_BATCH snapshots, each
 * committed on its own, so that a backlog drains in transactions of
 * bounded size and an interrupted worker loses one batch at most.  A table
 * gets at most WORKER_EXPIRE_MS of batches per round; the next round goes
 * on from its oldest snapshot left.
 */
static void
maintain_tables(List *tables, bool expire, MemoryContext round)
{
	ListCell   *lc;

	foreach(lc, tables)
	{
		Oid			relid = lfirst_oid(lc);
		TimestampTz start;

		CHECK_FOR_INTERRUPTS();
		reload_config();
		if (!pk_worker_enabled)
			break;
		if (!compaction_blocked(relid))
			(void) maintain_in_xact(relid, STEP_COMPACT, round);
		if (reclaim_due(relid))
			(void) maintain_in_xact(relid, STEP_RECLAIM, round);
		/* expiration even when compaction failed: its backlog must not grow */
		if (!expire)
			continue;
		start = GetCurrentTimestamp();
		for (;;)
		{
			int64		expired = maintain_in_xact(relid, STEP_EXPIRE, round);

			/* the expired snapshots' runs leave rows and space to reclaim */
			if (expired > 0)
				clock_slot(reclaimed, relid)->pending = true;
			if (expired != WORKER_EXPIRE_BATCH ||
				TimestampDifferenceExceeds(start, GetCurrentTimestamp(), WORKER_EXPIRE_MS))
				break;
			CHECK_FOR_INTERRUPTS();
			reload_config();
			if (!pk_worker_enabled)
				break;
		}
	}
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* the pkmerge tables of the database, if the extension is installed */
static List *
tables_to_maintain(bool *installed)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *tables;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	*installed = OidIsValid(get_extension_oid(PK_EXTENSION_NAME, true));
	/* the list must outlive the transaction: made in the caller's context */
	MemoryContextSwitchTo(cxt);
	tables = *installed ? pkmerge_tables() : NIL;
	PopActiveSnapshot();
	CommitTransactionCommand();
	return tables;
}

static void
worker_shmem_exit(int code, Datum arg)
{
	WorkedDatabase *d;

	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	if ((d = shared_slot(DatumGetObjectId(arg))) != NULL && d->worker == MyLatch)
		d->worker = NULL;
	LWLockRelease(&shared->lock);
}

/*
 * Serve the writers' requests until none came for a naptime (at most
 * WORKER_LINGER_MS: DROP DATABASE waits only a few seconds).  Leaving is
 * decided under the lock, so a request either finds this worker's latch
 * or none (and then wakes the launcher).
 */
static void
serve_requests(Oid db, MemoryContext round)
{
	before_shmem_exit(worker_shmem_exit, ObjectIdGetDatum(db));
	for (bool waited = true; pk_worker_enabled;)
	{
		WorkedDatabase *d;
		Oid			requests[MAX_REQUESTS];
		int			n = 0;
		bool		all = false;
		List	   *tables = NIL;

		LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
		if ((d = shared_slot(db)) != NULL)
		{
			n = d->nrequests;
			all = d->overflow;
			memcpy(requests, d->requests, sizeof(Oid) * n);
			d->nrequests = 0;
			d->overflow = false;
			d->worker = (n == 0 && !all && waited) ? NULL : MyLatch;
		}
		LWLockRelease(&shared->lock);
		if (d == NULL || (n == 0 && !all && waited))
			return;
		if (n == 0 && !all)
		{
			waited = !wait_latch(Min(pk_worker_naptime, WORKER_LINGER_MS));
			continue;
		}
		waited = false;
		MemoryContextReset(round);
		MemoryContextSwitchTo(round);
		if (all)
		{
			bool		installed;

			tables = tables_to_maintain(&installed);
		}
		else
			for (int i = 0; i < n; i++)
				tables = lappend_oid(tables, requests[i]);
		maintain_tables(tables, false, round);

		/*
		 * Requests that come meanwhile wait for the next round together:
		 * compacting each table as soon as it is due would make many small
		 * compactions (a transaction and catalog rows each) beside the
		 * writers.  Not woken by them (no latch in the wait).
		 */
		if (pk_worker_request_delay > 0)
		{
			(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 pk_worker_request_delay, PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/*
 * A database's worker: one round over its pkmerge tables, then the
 * writers' requests until they stop (the launcher starts the next worker
 * after the naptime).  Where the extension is not installed it tells the
 * launcher to look again only later.
 */
void
pk_worker_main(Datum arg)
{
	Oid			db = DatumGetObjectId(arg);
	MemoryContext round = AllocSetContextCreate(TopMemoryContext, "pkchangelog worker round",
												ALLOCSET_DEFAULT_SIZES);
	List	   *tables;
	bool		installed;
	WorkedDatabase *d;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* as the bootstrap superuser; each table's work runs as its owner */
	BackgroundWorkerInitializeConnectionByOid(db, InvalidOid, 0);

	/* the last reclaims of the database's tables, as earlier workers left them */
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	if ((d = shared_slot(db)) != NULL)
		reclaimed = d->reclaimed;
	LWLockRelease(&shared->lock);

	/*
	 * Compactions and expirations commit without waiting for their WAL to
	 * reach disk: one lost in a crash never happened (its inputs are still
	 * there), and every later commit's flush covers it.
	 */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	MemoryContextSwitchTo(round);
	tables = tables_to_maintain(&installed);
	set_not_before(db, installed ? 0 :
				   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												(int64) NO_EXTENSION_RECHECK_NAPS * pk_worker_naptime));
	maintain_tables(tables, true, round);
	if (installed)
		serve_requests(db, round);
	proc_exit(0);
}
