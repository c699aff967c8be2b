/*-------------------------------------------------------------------------
 *
 * pkchangelog.c
 *	  Module initialization: refuses to load unless preloaded, defines the
 *	  GUCs, and wires every part's hooks and callbacks into the server.
 *
 * This file owns _PG_init and nothing else of substance: each part
 * registers what it needs through a *_init function declared in its header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "commit.h"
#include "ddl.h"
#include "pkchangelog.h"
#include "pktable.h"
#include "hints.h"
#include "runcache.h"
#include "scan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(pk_library_version);

void
_PG_init(void)
{
	/*
	 * The extension depends on state set up at server start (transaction
	 * callbacks in every backend, the utility hook that keeps pkmerge DDL
	 * consistent, later its WAL resource manager and background worker).
	 * Loading it into a single backend would give a half-working table AM,
	 * so refuse.
	 */
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pkchangelog must be loaded via shared_preload_libraries"),
				 errdetail("The pkmerge table access method needs hooks that are installed at server start."),
				 errhint("Add 'pkchangelog' to shared_preload_libraries in postgresql.conf and restart the server.")));

	pk_guc_init();
	pktable_init();
	commit_init();
	ddl_init();
	onconflict_init();
	sqlfuncs_init();
	scan_init();
	runcache_init();
	worker_init();
	hints_init();
}

/*
 * pk_library_version: the version of the loaded library, checked against
 * the extension script at CREATE EXTENSION.
 */
Datum
pk_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(PKCHANGELOG_VERSION));
}
