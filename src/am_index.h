/*-------------------------------------------------------------------------
 *
 * am_index.h
 *	  Secondary indexes of pkmerge tables: their build and VACUUM.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_AM_INDEX_H
#define PK_AM_INDEX_H

#include "access/tableam.h"
#include "commands/vacuum.h"
#include "nodes/execnodes.h"

/* am_index.c */
extern void index_concurrent_first(Relation rel);
extern double index_build_scan(Relation table_rel, Relation index_rel,
							   IndexInfo *index_info, IndexBuildCallback callback,
							   void *callback_state, TableScanDesc scan);
extern void index_validate(Relation table_rel, Relation index_rel,
						   IndexInfo *index_info, Snapshot snapshot,
						   struct ValidateIndexState *state);
extern void index_vacuum(Relation rel, VacuumParams *params,
						 BufferAccessStrategy bstrategy);

#endif							/* PK_AM_INDEX_H */
