/*-------------------------------------------------------------------------
 *
 * changelog_produce.h
 *	  Changelog producers (DESIGN §2): the RowKind records a commit or a
 *	  full compaction adds to a table's change stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CHANGELOG_PRODUCE_H
#define PK_CHANGELOG_PRODUCE_H

#include "write_buffer.h"

/* changelog_produce.c */
/*
 * What a commit's changelog is prepared with before the commit lock
 * (prod_commit_prepare); opaque to the caller.
 */
typedef struct ProdPrepared ProdPrepared;

extern bool prod_looks_up_early(PkTable *t, WriteBuffer *wb);
extern ProdPrepared *prod_commit_prepare(Relation rel, PkTable *t,
										 WriteBuffer *wb, List *before);
extern RunInfo *prod_commit(Relation rel, PkTable *t, WriteBuffer *wb,
							List *prev_runs, List *pending,
							int64 snapshot_id, uint64 seq,
							ProdPrepared *prep, bool kept, List *added);
extern RunInfo *prod_full_compaction(Relation rel, PkTable *t, List *upper,
									 List *bottom, uint64 seq);

#endif							/* PK_CHANGELOG_PRODUCE_H */
