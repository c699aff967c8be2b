/*-------------------------------------------------------------------------
 *
 * changelog_produce.h
 *	  Changelog producers (DESIGN §2): the RowKind records a commit or a
 *	  full compaction adds to a table's change stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_PRODUCER_H
#define PK_PRODUCER_H

#include "write_buffer.h"

/* changelog_produce.c */
extern RunInfo *prod_commit(Relation rel, PkTable *t, WriteBuffer *wb,
							List *prev_runs, List *pending,
							int64 snapshot_id, uint64 seq);
extern RunInfo *prod_full_compaction(Relation rel, PkTable *t, List *upper,
									 List *bottom, uint64 seq);

#endif							/* PK_PRODUCER_H */
