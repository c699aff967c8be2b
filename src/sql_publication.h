/*-------------------------------------------------------------------------
 *
 * sql_publication.h
 *	  Keeps the extension's catalog out of publications (sql_publication.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_SQL_PUBLICATION_H
#define PK_SQL_PUBLICATION_H

/* sql_publication.c */
extern void publication_check_created(Oid classId, Oid objectId);

#endif							/* PK_SQL_PUBLICATION_H */
