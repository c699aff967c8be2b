/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The extension's configuration parameters (pkchangelog.*).
 *
 * Parameters are defined here and read by the parts that use them; this
 * file holds no other logic.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "pkchangelog.h"

void
pk_guc_init(void)
{
	MarkGUCPrefixReserved("pkchangelog");
}
