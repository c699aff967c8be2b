/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The extension's catalog tables (schema pkchangelog: tables, snapshots,
 *	  runs, consumers, materializations), the plumbing every catalog file
 *	  uses: their OIDs and shapes, opened by name and checked against the
 *	  columns this library reads and writes (a catalog of another version
 *	  is refused, with the hint to update it); which catalog versions the
 *	  library works with; which tables' runs the transaction changed, for
 *	  the caches of run lists; and a table's rows dropped with it.
 *
 * The rows themselves are read and written by one file per table:
 * catalog_runs.c, catalog_tables.c, catalog_snapshots.c (with the commit
 * log's records of small commits), catalog_consumers.c and
 * catalog_mat.c; catalog_visible.c answers which runs a snapshot sees.
 * Column numbers follow the CREATE TABLE statements of the extension
 * script.  Rows are read with the caller's MVCC snapshot, so what a reader
 * sees of them is exactly what PostgreSQL's visibility rules say.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "relcache_hub.h"
#include "version.h"

static char *cat_version_to_update(void);
static void cat_oids_invalidate(Datum arg, Oid relid);

const char *const cat_run_kinds[] = {"data", "changelog", "delta", "log"};

/*
 * The tables whose runs rows this transaction changed: changing, by any
 * change (its own new runs included); rewriting, by a change of runs
 * committed before (compaction, TRUNCATE, VACUUM FULL).  Whoever caches
 * run lists read from committed state asks cat_runs_changed before it
 * answers from the cache, as PostgreSQL's caches learn of changes from
 * invalidations rather than from calls up into them.  Forgotten at
 * transaction end.
 */
static List *changing = NIL;
static List *rewriting = NIL;

/* this backend's changes of committed runs so far (cat_runs_rewrite_mark) */
static uint64 rewrite_mark = 0;

/* this backend's transactions that ended after rewriting some table's runs */
static uint64 rewrites_ended = 0;

void
cat_note_change(Oid relid, bool own_run)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	if (!list_member_oid(changing, relid))
		changing = lappend_oid(changing, relid);
	if (!own_run && !list_member_oid(rewriting, relid))
		rewriting = lappend_oid(rewriting, relid);
	if (!own_run)
		rewrite_mark++;
	MemoryContextSwitchTo(old);
}

/*
 * A compaction step of this transaction replaces relid's committed runs,
 * whether or not it writes their rows (a delta kept in its row is not
 * written): from now on the transaction reads the table's runs from the
 * catalog, never from a list cached or published before.
 */
void
cat_runs_replaced(Oid relid)
{
	cat_note_change(relid, false);
}

/*
 * Has this transaction changed relid's runs rows (committed_only: other
 * than by adding runs of its own)?
 */
bool
cat_runs_changed(Oid relid, bool committed_only)
{
	return list_member_oid(committed_only ? rewriting : changing, relid);
}

/*
 * A number that moves with every change this backend makes to committed
 * runs' rows, of any table: a list a step of the transaction stored after
 * its own changes is the catalog's still while this has not moved since
 * (run_list.c, own_version).
 */
uint64
cat_runs_rewrite_mark(void)
{
	return rewrite_mark;
}

/*
 * How many of this backend's transactions have ended (committed or not)
 * after rewriting some table's committed runs: a cache that keeps a list
 * across transactions without reading the catalog (run_list.c's
 * estimates) drops it when this moves.
 */
uint64
cat_runs_rewrites(void)
{
	return rewrites_ended;
}

static void
catalog_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (rewriting != NIL)
				rewrites_ended++;
			list_free(changing);
			changing = NIL;
			list_free(rewriting);
			rewriting = NIL;
			break;
		default:
			break;
	}
}

void
catalog_init(void)
{
	RegisterXactCallback(catalog_xact_callback, NULL);
	hub_register_relcache(cat_oids_invalidate, (Datum) 0);
}

/*
 * The catalog relations' OIDs found so far, by name: a commit opens the
 * catalog several times, and each lookup by name took two syscache
 * searches.  An invalidation of any of them (DROP EXTENSION drops them all)
 * or of every relation forgets them all, as it forgets what cat_open and
 * cat_has_column found of their shapes; a name not found is not kept
 * (CREATE EXTENSION may make it).
 */
#define CAT_OIDS_KEPT 24
static struct
{
	char		name[NAMEDATALEN];
	Oid			oid;
}			cat_oids[CAT_OIDS_KEPT];
static int	ncat_oids = 0;

static void cat_shapes_forget(void);

static void
cat_oids_invalidate(Datum arg, Oid relid)
{
	for (int i = 0; i < ncat_oids; i++)
	{
		if (!OidIsValid(relid) || cat_oids[i].oid == relid)
		{
			ncat_oids = 0;
			cat_shapes_forget();
			return;
		}
	}
}

Oid
cat_oid(const char *relname, bool missing_ok)
{
	Oid			nsp;
	Oid			relid;

	for (int i = 0; i < ncat_oids; i++)
		if (strcmp(cat_oids[i].name, relname) == 0)
			return cat_oids[i].oid;
	nsp = get_namespace_oid(PK_CATALOG_SCHEMA, missing_ok);
	relid = OidIsValid(nsp) ? get_relname_relid(relname, nsp) : InvalidOid;
	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("pkchangelog catalog table \"%s\" does not exist", relname),
				 errhint("Run CREATE EXTENSION pkchangelog in this database.")));
	if (OidIsValid(relid) && ncat_oids < CAT_OIDS_KEPT &&
		strlen(relname) < NAMEDATALEN)
	{
		strlcpy(cat_oids[ncat_oids].name, relname, NAMEDATALEN);
		cat_oids[ncat_oids].oid = relid;
		ncat_oids++;
	}
	return relid;
}

/* every catalog table's primary key index is named <table>_pkey */
Oid
cat_index_oid(const char *relname)
{
	return cat_oid(psprintf("%s_pkey", relname), false);
}

/* scan the rows of one table (relid = first key column) */
SysScanDesc
cat_scan(Relation crel, const char *relname, Oid relid, Snapshot snapshot)
{
	ScanKeyData key;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	return systable_beginscan(crel, cat_index_oid(relname), true, snapshot, 1, &key);
}

/*
 * The columns of each catalog table, as the extension script creates them
 * and this library reads and writes them.  The catalog of an unreleased
 * build may differ; rows are unpacked into arrays of these sizes, so a
 * table of another shape is refused before any row is read.
 */
static const Oid tables_types[Natts_tables] = {
	OIDOID, INT8OID, INT8OID, INT8OID, INT8OID, INT8ARRAYOID, INT8OID, INT8OID, INT8OID
};
static const Oid snapshots_types[Natts_snapshots] = {
	OIDOID, INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, XID8OID, INT8OID,
	INT8OID, INT8OID, TEXTOID, FLOAT8OID, INT8OID, BYTEAOID, BYTEAOID, INT8OID,
	TEXTOID, TEXTOID
};
static const Oid runs_types[Natts_runs] = {
	OIDOID, INT8OID, OIDOID, INT4OID, TEXTOID, BOOLOID, INT8OID, INT4OID,
	INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TEXTOID, TEXTOID, BYTEAOID
};

static const Oid consumers_types[Natts_consumers] = {
	OIDOID, TEXTOID, INT8OID, TIMESTAMPTZOID
};

static const Oid materializations_types[Natts_materializations] = {
	OIDOID, OIDOID, TEXTOID, OIDARRAYOID, INT8OID
};

static const struct
{
	const char *name;
	int			natts;
	const Oid  *types;
}			cat_shapes[] = {
	[CAT_TABLES] = {"tables", Natts_tables, tables_types},
	[CAT_SNAPSHOTS] = {"snapshots", Natts_snapshots, snapshots_types},
	[CAT_RUNS] = {"runs", Natts_runs, runs_types},
	[CAT_CONSUMERS] = {"consumers", Natts_consumers, consumers_types},
	[CAT_MATERIALIZATIONS] = {"materializations", Natts_materializations,
	materializations_types},
};

/* is typid what this library reads in column i of catalog table which? */
static bool
cat_type_matches(CatTable which, int i, Oid typid)
{
	if (typid == cat_shapes[which].types[i])
		return true;
	/* before catalog 0.10, the committing role is a name */
	return which == CAT_SNAPSHOTS && i == Anum_snapshots_commit_user - 1 &&
		typid == NAMEOID;
}

/* a catalog table's name (in schema pkchangelog) */
const char *
cat_table_name(CatTable which)
{
	return cat_shapes[which].name;
}

/*
 * Per catalog table, the descriptor cat_open last found of the shape this
 * library reads (a relcache entry keeps its descriptor while the table's
 * columns stay as they are), and the most columns cat_has_column has seen
 * it have; both forgotten with the OIDs (cat_oids_invalidate).
 */
static TupleDesc cat_shape_checked[lengthof(cat_shapes)];
static int	cat_natts_seen[lengthof(cat_shapes)];

static void
cat_shapes_forget(void)
{
	memset(cat_shape_checked, 0, sizeof(cat_shape_checked));
	memset(cat_natts_seen, 0, sizeof(cat_natts_seen));
}

/* open a catalog table, checked to have the columns this library reads */
Relation
cat_open(CatTable which, LOCKMODE lockmode)
{
	const char *name = cat_shapes[which].name;
	Relation	crel = table_open(cat_oid(name, false), lockmode);
	TupleDesc	desc = RelationGetDescr(crel);
	bool		match;

	if (desc == cat_shape_checked[which])
		return crel;
	match = desc->natts == cat_shapes[which].natts ||
		/* before catalog 0.11, tables has no commit log columns */
		(which == CAT_TABLES && desc->natts == Anum_tables_log_run - 1) ||
		/* before catalog 0.5, runs has no stream column */
		(which == CAT_RUNS && desc->natts == Anum_runs_stream - 1) ||
		/* before catalog 0.8, snapshots has no changelog columns */
		(which == CAT_SNAPSHOTS && desc->natts == Anum_snapshots_changelog_run_id - 1) ||
		/* before catalog 0.9, no data columns */
		(which == CAT_SNAPSHOTS && desc->natts == Anum_snapshots_data - 1);

	for (int i = 0; match && i < desc->natts; i++)
		match = !TupleDescAttr(desc, i)->attisdropped &&
			cat_type_matches(which, i, TupleDescAttr(desc, i)->atttypid);
	if (!match)
	{
		/* a catalog this library updates from is not to be dropped */
		char	   *old_version = cat_version_to_update();

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pkchangelog catalog does not match the pkchangelog library"),
				 errdetail("pkchangelog.%s has other columns than the %d this library reads.",
						   name, cat_shapes[which].natts),
				 old_version ?
				 errhint("The extension is at version %s: update it to version %s with ALTER EXTENSION pkchangelog UPDATE.",
						 old_version, PKCHANGELOG_VERSION) :
				 errhint("The extension was created by another build of version %s: drop and create it again.",
						 PKCHANGELOG_VERSION)));
	}
	cat_shape_checked[which] = desc;
	return crel;
}

/* a run's inline stream as a bytea */
bytea *
cat_stream_bytea(const RunInfo *r)
{
	bytea	   *b = palloc(VARHDRSZ + r->stream_len);

	SET_VARSIZE(b, VARHDRSZ + r->stream_len);
	memcpy(VARDATA(b), r->stream, r->stream_len);
	return b;
}

/* has catalog table which column anum (catalogs before an update lack some)? */
static bool
cat_has_column(CatTable which, int anum)
{
	Relation	crel;

	/* an update adds columns, never takes one away */
	if (cat_natts_seen[which] >= anum)
		return true;
	crel = cat_open(which, AccessShareLock);
	cat_natts_seen[which] = RelationGetDescr(crel)->natts;
	table_close(crel, AccessShareLock);
	return cat_natts_seen[which] >= anum;
}

/*
 * Can a run's row hold its bytes (catalog 0.5)?  Before the update, small
 * runs keep their pages.
 */
bool
cat_runs_hold_streams(void)
{
	return cat_has_column(CAT_RUNS, Anum_runs_stream);
}

/*
 * Can a snapshot's row hold its changelog run (catalog 0.8)?  Before the
 * update, every changelog run has a row of its own.
 */
bool
cat_snapshots_hold_changelogs(void)
{
	return cat_has_column(CAT_SNAPSHOTS, Anum_snapshots_changelog);
}

/*
 * Can a snapshot's row hold its commit's data run (catalog 0.9)?  Before the
 * update, every data run has a row of its own.
 */
bool
cat_snapshots_hold_data(void)
{
	return cat_has_column(CAT_SNAPSHOTS, Anum_snapshots_data_max_key);
}

/* can the table's row name a commit log (catalog 0.11)? */
bool
cat_tables_hold_log(void)
{
	return cat_has_column(CAT_TABLES, Anum_tables_log_block);
}

/* a snapshot's commit_kind, as pkchangelog.snapshots shows it */
const char *
cat_commit_kind_name(CommitKind kind)
{
	static const char *const kinds[] = {"APPEND", "COMPACT", "OVERWRITE"};

	return kinds[kind];
}

/* was the row written by a transaction that aborted or crashed? */
bool
cat_inserter_aborted(HeapTuple tup)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

	return !TransactionIdIsCurrentTransactionId(xmin) &&
		!TransactionIdIsInProgress(xmin) &&
		!TransactionIdDidCommit(xmin);
}

/* delete every row of relid in one catalog table, as the latest snapshot sees them */
void
cat_delete_rows(const char *relname, Oid relid, bool missing_ok)
{
	Oid			coid = cat_oid(relname, missing_ok);
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(coid))
		return;
	crel = table_open(coid, RowExclusiveLock);
	scan = cat_scan(crel, relname, relid, GetLatestSnapshot());
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		CatalogTupleDelete(crel, &tup->t_self);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
}

/*
 * DROP TABLE: every catalog row of the table.  The catalog itself may be
 * gone already when DROP EXTENSION ... CASCADE drops it first.
 */
void
cat_drop_table(Oid relid)
{
	Oid			nsp = get_namespace_oid(PK_CATALOG_SCHEMA, true);

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("runs_pkey", nsp)) ||
		!OidIsValid(get_relname_relid("snapshots_pkey", nsp)) ||
		!OidIsValid(get_relname_relid("tables_pkey", nsp)))
		return;
	cat_note_change(relid, false);
	cat_delete_rows("runs", relid, true);
	cat_delete_rows("snapshots", relid, true);
	cat_delete_rows("tables", relid, true);
	cat_delete_rows("consumers", relid, true);
	cat_delete_rows("materializations", relid, true);
	cat_delete_rows("row_ids", relid, true);
}

Oid
cat_runs_relid(void)
{
	return cat_oid("runs", false);
}

Oid
cat_tables_relid(void)
{
	return cat_oid("tables", false);
}

/*
 * The catalog versions this library works with: its own, and every version
 * an ALTER EXTENSION pkchangelog UPDATE leads from to its own (the base
 * script and the pkchangelog--OLD--NEW.sql chain in sql/).  Each script
 * asks the library whether it accepts the catalog it makes, so a newer
 * library installs the base script and updates it; an older library, or
 * one with no path from that version, is refused there.
 */
static const char *const catalog_versions[] = {PKCHANGELOG_CATALOG_VERSIONS};

/* does this library work with the catalog of version, once updated? */
bool
cat_version_accepted(const char *version)
{
	for (int i = 0; i < lengthof(catalog_versions); i++)
		if (strcmp(version, catalog_versions[i]) == 0)
			return true;
	return false;
}

/*
 * The installed extension's version (pg_extension.extversion) when it is
 * not this library's but one the library can be updated from: the catalog
 * an ALTER EXTENSION pkchangelog UPDATE has yet to bring to this library's
 * shape.  NULL otherwise.
 */
static char *
cat_version_to_update(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(PK_EXTENSION_NAME));
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
	if (version && (strcmp(version, PKCHANGELOG_VERSION) == 0 || !cat_version_accepted(version)))
		version = NULL;
	return version;
}
