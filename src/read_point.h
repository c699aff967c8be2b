/*-------------------------------------------------------------------------
 *
 * read_point.h
 *	  Point reads: the runs a snapshot sees, a key's newest version, and the
 *	  row a TID names.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_READ_POINT_H
#define PK_READ_POINT_H

#include "storage/itemptr.h"
#include "utils/snapshot.h"

#include "write_buffer.h"

/* one version of a key; tup is a copy owned by the caller's context */
typedef struct PkVersion
{
	MinimalTuple tup;
	uint8		kind;			/* PkRowKind */
	uint64		seq;			/* PG_UINT64_MAX: in the write buffer;
								 * >= PK_PENDING_SEQ: in a pending run */
	CommandId	cid;			/* buffer only: the command that wrote it */
	ItemPointerData tid;
} PkVersion;

/* read_point.c */
extern List *lookup_visible_runs(Relation rel, Snapshot snapshot);
extern List *lookup_committed_runs(List *runs);
extern bool lookup_runs_added(List *before, List *committed, List **added);
extern bool lookup_committed(Relation rel, PkTable *t, List *runs,
							 const Datum *key, uint32 hash, PkVersion *v);
extern bool lookup_buffered(WriteBuffer *wb, PkTable *t, const Datum *key,
							uint32 hash, CommandId curcid, PkVersion *v);
extern bool lookup_tid(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
					   ItemPointer tid, PkVersion *v);

#endif							/* PK_READ_POINT_H */
