/*-------------------------------------------------------------------------
 *
 * mat_apply.c
 *	  Keeps materialized aggregates equal to their queries: each snapshot
 *	  that produces changes of a source (a commit for input and lookup, a
 *	  full compaction for full-compaction) is applied to the source's
 *	  aggregates in the producing transaction: +I/+U add, -U/-D retract.
 *
 *	  This file owns netting the changes and writing the group rows and
 *	  value counts, and the per-backend cache of each source's aggregates.
 *	  The changes are read with pk_changes' reader (changelog_read.c); the
 *	  queries' shape is mat_query.c's, the tables mat_sql.c's.
 *
 *	  The records are netted per group in memory first, so each group row
 *	  is written once per snapshot, and not at all when the snapshot left
 *	  the group as it was.  Rows are written by SQL through SPI, as the
 *	  aggregate table's owner under SECURITY_RESTRICTED_OPERATION, with the
 *	  latest snapshot: maintenance runs under the source's commit lock, so
 *	  every earlier commit of the source is complete.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "catalog.h"
#include "catalog_mat.h"
#include "changelog_read.h"
#include "mat.h"
#include "pg_compat.h"
#include "relcache_hub.h"
#include "run_format.h"
#include "write_buffer.h"

/* a statement for one pattern of NULL group values */
typedef struct MaskPlan
{
	uint32		mask;			/* bit k: group k is NULL */
	SPIPlanPtr	plan;
} MaskPlan;

/* one aggregate, ready to be applied */
typedef struct MatEntry
{
	MatDef	   *def;
	Oid			owner;
	char	   *table;			/* qualified name */
	char	  **value_tables;	/* per column: qualified name, or NULL */
	bool		keep;			/* cached: its plans outlive SPI_finish */
	/* the group row's UPDATE: parameters */
	int			nargs;
	Oid		   *argtypes;
	int		   *p_nn;			/* per column: parameter number or 0 */
	int		   *p_sum;
	int			p_n;
	List	   *updates;		/* MaskPlans */
	SPIPlanPtr	insert;			/* a group row of zero rows */
	SPIPlanPtr	delete;			/* a row by ctid */
	SPIPlanPtr *upserts;		/* per min/max column: a value's count */
	SPIPlanPtr *vdeletes;
	MemoryContext cxt;			/* the entry's */
	struct MatRun *run;			/* its evaluation state, made once */
} MatEntry;

/* the cached aggregates of one source */
typedef struct MatSource
{
	Oid			relid;			/* hash key */
	bool		valid;
	List	   *entries;
	List	   *relids;			/* the tables whose invalidation drops it */
	MemoryContext cxt;
} MatSource;

static HTAB *mat_cache = NULL;

/* per group: the snapshot's net change */
typedef struct MatDelta
{
	int64		n;				/* rows */
	bool		values;			/* a min/max input came or went */
	int64	   *nn;				/* per column: non-NULL inputs */
	Datum	   *sum;			/* per sum/avg column */
} MatDelta;

/*
 * One aggregate's evaluation state: expressions, hash tables and slots,
 * made once per cached aggregate; what one maintenance nets lives in
 * deltacxt, emptied before the next.
 */
typedef struct MatRun
{
	MatEntry   *e;
	MatDef	   *def;
	ExprState  *where;
	ExprState **exprs;			/* per column */
	FmgrInfo   *add;
	FmgrInfo   *sub;
	FmgrInfo   *eq;				/* acctype's equality, for zero */
	Datum	   *zero;
	int16	   *acclen;
	bool	   *accbyval;
	TupleTableSlot *keyslot;	/* the group values */
	TupleTableSlot *keyread;	/* ... read back from the hash table */
	TupleHashTable groups;		/* NULL: no GROUP BY */
	MatDelta   *single;
	TupleTableSlot **valslots;	/* per min/max column: group values, value */
	TupleTableSlot **valreads;
	TupleHashTable *values;		/* ... counted per (group, value): int64 */
	bool		truncated;		/* input's TRUNCATE: empty it first */
	Datum	   *args;			/* a statement's parameters */
	char	   *argnulls;
	MemoryContext cxt;
	MemoryContext deltacxt;		/* the deltas and the hash tables' entries */
	MemoryContext tempcxt;
} MatRun;

/* ---- statements ---------------------------------------------------- */

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* OPERATOR(schema.name) of opno */
static char *
operator_sql(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *s;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	s = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
				 NameStr(op->oprname));
	ReleaseSysCache(tup);
	return s;
}

/* the group columns of alias matching $1.. (NULL where mask says) */
static void
append_match(StringInfo buf, MatDef *def, const char *alias, uint32 mask)
{
	for (int k = 0; k < def->ngroups; k++)
	{
		MatCol	   *c = &def->cols[def->groups[k]];

		appendStringInfo(buf, "%s%s.%s", k > 0 ? " AND " : "", alias, quote_identifier(c->name));
		if (mask & (1U << k))
			appendStringInfoString(buf, " IS NULL");
		else
			appendStringInfo(buf, " %s $%d", operator_sql(c->eqop), k + 1);
	}
	if (def->ngroups == 0)
		appendStringInfoString(buf, "true");
}

static SPIPlanPtr
prepare(MatEntry *e, const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (e->keep)
		SPI_keepplan(plan);
	return plan;
}

/* running sum column j + $p, where the sum is NULL when nothing was added */
static char *
sum_sql(MatEntry *e, const char *col, int j)
{
	char	   *t = psprintf("t.%s", quote_identifier(col));
	char	   *nn = psprintf(MAT_NN_COLUMN, j + 1);

	return psprintf("CASE WHEN t.%s OPERATOR(pg_catalog.+) $%d = 0 THEN NULL "
					"WHEN %s IS NULL THEN $%d ELSE %s OPERATOR(pg_catalog.+) $%d END",
					quote_identifier(nn), e->p_nn[j], t, e->p_sum[j], t, e->p_sum[j]);
}

/*
 * The UPDATE of a group row, for the groups that are NULL in mask.  A
 * group row keeps, besides the query's columns, its row count
 * (__pk_count: a group that reaches 0 disappears) and per sum and avg the
 * count of non-NULL inputs (a sum of none is NULL) and avg's running sum
 * (avg is that sum divided by the count, exact).  min and max keep a
 * value-count table per column: per group and value, how many rows have
 * it, with a unique btree on (group, value), so retracting the current
 * extreme reads the next one from the index instead of the source.
 */
static SPIPlanPtr
update_plan(MatEntry *e, uint32 mask)
{
	MatDef	   *def = e->def;
	StringInfoData buf;
	ListCell   *lc;
	MaskPlan   *mp;
	SPIPlanPtr	plan;
	MemoryContext old;

	foreach(lc, e->updates)
		if (((MaskPlan *) lfirst(lc))->mask == mask)
			return ((MaskPlan *) lfirst(lc))->plan;
	initStringInfo(&buf);
	appendStringInfo(&buf, "UPDATE %s t SET %s = t.%s OPERATOR(pg_catalog.+) $%d",
					 e->table, MAT_COUNT_COLUMN, MAT_COUNT_COLUMN, e->p_n);
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];
		const char *q = quote_identifier(c->name);
		char	   *nn = psprintf(MAT_NN_COLUMN, j + 1);
		char	   *sum = psprintf(MAT_SUM_COLUMN, j + 1);

		switch (c->kind)
		{
			case MAT_GROUP:
				break;
			case MAT_COUNT_STAR:
				appendStringInfo(&buf, ", %s = t.%s OPERATOR(pg_catalog.+) $%d", q, q, e->p_n);
				break;
			case MAT_COUNT:
				appendStringInfo(&buf, ", %s = t.%s OPERATOR(pg_catalog.+) $%d", q, q, e->p_nn[j]);
				break;
			case MAT_SUM:
				appendStringInfo(&buf, ", %s = t.%s OPERATOR(pg_catalog.+) $%d, %s = %s",
								 nn, nn, e->p_nn[j], q, sum_sql(e, c->name, j));
				break;
			case MAT_AVG:
				appendStringInfo(&buf, ", %s = t.%s OPERATOR(pg_catalog.+) $%d, %s = %s",
								 nn, nn, e->p_nn[j], sum, sum_sql(e, sum, j));
				appendStringInfo(&buf, ", %s = CASE WHEN t.%s OPERATOR(pg_catalog.+) $%d = 0 THEN NULL "
								 "ELSE (%s) OPERATOR(pg_catalog./) (t.%s OPERATOR(pg_catalog.+) $%d)::%s END",
								 q, nn, e->p_nn[j], sum_sql(e, sum, j), nn, e->p_nn[j],
								 c->acctype == NUMERICOID ? "pg_catalog.numeric" : "pg_catalog.float8");
				break;
			case MAT_MIN:
			case MAT_MAX:
				appendStringInfo(&buf, ", %s = (SELECT v.%s FROM %s v WHERE ",
								 q, MAT_VALUE_COLUMN, e->value_tables[j]);
				append_match(&buf, def, "v", mask);
				appendStringInfo(&buf, " ORDER BY v.%s%s LIMIT 1)", MAT_VALUE_COLUMN,
								 c->kind == MAT_MAX ? " DESC" : "");
				break;
		}
	}
	appendStringInfoString(&buf, " WHERE ");
	append_match(&buf, def, "t", mask);
	appendStringInfo(&buf, " RETURNING t.%s, t.ctid", MAT_COUNT_COLUMN);

	plan = prepare(e, buf.data, e->nargs, e->argtypes);
	/* SPI calls leave SPI's context current: the entry's lives longer */
	old = MemoryContextSwitchTo(GetMemoryChunkContext(e));
	mp = palloc(sizeof(MaskPlan));
	mp->mask = mask;
	mp->plan = plan;
	e->updates = lappend(e->updates, mp);
	MemoryContextSwitchTo(old);
	return plan;
}

/* the other statements: a group row of no rows, deletes, value counts */
static void
prepare_plans(MatEntry *e)
{
	MatDef	   *def = e->def;
	StringInfoData buf;
	StringInfoData vals;
	Oid			tidtype = TIDOID;

	if (e->insert != NULL)
		return;
	initStringInfo(&buf);
	initStringInfo(&vals);
	appendStringInfo(&buf, "INSERT INTO %s (%s", e->table, MAT_COUNT_COLUMN);
	appendStringInfoString(&vals, "0");
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];

		if (c->kind == MAT_GROUP || c->kind == MAT_COUNT_STAR || c->kind == MAT_COUNT)
		{
			appendStringInfo(&buf, ", %s", quote_identifier(c->name));
			if (c->kind == MAT_GROUP)
			{
				for (int k = 0; k < def->ngroups; k++)
					if (def->groups[k] == j)
						appendStringInfo(&vals, ", $%d", k + 1);
			}
			else
				appendStringInfoString(&vals, ", 0");
		}
		if (mat_needs_nn(c))
		{
			appendStringInfo(&buf, ", ");
			appendStringInfo(&buf, MAT_NN_COLUMN, j + 1);
			appendStringInfoString(&vals, ", 0");
		}
	}
	appendStringInfo(&buf, ") VALUES (%s)", vals.data);
	e->insert = prepare(e, buf.data, def->ngroups, e->argtypes);
	e->delete = prepare(e, psprintf("DELETE FROM %s WHERE ctid = $1", e->table), 1, &tidtype);

	for (int j = 0; j < def->ncols; j++)
	{
		if (e->value_tables[j] == NULL)
			continue;
		resetStringInfo(&buf);
		resetStringInfo(&vals);
		appendStringInfo(&buf, "INSERT INTO %s AS v (", e->value_tables[j]);
		for (int k = 0; k < def->ngroups; k++)
		{
			appendStringInfo(&buf, "%s, ", quote_identifier(def->cols[def->groups[k]].name));
			appendStringInfo(&vals, "$%d, ", k + 1);
		}
		appendStringInfo(&buf, "%s, %s) VALUES (%s$%d, $%d) ON CONFLICT (%s",
						 MAT_VALUE_COLUMN, MAT_COUNT_COLUMN, vals.data,
						 def->ngroups + 1, def->ngroups + 2, MAT_VALUE_COLUMN);
		for (int k = 0; k < def->ngroups; k++)
			appendStringInfo(&buf, ", %s", quote_identifier(def->cols[def->groups[k]].name));
		appendStringInfo(&buf, ") DO UPDATE SET %s = v.%s OPERATOR(pg_catalog.+) EXCLUDED.%s "
						 "RETURNING v.%s, v.ctid",
						 MAT_COUNT_COLUMN, MAT_COUNT_COLUMN, MAT_COUNT_COLUMN, MAT_COUNT_COLUMN);
		{
			Oid		   *types = palloc(sizeof(Oid) * (def->ngroups + 2));

			memcpy(types, e->argtypes, sizeof(Oid) * def->ngroups);
			types[def->ngroups] = def->cols[j].type;
			types[def->ngroups + 1] = INT8OID;
			e->upserts[j] = prepare(e, buf.data, def->ngroups + 2, types);
		}
		e->vdeletes[j] = prepare(e, psprintf("DELETE FROM %s WHERE ctid = $1", e->value_tables[j]),
								 1, &tidtype);
	}
}

/*
 * An aggregate ready to apply, in the current memory context.  keep: its
 * statements are kept past SPI_finish (cached entries).
 */
static MatEntry *
entry_make(MatDef *def, Oid owner, Oid *value_tables, bool keep)
{
	MatEntry   *e = palloc0(sizeof(MatEntry));
	int			p = def->ngroups;

	e->def = def;
	e->owner = owner;
	e->keep = keep;
	e->cxt = CurrentMemoryContext;
	e->table = qualified_name(def->aggregate);
	e->value_tables = palloc0(sizeof(char *) * def->ncols);
	e->p_nn = palloc0(sizeof(int) * def->ncols);
	e->p_sum = palloc0(sizeof(int) * def->ncols);
	e->upserts = palloc0(sizeof(SPIPlanPtr) * def->ncols);
	e->vdeletes = palloc0(sizeof(SPIPlanPtr) * def->ncols);
	e->argtypes = palloc(sizeof(Oid) * (def->ngroups + 1 + 2 * def->ncols));
	for (int k = 0; k < def->ngroups; k++)
		e->argtypes[k] = def->cols[def->groups[k]].type;
	e->argtypes[p++] = INT8OID;
	e->p_n = p;
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];

		if (OidIsValid(value_tables[j]))
			e->value_tables[j] = qualified_name(value_tables[j]);
		if (c->kind == MAT_COUNT || mat_needs_nn(c))
		{
			e->argtypes[p++] = INT8OID;
			e->p_nn[j] = p;
		}
		if (mat_needs_nn(c))
		{
			e->argtypes[p++] = c->acctype;
			e->p_sum[j] = p;
		}
	}
	e->nargs = p;
	return e;
}

static void
entry_free_plans(MatEntry *e)
{
	ListCell   *lc;

	foreach(lc, e->updates)
		SPI_freeplan(((MaskPlan *) lfirst(lc))->plan);
	if (e->insert)
		SPI_freeplan(e->insert);
	if (e->delete)
		SPI_freeplan(e->delete);
	for (int j = 0; j < e->def->ncols; j++)
	{
		if (e->upserts[j])
			SPI_freeplan(e->upserts[j]);
		if (e->vdeletes[j])
			SPI_freeplan(e->vdeletes[j]);
	}
}

/* ---- the cache ----------------------------------------------------- */

Oid
mat_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

static void
mat_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	MatSource  *s;

	if (mat_cache == NULL)
		return;
	hash_seq_init(&seq, mat_cache);
	while ((s = hash_seq_search(&seq)) != NULL)
		if (!OidIsValid(relid) || relid == s->relid || list_member_oid(s->relids, relid))
			s->valid = false;
}

/* every cached aggregate is read again (DROP EXTENSION, ALTER EXTENSION) */
void
mat_invalidate(void)
{
	mat_relcache_callback((Datum) 0, InvalidOid);
}

void
mat_init(void)
{
	hub_register_relcache(mat_relcache_callback, (Datum) 0);
}

/*
 * The aggregates of source rel, from the cache or the catalog.  Cached per
 * backend: definitions and prepared statements, dropped by relcache
 * invalidation of the source, an aggregate table or a value-count table
 * (mat_relcache_callback).
 */
static List *
mat_entries(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	MatSource  *s;
	bool		found;
	List	   *rows;
	ListCell   *lc;
	MemoryContext old;

	if (mat_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(MatSource);
		ctl.hcxt = CacheMemoryContext;
		mat_cache = hash_create("pkmerge materialized aggregates", 16, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	s = hash_search(mat_cache, &relid, HASH_ENTER, &found);
	if (found && s->valid)
		return s->entries;
	if (found)
	{
		foreach(lc, s->entries)
			entry_free_plans(lfirst(lc));
		MemoryContextDelete(s->cxt);
	}
	s->valid = false;
	s->entries = NIL;
	s->relids = NIL;
	s->cxt = AllocSetContextCreate(CacheMemoryContext, "pkmerge materialized aggregates",
								   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(s->cxt);
	/* latest: an aggregate made after this transaction's snapshot counts */
	rows = cat_mat_list(relid, GetLatestSnapshot());
	foreach(lc, rows)
	{
		MatRow	   *m = lfirst(lc);
		MatDef	   *def = mat_analyze(mat_query_tree(m));
		Datum	   *oids;
		int			n;
		Oid		   *tables;

		def->aggregate = m->aggregate;
		deconstruct_array(m->value_tables, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &oids, NULL, &n);
		if (n != def->ncols)
			elog(ERROR, "materialized aggregate %u has %d value tables for %d columns",
				 m->aggregate, n, def->ncols);
		tables = palloc(sizeof(Oid) * n);
		for (int j = 0; j < n; j++)
		{
			tables[j] = DatumGetObjectId(oids[j]);
			if (OidIsValid(tables[j]))
				s->relids = lappend_oid(s->relids, tables[j]);
		}
		s->relids = lappend_oid(s->relids, m->aggregate);
		s->entries = lappend(s->entries,
							 entry_make(def, mat_rel_owner(m->aggregate), tables, true));
	}
	MemoryContextSwitchTo(old);
	s->valid = true;
	return s->entries;
}

/* ---- netting the changes per group ---------------------------------- */

static TupleHashTable
hash_table(MatRun *r, TupleTableSlot *slot, int n, Oid *eqops, Oid *colls)
{
	AttrNumber *cols = palloc(sizeof(AttrNumber) * n);
	Oid		   *collations = palloc(sizeof(Oid) * n);	/* the table keeps it */
	Oid		   *eqfns;
	FmgrInfo   *hashfns;

	for (int i = 0; i < n; i++)
		cols[i] = i + 1;
	memcpy(collations, colls, sizeof(Oid) * n);
	execTuplesHashPrepare(n, eqops, &eqfns, &hashfns);
	return BuildTupleHashTable(NULL, slot->tts_tupleDescriptor, NULL, n, cols, eqfns, hashfns,
							   collations, 256, sizeof(void *), r->cxt, r->deltacxt, r->tempcxt,
							   false);
}

/* the pointer an entry of such a table carries: its delta, or its count */
static inline void **
entry_data(TupleHashTable table, TupleHashEntry entry)
{
	return (void **) TupleHashEntryGetAdditional(table, entry);
}

static MatRun *
run_begin(MatEntry *e, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	MatDef	   *def = e->def;
	MatRun	   *r = palloc0(sizeof(MatRun));
	int			ng = def->ngroups;
	TupleDesc	keydesc = CreateTemplateTupleDesc(ng);
	Oid		   *eqops = palloc(sizeof(Oid) * (ng + 1));
	Oid		   *colls = palloc(sizeof(Oid) * (ng + 1));

	r->e = e;
	r->def = def;
	r->cxt = cxt;
	/* the group row's statement has the most parameters, a value's ng + 2 */
	r->args = palloc0(sizeof(Datum) * Max(e->nargs, ng + 2));
	r->argnulls = palloc0(Max(e->nargs, ng + 2) + 1);
	r->deltacxt = AllocSetContextCreate(cxt, "pkmerge aggregate deltas", ALLOCSET_DEFAULT_SIZES);
	r->tempcxt = AllocSetContextCreate(cxt, "pkmerge aggregate hashing", ALLOCSET_SMALL_SIZES);
	if (def->where)
		r->where = ExecInitQual(make_ands_implicit(expression_planner(def->where)), NULL);
	r->exprs = palloc0(sizeof(ExprState *) * def->ncols);
	r->add = palloc0(sizeof(FmgrInfo) * def->ncols);
	r->sub = palloc0(sizeof(FmgrInfo) * def->ncols);
	r->eq = palloc0(sizeof(FmgrInfo) * def->ncols);
	r->zero = palloc0(sizeof(Datum) * def->ncols);
	r->acclen = palloc0(sizeof(int16) * def->ncols);
	r->accbyval = palloc0(sizeof(bool) * def->ncols);
	r->valslots = palloc0(sizeof(TupleTableSlot *) * def->ncols);
	r->valreads = palloc0(sizeof(TupleTableSlot *) * def->ncols);
	r->values = palloc0(sizeof(TupleHashTable) * def->ncols);
	for (int k = 0; k < ng; k++)
	{
		MatCol	   *c = &def->cols[def->groups[k]];

		TupleDescInitEntry(keydesc, k + 1, c->name, c->type, c->typmod, 0);
		TupleDescInitEntryCollation(keydesc, k + 1, c->collation);
		eqops[k] = c->eqop;
		colls[k] = c->collation;
	}
	r->keyslot = MakeSingleTupleTableSlot(keydesc, &TTSOpsVirtual);
	r->keyread = MakeSingleTupleTableSlot(keydesc, &TTSOpsMinimalTuple);
	if (ng > 0)
		r->groups = hash_table(r, r->keyslot, ng, eqops, colls);
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];

		if (c->expr)
			r->exprs[j] = ExecInitExpr(expression_planner(c->expr), NULL);
		if (mat_needs_nn(c))
		{
			Oid			input;
			Oid			ioparam;
			TypeCacheEntry *tc = lookup_type_cache(c->acctype, TYPECACHE_EQ_OPR_FINFO);

			fmgr_info(c->addfn, &r->add[j]);
			fmgr_info(c->subfn, &r->sub[j]);
			fmgr_info_copy(&r->eq[j], &tc->eq_opr_finfo, cxt);
			getTypeInputInfo(c->acctype, &input, &ioparam);
			r->zero[j] = OidInputFunctionCall(input, "0", ioparam, -1);
			get_typlenbyval(c->acctype, &r->acclen[j], &r->accbyval[j]);
		}
		if (c->kind == MAT_MIN || c->kind == MAT_MAX)
		{
			TupleDesc	vdesc = CreateTemplateTupleDesc(ng + 1);

			for (int k = 0; k < ng; k++)
				TupleDescCopyEntry(vdesc, k + 1, keydesc, k + 1);
			TupleDescInitEntry(vdesc, ng + 1, c->name, c->type, c->typmod, 0);
			TupleDescInitEntryCollation(vdesc, ng + 1, c->collation);
			eqops[ng] = c->eqop;
			colls[ng] = c->collation;
			r->valslots[j] = MakeSingleTupleTableSlot(vdesc, &TTSOpsVirtual);
			r->valreads[j] = MakeSingleTupleTableSlot(vdesc, &TTSOpsMinimalTuple);
			r->values[j] = hash_table(r, r->valslots[j], ng + 1, eqops, colls);
		}
	}
	MemoryContextSwitchTo(old);
	return r;
}

static MatDelta *
delta_new(MatRun *r)
{
	MatDelta   *d = MemoryContextAllocZero(r->deltacxt, sizeof(MatDelta));

	d->nn = MemoryContextAllocZero(r->deltacxt, sizeof(int64) * r->def->ncols);
	d->sum = MemoryContextAllocZero(r->deltacxt, sizeof(Datum) * r->def->ncols);
	for (int j = 0; j < r->def->ncols; j++)
		if (mat_needs_nn(&r->def->cols[j]))
			d->sum[j] = r->zero[j];
	return d;
}

/* forgets what was netted (truncated: for an input TRUNCATE) */
static void
run_reset(MatRun *r, bool truncated)
{
	r->truncated = truncated;
	r->single = NULL;
	if (r->groups)
		ResetTupleHashTable(r->groups);
	for (int j = 0; j < r->def->ncols; j++)
		if (r->values[j])
			ResetTupleHashTable(r->values[j]);
	if (!truncated)
	{
		MemoryContextReset(r->deltacxt);
		MemoryContextReset(r->tempcxt);
	}
}

/* the row in econtext's scan tuple, added (sign 1) or retracted (-1) */
static void
run_add(MatRun *r, ExprContext *econtext, int sign)
{
	MatDef	   *def = r->def;
	MatDelta   *d;

	if (r->where && !ExecQual(r->where, econtext))
		return;
	ExecClearTuple(r->keyslot);
	for (int k = 0; k < def->ngroups; k++)
		r->keyslot->tts_values[k] = ExecEvalExpr(r->exprs[def->groups[k]], econtext,
												 &r->keyslot->tts_isnull[k]);
	ExecStoreVirtualTuple(r->keyslot);
	if (r->groups)
	{
		bool		isnew;
		TupleHashEntry entry = LookupTupleHashEntry(r->groups, r->keyslot, &isnew, NULL);

		if (isnew)
			*entry_data(r->groups, entry) = delta_new(r);
		d = *entry_data(r->groups, entry);
	}
	else
	{
		if (r->single == NULL)
			r->single = delta_new(r);
		d = r->single;
	}
	d->n += sign;
	for (int j = 0; j < def->ncols; j++)
	{
		MatCol	   *c = &def->cols[j];
		Datum		v;
		bool		isnull;

		if (c->kind == MAT_GROUP || c->kind == MAT_COUNT_STAR)
			continue;
		v = ExecEvalExpr(r->exprs[j], econtext, &isnull);
		if (isnull)
			continue;
		d->nn[j] += sign;
		if (mat_needs_nn(c))
		{
			MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			Datum		sum = FunctionCall2(sign > 0 ? &r->add[j] : &r->sub[j], d->sum[j], v);

			/* the running sum replaces the one before, which goes */
			MemoryContextSwitchTo(r->deltacxt);
			if (!r->accbyval[j] && d->sum[j] != r->zero[j])
				pfree(DatumGetPointer(d->sum[j]));
			d->sum[j] = datumCopy(sum, r->accbyval[j], r->acclen[j]);
			MemoryContextSwitchTo(old);
		}
		else if (r->values[j])
		{
			TupleTableSlot *vs = r->valslots[j];
			TupleHashEntry entry;
			bool		isnew;

			ExecClearTuple(vs);
			for (int k = 0; k < def->ngroups; k++)
			{
				vs->tts_values[k] = r->keyslot->tts_values[k];
				vs->tts_isnull[k] = r->keyslot->tts_isnull[k];
			}
			vs->tts_values[def->ngroups] = v;
			vs->tts_isnull[def->ngroups] = false;
			ExecStoreVirtualTuple(vs);
			entry = LookupTupleHashEntry(r->values[j], vs, &isnew, NULL);
			if (isnew)
				*entry_data(r->values[j], entry) = MemoryContextAllocZero(r->deltacxt, sizeof(int64));
			*(int64 *) *entry_data(r->values[j], entry) += sign;
			d->values = true;
		}
	}
}

/* ---- writing the groups -------------------------------------------- */

/* does d leave its group as it was (an update of columns not read)? */
static bool
delta_is_noop(MatRun *r, MatDelta *d)
{
	if (d->n != 0 || d->values)
		return false;
	for (int j = 0; j < r->def->ncols; j++)
	{
		if (d->nn[j] != 0)
			return false;
		if (mat_needs_nn(&r->def->cols[j]) &&
			!DatumGetBool(FunctionCall2(&r->eq[j], d->sum[j], r->zero[j])))
			return false;
	}
	return true;
}

static void
out_of_step(MatRun *r, int64 count)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("materialized aggregate \"%s\" is out of step with its source",
					r->e->table),
			 errdetail("A group would count %lld rows.", (long long) count),
			 errhint("Run SELECT pk_reconcile('%s', repair => true), or drop the aggregate.",
					 r->e->table)));
}

/* the (count, ctid) the last statement returned; false: no row */
static bool
returned(int64 *count, ItemPointer tid)
{
	bool		isnull;
	bool		found = SPI_processed > 0;

	if (found)
	{
		*count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											 &isnull));
		*tid = *(ItemPointer) DatumGetPointer(SPI_getbinval(SPI_tuptable->vals[0],
															SPI_tuptable->tupdesc, 2, &isnull));
	}
	/* one statement per group: their results would pile up until SPI_finish */
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * Runs a statement with the latest snapshot: under the source's commit lock
 * (or, for mat_populate, with writers kept out) every earlier commit is
 * complete, and a REPEATABLE READ writer must not fail on the group rows
 * the previous commit updated, which its transaction snapshot does not see.
 */
static void
exec(SPIPlanPtr plan, Datum *values, const char *nulls, int expect)
{
	int			rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
										  InvalidSnapshot, false, true, 0);

	if (rc != expect)
		elog(ERROR, "materialized aggregate statement returned %s",
			 SPI_result_code_string(rc));
}

/* deletes every row of table, with the latest snapshot */
static void
empty_table(const char *table)
{
	SPIPlanPtr	plan = SPI_prepare(psprintf("DELETE FROM %s", table), 0, NULL);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	exec(plan, NULL, NULL, SPI_OK_DELETE);
	SPI_freeplan(plan);
}

/* one value-count change of a min/max column */
static void
apply_value(MatRun *r, int j, MinimalTuple key, int64 delta)
{
	MatEntry   *e = r->e;
	int			n = r->def->ngroups + 1;
	Datum	   *values = r->args;
	char	   *nulls = r->argnulls;
	TupleTableSlot *vs = r->valreads[j];
	int64		count = 0;
	ItemPointerData tid;

	ExecStoreMinimalTuple(key, vs, false);
	slot_getallattrs(vs);
	for (int i = 0; i < n; i++)
	{
		values[i] = vs->tts_values[i];
		nulls[i] = vs->tts_isnull[i] ? 'n' : ' ';
	}
	values[n] = Int64GetDatum(delta);
	nulls[n] = ' ';
	exec(e->upserts[j], values, nulls, SPI_OK_INSERT_RETURNING);
	if (!returned(&count, &tid))
		elog(ERROR, "the upsert into \"%s\" returned no row", e->value_tables[j]);
	if (count < 0)
		out_of_step(r, count);
	if (count == 0)
	{
		Datum		t = PointerGetDatum(&tid);

		exec(e->vdeletes[j], &t, NULL, SPI_OK_DELETE);
	}
	ExecClearTuple(vs);
}

/* one group's net change; key NULL: no GROUP BY */
static void
apply_group(MatRun *r, MinimalTuple key, MatDelta *d)
{
	MatEntry   *e = r->e;
	MatDef	   *def = r->def;
	Datum	   *values = r->args;
	char	   *nulls = r->argnulls;
	uint32		mask = 0;
	SPIPlanPtr	update;
	int64		count;
	ItemPointerData tid;

	memset(nulls, ' ', e->nargs);
	nulls[e->nargs] = '\0';
	if (key)
	{
		ExecStoreMinimalTuple(key, r->keyread, false);
		slot_getallattrs(r->keyread);
		for (int k = 0; k < def->ngroups; k++)
		{
			values[k] = r->keyread->tts_values[k];
			if (r->keyread->tts_isnull[k])
			{
				nulls[k] = 'n';
				mask |= 1U << k;
			}
		}
	}
	values[e->p_n - 1] = Int64GetDatum(d->n);
	for (int j = 0; j < def->ncols; j++)
	{
		if (e->p_nn[j])
			values[e->p_nn[j] - 1] = Int64GetDatum(d->nn[j]);
		if (e->p_sum[j])
			values[e->p_sum[j] - 1] = d->sum[j];
	}
	update = update_plan(e, mask);
	exec(update, values, nulls, SPI_OK_UPDATE_RETURNING);
	if (!returned(&count, &tid))
	{
		/* a new group: a row of no rows, then the change */
		exec(e->insert, values, nulls, SPI_OK_INSERT);
		exec(update, values, nulls, SPI_OK_UPDATE_RETURNING);
		if (!returned(&count, &tid))
			elog(ERROR, "materialized aggregate \"%s\" lost the row it inserted", e->table);
	}
	if (count < 0)
		out_of_step(r, count);
	if (count == 0 && def->ngroups > 0)
	{
		Datum		t = PointerGetDatum(&tid);

		exec(e->delete, &t, NULL, SPI_OK_DELETE);
	}
	if (key)
		ExecClearTuple(r->keyread);
}

/* writes one aggregate's net changes (SPI connected, as its owner) */
static void
run_apply(MatRun *r)
{
	MatEntry   *e = r->e;
	MatDef	   *def = r->def;
	TupleHashIterator iter;
	TupleHashEntry entry;

	prepare_plans(e);
	if (r->truncated)
	{
		empty_table(e->table);
		for (int j = 0; j < def->ncols; j++)
			if (e->value_tables[j])
				empty_table(e->value_tables[j]);
	}
	/* the value counts first: the group rows read their extremes there */
	for (int j = 0; j < def->ncols; j++)
	{
		if (r->values[j] == NULL)
			continue;
		InitTupleHashIterator(r->values[j], &iter);
		while ((entry = ScanTupleHashTable(r->values[j], &iter)) != NULL)
		{
			int64		count = *(int64 *) *entry_data(r->values[j], entry);

			if (count != 0)
				apply_value(r, j, entry->firstTuple, count);
		}
		TermTupleHashIterator(&iter);
	}
	if (r->groups)
	{
		InitTupleHashIterator(r->groups, &iter);
		while ((entry = ScanTupleHashTable(r->groups, &iter)) != NULL)
		{
			MatDelta   *d = *entry_data(r->groups, entry);

			if (!delta_is_noop(r, d))
				apply_group(r, entry->firstTuple, d);
		}
		TermTupleHashIterator(&iter);
	}
	else
	{
		/* no GROUP BY: one row, always there (of no rows after a TRUNCATE) */
		if (r->single == NULL && r->truncated)
			r->single = delta_new(r);
		if (r->single && (r->truncated || !delta_is_noop(r, r->single)))
			apply_group(r, NULL, r->single);
	}
}

/* ---- maintenance ---------------------------------------------------- */

typedef struct MatScan
{
	List	   *runs;
	TupleTableSlot *slot;
	ExprContext *econtext;
} MatScan;

/*
 * The aggregates' owners evaluate their expressions, in C on each record,
 * in a security-restricted operation, as apply_runs writes the rows.
 */
static void
scan_row(MatScan *ms, int sign)
{
	ListCell   *lc;
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	ms->econtext->ecxt_scantuple = ms->slot;
	foreach(lc, ms->runs)
	{
		MatRun	   *r = lfirst(lc);

		SetUserIdAndSecContext(r->e->owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		run_add(r, ms->econtext, sign);
	}
	SetUserIdAndSecContext(save_userid, save_sec);
	ResetExprContext(ms->econtext);
}

static void
scan_change(void *arg, const SnapshotInfo *si, int kind, MinimalTuple tup)
{
	MatScan    *ms = arg;

	if (kind == PK_CHANGE_TRUNCATE)
	{
		ListCell   *lc;

		foreach(lc, ms->runs)
			run_reset(lfirst(lc), true);
		return;
	}
	ExecStoreMinimalTuple(tup, ms->slot, false);
	scan_row(ms, PK_KIND_IS_ADD(kind) ? 1 : -1);
}

/*
 * Applies the runs through SQL, so that the aggregate tables' indexes,
 * constraints and triggers work as for any write; each as its aggregate's
 * owner in a security-restricted operation (search_path: safe_search_path):
 * writers of the source need no right on the aggregate, and the background
 * worker never runs an owner's trigger as superuser.
 */
static void
apply_runs(List *runs)
{
	ListCell   *lc;
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, runs)
	{
		MatRun	   *r = lfirst(lc);

		SetUserIdAndSecContext(r->e->owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		run_apply(r);
	}
	SetUserIdAndSecContext(save_userid, save_sec);
	SPI_finish();
}

/*
 * Writes what the scan netted, then frees it: the scan's memory context
 * (current, made by the caller), the search_path of safe_search_path.
 */
static void
scan_finish(MatScan *ms, int level, MemoryContext old)
{
	MemoryContext cxt = CurrentMemoryContext;

	apply_runs(ms->runs);
	FreeExprContext(ms->econtext, true);
	ExecDropSingleTupleTableSlot(ms->slot);
	AtEOXact_GUC(false, level);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* search_path for the aggregates' statements; returns the GUC level */
static int
safe_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * Applies the changes of rel's snapshot si, which the current transaction
 * has just made, to rel's materialized aggregates.  have_runs: runs is
 * every run of the step kept in a row of pkchangelog.runs, as it wrote
 * them (a small commit's: the changes are read from si and runs, no
 * catalog read); else they are read back (changelog_scan_snapshot).
 */
void
mat_maintain(Relation rel, const SnapshotInfo *si, List *runs, bool have_runs)
{
	List	   *entries = mat_entries(rel);
	MemoryContext cxt;
	MemoryContext old;
	MatScan		ms;
	ListCell   *lc;
	Snapshot	snapshot = NULL;
	int			level;

	if (entries == NIL)
		return;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge aggregate maintenance",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	level = safe_search_path();
	ms.runs = NIL;
	foreach(lc, entries)
	{
		MatEntry   *e = lfirst(lc);

		/* made once; a maintenance that failed may have left deltas */
		if (e->run == NULL)
			e->run = run_begin(e, e->cxt);
		run_reset(e->run, false);
		ms.runs = lappend(ms.runs, e->run);
	}
	ms.slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	ms.econtext = CreateStandaloneExprContext();
	/* the snapshot's catalog rows, written by this very command */
	CommandCounterIncrement();
	if (!have_runs)
		snapshot = RegisterSnapshot(GetLatestSnapshot());
	changelog_scan_snapshot(rel, si, runs, snapshot, scan_change, &ms);
	if (snapshot != NULL)
		UnregisterSnapshot(snapshot);
	/* the aggregates' triggers must not write pkmerge tables now */
	wbuf_close(true);
	scan_finish(&ms, level, old);
	wbuf_close(false);
}

/*
 * Fills a new aggregate from the source's rows as the latest snapshot sees
 * them (the caller keeps writers out), as owner.
 */
void
mat_populate(Relation source, MatDef *def, Oid owner, Oid *value_tables)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pkmerge aggregate fill",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int			level = safe_search_path();
	MatScan		ms;
	Snapshot	snapshot;
	TableScanDesc scan;
	MatRun	   *r;

	r = run_begin(entry_make(def, owner, value_tables, false), cxt);
	/* no GROUP BY: the row exists even for no rows */
	r->truncated = true;
	ms.runs = list_make1(r);
	ms.slot = table_slot_create(source, NULL);
	ms.econtext = CreateStandaloneExprContext();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(source, snapshot, 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, ms.slot))
		scan_row(&ms, 1);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	scan_finish(&ms, level, old);
}
