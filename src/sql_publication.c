/*-------------------------------------------------------------------------
 *
 * sql_publication.c
 *	  Keeps the extension's catalog out of logical replication.  Its tables
 *	  (schema pkchangelog) describe this server's storage: replicated, they
 *	  would fail a subscriber without the extension or overwrite the
 *	  catalog of one with it.  PostgreSQL 15 cannot leave a schema out of
 *	  a FOR ALL TABLES publication (which Debezium creates by default), so:
 *
 *	  - the catalog's tables are never decoded (publication_hide_catalog);
 *	  - a subscription's initial copy of them copies no row
 *		(publication_copy_check);
 *	  - a publication of the catalog's tables or schema by name is refused.
 *
 *	  This file owns those checks, and nothing of pkmerge tables, whose
 *	  changes decode as their own rows.  sql_ddl.c's hooks call it: object
 *	  access when a publication, a publication's table or schema, or the
 *	  extension is created (every way there, whatever statement took it),
 *	  utility for CREATE and ALTER EXTENSION and for COPY.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_publication_namespace.h"
#include "catalog/pg_publication_rel.h"
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "replication/walsender.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "sql_publication.h"

/*
 * The row of catalog catid whose oid is oid, as this command left it (the
 * hook runs before the command's changes are visible to MVCC snapshots),
 * or NULL.  The copy is palloc'd.
 */
static HeapTuple
row_by_oid(Oid catid, Oid indexid, AttrNumber oidatt, Oid oid)
{
	Relation	cat = table_open(catid, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key, oidatt, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(oid));
	scan = systable_beginscan(cat, indexid, true, SnapshotSelf, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		tup = heap_copytuple(tup);
	systable_endscan(scan);
	table_close(cat, AccessShareLock);
	return tup;
}

static bool
extension_installed(void)
{
	return OidIsValid(get_extension_oid(PK_EXTENSION_NAME, true));
}

static bool
is_catalog_schema(Oid nspid)
{
	char	   *name = get_namespace_name(nspid);

	return name != NULL && strcmp(name, PK_CATALOG_SCHEMA) == 0 && extension_installed();
}

static void
refuse_table(Oid relid)
{
	if (is_catalog_schema(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s.%s\" of extension pkchangelog's catalog cannot be published",
						PK_CATALOG_SCHEMA, get_rel_name(relid)),
				 errdetail("The catalog describes this server's storage and must not reach a subscriber; a pkmerge table's changes are decoded as its own rows."),
				 errhint("Publish the pkmerge tables themselves.")));
}

static void
refuse_schema(Oid nspid)
{
	if (is_catalog_schema(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("schema \"%s\" of extension pkchangelog's catalog cannot be published",
						PK_CATALOG_SCHEMA),
				 errdetail("The catalog describes this server's storage and must not reach a subscriber; a pkmerge table's changes are decoded as its own rows."),
				 errhint("Publish the schemas that hold the pkmerge tables.")));
}

/*
 * relrewrite = relid, in place, unless set.  Written in place, as VACUUM
 * writes relpages, and not as a new row version: the historic snapshots of
 * decoding then see it for changes already in WAL too.
 */
static void
mark_not_decoded(Relation pgclass, Oid relid)
{
	ScanKeyData key;
	HeapTuple	tup;
	void	   *state;
	Form_pg_class form;

	ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	systable_inplace_update_begin(pgclass, ClassOidIndexId, true, NULL, 1, &key,
								  &tup, &state);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tup);
	if (OidIsValid(form->relrewrite))
		systable_inplace_update_cancel(state);
	else
	{
		form->relrewrite = relid;
		systable_inplace_update_finish(state, tup);
	}
	heap_freetuple(tup);
}

/*
 * Marks every table of the extension's catalog, and its TOAST table, so
 * that logical decoding passes over their changes: as logical decoding
 * marks the transient tables of a rewrite (pg_class.relrewrite set, here
 * to the table's own OID), whose changes the reorder buffer passes over
 * for every output plugin (reorderbuffer.c), unless a plugin asks for
 * rewrites (test_decoding's include-rewrites).  CREATE EXTENSION, ALTER
 * EXTENSION and every new FOR ALL TABLES publication set it on the tables
 * that lack it (after pg_upgrade, which creates the tables anew, the
 * publications' restore does).
 */
void
publication_hide_catalog(void)
{
	Oid			nspid = get_namespace_oid(PK_CATALOG_SCHEMA, true);
	Relation	pgclass;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *relids = NIL;
	ListCell   *lc;

	if (!OidIsValid(nspid) || !extension_installed())
		return;
	pgclass = table_open(RelationRelationId, RowExclusiveLock);
	ScanKeyInit(&key, Anum_pg_class_relnamespace, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(nspid));
	scan = systable_beginscan(pgclass, ClassNameNspIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);

		if (form->relkind != RELKIND_RELATION)
			continue;
		relids = lappend_oid(relids, form->oid);
		if (OidIsValid(form->reltoastrelid))
			relids = lappend_oid(relids, form->reltoastrelid);
	}
	systable_endscan(scan);
	foreach(lc, relids)
		mark_not_decoded(pgclass, lfirst_oid(lc));
	table_close(pgclass, RowExclusiveLock);
}

/*
 * COPY of a catalog table over a replication connection (a subscription's
 * initial copy of the tables its publications list) copies no row: the
 * statement becomes a COPY of a query over the same columns that returns
 * none.  Any other COPY is left as it is.
 */
void
publication_copy_check(CopyStmt *stmt)
{
	Oid			relid;
	StringInfoData sql;
	ListCell   *lc;

	if (!am_walsender || stmt->is_from || stmt->relation == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid) || !is_catalog_schema(get_rel_namespace(relid)))
		return;
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	if (stmt->attlist == NIL)
		appendStringInfoChar(&sql, '*');
	foreach(lc, stmt->attlist)
		appendStringInfo(&sql, "%s%s", lc == list_head(stmt->attlist) ? "" : ", ",
						 quote_identifier(strVal(lfirst(lc))));
	appendStringInfo(&sql, " FROM %s WHERE false",
					 quote_qualified_identifier(PK_CATALOG_SCHEMA, get_rel_name(relid)));
	stmt->query = ((RawStmt *) linitial(raw_parser(sql.data, RAW_PARSE_DEFAULT)))->stmt;
	stmt->relation = NULL;
	stmt->attlist = NIL;
}

/*
 * The tables and schemas CREATE PUBLICATION gave the new publication
 * (added before its own hook runs, without hooks of their own): read with
 * SnapshotSelf, as this command's rows are not yet visible to MVCC.
 */
static void
refuse_members(Oid pubid)
{
	Relation	cat;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	cat = table_open(PublicationRelRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_publication_rel_prpubid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(pubid));
	scan = systable_beginscan(cat, InvalidOid, false, SnapshotSelf, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		refuse_table(((Form_pg_publication_rel) GETSTRUCT(tup))->prrelid);
	systable_endscan(scan);
	table_close(cat, AccessShareLock);

	cat = table_open(PublicationNamespaceRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_publication_namespace_pnpubid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(pubid));
	scan = systable_beginscan(cat, InvalidOid, false, SnapshotSelf, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		refuse_schema(((Form_pg_publication_namespace) GETSTRUCT(tup))->pnnspid);
	systable_endscan(scan);
	table_close(cat, AccessShareLock);
}

void
publication_check_created(Oid classId, Oid objectId)
{
	HeapTuple	tup;

	if (classId == PublicationRelationId)
	{
		Form_pg_publication pub;

		tup = row_by_oid(PublicationRelationId, PublicationObjectIndexId,
						 Anum_pg_publication_oid, objectId);
		if (tup == NULL)
			return;
		pub = (Form_pg_publication) GETSTRUCT(tup);
		if (pub->puballtables)
			publication_hide_catalog();
		refuse_members(objectId);
	}
	else if (classId == PublicationRelRelationId)
	{
		tup = row_by_oid(PublicationRelRelationId, PublicationRelObjectIndexId,
						 Anum_pg_publication_rel_oid, objectId);
		if (tup != NULL)
			refuse_table(((Form_pg_publication_rel) GETSTRUCT(tup))->prrelid);
	}
	else if (classId == PublicationNamespaceRelationId)
	{
		tup = row_by_oid(PublicationNamespaceRelationId, PublicationNamespaceObjectIndexId,
						 Anum_pg_publication_namespace_oid, objectId);
		if (tup != NULL)
			refuse_schema(((Form_pg_publication_namespace) GETSTRUCT(tup))->pnnspid);
	}
}
