/*-------------------------------------------------------------------------
 *
 * run_cursor.h
 *	  Cursors over a sorted run, in key order (run_cursor.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_CURSOR_H
#define PK_RUN_CURSOR_H

#include "run_read.h"

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

/* run_cursor.c */
extern void run_cursor_open(RunCursor *c, Relation rel, PkTable *t,
							const RunInfo *run, BufferAccessStrategy strategy);
extern void run_cursor_open_once(RunCursor *c, Relation rel, PkTable *t,
								 const RunInfo *run);
extern void run_cursor_seek(RunCursor *c, const Datum *key, int nprefix);
extern void run_cursor_start(RunCursor *c);
extern void run_cursor_next(RunCursor *c);
extern void run_cursor_close(RunCursor *c);

static inline RunRowHeader *
run_cursor_row(RunCursor *c)
{
	return (RunRowHeader *) (c->block->raw + c->block->offsets[c->rowno]);
}

#endif							/* PK_RUN_CURSOR_H */
