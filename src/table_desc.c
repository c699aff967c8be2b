/*-------------------------------------------------------------------------
 *
 * table_desc.c
 *	  Per-backend descriptors of pkmerge tables (PkTable): options parsed
 *	  from pg_class.reloptions, primary key columns resolved to attribute
 *	  numbers, and the key operations every other part uses (compare with
 *	  the types' btree order, hash for bloom filters, print); and the
 *	  opening of a table named by a SQL function's argument, with the
 *	  caller's privileges checked before the lock.
 *
 * Descriptors are cached by relation OID and dropped by a relcache
 * invalidation callback, so ALTER TABLE ... SET and column changes are seen
 * at the next use.  Callers keep the pointer across calls that may process
 * invalidations (taking a lock, opening a relation: a GRANT or ANALYZE in
 * another session is enough), so a dropped descriptor's memory lives on
 * until the end of the transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "catalog_row_ids.h"
#include "key_types.h"
#include "pg_compat.h"
#include "relcache_hub.h"
#include "table_desc.h"

typedef struct PkTableEntry
{
	Oid			relid;			/* hash key */
	PkTable    *table;
} PkTableEntry;

static HTAB *pk_tables = NULL;
static Oid	pkmerge_am_oid = InvalidOid;

/* the descriptor pk_table returned last: a statement's rows ask for it each */
static PkTable *last_table = NULL;

static void
drop_entry(PkTableEntry *e)
{
	if (e->table == NULL)
		return;
	if (e->table == last_table)
		last_table = NULL;
	/* in use until the transaction ends, if one runs */
	if (TopTransactionContext != NULL)
		MemoryContextSetParent(e->table->mcxt, TopTransactionContext);
	else
		MemoryContextDelete(e->table->mcxt);
	e->table = NULL;
}

static void
pk_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PkTableEntry *e;

	/* the AM's OID changes when the extension is dropped and re-created */
	pkmerge_am_oid = InvalidOid;
	if (pk_tables == NULL)
		return;
	if (OidIsValid(relid))
	{
		e = hash_search(pk_tables, &relid, HASH_FIND, NULL);
		if (e)
		{
			drop_entry(e);
			hash_search(pk_tables, &relid, HASH_REMOVE, NULL);
		}
		return;
	}
	hash_seq_init(&status, pk_tables);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		drop_entry(e);
		hash_search(pk_tables, &e->relid, HASH_REMOVE, NULL);
	}
}

/*
 * Bumped by every change of pg_statistic this backend hears of (ANALYZE
 * here or elsewhere): a table's widths read before are read again.
 */
static uint64 stat_generation = 1;

static void
pk_statistic_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	stat_generation++;
}

void
pktable_init(void)
{
	hub_register_relcache(pk_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(STATRELATTINH, pk_statistic_callback, (Datum) 0);
}

Oid
pk_table_am_oid(void)
{
	if (!OidIsValid(pkmerge_am_oid))
		pkmerge_am_oid = get_am_oid("pkmerge", true);
	return pkmerge_am_oid;
}

bool
pk_is_pkmerge(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_RELATION &&
		OidIsValid(rel->rd_rel->relam) &&
		rel->rd_rel->relam == pk_table_am_oid();
}

/* is relid a pkmerge table?  From pg_class alone, without a lock. */
bool
pk_relid_is_pkmerge(Oid relid)
{
	HeapTuple	tup;
	bool		result = false;

	if (!OidIsValid(relid) || !OidIsValid(pk_table_am_oid()))
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);

		result = form->relkind == RELKIND_RELATION && form->relam == pk_table_am_oid();
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * The error for a SQL function's argument that is not a pkmerge table
 * (form: its pg_class row).  An index is named by mistake for its table
 * often enough (\di lists them beside the tables): name the table.
 */
static void
not_pkmerge(Oid relid, Form_pg_class form)
{
	const char *relname = NameStr(form->relname);

	if (form->relkind == RELKIND_INDEX || form->relkind == RELKIND_PARTITIONED_INDEX)
	{
		Oid			tableid = IndexGetRelation(relid, true);
		char	   *table = OidIsValid(tableid) ? get_rel_name(tableid) : NULL;

		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is an index, not a pkmerge table", relname),
				 table == NULL ? 0 :
				 pk_relid_is_pkmerge(tableid) ?
				 errhint("Pass the table instead: the index belongs to pkmerge table \"%s\".", table) :
				 errhint("The index belongs to table \"%s\", which is not a pkmerge table either.", table)));
	}
	if (form->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a pkmerge table", relname),
				 errdetail_relkind_not_supported(form->relkind),
				 errhint("Pass a table created with CREATE TABLE ... USING pkmerge.")));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is not a pkmerge table", relname),
			 errdetail("Table \"%s\" uses access method \"%s\".", relname,
					   OidIsValid(form->relam) ? get_am_name(form->relam) : "none"),
			 errhint("Pass a table created with CREATE TABLE ... USING pkmerge.")));
}

/*
 * A Citus distributed or reference table's own table on the coordinator
 * holds no rows: its shards do, each a pkmerge table with its own
 * snapshots and changes.  The SQL functions refuse it rather than show an
 * empty history (or write rows nobody reads).  Detected without depending
 * on Citus: a table listed in pg_catalog.pg_dist_partition, when that
 * catalog exists.
 */
static void
refuse_distributed(Oid relid, const char *relname)
{
	Oid			dist = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	AttrNumber	attnum;
	Relation	crel;
	SysScanDesc scan;
	ScanKeyData key;
	bool		listed;

	if (!OidIsValid(dist) ||
		(attnum = get_attnum(dist, "logicalrelid")) == InvalidAttrNumber)
		return;
	crel = table_open(dist, AccessShareLock);
	ScanKeyInit(&key, attnum, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(crel, InvalidOid, false, NULL, 1, &key);
	listed = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(crel, AccessShareLock);
	if (listed)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pkmerge table \"%s\" is distributed: its rows, snapshots and changes are in its shards",
						relname),
				 errdetail("Each shard of a distributed table is a pkmerge table of its own."),
				 errhint("Call the function on the shards, as in SELECT * FROM run_command_on_shards('%s', $$SELECT count(*) FROM pk_changes('%%s')$$).",
						 quote_identifier(relname))));
}

/*
 * Check, from the catalogs alone and without a lock of the table, that
 * relid (a SQL function's argument) is a pkmerge table holding its own
 * rows.
 */
void
pk_check_table(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	form = (Form_pg_class) GETSTRUCT(tup);
	if (form->relkind != RELKIND_RELATION || !OidIsValid(form->relam) ||
		form->relam != pk_table_am_oid())
		not_pkmerge(relid, form);
	refuse_distributed(relid, NameStr(form->relname));
	ReleaseSysCache(tup);
}

/* does the current user hold mode on the table, or on each of its columns? */
static void
check_privilege(Oid relid, AclMode mode)
{
	Oid			user = GetUserId();

	if (mode == 0 || pg_class_aclcheck(relid, user, mode) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(relid, user, mode, ACLMASK_ALL) == ACLCHECK_OK)
		return;
	aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * Open a pkmerge table named by a SQL function's argument, for a caller
 * who must hold mode on it (0: no privilege needed).  The privilege is
 * checked before the lock is requested, as PostgreSQL's own commands do:
 * a caller without it gets its error at once, and never waits for (or
 * queues ahead of) the table's lockers.  It is checked again under the
 * lock, which a REVOKE may have been waiting for.
 */
Relation
pk_open_table(Oid relid, LOCKMODE lockmode, AclMode mode)
{
	Relation	rel;

	pk_check_table(relid);
	check_privilege(relid, mode);
	rel = table_open(relid, lockmode);
	if (!pk_is_pkmerge(rel))
		not_pkmerge(relid, rel->rd_rel);
	check_privilege(relid, mode);
	return rel;
}

/* a copy of the relation's reloptions, (Datum) 0 if none */
Datum
pk_reloptions(Oid relid)
{
	HeapTuple	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Datum		reloptions;
	bool		isnull;

	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	reloptions = SysCacheGetAttr(RELOID, classtup, Anum_pg_class_reloptions, &isnull);
	reloptions = isnull ? (Datum) 0 : datumCopy(reloptions, false, -1);
	ReleaseSysCache(classtup);
	return reloptions;
}

/* has the table's primary_key option been stored (by sql_ddl.c) yet? */
bool
pk_has_key_option(Relation rel)
{
	PkOptions	opts;

	pkopt_parse(pk_reloptions(RelationGetRelid(rel)), &opts);
	return opts.primary_key != NULL;
}

/*
 * May the current user see the table's key values (pk_runs' min_key and
 * max_key)?  As pg_stats shows a column's values: with SELECT on the table
 * or on every key column, and only where no row-level security policy
 * applies to the user.  Reads pg_class and pg_attribute, takes no lock.
 */
bool
pk_may_read_keys(Oid relid)
{
	Oid			user = GetUserId();
	PkOptions	opts;
	ListCell   *lc;

	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return false;
	if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK)
		return true;
	pkopt_parse(pk_reloptions(relid), &opts);
	if (opts.primary_key == NULL)
		return false;
	foreach(lc, pkopt_split_key(opts.primary_key))
	{
		AttrNumber	attnum = get_attnum(relid, lfirst(lc));

		if (attnum == InvalidAttrNumber ||
			pg_attribute_aclcheck(relid, attnum, user, ACL_SELECT) != ACLCHECK_OK)
			return false;
	}
	return true;
}

static PkTable *
build_table(Relation rel)
{
	MemoryContext mcxt = AllocSetContextCreate(CacheMemoryContext, "pkmerge table",
											   ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	PkTable    *t = palloc0(sizeof(PkTable));
	List	   *cols;
	ListCell   *lc;
	int			i = 0;

	t->mcxt = mcxt;
	t->producer_from = -1;
	t->relid = RelationGetRelid(rel);
	t->relname = pstrdup(RelationGetRelationName(rel));
	t->tupdesc = CreateTupleDescCopy(RelationGetDescr(rel));

	pkopt_parse(pk_reloptions(t->relid), &t->opts);

	/* a table created without a key has none until ALTER TABLE adds it */
	cols = t->opts.primary_key ? pkopt_split_key(t->opts.primary_key) : NIL;
	t->nkeys = list_length(cols);
	t->keys = palloc0(sizeof(PkKeyCol) * t->nkeys);
	foreach(lc, cols)
	{
		char	   *name = lfirst(lc);
		PkKeyCol   *k = &t->keys[i++];
		Oid			lt_opr;
		Oid			hash_proc;
		AttrNumber	attnum = InvalidAttrNumber;

		for (int a = 0; a < t->tupdesc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(t->tupdesc, a);

			if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
				attnum = att->attnum;
		}
		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("primary key column \"%s\" of pkmerge table \"%s\" does not exist",
							name, t->relname)));
		k->attnum = attnum;
		k->typid = TupleDescAttr(t->tupdesc, attnum - 1)->atttypid;
		k->collation = TupleDescAttr(t->tupdesc, attnum - 1)->attcollation;
		keytype_ops(k->typid, &lt_opr, &hash_proc);
		if (!OidIsValid(lt_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("primary key column \"%s\" has type %s, which has no default btree ordering",
							name, format_type_be(k->typid))));
		k->ssup.ssup_cxt = mcxt;
		k->ssup.ssup_collation = k->collation;
		k->ssup.ssup_nulls_first = false;
		PrepareSortSupportFromOrderingOp(lt_opr, &k->ssup);
		if (OidIsValid(hash_proc))
			fmgr_info_cxt(hash_proc, &k->hash, mcxt);
		{
			Oid			outfn;
			bool		varlena;

			getTypeOutputInfo(k->typid, &outfn, &varlena);
			fmgr_info_cxt(outfn, &k->out, mcxt);
		}
	}
	t->int_key = t->nkeys == 1 &&
		(t->keys[0].typid == INT2OID || t->keys[0].typid == INT4OID ||
		 t->keys[0].typid == INT8OID);
	t->keydesc = CreateTemplateTupleDesc(t->nkeys);
	for (i = 0; i < t->nkeys; i++)
		TupleDescCopyEntry(t->keydesc, i + 1, t->tupdesc, t->keys[i].attnum);
	MemoryContextSwitchTo(old);
	return t;
}

/*
 * Refuse to write to a table without a key (created without one, waiting
 * for ALTER TABLE ... ADD PRIMARY KEY): it has no rows, and a row without
 * a key could not be placed.
 */
void
pk_table_check_keyed(PkTable *t)
{
	if (t->nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pkmerge table \"%s\" has no primary key", t->relname),
				 errdetail("A pkmerge table stores rows by their primary key; this one was created without one."),
				 errhint("Add it with ALTER TABLE %s ADD PRIMARY KEY (...) while the table is empty.",
						 quote_identifier(t->relname))));
}

/*
 * The descriptor of an open pkmerge table.
 */
PkTable *
pk_table(Relation rel)
{
	PkTableEntry *e;
	bool		found;
	Oid			relid = RelationGetRelid(rel);

	if (last_table && last_table->relid == relid)
		return last_table;
	if (pk_tables == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(PkTableEntry);
		pk_tables = hash_create("pkmerge tables", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(pk_tables, &relid, HASH_ENTER, &found);
	if (!found)
		e->table = NULL;
	if (e->table == NULL)
	{
		PkTable    *t = build_table(rel);

		/* re-find: building may have run invalidation callbacks */
		e = hash_search(pk_tables, &relid, HASH_ENTER, &found);
		if (found && e->table)
			drop_entry(e);
		e->table = t;
	}
	last_table = e->table;
	return e->table;
}

/*
 * The average width ANALYZE found for column attnum, 0 if it found none:
 * what get_attavgwidth() answers, without its hook.  All of the table's
 * columns are read in one scan of pg_statistic's index, from the rows'
 * fixed fields: the syscache would build (and detoast) each column's row,
 * histograms and all, and the planner's size estimate (am_handler.c) asks
 * for every column of the table, most of which a query does not use (the
 * statistics rows of a new connection's first query are a tenth of its
 * time).  Kept until the next change of pg_statistic.
 */
int32
pk_table_stat_width(PkTable *t, AttrNumber attnum)
{
	if (t->stat_widths == NULL || t->stat_widths_gen != stat_generation)
	{
		int			natts = t->tupdesc->natts;
		int32	   *widths = MemoryContextAllocZero(t->mcxt, (natts + 1) * sizeof(int32));
		uint64		gen = stat_generation;
		Relation	sd;
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		sd = table_open(StatisticRelationId, AccessShareLock);
		ScanKeyInit(&key, Anum_pg_statistic_starelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(t->relid));
		scan = systable_beginscan(sd, StatisticRelidAttnumInhIndexId, true,
								  NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_statistic st = (Form_pg_statistic) GETSTRUCT(tup);

			if (!st->stainherit && st->staattnum > 0 && st->staattnum <= natts &&
				st->stawidth > 0)
				widths[st->staattnum] = st->stawidth;
		}
		systable_endscan(scan);
		table_close(sd, AccessShareLock);
		if (t->stat_widths)
			pfree(t->stat_widths);
		t->stat_widths = widths;
		/* a change heard of while reading: read again next time */
		t->stat_widths_gen = gen;
	}
	return attnum > 0 && attnum <= t->tupdesc->natts ? t->stat_widths[attnum] : 0;
}

/*
 * Does the table have row ids?  Read from the catalog when first asked, as
 * a statement that reads by key alone never asks (opening the catalog is a
 * cost of a new connection's first query of the table).
 */
bool
pk_table_row_ids(PkTable *t)
{
	if (!t->row_ids_read)
	{
		t->rowid_enables = rowids_enables();
		t->row_ids_ = rowids_enabled(t->relid);
		t->row_ids_read = true;
	}
	return t->row_ids_;
}

/*
 * Does the table have row ids now?  t may be older than the commit that
 * gave them (an index built CONCURRENTLY while its transaction wrote): the
 * catalog is read again when a table was given ids since t read it.
 */
bool
pk_table_rowids_now(PkTable *t)
{
	uint64		n;

	if (pk_table_row_ids(t))
		return true;
	n = rowids_enables();
	if (n == t->rowid_enables)
		return false;
	if (rowids_enabled(t->relid))
		return true;
	t->rowid_enables = n;		/* another table's: no need to look again */
	return false;
}

/* the key of a table whose key is one integer column (int_key), as int64 */
int64
pk_int_key(const PkTable *t, const Datum *keys)
{
	Assert(t->int_key);
	switch (t->keys[0].typid)
	{
		case INT2OID:
			return DatumGetInt16(keys[0]);
		case INT4OID:
			return DatumGetInt32(keys[0]);
		default:
			return DatumGetInt64(keys[0]);
	}
}

/*
 * The key columns of a row, as Datums pointing into the tuple.
 */
void
pk_row_key(const PkTable *t, MinimalTuple tup, Datum *keys)
{
	HeapTupleData htup;
	bool		isnull;

	htup.t_len = tup->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) tup - MINIMAL_TUPLE_OFFSET);
	ItemPointerSetInvalid(&htup.t_self);
	htup.t_tableOid = InvalidOid;
	for (int i = 0; i < t->nkeys; i++)
	{
		keys[i] = heap_getattr(&htup, t->keys[i].attnum, t->tupdesc, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("corrupt row in pkmerge table \"%s\": key column \"%s\" is null",
							t->relname,
							NameStr(TupleDescAttr(t->tupdesc, t->keys[i].attnum - 1)->attname)),
					 errdetail("A stored row has no value in a column of the primary key."),
					 errhint("Restore the table from a backup or a physical standby.")));
	}
}

/*
 * A key-only tuple (columns of keydesc), as stored in a run's block index.
 */
MinimalTuple
pk_key_form(const PkTable *t, const Datum *keys)
{
	bool		nulls[INDEX_MAX_KEYS] = {0};

	return heap_form_minimal_tuple(t->keydesc, (Datum *) keys, nulls, 0);
}

void
pk_key_deform(const PkTable *t, MinimalTuple keytup, Datum *keys)
{
	HeapTupleData htup;
	bool		nulls[INDEX_MAX_KEYS];

	htup.t_len = keytup->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) keytup - MINIMAL_TUPLE_OFFSET);
	heap_deform_tuple(&htup, t->keydesc, keys, nulls);
}

/*
 * Reject a row whose key has a NULL (SQLSTATE 23502, as a NOT NULL would).
 */
void
pk_check_key_not_null(const PkTable *t, MinimalTuple tup)
{
	HeapTupleData htup;

	htup.t_len = tup->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) tup - MINIMAL_TUPLE_OFFSET);
	for (int i = 0; i < t->nkeys; i++)
		if (heap_attisnull(&htup, t->keys[i].attnum, t->tupdesc))
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in primary key column \"%s\" of pkmerge table \"%s\"",
							NameStr(TupleDescAttr(t->tupdesc, t->keys[i].attnum - 1)->attname),
							t->relname),
					 errhint("Every row of a pkmerge table needs a complete primary key.")));
}

int
pk_key_cmp(const PkTable *t, const Datum *a, const Datum *b)
{
	return pk_key_cmp_n(t, a, b, t->nkeys);
}

/* compare the first n key columns */
int
pk_key_cmp_n(const PkTable *t, const Datum *a, const Datum *b, int n)
{
	for (int i = 0; i < n; i++)
	{
		int			c = ApplySortComparator(a[i], false, b[i], false,
											(SortSupport) &t->keys[i].ssup);

		if (c != 0)
			return c;
	}
	return 0;
}

uint32
pk_key_hash(const PkTable *t, const Datum *keys)
{
	uint32		h = 0;

	for (int i = 0; i < t->nkeys; i++)
	{
		uint32		kh;

		/* a type without hash function leaves the bloom filter unused */
		if (t->keys[i].hash.fn_oid == InvalidOid)
			continue;
		kh = DatumGetUInt32(FunctionCall1Coll((FmgrInfo *) &t->keys[i].hash,
											  t->keys[i].collation, keys[i]));
		h = (h << 1 | h >> 31) ^ kh;
	}
	return h;
}

/*
 * The key as text: "1001" for one column, "(1, x)" for several.
 */
char *
pk_key_text(const PkTable *t, const Datum *keys)
{
	StringInfoData buf;

	if (t->nkeys == 1)
		return OutputFunctionCall((FmgrInfo *) &t->keys[0].out, keys[0]);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int i = 0; i < t->nkeys; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "",
						 OutputFunctionCall((FmgrInfo *) &t->keys[i].out, keys[i]));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}
