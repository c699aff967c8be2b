/*-------------------------------------------------------------------------
 *
 * sql_funcs.h
 *	  The extension's SQL functions: what _PG_init sets up for them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SQL_FUNCS_H
#define PK_SQL_FUNCS_H

/* sql_funcs.c */
extern void sqlfuncs_init(void);

#endif							/* PK_SQL_FUNCS_H */
