/*-------------------------------------------------------------------------
 *
 * options.c
 *	  Table options of pkmerge tables: the option table (canonical names,
 *	  Paimon aliases, types, defaults, ranges), validation with precise
 *	  errors, reading them back from pg_class.reloptions, and pk_options().
 *
 * PostgreSQL 15 validates CREATE TABLE / ALTER TABLE options with heap's
 * list; ddl.c therefore takes ours out of the statement and stores them in
 * pg_class.reloptions itself (where pg_dump finds them).  This file knows
 * nothing about statements: it validates DefElem lists and parses text[].
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "options.h"
#include "pktable.h"

typedef enum OptType
{
	OPT_ENUM,
	OPT_BOOL,
	OPT_INT,
	OPT_SIZE,					/* bytes, units accepted: '64MB' */
	OPT_DURATION,				/* milliseconds, units accepted: '1h' */
	OPT_KEY						/* comma-separated column names */
} OptType;

typedef struct OptDef
{
	const char *name;			/* canonical, snake_case */
	const char *alias;			/* Paimon's spelling */
	OptType		type;
	const char *dflt;			/* shown by pk_options; NULL: derived */
	int64		min;
	int64		max;
	const char *const *values;	/* OPT_ENUM: accepted values */
} OptDef;

static const char *const producer_values[] = {"none", "input", "lookup", "full-compaction", NULL};
static const char *const engine_values[] = {"deduplicate", NULL};
static const char *const compression_values[] = {"zstd", "none", NULL};

#define INT_MAXV PG_INT32_MAX

static const OptDef opt_defs[] = {
	{"changelog_producer", "changelog-producer", OPT_ENUM, "none", 0, 0, producer_values},
	{"changelog_row_deduplicate", "changelog-producer.row-deduplicate", OPT_BOOL, "false", 0, 0, NULL},
	{"full_compaction_delta_commits", "full-compaction.delta-commits", OPT_INT, "1", 1, INT_MAXV, NULL},
	{"merge_engine", "merge-engine", OPT_ENUM, "deduplicate", 0, 0, engine_values},
	{"num_sorted_run_compaction_trigger", "num-sorted-run.compaction-trigger", OPT_INT, "5", 1, 1000, NULL},
	{"num_sorted_run_stop_trigger", "num-sorted-run.stop-trigger", OPT_INT, NULL, 1, 1000, NULL},
	{"num_levels", "num-levels", OPT_INT, NULL, 2, 1000, NULL},
	{"compaction_max_size_amplification_percent", "compaction.max-size-amplification-percent", OPT_INT, "200", 0, INT_MAXV, NULL},
	{"compaction_size_ratio", "compaction.size-ratio", OPT_INT, "1", 0, 100, NULL},
	{"write_buffer_size", "write-buffer-size", OPT_SIZE, "64MB", 1024 * 1024, INT_MAXV, NULL},
	{"target_run_size", "target-file-size", OPT_SIZE, "128MB", 64 * 1024, INT_MAXV, NULL},
	{"compression", "file.compression", OPT_ENUM, "zstd", 0, 0, compression_values},
	{"compression_level", "file.compression.zstd-level", OPT_INT, "-1", -7, 22, NULL},
	{"snapshot_num_retained_min", "snapshot.num-retained.min", OPT_INT, "10", 1, INT_MAXV, NULL},
	{"snapshot_num_retained_max", "snapshot.num-retained.max", OPT_INT, "2147483647", 1, INT_MAXV, NULL},
	{"snapshot_time_retained", "snapshot.time-retained", OPT_DURATION, "1h", 0, INT_MAXV, NULL},
	{"changelog_num_retained_min", "changelog.num-retained.min", OPT_INT, NULL, 1, INT_MAXV, NULL},
	{"changelog_num_retained_max", "changelog.num-retained.max", OPT_INT, NULL, 1, INT_MAXV, NULL},
	{"changelog_time_retained", "changelog.time-retained", OPT_DURATION, NULL, 0, INT_MAXV, NULL},
	{"primary_key", "primary-key", OPT_KEY, NULL, 0, 0, NULL},
};

#define NUM_OPTS lengthof(opt_defs)

/*
 * Find an option by canonical name, Paimon alias, or the canonical name
 * spelled with hyphens ("changelog-producer").
 */
static const OptDef *
find_opt(const char *name)
{
	for (int i = 0; i < NUM_OPTS; i++)
	{
		const OptDef *d = &opt_defs[i];
		const char *a = d->name;
		const char *b = name;

		if (strcmp(d->name, name) == 0 || strcmp(d->alias, name) == 0)
			return d;
		/* underscore and hyphen are the same letter here */
		while (*a && *b && (*a == *b || (*a == '_' && *b == '-')))
			a++, b++;
		if (*a == '\0' && *b == '\0')
			return d;
	}
	return NULL;
}

static char *
def_full_name(DefElem *def)
{
	if (def->defnamespace)
		return psprintf("%s.%s", def->defnamespace, def->defname);
	return def->defname;
}

static char *
def_value(DefElem *def)
{
	if (def->arg == NULL)
		return "true";			/* WITH (changelog_row_deduplicate) */
	return defGetString(def);
}

static void
bad_value(const OptDef *d, const char *value, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for pkmerge option \"%s\": \"%s\"", d->name, value),
			 detail ? errdetail("%s", detail) : 0));
}

/*
 * Check one value and return it normalized (the form stored in reloptions).
 */
static char *
check_value(const OptDef *d, const char *value)
{
	switch (d->type)
	{
		case OPT_ENUM:
			{
				StringInfoData list;

				for (int i = 0; d->values[i]; i++)
					if (pg_strcasecmp(value, d->values[i]) == 0)
						return pstrdup(d->values[i]);
				if (d->values == producer_values && pg_strcasecmp(value, "full_compaction") == 0)
					return pstrdup("full-compaction");
				if (d->values == engine_values &&
					(pg_strcasecmp(value, "partial-update") == 0 ||
					 pg_strcasecmp(value, "aggregation") == 0 ||
					 pg_strcasecmp(value, "first-row") == 0))
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("merge engine \"%s\" is not supported yet", value),
							 errhint("Use merge_engine = 'deduplicate'.")));
				initStringInfo(&list);
				for (int i = 0; d->values[i]; i++)
					appendStringInfo(&list, "%s\"%s\"", i ? ", " : "", d->values[i]);
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for pkmerge option \"%s\": \"%s\"", d->name, value),
						 errhint("Valid values are %s.", list.data)));
			}
			break;
		case OPT_BOOL:
			{
				bool		b;

				if (!parse_bool(value, &b))
					bad_value(d, value, "A Boolean value is expected.");
				return pstrdup(b ? "true" : "false");
			}
		case OPT_INT:
		case OPT_SIZE:
		case OPT_DURATION:
			{
				int			v;
				const char *hint = NULL;
				int			flags = d->type == OPT_SIZE ? GUC_UNIT_BYTE :
				d->type == OPT_DURATION ? GUC_UNIT_MS : 0;

				if (!parse_int(value, &v, flags, &hint))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("invalid value for pkmerge option \"%s\": \"%s\"", d->name, value),
							 hint ? errhint("%s", hint) :
							 errhint(d->type == OPT_SIZE ? "Give a size such as '64MB'." :
									 d->type == OPT_DURATION ? "Give a duration such as '1h' or '30min'." :
									 "Give a whole number.")));
				if (v < d->min || v > d->max)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("value %s out of bounds for pkmerge option \"%s\"", value, d->name),
							 errdetail("Valid values are between \"" INT64_FORMAT "\" and \"" INT64_FORMAT "\"%s.",
									   d->min, d->max,
									   d->type == OPT_SIZE ? " bytes" :
									   d->type == OPT_DURATION ? " milliseconds" : "")));
				return pstrdup(value);
			}
		case OPT_KEY:
			{
				List	   *cols = pkopt_split_key(value);

				if (cols == NIL)
					bad_value(d, value, "A comma-separated list of column names is expected.");
				return pstrdup(value);
			}
	}
	return NULL;				/* keep compiler quiet */
}

/*
 * Validate a list of DefElems naming our options.  Returns new DefElems with
 * canonical names and normalized string values (names alone for RESET,
 * with_values false).  A name that is not ours is an error (42704), as is a
 * name given twice.
 */
List *
pkopt_validate(List *defs, bool with_values)
{
	List	   *result = NIL;
	ListCell   *lc;
	bool		seen[NUM_OPTS] = {0};

	foreach(lc, defs)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		char	   *name = def_full_name(def);
		const OptDef *d = find_opt(name);
		char	   *value;

		if (d == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("unrecognized parameter \"%s\" for table access method \"pkmerge\"", name),
					 errhint("Valid options are listed by pk_options(); heap storage parameters do not apply to pkmerge tables.")));
		if (seen[d - opt_defs])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("pkmerge option \"%s\" specified more than once", d->name)));
		seen[d - opt_defs] = true;
		if (!with_values)
			value = NULL;
		else
			value = check_value(d, def_value(def));
		result = lappend(result,
						 makeDefElem(pstrdup(d->name),
									 value ? (Node *) makeString(value) : NULL, -1));
	}
	return result;
}

static int64
parse_number(const OptDef *d, const char *value)
{
	int			v = 0;
	int			flags = d->type == OPT_SIZE ? GUC_UNIT_BYTE :
	d->type == OPT_DURATION ? GUC_UNIT_MS : 0;

	if (!parse_int(value, &v, flags, NULL))
		elog(ERROR, "stored pkmerge option \"%s\" has invalid value \"%s\"", d->name, value);
	return v;
}

static void
set_field(PkOptions *o, const OptDef *d, const char *value)
{
	const char *n = d->name;

	if (strcmp(n, "changelog_producer") == 0)
		o->changelog_producer = strcmp(value, "input") == 0 ? PK_PRODUCER_INPUT :
			strcmp(value, "lookup") == 0 ? PK_PRODUCER_LOOKUP :
			strcmp(value, "full-compaction") == 0 ? PK_PRODUCER_FULL_COMPACTION :
			PK_PRODUCER_NONE;
	else if (strcmp(n, "changelog_row_deduplicate") == 0)
		o->changelog_row_deduplicate = strcmp(value, "true") == 0;
	else if (strcmp(n, "merge_engine") == 0)
		 /* only deduplicate exists */ ;
	else if (strcmp(n, "compression") == 0)
		o->compression = strcmp(value, "none") == 0 ? PK_COMPRESSION_NONE : PK_COMPRESSION_ZSTD;
	else if (strcmp(n, "primary_key") == 0)
		o->primary_key = pstrdup(value);
	else
	{
		int64		v = parse_number(d, value);

#define SETINT(field) else if (strcmp(n, #field) == 0) o->field = v
		if (false)
			 /* start of chain */ ;
		SETINT(full_compaction_delta_commits);
		SETINT(num_sorted_run_compaction_trigger);
		SETINT(num_sorted_run_stop_trigger);
		SETINT(num_levels);
		SETINT(compaction_max_size_amplification_percent);
		SETINT(compaction_size_ratio);
		SETINT(write_buffer_size);
		SETINT(target_run_size);
		SETINT(compression_level);
		SETINT(snapshot_num_retained_min);
		SETINT(snapshot_num_retained_max);
		SETINT(snapshot_time_retained);
		SETINT(changelog_num_retained_min);
		SETINT(changelog_num_retained_max);
		SETINT(changelog_time_retained);
#undef SETINT
	}
}

/*
 * Parse reloptions (text[] of name=value, or (Datum) 0) into opts.  Names
 * that are not ours (none are stored by ddl.c) are skipped.  Derived
 * defaults are filled in after the stored values are read.
 */
void
pkopt_parse(Datum reloptions, PkOptions *opts)
{
	List	   *defs = reloptions ? untransformRelOptions(reloptions) : NIL;
	ListCell   *lc;

	memset(opts, 0, sizeof(PkOptions));
	opts->num_sorted_run_stop_trigger = -1;
	opts->num_levels = -1;
	opts->changelog_num_retained_min = -1;
	opts->changelog_num_retained_max = -1;
	opts->changelog_time_retained = -1;
	for (int i = 0; i < NUM_OPTS; i++)
		if (opt_defs[i].dflt)
			set_field(opts, &opt_defs[i], opt_defs[i].dflt);

	foreach(lc, defs)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		const OptDef *d = find_opt(def->defname);

		if (d)
			set_field(opts, d, defGetString(def));
	}

	if (opts->num_sorted_run_stop_trigger < 0)
		opts->num_sorted_run_stop_trigger = opts->num_sorted_run_compaction_trigger + 3;
	if (opts->num_levels < 0)
		opts->num_levels = opts->num_sorted_run_compaction_trigger + 1;
	if (opts->changelog_num_retained_min < 0)
		opts->changelog_num_retained_min = opts->snapshot_num_retained_min;
	if (opts->changelog_num_retained_max < 0)
		opts->changelog_num_retained_max = opts->snapshot_num_retained_max;
	if (opts->changelog_time_retained < 0)
		opts->changelog_time_retained = opts->snapshot_time_retained;
}

/*
 * Cross-option rules, checked on the merged result of a CREATE or ALTER.
 */
static void
check_combination(const PkOptions *o)
{
	if (o->num_sorted_run_stop_trigger < o->num_sorted_run_compaction_trigger)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("num_sorted_run_stop_trigger (%d) must not be less than num_sorted_run_compaction_trigger (%d)",
						o->num_sorted_run_stop_trigger, o->num_sorted_run_compaction_trigger)));
	if (o->snapshot_num_retained_max < o->snapshot_num_retained_min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot_num_retained_max (%d) must not be less than snapshot_num_retained_min (%d)",
						o->snapshot_num_retained_max, o->snapshot_num_retained_min)));
	if (o->changelog_num_retained_max < o->changelog_num_retained_min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("changelog_num_retained_max (%d) must not be less than changelog_num_retained_min (%d)",
						o->changelog_num_retained_max, o->changelog_num_retained_min)));
}

/*
 * The reloptions after setting set_defs (validated, canonical) and removing
 * reset_names from oldopts; the result is checked as a whole.
 */
Datum
pkopt_merge_reloptions(Datum oldopts, List *set_defs, List *reset_names)
{
	Datum		result = oldopts;
	PkOptions	opts;

	if (set_defs != NIL)
		result = transformRelOptions(result, set_defs, NULL, NULL, false, false);
	if (reset_names != NIL)
	{
		List	   *resets = NIL;
		ListCell   *lc;

		foreach(lc, reset_names)
			resets = lappend(resets, makeDefElem(lfirst(lc), NULL, -1));
		result = transformRelOptions(result, resets, NULL, NULL, false, true);
	}
	pkopt_parse(result, &opts);
	check_combination(&opts);
	return result;
}

/*
 * Split "a, b" into a list of column names (identifiers may be quoted).
 * NIL when the text is not such a list.
 */
List *
pkopt_split_key(const char *primary_key)
{
	List	   *names = NIL;
	char	   *copy = pstrdup(primary_key);

	if (!SplitIdentifierString(copy, ',', &names))
		return NIL;
	return names;
}

/*
 * The value of option name in a list of DefElems (canonical names, as
 * pkopt_validate and untransformRelOptions give them), or NULL.
 */
const char *
pkopt_value(List *defs, const char *name)
{
	ListCell   *lc;

	foreach(lc, defs)
	{
		DefElem    *def = lfirst_node(DefElem, lc);

		if (strcmp(def->defname, name) == 0 && def->arg)
			return defGetString(def);
	}
	return NULL;
}

/*
 * pk_options(rel regclass) -> (key text, value text): every option with its
 * value, defaults included, in the order of DESIGN §8.
 */
PG_FUNCTION_INFO_V1(pk_options);
Datum
pk_options(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		reloptions;
	bool		isnull;
	HeapTuple	tuple;
	PkOptions	o;
	List	   *stored;

	InitMaterializedSRF(fcinfo, 0);
	/* table-level metadata, public as pg_class.reloptions: no lock either */
	pk_check_table(relid);

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))	/* dropped since the check */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	reloptions = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	if (isnull)
		reloptions = (Datum) 0;
	pkopt_parse(reloptions, &o);
	stored = reloptions ? untransformRelOptions(reloptions) : NIL;

	for (int i = 0; i < NUM_OPTS; i++)
	{
		const OptDef *d = &opt_defs[i];
		const char *value = pkopt_value(stored, d->name);
		Datum		values[2];
		bool		nulls[2] = {false, false};

		/* derived defaults are shown as their effective value */
		if (value == NULL)
			value = d->dflt;
		if (value == NULL && strcmp(d->name, "num_sorted_run_stop_trigger") == 0)
			value = psprintf("%d", o.num_sorted_run_stop_trigger);
		else if (value == NULL && strcmp(d->name, "num_levels") == 0)
			value = psprintf("%d", o.num_levels);
		else if (value == NULL && strcmp(d->name, "changelog_num_retained_min") == 0)
			value = psprintf("%d", o.changelog_num_retained_min);
		else if (value == NULL && strcmp(d->name, "changelog_num_retained_max") == 0)
			value = psprintf("%d", o.changelog_num_retained_max);
		else if (value == NULL && strcmp(d->name, "changelog_time_retained") == 0)
			value = pkopt_value(stored, "snapshot_time_retained");
		if (value == NULL && strcmp(d->name, "changelog_time_retained") == 0)
			value = "1h";

		values[0] = CStringGetTextDatum(d->name);
		if (value)
			values[1] = CStringGetTextDatum(value);
		else
			nulls[1] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	ReleaseSysCache(tuple);
	PG_RETURN_VOID();
}
