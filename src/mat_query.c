/*-------------------------------------------------------------------------
 *
 * mat_query.c
 *	  The shape of a materialized aggregate's query: parsed and analyzed
 *	  as an ordinary SELECT, then checked to be one the change stream can
 *	  maintain (one pkmerge table, count/sum/avg/min/max, WHERE and GROUP
 *	  BY over the row, immutable functions only) and described as a
 *	  MatDef: per output column what it is and how its value is kept.
 *	  Also where a kept aggregate's query is read back (mat_query_tree).
 *
 * Everything else is refused with 0A000 naming the part.  Mutable
 * functions are refused too, not only volatile ones: a change is retracted
 * by evaluating the query's expressions on the old row again, which gives
 * what was added only when they always give the same result.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/typcache.h"

#include "mat.h"
#include "pg_compat.h"
#include "table_desc.h"

static void
refuse(const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("materialized aggregates do not support %s", what),
			 errdetail("A materialized aggregate is one pkmerge table's rows filtered by WHERE, grouped by GROUP BY expressions of the row, with count(*), count, sum, avg, min and max of the row."),
			 hint ? errhint("%s", hint) : 0));
}

/* the query string parsed and analyzed: one SELECT */
Query *
mat_parse(const char *query_string)
{
	List	   *raw = raw_parser(query_string, RAW_PARSE_DEFAULT);
	RawStmt    *stmt;
	Query	   *q;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a materialized aggregate must be one SELECT statement")));
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a materialized aggregate must be a SELECT statement")));
	if (((SelectStmt *) stmt->stmt)->intoClause)
		refuse("SELECT INTO", NULL);
	q = parse_analyze_fixedparams(stmt, query_string, NULL, 0, NULL);
	compat_flatten_group_rte(q);
	return q;
}

/* pkchangelog.materialized_aggregate(); InvalidOid before version 0.4 */
Oid
mat_trigger_function(void)
{
	return LookupFuncName(list_make2(makeString(PK_CATALOG_SCHEMA),
									 makeString("materialized_aggregate")),
						  0, NULL, true);
}

/*
 * The aggregate's query, analyzed: the tree its catalog row keeps, or, for
 * a row another PostgreSQL major wrote (pg_upgrade carries the catalog's
 * files over), its trigger's SQL parsed again; that SQL names every object
 * with its schema and follows renames, so it is the same query.
 */
Query *
mat_query_tree(const MatRow *m)
{
	Query	   *q = compat_node_load(m->query);
	Oid			func = mat_trigger_function();
	Relation	rel;
	TriggerDesc *td;

	if (q != NULL)
		return q;
	rel = table_open(m->aggregate, AccessShareLock);
	td = rel->trigdesc;
	for (int i = 0; td != NULL && i < td->numtriggers; i++)
		if (td->triggers[i].tgfoid == func && td->triggers[i].tgnargs > 0)
		{
			q = mat_parse(td->triggers[i].tgargs[0]);
			break;
		}
	table_close(rel, AccessShareLock);
	if (q == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("materialized aggregate \"%s\" has no trigger to read its query from",
						get_rel_name(m->aggregate)),
				 errdetail("Its catalog row was written by another PostgreSQL major version."),
				 errhint("Create the aggregate again with pk_materialize.")));
	return q;
}

/* the equality operator of type, which must also hash and sort (btree) */
static Oid
equality_of(Oid type, const char *what)
{
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR | TYPECACHE_HASH_PROC |
										   TYPECACHE_BTREE_OPFAMILY);

	if (!OidIsValid(tc->eq_opr) || !OidIsValid(tc->hash_proc) ||
		!OidIsValid(tc->btree_opf))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialized aggregates do not support %s of type %s",
						what, format_type_be(type)),
				 errdetail("The type needs a default btree and hash operator class.")));
	return tc->eq_opr;
}

/* pg_catalog's operator name(type, type), for a running sum */
static Oid
arith_fn(const char *name, Oid type)
{
	Oid			opno = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString((char *) name)),
										type, type);

	if (!OidIsValid(opno))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialized aggregates do not support sum or avg of type %s",
						format_type_be(type)),
				 errdetail("The type has no operator %s.", name)));
	return get_opcode(opno);
}

/* an aggregate of the select list */
static void
analyze_aggref(Aggref *a, MatCol *c)
{
	const char *name = get_func_name(a->aggfnoid);
	Expr	   *arg;
	Oid			argtype;

	if (get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || name == NULL)
		refuse(psprintf("aggregate function %s", format_procedure(a->aggfnoid)),
			   "Use count(*), count, sum, avg, min or max.");
	if (a->aggdistinct != NIL)
		refuse("DISTINCT in aggregates", NULL);
	if (a->aggorder != NIL || a->aggkind != AGGKIND_NORMAL)
		refuse("ordered aggregates", NULL);
	if (a->aggfilter != NULL)
		refuse("FILTER in aggregates", "Use WHERE, in an aggregate of its own.");
	if (strcmp(name, "count") == 0)
		c->kind = a->aggstar ? MAT_COUNT_STAR : MAT_COUNT;
	else if (strcmp(name, "sum") == 0)
		c->kind = MAT_SUM;
	else if (strcmp(name, "avg") == 0)
		c->kind = MAT_AVG;
	else if (strcmp(name, "min") == 0)
		c->kind = MAT_MIN;
	else if (strcmp(name, "max") == 0)
		c->kind = MAT_MAX;
	else
		refuse(psprintf("aggregate function %s", format_procedure(a->aggfnoid)),
			   "Use count(*), count, sum, avg, min or max.");
	if (c->kind == MAT_COUNT_STAR)
		return;
	if (list_length(a->args) != 1)
		refuse(psprintf("aggregate function %s", format_procedure(a->aggfnoid)), NULL);
	arg = linitial_node(TargetEntry, a->args)->expr;
	argtype = exprType((Node *) arg);
	c->expr = arg;
	switch (c->kind)
	{
		case MAT_MIN:
		case MAT_MAX:
			c->eqop = equality_of(argtype, c->kind == MAT_MIN ? "min" : "max");
			break;
		case MAT_SUM:
		case MAT_AVG:

			/*
			 * The running sum has the result's type (avg's too: numeric,
			 * double precision or interval), so the argument is cast to it
			 * the way the aggregate's transition does.
			 */
			c->acctype = a->aggtype;
			c->expr = (Expr *) coerce_to_target_type(NULL, (Node *) arg, argtype,
													 c->acctype, -1, COERCION_IMPLICIT,
													 COERCE_IMPLICIT_CAST, -1);
			if (c->expr == NULL)
				refuse(psprintf("%s of type %s", name, format_type_be(argtype)), NULL);
			c->addfn = arith_fn("+", c->acctype);
			c->subfn = arith_fn("-", c->acctype);
			if (c->kind == MAT_AVG && c->acctype != NUMERICOID &&
				c->acctype != FLOAT8OID && c->acctype != INTERVALOID)
				refuse(psprintf("avg of type %s", format_type_be(argtype)), NULL);
			break;
		default:
			break;
	}
}

/*
 * The MatDef of an analyzed query, or an error naming what the change
 * stream cannot maintain.  The caller checks privileges.
 */
MatDef *
mat_analyze(Query *q)
{
	MatDef	   *def = palloc0(sizeof(MatDef));
	RangeTblEntry *rte;
	ListCell   *lc;
	int			n = 0;
	int			naggs = 0;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a materialized aggregate must be a SELECT statement")));
	if (q->cteList != NIL)
		refuse("WITH", NULL);
	if (q->setOperations != NULL)
		refuse("UNION, INTERSECT or EXCEPT", "Materialize each part on its own.");
	if (q->hasWindowFuncs)
		refuse("window functions", NULL);
	if (q->hasSubLinks)
		refuse("subqueries", NULL);
	if (q->hasTargetSRFs)
		refuse("set-returning functions", NULL);
	if (q->distinctClause != NIL)
		refuse("DISTINCT", "GROUP BY the columns instead.");
	if (q->havingQual != NULL)
		refuse("HAVING", "Materialize without HAVING and filter when reading the aggregate.");
	if (q->groupingSets != NIL)
		refuse("GROUPING SETS, ROLLUP or CUBE", NULL);
	if (q->sortClause != NIL)
		refuse("ORDER BY", "Order when reading the aggregate, or index it.");
	if (q->limitCount != NULL || q->limitOffset != NULL)
		refuse("LIMIT or OFFSET", NULL);
	if (q->rowMarks != NIL || q->hasForUpdate)
		refuse("FOR UPDATE or FOR SHARE", NULL);
	if (list_length(q->rtable) != 1 || list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef))
		refuse("joins or several FROM items", "Aggregate one pkmerge table.");
	rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		refuse("FROM items other than a table", "Aggregate one pkmerge table.");
	if (rte->tablesample != NULL)
		refuse("TABLESAMPLE", NULL);
	if (!pk_relid_is_pkmerge(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialized aggregates need a pkmerge table: \"%s\" is not one",
						get_rel_name(rte->relid)),
				 errdetail("The aggregate is kept from the table's change stream."),
				 errhint("Create the table USING pkmerge with changelog_producer lookup, full-compaction or input.")));
	if (contain_mutable_functions((Node *) q))
		refuse("functions or operators that are not IMMUTABLE",
			   "A change is retracted by evaluating the query on the old row again, which must give what was added.");
	def->source = rte->relid;
	def->query = q;
	def->where = (Expr *) q->jointree->quals;

	def->cols = palloc0(sizeof(MatCol) * list_length(q->targetList));
	def->groups = palloc0(sizeof(int) * list_length(q->targetList));
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		MatCol	   *c = &def->cols[n];

		if (tle->resjunk)
		{
			if (tle->ressortgroupref != 0)
				refuse("GROUP BY expressions that are not in the select list",
					   "Select every GROUP BY expression.");
			continue;
		}
		if (tle->resname == NULL || strcmp(tle->resname, "?column?") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("column %d of the materialized aggregate has no name", n + 1),
					 errhint("Name it with AS.")));
		if (strncmp(tle->resname, MAT_HIDDEN_PREFIX, strlen(MAT_HIDDEN_PREFIX)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("column name \"%s\" is reserved", tle->resname),
					 errdetail("Columns named %s... keep a materialized aggregate's counts.",
							   MAT_HIDDEN_PREFIX)));
		for (int i = 0; i < n; i++)
			if (strcmp(def->cols[i].name, tle->resname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" is given twice", tle->resname),
						 errhint("Name the columns apart with AS.")));
		c->name = pstrdup(tle->resname);
		c->type = exprType((Node *) tle->expr);
		c->typmod = exprTypmod((Node *) tle->expr);
		c->collation = exprCollation((Node *) tle->expr);
		if (IsA(tle->expr, Aggref))
		{
			analyze_aggref((Aggref *) tle->expr, c);
			naggs++;
		}
		else if (tle->ressortgroupref != 0)
		{
			c->kind = MAT_GROUP;
			c->expr = tle->expr;
			c->eqop = equality_of(c->type, "GROUP BY");
			def->groups[def->ngroups++] = n;
		}
		else if (contain_aggs_of_level((Node *) tle->expr, 0))
			refuse("expressions of aggregates",
				   "Select the aggregates themselves, and compute from them when reading.");
		else
			refuse("output columns that are not GROUP BY expressions",
				   "GROUP BY the expression itself.");
		n++;
	}
	def->ncols = n;
	/* a statement per pattern of NULL groups: a bit each (mat_apply.c) */
	if (def->ngroups > 32)
		refuse("more than 32 GROUP BY expressions", NULL);
	if (naggs == 0 && def->ngroups == 0)
		refuse("a query without aggregates or GROUP BY", NULL);
	return def;
}

/* does column c keep a count of its non-NULL inputs? */
bool
mat_needs_nn(const MatCol *c)
{
	return c->kind == MAT_SUM || c->kind == MAT_AVG;
}
