/*-------------------------------------------------------------------------
 *
 * pkchangelog.h
 *	  Declarations shared across pkchangelog's parts: module-wide GUCs, the
 *	  init entry points each part exposes to _PG_init, and the background
 *	  workers' request for a compaction.
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

/* sql_funcs.c */
extern void sqlfuncs_init(void);

/* worker.c */
extern void worker_init(void);
extern void worker_request(Oid relid);

#endif							/* PKCHANGELOG_H */
