/*-------------------------------------------------------------------------
 *
 * dml.h
 *	  Row writes of pkmerge tables (insert, update, delete, lock, pk_write)
 *	  and the checks that keep read-modify-writes from losing updates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_DML_H
#define PK_DML_H

#include "access/tableam.h"

#include "run_format.h"
#include "wbuf.h"

/* dml.c */
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
extern void dml_write(Relation rel, PkRowKind kind, MinimalTuple tup);
extern void dml_truncate(Relation rel);
extern void dml_subxact_abort(void);
extern void dml_check_conflicts(Relation rel, WriteBuffer *wb, List *committed,
								List *pending);

#endif							/* PK_DML_H */
