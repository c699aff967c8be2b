/*-------------------------------------------------------------------------
 *
 * pkchangelog.h
 *	  The library's version.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PKCHANGELOG_H
#define PKCHANGELOG_H

#define PKCHANGELOG_VERSION "0.12"

#endif							/* PKCHANGELOG_H */
