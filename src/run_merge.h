/*-------------------------------------------------------------------------
 *
 * run_merge.h
 *	  Merges sorted runs and a write buffer into one key-ordered stream with
 *	  the newest version of each key.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_MERGE_H
#define PK_RUN_MERGE_H

#include "storage/bufmgr.h"
#include "storage/itemptr.h"

#include "write_buffer.h"

/* the version of a key the merge chose */
typedef struct MergeRow
{
	MinimalTuple tup;			/* valid until the next merge_next */
	const Datum *keys;			/* only if merge_begin's need_keys */
	uint8		kind;			/* PkRowKind */
	uint64		seq;			/* PG_UINT64_MAX: from the write buffer */
	ItemPointerData tid;
	const RunInfo *run;			/* NULL: from the write buffer */
} MergeRow;

typedef struct MergeIter MergeIter;

/* run_merge.c */
extern MergeIter *merge_begin(Relation rel, PkTable *t, List *runs,
							  WriteBuffer *wb, CommandId curcid,
							  BufferAccessStrategy strategy,
							  bool keep_tombstones, bool need_keys);
extern void merge_set_end(MergeIter *m, const Datum *end);
extern void merge_seek(MergeIter *m, const Datum *key, int nprefix);
extern bool merge_next(MergeIter *m, MergeRow *row);
extern void merge_end(MergeIter *m);

#endif							/* PK_RUN_MERGE_H */
