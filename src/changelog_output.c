/*-------------------------------------------------------------------------
 *
 * changelog_output.c
 *	  The pkchangelog logical decoding output plugin (DESIGN §9): every
 *	  decoded change as RowKinds, one line (or JSON object) per RowKind,
 *	  framed by BEGIN and COMMIT.
 *
 *	    public.orders -U order_id[bigint]:1001 store_id[bigint]:10 amount[numeric]:100.00
 *	    public.orders +U order_id[bigint]:1001 store_id[bigint]:10 amount[numeric]:80.00
 *
 *	  This file owns the rendering only.  pkmerge tables' changes come, as
 *	  their producer made the stream and with complete rows, from
 *	  changelog_wal.c's decoding; heap tables' from core's, in the same
 *	  RowKinds as far as their WAL tells (out_change).  The extension's own
 *	  catalog tables are left out.
 *
 *	  Options: format ('text' or 'json'), include-xids (default on),
 *	  include-timestamp (default off), skip-empty-xacts (default off).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "replication/logical.h"
#include "replication/output_plugin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "catalog.h"
#include "changelog_wal.h"
#include "pg_compat.h"
#include "relcache_hub.h"
#include "table_desc.h"

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

#define VALID_OPTIONS "format, include-xids, include-timestamp, skip-empty-xacts"

typedef struct OutState
{
	MemoryContext cxt;			/* reset after each change */
	bool		json;
	bool		include_xids;
	bool		include_timestamp;
	bool		skip_empty_xacts;
	bool		begin_written;	/* of the transaction being output */
} OutState;

/* the RowKinds as the stream names them */
typedef enum OutKind
{
	OUT_INSERT,
	OUT_UPDATE_BEFORE,
	OUT_UPDATE_AFTER,
	OUT_DELETE
} OutKind;

static const char *const out_kind_names[] = {"+I", "-U", "+U", "-D"};

static void
parse_options(OutState *st, List *options)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *elem = lfirst(lc);

		if (strcmp(elem->defname, "format") == 0)
		{
			char	   *v = elem->arg ? strVal(elem->arg) : "";

			if (strcmp(v, "json") == 0)
				st->json = true;
			else if (strcmp(v, "text") == 0)
				st->json = false;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value \"%s\" for option \"format\" of output plugin pkchangelog", v),
						 errhint("Valid values are \"text\" and \"json\".")));
		}
		else if (strcmp(elem->defname, "include-xids") == 0 ||
				 strcmp(elem->defname, "include-timestamp") == 0 ||
				 strcmp(elem->defname, "skip-empty-xacts") == 0)
		{
			bool		v = true;	/* an option given without value */

			if (elem->arg && !parse_bool(strVal(elem->arg), &v))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value \"%s\" for option \"%s\" of output plugin pkchangelog",
								strVal(elem->arg), elem->defname),
						 errhint("The option takes a boolean: on, off, true, false, 1 or 0.")));
			if (strcmp(elem->defname, "include-xids") == 0)
				st->include_xids = v;
			else if (strcmp(elem->defname, "include-timestamp") == 0)
				st->include_timestamp = v;
			else
				st->skip_empty_xacts = v;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("output plugin pkchangelog has no option \"%s\"", elem->defname),
					 errhint("Valid options are: " VALID_OPTIONS ".")));
	}
}

static void
out_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	OutState   *st = palloc0(sizeof(OutState));

	st->cxt = AllocSetContextCreate(ctx->context, "pkchangelog output",
									ALLOCSET_DEFAULT_SIZES);
	st->include_xids = true;
	parse_options(st, ctx->output_plugin_options);
	ctx->output_plugin_private = st;
	opt->output_type = OUTPUT_PLUGIN_TEXTUAL_OUTPUT;
	opt->receive_rewrites = false;
}

static void
out_shutdown(LogicalDecodingContext *ctx)
{
	OutState   *st = ctx->output_plugin_private;

	MemoryContextDelete(st->cxt);
}

static void
write_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, bool last_write)
{
	OutState   *st = ctx->output_plugin_private;

	OutputPluginPrepareWrite(ctx, last_write);
	if (st->json)
	{
		appendStringInfoString(ctx->out, "{\"action\":\"BEGIN\"");
		if (st->include_xids)
			appendStringInfo(ctx->out, ",\"xid\":%u", txn->xid);
		appendStringInfoChar(ctx->out, '}');
	}
	else if (st->include_xids)
		appendStringInfo(ctx->out, "BEGIN %u", txn->xid);
	else
		appendStringInfoString(ctx->out, "BEGIN");
	OutputPluginWrite(ctx, last_write);
	st->begin_written = true;
}

static void
out_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	OutState   *st = ctx->output_plugin_private;

	st->begin_written = false;
	if (!st->skip_empty_xacts)
		write_begin(ctx, txn, true);
}

/*
 * The line ending a transaction, or a step of a two-phase one: action
 * ("COMMIT", "PREPARE TRANSACTION", ...), the GID of a prepared one.
 */
static void
write_end(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, const char *action,
		  const char *gid)
{
	OutState   *st = ctx->output_plugin_private;

	OutputPluginPrepareWrite(ctx, true);
	if (st->json)
	{
		appendStringInfoString(ctx->out, "{\"action\":");
		escape_json(ctx->out, action);
		if (gid)
		{
			appendStringInfoString(ctx->out, ",\"gid\":");
			escape_json(ctx->out, gid);
		}
		if (st->include_xids)
			appendStringInfo(ctx->out, ",\"xid\":%u", txn->xid);
		if (st->include_timestamp)
		{
			appendStringInfoString(ctx->out, ",\"commit_time\":");
			escape_json(ctx->out, timestamptz_to_str(txn->xact_time.commit_time));
		}
		appendStringInfoChar(ctx->out, '}');
	}
	else
	{
		appendStringInfoString(ctx->out, action);
		if (gid)
			appendStringInfo(ctx->out, " %s", quote_literal_cstr(gid));
		if (st->include_xids)
			appendStringInfo(ctx->out, " %u", txn->xid);
		if (st->include_timestamp)
			appendStringInfo(ctx->out, " (at %s)",
							 timestamptz_to_str(txn->xact_time.commit_time));
	}
	OutputPluginWrite(ctx, true);
}

static void
out_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	OutState   *st = ctx->output_plugin_private;

	if (st->begin_written)		/* else skip-empty-xacts: nothing was output */
		write_end(ctx, txn, "COMMIT", NULL);
}

/*
 * Two-phase slots (two_phase => true): a prepared transaction's changes
 * are decoded at PREPARE, framed by BEGIN and PREPARE TRANSACTION 'gid';
 * COMMIT PREPARED or ROLLBACK PREPARED 'gid' follows later on its own (even
 * after a PREPARE that skip-empty-xacts left out, as test_decoding does).
 */
static void
out_prepare(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr prepare_lsn)
{
	OutState   *st = ctx->output_plugin_private;

	if (st->begin_written)
		write_end(ctx, txn, "PREPARE TRANSACTION", txn->gid);
}

static void
out_commit_prepared(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					XLogRecPtr commit_lsn)
{
	write_end(ctx, txn, "COMMIT PREPARED", txn->gid);
}

static void
out_rollback_prepared(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					  XLogRecPtr prepare_end_lsn, TimestampTz prepare_time)
{
	write_end(ctx, txn, "ROLLBACK PREPARED", txn->gid);
}

/*
 * What rendering a relation's rows needs, looked up once per relation (per
 * change, the catalog lookups would cost more than the rows): its name,
 * and per column its name, type, output function and how its values print.
 * A relcache invalidation of the relation (ALTER TABLE in the decoded
 * stream, say) marks its entry for rebuilding.
 */
typedef struct ColOut
{
	bool		skip;			/* dropped or generated */
	char	   *name;			/* quoted identifier (text) */
	char	   *rawname;		/* as it is (json) */
	char	   *type;			/* format_type_be */
	FmgrInfo	out;
	bool		varlena;
	bool		number;			/* numeric category: bare if JSON reads it */
	bool		boolean;
	bool		json;			/* json/jsonb: raw in JSON output */
} ColOut;

typedef struct RelOut
{
	Oid			relid;			/* hash key */
	bool		valid;
	uint64		generation;		/* relouts_generation when made */
	MemoryContext cxt;			/* the entry's allocations */
	bool		catalog;		/* the extension's catalog: left out */
	bool		pkmerge;
	char	   *name;			/* schema-qualified, quoted */
	int			natts;
	ColOut	   *cols;
	Bitmapset  *identity_key;	/* a heap table's replica identity columns */
} RelOut;

static HTAB *relouts = NULL;

static uint64 relouts_generation = 0;	/* entries of older ones are stale */

static void
relout_invalidate(Datum arg, Oid relid)
{
	RelOut	   *e;

	if (!OidIsValid(relid))
		relouts_generation++;
	else if (relouts != NULL &&
			 (e = hash_search(relouts, &relid, HASH_FIND, NULL)) != NULL)
		e->valid = false;
}

static RelOut *
relout_get(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	RelOut	   *e;
	bool		found;
	MemoryContext old;
	char	   *nsp;

	if (relouts == NULL)
	{
		HASHCTL		ctl;
		static bool callback_registered = false;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RelOut);
		ctl.hcxt = CacheMemoryContext;
		relouts = hash_create("pkchangelog output relations", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		if (!callback_registered)
		{
			hub_register_relcache(relout_invalidate, (Datum) 0);
			callback_registered = true;
		}
	}
	e = hash_search(relouts, &relid, HASH_ENTER, &found);
	if (found && e->valid && e->generation == relouts_generation)
		return e;
	if (found)
		MemoryContextDelete(e->cxt);
	e->cxt = AllocSetContextCreate(CacheMemoryContext, "pkchangelog output relation",
								   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(e->cxt);
	nsp = get_namespace_name(RelationGetNamespace(rel));
	e->catalog = nsp != NULL && strcmp(nsp, PK_CATALOG_SCHEMA) == 0;
	e->pkmerge = OidIsValid(pk_table_am_oid()) && rel->rd_rel->relam == pk_table_am_oid();
	e->name = quote_qualified_identifier(nsp, RelationGetRelationName(rel));
	e->natts = desc->natts;
	e->cols = palloc0(sizeof(ColOut) * desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColOut	   *c = &e->cols[i];
		Oid			outfunc;
		char		category;
		bool		preferred;

		c->skip = att->attisdropped || att->attgenerated;
		if (c->skip)
			continue;
		c->rawname = pstrdup(NameStr(att->attname));
		c->name = pstrdup(quote_identifier(c->rawname));
		c->type = format_type_be(att->atttypid);
		getTypeOutputInfo(att->atttypid, &outfunc, &c->varlena);
		fmgr_info_cxt(outfunc, &c->out, e->cxt);
		get_type_category_preferred(getBaseType(att->atttypid), &category, &preferred);
		c->number = category == TYPCATEGORY_NUMERIC;
		c->boolean = category == TYPCATEGORY_BOOLEAN;
		c->json = att->atttypid == JSONOID || att->atttypid == JSONBOID;
	}
	e->identity_key = e->pkmerge ? NULL :
		RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY);
	MemoryContextSwitchTo(old);
	e->valid = true;
	e->generation = relouts_generation;
	return e;
}

/* a number JSON reads as one (not NaN, Infinity) */
static bool
json_number(const char *text)
{
	return strspn(text, "0123456789+-.eE") == strlen(text) &&
		strpbrk(text, "0123456789") != NULL;
}

static void
append_quoted(StringInfo out, const char *text)
{
	appendStringInfoChar(out, '\'');
	for (const char *c = text; *c; c++)
	{
		if (*c == '\'')
			appendStringInfoChar(out, '\'');
		appendStringInfoChar(out, *c);
	}
	appendStringInfoChar(out, '\'');
}

/*
 * Appends the columns of tuple: "name[type]:value ..." or a JSON object.
 * key_only: only the columns of the replica identity (a heap table's old
 * key).  A value left in TOAST storage (a heap UPDATE that did not change
 * it) is not in WAL: text says unchanged-toast-datum, JSON leaves the
 * column out.
 */
static void
append_row(OutState *st, StringInfo out, RelOut *ro, TupleDesc desc,
		   HeapTuple tuple, bool key_only)
{
	bool		first = true;

	if (st->json)
		appendStringInfoChar(out, '{');
	for (int i = 0; i < ro->natts; i++)
	{
		ColOut	   *c = &ro->cols[i];
		Datum		value;
		bool		isnull;
		char	   *text = NULL;
		bool		unchanged_toast = false;

		if (c->skip)
			continue;
		if (key_only &&
			!bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, ro->identity_key))
			continue;
		value = heap_getattr(tuple, i + 1, desc, &isnull);
		if (!isnull)
		{
			if (c->varlena && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
				unchanged_toast = true;
			else
				text = OutputFunctionCall(&c->out, value);
		}
		if (st->json)
		{
			if (unchanged_toast)
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			escape_json(out, c->rawname);
			appendStringInfoChar(out, ':');
			if (isnull)
				appendStringInfoString(out, "null");
			else if (c->boolean)
				appendStringInfoString(out, strcmp(text, "t") == 0 ? "true" : "false");
			else if ((c->number && json_number(text)) || c->json)
				appendStringInfoString(out, text);
			else
				escape_json(out, text);
		}
		else
		{
			appendStringInfoChar(out, ' ');
			appendStringInfoString(out, c->name);
			appendStringInfoChar(out, '[');
			appendStringInfoString(out, c->type);
			appendStringInfoString(out, "]:");
			if (isnull)
				appendStringInfoString(out, "null");
			else if (unchanged_toast)
				appendStringInfoString(out, "unchanged-toast-datum");
			else if (c->number || c->boolean)
				appendStringInfoString(out, text);
			else
				append_quoted(out, text);
		}
		first = false;
	}
	if (st->json)
		appendStringInfoChar(out, '}');
}

/*
 * One RowKind record.  snapshot: the pkmerge snapshot id, 0 for a heap
 * table; no_before: a +U whose -U is not in the stream.
 */
static void
write_record(LogicalDecodingContext *ctx, Relation rel, RelOut *ro, OutKind kind,
			 HeapTuple tuple, bool key_only, int64 snapshot, bool no_before)
{
	OutState   *st = ctx->output_plugin_private;

	OutputPluginPrepareWrite(ctx, true);
	if (st->json)
	{
		appendStringInfoString(ctx->out, "{\"table\":");
		escape_json(ctx->out, ro->name);
		if (snapshot > 0)
			appendStringInfo(ctx->out, ",\"snapshot\":%lld", (long long) snapshot);
		else
			appendStringInfoString(ctx->out, ",\"snapshot\":null");
		appendStringInfo(ctx->out, ",\"rowkind\":\"%s\"", out_kind_names[kind]);
		if (no_before)
			appendStringInfoString(ctx->out, ",\"missing_update_before\":true");
		appendStringInfoString(ctx->out, ",\"row\":");
		append_row(st, ctx->out, ro, RelationGetDescr(rel), tuple, key_only);
		appendStringInfoChar(ctx->out, '}');
	}
	else
	{
		appendStringInfoString(ctx->out, ro->name);
		appendStringInfoChar(ctx->out, ' ');
		appendStringInfoString(ctx->out, out_kind_names[kind]);
		append_row(st, ctx->out, ro, RelationGetDescr(rel), tuple, key_only);
		if (no_before)
			appendStringInfoString(ctx->out, " (missing -U)");
	}
	OutputPluginWrite(ctx, true);
}

/*
 * One decoded change as RowKinds.  A pkmerge table's UPDATE with its old
 * row is a -U then its +U, as its producer made the stream
 * (changelog_wal.c).  A heap table's from what its WAL holds: an UPDATE
 * whose old row is complete (REPLICA IDENTITY FULL) is -U +U; one whose
 * old row is the key only (the key changed) is -D of the key and +I; one
 * without an old row is a +U marked as missing its -U.  A DELETE carries
 * the old row, for a heap table without REPLICA IDENTITY FULL its key
 * columns only.
 */
static void
out_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation rel,
		   ReorderBufferChange *change)
{
	OutState   *st = ctx->output_plugin_private;
	RelOut	   *ro = relout_get(rel);
	MemoryContext old;
	bool		full;
	HeapTuple	newtup;
	HeapTuple	oldtup;
	int64		snapshot = 0;

	if (ro->catalog)
		return;					/* the extension's bookkeeping, not data */
	old = MemoryContextSwitchTo(st->cxt);
	if (!st->begin_written)
		write_begin(ctx, txn, false);
	full = ro->pkmerge || rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL;
	newtup = ChangeNewTuple(change);
	oldtup = ChangeOldTuple(change);
	if (ro->pkmerge)
		snapshot = changelog_wal_snapshot_of(newtup ? newtup : oldtup);

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			write_record(ctx, rel, ro, OUT_INSERT, newtup, false, snapshot, false);
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			if (oldtup && full)
			{
				write_record(ctx, rel, ro, OUT_UPDATE_BEFORE, oldtup, false, snapshot, false);
				write_record(ctx, rel, ro, OUT_UPDATE_AFTER, newtup, false, snapshot, false);
			}
			else if (oldtup)
			{
				/* a heap key changed: its old key goes, its new row comes */
				write_record(ctx, rel, ro, OUT_DELETE, oldtup, true, 0, false);
				write_record(ctx, rel, ro, OUT_INSERT, newtup, false, 0, false);
			}
			else
				write_record(ctx, rel, ro, OUT_UPDATE_AFTER, newtup, false, snapshot, true);
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			if (oldtup == NULL)
				break;			/* REPLICA IDENTITY NOTHING: no row to say */
			write_record(ctx, rel, ro, OUT_DELETE, oldtup, !full, snapshot, false);
			break;
		default:
			break;
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->cxt);
}

static void
out_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, int nrelations,
			 Relation relations[], ReorderBufferChange *change)
{
	OutState   *st = ctx->output_plugin_private;
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	for (int i = 0; i < nrelations; i++)
	{
		RelOut	   *ro = relout_get(relations[i]);

		if (ro->catalog)
			continue;
		if (!st->begin_written)
			write_begin(ctx, txn, false);
		OutputPluginPrepareWrite(ctx, true);
		if (st->json)
		{
			appendStringInfoString(ctx->out, "{\"table\":");
			escape_json(ctx->out, ro->name);
			appendStringInfoString(ctx->out, ",\"snapshot\":null,\"rowkind\":\"TRUNCATE\",\"row\":null}");
		}
		else
			appendStringInfo(ctx->out, "%s TRUNCATE", ro->name);
		OutputPluginWrite(ctx, true);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->cxt);
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = out_startup;
	cb->begin_cb = out_begin;
	cb->change_cb = out_change;
	cb->truncate_cb = out_truncate;
	cb->commit_cb = out_commit;
	cb->begin_prepare_cb = out_begin;
	cb->prepare_cb = out_prepare;
	cb->commit_prepared_cb = out_commit_prepared;
	cb->rollback_prepared_cb = out_rollback_prepared;
	cb->shutdown_cb = out_shutdown;
}
