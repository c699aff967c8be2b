/*-------------------------------------------------------------------------
 *
 * mat.h
 *	  Materialized aggregates of pkmerge tables: the query's shape
 *	  (mat_query.c), their maintenance from the change stream
 *	  (mat_apply.c), the trigger that defines each (mat_define.c) and
 *	  their SQL functions and DDL (mat_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_MAT_H
#define PK_MAT_H

#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "catalog.h"
#include "catalog_mat.h"

/* what an output column of the aggregate is */
typedef enum MatKind
{
	MAT_GROUP,					/* a GROUP BY expression */
	MAT_COUNT_STAR,
	MAT_COUNT,
	MAT_SUM,
	MAT_AVG,
	MAT_MIN,
	MAT_MAX
} MatKind;

typedef struct MatCol
{
	MatKind		kind;
	char	   *name;			/* the output column's name */
	Oid			type;			/* and type */
	int32		typmod;
	Oid			collation;
	/* group: the expression; aggregates: the argument (NULL: count(*)) */
	Expr	   *expr;
	Oid			eqop;			/* group, min, max: equality of expr's type */
	/* sum, avg: expr is cast to acctype, the running sum's type */
	Oid			acctype;
	Oid			addfn;			/* acctype + acctype, - */
	Oid			subfn;
	Oid			value_table;	/* min, max: its value-count table */
} MatCol;

/* a materialized aggregate, as its query defines it */
typedef struct MatDef
{
	Oid			aggregate;		/* its table (InvalidOid while created) */
	Oid			source;			/* the pkmerge table */
	Query	   *query;
	Expr	   *where;			/* NULL: none */
	int			ncols;
	MatCol	   *cols;			/* in output order */
	int			ngroups;		/* the MAT_GROUP columns */
	int		   *groups;			/* their indexes in cols */
} MatDef;

/* hidden columns of the aggregate table, and of a value-count table */
#define MAT_COUNT_COLUMN "__pk_count"
#define MAT_NN_COLUMN "__pk_nn_%d"		/* non-NULL inputs of sum/avg column %d */
#define MAT_SUM_COLUMN "__pk_sum_%d"	/* avg column %d's running sum */
#define MAT_VALUE_COLUMN "__pk_value"
#define MAT_HIDDEN_PREFIX "__pk_"

/* mat_query.c */
extern Query *mat_parse(const char *query_string);
extern Oid	mat_trigger_function(void);
extern Query *mat_query_tree(const MatRow *m);
extern MatDef *mat_analyze(Query *query);
extern bool mat_needs_nn(const MatCol *c);

/* mat_apply.c */
extern void mat_maintain(Relation rel, const SnapshotInfo *si, List *runs,
						 bool have_runs);
extern void mat_populate(Relation source, MatDef *def, Oid owner,
						 Oid *value_tables);
extern void mat_invalidate(void);
extern void mat_init(void);
extern Oid	mat_rel_owner(Oid relid);

/* mat_define.c */
extern void mat_producer_check(const char *relname, int producer);
extern void mat_refuse_pending_writes(Oid relid, const char *what);
extern void mat_full_compaction_first(Relation rel);
extern void mat_attach(Oid aggregate, Query *q, Oid *value_tables, int ncols);
extern void mat_trigger_created(CreateTrigStmt *stmt);
extern void mat_trigger_dropped(Oid trigoid);
extern void mat_trigger_check(Oid trigoid);
extern void mat_own_trees(void);
extern void mat_refresh_triggers(void);
extern void mat_dropped(Oid relid);

/* mat_sql.c */
extern void mat_check_producer(Oid relid, int producer);
extern void mat_check_alter_column(Oid relid, const char *colname, const char *what);

#endif							/* PK_MAT_H */
