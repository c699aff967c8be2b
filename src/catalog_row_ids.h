/*-------------------------------------------------------------------------
 *
 * catalog_row_ids.h
 *	  Row ids of pkmerge tables with secondary indexes: which tables have
 *	  them, and the ids handed out to their row versions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_CATALOG_ROW_IDS_H
#define PK_CATALOG_ROW_IDS_H

/* catalog_row_ids.c */
extern Size rowids_shmem_size(void);
extern void rowids_shmem_init(int tranche);
extern void rowids_init(void);
extern bool rowids_catalog_present(void);
extern bool rowids_enabled(Oid relid);
extern uint64 rowids_enables(void);
extern void rowids_enable(Oid relid, uint64 first, uint32 reserved);
extern uint64 rowids_reserve(Oid relid, uint32 n);
extern uint64 rowids_horizon(Oid relid);
extern TransactionId rowids_holder(Oid relid, uint64 id);
extern void rowids_note_key(Oid relid, uint32 hash);
extern TransactionId rowids_key_writer(Oid relid, uint32 hash);

#endif							/* PK_CATALOG_ROW_IDS_H */
