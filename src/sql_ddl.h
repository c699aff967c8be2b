/*-------------------------------------------------------------------------
 *
 * sql_ddl.h
 *	  Hooks that keep DDL on pkmerge tables consistent (sql_ddl.c) and make the
 *	  executor's ON CONFLICT path work with pkmerge_key (am_onconflict.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_DDL_H
#define PK_DDL_H

/* sql_ddl.c */
extern void ddl_init(void);
extern int	ddl_vacuum_full_elevel(void);

/* am_onconflict.c */
extern void onconflict_init(void);

#endif							/* PK_DDL_H */
