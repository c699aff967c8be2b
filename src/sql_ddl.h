/*-------------------------------------------------------------------------
 *
 * sql_ddl.h
 *	  The hooks that keep DDL on pkmerge tables consistent.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_DDL_H
#define PK_DDL_H

/* sql_ddl.c */
extern void ddl_init(void);
extern int	ddl_vacuum_full_elevel(void);

#endif							/* PK_DDL_H */
