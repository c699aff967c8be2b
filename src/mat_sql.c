/*-------------------------------------------------------------------------
 *
 * mat_sql.c
 *	  The SQL side of materialized aggregates: pk_materialize (the
 *	  aggregate's tables, dependencies, catalog row and first fill),
 *	  pk_reconcile, the helpers of the pk_materializations view, and what
 *	  DDL on a source or an aggregate does to them.
 *
 * An aggregate is a heap table owned by its creator, with a unique index
 * (NULLS NOT DISTINCT) on its GROUP BY columns, and for each min or max a
 * value-count table beside it that depends on it internally (dropped with
 * it, never alone).  The aggregate table depends on the source's columns
 * it reads, as a view does (pg_depend): DROP TABLE of the source is
 * refused while aggregates exist, or drops them with CASCADE, and so is
 * DROP COLUMN of a column the query reads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "catalog_mat.h"
#include "catalog_tables.h"
#include "mat.h"
#include "pg_compat.h"
#include "table_desc.h"
#include "table_options.h"

PG_FUNCTION_INFO_V1(pk_materialize);
PG_FUNCTION_INFO_V1(pk_reconcile);
PG_FUNCTION_INFO_V1(pk_materialization_query);
PG_FUNCTION_INFO_V1(pk_materialization_exact_as_of);

/* the type of a column, qualified, with its collation where not the type's */
static char *
column_type(Oid type, int32 typmod, Oid collation)
{
	char	   *s = format_type_extended(type, typmod,
										 FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);

	if (OidIsValid(collation) && collation != get_typcollation(type))
		s = psprintf("%s COLLATE %s", s, generate_collation_name(collation));
	return s;
}

static void
spi_exec(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute failed for \"%s\": %s", sql, SPI_result_code_string(rc));
}

/* the GROUP BY columns, "a, b, " */
static char *
group_columns(MatDef *def, bool with_types)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < def->ngroups; k++)
	{
		MatCol	   *c = &def->cols[def->groups[k]];

		appendStringInfo(&buf, "%s", quote_identifier(c->name));
		if (with_types)
			appendStringInfo(&buf, " %s", column_type(c->type, c->typmod, c->collation));
		appendStringInfoString(&buf, ", ");
	}
	return buf.data;
}

/*
 * The aggregate's table, its index and its value-count tables, created by
 * SQL as the caller (SPI connected); value_tables gets them per column (0:
 * none).
 */
static void
create_tables(MatDef *def, RangeVar *rv, Oid *value_tables)
{
	StringInfoData buf;
	char	   *table = quote_qualified_identifier(rv->schemaname, rv->relname);
	Oid			nsp = get_namespace_oid(rv->schemaname, false);

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s (", table);
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];

		appendStringInfo(&buf, "%s %s, ", quote_identifier(c->name),
						 column_type(c->type, c->typmod, c->collation));
		if (mat_needs_nn(c))
		{
			appendStringInfo(&buf, MAT_NN_COLUMN, j + 1);
			appendStringInfoString(&buf, " bigint NOT NULL, ");
		}
		if (c->kind == MAT_AVG)
		{
			appendStringInfo(&buf, MAT_SUM_COLUMN, j + 1);
			appendStringInfo(&buf, " %s, ", column_type(c->acctype, -1, InvalidOid));
		}
	}
	appendStringInfo(&buf, "%s bigint NOT NULL) USING heap", MAT_COUNT_COLUMN);
	spi_exec(buf.data);
	CommandCounterIncrement();
	def->aggregate = RangeVarGetRelid(rv, NoLock, false);
	if (def->ngroups > 0)
	{
		char	   *cols = group_columns(def, false);

		cols[strlen(cols) - 2] = '\0';
		spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT", table, cols));
	}
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];
		char	   *name;
		char	   *vt;

		if (c->kind != MAT_MIN && c->kind != MAT_MAX)
			continue;
		name = ChooseRelationName(rv->relname, c->name, "values", nsp, false);
		vt = quote_qualified_identifier(rv->schemaname, name);
		spi_exec(psprintf("CREATE TABLE %s (%s%s %s NOT NULL, %s bigint NOT NULL) USING heap",
						  vt, group_columns(def, true), MAT_VALUE_COLUMN,
						  column_type(c->type, c->typmod, c->collation), MAT_COUNT_COLUMN));
		spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s%s) NULLS NOT DISTINCT",
						  vt, group_columns(def, false), MAT_VALUE_COLUMN));
		CommandCounterIncrement();
		value_tables[j] = get_relname_relid(name, nsp);
	}
}

/* ALTER TABLE ... SET (changelog_producer = ...) of a source */
void
mat_check_producer(Oid relid, int producer)
{
	if (cat_mat_list(relid, GetLatestSnapshot()) != NIL)
		mat_producer_check(get_rel_name(relid), producer);
}

/*
 * pk_materialize(name text, query text): creates heap table name (in the
 * source's schema unless qualified) holding query's result, and keeps it so.
 */
Datum
pk_materialize(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *query_string = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(name, NULL));
	Query	   *q;
	MatDef	   *def;
	Oid		   *value_tables;

	q = mat_parse(query_string);
	def = mat_analyze(q);
	/* the source's privileges first (checked again as the owner, below) */
	compat_check_query_perms(q, InvalidOid);
	if (rv->schemaname == NULL)
		rv->schemaname = get_namespace_name(get_rel_namespace(def->source));

	value_tables = palloc0(sizeof(Oid) * def->ncols);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	create_tables(def, rv, value_tables);
	SPI_finish();
	/* its trigger makes the table an aggregate (mat_define.c) */
	mat_attach(def->aggregate, q, value_tables, def->ncols);
	PG_RETURN_VOID();
}

/* the aggregate named, checked to be one; its row */
static MatRow *
mat_by_name(const char *name, Oid *aggregate)
{
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(name, NULL));
	MatRow	   *m;

	*aggregate = RangeVarGetRelid(rv, NoLock, false);
	m = cat_mat_get(*aggregate, GetLatestSnapshot());
	if (m == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a materialized aggregate", name),
				 errhint("pk_materializations lists them.")));
	return m;
}

/* to_jsonb of a row of the columns of kind (groups or aggregates) of alias */
static char *
json_of(MatDef *def, const char *alias, bool groups)
{
	StringInfoData buf;
	bool		first = true;

	if (groups && def->ngroups == 0)
		return "'{}'::pg_catalog.jsonb";
	initStringInfo(&buf);
	appendStringInfoString(&buf, "(SELECT pg_catalog.to_jsonb(x) FROM (SELECT ");
	for (int j = 0; j < def->ncols; j++)
	{
		if ((def->cols[j].kind == MAT_GROUP) != groups)
			continue;
		appendStringInfo(&buf, "%s%s.%s", first ? "" : ", ", alias,
						 quote_identifier(def->cols[j].name));
		first = false;
	}
	if (first)
		appendStringInfoString(&buf, "1 WHERE false");
	appendStringInfoString(&buf, ") x)");
	return buf.data;
}

/*
 * pk_reconcile(name text, repair boolean DEFAULT false) -> setof (group
 * jsonb, stored jsonb, expected jsonb): the groups where the aggregate
 * differs from its query run now (stored NULL: missing; expected NULL:
 * should not be there).  repair => true then fills the aggregate again.
 * Reading needs SELECT on the aggregate (and the query's on the source);
 * repairing, ownership.
 */
Datum
pk_reconcile(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		repair = PG_GETARG_BOOL(1);
	Oid			aggregate;
	MatRow	   *m = mat_by_name(name, &aggregate);
	MatDef	   *def;
	Query	   *q;
	Relation	rel;
	char	   *table;
	char	   *sql;
	SPIPlanPtr	plan;
	uint64		ndiff;

	if (repair && !object_ownercheck(RelationRelationId, aggregate, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(aggregate));
	if (pg_class_aclcheck(aggregate, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(aggregate));
	InitMaterializedSRF(fcinfo, 0);
	mat_refuse_pending_writes(m->relid, "reconcile a materialized aggregate");
	/* both sides as of one commit of the source */
	rel = table_open(m->relid, ShareLock);
	mat_full_compaction_first(rel);
	q = mat_query_tree(m);
	def = mat_analyze(q);
	def->aggregate = aggregate;
	table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(aggregate)),
									   get_rel_name(aggregate));
	sql = psprintf("SELECT COALESCE(s.g, e.g), s.v, e.v FROM "
				   "(SELECT %s AS g, %s AS v FROM %s a) s FULL JOIN "
				   "(SELECT %s AS g, %s AS v FROM (%s) a) e ON s.g = e.g "
				   "WHERE s.v IS DISTINCT FROM e.v ORDER BY 1",
				   json_of(def, "a", true), json_of(def, "a", false), table,
				   json_of(def, "a", true), json_of(def, "a", false),
				   pg_get_querydef(q, false));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * With the latest snapshot: the caller's may predate the full
	 * compaction just run (and, under REPEATABLE READ, commits before the
	 * lock), whose changes the aggregate already has.
	 */
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not compare materialized aggregate \"%s\"", name);
	ndiff = SPI_processed;
	for (uint64 i = 0; i < ndiff; i++)
	{
		Datum		values[3];
		bool		nulls[3];

		for (int c = 0; c < 3; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1,
									  &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (repair && ndiff > 0)
	{
		Oid		   *value_tables;
		Datum	   *oids;
		int			n;

		spi_exec(psprintf("DELETE FROM %s", table));
		deconstruct_array(m->value_tables, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &oids, NULL, &n);
		value_tables = palloc(sizeof(Oid) * n);
		for (int j = 0; j < n; j++)
		{
			value_tables[j] = DatumGetObjectId(oids[j]);
			if (OidIsValid(value_tables[j]))
				spi_exec(psprintf("DELETE FROM %s",
								  quote_qualified_identifier(get_namespace_name(get_rel_namespace(value_tables[j])),
															 get_rel_name(value_tables[j]))));
		}
		CommandCounterIncrement();
		mat_populate(rel, def, GetUserId(), value_tables);
	}
	SPI_finish();
	table_close(rel, NoLock);
	return (Datum) 0;
}

/* pkchangelog.materialization_query(aggregate oid): the query as SQL */
Datum
pk_materialization_query(PG_FUNCTION_ARGS)
{
	MatRow	   *m = cat_mat_get(PG_GETARG_OID(0), GetLatestSnapshot());

	if (m == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(pg_get_querydef(mat_query_tree(m), true)));
}

/*
 * pkchangelog.materialization_exact_as_of(aggregate oid): the source's
 * snapshot the aggregate is exact as of: the newest (input, lookup), or
 * the last full compaction since it was made (full-compaction).
 */
Datum
pk_materialization_exact_as_of(PG_FUNCTION_ARGS)
{
	MatRow	   *m = cat_mat_get(PG_GETARG_OID(0), GetLatestSnapshot());
	Relation	rel;
	TableState	st;
	int64		as_of;

	if (m == NULL || (rel = try_table_open(m->relid, AccessShareLock)) == NULL)
		PG_RETURN_NULL();
	st = cat_table_state_peek(m->relid);
	as_of = st.last_snapshot_id;
	if (pk_table(rel)->opts.changelog_producer == PK_PRODUCER_FULL_COMPACTION)
		as_of = Max(m->created_snapshot, st.last_full_compaction);
	table_close(rel, AccessShareLock);
	PG_RETURN_INT64(as_of);
}

/*
 * ALTER TABLE or RENAME (what, e.g. "DROP COLUMN") of column colname of
 * relid: refused for the columns pk_materialize made in an aggregate or in
 * one of its value-count tables, which the maintaining statements name.
 * Columns added later are the owner's.
 */
void
mat_check_alter_column(Oid relid, const char *colname, const char *what)
{
	Oid			aggregate = relid;
	Relation	depRel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	MatRow	   *m;
	MatDef	   *def;
	int			made;
	AttrNumber	attnum;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return;
	/* a value-count table depends internally on its aggregate */
	depRel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(depRel, DependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->deptype == DEPENDENCY_INTERNAL && dep->refclassid == RelationRelationId)
			aggregate = dep->refobjid;
	}
	systable_endscan(scan);
	table_close(depRel, AccessShareLock);

	if ((m = cat_mat_get(aggregate, GetLatestSnapshot())) == NULL)
		return;
	/* the columns made are the first ones (create_tables) */
	def = mat_analyze(mat_query_tree(m));
	made = def->ngroups + 2;
	if (aggregate == relid)
	{
		made = def->ncols + 1;
		for (int j = 0; j < def->ncols; j++)
			made += mat_needs_nn(&def->cols[j]) + (def->cols[j].kind == MAT_AVG);
	}
	attnum = get_attnum(relid, colname);
	if (attnum == InvalidAttrNumber || attnum > made)
		return;				/* PostgreSQL reports a missing column */
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 aggregate == relid ?
			 errmsg("cannot %s of materialized aggregate \"%s\"", what, get_rel_name(relid)) :
			 errmsg("cannot %s of \"%s\": it holds the values of materialized aggregate \"%s\"",
					what, get_rel_name(relid), get_rel_name(aggregate)),
			 errdetail("The aggregate's maintenance writes its columns as pk_materialize made them."),
			 errhint("Drop the aggregate and make it again with pk_materialize; other ALTER TABLE forms (indexes, triggers, RENAME of the table) work.")));
}

