/*-------------------------------------------------------------------------
 *
 * catalog_visible.h
 *	  Which runs a snapshot sees, from the catalog (catalog_visible.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_VISIBLE_H
#define PK_CATALOG_VISIBLE_H

#include "catalog.h"

/* catalog_visible.c */
extern RunInfo *cat_run_get(Oid relid, int64 run_id, Snapshot snapshot);
extern List *cat_runs_visible(Oid relid, Snapshot snapshot, bool data_only);
extern void cat_runs_mark_deltas(Oid relid, Snapshot snapshot, List *runs);
extern void cat_row_bytes(Oid relid, Snapshot snapshot, int64 *all, int64 *history);

#endif							/* PK_CATALOG_VISIBLE_H */
