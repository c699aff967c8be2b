/*-------------------------------------------------------------------------
 *
 * pkchangelog.c
 *	  Module initialization: refuses to load unless preloaded, and wires
 *	  every part's hooks and callbacks into the server; and the SQL
 *	  functions that report the library's version and the catalog versions
 *	  it accepts (catalog.c knows which).
 *
 * This file owns _PG_init and nothing else of substance: each part
 * registers what it needs through a *_init function declared in its
 * header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "am_onconflict.h"
#include "am_scan.h"
#include "catalog.h"
#include "catalog_lock.h"
#include "catalog_row_ids.h"
#include "key_locks.h"
#include "guc.h"
#include "maint_worker.h"
#include "mat.h"
#include "run_read_stats.h"
#include "shmem.h"
#include "sql_ddl.h"
#include "sql_funcs.h"
#include "table_desc.h"
#include "version.h"
#include "wal_rmgr.h"
#include "write_commit.h"
#include "write_spill.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(pk_library_version);
PG_FUNCTION_INFO_V1(pk_library_accepts);

void
_PG_init(void)
{
	/*
	 * The extension depends on state set up at server start (transaction
	 * callbacks in every backend, the utility hook that keeps pkmerge DDL
	 * consistent, its WAL resource manager and background workers).
	 * Loading it into a single backend would give a half-working table AM,
	 * so refuse.
	 */
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pkchangelog must be loaded via shared_preload_libraries"),
				 errdetail("The pkmerge table access method needs hooks that are installed at server start."),
				 errhint("Add 'pkchangelog' to shared_preload_libraries in postgresql.conf and restart the server.")));

	/*
	 * Every hook and callback the library installs, in one list.  Order
	 * matters where parts hook the same point: a hook installed later runs
	 * first and calls the earlier one.  Three ExecutorStart hooks each act
	 * after the standard ExecutorStart, innermost first: spill_init's
	 * registers the query as a reader of spilled runs, onconflict_init's
	 * prepares the result relations' arbiters, sqlfuncs_init's notes
	 * pk_write's command id; none reads what another does.  Transaction
	 * callbacks run in reverse registration order; catalog_init's acts at
	 * commit and abort only (it forgets which tables' runs changed), so
	 * after the commit path (commit_init's, at pre-commit) has used that;
	 * ddl_init's acts at pre-commit of a VACUUM FULL, which writes no rows.
	 */
	pk_guc_init();				/* pkchangelog.* parameters */
	wal_rmgr_register();		/* WAL resource manager (wal_rmgr_id) */
	catalog_init();				/* xact callback: runs changed; relcache: OIDs */
	pktable_init();				/* relcache callback: table descriptors */
	rowids_init();				/* xact callback: the ids a transaction takes */
	keylocks_init();			/* xact callback: keys locked and removed */
	spill_init();				/* ExecutorStart/End: readers of spills */
	commit_init();				/* xact and subxact callbacks: the commit */
	ddl_init();					/* ProcessUtility, object access, xact callback */
	mat_init();					/* relcache callback: aggregates per source */
	onconflict_init();			/* ExecutorStart: ON CONFLICT arbiters */
	sqlfuncs_init();			/* ExecutorStart: pk_write's command id */
	scan_init();				/* xact callback: scan state */
	worker_init();				/* background workers */
	pk_shmem_init();			/* shared memory of every part (shmem.c) */
	readstats_init();			/* xact callback: cache counters */
	cat_lock_init();			/* resource owner callback: lock waiters */
}

/*
 * pk_library_version: the version of the loaded library, named by the
 * extension script's error when the library does not accept its catalog.
 */
Datum
pk_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(PKCHANGELOG_VERSION));
}

/*
 * pk_library_accepts(script_version): does this library work with the
 * catalog of that version, as it is or once updated (catalog.c)?
 */
Datum
pk_library_accepts(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(cat_version_accepted(text_to_cstring(PG_GETARG_TEXT_PP(0))));
}
