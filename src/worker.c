/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  Background workers: a launcher, registered at server start, keeps one
 *	  worker per database running; each worker, where the extension is
 *	  installed, goes over the pkmerge tables every
 *	  pkchangelog.worker_naptime and, for each, compacts when it has
 *	  num_sorted_run_compaction_trigger sorted runs, runs the full
 *	  compaction of the full-compaction producer every
 *	  full_compaction_delta_commits commits, and expires snapshots.
 *
 * Each table is handled in a transaction of its own; a table some other
 * session holds a conflicting lock on is skipped until the next round, and
 * an error on one table is logged and does not stop the others.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "compaction.h"
#include "expire.h"
#include "pkchangelog.h"
#include "pktable.h"

PGDLLEXPORT void pk_launcher_main(Datum arg);
PGDLLEXPORT void pk_worker_main(Datum arg);

#define MAX_WORKED_DATABASES 256
/* a database without the extension is looked at again after this many naptimes */
#define NO_EXTENSION_RECHECK_NAPS 30

/*
 * Shared between the launcher and the workers: when each database may get
 * its next worker.  A worker does one round and exits, so that DROP
 * DATABASE (which waits only a few seconds for other sessions to leave)
 * is not held up by an idle worker.
 */
typedef struct WorkerShared
{
	slock_t		mutex;
	int			ndbs;
	Oid			db[MAX_WORKED_DATABASES];
	TimestampTz not_before[MAX_WORKED_DATABASES];
} WorkerShared;

static WorkerShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

static void
worker_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(WorkerShared)));
}

static void
worker_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("pkchangelog workers", sizeof(WorkerShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(WorkerShared));
		SpinLockInit(&shared->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* slot of db in the shared table, added if new; -1 when full */
static int
shared_slot(Oid db)
{
	int			i;

	for (i = 0; i < shared->ndbs; i++)
		if (shared->db[i] == db)
			return i;
	if (shared->ndbs == MAX_WORKED_DATABASES)
		return -1;
	shared->db[i] = db;
	shared->not_before[i] = 0;
	return shared->ndbs++;
}

static void
set_not_before(Oid db, TimestampTz t)
{
	int			i;

	SpinLockAcquire(&shared->mutex);
	if ((i = shared_slot(db)) >= 0)
		shared->not_before[i] = t;
	SpinLockRelease(&shared->mutex);
}

static bool
may_start(Oid db)
{
	int			i;
	bool		result;

	SpinLockAcquire(&shared->mutex);
	i = shared_slot(db);
	result = i >= 0 && GetCurrentTimestamp() >= shared->not_before[i];
	SpinLockRelease(&shared->mutex);
	return result;
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

	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = worker_shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = worker_shmem_startup;
}

static void
wait_naptime(void)
{
	int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   pk_worker_naptime, PG_WAIT_EXTENSION);

	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
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

/*
 * The launcher: connected to no database, it starts a worker for each
 * database that has none running, each round.
 */
void
pk_launcher_main(Datum arg)
{
	Oid			dbs[MAX_WORKED_DATABASES];
	BackgroundWorkerHandle *handles[MAX_WORKED_DATABASES];
	int			ndbs = 0;
	MemoryContext round = AllocSetContextCreate(TopMemoryContext, "pkchangelog launcher round",
												ALLOCSET_DEFAULT_SIZES);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	for (;;)
	{
		ListCell   *lc;

		MemoryContextReset(round);
		MemoryContextSwitchTo(round);
		if (pk_worker_enabled)
		{
			foreach(lc, databases())
			{
				Oid			db = lfirst_oid(lc);
				int			i;
				pid_t		pid;
				BackgroundWorker bgw;

				for (i = 0; i < ndbs && dbs[i] != db; i++)
					;
				if (i < ndbs &&
					GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED)
					continue;	/* running (or starting) */
				if (!may_start(db))
					continue;	/* no extension there, looked at recently */
				if (i == ndbs)
				{
					if (ndbs == MAX_WORKED_DATABASES)
						continue;
					dbs[ndbs++] = db;
				}
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
				if (!RegisterDynamicBackgroundWorker(&bgw, &handles[i]))
					ereport(LOG,
							(errmsg("pkchangelog could not start a worker for database %u", db),
							 errhint("Raise max_worker_processes.")));
			}
		}
		wait_naptime();
	}
}

/* the pkmerge tables of the worker's database */
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

		if (c->relkind == RELKIND_RELATION && c->relam == am)
			result = lappend_oid(result, c->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/* the maintenance of one table, in the current transaction */
static void
maintain(Oid relid)
{
	Relation	rel;
	PkTable    *t;

	/* skip a table being dropped, altered or truncated: next round */
	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
		return;
	rel = try_table_open(relid, NoLock);
	if (rel == NULL)
		return;
	/* a pk_compact running on it: next round, rather than wait */
	if (!cat_compaction_trylock(relid))
	{
		table_close(rel, NoLock);
		return;
	}
	t = pk_table(rel);
	if (t->opts.changelog_producer == PK_PRODUCER_FULL_COMPACTION &&
		compact_commits_since_full(rel) >= t->opts.full_compaction_delta_commits)
		(void) compact_table(rel, true, false, NIL);
	else if (compact_needed(rel, false, NIL))
		(void) compact_table(rel, false, false, NIL);
	(void) expire_snapshots(rel);
	table_close(rel, NoLock);
}

/*
 * A database's worker: one round over its pkmerge tables, then exit (the
 * launcher starts the next one after the naptime).  Where the extension is
 * not installed it tells the launcher to look again only later.
 */
void
pk_worker_main(Datum arg)
{
	Oid			db = DatumGetObjectId(arg);
	MemoryContext round = AllocSetContextCreate(TopMemoryContext, "pkchangelog worker round",
												ALLOCSET_DEFAULT_SIZES);
	List	   *tables;
	ListCell   *lc;
	bool		installed;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(db, InvalidOid, 0);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	installed = OidIsValid(get_extension_oid("pkchangelog", true));
	/* the list must outlive the transaction */
	MemoryContextSwitchTo(round);
	tables = installed ? pkmerge_tables() : NIL;
	PopActiveSnapshot();
	CommitTransactionCommand();
	set_not_before(db, installed ? 0 :
				   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												(int64) NO_EXTENSION_RECHECK_NAPS * pk_worker_naptime));

	foreach(lc, tables)
	{
		Oid			relid = lfirst_oid(lc);

		CHECK_FOR_INTERRUPTS();
		if (!pk_worker_enabled)
			break;
		MemoryContextSwitchTo(round);
		PG_TRY();
		{
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			pgstat_report_activity(STATE_RUNNING, "pkchangelog maintenance");
			maintain(relid);
			PopActiveSnapshot();
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			/* log it, and go on with the other tables */
			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(round);
			EmitErrorReport();
			AbortOutOfAnyTransaction();
			FlushErrorState();
			RESUME_INTERRUPTS();
		}
		PG_END_TRY();
	}
	proc_exit(0);
}
