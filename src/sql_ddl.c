/*-------------------------------------------------------------------------
 *
 * sql_ddl.c
 *	  DDL on pkmerge tables.  A ProcessUtility hook takes the table options
 *	  out of CREATE TABLE / ALTER TABLE (PostgreSQL 15 would validate them
 *	  with heap's list) and stores them in pg_class.reloptions, makes the
 *	  primary key a pkmerge_key index (however it is given: PRIMARY KEY,
 *	  the primary_key option, LIKE ... INCLUDING INDEXES; a pkmerge key
 *	  copied into another table becomes a btree), and refuses what pkmerge
 *	  does not support with a clear error.  An object access hook removes a
 *	  dropped table's catalog rows, refuses table rewrites other than
 *	  VACUUM FULL's, and has sql_publication.c keep the extension's catalog
 *	  out of publications.  A transaction callback gives back the missing
 *	  values of added columns that VACUUM FULL's swap clears.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_trigger.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "am_index.h"
#include "catalog.h"
#include "guc.h"
#include "maint_compaction.h"
#include "mat.h"
#include "pg_compat.h"
#include "sql_ddl.h"
#include "sql_publication.h"
#include "table_desc.h"
#include "table_options.h"

static ProcessUtility_hook_type prev_utility = NULL;

static void pk_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					   ProcessUtilityContext context, ParamListInfo params,
					   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc);
static object_access_hook_type prev_object_access = NULL;

/*
 * Is the utility statement running now a VACUUM FULL (and is it VERBOSE)?
 * Statements it runs in turn (an index expression's function calling SQL)
 * are not: each utility statement sets these for its own run.
 */
static bool in_vacuum_full = false;
static bool vacuum_full_verbose = false;

/*
 * Does a name in a statement not yet run denote a pkmerge table?  Looked
 * up without a lock: the statement itself takes the right one, and a
 * table dropped meanwhile fails there with PostgreSQL's own error.
 */
static bool
rangevar_is_pkmerge(RangeVar *rv)
{
	return rv && pk_relid_is_pkmerge(RangeVarGetRelid(rv, NoLock, true));
}

static void
not_supported(const char *what, const char *relname, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported on pkmerge table \"%s\"", what, relname),
			 hint ? errhint("%s", hint) : 0));
}

/* is the index a pkmerge table's key index (pkmerge_key)? */
static bool
index_is_key(Oid indexrelid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexrelid));
	Oid			am;

	if (!HeapTupleIsValid(tup))
		return false;
	am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	ReleaseSysCache(tup);
	return am == get_index_am_oid("pkmerge_key", true);
}

static bool
reindex_is_concurrent(ReindexStmt *stmt)
{
	ListCell   *lc;
	bool		concurrent = false;

	foreach(lc, stmt->params)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, "concurrently") == 0)
			concurrent = defGetBoolean(opt);
	}
	return concurrent;
}

/*
 * REINDEX TABLE ... CONCURRENTLY of a pkmerge table: each of its secondary
 * indexes, as REINDEX INDEX ... CONCURRENTLY, but those PostgreSQL's table
 * form skips with a warning (invalid ones, those of exclusion constraints,
 * which the index form refuses).  The key index has no entries to build:
 * REINDEX INDEX CONCURRENTLY of it (or of a schema or a database, which
 * PostgreSQL runs itself) puts a copy in its place, for nothing.
 * False if the statement is not one.
 */
static bool
reindex_table_concurrently(PlannedStmt *pstmt, const char *queryString,
						   ProcessUtilityContext context, ParamListInfo params,
						   QueryEnvironment *queryEnv, DestReceiver *dest,
						   QueryCompletion *qc)
{
	ReindexStmt *stmt = (ReindexStmt *) pstmt->utilityStmt;
	MemoryContext cxt = CurrentMemoryContext;	/* the portal's: survives */
	Oid			relid;
	List	   *indexes = NIL;
	Relation	rel;
	ListCell   *lc;

	if (stmt->kind != REINDEX_OBJECT_TABLE || !reindex_is_concurrent(stmt))
		return false;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid) || !pk_relid_is_pkmerge(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexoid = lfirst_oid(lc);
		char	   *nsp = get_namespace_name(RelationGetNamespace(rel));
		HeapTuple	itup;
		bool		valid;
		bool		exclusion;

		if (index_is_key(indexoid))
			continue;
		itup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(itup))
			elog(ERROR, "cache lookup failed for index %u", indexoid);
		valid = ((Form_pg_index) GETSTRUCT(itup))->indisvalid;
		exclusion = ((Form_pg_index) GETSTRUCT(itup))->indisexclusion;
		ReleaseSysCache(itup);
		/* what PostgreSQL's REINDEX TABLE ... CONCURRENTLY skips, it says */
		if (!valid)
			ereport(WARNING,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot reindex invalid index \"%s.%s\" concurrently, skipping",
							nsp, get_rel_name(indexoid))));
		else if (exclusion)
			ereport(WARNING,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot reindex exclusion constraint index \"%s.%s\" concurrently, skipping",
							nsp, get_rel_name(indexoid))));
		else
			indexes = lappend(indexes, makeRangeVar(nsp, get_rel_name(indexoid), -1));
	}
	table_close(rel, AccessShareLock);
	if (indexes == NIL)
		ereport(NOTICE,
				(errmsg("table \"%s\" has no indexes that can be reindexed concurrently",
						stmt->relation->relname)));
	foreach(lc, indexes)
	{
		PlannedStmt *one;
		ReindexStmt *r;

		/* (the one before committed: back to the portal's memory) */
		MemoryContextSwitchTo(cxt);
		one = copyObject(pstmt);
		r = (ReindexStmt *) one->utilityStmt;
		r->kind = REINDEX_OBJECT_INDEX;
		r->relation = lfirst(lc);
		/* each commits: it pops the snapshot the portal pushed */
		if (!ActiveSnapshotSet())
			PushActiveSnapshot(GetTransactionSnapshot());
		pk_utility(one, queryString, false, context, params, queryEnv, dest, qc);
	}
	return true;
}

#define KEY_CHANGE_HINT "The primary key of a pkmerge table cannot be changed: create a new table and copy the rows."

/* CLUSTER and ALTER TABLE ... CLUSTER ON */
#define CLUSTER_HINT "A pkmerge table's runs are always sorted by its primary key; VACUUM FULL merges them into one run and rewrites the file compactly."

/*
 * Does the pkmerge table's primary key have btree's operator classes?
 * PostgreSQL takes only those for the referenced key of a foreign key
 * (tablecmds.c, an internal error otherwise).  Key indexes built from
 * catalog 0.14 on have them (am_key_index.c); older ones get them from
 * ALTER EXTENSION pkchangelog UPDATE.
 */
static bool
key_has_btree_opclasses(Oid relid)
{
	Relation	pg_index = table_open(IndexRelationId, AccessShareLock);
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		btree = true;

	ScanKeyInit(&skey, Anum_pg_index_indrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(pg_index, IndexIndrelidIndexId, true, NULL, 1, &skey);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		oidvector  *indclass;

		if (!((Form_pg_index) GETSTRUCT(tup))->indisprimary)
			continue;
		indclass = (oidvector *) DatumGetPointer(heap_getattr(tup, Anum_pg_index_indclass,
															  RelationGetDescr(pg_index),
															  &isnull));
		for (int i = 0; i < indclass->dim1; i++)
		{
			HeapTuple	opc = SearchSysCache1(CLAOID, ObjectIdGetDatum(indclass->values[i]));

			if (!HeapTupleIsValid(opc))
				elog(ERROR, "cache lookup failed for operator class %u", indclass->values[i]);
			if (((Form_pg_opclass) GETSTRUCT(opc))->opcmethod != BTREE_AM_OID)
				btree = false;
			ReleaseSysCache(opc);
		}
	}
	systable_endscan(scan);
	table_close(pg_index, AccessShareLock);
	return btree;
}

/*
 * A foreign key referencing a pkmerge table whose key index still has the
 * extension's copies of btree's operator classes (made before catalog
 * 0.14): refused with the reason and the remedy, before PostgreSQL's
 * internal error.
 */
static void
refuse_fk_to_old_key(Constraint *c)
{
	Oid			relid;

	if (c->contype != CONSTR_FOREIGN || !rangevar_is_pkmerge(c->pktable))
		return;
	relid = RangeVarGetRelid(c->pktable, NoLock, true);
	if (!key_has_btree_opclasses(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("foreign keys referencing pkmerge table \"%s\" need the catalog of pkchangelog 0.14",
						c->pktable->relname),
				 errdetail("The table's primary key was made before 0.14, with operator classes PostgreSQL does not take for the referenced key of a foreign key."),
				 errhint("Run ALTER EXTENSION pkchangelog UPDATE.")));
}

/* every constraint of a CREATE TABLE, column-level ones included */
static List *
create_constraints(CreateStmt *stmt)
{
	List	   *result = list_copy(stmt->constraints);
	ListCell   *lc;

	foreach(lc, stmt->tableElts)
	{
		Node	   *elt = lfirst(lc);

		if (IsA(elt, Constraint))
			result = lappend(result, elt);
		else if (IsA(elt, ColumnDef))
			result = list_concat(result, ((ColumnDef *) elt)->constraints);
	}
	return result;
}

/* "a, b" from a list of column names, each quoted as needed */
static char *
key_string(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", quote_identifier(strVal(lfirst(lc))));
	return buf.data;
}

/*
 * Do two primary_key values name the same columns in the same order?
 * Compared as split identifiers, so that spacing and quoting ("a, b"
 * against "a,\"b\"") do not make a restored or LIKE-copied key look
 * different.
 */
static bool
same_key(const char *a, const char *b)
{
	List	   *la = pkopt_split_key(a);
	List	   *lb = pkopt_split_key(b);
	ListCell   *ca,
			   *cb;

	if (list_length(la) != list_length(lb))
		return false;
	forboth(ca, la, cb, lb)
		if (strcmp(lfirst(ca), lfirst(cb)) != 0)
		return false;
	return true;
}

static bool
list_member_str(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * Write a table's reloptions directly into pg_class.  PostgreSQL 15 would
 * validate them against heap's list (and reject every pkmerge option), so
 * the utility hook takes the options out of the statement, validates them
 * itself (table_options.c) and stores them here; pg_dump then reads them
 * back as WITH (...) and a restore gives them to this hook again.
 */
static void
set_reloptions(Oid relid, Datum newopts)
{
	Relation	pgclass = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	Datum		values[Natts_pg_class] = {0};
	bool		nulls[Natts_pg_class] = {0};
	bool		replace[Natts_pg_class] = {0};
	HeapTuple	newtup;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	replace[Anum_pg_class_reloptions - 1] = true;
	if (newopts != (Datum) 0)
		values[Anum_pg_class_reloptions - 1] = newopts;
	else
		nulls[Anum_pg_class_reloptions - 1] = true;
	newtup = heap_modify_tuple(tup, RelationGetDescr(pgclass), values, nulls, replace);
	CatalogTupleUpdate(pgclass, &newtup->t_self, newtup);
	table_close(pgclass, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * pg_class.relreplident of the table, as ALTER TABLE ... REPLICA IDENTITY
 * FULL or DEFAULT sets it (those forms mark no index).  A pkmerge table is
 * created FULL: its stream holds the complete old rows (-U, -D) anyway, and
 * with FULL logical decoding's clients receive them as old rows (pgoutput's
 * 'O', Debezium's "before"), not as a key (DESIGN §9).
 */
static void
set_replica_identity(Oid relid, char identity)
{
	Relation	pgclass = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tup);
	if (form->relreplident != identity)
	{
		form->relreplident = identity;
		CatalogTupleUpdate(pgclass, &tup->t_self, tup);
		CommandCounterIncrement();
	}
	heap_freetuple(tup);
	table_close(pgclass, RowExclusiveLock);
}

/*
 * The table's primary key index, or InvalidOid.  (RelationGetPrimaryKeyIndex
 * leaves out a DEFERRABLE one.)
 */
static Oid
primary_key_index(Relation rel)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		primary;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		primary = ((Form_pg_index) GETSTRUCT(tup))->indisprimary;
		ReleaseSysCache(tup);
		if (primary)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/*
 * The primary key a LIKE clause of a CREATE TABLE copies, as "a, b", or
 * NULL.  PostgreSQL copies a table's primary key with its indexes
 * (INCLUDING INDEXES, or ALL), as a cloned index statement run after the
 * table is created; *likes counts the LIKE clauses, so that the "needs a
 * primary key" error can point to INCLUDING INDEXES.  A source the caller
 * may not read is left to PostgreSQL's own error.
 */
static char *
like_primary_key(CreateStmt *stmt, int *likes)
{
	char	   *result = NULL;
	ListCell   *lc;

	*likes = 0;
	foreach(lc, stmt->tableElts)
	{
		TableLikeClause *like = lfirst(lc);
		Oid			srcid;
		Relation	src;
		Oid			pkindex;

		if (!IsA(like, TableLikeClause))
			continue;
		(*likes)++;
		if (!(like->options & CREATE_TABLE_LIKE_INDEXES) || result != NULL)
			continue;
		srcid = RangeVarGetRelid(like->relation, NoLock, true);
		if (!OidIsValid(srcid) ||
			pg_class_aclcheck(srcid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			continue;
		src = relation_open(srcid, AccessShareLock);
		pkindex = primary_key_index(src);
		if (OidIsValid(pkindex))
		{
			Relation	index = index_open(pkindex, AccessShareLock);
			List	   *names = NIL;

			for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(index); i++)
			{
				AttrNumber	attnum = index->rd_index->indkey.values[i];

				names = lappend(names, makeString(NameStr(TupleDescAttr(RelationGetDescr(src),
																		attnum - 1)->attname)));
			}
			result = key_string(names);
			index_close(index, AccessShareLock);
		}
		relation_close(src, AccessShareLock);
	}
	return result;
}

/* a CREATE TABLE's USING clause, or default_table_access_method without one */
static bool
is_pkmerge_am(const char *am)
{
	if (am == NULL)
		am = default_table_access_method;
	return am && strcmp(am, "pkmerge") == 0;
}

/*
 * CREATE TABLE ... USING pkmerge: returns the options to store once the
 * table exists; the statement is changed in place (options removed, the
 * primary key made a pkmerge_key index).
 */
static List *
prepare_create(CreateStmt *stmt)
{
	const char *relname = stmt->relation->relname;
	List	   *defs = pkopt_validate(stmt->options, true);
	const char *opt_key = pkopt_value(defs, "primary_key");
	char	   *constraint_key = NULL;
	char	   *like_key;
	int			likes;
	ListCell   *lc;

	if (stmt->partspec || stmt->partbound || stmt->inhRelations || stmt->ofTypename)
		not_supported("table partitioning, inheritance or OF type", relname,
					  "Create a stand-alone pkmerge table; partitions and inheritance need heap tables.");
	/*
	 * An unlogged table's file is reset after a crash, while the catalog
	 * rows of its runs, in logged tables, would survive it.
	 */
	if (stmt->relation->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unlogged pkmerge tables are not supported"),
				 errdetail("The catalog of a pkmerge table's runs is WAL-logged and would outlive the reset of an unlogged table's storage after a crash."),
				 errhint("Create table \"%s\" without UNLOGGED, or use a heap table.", relname)));

	foreach(lc, create_constraints(stmt))
	{
		Constraint *c = lfirst(lc);

		if (c->contype == CONSTR_PRIMARY)
		{
			List	   *keys = c->keys;

			/* column-level PRIMARY KEY names no columns: find its column */
			if (keys == NIL)
			{
				ListCell   *ec;

				foreach(ec, stmt->tableElts)
					if (IsA(lfirst(ec), ColumnDef) &&
						list_member_ptr(((ColumnDef *) lfirst(ec))->constraints, c))
						keys = list_make1(makeString(((ColumnDef *) lfirst(ec))->colname));
			}
			constraint_key = key_string(keys);
			c->access_method = "pkmerge_key";
		}
	}

	if (constraint_key && opt_key && !same_key(constraint_key, opt_key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("option primary_key = '%s' does not match PRIMARY KEY (%s) of table \"%s\"",
						opt_key, constraint_key, relname),
				 errhint("Name the same columns in both, or give only one of them.")));
	/* a primary key copied by LIKE ... INCLUDING INDEXES */
	like_key = like_primary_key(stmt, &likes);
	if (!constraint_key && like_key && opt_key && !same_key(like_key, opt_key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("option primary_key = '%s' does not match the primary key (%s) that LIKE copies into table \"%s\"",
						opt_key, like_key, relname),
				 errhint("Leave out the option, or copy with LIKE ... EXCLUDING INDEXES and declare the key.")));
	if (!constraint_key)
		constraint_key = like_key;
	if (!constraint_key && !opt_key)
	{
		/*
		 * As migration tools and Citus's alter_table_set_access_method do:
		 * the table first, its key second (handle_alter).  Until then it
		 * holds no rows.
		 */
		ereport(NOTICE,
				(errmsg("pkmerge table \"%s\" has no primary key yet", relname),
				 errdetail("It accepts rows once ALTER TABLE ... ADD PRIMARY KEY gives it one."),
				 likes > 0 ?
				 errhint("Declare PRIMARY KEY (...), give WITH (primary_key = '...'), or copy the source's primary key with LIKE ... INCLUDING INDEXES.") :
				 errhint("Declare PRIMARY KEY (...) or give WITH (primary_key = '...') to create it with one.")));
		stmt->options = NIL;
		return defs;
	}
	if (!opt_key)
		defs = lappend(defs, makeDefElem("primary_key",
										 (Node *) makeString(constraint_key), -1));

	/*
	 * A key given by the option alone gets the same key index as PRIMARY
	 * KEY (...) would make: key lookups, ON CONFLICT (key), NOT NULL key
	 * columns.  Not in a binary upgrade, whose dump adds the constraint
	 * itself with the index's preserved OID.
	 */
	if (!constraint_key && !IsBinaryUpgrade)
	{
		Constraint *c = makeNode(Constraint);

		c->contype = CONSTR_PRIMARY;
		c->location = -1;
		foreach(lc, pkopt_split_key(opt_key))
			c->keys = lappend(c->keys, makeString(lfirst(lc)));
		c->access_method = "pkmerge_key";
		stmt->tableElts = lappend(stmt->tableElts, c);
	}
	stmt->options = NIL;
	return defs;
}

/*
 * After CREATE TABLE: store the options (worker_enabled as
 * pkchangelog.default_worker_enabled says, unless given), check the key
 * columns exist, and make the replica identity FULL.
 */
static void
finish_create(CreateStmt *stmt, List *defs)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, false);
	Relation	rel;

	if (!pk_default_worker_enabled && pkopt_value(defs, "worker_enabled") == NULL)
		defs = lappend(defs, makeDefElem("worker_enabled", (Node *) makeString("false"), -1));
	set_reloptions(relid, pkopt_merge_reloptions((Datum) 0, defs, NIL));
	/* building the descriptor resolves the key columns, or fails */
	rel = table_open(relid, NoLock);
	(void) pk_table(rel);
	set_replica_identity(relid, REPLICA_IDENTITY_FULL);
	table_close(rel, NoLock);
}

/*
 * The full-compaction producer's changes of a snapshot are made at the
 * next compaction into the bottom level, as the net change of every key
 * written since the previous one.  Switching to or from it must not lose
 * those made under it nor repeat those another producer made: the switch
 * first compacts everything into the bottom level under the old producer,
 * in the ALTER TABLE's transaction (which holds the table exclusively).
 */
static void
switch_producer(Relation rel, PkTable *t, PkProducer producer)
{
	if (producer == t->opts.changelog_producer ||
		(producer != PK_PRODUCER_FULL_COMPACTION &&
		 t->opts.changelog_producer != PK_PRODUCER_FULL_COMPACTION))
		return;
	/* the compaction commits with the ALTER TABLE: it needs an xid */
	(void) GetCurrentTransactionId();
	(void) compact_table(rel, true, false);
}

/*
 * ALTER TABLE ... ADD PRIMARY KEY of the key a pkmerge table already has
 * an index for, as a restore of pg_dump's output does: its CREATE TABLE
 * carries the primary_key option, which builds the key index
 * (prepare_create), and the constraint follows.  The key index takes the
 * constraint's name (and is made again when the constraint's
 * deferrability differs).  Returns true when nothing is left to do.
 */
static bool
redefine_key(Oid relid, Oid pkindex, Constraint *c)
{
	Oid			conoid = get_index_constraint(pkindex);
	HeapTuple	tup;
	Form_pg_constraint con;
	bool		same;
	ObjectAddress addr;

	LockRelationOid(relid, AccessExclusiveLock);
	tup = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	con = (Form_pg_constraint) GETSTRUCT(tup);
	same = con->condeferrable == c->deferrable && con->condeferred == c->initdeferred;
	ReleaseSysCache(tup);
	if (same)
	{
		if (c->conname && strcmp(c->conname, get_rel_name(pkindex)) != 0)
			RenameRelationInternal(pkindex, c->conname, false, true);
		return true;
	}
	ObjectAddressSet(addr, ConstraintRelationId, conoid);
	performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
	return false;
}

/*
 * ALTER TABLE ... ADD PRIMARY KEY of a table created without a key: the
 * key becomes the table's (its primary_key option, stored before
 * PostgreSQL builds the constraint's pkmerge_key index, which checks it).
 * The table has never held a row: writes to it were refused.
 */
static void
adopt_key(AlterTableStmt *stmt, Constraint *c)
{
	Oid			relid;
	List	   *set;

	/* ownership checked before the lock, and again under it */
	relid = RangeVarGetRelidExtended(stmt->relation, AccessExclusiveLock, 0,
									 RangeVarCallbackOwnsRelation, NULL);
	set = list_make1(makeDefElem("primary_key", (Node *) makeString(key_string(c->keys)), -1));
	set_reloptions(relid, pkopt_merge_reloptions(pk_reloptions(relid), set, NIL));
	c->access_method = "pkmerge_key";
}

/*
 * ALTER TABLE on a pkmerge table: options are applied here and their
 * subcommands taken out of stmt; unsupported subcommands are refused.
 */
static void
handle_alter(AlterTableStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, stmt->missing_ok);
	const char *relname = stmt->relation->relname;
	List	   *keep = NIL;
	ListCell   *lc;
	bool		pkmerge = pk_relid_is_pkmerge(relid);

	/*
	 * ALTER TABLE needs ownership, which PostgreSQL checks before it locks
	 * the table; the subcommands below open it first, so check here, or a
	 * caller without the right would queue its lock behind the table's
	 * users (and everyone after it behind that) before being refused.
	 */
	if (pkmerge && !object_ownercheck(RelationRelationId, relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype == AT_AddConstraint && IsA(cmd->def, Constraint))
			refuse_fk_to_old_key((Constraint *) cmd->def);
		if (!pkmerge && OidIsValid(relid) && cmd->subtype == AT_SetRelOptions &&
			stmt->objtype == OBJECT_TABLE)
			pkopt_refuse_elsewhere((List *) cmd->def, relname, false);
		if (!pkmerge && OidIsValid(relid) &&
			(cmd->subtype == AT_AlterColumnType || cmd->subtype == AT_DropColumn))
			mat_check_alter_column(relid, cmd->name, cmd->subtype == AT_AlterColumnType ?
								   "ALTER COLUMN ... TYPE" : "DROP COLUMN");
		if (!pkmerge)
		{
			keep = lappend(keep, cmd);
			continue;
		}
		switch (cmd->subtype)
		{
			case AT_SetRelOptions:
			case AT_ResetRelOptions:
				{
					Relation	rel;
					PkTable    *t;
					List	   *set = NIL;
					List	   *reset = NIL;
					const char *newkey;
					Datum		merged;
					PkOptions	newopts;

					/* ownership checked before the lock, and again under it */
					relid = RangeVarGetRelidExtended(stmt->relation, AccessExclusiveLock, 0,
													 RangeVarCallbackOwnsRelation, NULL);
					rel = table_open(relid, NoLock);
					t = pk_table(rel);
					if (cmd->subtype == AT_SetRelOptions)
						set = pkopt_validate((List *) cmd->def, true);
					else
					{
						ListCell   *dc;

						foreach(dc, pkopt_validate((List *) cmd->def, false))
							reset = lappend(reset, ((DefElem *) lfirst(dc))->defname);
					}
					newkey = pkopt_value(set, "primary_key");
					if (newkey && t->nkeys == 0)
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("option primary_key cannot be set on pkmerge table \"%s\" after it is created",
										relname),
								 errhint("Add the key with ALTER TABLE %s ADD PRIMARY KEY (%s).",
										 quote_identifier(relname), newkey)));
					if ((newkey && !same_key(newkey, t->opts.primary_key)) ||
						list_member_str(reset, "primary_key"))
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("the primary key of pkmerge table \"%s\" cannot be changed",
										relname),
								 errhint("Create a new table and copy the rows.")));
					merged = pkopt_merge_reloptions(pk_reloptions(relid), set, reset);
					pkopt_parse(merged, &newopts);
					if (newopts.changelog_producer != t->opts.changelog_producer)
						mat_check_producer(relid, newopts.changelog_producer);
					switch_producer(rel, t, newopts.changelog_producer);
					set_reloptions(relid, merged);
					table_close(rel, NoLock);
				}
				break;
			case AT_AddConstraint:
				{
					Constraint *c = (Constraint *) cmd->def;

					if (c->contype == CONSTR_PRIMARY)
					{
						Relation	rel = table_open(relid, AccessShareLock);
						PkTable    *t = pk_table(rel);
						Oid			pkindex;

						if (c->indexname)
							not_supported("PRIMARY KEY USING INDEX", relname,
										  "A pkmerge table's primary key index is made by the table: declare PRIMARY KEY (...) without USING INDEX.");
						if (t->nkeys == 0)
						{
							table_close(rel, AccessShareLock);
							adopt_key(stmt, c);
							keep = lappend(keep, cmd);
							break;
						}
						if (!same_key(key_string(c->keys), t->opts.primary_key))
							ereport(ERROR,
									(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
									 errmsg("PRIMARY KEY (%s) does not match the key (%s) of pkmerge table \"%s\"",
											key_string(c->keys), t->opts.primary_key, relname),
									 errhint(KEY_CHANGE_HINT)));
						pkindex = primary_key_index(rel);
						table_close(rel, AccessShareLock);
						c->access_method = "pkmerge_key";
						if (OidIsValid(pkindex) && redefine_key(relid, pkindex, c))
							break;
					}
					keep = lappend(keep, cmd);
				}
				break;
			case AT_AddColumn:
				{
					ColumnDef  *def = (ColumnDef *) cmd->def;
					ListCell   *cc;

					foreach(cc, def->constraints)
					{
						Constraint *c = lfirst(cc);

						if (c->contype == CONSTR_PRIMARY)
							not_supported("adding a key column", relname,
										  "Add the column without PRIMARY KEY: a pkmerge table's key cannot change.");
						/*
						 * A column whose values must be computed for every
						 * row (a volatile default, serial, a domain with
						 * constraints) makes PostgreSQL rewrite the table,
						 * which refuse_rewrite stops; these say so earlier.
						 */
						if (c->contype == CONSTR_IDENTITY || c->contype == CONSTR_GENERATED)
							not_supported("ADD COLUMN with an identity or generated value", relname,
										  "Add a plain column, then set its values with UPDATE.");
					}
					keep = lappend(keep, cmd);
				}
				break;
			case AT_DropColumn:
				{
					Relation	rel = table_open(relid, AccessShareLock);
					PkTable    *t = pk_table(rel);

					for (int i = 0; i < t->nkeys; i++)
						if (strcmp(NameStr(TupleDescAttr(t->tupdesc, t->keys[i].attnum - 1)->attname),
								   cmd->name) == 0)
							not_supported("dropping a primary key column", relname, KEY_CHANGE_HINT);
					table_close(rel, AccessShareLock);
					keep = lappend(keep, cmd);
				}
				break;
			case AT_DropConstraint:
				{
					Relation	rel = table_open(relid, AccessShareLock);
					Oid			pkindex = primary_key_index(rel);

					if (OidIsValid(pkindex) && strcmp(get_rel_name(pkindex), cmd->name) == 0)
						not_supported("dropping the primary key", relname, KEY_CHANGE_HINT);
					table_close(rel, AccessShareLock);
					keep = lappend(keep, cmd);
				}
				break;
			case AT_AlterColumnType:
				not_supported("ALTER COLUMN ... TYPE", relname,
							  "Create a new table with the new type and copy the rows.");
				break;
			case AT_SetAccessMethod:
				not_supported("ALTER TABLE ... SET ACCESS METHOD", relname,
							  "Create a new table and copy the rows.");
				break;
			case AT_SetLogged:
			case AT_SetUnLogged:
				not_supported("ALTER TABLE ... SET LOGGED/UNLOGGED", relname,
							  "pkmerge tables are always logged: their runs' catalog rows are, and must agree with their pages after a crash.");
				break;
			case AT_SetTableSpace:
				not_supported("ALTER TABLE ... SET TABLESPACE", relname,
							  "Create a new table in the tablespace (CREATE TABLE ... USING pkmerge TABLESPACE ...) and copy the rows.");
				break;
			case AT_ClusterOn:
				not_supported("CLUSTER", relname, CLUSTER_HINT);
				break;
			case AT_AddInherit:
			case AT_AttachPartition:
				not_supported("inheritance and partitioning", relname, NULL);
				break;
			case AT_AddIdentity:
				not_supported("identity columns", relname,
							  "Give the column a sequence default instead: ALTER TABLE ... ALTER COLUMN ... SET DEFAULT nextval('...').");
				break;
			default:
				keep = lappend(keep, cmd);
				break;
		}
	}
	stmt->cmds = keep;
}

/*
 * RENAME of a key column: the stored primary_key follows the new name.
 */
static void
finish_rename(RenameStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	HeapTuple	tup;
	Datum		old;
	bool		isnull;
	PkOptions	opts;
	List	   *names;
	ListCell   *lc;
	bool		changed = false;

	if (!pk_relid_is_pkmerge(relid))
		return;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	old = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	old = isnull ? (Datum) 0 : datumCopy(old, false, -1);
	ReleaseSysCache(tup);
	pkopt_parse(old, &opts);
	if (opts.primary_key == NULL)
		return;
	names = pkopt_split_key(opts.primary_key);
	foreach(lc, names)
	{
		if (strcmp(lfirst(lc), stmt->subname) == 0)
		{
			lfirst(lc) = makeString(stmt->newname);
			changed = true;
		}
		else
			lfirst(lc) = makeString(lfirst(lc));
	}
	if (changed)
		set_reloptions(relid, pkopt_merge_reloptions(old,
													 list_make1(makeDefElem("primary_key",
																			(Node *) makeString(key_string(names)), -1)),
													 NIL));
}

/* VACUUM with the FULL option (its VERBOSE option in *verbose) */
static bool
is_vacuum_full(Node *parsetree, bool *verbose)
{
	VacuumStmt *stmt = (VacuumStmt *) parsetree;
	bool		full = false;
	ListCell   *lc;

	*verbose = false;
	if (!IsA(parsetree, VacuumStmt) || !stmt->is_vacuumcmd)
		return false;
	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, "full") == 0)
			full = defGetBoolean(opt);
		else if (strcmp(opt->defname, "verbose") == 0)
			*verbose = defGetBoolean(opt);
	}
	return full;
}

/* what VACUUM FULL reports of a pkmerge table: INFO under VERBOSE */
int
ddl_vacuum_full_elevel(void)
{
	return in_vacuum_full && vacuum_full_verbose ? INFO : DEBUG2;
}

/*
 * CREATE INDEX CONCURRENTLY of a secondary index of a pkmerge table: the
 * table's first one gives it row ids, in the transaction that creates the
 * index (am_index.c).  Locked and checked as PostgreSQL does next.
 */
static void
index_concurrently(IndexStmt *stmt, bool isTopLevel)
{
	Relation	rel;

	PreventInTransactionBlock(isTopLevel, "CREATE INDEX CONCURRENTLY");
	rel = table_open(RangeVarGetRelidExtended(stmt->relation, ShareUpdateExclusiveLock, 0,
											  RangeVarCallbackOwnsRelation, NULL),
					 NoLock);
	index_concurrent_first(rel);
	table_close(rel, NoLock);
}

/*
 * The ProcessUtility hook.  Before the standard processing it takes
 * pkmerge options out of CREATE/ALTER TABLE (and refuses what pkmerge
 * cannot do, before anything changes); after it, it stores the options
 * and builds the key index for the table now created.  Every statement
 * it does not refuse goes on to the previous hook (or the standard
 * processing), so extensions hooked before it (pg_stat_statements, Citus)
 * see it.  A VACUUM FULL is
 * marked while it runs, the one rewrite the object access hook lets
 * through (its copy is the table AM's, am_handler.c).
 */
static void
pk_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		   ProcessUtilityContext context, ParamListInfo params,
		   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree;
	List	   *create_defs = NIL;
	CreateStmt *create = NULL;
	RenameStmt *rename = NULL;
	CreateTrigStmt *trigger = NULL;
	const char *extension = NULL;
	bool		renames = false;
	bool		save_full;
	bool		save_verbose;

	/* statements are changed in place below: work on a copy */
	if (readOnlyTree)
		pstmt = copyObject(pstmt);
	parsetree = pstmt->utilityStmt;

	switch (nodeTag(parsetree))
	{
		case T_CreateStmt:
			{
				CreateStmt *stmt = (CreateStmt *) parsetree;
				ListCell   *lc;

				foreach(lc, create_constraints(stmt))
					refuse_fk_to_old_key(lfirst(lc));
				/* IF NOT EXISTS of an existing table: PostgreSQL skips it */
				if (stmt->if_not_exists &&
					OidIsValid(RangeVarGetRelid(stmt->relation, NoLock, true)))
					break;
				if (!is_pkmerge_am(stmt->accessMethod))
					pkopt_refuse_elsewhere(stmt->options, stmt->relation->relname, true);
				else
				{
					create_defs = prepare_create(stmt);
					create = stmt;
				}
			}
			break;
		case T_CreateTableAsStmt:
			{
				CreateTableAsStmt *stmt = (CreateTableAsStmt *) parsetree;

				if (stmt->objtype == OBJECT_TABLE && !is_pkmerge_am(stmt->into->accessMethod))
					pkopt_refuse_elsewhere(stmt->into->options, stmt->into->rel->relname, true);
				if (stmt->objtype == OBJECT_TABLE && is_pkmerge_am(stmt->into->accessMethod))
					not_supported("CREATE TABLE AS / SELECT INTO", stmt->into->rel->relname,
								  "Create the table with its PRIMARY KEY, then INSERT ... SELECT.");
				if (stmt->objtype == OBJECT_MATVIEW && is_pkmerge_am(stmt->into->accessMethod))
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("materialized views cannot use access method pkmerge"),
							 errhint("pkmerge stores tables with a primary key; create the materialized view with the default access method.")));
			}
			break;
		case T_AlterTableStmt:

			/*
			 * The subcommands handled here (pkmerge options) are taken
			 * out; the rest of the hook chain still sees the statement,
			 * with no subcommand if none is left (PostgreSQL then only
			 * locks the table it holds already, and reports ALTER TABLE).
			 */
			handle_alter((AlterTableStmt *) parsetree);
			break;
		case T_IndexStmt:
			{
				IndexStmt  *stmt = (IndexStmt *) parsetree;
				bool		on_pkmerge = rangevar_is_pkmerge(stmt->relation);
				bool		key_am = stmt->accessMethod &&
					strcmp(stmt->accessMethod, "pkmerge_key") == 0;

				/*
				 * An index statement already transformed comes from
				 * CREATE TABLE ... (LIKE src INCLUDING INDEXES), cloned from
				 * an index of src (see ProcessUtilitySlow).  A primary key
				 * copied into a pkmerge table becomes its key index; the key
				 * index of a pkmerge source copied into another table
				 * becomes a btree.
				 */
				if (stmt->transformed && stmt->primary && on_pkmerge && !key_am)
				{
					stmt->accessMethod = "pkmerge_key";
					stmt->options = NIL;	/* btree's options are not ours */
					key_am = true;
				}
				else if (stmt->transformed && stmt->primary && !on_pkmerge && key_am)
					stmt->accessMethod = DEFAULT_INDEX_TYPE;
				if (on_pkmerge && stmt->accessMethod &&
					strcmp(stmt->accessMethod, "brin") == 0)
					not_supported("a BRIN index", stmt->relation->relname,
								  "BRIN summarizes ranges of a table's blocks, and a pkmerge table's TIDs name row versions, not blocks: use a btree index.");
				if (on_pkmerge && !(stmt->primary && key_am) && stmt->concurrent)
					index_concurrently(stmt, context == PROCESS_UTILITY_TOPLEVEL);
			}
			break;
		case T_ReindexStmt:
			if (reindex_table_concurrently(pstmt, queryString, context, params,
										   queryEnv, dest, qc))
				return;
			break;
		case T_ClusterStmt:
			{
				ClusterStmt *stmt = (ClusterStmt *) parsetree;

				/*
				 * PostgreSQL would refuse the key index (not clusterable) or
				 * the missing clustered index, or else rewrite the table
				 * (refuse_rewrite): say what CLUSTER means here instead.
				 */
				if (rangevar_is_pkmerge(stmt->relation))
					not_supported("CLUSTER", stmt->relation->relname, CLUSTER_HINT);
			}
			break;
		case T_CreateTrigStmt:
			trigger = (CreateTrigStmt *) parsetree;
			break;
		case T_CopyStmt:
			/* a subscription's initial copy of a catalog table: no rows */
			publication_copy_check((CopyStmt *) parsetree);
			break;
		case T_CreateExtensionStmt:
			extension = ((CreateExtensionStmt *) parsetree)->extname;
			break;
		case T_AlterExtensionStmt:
			extension = ((AlterExtensionStmt *) parsetree)->extname;
			break;
		case T_AlterObjectSchemaStmt:
		case T_AlterEnumStmt:
			renames = true;
			break;
		case T_RenameStmt:
			renames = true;
			if (((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
			{
				rename = (RenameStmt *) parsetree;
				if (rename->relationType == OBJECT_TABLE)
					mat_check_alter_column(RangeVarGetRelid(rename->relation, NoLock, true),
										   rename->subname, "RENAME a column");
			}
			break;
		default:
			break;
	}

	/* the aggregates' queries by OID, which the rename leaves right */
	if (renames)
		mat_own_trees();
	save_full = in_vacuum_full;
	save_verbose = vacuum_full_verbose;
	in_vacuum_full = is_vacuum_full(parsetree, &vacuum_full_verbose);
	PG_TRY();
	{
		if (prev_utility)
			prev_utility(pstmt, queryString, false, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, false, context, params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		in_vacuum_full = save_full;
		vacuum_full_verbose = save_verbose;
	}
	PG_END_TRY();

	if (create)
		finish_create(create, create_defs);
	if (rename)
		finish_rename(rename);
	/* a materialized aggregate's trigger makes it one */
	if (trigger)
		mat_trigger_created(trigger);
	/* its arguments name what the query reads as it is now named */
	if (renames)
		mat_refresh_triggers();
	/* the catalog's tables, new ones too, are never decoded */
	if (extension && strcmp(extension, PK_EXTENSION_NAME) == 0)
		publication_hide_catalog();
}

/*
 * A relation just created as the new storage of a table being rewritten
 * (make_new_heap: ALTER TABLE commands that compute every row again,
 * VACUUM FULL, CLUSTER): PostgreSQL would copy the rows into it through
 * the table AM under the new relation's OID, then swap the files.  A
 * pkmerge table keeps its runs' catalog rows under its own OID, so neither
 * direction can work: refuse, before a row is copied.  Commands known to
 * rewrite are refused earlier with more precise messages (handle_alter,
 * CLUSTER); this catches every other way there, present or future.
 * VACUUM FULL is the exception: its copy (pk_relation_copy_for_cluster)
 * moves the table's runs into the new storage under the table's own OID.
 */
static void
refuse_rewrite(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	Oid			old;
	bool		to_pkmerge;

	if (!RelationIsValid(rel))
		return;
	old = rel->rd_rel->relrewrite;
	to_pkmerge = OidIsValid(pk_table_am_oid()) && rel->rd_rel->relam == pk_table_am_oid();
	RelationClose(rel);
	if (!OidIsValid(old))
		return;
	if (in_vacuum_full && to_pkmerge && pk_relid_is_pkmerge(old))
		return;
	if (pk_relid_is_pkmerge(old))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rewriting pkmerge table \"%s\" is not supported", get_rel_name(old)),
				 errdetail("Commands that compute every row again are refused: adding a column whose value is computed per row (serial, a volatile default, a domain with constraints), changing a column's type or the table's access method or persistence, CLUSTER."),
				 errhint("Add a column without a default, then set its values with UPDATE and its default with ALTER TABLE ... ALTER COLUMN ... SET DEFAULT.")));
	if (to_pkmerge)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" cannot be rewritten into a pkmerge table", get_rel_name(old)),
				 errhint("Create a pkmerge table with a primary key and copy the rows with INSERT ... SELECT.")));
}

/*
 * The object access hook catches what the utility hook cannot see by
 * statement: every creation of a relation (a rewrite's transient table
 * names the table it rewrites in relrewrite, however the rewrite was
 * reached) and every drop of a pkmerge table, including by DROP SCHEMA ...
 * CASCADE or DROP OWNED, whose catalog rows go in the dropping transaction.
 */
static void
pk_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
				 void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access == OAT_POST_CREATE && classId == RelationRelationId && subId == 0)
		refuse_rewrite(objectId);
	/* publications never take the extension's catalog */
	if (access == OAT_POST_CREATE)
		publication_check_created(classId, objectId);
	/* DROP TABLE: its catalog rows go in the same transaction */
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		pk_relid_is_pkmerge(objectId))
		cat_drop_table(objectId);
	/* DROP TABLE of a materialized aggregate: no longer maintained */
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0)
		mat_dropped(objectId);
	if (access == OAT_DROP && classId == TriggerRelationId)
		mat_trigger_dropped(objectId);
	/* a deferrable trigger on a table that maintenance writes */
	if ((access == OAT_POST_CREATE || access == OAT_POST_ALTER) &&
		classId == TriggerRelationId && subId == 0)
		mat_trigger_check(objectId);
}

/*
 * VACUUM FULL copies a pkmerge table's runs as they are: rows written
 * before an ALTER TABLE ... ADD COLUMN with a default still lack the
 * column, which reads as the column's missing value (attmissingval).
 * PostgreSQL's finish_heap_swap then clears every missing value, since
 * heap's rewrite wrote each row whole; those rows would read NULL.  The
 * copy (am_handler.c) keeps them here, and the transaction puts them back
 * before it commits, so the rewrite and the restore commit together.
 */
typedef struct KeptMissing
{
	Oid			relid;
	AttrNumber	attnum;
	Datum		value;			/* attmissingval, a one-element array */
} KeptMissing;

static List *kept_missing = NIL;	/* in TopTransactionContext */

void
ddl_keep_missing_values(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		HeapTuple	tup;
		Datum		value;
		bool		isnull;

		if (!att->atthasmissing || att->attisdropped)
			continue;
		tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(RelationGetRelid(rel)),
							  Int16GetDatum(att->attnum));
		if (!HeapTupleIsValid(tup))
			continue;
		value = SysCacheGetAttr(ATTNUM, tup, Anum_pg_attribute_attmissingval, &isnull);
		if (!isnull)
		{
			KeptMissing *k = palloc(sizeof(KeptMissing));

			k->relid = RelationGetRelid(rel);
			k->attnum = att->attnum;
			k->value = datumCopy(value, false, -1);
			kept_missing = lappend(kept_missing, k);
		}
		ReleaseSysCache(tup);
	}
	MemoryContextSwitchTo(old);
}

static void
restore_missing_values(void)
{
	Relation	attrel;
	ListCell   *lc;

	/* the rewrite's clearing of them, visible */
	CommandCounterIncrement();
	attrel = table_open(AttributeRelationId, RowExclusiveLock);
	foreach(lc, kept_missing)
	{
		KeptMissing *k = lfirst(lc);
		HeapTuple	tup = SearchSysCacheCopy2(ATTNUM, ObjectIdGetDatum(k->relid),
											  Int16GetDatum(k->attnum));
		Datum		values[Natts_pg_attribute] = {0};
		bool		nulls[Natts_pg_attribute] = {0};
		bool		replace[Natts_pg_attribute] = {0};
		HeapTuple	newtup;

		if (!HeapTupleIsValid(tup) || ((Form_pg_attribute) GETSTRUCT(tup))->atthasmissing)
			continue;
		values[Anum_pg_attribute_atthasmissing - 1] = BoolGetDatum(true);
		replace[Anum_pg_attribute_atthasmissing - 1] = true;
		values[Anum_pg_attribute_attmissingval - 1] = k->value;
		replace[Anum_pg_attribute_attmissingval - 1] = true;
		newtup = heap_modify_tuple(tup, RelationGetDescr(attrel), values, nulls, replace);
		CatalogTupleUpdate(attrel, &newtup->t_self, newtup);
	}
	table_close(attrel, RowExclusiveLock);
}

static void
ddl_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT && kept_missing != NIL)
		restore_missing_values();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		kept_missing = NIL;
}

void
ddl_init(void)
{
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = pk_utility;
	prev_object_access = object_access_hook;
	object_access_hook = pk_object_access;
	RegisterXactCallback(ddl_xact_callback, NULL);
}
