/*-------------------------------------------------------------------------
 *
 * relcache_hub.c
 *	  The library's one relcache invalidation callback.  A backend has ten
 *	  slots for such callbacks (inval.c), shared by PostgreSQL's own parts
 *	  and every loaded library; beside Citus, pkchangelog's five took the
 *	  last ones and a backend failed to start ("out of
 *	  relcache_callback_list slots").  Each part of the library registers
 *	  its callback here instead, and one slot calls them all.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/inval.h"

#include "relcache_hub.h"

#define HUB_CALLBACKS 8

static struct
{
	RelcacheCallbackFunction function;
	Datum		arg;
}			callbacks[HUB_CALLBACKS];
static int	ncallbacks = 0;

static void
hub_callback(Datum arg, Oid relid)
{
	for (int i = 0; i < ncallbacks; i++)
		callbacks[i].function(callbacks[i].arg, relid);
}

/*
 * Have function called at every relcache invalidation of this backend (a
 * relid, or InvalidOid for all), from then on.
 */
void
hub_register_relcache(RelcacheCallbackFunction function, Datum arg)
{
	if (ncallbacks >= HUB_CALLBACKS)
		elog(ERROR, "out of pkchangelog relcache callback slots");
	if (ncallbacks == 0)
		CacheRegisterRelcacheCallback(hub_callback, (Datum) 0);
	callbacks[ncallbacks].function = function;
	callbacks[ncallbacks].arg = arg;
	ncallbacks++;
}
