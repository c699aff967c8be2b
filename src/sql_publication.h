/*-------------------------------------------------------------------------
 *
 * sql_publication.h
 *	  Keeps the extension's catalog out of logical replication
 *	  (sql_publication.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SQL_PUBLICATION_H
#define PK_SQL_PUBLICATION_H

#include "nodes/parsenodes.h"

/* sql_publication.c */
extern void publication_check_created(Oid classId, Oid objectId);
extern void publication_hide_catalog(void);
extern void publication_copy_check(CopyStmt *stmt);

#endif							/* PK_SQL_PUBLICATION_H */
