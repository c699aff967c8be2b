/*-------------------------------------------------------------------------
 *
 * relcache_hub.h
 *	  One relcache invalidation callback for the whole library, which its
 *	  parts register theirs with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RELCACHE_HUB_H
#define PK_RELCACHE_HUB_H

#include "utils/inval.h"

/* relcache_hub.c */
extern void hub_register_relcache(RelcacheCallbackFunction function, Datum arg);

#endif							/* PK_RELCACHE_HUB_H */
