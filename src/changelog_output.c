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
 * pkmerge tables decode as their producer made the stream
 * (changelog_wal.c): an UPDATE with its old row is a -U then its +U.  Heap
 * tables decode into the same model from what their WAL holds: an UPDATE
 * whose old row is complete (REPLICA IDENTITY FULL) is -U +U; one whose old
 * row is the key only (the key changed) is -D of the key and +I; one
 * without an old row is a +U marked as missing its -U.  A DELETE carries
 * the old row, for a heap table without REPLICA IDENTITY FULL its key
 * columns only.  The extension's own catalog tables are left out.
 *
 * Options: format ('text' or 'json'), include-xids (default on),
 * include-timestamp (default off), skip-empty-xacts (default off).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "replication/logical.h"
#include "replication/output_plugin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "catalog.h"
#include "changelog_wal.h"
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

static void
out_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	OutState   *st = ctx->output_plugin_private;

	if (!st->begin_written)
		return;					/* skip-empty-xacts: nothing was output */
	OutputPluginPrepareWrite(ctx, true);
	if (st->json)
	{
		appendStringInfoString(ctx->out, "{\"action\":\"COMMIT\"");
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
		appendStringInfoString(ctx->out, "COMMIT");
		if (st->include_xids)
			appendStringInfo(ctx->out, " %u", txn->xid);
		if (st->include_timestamp)
			appendStringInfo(ctx->out, " (at %s)",
							 timestamptz_to_str(txn->xact_time.commit_time));
	}
	OutputPluginWrite(ctx, true);
}

/* a value printed bare: numbers and booleans (json: if JSON reads them so) */
static bool
value_is_bare(Oid typid, const char *text, bool json)
{
	char		category;
	bool		preferred;

	get_type_category_preferred(getBaseType(typid), &category, &preferred);
	if (category == TYPCATEGORY_BOOLEAN)
		return true;
	if (category != TYPCATEGORY_NUMERIC)
		return false;
	/* NaN and Infinity are no JSON numbers */
	return !json || (strspn(text, "0123456789+-.eE") == strlen(text) &&
					 strpbrk(text, "0123456789") != NULL);
}

/*
 * Appends the columns of tuple: "name[type]:value ..." or a JSON object.
 * key_only: only the columns of the replica identity (a heap table's old
 * key).  A value left in TOAST storage (a heap UPDATE that did not change
 * it) is not in WAL: text says unchanged-toast-datum, JSON leaves the
 * column out.
 */
static void
append_row(OutState *st, StringInfo out, Relation rel, HeapTuple tuple,
		   Bitmapset *key_only)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		first = true;

	if (st->json)
		appendStringInfoChar(out, '{');
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Datum		value;
		bool		isnull;
		Oid			outfunc;
		bool		varlena;
		char	   *text = NULL;
		bool		unchanged_toast = false;

		if (att->attisdropped || att->attgenerated)
			continue;
		if (key_only &&
			!bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber, key_only))
			continue;
		value = heap_getattr(tuple, i + 1, desc, &isnull);
		if (!isnull)
		{
			getTypeOutputInfo(att->atttypid, &outfunc, &varlena);
			if (varlena && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
				unchanged_toast = true;
			else
				text = OidOutputFunctionCall(outfunc, value);
		}
		if (st->json)
		{
			if (unchanged_toast)
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			escape_json(out, NameStr(att->attname));
			appendStringInfoChar(out, ':');
			if (isnull)
				appendStringInfoString(out, "null");
			else if (value_is_bare(att->atttypid, text, true))
				appendStringInfoString(out, strcmp(text, "t") == 0 ? "true" :
									   strcmp(text, "f") == 0 ? "false" : text);
			else if (att->atttypid == JSONOID || att->atttypid == JSONBOID)
				appendStringInfoString(out, text);
			else
				escape_json(out, text);
		}
		else
		{
			appendStringInfoChar(out, ' ');
			appendStringInfoString(out, quote_identifier(NameStr(att->attname)));
			appendStringInfo(out, "[%s]:", format_type_be(att->atttypid));
			if (isnull)
				appendStringInfoString(out, "null");
			else if (unchanged_toast)
				appendStringInfoString(out, "unchanged-toast-datum");
			else if (value_is_bare(att->atttypid, text, false))
				appendStringInfoString(out, text);
			else
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
write_record(LogicalDecodingContext *ctx, Relation rel, OutKind kind,
			 HeapTuple tuple, Bitmapset *key_only, int64 snapshot, bool no_before)
{
	OutState   *st = ctx->output_plugin_private;
	char	   *name = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												  RelationGetRelationName(rel));

	OutputPluginPrepareWrite(ctx, true);
	if (st->json)
	{
		appendStringInfoString(ctx->out, "{\"table\":");
		escape_json(ctx->out, name);
		if (snapshot > 0)
			appendStringInfo(ctx->out, ",\"snapshot\":%lld", (long long) snapshot);
		else
			appendStringInfoString(ctx->out, ",\"snapshot\":null");
		appendStringInfo(ctx->out, ",\"rowkind\":\"%s\"", out_kind_names[kind]);
		if (no_before)
			appendStringInfoString(ctx->out, ",\"missing_update_before\":true");
		appendStringInfoString(ctx->out, ",\"row\":");
		append_row(st, ctx->out, rel, tuple, key_only);
		appendStringInfoChar(ctx->out, '}');
	}
	else
	{
		appendStringInfo(ctx->out, "%s %s", name, out_kind_names[kind]);
		append_row(st, ctx->out, rel, tuple, key_only);
		if (no_before)
			appendStringInfoString(ctx->out, " (missing -U)");
	}
	OutputPluginWrite(ctx, true);
}

/* the extension's catalog tables are its bookkeeping, not data */
static bool
is_catalog_table(Relation rel)
{
	char	   *nsp = get_namespace_name(RelationGetNamespace(rel));

	return nsp != NULL && strcmp(nsp, PK_CATALOG_SCHEMA) == 0;
}

static void
out_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation rel,
		   ReorderBufferChange *change)
{
	OutState   *st = ctx->output_plugin_private;
	MemoryContext old;
	bool		pkmerge;
	bool		full;
	HeapTuple	newtup;
	HeapTuple	oldtup;
	int64		snapshot = 0;

	if (is_catalog_table(rel))
		return;
	old = MemoryContextSwitchTo(st->cxt);
	if (!st->begin_written)
		write_begin(ctx, txn, false);
	pkmerge = rel->rd_rel->relam == pk_table_am_oid() && OidIsValid(pk_table_am_oid());
	full = pkmerge || rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL;
	newtup = change->data.tp.newtuple ? &change->data.tp.newtuple->tuple : NULL;
	oldtup = change->data.tp.oldtuple ? &change->data.tp.oldtuple->tuple : NULL;
	if (pkmerge)
		snapshot = changelog_wal_snapshot_of(newtup ? newtup : oldtup);

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			write_record(ctx, rel, OUT_INSERT, newtup, NULL, snapshot, false);
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			if (oldtup && full)
			{
				write_record(ctx, rel, OUT_UPDATE_BEFORE, oldtup, NULL, snapshot, false);
				write_record(ctx, rel, OUT_UPDATE_AFTER, newtup, NULL, snapshot, false);
			}
			else if (oldtup)
			{
				/* a heap key changed: its old key goes, its new row comes */
				write_record(ctx, rel, OUT_DELETE, oldtup,
							 RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY),
							 0, false);
				write_record(ctx, rel, OUT_INSERT, newtup, NULL, 0, false);
			}
			else
				write_record(ctx, rel, OUT_UPDATE_AFTER, newtup, NULL, snapshot, true);
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			if (oldtup == NULL)
				break;			/* REPLICA IDENTITY NOTHING: no row to say */
			write_record(ctx, rel, OUT_DELETE, oldtup,
						 full ? NULL : RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY),
						 snapshot, false);
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
		Relation	rel = relations[i];
		char	   *name;

		if (is_catalog_table(rel))
			continue;
		if (!st->begin_written)
			write_begin(ctx, txn, false);
		name = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										  RelationGetRelationName(rel));
		OutputPluginPrepareWrite(ctx, true);
		if (st->json)
		{
			appendStringInfoString(ctx->out, "{\"table\":");
			escape_json(ctx->out, name);
			appendStringInfoString(ctx->out, ",\"snapshot\":null,\"rowkind\":\"TRUNCATE\",\"row\":null}");
		}
		else
			appendStringInfo(ctx->out, "%s TRUNCATE", name);
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
	cb->shutdown_cb = out_shutdown;
}
