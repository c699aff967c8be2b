/*-------------------------------------------------------------------------
 *
 * wal_rmgr.h
 *	  The library's custom WAL resource manager (wal_rmgr.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_WAL_RMGR_H
#define PK_WAL_RMGR_H

/* wal_rmgr.c */
extern void wal_rmgr_register(void);

#endif							/* PK_WAL_RMGR_H */
