/*-------------------------------------------------------------------------
 *
 * key_types.h
 *	  The default btree ordering and hash function of a key column's type,
 *	  shared between backends for the bootstrap catalogs' types.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_KEY_TYPES_H
#define PK_KEY_TYPES_H

/* key_types.c */
extern Size keytypes_shmem_size(void);
extern void keytypes_shmem_init(void);
extern void keytype_ops(Oid typid, Oid *lt_opr, Oid *hash_proc);

#endif							/* PK_KEY_TYPES_H */
