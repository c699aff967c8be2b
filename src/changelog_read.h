/*-------------------------------------------------------------------------
 *
 * changelog_read.h
 *	  A table's change stream, read in stream order (changelog_read.c):
 *	  for pk_changes and for the WAL records logical decoding reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CHANGELOG_READ_H
#define PK_CHANGELOG_READ_H

#include "catalog.h"

/* the kind of a none or input TRUNCATE record, besides the PkRowKinds */
#define PK_CHANGE_TRUNCATE	(-1)

/* one record: kind a PkRowKind or PK_CHANGE_TRUNCATE (tup NULL) */
typedef void (*ChangeCallback) (void *arg, const SnapshotInfo *si, int kind,
								MinimalTuple tup);

/* changelog_read.c */
extern bool changelog_truncate_is_record(const SnapshotInfo *si);
extern void changelog_scan(Relation rel, int64 from, int64 to,
						   Snapshot snapshot, ChangeCallback cb, void *arg);
extern void changelog_scan_snapshot(Relation rel, const SnapshotInfo *si,
									List *runs, Snapshot snapshot,
									ChangeCallback cb, void *arg);

#endif							/* PK_CHANGELOG_READ_H */
