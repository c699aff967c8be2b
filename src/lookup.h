/*-------------------------------------------------------------------------
 *
 * lookup.h
 *	  Point reads: the runs a snapshot sees, a key's newest version, and the
 *	  row a TID names.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_LOOKUP_H
#define PK_LOOKUP_H

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

typedef struct LookupCursor LookupCursor;

/* lookup.c */
extern bool lookup_committed(Relation rel, PkTable *t, List *runs,
							 const Datum *key, uint32 hash, PkVersion *v);
extern void lookup_forget(void);
extern LookupCursor *lookup_cursor_begin(Relation rel, PkTable *t, List *runs);
extern bool lookup_cursor_next(LookupCursor *c, const Datum *key, uint32 hash,
							   PkVersion *v);
extern void lookup_cursor_end(LookupCursor *c);
extern bool lookup_buffered(WriteBuffer *wb, PkTable *t, const Datum *key,
							uint32 hash, CommandId curcid, PkVersion *v);
extern bool lookup_tid(Relation rel, PkTable *t, List *runs, WriteBuffer *wb,
					   ItemPointer tid, PkVersion *v);

#endif							/* PK_LOOKUP_H */
