/*-------------------------------------------------------------------------
 *
 * pkchangelog.c
 *	  Module initialization: refuses to load unless preloaded, defines the
 *	  GUCs, and wires every part's hooks and callbacks into the server; and
 *	  the library's version: which catalog versions it works with.
 *
 * This file owns _PG_init and the version checks and nothing else of
 * substance: each part registers what it needs through a *_init function
 * declared in its header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "cachestats.h"
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
PG_FUNCTION_INFO_V1(pk_library_accepts);

/*
 * The catalog versions this library works with: its own, and every version
 * an ALTER EXTENSION pkchangelog UPDATE leads from to its own (the base
 * script and the pkchangelog--OLD--NEW.sql chain in sql/).  Each script
 * asks the library whether it accepts the catalog it makes, so a newer
 * library installs the base script and updates it; an older library, or
 * one with no path from that version, is refused there.
 */
static const char *const catalog_versions[] = {PKCHANGELOG_VERSION};

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
	cachestats_init();
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

static bool
accepts(const char *version)
{
	for (int i = 0; i < lengthof(catalog_versions); i++)
		if (strcmp(version, catalog_versions[i]) == 0)
			return true;
	return false;
}

/*
 * pk_library_accepts(script_version): does this library work with the
 * catalog of that version, as it is or once updated (catalog_versions)?
 */
Datum
pk_library_accepts(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(accepts(text_to_cstring(PG_GETARG_TEXT_PP(0))));
}

/*
 * The installed extension's version (pg_extension.extversion) when it is
 * not this library's but one the library can be updated from: the catalog
 * an ALTER EXTENSION pkchangelog UPDATE has yet to bring to this library's
 * shape.  NULL otherwise.
 */
char *
pk_catalog_to_update(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("pkchangelog"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (version && (strcmp(version, PKCHANGELOG_VERSION) == 0 || !accepts(version)))
		version = NULL;
	return version;
}
