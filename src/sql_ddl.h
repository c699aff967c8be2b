/*-------------------------------------------------------------------------
 *
 * sql_ddl.h
 *	  The hooks that keep DDL on pkmerge tables consistent.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SQL_DDL_H
#define PK_SQL_DDL_H

#include "utils/relcache.h"

/* sql_ddl.c */
extern void ddl_init(void);
extern int	ddl_vacuum_full_elevel(void);
extern void ddl_keep_missing_values(Relation rel);

#endif							/* PK_SQL_DDL_H */
