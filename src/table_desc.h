/*-------------------------------------------------------------------------
 *
 * table_desc.h
 *	  The descriptor of an open pkmerge table: its options, its primary key
 *	  columns and how keys compare, hash and print.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_TABLE_DESC_H
#define PK_TABLE_DESC_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
#include "utils/sortsupport.h"

#include "table_options.h"

typedef struct PkKeyCol
{
	AttrNumber	attnum;			/* column of the table */
	Oid			typid;
	Oid			collation;
	SortSupportData ssup;		/* btree order of the type */
	FmgrInfo	hash;			/* the type's hash function (bloom filter) */
	FmgrInfo	out;			/* output function (pk_runs, errors) */
} PkKeyCol;

/*
 * One per table and backend, built on first use and dropped on relcache
 * invalidation; everything it points to lives in mcxt.
 */
typedef struct PkTable
{
	Oid			relid;
	char	   *relname;
	PkOptions	opts;
	int			nkeys;		/* 0: created without a key, none added yet */
	PkKeyCol   *keys;
	bool		int_key;		/* one key column, of int2, int4 or int8 */
	TupleDesc	tupdesc;		/* copy of the relation's */
	TupleDesc	keydesc;		/* the key columns alone (run block index) */
	/*
	 * The snapshots with ids above this were made under
	 * opts.changelog_producer (-1: not known yet).  Set by compaction while
	 * it holds a lock on the table, so that no ALTER TABLE runs; one that
	 * changes the producer later invalidates this entry first.
	 */
	int64		producer_from;
	/* pk_table_row_ids(): read from the catalog when first asked */
	bool		row_ids_read;
	bool		row_ids_;		/* its rows have ids (catalog_row_ids.c) */
	uint64		rowid_enables;	/* rowids_enables() before row_ids_ was read */
	/* pk_table_stat_width(): ANALYZE's column widths, read when first asked */
	int32	   *stat_widths;	/* by attribute number; 0: no statistics */
	uint64		stat_widths_gen;	/* stat_generation they were read in */
	MemoryContext mcxt;
} PkTable;

/* table_desc.c */
extern Oid	pk_table_am_oid(void);
extern bool pk_is_pkmerge(Relation rel);
extern bool pk_relid_is_pkmerge(Oid relid);
extern PkTable *pk_table(Relation rel);
extern bool pk_table_row_ids(PkTable *t);
extern bool pk_table_rowids_now(PkTable *t);
extern int32 pk_table_stat_width(PkTable *t, AttrNumber attnum);
extern void pk_table_check_keyed(PkTable *t);
extern bool pk_has_key_option(Relation rel);
extern Datum pk_reloptions(Oid relid);
extern void pk_check_table(Oid relid);
extern Relation pk_open_table(Oid relid, LOCKMODE lockmode, AclMode mode);
extern bool pk_may_read_keys(Oid relid);
extern void pk_row_key(const PkTable *t, MinimalTuple tup, Datum *keys);
extern int	pk_key_cmp(const PkTable *t, const Datum *a, const Datum *b);
extern int	pk_key_cmp_n(const PkTable *t, const Datum *a, const Datum *b, int n);
extern uint32 pk_key_hash(const PkTable *t, const Datum *keys);
extern int64 pk_int_key(const PkTable *t, const Datum *keys);
extern MinimalTuple pk_key_form(const PkTable *t, const Datum *keys);
extern void pk_key_deform(const PkTable *t, MinimalTuple keytup, Datum *keys);
extern char *pk_key_text(const PkTable *t, const Datum *keys);
extern void pk_check_key_not_null(const PkTable *t, MinimalTuple tup);
extern void pktable_init(void);

#endif							/* PK_TABLE_DESC_H */
