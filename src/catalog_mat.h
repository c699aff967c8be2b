/*-------------------------------------------------------------------------
 *
 * catalog_mat.h
 *	  Materialized aggregates in pkchangelog.materializations (catalog_mat.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_MAT_H
#define PK_CATALOG_MAT_H

#include "nodes/pg_list.h"
#include "utils/snapshot.h"

/* a row of pkchangelog.materializations */
typedef struct MatRow
{
	Oid			relid;			/* the source */
	Oid			aggregate;		/* the aggregate's table */
	char	   *query;			/* nodeToString of the analyzed query */
	struct ArrayType *value_tables; /* oid[]: per output column, 0 or a table */
	int64		created_snapshot;
} MatRow;

/* catalog_mat.c */
extern void cat_mat_insert(Oid relid, Oid aggregate, const char *query,
						   Datum value_tables, int64 created_snapshot);
extern List *cat_mat_list(Oid relid, Snapshot snapshot);
extern List *cat_mat_all(Snapshot snapshot);
extern MatRow *cat_mat_get(Oid aggregate, Snapshot snapshot);
extern Oid	cat_mat_delete(Oid aggregate);
extern void cat_mat_set_query(Oid aggregate, const char *query);

#endif							/* PK_CATALOG_MAT_H */
