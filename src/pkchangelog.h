/*-------------------------------------------------------------------------
 *
 * pkchangelog.h
 *	  Declarations shared across pkchangelog's parts: module-wide GUCs and
 *	  the init entry points each part exposes to _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PKCHANGELOG_H
#define PKCHANGELOG_H

#define PKCHANGELOG_VERSION "0.1"

/* guc.c */
extern bool pk_worker_enabled;
extern int	pk_worker_naptime;
extern void pk_guc_init(void);

/* worker.c */
extern void worker_init(void);

#endif							/* PKCHANGELOG_H */
