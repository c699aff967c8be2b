/*-------------------------------------------------------------------------
 *
 * catalog_consumers.h
 *	  Consumer positions in pkchangelog.consumers (catalog_consumers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_CONSUMERS_H
#define PK_CATALOG_CONSUMERS_H

#include "datatype/timestamp.h"
#include "utils/snapshot.h"

/* catalog_consumers.c */
extern Oid	cat_consumers_relid(void);
extern bool cat_consumer_get(Oid relid, const char *consumer_id, Snapshot snapshot,
							 int64 *next_snapshot_id);
extern void cat_consumer_set(Oid relid, const char *consumer_id, int64 next_snapshot_id);
extern int64 cat_consumers_floor(Oid relid, TimestampTz idle_before);
extern bool cat_consumer_drop(Oid relid, const char *consumer_id);

#endif							/* PK_CATALOG_CONSUMERS_H */
