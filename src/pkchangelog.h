/*-------------------------------------------------------------------------
 *
 * pkchangelog.h
 *	  The module: the library's version and the catalog versions it
 *	  accepts (pkchangelog.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PKCHANGELOG_H
#define PKCHANGELOG_H

#define PKCHANGELOG_VERSION "0.1"

/* pkchangelog.c */
extern char *pk_catalog_to_update(void);

#endif							/* PKCHANGELOG_H */
