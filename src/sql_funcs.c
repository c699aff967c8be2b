/*-------------------------------------------------------------------------
 *
 * sql_funcs.c
 *	  SQL-callable functions in C that are not part of an access method:
 *	  pk_write and the helper the catalog views use to check their
 *	  argument.  (pk_options is in options.c, next to the option table.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "access/xact.h"
#include "compaction.h"
#include "dml.h"
#include "expire.h"
#include "pktable.h"
#include "run.h"

/*
 * pkchangelog.pkmerge_relid(rel regclass) -> oid: rel, after checking that
 * it is a pkmerge table the caller may read.
 */
PG_FUNCTION_INFO_V1(pk_pkmerge_relid);
Datum
pk_pkmerge_relid(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel = pk_open_table(relid, AccessShareLock);

	table_close(rel, AccessShareLock);
	PG_RETURN_OID(relid);
}

static PkRowKind
parse_rowkind(const char *s)
{
	if (strcmp(s, "+I") == 0)
		return PK_INSERT;
	if (strcmp(s, "-U") == 0)
		return PK_UPDATE_BEFORE;
	if (strcmp(s, "+U") == 0)
		return PK_UPDATE_AFTER;
	if (strcmp(s, "-D") == 0)
		return PK_DELETE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid RowKind \"%s\"", s),
			 errhint("Use one of '+I', '-U', '+U', '-D'.")));
	return PK_INSERT;			/* keep compiler quiet */
}

/*
 * pk_write(rel regclass, rowkind text, r anyelement): one record with an
 * explicit RowKind, as a CDC pipeline hands rows over.  r must be a row of
 * the table's type.
 */
PG_FUNCTION_INFO_V1(pk_write);
Datum
pk_write(PG_FUNCTION_ARGS)
{
	Oid			relid;
	PkRowKind	kind;
	Relation	rel;
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 2);
	HeapTupleHeader td;
	HeapTupleData htup;
	AclResult	aclresult;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pk_write needs a table and a RowKind")));
	relid = PG_GETARG_OID(0);
	kind = parse_rowkind(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	rel = pk_open_table(relid, RowExclusiveLock);

	aclresult = pg_class_aclcheck(relid, GetUserId(),
								  PK_KIND_IS_ADD(kind) ? ACL_INSERT : ACL_DELETE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, RelationGetRelationName(rel));

	if (argtype != rel->rd_rel->reltype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("pk_write on \"%s\" needs a row of type %s, not %s",
						RelationGetRelationName(rel),
						format_type_be(rel->rd_rel->reltype),
						format_type_be(argtype)),
				 errhint("Pass ROW(...)::%s.", format_type_be(rel->rd_rel->reltype))));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("pk_write on \"%s\" needs a row, not NULL",
						RelationGetRelationName(rel))));
	td = PG_GETARG_HEAPTUPLEHEADER(2);
	htup.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&htup.t_self);
	htup.t_tableOid = InvalidOid;
	htup.t_data = td;

	dml_write(rel, kind, minimal_tuple_from_heap_tuple(&htup));
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * pk_compact(rel regclass, full boolean DEFAULT false) -> bigint: waits for
 * a running compaction of the table, then compacts: everything into the
 * bottom level when full, else what universal compaction picks.  Returns
 * the COMPACT snapshot's id, NULL when there was nothing to do.
 */
PG_FUNCTION_INFO_V1(pk_compact);
Datum
pk_compact(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bool		full = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	Relation	rel = pk_open_table(relid, RowExclusiveLock);
	AclResult	aclresult;
	int64		snapshot_id;

	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_UPDATE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, RelationGetRelationName(rel));
	/* the compaction commits with the caller's transaction: it needs an xid */
	(void) GetCurrentTransactionId();
	snapshot_id = compact_table(rel, full);
	table_close(rel, NoLock);
	if (snapshot_id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(snapshot_id);
}

/*
 * pk_expire_snapshots(rel regclass, max_snapshots bigint DEFAULT NULL) ->
 * bigint: expires the snapshots beyond the table's retention options, the
 * oldest first and at most max_snapshots of them (NULL: all); returns how
 * many.
 */
PG_FUNCTION_INFO_V1(pk_expire_snapshots);
Datum
pk_expire_snapshots(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int64		max_snapshots = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	Relation	rel;
	AclResult	aclresult;
	int64		n;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (!PG_ARGISNULL(1) && max_snapshots < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_snapshots must not be negative"),
				 errhint("Pass NULL to expire every snapshot that is due.")));
	relid = PG_GETARG_OID(0);
	rel = pk_open_table(relid, RowExclusiveLock);
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_DELETE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, RelationGetRelationName(rel));
	n = expire_snapshots(rel, max_snapshots);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}

/*
 * pkchangelog.block_cache_stats() -> (hits, misses): this backend's lookup
 * block cache counters (pk_stats shows them).
 */
PG_FUNCTION_INFO_V1(pk_block_cache_stats);
Datum
pk_block_cache_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int64		hits;
	int64		misses;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	run_reader_get_stats(&hits, &misses);
	values[0] = Int64GetDatum(hits);
	values[1] = Int64GetDatum(misses);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
