/*-------------------------------------------------------------------------
 *
 * write_commit.h
 *	  The commit path: transaction callbacks that turn write buffers into
 *	  runs and snapshots at pre-commit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_WRITE_COMMIT_H
#define PK_WRITE_COMMIT_H

/* write_commit.c */
extern void commit_init(void);

#endif							/* PK_WRITE_COMMIT_H */
