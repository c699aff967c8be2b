/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The extension's configuration parameters (pkchangelog.*).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_GUC_H
#define PK_GUC_H

/* guc.c */
extern bool pk_worker_enabled;
extern int	pk_worker_naptime;
extern int	pk_run_memory_limit;
extern void pk_guc_init(void);

#endif							/* PK_GUC_H */
