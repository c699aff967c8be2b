/*-------------------------------------------------------------------------
 *
 * am_dml.h
 *	  Row writes of pkmerge tables (insert, update, delete, lock, pk_write)
 *	  and the checks that keep read-modify-writes from losing updates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_AM_DML_H
#define PK_AM_DML_H

#include "access/tableam.h"

#include "run_format.h"
#include "write_buffer.h"

/*
 * pk_write runs a SQL statement (sql_funcs.c); the write of table relid
 * that the statement's command cid makes is recorded with kind (and for
 * -U/-D with row) instead of what the SQL operation implies (an upsert's
 * -U of the old row, a DELETE's -D of the stored row).  The writes of
 * statements its triggers run have other command ids.
 */
typedef struct DmlRecordAs
{
	Oid			relid;
	CommandId	cid;			/* InvalidCommandId until the statement starts */
	PkRowKind	kind;
	MinimalTuple row;			/* -U/-D: the row given */
} DmlRecordAs;

/* am_dml.c */
extern void dml_cancel_insert(Relation rel, ItemPointer tid);
extern void dml_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
					   bool speculative);
extern TM_Result dml_delete(Relation rel, ItemPointer tid, CommandId cid,
							Snapshot snapshot, TM_FailureData *tmfd);
extern TM_Result dml_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
							CommandId cid, Snapshot snapshot,
							TM_FailureData *tmfd);
extern TM_Result dml_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
						  TupleTableSlot *slot, CommandId cid, uint8 flags,
						  TM_FailureData *tmfd);
extern DmlRecordAs *dml_record_as(DmlRecordAs *ra);
extern bool dml_write_absent(Relation rel, PkRowKind kind, MinimalTuple tup);
extern void dml_truncate(Relation rel);
extern void dml_truncate_finish(Relation rel, WriteBuffer *wb);
extern void dml_subxact_abort(void);
extern void dml_check_conflicts(Relation rel, WriteBuffer *wb, List *committed,
								List *pending);
extern void dml_check_conflicts_since(Relation rel, WriteBuffer *wb,
									  bool kept, List *added,
									  List *committed, List *pending);

#endif							/* PK_AM_DML_H */
