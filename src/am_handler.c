/*-------------------------------------------------------------------------
 *
 * am_handler.c
 *	  The pkmerge table access method: the TableAmRoutine, translating
 *	  PostgreSQL's calls into calls on the parts (am_scan.c, am_dml.c, run_space.c,
 *	  the catalog_*.c files).  Storage-level callbacks that need no part of their own
 *	  (creating storage, size, VACUUM) are here too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/heapam.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/vacuum.h"
#include "executor/tuptable.h"
#include "pgstat.h"
#include "replication/logicalworker.h"
#include "run_list.h"
#include "run_space.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/backend_status.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am_dml.h"
#include "am_index.h"
#include "am_scan.h"
#include "catalog.h"
#include "maint_compaction.h"
#include "lookup.h"
#include "pg_compat.h"
#include "sql_ddl.h"
#include "tid.h"

PG_FUNCTION_INFO_V1(pkmerge_tableam_handler);

static void
not_supported(Relation rel, const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported on pkmerge table \"%s\"", what,
					RelationGetRelationName(rel)),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * Rows are minimal tuples, read in place from decompressed blocks.  ANALYZE
 * is the exception: it copies each sampled row out of the slot as a heap
 * tuple and sorts the sample by those tuples' t_self, which a minimal
 * tuple slot does not carry (invalid TIDs fail an assertion there).  Its
 * slot, made while its progress names the table, keeps heap tuples, and
 * scan_analyze_next_tuple stores them with their TID.  So does the logical
 * replication apply worker, which reads the xmin of the row it changes to
 * tell whose it was (PostgreSQL 18's conflict detection): a heap tuple
 * slot answers that (an invalid xmin: no origin is known), where a minimal
 * tuple slot raises an error.  scan_store_row fills either.
 */
static const TupleTableSlotOps *
pk_slot_callbacks(Relation rel)
{
	if (IsLogicalWorker() ||
		(MyBEEntry != NULL &&
		 MyBEEntry->st_progress_command == PROGRESS_COMMAND_ANALYZE &&
		 MyBEEntry->st_progress_command_target == RelationGetRelid(rel)))
		return &TTSOpsHeapTuple;
	return &TTSOpsMinimalTuple;
}

/*
 * TIDs are row numbers (tid.h), not block and offset: a TID is valid when
 * it decodes to a row number, whatever the file's length, since the row
 * numbers of runs and of the write buffer have nothing to do with blocks.
 * Whether the row exists is for the fetch to find out.
 */
static bool
pk_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	return pk_tid_valid(tid);
}

/*
 * currtid_byrelname and WHERE CURRENT OF after an update: the TID of the
 * key's newest version.  A pkmerge update writes a new version under a new
 * TID rather than chaining the old one to it, so the chain heap follows
 * is the key: find the row the TID names, then the newest live version of
 * its key (own buffer first, then the latest committed runs).  A deleted
 * key leaves the TID as it was, as heap does at the end of a chain.
 */
static void
pk_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
	Relation	rel = scan->rs_rd;
	PkTable    *t = pk_table(rel);
	List	   *runs = runlist_visible(rel, scan->rs_snapshot);
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	PkVersion	v;
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;

	if (!lookup_tid(rel, t, runs, wb, tid, &v))
		return;
	pk_row_key(t, v.tup, key);
	hash = pk_key_hash(t, key);
	if ((lookup_buffered(wb, t, key, hash, InvalidCommandId, &v) ||
		 lookup_committed(rel, t, runlist_visible(rel, GetLatestSnapshot()),
						  key, hash, &v)) && PK_KIND_IS_ADD(v.kind))
		*tid = v.tid;
}

/*
 * A btree index asks which of its entries it may delete before it splits
 * a page (bottom-up deletion): none, here (DECISIONS, "Secondary
 * indexes").  Whether a row version is gone for every snapshot is VACUUM's
 * to find out (am_index.c), which removes the entries of those no run
 * holds any more.
 */
static TransactionId
pk_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	for (int i = 0; i < delstate->ndeltids; i++)
		delstate->status[delstate->deltids[i].id].knowndeletable = false;
	return InvalidTransactionId;
}

/*
 * Inserts append to the transaction's write buffer and read nothing: an
 * INSERT of an existing key is an upsert (DESIGN §3), which is what keeps
 * ingest from reading.  Bulk-insert state and options (heap's FSM and
 * WAL hints) have no meaning for a buffer written as a run at commit.
 */
static void
pk_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid, int options,
				struct BulkInsertStateData *bistate)
{
	dml_insert(rel, slot, cid, false);
}

static void
pk_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate,
							uint32 specToken)
{
	/* the arbiter check ran against committed and own versions: insert */
	dml_insert(rel, slot, cid, true);
}

/*
 * A speculative insert is not visible to other sessions before commit (it
 * is in the buffer): nothing to confirm.  pkmerge_key reports no conflict
 * at index insertion (the arbiter check before the insert is the check,
 * and an insert of the same key by another transaction is caught at
 * commit), but a unique index of other columns may have met another
 * transaction's new row meanwhile: then the row goes.
 */
static void
pk_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
							  uint32 specToken, bool succeeded)
{
	if (!succeeded)
		dml_cancel_insert(rel, &slot->tts_tid);
}

static void
pk_multi_insert(Relation rel, TupleTableSlot **slots, int nslots, CommandId cid,
				int options, struct BulkInsertStateData *bistate)
{
	for (int i = 0; i < nslots; i++)
		dml_insert(rel, slots[i], cid, false);
}

static TM_Result
pk_tuple_delete(Relation rel, ItemPointer tid, CommandId cid, Snapshot snapshot,
				Snapshot crosscheck, bool wait, TM_FailureData *tmfd,
				bool changingPart)
{
	return dml_delete(rel, tid, cid, snapshot, tmfd);
}

/*
 * Update, delete and row locks check that the version acted on is still
 * the newest one (am_dml.c), as heap's do, and record what they read so
 * that commit can check it again under the commit lock.  Update reports
 * LockTupleExclusive: an update may change the key (it is a delete and an
 * insert), so no weaker lock mode describes it.
 */
static TM_Result
pk_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				TU_UpdateIndexes *update_indexes)
{
	*lockmode = LockTupleExclusive;
	/*
	 * pkmerge_key has no entries to maintain; other indexes get the new
	 * version's row id (am_index.c)
	 */
	*update_indexes = pk_table_row_ids(pk_table(rel)) ? TU_All : TU_None;
	return dml_update(rel, otid, slot, cid, snapshot, tmfd);
}

static TM_Result
pk_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			  TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			  LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	return dml_lock(rel, tid, snapshot, slot, cid, flags, tmfd);
}

/*
 * New storage: CREATE TABLE (newlocator is the relation's own) or TRUNCATE
 * of an existing table (a new one), whose runs then go with the old one.
 */
static void
pk_relation_set_new_filelocator(Relation rel, const RelFileLocator *newlocator,
								char persistence, TransactionId *freezeXid,
								MultiXactId *minmulti)
{
	SMgrRelation srel;

	/* no xids are stored in the relation's pages: nothing to freeze */
	*freezeXid = InvalidTransactionId;
	*minmulti = InvalidMultiXactId;

	srel = RelationCreateStorage(*newlocator, persistence, true);
	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		/* as heap: the init fork must survive a checkpoint moving redo past it */
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(newlocator, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);

	if (LocatorFileNumber(*newlocator) != RelationFileNumber(rel))
		dml_truncate(rel);
}

static void
pk_relation_nontransactional_truncate(Relation rel)
{
	/* TRUNCATE of a table created in this transaction: same effect */
	RelationTruncate(rel, 0);
	dml_truncate(rel);
}

/*
 * SET TABLESPACE would copy the file block by block to the new place, but
 * the runs' catalog rows name the old relfilenode: refused, with a hint to
 * create the table anew in the tablespace and copy its rows.
 */
static void
pk_relation_copy_data(Relation rel, const RelFileLocator *newlocator)
{
	not_supported(rel, "ALTER TABLE ... SET TABLESPACE", NULL);
}

/*
 * The records and pages of the table's data runs, for VACUUM's statistics.
 * Not through the active snapshot, which vacuum_rel took before the
 * catalog was vacuumed: a lazy VACUUM runs with PROC_IN_VACUUM, so its
 * xmin holds back nobody's pruning, its own included, and the runs a
 * compaction replaced since that snapshot may have lost their rows.  A
 * snapshot taken now, reading the data runs' rows directly, misses at most
 * a run retired meanwhile: the figures are an estimate anyway.  VACUUM
 * FULL counts with it too (its own compaction included).
 */
static double
vacuum_count_rows(Relation rel, BlockNumber *pages)
{
	double		n = 0;
	ListCell   *lc;

	*pages = 0;
	foreach(lc, runlist_catalog(RelationGetRelid(rel), GetLatestSnapshot(), true))
	{
		RunInfo    *r = lfirst(lc);

		if (r->relfilenode != RelationFileNumber(rel))
			continue;
		n += r->record_count;
		*pages += r->nblocks;
	}
	return n;
}

/*
 * VACUUM FULL (CLUSTER is refused in sql_ddl.c, which lets only VACUUM FULL's
 * new storage be created): a full compaction, as pk_compact(rel, true)
 * does (its COMPACT snapshot, and the full-compaction producer's
 * changelog), then every run the table still has (the compaction's
 * output, the changelog and delta runs of retained snapshots) is copied
 * into NewTable's file from its first block on.  PostgreSQL swaps that
 * file in when the command commits and removes the old one; an abort or
 * a crash leaves the table as it was.
 */
static void
pk_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
							 Relation OldIndex, bool use_sort,
							 TransactionId OldestXmin,
							 TransactionId *xid_cutoff,
							 MultiXactId *multi_cutoff,
							 double *num_tuples, double *tups_vacuumed,
							 double *tups_recently_dead)
{
	BlockNumber before = RelationGetNumberOfBlocks(OldTable);
	BlockNumber data_pages;
	BlockNumber pages;
	double		records_before;
	int			nruns;

	if (OldIndex != NULL)
		not_supported(OldTable, "CLUSTER", NULL);
	/* rows copied as they are still need their added columns' defaults */
	ddl_keep_missing_values(OldTable);
	records_before = vacuum_count_rows(OldTable, &data_pages);
	(void) compact_table(OldTable, true, false);
	CommandCounterIncrement();
	*num_tuples = vacuum_count_rows(OldTable, &data_pages);
	*tups_vacuumed = Max(records_before - *num_tuples, 0);
	*tups_recently_dead = 0;
	space_rewrite(OldTable, NewTable, &nruns, &pages);
	/* the moved runs, for the secondary indexes PostgreSQL builds next */
	CommandCounterIncrement();

	/* no xids are stored in the relation's pages: nothing to freeze */
	*xid_cutoff = InvalidTransactionId;
	*multi_cutoff = InvalidMultiXactId;

	ereport(ddl_vacuum_full_elevel(),
			(errmsg("pkmerge table \"%s\": rewritten from %u to %u pages",
					RelationGetRelationName(OldTable), before, pages),
			 errdetail("%d runs hold %u pages, %u of them data runs with %.0f records.",
					   nruns, pages, data_pages, *num_tuples)));
}

/*
 * VACUUM: remove the catalog rows of runs no snapshot can see any more
 * (which frees their blocks for new runs), then give the unused blocks at
 * the end of the file back to the operating system.
 */
static void
pk_relation_vacuum(Relation rel, struct VacuumParams *params,
				   BufferAccessStrategy bstrategy)
{
	Relation	runs = table_open(cat_runs_relid(), ShareUpdateExclusiveLock);
	VacuumParams catparams = *params;
	BlockNumber before;
	BlockNumber after;
	BlockNumber used;
	BlockNumber data_pages;
	double		records;
	TimestampTz starttime = GetCurrentTimestamp();

	/* VERBOSE reports on the table, not on the catalog's pages */
	catparams.options &= ~VACOPT_VERBOSE;
	heap_vacuum_rel(runs, &catparams, bstrategy);
	table_close(runs, ShareUpdateExclusiveLock);
	/* the entries of row versions gone, out of the secondary indexes */
	index_vacuum(rel, params, bstrategy);
	space_truncate(rel, &before, &after, &used);
	records = vacuum_count_rows(rel, &data_pages);

	/*
	 * The cumulative statistics: last_vacuum and vacuum_count, and the
	 * records of the data runs as live tuples (an upper bound: a key
	 * written again before compaction counts again).
	 */
	pgstat_report_vacuum(RelationGetRelid(rel), rel->rd_rel->relisshared,
						 (PgStat_Counter) records, 0, starttime);
	ereport((params->options & VACOPT_VERBOSE) ? INFO : DEBUG2,
			(errmsg("pkmerge table \"%s\": file truncated from %u to %u pages",
					RelationGetRelationName(rel), before, after),
			 errdetail("Runs hold %u pages, %u of them data runs with %.0f records; %u pages are free in the file.",
					   used, data_pages, records, after - Min(used, after))));
}

static double
pk_index_build_range_scan(Relation table_rel, Relation index_rel,
						  struct IndexInfo *index_info, bool allow_sync,
						  bool anyvisible, bool progress,
						  BlockNumber start_blockno, BlockNumber numblocks,
						  IndexBuildCallback callback, void *callback_state,
						  TableScanDesc scan)
{
	/* TIDs are row ids, not places: a block range means nothing (BRIN asks one at a time) */
	if (start_blockno != 0 || numblocks != InvalidBlockNumber)
		not_supported(table_rel, "summarizing a range of blocks",
					  "A pkmerge table's TIDs are row ids: summarize the whole table.");
	return index_build_scan(table_rel, index_rel, index_info, callback,
							callback_state, scan);
}

static void
pk_index_validate_scan(Relation table_rel, Relation index_rel,
					   struct IndexInfo *index_info, Snapshot snapshot,
					   struct ValidateIndexState *state)
{
	index_validate(table_rel, index_rel, index_info, snapshot, state);
}

static bool
pk_relation_needs_toast_table(Relation rel)
{
	/* rows are stored whole in compressed blocks */
	return false;
}

/*
 * The average width of rel's rows, as get_rel_data_width (plancat.c) gives
 * it and leaves in attr_widths for the planner, but cheaper for a new
 * connection's first plan of the table, which would otherwise build a
 * syscache entry of pg_statistic for each column, where a heap table's plan
 * reads the columns the query names: a fixed-length column's width is its
 * type's length (what its statistics say too), and the others' come from
 * one scan of the table's statistics (pk_table_stat_width), unless an
 * extension hooks get_attavgwidth.
 */
static int32
rel_data_width(Relation rel, int32 *attr_widths)
{
	int32		width = 0;

	for (int i = 1; i <= RelationGetNumberOfAttributes(rel); i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i - 1);
		int32		w;

		if (att->attisdropped)
			continue;
		if (attr_widths[i] > 0)
		{
			width += attr_widths[i];
			continue;
		}
		if (att->attlen > 0)
			w = att->attlen;
		else if (get_attavgwidth_hook)
			w = get_attavgwidth(RelationGetRelid(rel), i);
		else
			w = pk_table_stat_width(pk_table(rel), i);
		if (w <= 0)
			w = get_typavgwidth(att->atttypid, att->atttypmod);
		attr_widths[i] = w;
		width += w;
	}
	return width;
}

/*
 * The planner's size of the table: the records of its data runs, from the
 * catalog as the run list cache has it (no I/O), and as pages the ones a
 * heap table of those rows would have.  Heap scales ANALYZE's density by
 * the file's growth; a pkmerge file also holds the changelog and delta
 * runs of retained snapshots and free space, so its size says little
 * about the rows.  The pages of the data runs themselves are compressed:
 * a scan's work is decompressing and reading the rows, and the planner
 * gives a table its parallel workers by pages (compute_parallel_worker),
 * so a table that compresses well would get fewer workers than the same
 * rows in heap, or none.  The rows' width comes from ANALYZE's statistics
 * where there are some, from their types otherwise, as heap's estimate of
 * a table never analyzed does.
 */
static void
pk_relation_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
						  double *tuples, double *allvisfrac)
{
	BlockNumber stored;
	double		width;
	double		heap_pages;

	*allvisfrac = 0;

	/*
	 * Without column widths the caller is an index build asking how many
	 * workers to use (plan_create_index_workers) or, for hash, how many
	 * rows to expect: no pages, so no workers, as a build reads the rows in
	 * one scan (am_index.c); the rows as VACUUM or ANALYZE counted them,
	 * rather than read under a snapshot that may not see the command's
	 * own rewrite (VACUUM FULL builds the indexes after it)
	 */
	if (attr_widths == NULL)
	{
		*pages = 0;
		*tuples = Max(rel->rd_rel->reltuples, 0);
		return;
	}
	*tuples = scan_count_rows(rel, &stored, true);
	width = rel_data_width(rel, attr_widths) +
		MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData);
	heap_pages = ceil(*tuples * width / (BLCKSZ - SizeOfPageHeaderData));
	*pages = (BlockNumber) Max((double) stored, Min(heap_pages, (double) MaxBlockNumber));

}

static bool
pk_scan_sample_next_block(TableScanDesc scan, struct SampleScanState *scanstate)
{
	not_supported(scan->rs_rd, "TABLESAMPLE", NULL);
	return false;
}

static bool
pk_scan_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
						  TupleTableSlot *slot)
{
	not_supported(scan->rs_rd, "TABLESAMPLE", NULL);
	return false;
}

/* ANALYZE's next sampled block (am_scan.c), however the server hands it over */
COMPAT_ANALYZE_NEXT_BLOCK(analyze_next_block, scan_analyze_block)

/* bitmap scans: by secondary indexes (pkmerge_key has no amgetbitmap) */
COMPAT_SCAN_BITMAP(bitmap, scan_bitmap_page, scan_bitmap_next)

static const TableAmRoutine pkmerge_methods = {
	.type = T_TableAmRoutine,

	.slot_callbacks = pk_slot_callbacks,

	.scan_begin = scan_begin,
	.scan_end = scan_end,
	.scan_rescan = scan_rescan,
	.scan_getnextslot = scan_getnextslot,

	.parallelscan_estimate = scan_parallel_estimate,
	.parallelscan_initialize = scan_parallel_initialize,
	.parallelscan_reinitialize = scan_parallel_reinitialize,

	.index_fetch_begin = fetch_begin,
	.index_fetch_reset = fetch_reset,
	.index_fetch_end = fetch_end,
	.index_fetch_tuple = fetch_tuple,

	.tuple_fetch_row_version = fetch_row_version,
	.tuple_tid_valid = pk_tuple_tid_valid,
	.tuple_get_latest_tid = pk_tuple_get_latest_tid,
	.tuple_satisfies_snapshot = fetch_satisfies_snapshot,
	.index_delete_tuples = pk_index_delete_tuples,

	.tuple_insert = pk_tuple_insert,
	.tuple_insert_speculative = pk_tuple_insert_speculative,
	.tuple_complete_speculative = pk_tuple_complete_speculative,
	.multi_insert = pk_multi_insert,
	.tuple_delete = pk_tuple_delete,
	.tuple_update = pk_tuple_update,
	.tuple_lock = pk_tuple_lock,

	.relation_set_new_filelocator = pk_relation_set_new_filelocator,
	.relation_nontransactional_truncate = pk_relation_nontransactional_truncate,
	.relation_copy_data = pk_relation_copy_data,
	.relation_copy_for_cluster = pk_relation_copy_for_cluster,
	.relation_vacuum = pk_relation_vacuum,
	.scan_analyze_next_block = analyze_next_block,
	.scan_analyze_next_tuple = scan_analyze_next_tuple,
	.index_build_range_scan = pk_index_build_range_scan,
	.index_validate_scan = pk_index_validate_scan,

	.relation_size = table_block_relation_size,
	.relation_needs_toast_table = pk_relation_needs_toast_table,

	.relation_estimate_size = pk_relation_estimate_size,

	COMPAT_SCAN_BITMAP_CALLBACKS(bitmap),
	.scan_sample_next_block = pk_scan_sample_next_block,
	.scan_sample_next_tuple = pk_scan_sample_next_tuple,
};

Datum
pkmerge_tableam_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&pkmerge_methods);
}
