/*-------------------------------------------------------------------------
 *
 * table_options.c
 *	  Table options of pkmerge tables: one table of option definitions
 *	  (canonical name, Paimon alias, type, bounds or values, default, field
 *	  of PkOptions) drives validation with precise errors, reading them back
 *	  from pg_class.reloptions with defaults, and what pk_options() shows.
 *	  Adding an option is a field in PkOptions and a line in opt_defs.
 *
 * PostgreSQL 15 validates CREATE TABLE / ALTER TABLE options with heap's
 * list; sql_ddl.c therefore takes ours out of the statement and stores them in
 * pg_class.reloptions itself (where pg_dump finds them).  This file knows
 * nothing about statements: it validates DefElem lists and parses text[].
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "table_options.h"

typedef enum OptType
{
	OPT_ENUM,					/* an enum field */
	OPT_BOOL,					/* a bool field */
	OPT_INT,					/* an int field */
	OPT_SIZE,					/* an int64 field, bytes; units accepted: '64MB' */
	OPT_DURATION,				/* an int64 field, milliseconds; units: '1h' */
	OPT_KEY						/* a char * field: comma-separated column names */
} OptType;

/* How a value of an OPT_ENUM option is taken */
typedef enum OptValueKind
{
	VAL_VALID,					/* accepted and stored as spelled here */
	VAL_SPELLING,				/* accepted, stored as the VAL_VALID of its value */
	VAL_FUTURE					/* known, refused: not supported yet */
} OptValueKind;

typedef struct OptValue
{
	const char *name;			/* compared without regard to case */
	int			value;			/* of the option's enum field */
	OptValueKind kind;
} OptValue;

/*
 * One option.  Its default is the text dflt, parsed as a stored value is;
 * or, when dflt is NULL and derive_from is set, the value of the option
 * derive_from plus derive_add; or, when both are NULL, none (a NULL or
 * zero field: primary_key, consumer_expiration_time).  An option derives
 * only from an option that has a dflt.
 */
typedef struct OptDef
{
	const char *name;			/* canonical, snake_case */
	const char *alias;			/* Paimon's spelling, or NULL */
	OptType		type;
	size_t		offset;			/* of its field in PkOptions */
	const char *dflt;
	int64		min;			/* OPT_INT, OPT_SIZE, OPT_DURATION: bounds */
	int64		max;
	const OptValue *values;		/* OPT_ENUM: values, ended by a NULL name */
	const char *derive_from;
	int			derive_add;
} OptDef;

static const OptValue producer_values[] = {
	{"none", PK_PRODUCER_NONE, VAL_VALID},
	{"input", PK_PRODUCER_INPUT, VAL_VALID},
	{"lookup", PK_PRODUCER_LOOKUP, VAL_VALID},
	{"full-compaction", PK_PRODUCER_FULL_COMPACTION, VAL_VALID},
	{"full_compaction", PK_PRODUCER_FULL_COMPACTION, VAL_SPELLING},
	{NULL}
};
static const OptValue engine_values[] = {
	{"deduplicate", PK_MERGE_ENGINE_DEDUPLICATE, VAL_VALID},
	{"partial-update", 0, VAL_FUTURE},
	{"aggregation", 0, VAL_FUTURE},
	{"first-row", 0, VAL_FUTURE},
	{NULL}
};
static const OptValue compression_values[] = {
	{"zstd", PK_COMPRESSION_ZSTD, VAL_VALID},
	{"none", PK_COMPRESSION_NONE, VAL_VALID},
	{NULL}
};

#define INT_MAXV PG_INT32_MAX
#define FIELD(f) offsetof(PkOptions, f)

/* every option, in the order of DESIGN §8 (pk_options shows them so) */
static const OptDef opt_defs[] = {
	/* name, Paimon's alias, type, field, default, min, max */
	{"changelog_producer", "changelog-producer", OPT_ENUM, FIELD(changelog_producer), "none",
	.values = producer_values},
	{"changelog_row_deduplicate", "changelog-producer.row-deduplicate", OPT_BOOL, FIELD(changelog_row_deduplicate), "false"},
	{"full_compaction_delta_commits", "full-compaction.delta-commits", OPT_INT, FIELD(full_compaction_delta_commits), "1", 1, INT_MAXV},
	{"merge_engine", "merge-engine", OPT_ENUM, FIELD(merge_engine), "deduplicate",
	.values = engine_values},
	{"num_sorted_run_compaction_trigger", "num-sorted-run.compaction-trigger", OPT_INT, FIELD(num_sorted_run_compaction_trigger), "5", 1, 1000},
	{"num_sorted_run_stop_trigger", "num-sorted-run.stop-trigger", OPT_INT, FIELD(num_sorted_run_stop_trigger), NULL, 1, 1000,
	.derive_from = "num_sorted_run_compaction_trigger", .derive_add = 3},
	{"num_levels", "num-levels", OPT_INT, FIELD(num_levels), NULL, 2, 1000,
	.derive_from = "num_sorted_run_compaction_trigger", .derive_add = 1},
	{"compaction_max_size_amplification_percent", "compaction.max-size-amplification-percent", OPT_INT, FIELD(compaction_max_size_amplification_percent), "200", 0, INT_MAXV},
	{"compaction_size_ratio", "compaction.size-ratio", OPT_INT, FIELD(compaction_size_ratio), "1", 0, 100},
	{"compaction_small_run_ratio", "compaction.small-run-ratio", OPT_INT, FIELD(compaction_small_run_ratio), "16", 0, 1000000},
	{"write_buffer_size", "write-buffer-size", OPT_SIZE, FIELD(write_buffer_size), "64MB", 1024 * 1024, INT_MAXV},
	{"target_run_size", "target-file-size", OPT_SIZE, FIELD(target_run_size), "128MB", 64 * 1024, INT_MAXV},
	{"compression", "file.compression", OPT_ENUM, FIELD(compression), "zstd",
	.values = compression_values},
	{"compression_level", "file.compression.zstd-level", OPT_INT, FIELD(compression_level), "-1", -7, 22},
	{"snapshot_num_retained_min", "snapshot.num-retained.min", OPT_INT, FIELD(snapshot_num_retained_min), "10", 1, INT_MAXV},
	{"snapshot_num_retained_max", "snapshot.num-retained.max", OPT_INT, FIELD(snapshot_num_retained_max), "2147483647", 1, INT_MAXV},
	{"snapshot_time_retained", "snapshot.time-retained", OPT_DURATION, FIELD(snapshot_time_retained), "1h", 0, INT_MAXV},
	{"changelog_num_retained_min", "changelog.num-retained.min", OPT_INT, FIELD(changelog_num_retained_min), NULL, 1, INT_MAXV,
	.derive_from = "snapshot_num_retained_min"},
	{"changelog_num_retained_max", "changelog.num-retained.max", OPT_INT, FIELD(changelog_num_retained_max), NULL, 1, INT_MAXV,
	.derive_from = "snapshot_num_retained_max"},
	{"changelog_time_retained", "changelog.time-retained", OPT_DURATION, FIELD(changelog_time_retained), NULL, 0, INT_MAXV,
	.derive_from = "snapshot_time_retained"},
	{"primary_key", "primary-key", OPT_KEY, FIELD(primary_key), NULL},
	{"consumer_expiration_time", "consumer.expiration-time", OPT_DURATION, FIELD(consumer_expiration_time), NULL, 1, INT_MAXV},
	/* pkchangelog's own, as heap's autovacuum_enabled: no Paimon spelling */
	{"worker_enabled", NULL, OPT_BOOL, FIELD(worker_enabled), "true"},
};

#define NUM_OPTS lengthof(opt_defs)

/* an OPT_ENUM field is written and read as an int */
StaticAssertDecl(sizeof(PkProducer) == sizeof(int) &&
				 sizeof(PkMergeEngine) == sizeof(int) &&
				 sizeof(PkCompression) == sizeof(int),
				 "option enums must be int-sized");

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

		if (strcmp(d->name, name) == 0 || (d->alias && strcmp(d->alias, name) == 0))
			return d;
		/* underscore and hyphen are the same letter here */
		while (*a && *b && (*a == *b || (*a == '_' && *b == '-')))
			a++, b++;
		if (*a == '\0' && *b == '\0')
			return d;
	}
	return NULL;
}

/* an OPT_ENUM option's entry for value, in any case, or NULL */
static const OptValue *
find_value(const OptDef *d, const char *value)
{
	for (const OptValue *v = d->values; v->name; v++)
		if (pg_strcasecmp(value, v->name) == 0)
			return v;
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

/* parse_int's unit flags for a numeric option */
static int
unit_flags(const OptDef *d)
{
	return d->type == OPT_SIZE ? GUC_UNIT_BYTE :
		d->type == OPT_DURATION ? GUC_UNIT_MS : 0;
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
				const OptValue *v = find_value(d, value);
				StringInfoData list;
				int			n = 0;

				if (v && v->kind == VAL_VALID)
					return pstrdup(v->name);
				if (v && v->kind == VAL_SPELLING)
				{
					for (const OptValue *c = d->values; c->name; c++)
						if (c->kind == VAL_VALID && c->value == v->value)
							return pstrdup(c->name);
				}
				/* only merge engines are announced before they exist */
				if (v && v->kind == VAL_FUTURE)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("merge engine \"%s\" is not supported yet", value),
							 errhint("Use %s = '%s'.", d->name, d->dflt)));
				initStringInfo(&list);
				for (const OptValue *c = d->values; c->name; c++)
					if (c->kind == VAL_VALID)
						appendStringInfo(&list, "%s\"%s\"", n++ ? ", " : "", c->name);
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

				if (!parse_int(value, &v, unit_flags(d), &hint))
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
							 errdetail("Valid values are between \"%lld\" and \"%lld\"%s.",
									   (long long) d->min, (long long) d->max,
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

/* "a, b, c": every option's canonical name */
static char *
option_names(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < NUM_OPTS; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "", opt_defs[i].name);
	return buf.data;
}

/*
 * Options given to a table of another access method (relname): heap would
 * reject ours as bare "unrecognized parameter"; say that it is a pkmerge
 * option instead (creating: in a CREATE TABLE).  Other names are left to
 * PostgreSQL.
 */
void
pkopt_refuse_elsewhere(List *defs, const char *relname, bool creating)
{
	ListCell   *lc;

	foreach(lc, defs)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		char	   *name = def_full_name(def);

		if (find_opt(name))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is an option of pkmerge tables, and table \"%s\" is not a pkmerge table",
							name, relname),
					 creating ?
					 errhint("Create the table with CREATE TABLE ... USING pkmerge, with a primary key.") :
					 errhint("pkmerge options apply only to tables created with CREATE TABLE ... USING pkmerge; to use them, create such a table and copy the rows into it.")));
	}
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
					 errhint("Valid options are %s (or Paimon's spellings of them, such as \"changelog-producer\"); heap storage parameters do not apply to pkmerge tables.",
							 option_names())));
		if (seen[d - opt_defs])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("pkmerge option \"%s\" specified more than once", d->name),
					 d->alias ?
					 errhint("Give each option once; \"%s\" and \"%s\" are spellings of the same option.",
							 d->name, d->alias) :
					 errhint("Give each option once.")));
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

/* the option's field in opts */
#define FIELD_PTR(type, opts, d) ((type *) ((char *) (opts) + (d)->offset))

/*
 * Set the option's field from a stored value (or its default's text),
 * which pkopt_validate has normalized.
 */
static void
set_field(PkOptions *o, const OptDef *d, const char *value)
{
	switch (d->type)
	{
		case OPT_ENUM:
			{
				const OptValue *v = find_value(d, value);

				if (v == NULL || v->kind == VAL_FUTURE)
					elog(ERROR, "stored pkmerge option \"%s\" has invalid value \"%s\"", d->name, value);
				*FIELD_PTR(int, o, d) = v->value;
			}
			break;
		case OPT_BOOL:
			if (!parse_bool(value, FIELD_PTR(bool, o, d)))
				elog(ERROR, "stored pkmerge option \"%s\" has invalid value \"%s\"", d->name, value);
			break;
		case OPT_INT:
		case OPT_SIZE:
		case OPT_DURATION:
			{
				int			v = 0;

				if (!parse_int(value, &v, unit_flags(d), NULL))
					elog(ERROR, "stored pkmerge option \"%s\" has invalid value \"%s\"", d->name, value);
				if (d->type == OPT_INT)
					*FIELD_PTR(int, o, d) = v;
				else
					*FIELD_PTR(int64, o, d) = v;
			}
			break;
		case OPT_KEY:
			*FIELD_PTR(char *, o, d) = pstrdup(value);
			break;
	}
}

/* an option's default when it derives from another: that one's value, plus */
static void
set_derived(PkOptions *o, const OptDef *d)
{
	const OptDef *from = find_opt(d->derive_from);

	Assert(from && from->type == d->type && from->dflt);
	if (d->type == OPT_INT)
		*FIELD_PTR(int, o, d) = *FIELD_PTR(int, o, from) + d->derive_add;
	else
		*FIELD_PTR(int64, o, d) = *FIELD_PTR(int64, o, from) + d->derive_add;
}

/*
 * Parse reloptions (text[] of name=value, or (Datum) 0) into opts.  Names
 * that are not ours (none are stored by sql_ddl.c) are skipped.  Options not
 * stored take their defaults, derived ones last.
 */
void
pkopt_parse(Datum reloptions, PkOptions *opts)
{
	List	   *defs = reloptions ? untransformRelOptions(reloptions) : NIL;
	ListCell   *lc;
	bool		stored[NUM_OPTS] = {0};

	memset(opts, 0, sizeof(PkOptions));
	foreach(lc, defs)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		const OptDef *d = find_opt(def->defname);

		if (d)
		{
			set_field(opts, d, defGetString(def));
			stored[d - opt_defs] = true;
		}
	}
	for (int i = 0; i < NUM_OPTS; i++)
		if (!stored[i] && opt_defs[i].dflt)
			set_field(opts, &opt_defs[i], opt_defs[i].dflt);
	for (int i = 0; i < NUM_OPTS; i++)
		if (!stored[i] && opt_defs[i].derive_from)
			set_derived(opts, &opt_defs[i]);
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
						o->num_sorted_run_stop_trigger, o->num_sorted_run_compaction_trigger),
				 errhint("Raise num_sorted_run_stop_trigger or lower num_sorted_run_compaction_trigger.")));
	if (o->snapshot_num_retained_max < o->snapshot_num_retained_min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snapshot_num_retained_max (%d) must not be less than snapshot_num_retained_min (%d)",
						o->snapshot_num_retained_max, o->snapshot_num_retained_min),
				 errhint("Raise snapshot_num_retained_max or lower snapshot_num_retained_min.")));
	if (o->changelog_num_retained_max < o->changelog_num_retained_min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("changelog_num_retained_max (%d) must not be less than changelog_num_retained_min (%d)",
						o->changelog_num_retained_max, o->changelog_num_retained_min),
				 errhint("Raise changelog_num_retained_max or lower changelog_num_retained_min (each defaults to its snapshot_ counterpart).")));
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
 * The text pk_options shows for an option: the stored value, else the
 * default's text.  A derived default is shown as its effective value: a
 * whole number as the number, a size or duration as the option it copies
 * is shown (its units kept).
 */
static const char *
shown_value(const OptDef *d, List *stored, const PkOptions *o)
{
	const char *value = pkopt_value(stored, d->name);

	if (value)
		return value;
	if (d->dflt || d->derive_from == NULL)
		return d->dflt;
	if (d->type == OPT_INT)
		return psprintf("%d", *FIELD_PTR(const int, o, d));
	return shown_value(find_opt(d->derive_from), stored, o);
}

/*
 * Every option with the value it has in reloptions (text[] or (Datum) 0),
 * defaults included, in the order of DESIGN §8: a List of PkOptionShown.
 */
List *
pkopt_show(Datum reloptions)
{
	List	   *stored = reloptions ? untransformRelOptions(reloptions) : NIL;
	List	   *result = NIL;
	PkOptions	o;

	pkopt_parse(reloptions, &o);
	for (int i = 0; i < NUM_OPTS; i++)
	{
		PkOptionShown *shown = palloc(sizeof(PkOptionShown));

		shown->name = opt_defs[i].name;
		shown->value = shown_value(&opt_defs[i], stored, &o);
		result = lappend(result, shown);
	}
	return result;
}

/* a changelog producer's name, as changelog_producer takes it */
const char *
prod_name(PkProducer p)
{
	switch (p)
	{
		case PK_PRODUCER_INPUT:
			return "input";
		case PK_PRODUCER_LOOKUP:
			return "lookup";
		case PK_PRODUCER_FULL_COMPACTION:
			return "full-compaction";
		default:
			return "none";
	}
}
