/*-------------------------------------------------------------------------
 *
 * sql_publication.c
 *	  Keeps the extension's catalog out of publications.  Its tables (schema
 *	  pkchangelog) describe this server's storage: replicated, they would
 *	  fail a subscriber without the extension or overwrite the catalog of
 *	  one with it.  PostgreSQL 15 cannot leave a schema out of a FOR ALL
 *	  TABLES publication, so such a publication is refused in a database
 *	  where the extension is installed, as is the extension in a database
 *	  with one, and a publication of the catalog's tables or schema.
 *
 * Called from the object access hook (sql_ddl.c) when a publication, a
 * publication's table or schema, or the extension is created: every way
 * there, whatever statement took it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_publication_namespace.h"
#include "catalog/pg_publication_rel.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "sql_publication.h"

#define FOR_TABLE_HINT \
	"Publish the tables to replicate with FOR TABLE or FOR TABLES IN SCHEMA."

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

/* does a FOR ALL TABLES publication exist in this database? */
static char *
all_tables_publication(void)
{
	Relation	cat = table_open(PublicationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *name = NULL;

	ScanKeyInit(&key, Anum_pg_publication_puballtables, BTEqualStrategyNumber,
				F_BOOLEQ, BoolGetDatum(true));
	scan = systable_beginscan(cat, InvalidOid, false, SnapshotSelf, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		name = pstrdup(NameStr(((Form_pg_publication) GETSTRUCT(tup))->pubname));
	systable_endscan(scan);
	table_close(cat, AccessShareLock);
	return name;
}

static bool
extension_installed(void)
{
	return OidIsValid(get_extension_oid("pkchangelog", true));
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
 * The tables and schemas CREATE PUBLICATION gave the new publication
 * (added before its own hook runs, without hooks of their own).
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
		if (pub->puballtables && extension_installed())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("publication \"%s\" cannot be FOR ALL TABLES in a database where extension pkchangelog is installed",
							NameStr(pub->pubname)),
					 errdetail("It would publish the extension's catalog (schema %s), which describes this server's storage and must not reach a subscriber.",
							   PK_CATALOG_SCHEMA),
					 errhint(FOR_TABLE_HINT)));
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
	else if (classId == ExtensionRelationId)
	{
		char	   *pubname;

		tup = row_by_oid(ExtensionRelationId, ExtensionOidIndexId,
						 Anum_pg_extension_oid, objectId);
		if (tup == NULL ||
			strcmp(NameStr(((Form_pg_extension) GETSTRUCT(tup))->extname), "pkchangelog") != 0)
			return;
		pubname = all_tables_publication();
		if (pubname)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("extension pkchangelog cannot be installed in a database with FOR ALL TABLES publication \"%s\"",
							pubname),
					 errdetail("The publication would publish the extension's catalog (schema %s), which describes this server's storage and must not reach a subscriber.",
							   PK_CATALOG_SCHEMA),
					 errhint("Drop the publication and publish the tables with FOR TABLE or FOR TABLES IN SCHEMA.")));
	}
}
