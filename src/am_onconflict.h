/*-------------------------------------------------------------------------
 *
 * am_onconflict.h
 *	  INSERT ... ON CONFLICT arbiters for pkmerge tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_AM_ONCONFLICT_H
#define PK_AM_ONCONFLICT_H

/* am_onconflict.c */
extern void onconflict_init(void);

#endif							/* PK_AM_ONCONFLICT_H */
