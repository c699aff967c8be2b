/*-------------------------------------------------------------------------
 *
 * write_spill.h
 *	  Spilling write buffers that outgrow write_buffer_size into runs of the
 *	  writing transaction, and renumbering those runs at its commit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_WRITE_SPILL_H
#define PK_WRITE_SPILL_H

#include "lookup.h"
#include "write_buffer.h"

/* write_spill.c */
extern void spill_init(void);
extern void spill_after_write(Relation rel, PkTable *t, WriteBuffer *wb);
extern bool spill_lookup_since(Relation rel, PkTable *t, WriteBuffer *wb,
							   CommandId cid, const Datum *key, uint32 hash,
							   PkVersion *v);
extern void spill_decode_read(uint64 stored, PkRead *read);
extern List *spill_runs(Relation rel, WriteBuffer *wb);
extern int	spill_finalize(Relation rel, WriteBuffer *wb, uint64 first_seq,
						   int64 snapshot_id, int64 *rows, int64 *changelog_rows);
extern void spill_xact_end(void);
extern void spill_subxact_commit(void);
extern void spill_subxact_abort(void);

#endif							/* PK_WRITE_SPILL_H */
