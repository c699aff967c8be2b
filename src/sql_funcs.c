/*-------------------------------------------------------------------------
 *
 * sql_funcs.c
 *	  SQL-callable functions in C that are not part of an access method:
 *	  pk_write, pk_runs, pk_options, pk_compact, pk_expire_snapshots, and
 *	  the helpers the SQL-language functions use (pkmerge_relid,
 *	  lookup_cache_stats).  pk_changes and pk_current_snapshot are in
 *	  changelog_read.c, library_version and library_accepts in
 *	  pkchangelog.c.
 *
 * Every function checks the caller's privileges before it asks for a lock
 * on the table (pk_open_table).  pk_write runs the SQL statement that does
 * what its RowKind says (INSERT, INSERT ... ON CONFLICT DO UPDATE, DELETE),
 * so that privileges, constraints, row-level security and triggers apply
 * as to that statement; am_dml.c records the statement's write with the
 * RowKind pk_write was given.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/xid8.h"

#include "am_dml.h"
#include "catalog.h"
#include "catalog_snapshots.h"
#include "catalog_visible.h"
#include "commit_log.h"
#include "maint_compaction.h"
#include "maint_expire.h"
#include "pg_compat.h"
#include "relcache_hub.h"
#include "run_list.h"
#include "run_read_stats.h"
#include "run_read.h"
#include "sql_funcs.h"
#include "table_desc.h"
#include "table_options.h"

static ExecutorStart_hook_type prev_executor_start = NULL;

/*
 * The statement pk_write is about to run, until its executor starts and
 * gives it its command id (ExecutorStart hook below).
 */
static DmlRecordAs *starting = NULL;
static const char *starting_sql = NULL;

/*
 * pk_write's statements, prepared once per table and RowKind for the
 * backend: parsing and planning a statement per call cost as much as
 * running it.  The text names the table, its schema and its columns, so an
 * entry goes stale when the table's relcache entry is invalidated (or its
 * schema is renamed, which invalidates nothing of the table's) and is
 * prepared again at its next use, unless a pk_write of it is still running
 * (one called by a trigger of its own statement): that call runs its
 * statement unprepared.
 */
typedef struct WritePlanKey
{
	Oid			relid;
	PkRowKind	kind;
} WritePlanKey;

typedef struct WritePlan
{
	WritePlanKey key;			/* hash key */
	char	   *sql;			/* in TopMemoryContext */
	char	   *nspname;		/* the schema the text names */
	SPIPlanPtr	plan;			/* saved */
	bool		valid;
	int			running;		/* pk_write calls executing plan */
} WritePlan;

#define WRITE_PLANS_SWEEP 64	/* entries kept before stale ones are freed */

static HTAB *write_plans = NULL;

/*
 * pkchangelog.pkmerge_relid(rel regclass) -> oid: rel, after checking that
 * it is a pkmerge table.  The SQL functions over the catalog (pk_snapshots,
 * pk_stats) show table-level metadata to every role, as pg_stat_user_tables
 * does, and take no lock of the table.
 */
PG_FUNCTION_INFO_V1(pk_pkmerge_relid);
Datum
pk_pkmerge_relid(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);

	pk_check_table(relid);
	PG_RETURN_OID(relid);
}

static const char *const run_kind_names[] = {"data", "changelog", "delta", "log"};

/* where pk_log_snapshots puts its rows, and of which table */
typedef struct LogSnapshotsOut
{
	ReturnSetInfo *rsinfo;
	Oid			relid;
} LogSnapshotsOut;

/*
 * pkchangelog.log_snapshots(rel regclass) -> the small commits' and
 * compactions' snapshots of a pkmerge table kept in its commit log
 * (commit_log.c, log_snapshot.c), as rows of
 * pkchangelog.snapshots would show them, without their runs' bytes and
 * keys (their sizes instead).  Table-level metadata, which pk_snapshots
 * shows to every role: it takes no lock of the table, and reads its log
 * pages as catalog_snapshots.c says.
 */
/* one record as a row of pkchangelog.log_snapshots */
static void
log_snapshot_row(const CommitRecord *rec, void *arg)
{
	LogSnapshotsOut *out = (LogSnapshotsOut *) arg;
	Datum		values[15];
	bool		nulls[15] = {0};

	values[0] = ObjectIdGetDatum(out->relid);
	values[1] = Int64GetDatum(rec->snapshot_id);
	values[2] = CStringGetTextDatum(cat_commit_kind_name(rec->kind));
	values[3] = TimestampTzGetDatum(rec->commit_time);
	values[4] = CStringGetTextDatum(rec->user);
	values[5] = FullTransactionIdGetDatum(rec->xid);
	values[6] = Int64GetDatum(rec->total_record_count);
	values[7] = Int64GetDatum(rec->delta_record_count);
	values[8] = Int64GetDatum(rec->changelog_record_count);
	values[9] = CStringGetTextDatum(prod_name(rec->producer));
	values[10] = Float8GetDatum(rec->duration_ms);
	if (rec->changelog)
	{
		values[11] = Int64GetDatum(rec->changelog->run_id);
		values[14] = Int32GetDatum((int32) rec->changelog->stream_len);
	}
	else
		nulls[11] = nulls[14] = true;
	if (rec->data)
	{
		values[12] = Int64GetDatum(rec->data->max_seq);
		values[13] = Int32GetDatum((int32) rec->data->stream_len);
	}
	else
		nulls[12] = nulls[13] = true;
	tuplestore_putvalues(out->rsinfo->setResult, out->rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(pk_log_snapshots);
Datum
pk_log_snapshots(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	LogSnapshotsOut out;
	Relation	rel;

	InitMaterializedSRF(fcinfo, 0);
	pk_check_table(relid);
	rel = RelationIdGetRelation(relid);
	if (!RelationIsValid(rel))
		return (Datum) 0;		/* dropped meanwhile */
	out.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	out.relid = relid;
	cat_log_records_each(rel, GetActiveSnapshot(), log_snapshot_row, &out);
	RelationClose(rel);
	return (Datum) 0;
}

static int
run_level_cmp(const ListCell *a, const ListCell *b)
{
	const RunInfo *ra = lfirst(a);
	const RunInfo *rb = lfirst(b);

	if (ra->level != rb->level)
		return ra->level < rb->level ? -1 : 1;
	if (ra->created_snapshot != rb->created_snapshot)
		return ra->created_snapshot < rb->created_snapshot ? -1 : 1;
	return ra->run_id < rb->run_id ? -1 : ra->run_id > rb->run_id ? 1 : 0;
}

/* snapshots pk_runs reads at a time: its memory, whatever the history */
#define RUNS_BATCH_SNAPSHOTS	1024

/* pk_runs' state: where rows go, and what they may show */
typedef struct RunsOut
{
	ReturnSetInfo *rsinfo;
	Oid			relid;
	bool		keys;
	Relation	rel;			/* opened to read small runs' keys */
	MemoryContext rowcxt;
} RunsOut;

/* run r as a row of pk_runs */
static void
runs_put(RunsOut *out, RunInfo *r)
{
	Datum		values[8];
	bool		nulls[8] = {0};
	char	   *min_key = r->min_key;
	char	   *max_key = r->max_key;
	MemoryContext old;

	/* the commit log's pages hold snapshots, not rows (pk_snapshots) */
	if (r->kind == RUN_LOG)
		return;
	old = MemoryContextSwitchTo(out->rowcxt);
	/* a small commit's data run: its keys are in its block only */
	if (out->keys && min_key == NULL && r->kind != RUN_CHANGELOG &&
		RUN_IS_COMPACT(r) && r->record_count > 0)
	{
		if (out->rel == NULL)
			out->rel = table_open(out->relid, AccessShareLock);
		run_compact_key_range(out->rel, pk_table(out->rel), r, &min_key, &max_key);
	}
	values[0] = Int64GetDatum(r->run_id);
	values[1] = Int32GetDatum(r->level);
	values[2] = CStringGetTextDatum(run_kind_names[r->kind]);
	values[3] = Int64GetDatum(r->record_count);
	values[4] = Int64GetDatum(r->size_bytes);
	nulls[5] = !out->keys || min_key == NULL;
	if (!nulls[5])
		values[5] = CStringGetTextDatum(min_key);
	nulls[6] = !out->keys || max_key == NULL;
	if (!nulls[6])
		values[6] = CStringGetTextDatum(max_key);
	values[7] = Int64GetDatum(r->created_snapshot);
	tuplestore_putvalues(out->rsinfo->setResult, out->rsinfo->setDesc, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(out->rowcxt);
}

/*
 * pk_runs(rel regclass) -> the table's runs, by level, then the snapshot
 * that made them, then run id (a commit's data run kept in its snapshot's
 * row or commit log record has minus the snapshot's id).  The runs are
 * table-level metadata; their first and last keys are values of the
 * table's rows, shown only to a caller who may read the key columns
 * (pk_may_read_keys), NULL to others.  Reads the catalog as of the
 * caller's snapshot; locks the table (AccessShareLock) only to read the
 * keys of small commits' runs, which their blocks alone hold.
 *
 * The runs with rows of pkchangelog.runs are read at once; the commits'
 * runs kept in their snapshots (one per retained small commit: millions,
 * on a busy table) RUNS_BATCH_SNAPSHOTS snapshots at a time, merged into
 * them in order (all of level 0, in snapshot order), so memory stays
 * bounded whatever the history.
 */
PG_FUNCTION_INFO_V1(pk_runs);
Datum
pk_runs(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	RunsOut		out = {0};
	List	   *runs;
	ListCell   *next;
	MemoryContext batchcxt;
	MemoryContext old;
	int64		from = 0;
	bool		more = true;

	InitMaterializedSRF(fcinfo, 0);
	pk_check_table(relid);
	out.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	out.relid = relid;
	out.keys = pk_may_read_keys(relid);
	out.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pk_runs row",
									   ALLOCSET_DEFAULT_SIZES);
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "pk_runs batch",
									 ALLOCSET_DEFAULT_SIZES);
	runs = runlist_catalog(relid, GetActiveSnapshot(), false);
	list_sort(runs, run_level_cmp);
	next = list_head(runs);

	/*
	 * The commits' data and changelog runs kept in their snapshots.  A data
	 * run that compaction replaced is a delta of producer none's stream;
	 * under another producer it is no run any more (its bytes go with the
	 * snapshot: catalog_bytes counts them).
	 */
	while (more)
	{
		List	   *snaps;
		List	   *in_rows = NIL;
		List	   *shown = NIL;
		ListCell   *lc;

		old = MemoryContextSwitchTo(batchcxt);
		snaps = cat_snapshots_range(relid, from, PG_INT64_MAX, RUNS_BATCH_SNAPSHOTS,
									GetActiveSnapshot());
		more = list_length(snaps) == RUNS_BATCH_SNAPSHOTS;
		foreach(lc, snaps)
		{
			SnapshotInfo *si = lfirst(lc);

			if (si->data)
				in_rows = lappend(in_rows, si->data);
			from = si->snapshot_id;
		}
		cat_runs_mark_deltas(relid, GetActiveSnapshot(), in_rows);
		foreach(lc, snaps)
		{
			SnapshotInfo *si = lfirst(lc);

			if (si->changelog)
				shown = lappend(shown, si->changelog);
			if (si->data && (si->data->kind == RUN_DATA ||
							 strcmp(si->producer, prod_name(PK_PRODUCER_NONE)) == 0))
				shown = lappend(shown, si->data);
		}
		list_sort(shown, run_level_cmp);
		MemoryContextSwitchTo(old);
		foreach(lc, shown)
		{
			for (; next && run_level_cmp(next, lc) < 0; next = lnext(runs, next))
				runs_put(&out, lfirst(next));
			runs_put(&out, lfirst(lc));
		}
		MemoryContextReset(batchcxt);
	}
	for (; next; next = lnext(runs, next))
		runs_put(&out, lfirst(next));
	if (out.rel != NULL)
		table_close(out.rel, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * pk_options(rel regclass) -> (key text, value text): every option with its
 * value, defaults included, in the order of DESIGN §8 (table_options.c).
 */
PG_FUNCTION_INFO_V1(pk_options);
Datum
pk_options(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		reloptions;
	bool		isnull;
	HeapTuple	tuple;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	/* table-level metadata, public as pg_class.reloptions: no lock either */
	pk_check_table(relid);

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))	/* dropped since the check */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	foreach(lc, pkopt_show(isnull ? (Datum) 0 : reloptions))
	{
		PkOptionShown *shown = lfirst(lc);
		Datum		values[2];
		bool		nulls[2] = {false, shown->value == NULL};

		values[0] = CStringGetTextDatum(shown->name);
		if (shown->value)
			values[1] = CStringGetTextDatum(shown->value);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	ReleaseSysCache(tuple);
	PG_RETURN_VOID();
}

#define ROWKIND_HINT "Use one of '+I', '-U', '+U', '-D'."

static PkRowKind
parse_rowkind(const char *s)
{
	if (strcmp(s, "+I") == 0)
		return PK_INSERT;
	if (strcmp(s, "-U") == 0)
		return PK_UPDATE_BEFORE;
	if (strcmp(s, "+U") == 0)
		return PK_UPDATE_AFTER;
	if (strcmp(s, "-D") == 0)
		return PK_DELETE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid RowKind \"%s\"", s),
			 errhint(ROWKIND_HINT)));
	return PK_INSERT;			/* keep compiler quiet */
}

/*
 * The privileges of the statement pk_write runs for a RowKind: +I an
 * INSERT; +U an INSERT ... ON CONFLICT (key) DO UPDATE, which also reads
 * the key; -U/-D a DELETE ... WHERE key = ..., which reads the key.  The
 * statement's executor checks them exactly, column by column, but only
 * after its parser has locked the table; so they are checked here first,
 * without a lock, at table level or on any column: a caller without such
 * a privilege gets its error at once.
 */
static void
check_write_privileges(Oid relid, PkRowKind kind)
{
	static const AclMode each[] = {ACL_INSERT, ACL_UPDATE, ACL_DELETE, ACL_SELECT};
	AclMode		modes;
	Oid			user = GetUserId();

	if (kind == PK_INSERT)
		modes = ACL_INSERT;
	else if (kind == PK_UPDATE_AFTER)
		modes = ACL_INSERT | ACL_UPDATE | ACL_SELECT;
	else
		modes = ACL_DELETE | ACL_SELECT;
	for (int i = 0; i < lengthof(each); i++)
		if ((modes & each[i]) &&
			pg_class_aclcheck(relid, user, each[i]) != ACLCHECK_OK &&
			pg_attribute_aclcheck_all(relid, user, each[i], ACLMASK_ANY) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
}

/* "schema.op" of the equality operator of a key type's btree order */
static char *
key_equality_operator(Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR);
	HeapTuple	tup;
	Form_pg_operator op;
	char	   *name;

	if (!OidIsValid(tc->eq_opr))
		elog(ERROR, "key type %u has no equality operator", typid);
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", tc->eq_opr);
	op = (Form_pg_operator) GETSTRUCT(tup);
	name = psprintf("%s.%s", quote_identifier(get_namespace_name(op->oprnamespace)),
					NameStr(op->oprname));
	ReleaseSysCache(tup);
	return name;
}

static bool
is_key_column(PkTable *t, AttrNumber attnum)
{
	for (int i = 0; i < t->nkeys; i++)
		if (t->keys[i].attnum == attnum)
			return true;
	return false;
}

/*
 * The statement pk_write runs, with the row as parameter $1.  Every name
 * in it is qualified (the table, the key's equality operators): it runs
 * with the caller's search_path, where another role's objects must not
 * be picked up.  Generated columns are left to the table; identity
 * columns take the row's value (OVERRIDING SYSTEM VALUE), as a replicated
 * row would.  +U sets every column to the row's own value ($1), the key
 * columns too (the record replaces the row whole), not EXCLUDED's: the
 * caller needs no SELECT on the columns it overwrites.
 */
static char *
write_statement(Relation rel, PkTable *t, PkRowKind kind)
{
	TupleDesc	desc = RelationGetDescr(rel);
	char	   *relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													 RelationGetRelationName(rel));
	StringInfoData sql;
	StringInfoData cols;
	StringInfoData vals;
	StringInfoData set;
	StringInfoData keys;

	initStringInfo(&sql);
	if (!PK_KIND_IS_ADD(kind))
	{
		appendStringInfo(&sql, "DELETE FROM %s WHERE ", relname);
		for (int i = 0; i < t->nkeys; i++)
		{
			const char *col = quote_identifier(NameStr(TupleDescAttr(desc, t->keys[i].attnum - 1)->attname));

			appendStringInfo(&sql, "%s%s OPERATOR(%s) ($1).%s", i > 0 ? " AND " : "",
							 col, key_equality_operator(t->keys[i].typid), col);
		}
		return sql.data;
	}

	initStringInfo(&cols);
	initStringInfo(&vals);
	initStringInfo(&set);
	initStringInfo(&keys);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *col = quote_identifier(NameStr(att->attname));

		if (att->attisdropped || att->attgenerated)
			continue;
		appendStringInfo(&cols, "%s%s", cols.len ? ", " : "", col);
		appendStringInfo(&vals, "%s($1).%s", vals.len ? ", " : "", col);
		if (is_key_column(t, att->attnum))
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "", col);
		if (att->attidentity != ATTRIBUTE_IDENTITY_ALWAYS)
			appendStringInfo(&set, "%s%s = ($1).%s", set.len ? ", " : "", col, col);
	}
	appendStringInfo(&sql, "INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE VALUES (%s)",
					 relname, cols.data, vals.data);
	if (kind == PK_UPDATE_AFTER)
	{
		/*
		 * The record replaces the row whole, key columns included: a key
		 * its operator class calls equal to the stored one (10.00 for 10,
		 * 'A' for 'a' under a case-insensitive collation) is stored as
		 * given, as an INSERT's would be.  An identity column that is
		 * GENERATED ALWAYS can only be updated to its default.
		 */
		if (set.len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("pk_write cannot write a +U to table \"%s\"",
							RelationGetRelationName(rel)),
					 errdetail("Its only columns are identity columns defined as GENERATED ALWAYS, which an update cannot set."),
					 errhint("Write the row with '+I', which replaces the row whole.")));
		appendStringInfo(&sql, " ON CONFLICT (%s) DO UPDATE SET %s", keys.data, set.data);
	}
	return sql.data;
}

static void
write_plan_release(WritePlan *wp)
{
	if (wp->plan)
		SPI_freeplan(wp->plan);
	if (wp->sql)
		pfree(wp->sql);
	if (wp->nspname)
		pfree(wp->nspname);
	wp->plan = NULL;
	wp->sql = NULL;
	wp->nspname = NULL;
}

/* relcache invalidation: the statements of the table (or of all) go stale */
static void
write_plans_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	WritePlan  *wp;

	if (write_plans == NULL)
		return;
	hash_seq_init(&status, write_plans);
	while ((wp = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || wp->key.relid == relid)
			wp->valid = false;
}

/* free the stale entries nobody runs (dropped tables leave theirs) */
static void
write_plans_sweep(void)
{
	HASH_SEQ_STATUS status;
	WritePlan  *wp;

	hash_seq_init(&status, write_plans);
	while ((wp = hash_seq_search(&status)) != NULL)
		if (!wp->valid && wp->running == 0)
		{
			write_plan_release(wp);
			hash_search(write_plans, &wp->key, HASH_REMOVE, NULL);
		}
}

/*
 * The prepared statement of pk_write for rel and kind, or NULL when a
 * stale one is still running (the caller then runs the text once).
 * Called inside the SPI connection.
 */
static WritePlan *
write_plan(Relation rel, PkTable *t, PkRowKind kind, Oid reltype)
{
	WritePlanKey key;
	WritePlan  *wp;
	bool		found;
	char	   *nspname = get_namespace_name(RelationGetNamespace(rel));

	if (write_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(WritePlanKey);
		ctl.entrysize = sizeof(WritePlan);
		write_plans = hash_create("pk_write statements", 16, &ctl,
								  HASH_ELEM | HASH_BLOBS);
	}
	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.kind = kind;
	wp = hash_search(write_plans, &key, HASH_FIND, NULL);
	if (wp && wp->valid && strcmp(wp->nspname, nspname) == 0)
		return wp;
	if (wp && wp->running > 0)
		return NULL;
	if (wp == NULL && hash_get_num_entries(write_plans) >= WRITE_PLANS_SWEEP)
		write_plans_sweep();
	wp = hash_search(write_plans, &key, HASH_ENTER, &found);
	if (!found)
	{
		wp->sql = NULL;
		wp->nspname = NULL;
		wp->plan = NULL;
		wp->running = 0;
	}
	wp->valid = false;
	write_plan_release(wp);
	wp->sql = MemoryContextStrdup(TopMemoryContext, write_statement(rel, t, kind));
	wp->nspname = MemoryContextStrdup(TopMemoryContext, nspname);
	wp->plan = SPI_prepare(wp->sql, 1, &reltype);
	if (wp->plan == NULL)
		elog(ERROR, "could not prepare pk_write statement: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(wp->plan) != 0)
		elog(ERROR, "could not keep pk_write statement");
	wp->valid = true;
	return wp;
}

/*
 * pk_write(rel regclass, rowkind text, r anyelement): one record with an
 * explicit RowKind, as a CDC pipeline hands rows over.  r must be a row of
 * the table's type.  +I runs an INSERT of r; +U an INSERT ... ON CONFLICT
 * (key) DO UPDATE to r (whose conflict path applies the UPDATE policies to
 * the row replaced); -U and -D a DELETE of r's key.  The write the
 * statement makes is recorded with the RowKind given (and for -U/-D the
 * row given); a -U/-D of a key that has no row still writes its record
 * (dml_write_absent).
 */
PG_FUNCTION_INFO_V1(pk_write);
Datum
pk_write(PG_FUNCTION_ARGS)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 2);
	Oid			relid;
	Oid			reltype;
	PkRowKind	kind;
	Relation	rel;
	Datum		row;
	HeapTupleData htup;
	DmlRecordAs ra;
	DmlRecordAs *outer;
	DmlRecordAs *outer_starting = starting;
	const char *outer_sql = starting_sql;
	WritePlan  *wp;
	const char *sql = NULL;
	uint64		processed = 0;

	/* a NULL is a mistake here: ignoring it would lose a record */
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pk_write needs a table, not NULL")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pk_write needs a RowKind, not NULL"),
				 errhint(ROWKIND_HINT)));
	relid = PG_GETARG_OID(0);
	kind = parse_rowkind(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	pk_check_table(relid);
	check_write_privileges(relid, kind);

	reltype = get_rel_type_id(relid);
	if (argtype != reltype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("pk_write on \"%s\" needs a row of type %s, not %s",
						get_rel_name(relid), format_type_be(reltype),
						format_type_be(argtype)),
				 errhint("Pass ROW(...)::%s.", format_type_be(reltype))));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("pk_write on \"%s\" needs a row, not NULL",
						get_rel_name(relid))));
	row = PG_GETARG_DATUM(2);

	/* the statement locks the table as well: the caller may write it */
	rel = pk_open_table(relid, RowExclusiveLock, 0);

	ra.relid = relid;
	ra.cid = InvalidCommandId;
	ra.kind = kind;
	ra.row = NULL;
	htup.t_data = DatumGetHeapTupleHeader(row);
	htup.t_len = HeapTupleHeaderGetDatumLength(htup.t_data);
	ItemPointerSetInvalid(&htup.t_self);
	htup.t_tableOid = InvalidOid;
	if (!PK_KIND_IS_ADD(kind))
		ra.row = minimal_tuple_from_heap_tuple(&htup, 0);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	wp = write_plan(rel, pk_table(rel), kind, reltype);
	if (wp == NULL)
		sql = write_statement(rel, pk_table(rel), kind);
	outer = dml_record_as(&ra);
	starting = &ra;
	starting_sql = wp ? wp->sql : sql;
	if (wp)
		wp->running++;
	PG_TRY();
	{
		int			rc;

		if (wp)
			rc = SPI_execute_plan(wp->plan, &row, NULL, false, 0);
		else
			rc = SPI_execute_with_args(sql, 1, &reltype, &row, NULL, false, 0);
		if (rc < 0)
			elog(ERROR, "pk_write statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	}
	PG_FINALLY();
	{
		(void) dml_record_as(outer);
		starting = outer_starting;
		starting_sql = outer_sql;
		if (wp)
			wp->running--;
	}
	PG_END_TRY();
	SPI_finish();

	if (!PK_KIND_IS_ADD(kind) && processed == 0)
		(void) dml_write_absent(rel, kind, ra.row);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * pk_write's statement starts: its output command id is the one its writes
 * carry (the writes of statements its triggers run have later ones).
 */
static void
sqlfuncs_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (starting && queryDesc->sourceText &&
		strcmp(queryDesc->sourceText, starting_sql) == 0)
	{
		starting->cid = queryDesc->estate->es_output_cid;
		starting = NULL;
	}
}

void
sqlfuncs_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = sqlfuncs_executor_start;
	hub_register_relcache(write_plans_invalidate, (Datum) 0);
}

/*
 * pk_compact(rel regclass, full boolean DEFAULT false) -> bigint: waits for
 * a running compaction of the table, then compacts: everything into the
 * bottom level when full, else what universal compaction picks.  Returns
 * the COMPACT snapshot's id, NULL when there was nothing to do.  STRICT:
 * a NULL argument compacts nothing.
 */
PG_FUNCTION_INFO_V1(pk_compact);
Datum
pk_compact(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bool		full = PG_GETARG_BOOL(1);
	Relation	rel = pk_open_table(relid, RowExclusiveLock, ACL_UPDATE);
	int64		snapshot_id;

	/* the compaction commits with the caller's transaction: it needs an xid */
	(void) GetCurrentTransactionId();
	snapshot_id = compact_table(rel, full, false);
	table_close(rel, NoLock);
	if (snapshot_id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(snapshot_id);
}

/*
 * pk_expire_snapshots(rel regclass, max_snapshots bigint DEFAULT NULL) ->
 * bigint: expires the snapshots beyond the table's retention options, the
 * oldest first and at most max_snapshots of them (NULL: all); returns how
 * many.
 */
PG_FUNCTION_INFO_V1(pk_expire_snapshots);
Datum
pk_expire_snapshots(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int64		max_snapshots = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	Relation	rel;
	int64		n;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (!PG_ARGISNULL(1) && max_snapshots < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_snapshots must not be negative"),
				 errhint("Pass NULL to expire every snapshot that is due.")));
	relid = PG_GETARG_OID(0);
	rel = pk_open_table(relid, RowExclusiveLock, ACL_DELETE);
	n = expire_snapshots(rel, max_snapshots, 0);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}

/* a function's result row of two bigint columns */
static Datum
two_counts(FunctionCallInfo fcinfo, int64 a, int64 b)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(a);
	values[1] = Int64GetDatum(b);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * pkchangelog.lookup_cache_stats(relid) -> (hits, misses): the table's
 * point-lookup block cache counters over every backend since server start
 * (pk_stats shows them).  Counts, not row data: callable by every role.
 */
PG_FUNCTION_INFO_V1(pk_lookup_cache_stats);
Datum
pk_lookup_cache_stats(PG_FUNCTION_ARGS)
{
	int64		hits;
	int64		misses;

	readstats_get(PG_GETARG_OID(0), &hits, &misses);
	return two_counts(fcinfo, hits, misses);
}

/*
 * pkchangelog.catalog_bytes(relid) -> (all_bytes, history_bytes): the
 * bytes of the table's catalog rows, and of its retained history (pk_stats
 * shows them).  Sizes, not row data: callable by every role.
 */
PG_FUNCTION_INFO_V1(pk_catalog_bytes);
Datum
pk_catalog_bytes(PG_FUNCTION_ARGS)
{
	int64		all;
	int64		history;

	cat_row_bytes(PG_GETARG_OID(0), GetActiveSnapshot(), &all, &history);
	return two_counts(fcinfo, all, history);
}
