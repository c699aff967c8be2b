/*-------------------------------------------------------------------------
 *
 * run_write.h
 *	  Writing one sorted run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_WRITE_H
#define PK_RUN_WRITE_H

#include "access/htup.h"
#include "nodes/pg_list.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "run_format.h"
#include "table_desc.h"

/* run_write.c */
typedef struct RunWriter RunWriter;

extern RunWriter *run_writer_begin(Relation rel, PkTable *t, int level,
								   RunKind kind, bool from_commit);
extern void run_writer_add(RunWriter *w, uint64 seq, PkRowKind kind,
						   MinimalTuple tup, const Datum *keys, uint32 hash, uint64 id);
extern void run_writer_set_seq(RunWriter *w, uint64 seq);
extern void run_writer_set_run_id(RunWriter *w, int64 run_id);
extern void run_writer_allow_inline(RunWriter *w, List *live);
extern void run_writer_allow_snapshot_row(RunWriter *w);
extern uint64 run_writer_nrows(RunWriter *w);
extern uint64 run_writer_stream_size(RunWriter *w);
extern RunInfo *run_writer_finish(RunWriter *w, int64 created_snapshot);

#endif							/* PK_RUN_WRITE_H */
