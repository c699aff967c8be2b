/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  DDL on pkmerge tables.  A ProcessUtility hook takes the table options
 *	  out of CREATE TABLE / ALTER TABLE (PostgreSQL 15 would validate them
 *	  with heap's list) and stores them in pg_class.reloptions, makes the
 *	  primary key a pkmerge_key index, and refuses what pkmerge does not
 *	  support with a clear error.  An object access hook removes a dropped
 *	  table's catalog rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "ddl.h"
#include "options.h"
#include "pktable.h"

static ProcessUtility_hook_type prev_utility = NULL;
static object_access_hook_type prev_object_access = NULL;

static bool
relid_is_pkmerge(Oid relid)
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

static bool
rangevar_is_pkmerge(RangeVar *rv)
{
	return rv && relid_is_pkmerge(RangeVarGetRelid(rv, NoLock, true));
}

static void
not_supported(const char *what, const char *relname, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported on pkmerge table \"%s\"", what, relname),
			 hint ? errhint("%s", hint) : 0));
}

static void
refuse_fk_to_pkmerge(Constraint *c)
{
	if (c->contype == CONSTR_FOREIGN && rangevar_is_pkmerge(c->pktable))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("foreign keys referencing pkmerge table \"%s\" are not supported",
						c->pktable->relname),
				 errdetail("PostgreSQL 15 accepts only b-tree keys as targets of foreign keys."),
				 errhint("Check the reference in the application or with a trigger.")));
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
	ListCell   *lc;

	if (stmt->partspec || stmt->partbound || stmt->inhRelations || stmt->ofTypename)
		not_supported("table partitioning, inheritance or OF type", relname, NULL);
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
		else if (c->contype == CONSTR_UNIQUE || c->contype == CONSTR_EXCLUSION)
			not_supported("a UNIQUE or EXCLUDE constraint", relname,
						  "A pkmerge table's only index is its primary key.");
	}

	if (constraint_key && opt_key && !same_key(constraint_key, opt_key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("option primary_key = '%s' does not match PRIMARY KEY (%s) of table \"%s\"",
						opt_key, constraint_key, relname)));
	if (!constraint_key && !opt_key)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("pkmerge table \"%s\" needs a primary key", relname),
				 errhint("Declare PRIMARY KEY (...) or give WITH (primary_key = '...').")));
	if (!opt_key)
		defs = lappend(defs, makeDefElem("primary_key",
										 (Node *) makeString(constraint_key), -1));
	stmt->options = NIL;
	return defs;
}

/*
 * After CREATE TABLE: store the options, and check the key columns exist.
 */
static void
finish_create(CreateStmt *stmt, List *defs)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, false);
	Relation	rel;

	set_reloptions(relid, pkopt_merge_reloptions((Datum) 0, defs, NIL));
	/* building the descriptor resolves the key columns, or fails */
	rel = table_open(relid, NoLock);
	(void) pk_table(rel);
	table_close(rel, NoLock);
}

/*
 * ALTER TABLE on a pkmerge table: options are applied here; unsupported
 * subcommands are refused.  Returns false when no subcommand is left for
 * PostgreSQL to run.
 */
static bool
handle_alter(AlterTableStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, stmt->missing_ok);
	const char *relname = stmt->relation->relname;
	List	   *keep = NIL;
	ListCell   *lc;
	bool		pkmerge = relid_is_pkmerge(relid);

	/*
	 * ALTER TABLE needs ownership, which PostgreSQL checks before it locks
	 * the table; the subcommands below open it first, so check here, or a
	 * caller without the right would queue its lock behind the table's
	 * users (and everyone after it behind that) before being refused.
	 */
	if (pkmerge && !pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype == AT_AddConstraint && IsA(cmd->def, Constraint))
			refuse_fk_to_pkmerge((Constraint *) cmd->def);
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
					bool		isnull;
					HeapTuple	tup;
					Datum		old;
					List	   *set = NIL;
					List	   *reset = NIL;
					const char *newkey;

					/* ownership checked before the lock, and again under it */
					relid = RangeVarGetRelidExtended(stmt->relation, AccessExclusiveLock, 0,
													 RangeVarCallbackOwnsTable, NULL);
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
					if ((newkey && !same_key(newkey, t->opts.primary_key)) ||
						list_member_str(reset, "primary_key"))
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("the primary key of pkmerge table \"%s\" cannot be changed",
										relname),
								 errhint("Create a new table and copy the rows.")));
					tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
					old = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
					old = isnull ? (Datum) 0 : datumCopy(old, false, -1);
					ReleaseSysCache(tup);
					set_reloptions(relid, pkopt_merge_reloptions(old, set, reset));
					table_close(rel, NoLock);
				}
				break;
			case AT_AddConstraint:
			case AT_AddConstraintRecurse:
				{
					Constraint *c = (Constraint *) cmd->def;

					if (c->contype == CONSTR_PRIMARY)
					{
						Relation	rel = table_open(relid, AccessShareLock);
						PkTable    *t = pk_table(rel);

						if (c->indexname)
							not_supported("PRIMARY KEY USING INDEX", relname, NULL);
						if (!same_key(key_string(c->keys), t->opts.primary_key))
							ereport(ERROR,
									(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
									 errmsg("PRIMARY KEY (%s) does not match the key (%s) of pkmerge table \"%s\"",
											key_string(c->keys), t->opts.primary_key, relname)));
						table_close(rel, AccessShareLock);
						c->access_method = "pkmerge_key";
					}
					else if (c->contype == CONSTR_UNIQUE || c->contype == CONSTR_EXCLUSION)
						not_supported("a UNIQUE or EXCLUDE constraint", relname,
									  "A pkmerge table's only index is its primary key.");
					keep = lappend(keep, cmd);
				}
				break;
			case AT_AddColumn:
			case AT_AddColumnRecurse:
				{
					ColumnDef  *def = (ColumnDef *) cmd->def;
					ListCell   *cc;

					foreach(cc, def->constraints)
					{
						Constraint *c = lfirst(cc);

						if (c->contype == CONSTR_PRIMARY || c->contype == CONSTR_UNIQUE)
							not_supported("adding a key column", relname, NULL);
						/*
						 * A column whose values must be computed for every
						 * row (a volatile default, serial, a domain with
						 * constraints) makes PostgreSQL rewrite the table,
						 * which refuse_rewrite stops; these say so earlier.
						 */
						if (c->contype == CONSTR_IDENTITY || c->contype == CONSTR_GENERATED)
							not_supported("ADD COLUMN with an identity or generated value", relname, NULL);
					}
					keep = lappend(keep, cmd);
				}
				break;
			case AT_DropColumn:
			case AT_DropColumnRecurse:
				{
					Relation	rel = table_open(relid, AccessShareLock);
					PkTable    *t = pk_table(rel);

					for (int i = 0; i < t->nkeys; i++)
						if (strcmp(NameStr(TupleDescAttr(t->tupdesc, t->keys[i].attnum - 1)->attname),
								   cmd->name) == 0)
							not_supported("dropping a primary key column", relname, NULL);
					table_close(rel, AccessShareLock);
					keep = lappend(keep, cmd);
				}
				break;
			case AT_DropConstraint:
			case AT_DropConstraintRecurse:
				{
					Relation	rel = table_open(relid, AccessShareLock);
					Oid			pkindex = RelationGetPrimaryKeyIndex(rel);

					if (OidIsValid(pkindex) && strcmp(get_rel_name(pkindex), cmd->name) == 0)
						not_supported("dropping the primary key", relname, NULL);
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
				not_supported("ALTER TABLE ... SET TABLESPACE", relname, NULL);
				break;
			case AT_ClusterOn:
				not_supported("CLUSTER", relname, NULL);
				break;
			case AT_AddInherit:
			case AT_AttachPartition:
				not_supported("inheritance and partitioning", relname, NULL);
				break;
			case AT_AddIdentity:
				not_supported("identity columns", relname, NULL);
				break;
			default:
				keep = lappend(keep, cmd);
				break;
		}
	}
	stmt->cmds = keep;
	return keep != NIL;
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

	if (!relid_is_pkmerge(relid))
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

static void
pk_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		   ProcessUtilityContext context, ParamListInfo params,
		   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree;
	List	   *create_defs = NIL;
	CreateStmt *create = NULL;
	RenameStmt *rename = NULL;

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
					refuse_fk_to_pkmerge(lfirst(lc));
				if (is_pkmerge_am(stmt->accessMethod) &&
					!(stmt->if_not_exists &&
					  OidIsValid(RangeVarGetRelid(stmt->relation, NoLock, true))))
				{
					create_defs = prepare_create(stmt);
					create = stmt;
				}
			}
			break;
		case T_CreateTableAsStmt:
			{
				CreateTableAsStmt *stmt = (CreateTableAsStmt *) parsetree;

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
			if (!handle_alter((AlterTableStmt *) parsetree))
				return;
			break;
		case T_IndexStmt:
			{
				IndexStmt  *stmt = (IndexStmt *) parsetree;

				if (rangevar_is_pkmerge(stmt->relation) &&
					!(stmt->primary && stmt->accessMethod &&
					  strcmp(stmt->accessMethod, "pkmerge_key") == 0))
					not_supported("CREATE INDEX", stmt->relation->relname,
								  "A pkmerge table's only index is its primary key, which serves key lookups, ranges and ORDER BY.");
			}
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
				rename = (RenameStmt *) parsetree;
			break;
		default:
			break;
	}

	if (prev_utility)
		prev_utility(pstmt, queryString, false, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, false, context, params, queryEnv, dest, qc);

	if (create)
		finish_create(create, create_defs);
	if (rename)
		finish_rename(rename);
}

/*
 * A relation just created as the new storage of a table being rewritten
 * (make_new_heap: ALTER TABLE commands that compute every row again,
 * VACUUM FULL, CLUSTER): PostgreSQL would copy the rows into it through
 * the table AM under the new relation's OID, then swap the files.  A
 * pkmerge table keeps its runs' catalog rows under its own OID, so neither
 * direction can work: refuse, before a row is copied.  Commands known to
 * rewrite are refused earlier with more precise messages (handle_alter);
 * this catches every other way there, present or future.
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
	if (relid_is_pkmerge(old))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rewriting pkmerge table \"%s\" is not supported", get_rel_name(old)),
				 errdetail("Commands that compute every row again are refused: adding a column whose value is computed per row (serial, a volatile default, a domain with constraints), changing a column's type or the table's access method or persistence, VACUUM FULL, CLUSTER."),
				 errhint("Add a column without a default, then set its values with UPDATE and its default with ALTER TABLE ... ALTER COLUMN ... SET DEFAULT.")));
	if (to_pkmerge)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" cannot be rewritten into a pkmerge table", get_rel_name(old)),
				 errhint("Create a pkmerge table with a primary key and copy the rows with INSERT ... SELECT.")));
}

static void
pk_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
				 void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access == OAT_POST_CREATE && classId == RelationRelationId && subId == 0)
		refuse_rewrite(objectId);
	/* DROP TABLE: its catalog rows go in the same transaction */
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		relid_is_pkmerge(objectId))
		cat_drop_table(objectId);
}

void
ddl_init(void)
{
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = pk_utility;
	prev_object_access = object_access_hook;
	object_access_hook = pk_object_access;
}
