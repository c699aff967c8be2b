/*-------------------------------------------------------------------------
 *
 * table_options.h
 *	  Table options of pkmerge tables (DESIGN §8): names, aliases, defaults,
 *	  validation, and their storage in pg_class.reloptions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_TABLE_OPTIONS_H
#define PK_TABLE_OPTIONS_H

#include "nodes/pg_list.h"

typedef enum PkProducer
{
	PK_PRODUCER_NONE,
	PK_PRODUCER_INPUT,
	PK_PRODUCER_LOOKUP,
	PK_PRODUCER_FULL_COMPACTION
} PkProducer;

typedef enum PkMergeEngine
{
	PK_MERGE_ENGINE_DEDUPLICATE
} PkMergeEngine;

/* values are stored in run blocks (run_format.h): do not renumber */
typedef enum PkCompression
{
	PK_COMPRESSION_NONE,
	PK_COMPRESSION_ZSTD
} PkCompression;

/* Parsed options of one table; values not set hold their defaults. */
typedef struct PkOptions
{
	PkProducer	changelog_producer;
	bool		changelog_row_deduplicate;
	int			full_compaction_delta_commits;
	PkMergeEngine merge_engine;
	int			num_sorted_run_compaction_trigger;
	int			num_sorted_run_stop_trigger;
	int			num_levels;
	int			compaction_max_size_amplification_percent;
	int			compaction_size_ratio;
	int			compaction_small_run_ratio;	/* 0: no small runs */
	int64		write_buffer_size;	/* bytes */
	int64		target_run_size;	/* bytes */
	PkCompression compression;
	int			compression_level;
	int			snapshot_num_retained_min;
	int			snapshot_num_retained_max;
	int64		snapshot_time_retained; /* milliseconds */
	int			changelog_num_retained_min;
	int			changelog_num_retained_max;
	int64		changelog_time_retained;	/* milliseconds */
	char	   *primary_key;	/* comma-separated column names, or NULL */
	int64		consumer_expiration_time;	/* milliseconds; 0: never */
	bool		worker_enabled; /* the background worker maintains it */
} PkOptions;

/* one option as pk_options() shows it */
typedef struct PkOptionShown
{
	const char *name;			/* canonical */
	const char *value;			/* NULL: unset, and no default */
} PkOptionShown;

/* table_options.c */
extern List *pkopt_validate(List *defs, bool with_values);
extern void pkopt_refuse_elsewhere(List *defs, const char *relname,
								   bool creating);
extern void pkopt_parse(Datum reloptions, PkOptions *opts);
extern Datum pkopt_merge_reloptions(Datum oldopts, List *set_defs,
									List *reset_names);
extern List *pkopt_split_key(const char *primary_key);
extern const char *pkopt_value(List *defs, const char *name);
extern const char *prod_name(PkProducer p);
extern List *pkopt_show(Datum reloptions);

#endif							/* PK_TABLE_OPTIONS_H */
