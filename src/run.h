/*-------------------------------------------------------------------------
 *
 * run.h
 *	  Sorted runs: writing one (run_write.c), reading one (run_read.c),
 *	  and finding the blocks to put it in (run_space.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_H
#define PK_RUN_H

#include "access/htup.h"
#include "utils/rel.h"

#include "run_format.h"
#include "table_desc.h"

/*
 * Sequence numbers.  Commits take them from pkchangelog.tables.last_seq;
 * a run of a transaction still writing (spilled from its write buffer,
 * write_spill.c) is numbered PK_PENDING_SEQ + its spill ordinal until its commit
 * renumbers it: above every committed row, below the buffer's.
 */
#define PK_PENDING_SEQ		(UINT64CONST(1) << 54)

static inline bool
run_is_pending(const RunInfo *run)
{
	return (uint64) run->min_seq >= PK_PENDING_SEQ;
}

/*
 * A row's sequence number.  A run whose rows share one (every commit's)
 * carries it in its catalog row, which is what counts: a spilled run is
 * renumbered at commit without rewriting its pages.
 */
static inline uint64
run_row_seq(const RunInfo *run, const RunRowHeader *rh)
{
	return run->min_seq == run->max_seq ? (uint64) run->min_seq : RUN_ROW_SEQ(rh);
}

/* run_write.c */
typedef struct RunWriter RunWriter;

extern RunWriter *run_writer_begin(Relation rel, PkTable *t, int level,
								   RunKind kind, bool from_commit);
extern void run_writer_add(RunWriter *w, uint64 seq, PkRowKind kind,
						   MinimalTuple tup, const Datum *keys, uint32 hash);
extern void run_writer_set_seq(RunWriter *w, uint64 seq);
extern uint64 run_writer_nrows(RunWriter *w);
extern uint64 run_writer_stream_size(RunWriter *w);
extern RunInfo *run_writer_finish(RunWriter *w, int64 created_snapshot);

/* run_read.c */

/* a run's block index and bloom filter, cached per backend */
typedef struct RunIndex
{
	int64		run_id;
	uint32		nblocks;
	RunIndexEntry *entries;		/* nblocks of them */
	Datum	   *first_keys;		/* nblocks * nkeys, into keytuples */
	uint32		bloom_nbits;
	uint8	   *bloom;
} RunIndex;

/* one decompressed data block */
typedef struct RunBlock
{
	uint32		nrows;
	uint64		first_row;		/* ordinal of rows[0] in the run */
	char	   *raw;
	uint32	   *offsets;		/* of each RunRowHeader in raw */
	int			pins;			/* cache: held by cursors; -1: private */
	Size		raw_cap;		/* allocated sizes, for reuse */
	uint32		offsets_cap;
	char	   *stored;			/* private blocks: the compressed bytes */
	Size		stored_cap;
} RunBlock;

/* a position in a run, moved in key order */
typedef struct RunCursor
{
	Relation	rel;
	PkTable    *table;
	const RunInfo *run;
	RunIndex   *index;
	BufferAccessStrategy strategy;
	uint32		blockno;		/* current data block */
	RunBlock   *block;
	uint32		rowno;			/* row within block */
	bool		done;
	bool		unloaded;		/* opened, not yet started or sought */
} RunCursor;

extern RunIndex *run_index_get(Relation rel, PkTable *t, const RunInfo *run);
extern RunBlock *run_block_get(Relation rel, PkTable *t, const RunInfo *run,
							   RunIndex *idx, uint32 blockno, bool private,
							   BufferAccessStrategy strategy, RunBlock *spare);
extern void run_block_release(RunBlock *b);
extern bool run_bloom_may_contain(RunIndex *idx, uint32 hash);
extern uint32 run_index_find_block(PkTable *t, RunIndex *idx, const Datum *key,
								   int nprefix, bool strict);
extern void run_cursor_open(RunCursor *c, Relation rel, PkTable *t,
							const RunInfo *run, BufferAccessStrategy strategy);
extern void run_cursor_seek(RunCursor *c, const Datum *key, int nprefix);
extern void run_cursor_start(RunCursor *c);
extern void run_cursor_next(RunCursor *c);
extern void run_cursor_close(RunCursor *c);
extern bool run_lookup(Relation rel, PkTable *t, const RunInfo *run,
					   const Datum *key, uint32 hash, RunRowHeader **hdr,
					   uint64 *ordinal, RunBlock **pinned);
extern RunRowHeader *run_row_at(Relation rel, PkTable *t, const RunInfo *run,
								uint64 ordinal, RunBlock **pinned);

static inline RunRowHeader *
run_cursor_row(RunCursor *c)
{
	return (RunRowHeader *) (c->block->raw + c->block->offsets[c->rowno]);
}

/* run_space.c */
extern void space_reserve(Relation rel, RunInfo *run);
extern void space_truncate(Relation rel, BlockNumber *before,
						   BlockNumber *after, BlockNumber *used);
extern void space_rewrite(Relation rel, Relation dst, int *nruns,
						  BlockNumber *npages);

#endif							/* PK_RUN_H */
