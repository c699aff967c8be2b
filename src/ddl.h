/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  Hooks that keep DDL on pkmerge tables consistent (ddl.c) and make the
 *	  executor's ON CONFLICT path work with pkmerge_key (onconflict.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_DDL_H
#define PK_DDL_H

/* ddl.c */
extern void ddl_init(void);
extern int	ddl_vacuum_full_elevel(void);

/* onconflict.c */
extern void onconflict_init(void);

#endif							/* PK_DDL_H */
