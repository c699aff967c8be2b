/*-------------------------------------------------------------------------
 *
 * mat_define.c
 *	  What makes a heap table a materialized aggregate: its trigger.
 *
 * Every aggregate carries a statement trigger, pk_materialized, BEFORE
 * TRUNCATE, executing pkchangelog.materialized_aggregate() with the
 * aggregate's query (SQL naming every object with its schema) and its
 * value-count tables as arguments.  Creating such a trigger is what makes
 * the table an aggregate: the utility hook calls mat_trigger_created,
 * which checks the source and the tables, records the dependencies and the
 * catalog row and computes the rows.  pk_materialize creates the tables and
 * then the trigger; a restore of pg_dump's output creates the tables, loads
 * their rows and creates the trigger in the post-data section, after every
 * table's rows, so the aggregate is computed again from the restored
 * source.  The trigger depends on the value tables' indexes, so that a
 * parallel pg_restore creates it after them too.  Renames keep its
 * arguments equal to the stored definition (mat_refresh_triggers);
 * DROP TRIGGER stops the maintenance; fired, it refuses TRUNCATE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "catalog_mat.h"
#include "catalog_tables.h"
#include "maint_compaction.h"
#include "mat.h"
#include "pg_compat.h"
#include "table_desc.h"
#include "table_options.h"
#include "write_buffer.h"

PG_FUNCTION_INFO_V1(pk_materialized_aggregate);
PG_FUNCTION_INFO_V1(pk_materialization_attach);

#define MAT_TRIGGER_NAME "pk_materialized"


/* ---- checks --------------------------------------------------------- */

/* the producer check of pk_materialize and ALTER TABLE ... SET */
void
mat_producer_check(const char *relname, int producer)
{
	if (producer == PK_PRODUCER_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a materialized aggregate of \"%s\" needs a changelog producer other than none",
						relname),
				 errdetail("With changelog_producer none, the change stream carries an update's new row but not the retraction of the old one (-U): an aggregate would count both."),
				 errhint("Use changelog_producer lookup or full-compaction (ALTER TABLE %s SET (changelog_producer = 'lookup')), or input when writers supply complete changes.",
						 quote_identifier(relname))));
	if (producer == PK_PRODUCER_INPUT)
		ereport(WARNING,
				(errmsg("\"%s\" has changelog_producer input: its materialized aggregates are exact only if writers supply complete changes",
						relname),
				 errdetail("input keeps the changes as written: SQL UPDATE, DELETE and INSERT ... ON CONFLICT DO UPDATE carry old rows, but an INSERT that overwrites a key or pk_write('+U', ...) alone carries no -U."),
				 errhint("Write overwrites with INSERT ... ON CONFLICT DO UPDATE, or with pk_write's -U before its +U; pk_reconcile finds the groups that went wrong.")));
}

/* refuses (to do what) when the transaction has unwritten changes of relid */
void
mat_refuse_pending_writes(Oid relid, const char *what)
{
	WriteBuffer *wb = wbuf_get(relid, false);

	if (wb && (wb->n > 0 || wb->spills != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot %s in a transaction that has written to \"%s\"",
						what, get_rel_name(relid)),
				 errdetail("The writes reach the aggregate when the transaction commits."),
				 errhint("Commit the writes first.")));
}

/*
 * full-compaction: an aggregate is exact as of the last full compaction,
 * so commits since are compacted first (in the caller's transaction).
 */
void
mat_full_compaction_first(Relation rel)
{
	PkTable    *t = pk_table(rel);
	TableState	st;

	if (t->opts.changelog_producer != PK_PRODUCER_FULL_COMPACTION)
		return;
	st = cat_table_state_peek(RelationGetRelid(rel));
	if (st.last_snapshot_id == st.last_full_compaction)
		return;
	(void) GetCurrentTransactionId();
	(void) compact_table(rel, true, false);
	CommandCounterIncrement();
}

/*
 * Checks that owner may have an aggregate of the source q reads, and opens
 * the source (ShareLock: no commit of it until this transaction's).
 */
static Relation
open_source(Query *q, MatDef *def, Oid owner)
{
	Relation	rel;
	PkTable    *t;

	/* SELECT on what the query reads, as running it as owner would check */
	compat_check_query_perms(q, owner);
	if (check_enable_rls(def->source, owner, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialized aggregates do not support tables with row-level security: \"%s\" has it",
						get_rel_name(def->source)),
				 errdetail("Every reader of the aggregate would see groups of rows its policies hide.")));
	mat_refuse_pending_writes(def->source, "create a materialized aggregate");
	rel = table_open(def->source, ShareLock);
	t = pk_table(rel);
	mat_producer_check(RelationGetRelationName(rel), t->opts.changelog_producer);
	mat_full_compaction_first(rel);
	return rel;
}

/* the next live column of r (*att: where to look) is name of type */
static void
expect_column(Relation r, int *att, const char *name, Oid type)
{
	TupleDesc	d = RelationGetDescr(r);
	Form_pg_attribute a = NULL;

	while (*att < d->natts && TupleDescAttr(d, *att)->attisdropped)
		(*att)++;
	if (*att < d->natts)
		a = TupleDescAttr(d, (*att)++);
	if (a == NULL || strcmp(NameStr(a->attname), name) != 0 || a->atttypid != type)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("table \"%s\" does not have the columns of the materialized aggregate its trigger defines",
						RelationGetRelationName(r)),
				 a ? errdetail("Column %d should be \"%s\" of type %s, not \"%s\" of type %s.",
							   *att, name, format_type_be(type), NameStr(a->attname),
							   format_type_be(a->atttypid)) :
				 errdetail("Column \"%s\" of type %s is missing.", name, format_type_be(type)),
				 errhint("Use pk_materialize to make an aggregate; pg_dump writes its tables and trigger together.")));
}

/*
 * relid has the columns pk_materialize makes first: the aggregate's
 * (value_col < 0) or those of value_col's value-count table.
 */
static void
check_columns(Oid relid, MatDef *def, int value_col)
{
	Relation	r = relation_open(relid, AccessShareLock);
	int			att = 0;

	if (value_col < 0)
	{
		for (int j = 0; j < def->ncols; j++)
		{
			MatCol	   *c = &def->cols[j];

			expect_column(r, &att, c->name, c->type);
			if (mat_needs_nn(c))
				expect_column(r, &att, psprintf(MAT_NN_COLUMN, j + 1), INT8OID);
			if (c->kind == MAT_AVG)
				expect_column(r, &att, psprintf(MAT_SUM_COLUMN, j + 1), c->acctype);
		}
	}
	else
	{
		for (int k = 0; k < def->ngroups; k++)
			expect_column(r, &att, def->cols[def->groups[k]].name,
						  def->cols[def->groups[k]].type);
		expect_column(r, &att, MAT_VALUE_COLUMN, def->cols[value_col].type);
	}
	expect_column(r, &att, MAT_COUNT_COLUMN, INT8OID);
	relation_close(r, AccessShareLock);
}

/* ---- the definition ------------------------------------------------- */

/*
 * The trigger's arguments (Strings): the query as SQL, every object named
 * with its schema, then the value-count tables in column order.
 */
static List *
definition_args(Query *q, Oid *value_tables, int ncols)
{
	int			level = NewGUCNestLevel();
	List	   *args;

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	args = list_make1(makeString(pg_get_querydef(q, false)));
	AtEOXact_GUC(false, level);
	for (int j = 0; j < ncols; j++)
		if (OidIsValid(value_tables[j]))
			args = lappend(args, makeString(quote_qualified_identifier(get_namespace_name(get_rel_namespace(value_tables[j])),
																	   get_rel_name(value_tables[j]))));
	return args;
}

static Oid *make_aggregate(Oid relid, List *args, MatDef **defp);

/*
 * Creates the pk_materialized trigger on aggregate, as CREATE TRIGGER by
 * the caller would, and makes the table an aggregate unless it is one
 * (mat_trigger_created).
 * Before version 0.4 there is no trigger function: the table is made an
 * aggregate without it.
 */
void
mat_attach(Oid aggregate, Query *q, Oid *value_tables, int ncols)
{
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);

	if (!OidIsValid(mat_trigger_function()))
	{
		MatDef	   *def;

		(void) make_aggregate(aggregate, definition_args(q, value_tables, ncols), &def);
		return;
	}
	stmt->trigname = MAT_TRIGGER_NAME;
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(aggregate)),
								  get_rel_name(aggregate), -1);
	stmt->funcname = list_make2(makeString(PK_CATALOG_SCHEMA), makeString("materialized_aggregate"));
	stmt->args = definition_args(q, value_tables, ncols);
	stmt->row = false;
	stmt->timing = TRIGGER_TYPE_BEFORE;
	stmt->events = TRIGGER_TYPE_TRUNCATE;
	(void) CreateTrigger(stmt, NULL, aggregate, InvalidOid, InvalidOid, InvalidOid,
						 InvalidOid, InvalidOid, NULL, false, false);
	CommandCounterIncrement();
	mat_trigger_created(stmt);
}

/* the value-count tables of a catalog row, per column (0: none) */
static Oid *
row_value_tables(MatRow *m, int ncols)
{
	Datum	   *oids;
	int			n;
	Oid		   *tables = palloc0(sizeof(Oid) * ncols);

	deconstruct_array(m->value_tables, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
					  &oids, NULL, &n);
	for (int j = 0; j < n && j < ncols; j++)
		tables[j] = DatumGetObjectId(oids[j]);
	return tables;
}

/*
 * pkchangelog.materialization_attach(aggregate oid): the trigger of an
 * aggregate made before version 0.4 (the update script calls it).
 */
Datum
pk_materialization_attach(PG_FUNCTION_ARGS)
{
	Oid			aggregate = PG_GETARG_OID(0);
	MatRow	   *m = cat_mat_get(aggregate, GetLatestSnapshot());
	Query	   *q;

	if (m == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation %u is not a materialized aggregate", aggregate)));
	q = mat_query_tree(m);
	mat_attach(aggregate, q, row_value_tables(m, list_length(q->targetList)),
			   list_length(q->targetList));
	PG_RETURN_VOID();
}

/* ---- the trigger created, dropped, renamed --------------------------- */

/* the trigger's relation and function; false: no such trigger */
static bool
trigger_row(Oid trigoid, Oid *relid, Oid *func)
{
	Relation	trel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigoid));
	scan = systable_beginscan(trel, TriggerOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		*relid = ((Form_pg_trigger) GETSTRUCT(tup))->tgrelid;
		*func = ((Form_pg_trigger) GETSTRUCT(tup))->tgfoid;
		found = true;
	}
	systable_endscan(scan);
	table_close(trel, AccessShareLock);
	return found;
}

/* the trigger depends on the value tables' indexes (restore order) */
static void
depend_on_indexes(Oid trigoid, Oid *value_tables, int ncols)
{
	ObjectAddress trig;

	ObjectAddressSet(trig, TriggerRelationId, trigoid);
	for (int j = 0; j < ncols; j++)
	{
		Relation	vt;
		ListCell   *lc;

		if (!OidIsValid(value_tables[j]))
			continue;
		vt = table_open(value_tables[j], AccessShareLock);
		foreach(lc, RelationGetIndexList(vt))
		{
			ObjectAddress idx;

			ObjectAddressSet(idx, RelationRelationId, lfirst_oid(lc));
			recordDependencyOn(&trig, &idx, DEPENDENCY_NORMAL);
		}
		table_close(vt, AccessShareLock);
	}
}

/*
 * A table with a pk_materialized trigger but no catalog row (just made by
 * pk_materialize, or restored): checked, registered and computed.
 */
static Oid *
make_aggregate(Oid relid, List *args, MatDef **defp)
{
	Query	   *q;
	MatDef	   *def;
	Relation	rel;
	Oid			owner;
	Oid		   *value_tables;
	ObjectAddress aggaddr;
	Datum	   *oids;
	int			a = 1;

	if (!object_ownercheck(RelationRelationId, relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	if (args == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the trigger of a materialized aggregate takes the aggregate's query as its first argument"),
				 errhint("Use pk_materialize to make an aggregate.")));
	q = mat_parse(strVal(linitial(args)));
	def = mat_analyze(q);
	def->aggregate = relid;
	owner = mat_rel_owner(relid);
	rel = open_source(q, def, owner);
	check_columns(relid, def, -1);
	ObjectAddressSet(aggaddr, RelationRelationId, relid);

	value_tables = palloc0(sizeof(Oid) * def->ncols);
	for (int j = 0; j < def->ncols; j++)
	{
		ObjectAddress addr;

		if (def->cols[j].kind != MAT_MIN && def->cols[j].kind != MAT_MAX)
			continue;
		if (a >= list_length(args))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the trigger of a materialized aggregate names no value-count table for column \"%s\"",
							def->cols[j].name)));
		value_tables[j] = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(strVal(list_nth(args, a++)), NULL)),
										   NoLock, false);
		if (mat_rel_owner(value_tables[j]) != owner)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("value-count table \"%s\" must have the owner of \"%s\"",
							get_rel_name(value_tables[j]), get_rel_name(relid))));
		check_columns(value_tables[j], def, j);
		/* dropped with the aggregate, never alone */
		ObjectAddressSet(addr, RelationRelationId, value_tables[j]);
		recordDependencyOn(&addr, &aggaddr, DEPENDENCY_INTERNAL);
	}
	if (a != list_length(args))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the trigger of a materialized aggregate names %d value-count tables, not %d",
						list_length(args) - 1, a - 1)));

	recordDependencyOnExpr(&aggaddr, (Node *) q, NIL, DEPENDENCY_NORMAL);
	oids = palloc(sizeof(Datum) * def->ncols);
	for (int j = 0; j < def->ncols; j++)
		oids[j] = ObjectIdGetDatum(value_tables[j]);
	cat_mat_insert(def->source, relid, compat_node_store(q),
				   PointerGetDatum(construct_array(oids, def->ncols, OIDOID, sizeof(Oid),
												   true, TYPALIGN_INT)),
				   cat_table_state_peek(def->source).last_snapshot_id);
	mat_populate(rel, def, owner, value_tables);
	/* every backend reads the source's aggregates again */
	CacheInvalidateRelcacheByRelid(def->source);
	table_close(rel, NoLock);
	*defp = def;
	return value_tables;
}

/*
 * Is relid a materialized aggregate's table, or one of its value-count
 * tables?  Their rows are written by the source's commits, under the
 * source owner's security-restricted operation.
 */
static bool
written_by_maintenance(Oid relid)
{
	ListCell   *lc;

	foreach(lc, cat_mat_all(GetLatestSnapshot()))
	{
		MatRow	   *m = lfirst(lc);
		Datum	   *oids;
		int			n;

		if (m->aggregate == relid)
			return true;
		deconstruct_array(m->value_tables, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &oids, NULL, &n);
		for (int j = 0; j < n; j++)
			if (DatumGetObjectId(oids[j]) == relid)
				return true;
	}
	return false;
}

/* a constraint's triggers are named by the constraint */
static void
refuse_deferrable(Form_pg_trigger tg)
{
	const char *constraint = OidIsValid(tg->tgconstraint) ?
		get_constraint_name(tg->tgconstraint) : NULL;
	const char *what;

	/* CREATE CONSTRAINT TRIGGER's constraint, not yet visible, is the trigger */
	if (OidIsValid(tg->tgconstraint) && constraint == NULL)
		constraint = NameStr(tg->tgname);
	what = constraint ? psprintf("constraint \"%s\"", constraint) :
		psprintf("trigger \"%s\"", NameStr(tg->tgname));

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("table \"%s\" of a materialized aggregate cannot have deferrable %s",
					get_rel_name(tg->tgrelid), what),
			 errdetail("The aggregate is maintained at the commit of its source's writers, in a security-restricted operation, where triggers cannot be deferred."),
			 errhint("Make it NOT DEFERRABLE: the maintenance runs at the source's commit, so its checks run there.")));
}

/*
 * A trigger created or altered (CREATE CONSTRAINT TRIGGER, a foreign key's
 * or a deferrable unique constraint's triggers, ALTER CONSTRAINT ...
 * DEFERRABLE): a deferrable one is refused on a table that maintenance
 * writes.  Seen as this command left it, before its end.
 */
void
mat_trigger_check(Oid trigoid)
{
	Relation	trel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigoid));
	scan = systable_beginscan(trel, TriggerOidIndexId, true, SnapshotSelf, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tup);

		if (tg->tgdeferrable && written_by_maintenance(tg->tgrelid))
			refuse_deferrable(tg);
	}
	systable_endscan(scan);
	table_close(trel, AccessShareLock);
}

/* a table becoming an aggregate (or one of its value tables) has none */
static void
refuse_deferrable_triggers(Oid relid)
{
	Relation	trel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(trel, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		if (((Form_pg_trigger) GETSTRUCT(tup))->tgdeferrable)
			refuse_deferrable((Form_pg_trigger) GETSTRUCT(tup));
	systable_endscan(scan);
	table_close(trel, AccessShareLock);
}

/*
 * CREATE TRIGGER stmt has run: if its function is materialized_aggregate,
 * the table becomes an aggregate (unless it is one already).
 */
void
mat_trigger_created(CreateTrigStmt *stmt)
{
	Oid			func = mat_trigger_function();
	Oid			relid;
	Oid			trigoid;
	MatRow	   *m;
	Oid		   *value_tables;
	int			ncols;

	if (!OidIsValid(func) || LookupFuncName(stmt->funcname, 0, NULL, true) != func)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, false);
	trigoid = get_trigger_oid(relid, stmt->trigname, false);
	if (stmt->row || stmt->timing != TRIGGER_TYPE_BEFORE ||
		stmt->events != TRIGGER_TYPE_TRUNCATE || stmt->isconstraint)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("the trigger of a materialized aggregate must be BEFORE TRUNCATE ... FOR EACH STATEMENT")));
	if (get_rel_relkind(relid) != RELKIND_RELATION || pk_relid_is_pkmerge(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a materialized aggregate is a heap table: \"%s\" is not one",
						get_rel_name(relid))));
	m = cat_mat_get(relid, GetLatestSnapshot());
	if (m == NULL)
	{
		MatDef	   *def;

		value_tables = make_aggregate(relid, stmt->args, &def);
		ncols = def->ncols;
	}
	else
	{
		Relation	trel = table_open(TriggerRelationId, AccessShareLock);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		/* an aggregate made before 0.4 gets its trigger: one */
		ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(relid));
		scan = systable_beginscan(trel, TriggerRelidNameIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tup);

			if (tg->tgfoid == func && tg->oid != trigoid)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("materialized aggregate \"%s\" has its trigger already",
								get_rel_name(relid))));
		}
		systable_endscan(scan);
		table_close(trel, AccessShareLock);
		ncols = list_length(((Query *) mat_query_tree(m))->targetList);
		value_tables = row_value_tables(m, ncols);
	}
	refuse_deferrable_triggers(relid);
	for (int j = 0; j < ncols; j++)
		if (OidIsValid(value_tables[j]))
			refuse_deferrable_triggers(value_tables[j]);
	depend_on_indexes(trigoid, value_tables, ncols);
}

/* DROP of a relation: if it was an aggregate, it is maintained no more */
void
mat_dropped(Oid relid)
{
	Oid			source;

	/* aggregates are tables: not an index, sequence or TOAST table */
	if (get_rel_relkind(relid) != RELKIND_RELATION)
		return;
	source = cat_mat_delete(relid);

	if (OidIsValid(source) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(source)))
		CacheInvalidateRelcacheByRelid(source);
}

/* DROP TRIGGER (or of its table): a pk_materialized one ends maintenance */
void
mat_trigger_dropped(Oid trigoid)
{
	Oid			func = mat_trigger_function();
	Oid			relid;
	Oid			tgfoid;

	if (!OidIsValid(func) || !trigger_row(trigoid, &relid, &tgfoid) || tgfoid != func)
		return;
	mat_dropped(relid);
}

/* tgargs as CreateTrigger stores them */
static Datum
tgargs_of(List *args)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, args)
	{
		for (const char *p = strVal(lfirst(lc)); *p; p++)
		{
			if (*p == '\\')
				appendStringInfoChar(&buf, '\\');
			appendStringInfoChar(&buf, *p);
		}
		appendStringInfoString(&buf, "\\000");
	}
	return DirectFunctionCall1(byteain, CStringGetDatum(buf.data));
}

/*
 * Before a rename: a catalog row another PostgreSQL major wrote keeps this
 * major's tree from now on, read from its trigger's SQL while that still
 * names what the query reads (mat_query_tree); afterwards only the tree,
 * which refers to objects by OID, does.
 */
void
mat_own_trees(void)
{
	List	   *rows = cat_mat_all(GetLatestSnapshot());
	ListCell   *lc;

	foreach(lc, rows)
	{
		MatRow	   *m = lfirst(lc);

		if (compat_node_load(m->query) == NULL)
			cat_mat_set_query(m->aggregate, compat_node_store(mat_query_tree(m)));
	}
}

/*
 * After a rename (of a source, a column, a schema, a function ...): every
 * aggregate's trigger arguments are its stored definition as SQL again, so
 * that pg_dump writes what a restore can read.
 */
void
mat_refresh_triggers(void)
{
	Oid			func = mat_trigger_function();
	List	   *rows;
	ListCell   *lc;
	Relation	trel;

	if (!OidIsValid(func) || (rows = cat_mat_all(GetLatestSnapshot())) == NIL)
		return;
	trel = table_open(TriggerRelationId, RowExclusiveLock);
	foreach(lc, rows)
	{
		MatRow	   *m = lfirst(lc);
		Query	   *q = mat_query_tree(m);
		int			ncols = list_length(q->targetList);
		List	   *args = definition_args(q, row_value_tables(m, ncols), ncols);
		Datum		newargs = tgargs_of(args);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(m->aggregate));
		scan = systable_beginscan(trel, TriggerRelidNameIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Datum		values[Natts_pg_trigger] = {0};
			bool		nulls[Natts_pg_trigger] = {0};
			bool		replace[Natts_pg_trigger] = {0};
			bool		isnull;
			Datum		old;

			if (((Form_pg_trigger) GETSTRUCT(tup))->tgfoid != func)
				continue;
			old = heap_getattr(tup, Anum_pg_trigger_tgargs, RelationGetDescr(trel), &isnull);
			if (!isnull && datumIsEqual(old, newargs, false, -1))
				continue;
			values[Anum_pg_trigger_tgargs - 1] = newargs;
			replace[Anum_pg_trigger_tgargs - 1] = true;
			values[Anum_pg_trigger_tgnargs - 1] = Int16GetDatum(list_length(args));
			replace[Anum_pg_trigger_tgnargs - 1] = true;
			tup = heap_modify_tuple(tup, RelationGetDescr(trel), values, nulls, replace);
			CatalogTupleUpdate(trel, &tup->t_self, tup);
			CacheInvalidateRelcacheByRelid(m->aggregate);
		}
		systable_endscan(scan);
	}
	table_close(trel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * pkchangelog.materialized_aggregate(): the trigger; TRUNCATE of an
 * aggregate would leave it unequal to its query.
 */
Datum
pk_materialized_aggregate(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	const char *name;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("pkchangelog.materialized_aggregate() is a trigger function")));
	name = RelationGetRelationName(td->tg_relation);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot TRUNCATE materialized aggregate \"%s\"", name),
			 errdetail("It would no longer equal its query."),
			 errhint("pk_reconcile('%s', repair => true) computes it again; DROP TABLE stops its maintenance.",
					 quote_identifier(name))));
	PG_RETURN_NULL();
}
