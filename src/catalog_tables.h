/*-------------------------------------------------------------------------
 *
 * catalog_tables.h
 *	  A table's row of pkchangelog.tables, its state (catalog_tables.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_TABLES_H
#define PK_CATALOG_TABLES_H

#include "catalog.h"

/* catalog_tables.c */
extern void cat_table_state_set_runs(TableState *st, List *runs);
extern bool cat_table_state_folds(const TableState *st);
extern TableState cat_table_state_peek(Oid relid);
extern bool cat_table_version(Oid relid, Snapshot snapshot,
							  const ItemPointerData *hint, TransactionId *xmin,
							  TableState *st);
extern bool cat_table_row_version(Oid relid, Snapshot snapshot, const ItemPointerData *hint,
				  TransactionId *xmin, TableState *st);
extern TableState cat_table_state(Oid relid, const ItemPointerData *hint);
extern bool cat_table_written_here(Oid relid);
extern uint64 cat_table_last_write(Oid relid);
extern TableState cat_table_state_settle(Oid relid);
extern void cat_table_state_update(Oid relid, TableState *state);
extern bool cat_data_run_is_delta(const TableState *st, int64 run_id, bool from_commit,
				  int64 created_snapshot);
extern bool cat_row_is_live_data(Relation crel, HeapTuple tup, const TableState *st);
extern void cat_truncate(Oid relid);

#endif							/* PK_CATALOG_TABLES_H */
