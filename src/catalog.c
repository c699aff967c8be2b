/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reads and writes the extension's catalog tables (pkchangelog.tables,
 *	  .snapshots, .runs, .consumers, .materializations) with direct heap and index access (catalog_lock.c
 *	  has the locks that order their changes), records which tables' runs
 *	  the transaction changed, and knows which catalog versions (of the
 *	  extension's scripts) this library works with.
 *
 * Column numbers follow the CREATE TABLE statements of the extension
 * script.  Runs and snapshots are read with the caller's MVCC snapshot, so
 * what a reader sees of them is exactly what PostgreSQL's visibility rules
 * say; the per-table counters are read with the latest snapshot under the
 * commit lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "catalog.h"
#include "commit_log.h"
#include "relcache_hub.h"
#include "tid.h"
#include "version.h"

static const char *const run_kinds[] = {"data", "changelog", "delta", "log"};

static char *cat_version_to_update(void);
static void cat_oids_invalidate(Datum arg, Oid relid);
static bool inserter_aborted(HeapTuple tup);
static RunInfo *logged_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot);
static List *logged_snapshots(Oid relid, int64 from, int64 to, int limit,
							  Snapshot snapshot, bool with_changelog);
static bool table_row_version(Oid relid, Snapshot snapshot,
							  const ItemPointerData *hint, TransactionId *xmin,
							  TableState *st);
static List *log_records(Relation rel, int64 from, int64 to, int limit,
						 Snapshot snapshot, Snapshot pages_snapshot,
						 const TableState *st);

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

static void
note_change(Oid relid, bool own_run)
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
	note_change(relid, false);
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
 * (run_cache.c, own_version).
 */
uint64
cat_runs_rewrite_mark(void)
{
	return rewrite_mark;
}

/*
 * How many of this backend's transactions have ended (committed or not)
 * after rewriting some table's committed runs: a cache that keeps a list
 * across transactions without reading the catalog (run_cache.c's
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

static Oid
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
static Oid
cat_index_oid(const char *relname)
{
	return cat_oid(psprintf("%s_pkey", relname), false);
}

/* scan the rows of one table (relid = first key column) */
static SysScanDesc
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
typedef enum CatTable
{
	CAT_TABLES,
	CAT_SNAPSHOTS,
	CAT_RUNS,
	CAT_CONSUMERS,
	CAT_MATERIALIZATIONS
} CatTable;

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
static Relation
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
static bytea *
stream_bytea(const RunInfo *r)
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

/*
 * The storage relid has now, which a run without pages belongs to whatever
 * storage it was written in.  A caller that reads the run holds a lock on
 * the table; pk_runs, which lists runs without one, may find the table
 * dropped meanwhile (InvalidOid: it does not show the storage).
 */
static Oid
current_relfilenode(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	Oid			relfilenode;

	if (!RelationIsValid(rel))
		return InvalidOid;
	relfilenode = rel->rd_node.relNode;
	RelationClose(rel);
	return relfilenode;
}

/*
 * A run a snapshot's row holds in its column anum (v: the deformed row):
 * stored compact (run_format.h), its row count is its block's, which
 * the block's CRC covers when the run is read.  It has no pages, so
 * it is in the table's current storage.
 */
static RunInfo *
snapshot_run(const Datum *v, int anum, RunKind kind)
{
	bytea	   *b = DatumGetByteaPCopy(v[anum - 1]);
	RunInfo    *r = palloc0(sizeof(RunInfo));

	r->kind = kind;
	r->in_snapshot_row = true;
	r->created_snapshot = DatumGetInt64(v[Anum_snapshots_snapshot_id - 1]);
	r->relfilenode = current_relfilenode(DatumGetObjectId(v[Anum_snapshots_relid - 1]));
	r->stream = VARDATA(b);
	r->stream_len = VARSIZE(b) - VARHDRSZ;
	r->size_bytes = r->stream_len;
	r->record_count = run_compact_nrows(r->stream, r->stream_len);
	return r;
}

/* the changelog run a snapshot's row holds (v, n: the deformed row), or NULL */
static RunInfo *
snapshot_changelog(Relation crel, const Datum *v, const bool *n)
{
	RunInfo    *r;

	if (RelationGetDescr(crel)->natts < Anum_snapshots_changelog ||
		n[Anum_snapshots_changelog_run_id - 1] || n[Anum_snapshots_changelog - 1])
		return NULL;
	r = snapshot_run(v, Anum_snapshots_changelog, RUN_CHANGELOG);
	r->run_id = DatumGetInt64(v[Anum_snapshots_changelog_run_id - 1]);
	return r;
}

/*
 * The data run kept in a snapshot's row (values v, nulls n of crel, the
 * snapshots table), or NULL.  Its run id is minus the snapshot's id.
 */
static RunInfo *
snapshot_data(Relation crel, const Datum *v, const bool *n)
{
	RunInfo    *r;

	if (RelationGetDescr(crel)->natts < Anum_snapshots_data_max_key ||
		n[Anum_snapshots_data - 1] || n[Anum_snapshots_data_seq - 1])
		return NULL;
	r = snapshot_run(v, Anum_snapshots_data, RUN_DATA);
	r->run_id = -r->created_snapshot;
	r->from_commit = true;
	r->row_base = pk_inline_row_base(r->run_id);
	r->min_seq = r->max_seq = DatumGetInt64(v[Anum_snapshots_data_seq - 1]);
	if (!n[Anum_snapshots_data_min_key - 1])
		r->min_key = TextDatumGetCString(v[Anum_snapshots_data_min_key - 1]);
	if (!n[Anum_snapshots_data_max_key - 1])
		r->max_key = TextDatumGetCString(v[Anum_snapshots_data_max_key - 1]);
	return r;
}

/*
 * The data run kept in relid's snapshot snapshot_id's row as snapshot sees
 * it (NULL: no such row, or none in it).
 */
static RunInfo *
snapshot_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	RunInfo    *r = NULL;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(snapshot_id));
	scan = systable_beginscan(crel, cat_index_oid("snapshots"), true, snapshot, 2, key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];

		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		r = snapshot_data(crel, v, n);
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	/* a small commit's snapshot is a record of the commit log */
	if (!HeapTupleIsValid(tup))
		r = logged_data_run(relid, snapshot_id, snapshot);
	return r;
}

/*
 * Scan positioned on the version of a run's row that snapshot sees (*tup
 * invalid if none); end it with systable_endscan.
 */
static SysScanDesc
run_row_find(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup)
{
	ScanKeyData key[2];
	SysScanDesc scan;

	ScanKeyInit(&key[0], Anum_runs_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_runs_run_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(run_id));
	scan = systable_beginscan(crel, cat_index_oid("runs"), true, snapshot, 2, key);
	*tup = systable_getnext(scan);
	return scan;
}

/* the same, for a row snapshot must see */
static SysScanDesc
run_row_as(Relation crel, Oid relid, int64 run_id, Snapshot snapshot, HeapTuple *tup)
{
	SysScanDesc scan = run_row_find(crel, relid, run_id, snapshot, tup);

	if (!HeapTupleIsValid(*tup))
		elog(ERROR, "run %lld of relation %u is gone", (long long) run_id, relid);
	return scan;
}

/*
 * The latest version of a run's row (ours to change: callers hold the
 * locks that order changes of it).
 */
static SysScanDesc
run_row(Relation crel, Oid relid, int64 run_id, HeapTuple *tup)
{
	return run_row_as(crel, relid, run_id, GetLatestSnapshot(), tup);
}

static RunInfo *run_from_tuple(Relation crel, HeapTuple tup);

static int
run_id_cmp(const ListCell *a, const ListCell *b)
{
	int64		ra = ((RunInfo *) lfirst(a))->run_id;
	int64		rb = ((RunInfo *) lfirst(b))->run_id;

	return (ra > rb) - (ra < rb);
}

/*
 * Sort a list of runs in run id order.  Lists are mostly made from sorted
 * ones with a run or two added at the end (a commit's data run, whose id
 * is below the others'): an insertion sort orders those in linear time,
 * and gives way to list_sort when it finds the list far from sorted.
 */
void
cat_runs_sort(List *runs)
{
	int			n = list_length(runs);
	int			moves = 0;

	for (int i = 1; i < n; i++)
	{
		ListCell	cell = runs->elements[i];
		int64		id = ((RunInfo *) lfirst(&cell))->run_id;
		int			j = i;

		while (j > 0 && ((RunInfo *) lfirst(&runs->elements[j - 1]))->run_id > id)
		{
			runs->elements[j] = runs->elements[j - 1];
			j--;
			if (++moves > 4 * n)
			{
				runs->elements[j] = cell;
				list_sort(runs, run_id_cmp);
				return;
			}
		}
		runs->elements[j] = cell;
	}
}

/*
 * A run's row as snapshot sees it (it must see one): the run's own row, or,
 * for a commit's data run kept in its snapshot's row (a negative id), that
 * one (its own row if expiration moved it there).
 */
RunInfo *
cat_run_get(Oid relid, int64 run_id, Snapshot snapshot)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	RunInfo    *r;

	if (run_id < 0 && (r = snapshot_data_run(relid, -run_id, snapshot)) != NULL)
		return r;
	crel = cat_open(CAT_RUNS, AccessShareLock);
	scan = run_row_as(crel, relid, run_id, snapshot, &tup);
	r = run_from_tuple(crel, tup);
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return r;
}

/* the run's row snapshot sees, or NULL (a run with a row of its own) */
RunInfo *
cat_run_find(Oid relid, int64 run_id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	HeapTuple	tup;
	SysScanDesc scan = run_row_find(crel, relid, run_id, snapshot, &tup);
	RunInfo    *r = HeapTupleIsValid(tup) ? run_from_tuple(crel, tup) : NULL;

	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return r;
}

/* update columns of a run's row: values[i] into column attnums[i] */
static void
run_update(Oid relid, int64 run_id, int ncols, const int *attnums,
		   const Datum *newvalues, bool own_run)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	Datum		values[Natts_runs] = {0};
	bool		nulls[Natts_runs] = {0};
	bool		replace[Natts_runs] = {0};

	note_change(relid, own_run);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	/* a data run kept in its snapshot's row has no row of its own to update */
	scan = run_id < 0 ? run_row_find(crel, relid, run_id, GetLatestSnapshot(), &tup) :
		run_row(crel, relid, run_id, &tup);
	if (!HeapTupleIsValid(tup))
	{
		systable_endscan(scan);
		table_close(crel, RowExclusiveLock);
		return;
	}
	for (int i = 0; i < ncols; i++)
	{
		values[attnums[i] - 1] = newvalues[i];
		replace[attnums[i] - 1] = true;
	}
	CatalogTupleUpdate(crel, &tup->t_self,
					   heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace));
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/* a compaction's output gets its snapshot id when the compaction commits */
void
cat_run_set_snapshot(Oid relid, int64 run_id, int64 snapshot_id)
{
	int			attnum = Anum_runs_created_snapshot;
	Datum		value = Int64GetDatum(snapshot_id);

	run_update(relid, run_id, 1, &attnum, &value, false);
}

/*
 * VACUUM FULL copied a run into the table's new storage (space_rewrite):
 * its row names the new file and place; the run id stays, as it is in the
 * run's header and in the table's list of data runs.
 */
void
cat_run_move(Oid relid, int64 run_id, Oid relfilenode, BlockNumber start_block,
			 int64 row_base)
{
	int			attnums[3] = {Anum_runs_relfilenode, Anum_runs_start_block, Anum_runs_row_base};
	Datum		values[3] = {ObjectIdGetDatum(relfilenode), Int64GetDatum((int64) start_block),
	Int64GetDatum(row_base)};

	run_update(relid, run_id, 3, attnums, values, false);
}

/* a spilled run joins its commit: its sequence number and snapshot id */
void
cat_run_finalize(Oid relid, int64 run_id, int64 seq, int64 snapshot_id)
{
	int			attnums[3] = {Anum_runs_min_seq, Anum_runs_max_seq, Anum_runs_created_snapshot};
	Datum		values[3] = {Int64GetDatum(seq), Int64GetDatum(seq), Int64GetDatum(snapshot_id)};

	run_update(relid, run_id, 3, attnums, values, true);
}

/*
 * A commit's data run replaced by compaction, kept as its snapshot's delta:
 * readers whose MVCC snapshot predates the compaction still see it as data.
 * A new version of the row, a HOT one when its page has room (no column
 * it changes is indexed): readers whose snapshot sees the tables row
 * version naming the run find the old version by run id.
 */
void
cat_run_retire(Oid relid, const RunInfo *run)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;
	Datum		values[Natts_runs] = {0};
	bool		nulls[Natts_runs] = {0};
	bool		replace[Natts_runs] = {0};
	HeapTuple	delta;

	note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	scan = run_row(crel, relid, run->run_id, &tup);
	values[Anum_runs_kind - 1] = CStringGetTextDatum("delta");
	replace[Anum_runs_kind - 1] = true;
	/* (before catalog 0.5 the run keeps its pages) */
	if (run->stream && RelationGetDescr(crel)->natts >= Anum_runs_stream)
	{
		/* its pages are free once no snapshot sees the row's old version */
		values[Anum_runs_stream - 1] = PointerGetDatum(stream_bytea(run));
		values[Anum_runs_start_block - 1] = Int64GetDatum(0);
		values[Anum_runs_nblocks - 1] = Int32GetDatum(0);
		values[Anum_runs_size_bytes - 1] = Int64GetDatum(run->stream_len);
		replace[Anum_runs_stream - 1] = true;
		replace[Anum_runs_start_block - 1] = true;
		replace[Anum_runs_nblocks - 1] = true;
		replace[Anum_runs_size_bytes - 1] = true;
	}
	delta = heap_modify_tuple(tup, RelationGetDescr(crel), values, nulls, replace);
	CatalogTupleUpdate(crel, &tup->t_self, delta);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Ordered scan of the runs of relid created by snapshots in (from, to],
 * through runs_snapshot: in snapshot then run order, without reading the
 * table's other runs.  End it with end_runs_of_snapshots.
 */
static SysScanDesc
begin_runs_of_snapshots(Relation crel, Relation *irel, Oid relid, int64 from,
						int64 to, Snapshot snapshot)
{
	ScanKeyData key[3];

	*irel = index_open(cat_oid("runs_snapshot", false), AccessShareLock);
	/* heap column numbers: systable_beginscan_ordered maps them to the index's */
	ScanKeyInit(&key[0], Anum_runs_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_runs_created_snapshot, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(from));
	ScanKeyInit(&key[2], Anum_runs_created_snapshot, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(to));
	return systable_beginscan_ordered(crel, *irel, snapshot, 3, key);
}

static void
end_runs_of_snapshots(SysScanDesc scan, Relation irel)
{
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
}

/*
 * ---- small commits' snapshots, in the commit log (commit_log.c) ----
 *
 * The functions that show a table's snapshots to every role take no lock
 * of it, so the log's pages are read through the relation's cache entry
 * alone (RelationIdGetRelation): the pages of the file the catalog names,
 * which a TRUNCATE or DROP committing meanwhile removes (the read then
 * fails with an error; it never reads another table's pages).
 */

/* can the table's row name a commit log (catalog 0.11)? */
bool
cat_tables_hold_log(void)
{
	return cat_has_column(CAT_TABLES, Anum_tables_log_block);
}

/*
 * Is a row of pkchangelog.runs a log page of rel's current file?  One of
 * another file, which an MVCC snapshot sees, is a page that a TRUNCATE or
 * VACUUM FULL committed since the snapshot replaced: its records cannot be
 * read any more, and leaving them out would hide snapshots.
 */
static bool
row_is_log_of(Relation crel, HeapTuple tup, Relation rel, Snapshot snapshot)
{
	bool		isnull;

	if (strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
												RelationGetDescr(crel), &isnull)),
			   run_kinds[RUN_LOG]) != 0)
		return false;
	if (DatumGetObjectId(heap_getattr(tup, Anum_runs_relfilenode,
									  RelationGetDescr(crel), &isnull)) == rel->rd_node.relNode)
		return true;
	if (IsMVCCSnapshot(snapshot))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not read the snapshots of pkmerge table \"%s\" as of this transaction's snapshot",
						RelationGetRelationName(rel)),
				 errdetail("A TRUNCATE or VACUUM FULL of the table committed after the snapshot was taken."),
				 errhint("Retry in a new transaction.")));
	return false;
}

/*
 * The first snapshot of the log page that holds snapshot id (the last one
 * that starts at or before it), or 0 if none does: searched backwards from
 * it, without reading the table's older runs.
 */
static int64
log_page_start(Relation rel, int64 id, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	Relation	irel;
	SysScanDesc scan = begin_runs_of_snapshots(crel, &irel, RelationGetRelid(rel),
											   PG_INT64_MIN, id, snapshot);
	HeapTuple	tup;
	int64		start = 0;

	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, BackwardScanDirection)))
	{
		bool		isnull;

		if (row_is_log_of(crel, tup, rel, snapshot) &&
			!(snapshot == SnapshotAny && inserter_aborted(tup)))
		{
			start = DatumGetInt64(heap_getattr(tup, Anum_runs_created_snapshot,
											   RelationGetDescr(crel), &isnull));
			break;
		}
	}
	end_runs_of_snapshots(scan, irel);
	table_close(crel, AccessShareLock);
	return start;
}

/*
 * A scan of the log runs of rel's current file that may hold records in
 * (from, to], in order (log_pages_next): a page holds none of them once the
 * next one starts at or before from + 1.  With SnapshotAny, one version of
 * each row.  Pages are returned as the scan goes, so a caller that needs
 * the first few records does not read the rows of every later page.
 */
typedef struct LogPageScan
{
	Relation	rel;
	Relation	crel;
	Relation	irel;
	SysScanDesc scan;
	Snapshot	snapshot;
	int64		from;
	RunInfo    *held;			/* read, not returned yet */
	bool		done;			/* the index scan ended (asking again restarts it) */
} LogPageScan;

static void
log_pages_begin(LogPageScan *s, Relation rel, int64 from, int64 to, Snapshot snapshot)
{
	int64		start = from > 0 ? log_page_start(rel, from + 1, snapshot) : 0;

	s->rel = rel;
	s->snapshot = snapshot;
	s->from = from;
	s->held = NULL;
	s->done = false;
	s->crel = cat_open(CAT_RUNS, AccessShareLock);
	s->scan = begin_runs_of_snapshots(s->crel, &s->irel, RelationGetRelid(rel),
									  start > 0 ? start - 1 : PG_INT64_MIN, to, snapshot);
}

/* the next page, or NULL */
static RunInfo *
log_pages_next(LogPageScan *s)
{
	HeapTuple	tup;

	while (!s->done &&
		   HeapTupleIsValid(tup = systable_getnext_ordered(s->scan, ForwardScanDirection)))
	{
		RunInfo    *r;
		RunInfo    *prev = s->held;

		if (!row_is_log_of(s->crel, tup, s->rel, s->snapshot) ||
			(s->snapshot == SnapshotAny && inserter_aborted(tup)))
			continue;
		r = run_from_tuple(s->crel, tup);
		s->held = r;
		/* another version of the held page, or one that ends before from */
		if (prev != NULL && prev->run_id != r->run_id && r->created_snapshot > s->from + 1)
			return prev;
	}
	/* the last page */
	{
		RunInfo    *last = s->held;

		s->done = true;
		s->held = NULL;
		return last;
	}
}

static void
log_pages_end(LogPageScan *s)
{
	end_runs_of_snapshots(s->scan, s->irel);
	table_close(s->crel, AccessShareLock);
}

/* every page log_pages_next returns, as a list */
static List *
log_runs_between(Relation rel, int64 from, int64 to, Snapshot snapshot)
{
	LogPageScan s;
	RunInfo    *r;
	List	   *result = NIL;

	log_pages_begin(&s, rel, from, to, snapshot);
	while ((r = log_pages_next(&s)) != NULL)
		result = lappend(result, r);
	log_pages_end(&s);
	return result;
}

/*
 * The records of rel's log in (from, to] that snapshot sees, as
 * commit_log_read says (st: the table's state as an MVCC snapshot sees
 * it; NULL snapshot: those a table row the caller sees names), on the
 * pages pages_snapshot sees, in order, at most limit of them (-1: all).
 */
static List *
log_records(Relation rel, int64 from, int64 to, int limit, Snapshot snapshot,
			Snapshot pages_snapshot, const TableState *st)
{
	List	   *result = NIL;
	LogPageScan s;
	RunInfo    *page;

	log_pages_begin(&s, rel, from, to, pages_snapshot);
	while ((page = log_pages_next(&s)) != NULL)
	{
		bool		stopped;

		result = list_concat(result, commit_log_read(rel, page, from, to, st,
													 snapshot, &stopped));
		if (stopped || (limit >= 0 && list_length(result) >= limit))
			break;
	}
	log_pages_end(&s);
	if (limit >= 0 && list_length(result) > limit)
		result = list_truncate(result, limit);
	return result;
}

/*
 * The data run of relid's snapshot snapshot_id kept in its commit log
 * record, which a table row snapshot sees names (NULL: no such record).
 * SnapshotAny: the record's, if its transaction did not abort.
 */
static RunInfo *
logged_data_run(Oid relid, int64 snapshot_id, Snapshot snapshot)
{
	Relation	rel;
	List	   *recs;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return NULL;
	recs = log_records(rel, snapshot_id - 1, snapshot_id, 1,
					   snapshot == SnapshotAny ? SnapshotAny : NULL, snapshot, NULL);
	RelationClose(rel);
	return recs != NIL ? ((CommitRecord *) linitial(recs))->data : NULL;
}

/*
 * The small commits' snapshots in (from, to] that snapshot sees, from the
 * commit log, as snapshots_scan returns them.
 */
static List *
logged_snapshots(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot,
				 bool with_changelog)
{
	Relation	rel;
	TableState	st = {0};
	TransactionId xmin;
	List	   *result = NIL;
	ListCell   *lc;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return NIL;
	/* the visibility rules need the row's snapshot, not the folded state */
	if (!IsMVCCSnapshot(snapshot) || table_row_version(relid, snapshot, NULL, &xmin, &st))
	{
		foreach(lc, log_records(rel, from, to, limit, snapshot, snapshot, &st))
		{
			CommitRecord *rec = lfirst(lc);
			SnapshotInfo *si = palloc(sizeof(SnapshotInfo));

			si->snapshot_id = rec->snapshot_id;
			si->kind = rec->kind;
			si->producer = pstrdup(prod_name(rec->producer));
			si->commit_time = rec->commit_time;
			si->changelog = with_changelog ? rec->changelog : NULL;
			si->data = with_changelog ? rec->data : NULL;
			result = lappend(result, si);
		}
	}
	RelationClose(rel);
	return result;
}

/*
 * Each small commit's snapshot of rel that snapshot sees, from the commit
 * log, in order, to cb (pkchangelog.log_snapshots): a page at a time, in
 * memory freed after each page, however many the table retains.
 */
void
cat_log_records_each(Relation rel, Snapshot snapshot,
					 void (*cb) (const CommitRecord *rec, void *arg), void *arg)
{
	TableState	st = {0};
	TransactionId xmin;
	LogPageScan s;
	RunInfo    *page;
	MemoryContext pagecxt;
	MemoryContext old;

	if (!cat_tables_hold_log() ||
		!table_row_version(RelationGetRelid(rel), snapshot, NULL, &xmin, &st))
		return;
	pagecxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge commit log page",
									ALLOCSET_DEFAULT_SIZES);
	log_pages_begin(&s, rel, 0, PG_INT64_MAX, snapshot);
	while ((page = log_pages_next(&s)) != NULL)
	{
		bool		stopped;
		ListCell   *lc;

		old = MemoryContextSwitchTo(pagecxt);
		foreach(lc, commit_log_read(rel, page, 0, PG_INT64_MAX, &st, snapshot, &stopped))
			cb(lfirst(lc), arg);
		MemoryContextSwitchTo(old);
		MemoryContextReset(pagecxt);
		if (stopped)
			break;
	}
	log_pages_end(&s);
	MemoryContextDelete(pagecxt);
}

/* the snapshots of two lists in id order, merged: the first limit (-1: all) */
static List *
merge_snapshots(List *a, List *b, int limit)
{
	List	   *result = NIL;
	int			i = 0;
	int			j = 0;

	while ((i < list_length(a) || j < list_length(b)) &&
		   (limit < 0 || list_length(result) < limit))
	{
		SnapshotInfo *sa = i < list_length(a) ? list_nth(a, i) : NULL;
		SnapshotInfo *sb = j < list_length(b) ? list_nth(b, j) : NULL;

		if (sb == NULL || (sa != NULL && sa->snapshot_id < sb->snapshot_id))
		{
			result = lappend(result, sa);
			i++;
		}
		else
		{
			result = lappend(result, sb);
			j++;
		}
	}
	return result;
}

/*
 * After expiration went from snapshot from (every one up to it expired
 * before) up to snapshot upto: the log pages whose records all expired go
 * (their blocks are freed once VACUUM removes the rows), and the page that
 * holds the next keeps the first one retained.
 */
void
cat_log_expired(Oid relid, int64 from, int64 upto)
{
	Relation	rel;
	List	   *pages;
	RunInfo    *last;
	ListCell   *lc;

	if (!cat_tables_hold_log() || !RelationIsValid(rel = RelationIdGetRelation(relid)))
		return;
	/* the pages that held snapshots in (from, upto + 1] */
	pages = log_runs_between(rel, from, upto + 1, GetLatestSnapshot());
	RelationClose(rel);
	if (pages == NIL)
		return;
	last = llast(pages);
	foreach(lc, pages)
	{
		RunInfo    *r = lfirst(lc);

		if (r != last)
			cat_run_delete(relid, r->run_id);
	}
	if (last->min_seq < upto + 1)
	{
		const int	attnums[] = {Anum_runs_min_seq};
		Datum		values[] = {Int64GetDatum(upto + 1)};

		run_update(relid, last->run_id, 1, attnums, values, false);
	}
	CommandCounterIncrement();
}

/*
 * The changelog and delta runs (and data runs written by commits) created
 * by snapshots in (from, to], in snapshot then run order.
 */
List *
cat_runs_of_snapshots(Oid relid, int64 from, int64 to, Snapshot snapshot)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	Relation	irel;
	SysScanDesc scan = begin_runs_of_snapshots(crel, &irel, relid, from, to, snapshot);
	HeapTuple	tup;
	List	   *result = NIL;

	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		RunInfo    *r = run_from_tuple(crel, tup);

		if ((r->kind != RUN_DATA || r->from_commit) && r->kind != RUN_LOG)
			result = lappend(result, r);
	}
	end_runs_of_snapshots(scan, irel);
	table_close(crel, AccessShareLock);
	return result;
}

/* the data_runs column: an int8[] of run ids */
static Datum
run_ids_datum(const int64 *ids, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(ids[i]);
	return PointerGetDatum(construct_array(elems, n, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static void
run_ids_from_datum(Datum d, int64 **ids, int *n)
{
	Datum	   *elems;

	deconstruct_array(DatumGetArrayTypeP(d), INT8OID, sizeof(int64),
					  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, NULL, n);
	*ids = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		(*ids)[i] = DatumGetInt64(elems[i]);
}

/* a commit's or compaction's new data runs, for cat_table_state_update */
void
cat_table_state_set_runs(TableState *st, List *runs)
{
	ListCell   *lc;

	st->ndata_runs = 0;
	st->data_runs = palloc(sizeof(int64) * Max(list_length(runs), 1));
	foreach(lc, runs)
		st->data_runs[st->ndata_runs++] = ((RunInfo *) lfirst(lc))->run_id;
}

/*
 * The version of relid's tables row at hint, if snapshot sees that one
 * there (a copy), else NULL.  The hint is a TID another backend published
 * for the version it wrote (run_cache.c): checked, not trusted.  A snapshot
 * sees one version of the row at most, so a visible tuple of relid is it,
 * whatever happened to the page since (pruning, VACUUM FULL); the fetch
 * skips the index and the row's chain of earlier versions, which every
 * commit lengthens.
 */
static HeapTuple
table_row_at(Relation crel, Oid relid, const ItemPointerData *hint,
			 Snapshot snapshot)
{
	HeapTupleData tuple;
	Buffer		buf;
	HeapTuple	copy = NULL;
	bool		isnull;

	if (hint == NULL || !ItemPointerIsValid(hint) ||
		!pk_block_exists(crel, ItemPointerGetBlockNumber(hint)))
		return NULL;
	tuple.t_self = *hint;
	if (heap_fetch(crel, snapshot, &tuple, &buf, true) &&
		DatumGetObjectId(heap_getattr(&tuple, Anum_tables_relid,
									  RelationGetDescr(crel), &isnull)) == relid)
		copy = heap_copytuple(&tuple);
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	return copy;
}

static HeapTuple
table_state_tuple(Relation crel, Oid relid, const ItemPointerData *hint)
{
	SysScanDesc scan;
	HeapTuple	tup;

	/* latest snapshot: the commit lock makes the latest committed row final */
	tup = table_row_at(crel, relid, hint, GetLatestSnapshot());
	if (tup)
		return tup;
	scan = cat_scan(crel, "tables", relid, GetLatestSnapshot());
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		tup = heap_copytuple(tup);
	systable_endscan(scan);
	return tup;
}

static TableState
state_from_tuple(Relation crel, HeapTuple tup)
{
	Datum		values[Natts_tables];
	bool		nulls[Natts_tables];
	TableState	st;

	heap_deform_tuple(tup, RelationGetDescr(crel), values, nulls);
	st.last_snapshot_id = DatumGetInt64(values[Anum_tables_last_snapshot_id - 1]);
	st.last_seq = DatumGetInt64(values[Anum_tables_last_seq - 1]);
	st.total_record_count = DatumGetInt64(values[Anum_tables_total_record_count - 1]);
	st.last_full_compaction = DatumGetInt64(values[Anum_tables_last_full_compaction - 1]);
	run_ids_from_datum(values[Anum_tables_data_runs - 1], &st.data_runs, &st.ndata_runs);
	st.commits = DatumGetInt64(values[Anum_tables_commits - 1]);
	st.log_run = RelationGetDescr(crel)->natts >= Anum_tables_log_block ?
		DatumGetInt64(values[Anum_tables_log_run - 1]) : 0;
	st.log_block = st.log_run != 0 ? DatumGetInt64(values[Anum_tables_log_block - 1]) : 0;
	st.row = tup->t_self;
	st.row_snapshot_id = st.last_snapshot_id;
	return st;
}

/* st, with one more commit folded in: its snapshot, run, rows */
static void
fold_one(TableState *st, int *nalloc, int64 snapshot_id, int64 seq, int64 delta)
{
	if (*nalloc == 0)
	{
		int64	   *ids;

		*nalloc = st->ndata_runs + CAT_TABLE_FOLD_MAX;
		ids = palloc(sizeof(int64) * *nalloc);
		memcpy(ids, st->data_runs, sizeof(int64) * st->ndata_runs);
		st->data_runs = ids;
	}
	else if (st->ndata_runs == *nalloc)
	{
		*nalloc *= 2;
		st->data_runs = repalloc(st->data_runs, sizeof(int64) * *nalloc);
	}
	st->last_snapshot_id = snapshot_id;
	st->data_runs[st->ndata_runs++] = -snapshot_id;
	st->last_seq = Max(st->last_seq, seq);
	st->total_record_count += delta;
	st->commits++;
}

/* a commit folded into a table's state: what fold_one adds */
typedef struct FoldedCommit
{
	int64		snapshot_id;
	int64		seq;
	int64		delta;
} FoldedCommit;

static List *
folded_add(List *list, int64 snapshot_id, int64 seq, int64 delta)
{
	FoldedCommit *f = palloc(sizeof(FoldedCommit));

	f->snapshot_id = snapshot_id;
	f->seq = seq;
	f->delta = delta;
	return lappend(list, f);
}

static int
folded_cmp(const ListCell *a, const ListCell *b)
{
	int64		ia = ((FoldedCommit *) lfirst(a))->snapshot_id;
	int64		ib = ((FoldedCommit *) lfirst(b))->snapshot_id;

	return (ia > ib) - (ia < ib);
}

/*
 * fold_commits' part for the commit log: the records after the table's
 * row, added to folded
 */
static List *
fold_logged(Oid relid, Snapshot snapshot, const TableState *st, List *folded)
{
	Relation	rel = RelationIdGetRelation(relid);
	RunInfo		page = {0};
	ListCell   *lc;

	if (!RelationIsValid(rel))
		return folded;
	/* the row names the page by its block: none if not of this file */
	if (!commit_log_page_current(rel, (BlockNumber) st->log_block))
	{
		RelationClose(rel);
		return folded;
	}
	page.run_id = st->log_run;
	page.kind = RUN_LOG;
	page.relfilenode = rel->rd_node.relNode;
	page.start_block = (BlockNumber) st->log_block;
	page.nblocks = 1;
	foreach(lc, commit_log_read_folds(rel, &page, st->row_snapshot_id, st, snapshot))
	{
		CommitFold *f = lfirst(lc);

		if (f->has_data)		/* (a logged commit always has one) */
			folded = folded_add(folded, f->snapshot_id, f->seq, f->delta_record_count);
	}
	RelationClose(rel);
	return folded;
}

/*
 * st, read from a version of relid's tables row, with the commits made
 * since that snapshot sees.  A commit that adds one data run, kept in its
 * snapshot's row, and nothing else does not write the table's row
 * (cat_table_state_folds): its snapshot's row, past the table row's last
 * snapshot, or since catalog 0.11 its commit log record, says all it
 * changed (its id, its run and its sequence number, its rows, one more
 * commit).  Every other write of the table's row (a
 * compaction, a TRUNCATE, a larger commit) writes the folded state, so at
 * most CAT_TABLE_FOLD_MAX snapshot rows are read here.
 */
static void
fold_commits(Oid relid, Snapshot snapshot, TableState *st)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(crel);
	Relation	irel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	int			nalloc = 0;
	List	   *folded = NIL;
	ListCell   *lc;

	if (desc->natts < Anum_snapshots_data_max_key)
	{
		table_close(crel, AccessShareLock);
		return;
	}
	irel = index_open(cat_index_oid("snapshots"), AccessShareLock);
	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(st->last_snapshot_id));
	scan = systable_beginscan_ordered(crel, irel, snapshot, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		isnull;
		int64		seq = DatumGetInt64(heap_getattr(tup, Anum_snapshots_data_seq, desc, &isnull));

		if (isnull)
			continue;			/* cannot be: such a commit writes the row */
		folded = folded_add(folded,
							DatumGetInt64(heap_getattr(tup, Anum_snapshots_snapshot_id,
													   desc, &isnull)),
							seq,
							DatumGetInt64(heap_getattr(tup, Anum_snapshots_delta_record_count,
													   desc, &isnull)));
	}
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
	table_close(crel, AccessShareLock);
	/* and the small commits' records in the commit log, in id order */
	if (st->log_run != 0)
	{
		folded = fold_logged(relid, snapshot, st, folded);
		list_sort(folded, folded_cmp);
	}
	foreach(lc, folded)
	{
		FoldedCommit *f = lfirst(lc);

		fold_one(st, &nalloc, f->snapshot_id, f->seq, f->delta);
	}
}

/*
 * May st, the state after a commit step that added one data run, kept in
 * its snapshot's row, and nothing else, stay out of the table's row
 * (fold_commits)?  While fewer than CAT_TABLE_FOLD_MAX commits are folded.
 */
bool
cat_table_state_folds(const TableState *st)
{
	return st->last_snapshot_id - st->row_snapshot_id < CAT_TABLE_FOLD_MAX;
}

/* the counters as last committed, without the commit lock (zero if none) */
TableState
cat_table_state_peek(Oid relid)
{
	Relation	crel = cat_open(CAT_TABLES, AccessShareLock);
	HeapTuple	tup = table_state_tuple(crel, relid, NULL);
	TableState	st = {0};

	if (HeapTupleIsValid(tup))
	{
		st = state_from_tuple(crel, tup);
		fold_commits(relid, GetLatestSnapshot(), &st);
	}
	table_close(crel, AccessShareLock);
	return st;
}

/*
 * Which version of relid's pkchangelog.tables row snapshot sees: the xid
 * that wrote it, and its contents.  Every commit and compaction that
 * changes the table's runs writes a new version under the commit lock, so
 * the version names the data runs the snapshot sees (run_cache.c).  False
 * if the snapshot sees no row (the table has never committed a run).
 * hint (NULL: none): where a version was published (table_row_at).
 */
bool
cat_table_version(Oid relid, Snapshot snapshot, const ItemPointerData *hint,
				  TransactionId *xmin, TableState *st)
{
	if (!table_row_version(relid, snapshot, hint, xmin, st))
		return false;
	fold_commits(relid, snapshot, st);
	return true;
}

/* the same, without the commits folded after the row (st: the row's) */
static bool
table_row_version(Oid relid, Snapshot snapshot, const ItemPointerData *hint,
				  TransactionId *xmin, TableState *st)
{
	Relation	crel = cat_open(CAT_TABLES, AccessShareLock);
	HeapTuple	tup = table_row_at(crel, relid, hint, snapshot);
	SysScanDesc scan = NULL;

	if (tup == NULL)
	{
		scan = cat_scan(crel, "tables", relid, snapshot);
		tup = systable_getnext(scan);
	}
	if (HeapTupleIsValid(tup))
	{
		*xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
		*st = state_from_tuple(crel, tup);
	}
	if (scan)
		systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return HeapTupleIsValid(tup);
}

/*
 * The counters of a table, creating its row on first use.  Caller holds the
 * commit lock.  hint (NULL: none): where a version was published.
 */
TableState
cat_table_state(Oid relid, const ItemPointerData *hint)
{
	Relation	crel = cat_open(CAT_TABLES, RowExclusiveLock);
	HeapTuple	tup = table_state_tuple(crel, relid, hint);
	TableState	st = {0};

	if (HeapTupleIsValid(tup))
	{
		st = state_from_tuple(crel, tup);
		fold_commits(relid, GetLatestSnapshot(), &st);
	}
	else
	{
		Datum		values[Natts_tables] = {0};
		bool		nulls[Natts_tables] = {0};

		values[Anum_tables_relid - 1] = ObjectIdGetDatum(relid);
		values[Anum_tables_data_runs - 1] = run_ids_datum(NULL, 0);
		tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
		CatalogTupleInsert(crel, tup);
		st.row = tup->t_self;
		CommandCounterIncrement();
	}
	table_close(crel, RowExclusiveLock);
	return st;
}

/*
 * Writes of tables rows by this backend, numbered from 1: each table's
 * last one.  A cache that publishes the version a write made (run_cache.c,
 * as the transaction's commit becomes visible) checks that no later write
 * of the transaction replaced it.
 */
typedef struct TableWrite
{
	Oid			relid;
	uint64		writeno;
	TransactionId xid;			/* the top transaction that wrote it */
} TableWrite;

static HTAB *table_writes = NULL;
static uint64 table_writes_made = 0;

static void
note_table_write(Oid relid)
{
	TableWrite *w;

	if (table_writes == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TableWrite);
		table_writes = hash_create("pkchangelog tables row writes", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS);
	}
	w = hash_search(table_writes, &relid, HASH_ENTER, NULL);
	w->writeno = ++table_writes_made;
	w->xid = GetTopTransactionIdIfAny();
}

/*
 * Has this transaction written relid's tables row (or a subtransaction of
 * it, even one rolled back)?
 */
bool
cat_table_written_here(Oid relid)
{
	TableWrite *w = table_writes ?
		hash_search(table_writes, &relid, HASH_FIND, NULL) : NULL;

	return w != NULL && TransactionIdIsValid(w->xid) &&
		w->xid == GetTopTransactionIdIfAny();
}

/* the number of this backend's last write of relid's tables row (0: none) */
uint64
cat_table_last_write(Oid relid)
{
	TableWrite *w = table_writes ?
		hash_search(table_writes, &relid, HASH_FIND, NULL) : NULL;

	return w ? w->writeno : 0;
}

/*
 * The table's state, written into its row first if commits are folded
 * after it (fold_commits), so that their snapshots' rows may go (a
 * TRUNCATE, expiration).  Caller holds the commit lock.
 */
TableState
cat_table_state_settle(Oid relid)
{
	TableState	st = cat_table_state_peek(relid);

	if (ItemPointerIsValid(&st.row) && st.last_snapshot_id != st.row_snapshot_id)
		cat_table_state_update(relid, &st);
	return st;
}

/*
 * Write st as the table's new row version, over the version cat_table_state
 * read it from (under the commit lock, still the latest: an update of any
 * other fails).  st then names the new version.
 */
void
cat_table_state_update(Oid relid, TableState *st)
{
	Relation	crel = cat_open(CAT_TABLES, RowExclusiveLock);
	Datum		values[Natts_tables];
	bool		nulls[Natts_tables] = {0};
	HeapTuple	newtup;

	if (!ItemPointerIsValid(&st->row))
		elog(ERROR, "pkchangelog.tables row of relation %u was not read", relid);
	values[Anum_tables_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_tables_last_snapshot_id - 1] = Int64GetDatum(st->last_snapshot_id);
	values[Anum_tables_last_seq - 1] = Int64GetDatum(st->last_seq);
	values[Anum_tables_total_record_count - 1] = Int64GetDatum(st->total_record_count);
	values[Anum_tables_last_full_compaction - 1] = Int64GetDatum(st->last_full_compaction);
	values[Anum_tables_data_runs - 1] = run_ids_datum(st->data_runs, st->ndata_runs);
	values[Anum_tables_commits - 1] = Int64GetDatum(st->commits);
	values[Anum_tables_log_run - 1] = Int64GetDatum(st->log_run);
	values[Anum_tables_log_block - 1] = Int64GetDatum(st->log_block);
	newtup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleUpdate(crel, &st->row, newtup);
	st->row = newtup->t_self;
	st->row_snapshot_id = st->last_snapshot_id;
	note_table_write(relid);
	table_close(crel, RowExclusiveLock);
	/* later reads in this transaction (another commit step) see it */
	CommandCounterIncrement();
}

/* a snapshot's commit_kind, as pkchangelog.snapshots shows it */
const char *
cat_commit_kind_name(CommitKind kind)
{
	static const char *const kinds[] = {"APPEND", "COMPACT", "OVERWRITE"};

	return kinds[kind];
}

/* a snapshot's row; what the change stream reads of it, for its writer */
SnapshotInfo *
cat_snapshot_insert(Oid relid, int64 snapshot_id, CommitKind kind,
					int64 total, int64 delta, int64 changelog,
					const char *producer, double duration_ms,
					RunInfo *changelog_run, RunInfo *data_run)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, RowExclusiveLock);
	Datum		values[Natts_snapshots];
	bool		nulls[Natts_snapshots] = {0};
	NameData	user;
	SnapshotInfo *si = palloc(sizeof(SnapshotInfo));

	si->snapshot_id = snapshot_id;
	si->kind = kind;
	si->producer = pstrdup(producer);
	si->commit_time = GetCurrentTimestamp();
	si->changelog = NULL;
	si->data = NULL;
	namestrcpy(&user, GetUserNameFromId(GetUserId(), false));
	/* text since catalog 0.10 */
	if (TupleDescAttr(RelationGetDescr(crel), Anum_snapshots_commit_user - 1)->atttypid == NAMEOID)
		values[Anum_snapshots_commit_user - 1] = NameGetDatum(&user);
	else
		values[Anum_snapshots_commit_user - 1] = CStringGetTextDatum(NameStr(user));
	values[Anum_snapshots_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_snapshots_snapshot_id - 1] = Int64GetDatum(snapshot_id);
	values[Anum_snapshots_commit_kind - 1] = CStringGetTextDatum(cat_commit_kind_name(kind));
	values[Anum_snapshots_commit_time - 1] = TimestampTzGetDatum(si->commit_time);
	values[Anum_snapshots_commit_xid - 1] = FullTransactionIdGetDatum(GetTopFullTransactionId());
	values[Anum_snapshots_total_record_count - 1] = Int64GetDatum(total);
	values[Anum_snapshots_delta_record_count - 1] = Int64GetDatum(delta);
	values[Anum_snapshots_changelog_record_count - 1] = Int64GetDatum(changelog);
	values[Anum_snapshots_producer - 1] = CStringGetTextDatum(producer);
	values[Anum_snapshots_duration_ms - 1] = Float8GetDatum(duration_ms);
	nulls[Anum_snapshots_changelog_run_id - 1] = nulls[Anum_snapshots_changelog - 1] = true;
	/* a commit's small changelog run (run_writer_allow_snapshot_row) */
	if (changelog_run && changelog_run->in_snapshot_row)
	{
		Assert(RelationGetDescr(crel)->natts >= Anum_snapshots_changelog);
		values[Anum_snapshots_changelog_run_id - 1] = Int64GetDatum(changelog_run->run_id);
		values[Anum_snapshots_changelog - 1] = PointerGetDatum(stream_bytea(changelog_run));
		nulls[Anum_snapshots_changelog_run_id - 1] = nulls[Anum_snapshots_changelog - 1] = false;
		changelog_run->created_snapshot = snapshot_id;
		si->changelog = changelog_run;
	}
	for (int i = Anum_snapshots_data; i <= Anum_snapshots_data_max_key; i++)
		nulls[i - 1] = true;
	/* a commit's small data run (run_writer_allow_snapshot_row) */
	if (data_run && data_run->in_snapshot_row)
	{
		Assert(RelationGetDescr(crel)->natts >= Anum_snapshots_data_max_key &&
			   data_run->run_id == -snapshot_id);
		values[Anum_snapshots_data - 1] = PointerGetDatum(stream_bytea(data_run));
		values[Anum_snapshots_data_seq - 1] = Int64GetDatum(data_run->max_seq);
		nulls[Anum_snapshots_data - 1] = nulls[Anum_snapshots_data_seq - 1] = false;
		if (data_run->min_key)
		{
			values[Anum_snapshots_data_min_key - 1] = CStringGetTextDatum(data_run->min_key);
			nulls[Anum_snapshots_data_min_key - 1] = false;
		}
		if (data_run->max_key)
		{
			values[Anum_snapshots_data_max_key - 1] = CStringGetTextDatum(data_run->max_key);
			nulls[Anum_snapshots_data_max_key - 1] = false;
		}
		si->data = data_run;
	}
	CatalogTupleInsert(crel, heap_form_tuple(RelationGetDescr(crel), values, nulls));
	table_close(crel, RowExclusiveLock);
	return si;
}

static RunInfo *
run_from_tuple(Relation crel, HeapTuple tup)
{
	Datum		v[Natts_runs];
	bool		n[Natts_runs];
	RunInfo    *r = palloc0(sizeof(RunInfo));

	heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
	r->run_id = DatumGetInt64(v[Anum_runs_run_id - 1]);
	r->relfilenode = DatumGetObjectId(v[Anum_runs_relfilenode - 1]);
	r->level = DatumGetInt32(v[Anum_runs_level - 1]);
	{
		char	   *kind = TextDatumGetCString(v[Anum_runs_kind - 1]);

		r->kind = strcmp(kind, "changelog") == 0 ? RUN_CHANGELOG :
			strcmp(kind, "delta") == 0 ? RUN_DELTA :
			strcmp(kind, "log") == 0 ? RUN_LOG : RUN_DATA;
	}
	r->from_commit = DatumGetBool(v[Anum_runs_from_commit - 1]);
	r->start_block = (BlockNumber) DatumGetInt64(v[Anum_runs_start_block - 1]);
	r->nblocks = DatumGetInt32(v[Anum_runs_nblocks - 1]);
	r->record_count = DatumGetInt64(v[Anum_runs_record_count - 1]);
	r->size_bytes = DatumGetInt64(v[Anum_runs_size_bytes - 1]);
	r->row_base = DatumGetInt64(v[Anum_runs_row_base - 1]);
	r->min_seq = DatumGetInt64(v[Anum_runs_min_seq - 1]);
	r->max_seq = DatumGetInt64(v[Anum_runs_max_seq - 1]);
	r->index_offset = DatumGetInt64(v[Anum_runs_index_offset - 1]);
	r->bloom_offset = DatumGetInt64(v[Anum_runs_bloom_offset - 1]);
	r->created_snapshot = DatumGetInt64(v[Anum_runs_created_snapshot - 1]);
	r->min_key = n[Anum_runs_min_key - 1] ? NULL : TextDatumGetCString(v[Anum_runs_min_key - 1]);
	r->max_key = n[Anum_runs_max_key - 1] ? NULL : TextDatumGetCString(v[Anum_runs_max_key - 1]);
	if (RelationGetDescr(crel)->natts >= Anum_runs_stream && !n[Anum_runs_stream - 1])
	{
		bytea	   *b = DatumGetByteaPP(v[Anum_runs_stream - 1]);

		r->stream_len = VARSIZE_ANY_EXHDR(b);
		r->stream = palloc(r->stream_len);
		memcpy(r->stream, VARDATA_ANY(b), r->stream_len);
	}
	return r;
}

/* was the row written by a transaction that aborted or crashed? */
static bool
inserter_aborted(HeapTuple tup)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

	return !TransactionIdIsCurrentTransactionId(xmin) &&
		!TransactionIdIsInProgress(xmin) &&
		!TransactionIdDidCommit(xmin);
}

/*
 * The data runs an MVCC snapshot sees: those its version of the tables row
 * names, and the runs the transaction itself added that no version names
 * yet (pending ones, numbered snapshot 0, and those of a commit or
 * compaction step before its row update, numbered past the row's last
 * snapshot).  No other run row is visible without a version naming it: a
 * transaction's runs and its tables row become visible together.  A named
 * run the transaction has deleted or retired since (TRUNCATE, a
 * compaction step) is left out, and so are the changelog and delta runs
 * the transaction's own steps made.
 */
static List *
data_runs_visible(Relation crel, Oid relid, Snapshot snapshot)
{
	TransactionId xmin;
	TableState	st = {0};
	List	   *runs = NIL;
	List	   *data = NIL;
	ListCell   *lc;
	Relation	irel;
	SysScanDesc scan;
	HeapTuple	tup;

	if (cat_table_version(relid, snapshot, NULL, &xmin, &st))
	{
		for (int i = 0; i < st.ndata_runs; i++)
		{
			RunInfo    *r;

			if (st.data_runs[i] < 0 &&
				(r = snapshot_data_run(relid, -st.data_runs[i], snapshot)) != NULL)
			{
				runs = lappend(runs, r);
				continue;
			}
			scan = run_row_find(crel, relid, st.data_runs[i], snapshot, &tup);
			if (HeapTupleIsValid(tup))
				runs = lappend(runs, run_from_tuple(crel, tup));
			systable_endscan(scan);
		}
	}
	for (int pass = 0; pass < 2; pass++)
	{
		scan = pass == 0 ?
			begin_runs_of_snapshots(crel, &irel, relid, -1, 0, snapshot) :
			begin_runs_of_snapshots(crel, &irel, relid, st.last_snapshot_id,
									PG_INT64_MAX, snapshot);
		while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
			runs = lappend(runs, run_from_tuple(crel, tup));
		end_runs_of_snapshots(scan, irel);
	}
	foreach(lc, runs)
		if (((RunInfo *) lfirst(lc))->kind == RUN_DATA)
			data = lappend(data, lfirst(lc));
	return data;
}

/*
 * Is a run whose row says data (from_commit, created_snapshot: of that
 * row) a delta: a commit's run that compaction replaced and kept for
 * producer none's stream without touching its row?  It is when the
 * version st of the table's row, at or after the run's snapshot, does not
 * name it.
 */
static bool
data_run_is_delta(const TableState *st, int64 run_id, bool from_commit,
				  int64 created_snapshot)
{
	if (!from_commit || created_snapshot <= 0 || created_snapshot > st->last_snapshot_id)
		return false;
	for (int i = 0; i < st->ndata_runs; i++)
		if (st->data_runs[i] == run_id)
			return false;
	return true;
}

/*
 * Is a row of pkchangelog.runs a live data run, by what it says and by st,
 * a version of the table's row at or after the run's snapshot (not a
 * changelog run, not a delta retired or told by data_run_is_delta)?
 */
static bool
row_is_live_data(Relation crel, HeapTuple tup, const TableState *st)
{
	TupleDesc	desc = RelationGetDescr(crel);
	bool		isnull;

	return strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind, desc, &isnull)),
				  run_kinds[RUN_DATA]) == 0 &&
		!data_run_is_delta(st,
						   DatumGetInt64(heap_getattr(tup, Anum_runs_run_id, desc, &isnull)),
						   DatumGetBool(heap_getattr(tup, Anum_runs_from_commit, desc, &isnull)),
						   DatumGetInt64(heap_getattr(tup, Anum_runs_created_snapshot, desc, &isnull)));
}

/*
 * Every data run kept in a row of relid's snapshots that VACUUM has not
 * removed (deleted rows too), but those of aborted transactions: what
 * SnapshotAny sees of them.
 */
static List *
snapshot_data_runs_any(Oid relid)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "snapshots", relid, SnapshotAny);
	HeapTuple	tup;
	List	   *runs = NIL;
	ListCell   *lc;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		RunInfo    *r;

		if (inserter_aborted(tup))
			continue;
		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		if ((r = snapshot_data(crel, v, n)) != NULL)
			runs = lappend(runs, r);
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	/* and those of the commit log's records */
	foreach(lc, logged_snapshots(relid, 0, PG_INT64_MAX, -1, SnapshotAny, true))
	{
		SnapshotInfo *si = lfirst(lc);

		if (si->data)
			runs = lappend(runs, si->data);
	}
	return runs;
}

/*
 * The runs of a table that a snapshot sees (data_only: its data runs).
 * SnapshotAny: every run whose pages are still intact, i.e. whose row
 * VACUUM has not removed (deleted ones too), except runs of aborted
 * transactions; with data_only, every version of a row that was a data run.
 */
List *
cat_runs_visible(Oid relid, Snapshot snapshot, bool data_only)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *runs = NIL;

	if (data_only && snapshot != SnapshotAny)
		runs = data_runs_visible(crel, relid, snapshot);
	else
	{
		scan = cat_scan(crel, "runs", relid, snapshot);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;

			if (snapshot == SnapshotAny && inserter_aborted(tup))
				continue;
			/* (a retained delta's bytes are not copied to be dropped) */
			if (data_only &&
				strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
														RelationGetDescr(crel), &isnull)),
					   run_kinds[RUN_DATA]) != 0)
				continue;
			runs = lappend(runs, run_from_tuple(crel, tup));
		}
		systable_endscan(scan);
		/* with SnapshotAny, the data runs kept in snapshot rows too */
		if (data_only)
			runs = list_concat(runs, snapshot_data_runs_any(relid));
	}
	/* an MVCC snapshot's runs with their kinds: deltas told apart */
	if (!data_only && IsMVCCSnapshot(snapshot))
		cat_runs_mark_deltas(relid, snapshot, runs);
	table_close(crel, AccessShareLock);
	return runs;
}

/*
 * Of runs, the data runs that the version of relid's state snapshot sees
 * no longer names: their kind becomes RUN_DELTA (data_run_is_delta).
 */
void
cat_runs_mark_deltas(Oid relid, Snapshot snapshot, List *runs)
{
	TransactionId xmin;
	TableState	st = {0};
	ListCell   *lc;

	(void) cat_table_version(relid, snapshot, NULL, &xmin, &st);
	foreach(lc, runs)
	{
		RunInfo    *r = lfirst(lc);

		if (r->kind == RUN_DATA &&
			data_run_is_delta(&st, r->run_id, r->from_commit, r->created_snapshot))
			r->kind = RUN_DELTA;
	}
}

void
cat_run_insert(Oid relid, const RunInfo *r)
{
	Relation	crel;
	Datum		v[Natts_runs];
	bool		n[Natts_runs] = {0};

	note_change(relid, true);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	v[Anum_runs_relid - 1] = ObjectIdGetDatum(relid);
	v[Anum_runs_run_id - 1] = Int64GetDatum(r->run_id);
	v[Anum_runs_relfilenode - 1] = ObjectIdGetDatum(r->relfilenode);
	v[Anum_runs_level - 1] = Int32GetDatum(r->level);
	v[Anum_runs_kind - 1] = CStringGetTextDatum(run_kinds[r->kind]);
	v[Anum_runs_from_commit - 1] = BoolGetDatum(r->from_commit);
	v[Anum_runs_start_block - 1] = Int64GetDatum((int64) r->start_block);
	v[Anum_runs_nblocks - 1] = Int32GetDatum(r->nblocks);
	v[Anum_runs_record_count - 1] = Int64GetDatum(r->record_count);
	v[Anum_runs_size_bytes - 1] = Int64GetDatum(r->size_bytes);
	v[Anum_runs_row_base - 1] = Int64GetDatum(r->row_base);
	v[Anum_runs_min_seq - 1] = Int64GetDatum(r->min_seq);
	v[Anum_runs_max_seq - 1] = Int64GetDatum(r->max_seq);
	v[Anum_runs_index_offset - 1] = Int64GetDatum(r->index_offset);
	v[Anum_runs_bloom_offset - 1] = Int64GetDatum(r->bloom_offset);
	v[Anum_runs_created_snapshot - 1] = Int64GetDatum(r->created_snapshot);
	if (r->min_key)
		v[Anum_runs_min_key - 1] = CStringGetTextDatum(r->min_key);
	else
		n[Anum_runs_min_key - 1] = true;
	if (r->max_key)
		v[Anum_runs_max_key - 1] = CStringGetTextDatum(r->max_key);
	else
		n[Anum_runs_max_key - 1] = true;
	if (r->stream)
	{
		if (RelationGetDescr(crel)->natts < Anum_runs_stream)
			elog(ERROR, "run %lld has no pages, and the catalog no column for its bytes",
				 (long long) r->run_id);
		v[Anum_runs_stream - 1] = PointerGetDatum(stream_bytea(r));
	}
	else
		n[Anum_runs_stream - 1] = true;
	CatalogTupleInsert(crel, heap_form_tuple(RelationGetDescr(crel), v, n));
	table_close(crel, RowExclusiveLock);
	/* the rest of the commit or compaction finds it */
	CommandCounterIncrement();
}

/* delete every row of relid in one catalog table, as the latest snapshot sees them */
static void
delete_rows(const char *relname, Oid relid, bool missing_ok)
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

/* a compaction's input run: its row goes, its blocks stay until VACUUM */
void
cat_run_delete(Oid relid, int64 run_id)
{
	Relation	crel;
	HeapTuple	tup;
	SysScanDesc scan;

	note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);

	/*
	 * A data run kept in its snapshot's row (a negative id) has no row of
	 * its own unless expiration moved it to one: its bytes go with the
	 * snapshot's row.
	 */
	scan = run_id < 0 ? run_row_find(crel, relid, run_id, GetLatestSnapshot(), &tup) :
		run_row(crel, relid, run_id, &tup);
	if (HeapTupleIsValid(tup))
		CatalogTupleDelete(crel, &tup->t_self);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
}

/*
 * TRUNCATE: the table's runs are gone with its old storage, and with them
 * the changes of every snapshot so far, which therefore expire.  Caller
 * holds the commit lock.
 */
void
cat_truncate(Oid relid)
{
	/*
	 * The commits folded into the table's state (fold_commits) are told by
	 * snapshot rows about to go: the row takes them first, so that
	 * snapshot ids and commit counts go on from them.
	 */
	(void) cat_table_state_settle(relid);
	note_change(relid, false);
	delete_rows("runs", relid, false);
	delete_rows("snapshots", relid, false);
	CommandCounterIncrement();
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
	note_change(relid, false);
	delete_rows("runs", relid, true);
	delete_rows("snapshots", relid, true);
	delete_rows("tables", relid, true);
	delete_rows("consumers", relid, true);
	delete_rows("materializations", relid, true);
}

/* ---- consumer positions (pkchangelog.consumers) ---- */

Oid
cat_consumers_relid(void)
{
	return cat_oid("consumers", false);
}

/* scan positioned on the row of (relid, consumer_id) that snapshot sees */
static SysScanDesc
consumer_scan(Relation crel, Oid relid, const char *consumer_id, Snapshot snapshot)
{
	ScanKeyData key[2];

	ScanKeyInit(&key[0], Anum_consumers_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	/* the key's collation is the column's, the database default */
	ScanKeyEntryInitialize(&key[1], 0, Anum_consumers_consumer_id, BTEqualStrategyNumber,
						   InvalidOid, DEFAULT_COLLATION_OID, F_TEXTEQ,
						   CStringGetTextDatum(consumer_id));
	return systable_beginscan(crel, cat_index_oid("consumers"), true, snapshot, 2, key);
}

/* the consumer's position as snapshot sees it; false: no such consumer */
bool
cat_consumer_get(Oid relid, const char *consumer_id, Snapshot snapshot,
				 int64 *next_snapshot_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, AccessShareLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, snapshot);
	HeapTuple	tup = systable_getnext(scan);
	bool		isnull;

	if (HeapTupleIsValid(tup))
		*next_snapshot_id = DatumGetInt64(heap_getattr(tup, Anum_consumers_next_snapshot_id,
													   RelationGetDescr(crel), &isnull));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return HeapTupleIsValid(tup);
}

/*
 * Sets the consumer's position (creating the consumer), consumed now.  The
 * caller holds the consumer's lock (cat_consumer_lock), so the row the
 * latest snapshot sees is the one to replace.
 */
void
cat_consumer_set(Oid relid, const char *consumer_id, int64 next_snapshot_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, RowExclusiveLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, GetLatestSnapshot());
	HeapTuple	tup = systable_getnext(scan);
	Datum		values[Natts_consumers];
	bool		nulls[Natts_consumers] = {0};
	HeapTuple	newtup;

	values[Anum_consumers_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_consumers_consumer_id - 1] = CStringGetTextDatum(consumer_id);
	values[Anum_consumers_next_snapshot_id - 1] = Int64GetDatum(next_snapshot_id);
	values[Anum_consumers_last_consumed - 1] = TimestampTzGetDatum(GetCurrentTimestamp());
	newtup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	if (HeapTupleIsValid(tup))
		CatalogTupleUpdate(crel, &tup->t_self, newtup);
	else
		CatalogTupleInsert(crel, newtup);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * The oldest snapshot a consumer of relid has yet to read (PG_INT64_MAX:
 * none): expiration keeps it and every newer one.  A consumer that
 * consumed nothing since idle_before (0: none is idle) holds nothing, so
 * an abandoned one does not keep snapshots forever; it stays, and its next
 * pk_consume finds its position expired (an error, not a gap) until
 * pk_consumer_drop starts it afresh.  No consumers catalog (an extension
 * not yet updated to 0.2): none.
 */
int64
cat_consumers_floor(Oid relid, TimestampTz idle_before)
{
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	int64		floor = PG_INT64_MAX;

	if (!OidIsValid(cat_oid("consumers", true)))
		return floor;
	crel = cat_open(CAT_CONSUMERS, AccessShareLock);
	scan = cat_scan(crel, "consumers", relid, GetLatestSnapshot());
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		TimestampTz last = DatumGetTimestampTz(heap_getattr(tup, Anum_consumers_last_consumed,
															RelationGetDescr(crel), &isnull));

		if (idle_before == 0 || last >= idle_before)
			floor = Min(floor, DatumGetInt64(heap_getattr(tup, Anum_consumers_next_snapshot_id,
														  RelationGetDescr(crel), &isnull)));
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return floor;
}

/* drops a consumer; false if there was none */
bool
cat_consumer_drop(Oid relid, const char *consumer_id)
{
	Relation	crel = cat_open(CAT_CONSUMERS, RowExclusiveLock);
	SysScanDesc scan = consumer_scan(crel, relid, consumer_id, GetLatestSnapshot());
	HeapTuple	tup = systable_getnext(scan);
	bool		found = HeapTupleIsValid(tup);

	if (found)
		CatalogTupleDelete(crel, &tup->t_self);
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	return found;
}

/* ---- materialized aggregates (pkchangelog.materializations) ---- */

/* records a materialized aggregate of relid */
void
cat_mat_insert(Oid relid, Oid aggregate, const char *query, Datum value_tables,
			   int64 created_snapshot)
{
	Relation	crel = cat_open(CAT_MATERIALIZATIONS, RowExclusiveLock);
	Datum		values[Natts_materializations];
	bool		nulls[Natts_materializations] = {0};
	HeapTuple	tup;

	values[Anum_materializations_relid - 1] = ObjectIdGetDatum(relid);
	values[Anum_materializations_aggregate - 1] = ObjectIdGetDatum(aggregate);
	values[Anum_materializations_query - 1] = CStringGetTextDatum(query);
	values[Anum_materializations_value_tables - 1] = value_tables;
	values[Anum_materializations_created_snapshot - 1] = Int64GetDatum(created_snapshot);
	tup = heap_form_tuple(RelationGetDescr(crel), values, nulls);
	CatalogTupleInsert(crel, tup);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
}

static MatRow *
mat_row_from_tuple(Relation crel, HeapTuple tup)
{
	MatRow	   *m = palloc(sizeof(MatRow));
	bool		isnull;

	m->relid = DatumGetObjectId(heap_getattr(tup, Anum_materializations_relid,
											 RelationGetDescr(crel), &isnull));
	m->aggregate = DatumGetObjectId(heap_getattr(tup, Anum_materializations_aggregate,
												 RelationGetDescr(crel), &isnull));
	m->query = TextDatumGetCString(heap_getattr(tup, Anum_materializations_query,
												RelationGetDescr(crel), &isnull));
	m->value_tables = DatumGetArrayTypePCopy(heap_getattr(tup, Anum_materializations_value_tables,
														  RelationGetDescr(crel), &isnull));
	m->created_snapshot = DatumGetInt64(heap_getattr(tup, Anum_materializations_created_snapshot,
													 RelationGetDescr(crel), &isnull));
	return m;
}

/* scan of the row of one aggregate (by its unique index) */
static SysScanDesc
mat_scan(Relation crel, Oid aggregate, Snapshot snapshot)
{
	ScanKeyData key;

	ScanKeyInit(&key, Anum_materializations_aggregate, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(aggregate));
	return systable_beginscan(crel, cat_oid("materializations_aggregate_key", false),
							  true, snapshot, 1, &key);
}

/*
 * The rows whose key is oid (the source's relid; by_aggregate: the
 * aggregate's; InvalidOid: every row) as snapshot sees them (MatRows).  A catalog not yet updated
 * to 0.3 has none.
 */
static List *
mat_rows(Oid oid, bool by_aggregate, Snapshot snapshot)
{
	bool		all = !OidIsValid(oid);
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *rows = NIL;

	if (!OidIsValid(cat_oid("materializations", true)))
		return NIL;
	crel = cat_open(CAT_MATERIALIZATIONS, AccessShareLock);
	if (all)
		scan = systable_beginscan(crel, InvalidOid, false, snapshot, 0, NULL);
	else if (by_aggregate)
		scan = mat_scan(crel, oid, snapshot);
	else
		scan = cat_scan(crel, "materializations", oid, snapshot);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		rows = lappend(rows, mat_row_from_tuple(crel, tup));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return rows;
}

/* the materialized aggregates of relid */
List *
cat_mat_list(Oid relid, Snapshot snapshot)
{
	return mat_rows(relid, false, snapshot);
}

/* every materialized aggregate of the database */
List *
cat_mat_all(Snapshot snapshot)
{
	return mat_rows(InvalidOid, false, snapshot);
}

/* the row of materialized aggregate table aggregate; NULL: it is not one */
MatRow *
cat_mat_get(Oid aggregate, Snapshot snapshot)
{
	List	   *rows = mat_rows(aggregate, true, snapshot);

	return rows == NIL ? NULL : linitial(rows);
}

/*
 * DROP TABLE of an aggregate: its row goes; returns its source
 * (InvalidOid: it was none, or the catalog is gone with DROP EXTENSION).
 */
Oid
cat_mat_delete(Oid aggregate)
{
	Relation	crel;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			relid = InvalidOid;

	if (!OidIsValid(cat_oid("materializations", true)) ||
		!OidIsValid(cat_oid("materializations_aggregate_key", true)))
		return InvalidOid;
	crel = cat_open(CAT_MATERIALIZATIONS, RowExclusiveLock);
	scan = mat_scan(crel, aggregate, GetLatestSnapshot());
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		relid = mat_row_from_tuple(crel, tup)->relid;
		CatalogTupleDelete(crel, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);
	return relid;
}

int64
cat_next_run_id(void)
{
	return nextval_internal(cat_oid("run_id_seq", false), false);
}

/*
 * Block extents [start, start + nblocks) that runs of relid in storage
 * relfilenode occupy or may still be read from: every row still in the
 * catalog (dead rows too: a standby or an old snapshot may read them until
 * VACUUM removes the row), except rows of transactions that aborted or
 * crashed, which nobody ever saw.  List of (start, nblocks) int lists.
 *
 * The scan must not skip index entries marked killed: an index scan of
 * the primary marks an entry so once no snapshot *of the primary* can see
 * its row, without any WAL record a standby would resolve a conflict by,
 * while a standby query may still be reading the run.  Only removing the
 * row (VACUUM, pruning) or the entry (btree deletion) tells the standby,
 * by a conflict that cancels such queries first.
 */
List *
cat_used_extents(Oid relid, Oid relfilenode)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "runs", relid, SnapshotAny);
	HeapTuple	tup;
	List	   *extents = NIL;

	if (scan->iscan)
		scan->iscan->ignore_killed_tuples = false;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		BlockNumber start;
		int32		nblocks;

		if (inserter_aborted(tup))
			continue;			/* aborted or crashed: never visible */
		if (DatumGetObjectId(heap_getattr(tup, Anum_runs_relfilenode,
										  RelationGetDescr(crel), &isnull)) != relfilenode)
			continue;
		start = (BlockNumber) DatumGetInt64(heap_getattr(tup, Anum_runs_start_block,
														 RelationGetDescr(crel), &isnull));
		nblocks = DatumGetInt32(heap_getattr(tup, Anum_runs_nblocks,
											 RelationGetDescr(crel), &isnull));
		extents = lappend(extents, list_make2_int(start, nblocks));
	}
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	return extents;
}

static int
block_cmp(const void *a, const void *b)
{
	BlockNumber ba = *(const BlockNumber *) a;
	BlockNumber bb = *(const BlockNumber *) b;

	return (ba > bb) - (ba < bb);
}

/*
 * Prune the catalog pages that hold rows of relid's runs deleted by
 * transactions no snapshot can see past any more, as reading a full page
 * does (heap_page_prune, WAL-logged with the horizon standbys resolve
 * conflicts by), whether the page is full or not: the blocks of those runs
 * are then free for cat_used_extents, without waiting for the catalog's
 * next VACUUM.  A page another backend has pinned is left to VACUUM.
 * Returns true when rows deleted by such transactions are still visible to
 * some snapshot, or a page was pinned: a later call may find more.
 */
bool
cat_prune_runs(Oid relid)
{
	Relation	crel = cat_open(CAT_RUNS, AccessShareLock);
	SysScanDesc scan = cat_scan(crel, "runs", relid, SnapshotAny);
	GlobalVisState *vistest = GlobalVisTestFor(crel);
	HeapTuple	tup;
	BlockNumber *blocks = NULL;
	int			nblocks = 0;
	int			capacity = 0;
	bool		pending = false;

	if (RecoveryInProgress())
	{
		systable_endscan(scan);
		table_close(crel, AccessShareLock);
		return false;
	}
	if (scan->iscan)
		scan->iscan->ignore_killed_tuples = false;
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		HeapTupleHeader h = tup->t_data;
		TransactionId xmax;

		if ((h->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask) ||
			(h->t_infomask & HEAP_XMAX_IS_MULTI))
			continue;
		xmax = HeapTupleHeaderGetRawXmax(h);
		if (!GlobalVisTestIsRemovableXid(vistest, xmax))
		{
			pending = true;
			continue;
		}
		if (nblocks == capacity)
		{
			capacity = Max(64, capacity * 2);
			blocks = blocks ? repalloc(blocks, sizeof(BlockNumber) * capacity) :
				palloc(sizeof(BlockNumber) * capacity);
		}
		blocks[nblocks++] = ItemPointerGetBlockNumber(&tup->t_self);
	}
	systable_endscan(scan);

	if (nblocks > 0)
		qsort(blocks, nblocks, sizeof(BlockNumber), block_cmp);
	for (int i = 0; i < nblocks; i++)
	{
		Buffer		buf;
		int			nnewlpdead;

		if (i > 0 && blocks[i] == blocks[i - 1])
			continue;
		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(crel, blocks[i]);
		if (ConditionalLockBufferForCleanup(buf))
		{
			(void) heap_page_prune(crel, buf, InvalidTransactionId, vistest,
								   InvalidTransactionId, 0, &nnewlpdead, NULL);
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		else
			pending = true;
		ReleaseBuffer(buf);
	}
	table_close(crel, AccessShareLock);
	return pending;
}

/*
 * The bytes of relid's rows in pkchangelog.runs and pkchangelog.snapshots
 * that snapshot sees (runs kept in their rows included), and of those the
 * retained history's: snapshot rows, changelog and delta runs with their
 * pages.
 */
void
cat_row_bytes(Oid relid, Snapshot snapshot, int64 *all, int64 *history)
{
	const CatTable which[] = {CAT_RUNS, CAT_SNAPSHOTS};
	TransactionId xmin;
	TableState	st = {0};

	*all = *history = 0;
	/* the data runs it names (deltas are history) */
	(void) cat_table_version(relid, snapshot, NULL, &xmin, &st);
	for (int i = 0; i < lengthof(which); i++)
	{
		Relation	crel = cat_open(which[i], AccessShareLock);
		SysScanDesc scan = cat_scan(crel, cat_shapes[which[i]].name, relid, snapshot);
		HeapTuple	tup;

		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;

			*all += tup->t_len;
			if (which[i] == CAT_SNAPSHOTS)
			{
				/* a commit's data run kept in the row is live while named */
				Datum		v[Natts_snapshots];
				bool		n[Natts_snapshots];
				RunInfo    *data;

				heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
				data = snapshot_data(crel, v, n);
				*history += tup->t_len;
				if (data && !data_run_is_delta(&st, data->run_id, true, data->created_snapshot))
					*history -= data->stream_len;
				continue;
			}
			if (!row_is_live_data(crel, tup, &st))
				*history += tup->t_len + (int64) BLCKSZ *
					DatumGetInt32(heap_getattr(tup, Anum_runs_nblocks,
											   RelationGetDescr(crel), &isnull));
		}
		systable_endscan(scan);
		table_close(crel, AccessShareLock);
	}
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

/* the snapshots in (from, to], as cat_snapshots_oldest and cat_snapshots_range say */
static List *
snapshots_scan(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot,
			   bool with_changelog)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, AccessShareLock);
	Relation	irel = index_open(cat_index_oid("snapshots"), AccessShareLock);
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;
	int			nlimit = limit;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(from));
	ScanKeyInit(&key[2], Anum_snapshots_snapshot_id, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(to));
	scan = systable_beginscan_ordered(crel, irel, snapshot, 3, key);
	while (limit != 0 && HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		SnapshotInfo *si;

		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		si = palloc(sizeof(SnapshotInfo));
		si->snapshot_id = DatumGetInt64(v[Anum_snapshots_snapshot_id - 1]);
		si->kind = strcmp(TextDatumGetCString(v[Anum_snapshots_commit_kind - 1]), "APPEND") == 0 ? COMMIT_APPEND :
			strcmp(TextDatumGetCString(v[Anum_snapshots_commit_kind - 1]), "COMPACT") == 0 ? COMMIT_COMPACT : COMMIT_OVERWRITE;
		si->producer = TextDatumGetCString(v[Anum_snapshots_producer - 1]);
		si->commit_time = DatumGetTimestampTz(v[Anum_snapshots_commit_time - 1]);
		si->changelog = with_changelog ? snapshot_changelog(crel, v, n) : NULL;
		si->data = with_changelog ? snapshot_data(crel, v, n) : NULL;
		result = lappend(result, si);
		if (limit > 0)
			limit--;
	}
	systable_endscan_ordered(scan);
	index_close(irel, AccessShareLock);
	table_close(crel, AccessShareLock);
	/* and the small commits', from the commit log */
	return merge_snapshots(result, logged_snapshots(relid, from, to, nlimit, snapshot,
												   with_changelog), nlimit);
}

/*
 * The snapshots (id, commit kind, producer, changelog run kept in the
 * row) in (from, to] that snapshot sees, ascending; the first limit of
 * them (-1: all).
 */
List *
cat_snapshots_range(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot)
{
	return snapshots_scan(relid, from, to, limit, snapshot, true);
}

/*
 * The snapshots in (from, to] in id order, at most limit of them (-1: all),
 * read in index order: the oldest first, without reading the rest.  Their
 * changelog runs are left out (changelog NULL): expiration and counting
 * read many snapshots and none of their changes.
 */
List *
cat_snapshots_oldest(Oid relid, int64 from, int64 to, int limit, Snapshot snapshot)
{
	return snapshots_scan(relid, from, to, limit, snapshot, false);
}

/*
 * Expire one snapshot: its row, and its changelog and delta runs (their
 * blocks are freed once VACUUM removes the rows).  Only that snapshot's
 * catalog rows are read.  The caller holds the compaction lock, so no
 * compaction retires or deletes runs meanwhile; commits only add runs of
 * newer snapshots: st, the table's row as the caller read it under that
 * lock, names every live data run of older snapshots.
 */
void
cat_snapshot_expire(Oid relid, int64 snapshot_id, const TableState *st)
{
	Relation	crel = cat_open(CAT_SNAPSHOTS, RowExclusiveLock);
	Relation	irel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_snapshots_relid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_snapshots_snapshot_id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(snapshot_id));
	scan = systable_beginscan(crel, cat_index_oid("snapshots"), true, GetLatestSnapshot(), 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		v[Natts_snapshots];
		bool		n[Natts_snapshots];
		RunInfo    *data;

		found = true;

		/*
		 * The commit's data run kept in the row, still read by queries:
		 * into a row of its own (same run id) before the snapshot's goes.
		 */
		heap_deform_tuple(tup, RelationGetDescr(crel), v, n);
		data = snapshot_data(crel, v, n);
		if (data && !data_run_is_delta(st, data->run_id, true, snapshot_id))
		{
			data->in_snapshot_row = false;
			cat_run_insert(relid, data);
		}
		CatalogTupleDelete(crel, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(crel, RowExclusiveLock);

	/*
	 * A small commit's snapshot, a record of the commit log: its data run
	 * likewise, if still read; the record goes with its page
	 * (cat_log_expired).
	 */
	if (!found && !data_run_is_delta(st, -snapshot_id, true, snapshot_id))
	{
		RunInfo    *data = logged_data_run(relid, snapshot_id, GetLatestSnapshot());

		if (data)
		{
			data->in_snapshot_row = false;
			cat_run_insert(relid, data);
		}
	}

	note_change(relid, false);
	crel = cat_open(CAT_RUNS, RowExclusiveLock);
	scan = begin_runs_of_snapshots(crel, &irel, relid, snapshot_id - 1, snapshot_id,
								   GetLatestSnapshot());
	while (HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		isnull;

		/* a log page goes once all its records expired (cat_log_expired) */
		if (strcmp(TextDatumGetCString(heap_getattr(tup, Anum_runs_kind,
													RelationGetDescr(crel), &isnull)),
				   run_kinds[RUN_LOG]) == 0)
			continue;
		/* a commit's data run is still read by queries, unless a delta */
		if (!row_is_live_data(crel, tup, st))
			CatalogTupleDelete(crel, &tup->t_self);
	}
	end_runs_of_snapshots(scan, irel);
	table_close(crel, RowExclusiveLock);
	CommandCounterIncrement();
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
