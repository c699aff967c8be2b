/*-------------------------------------------------------------------------
 *
 * pkmerge_handler.c
 *	  The pkmerge table access method: the TableAmRoutine, translating
 *	  PostgreSQL's calls into calls on the parts (scan.c, dml.c, space.c,
 *	  catalog.c).  Storage-level callbacks that need no part of their own
 *	  (creating storage, size, VACUUM) are here too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/vacuum.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/backend_status.h"
#include "utils/rel.h"

#include "catalog.h"
#include "dml.h"
#include "lookup.h"
#include "run.h"
#include "scan.h"
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
 * scan_analyze_next_tuple stores them with their TID.
 */
static const TupleTableSlotOps *
pk_slot_callbacks(Relation rel)
{
	if (MyBEEntry != NULL &&
		MyBEEntry->st_progress_command == PROGRESS_COMMAND_ANALYZE &&
		MyBEEntry->st_progress_command_target == RelationGetRelid(rel))
		return &TTSOpsHeapTuple;
	return &TTSOpsMinimalTuple;
}

static bool
pk_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	return pk_tid_valid(tid);
}

static void
pk_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
	Relation	rel = scan->rs_rd;
	PkTable    *t = pk_table(rel);
	List	   *runs = lookup_visible_runs(rel, scan->rs_snapshot);
	WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), false);
	PkVersion	v;
	Datum		key[INDEX_MAX_KEYS];
	uint32		hash;

	if (!lookup_tid(rel, t, runs, wb, tid, &v))
		return;
	pk_row_key(t, v.tup, key);
	hash = pk_key_hash(t, key);
	if ((lookup_buffered(wb, t, key, hash, InvalidCommandId, &v) ||
		 lookup_committed(rel, t, lookup_visible_runs(rel, GetLatestSnapshot()),
						  key, hash, &v)) && PK_KIND_IS_ADD(v.kind))
		*tid = v.tid;
}

static TransactionId
pk_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	/* only index AMs that delete entries call this; pkmerge_key has none */
	elog(ERROR, "index tuple deletion is not used by pkmerge tables");
	return InvalidTransactionId;
}

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

static void
pk_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
							  uint32 specToken, bool succeeded)
{
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

static TM_Result
pk_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				bool *update_indexes)
{
	*lockmode = LockTupleExclusive;
	/* pkmerge_key has no entries to maintain */
	*update_indexes = false;
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
 * New storage: CREATE TABLE (newrnode is the relation's own) or TRUNCATE
 * of an existing table (a new one), whose runs then go with the old one.
 */
static void
pk_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
							 char persistence, TransactionId *freezeXid,
							 MultiXactId *minmulti)
{
	SMgrRelation srel;

	/* no xids are stored in the relation's pages: nothing to freeze */
	*freezeXid = InvalidTransactionId;
	*minmulti = InvalidMultiXactId;

	srel = RelationCreateStorage(*newrnode, persistence, true);
	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		/* as heap: the init fork must survive a checkpoint moving redo past it */
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(newrnode, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);

	if (newrnode->relNode != rel->rd_node.relNode)
		dml_truncate(rel);
}

static void
pk_relation_nontransactional_truncate(Relation rel)
{
	/* TRUNCATE of a table created in this transaction: same effect */
	RelationTruncate(rel, 0);
	dml_truncate(rel);
}

static void
pk_relation_copy_data(Relation rel, const RelFileNode *newrnode)
{
	not_supported(rel, "ALTER TABLE ... SET TABLESPACE", NULL);
}

static void
pk_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
							 Relation OldIndex, bool use_sort,
							 TransactionId OldestXmin,
							 TransactionId *xid_cutoff,
							 MultiXactId *multi_cutoff,
							 double *num_tuples, double *tups_vacuumed,
							 double *tups_recently_dead)
{
	not_supported(OldTable, "VACUUM FULL or CLUSTER",
				  "Use VACUUM; runs are merged by compaction.");
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

	heap_vacuum_rel(runs, params, bstrategy);
	table_close(runs, ShareUpdateExclusiveLock);
	space_truncate(rel);
}

static double
pk_index_build_range_scan(Relation table_rel, Relation index_rel,
						  struct IndexInfo *index_info, bool allow_sync,
						  bool anyvisible, bool progress,
						  BlockNumber start_blockno, BlockNumber numblocks,
						  IndexBuildCallback callback, void *callback_state,
						  TableScanDesc scan)
{
	not_supported(table_rel, "building this kind of index",
				  "A pkmerge table has only its primary key index.");
	return 0;
}

static void
pk_index_validate_scan(Relation table_rel, Relation index_rel,
					   struct IndexInfo *index_info, Snapshot snapshot,
					   struct ValidateIndexState *state)
{
	not_supported(table_rel, "CREATE INDEX CONCURRENTLY", NULL);
}

static bool
pk_relation_needs_toast_table(Relation rel)
{
	/* rows are stored whole in compressed blocks */
	return false;
}

static void
pk_relation_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
						  double *tuples, double *allvisfrac)
{
	BlockNumber curpages = RelationGetNumberOfBlocks(rel);

	*pages = curpages;
	*allvisfrac = 0;
	if (rel->rd_rel->reltuples >= 0 && rel->rd_rel->relpages > 0)
		*tuples = rel->rd_rel->reltuples * ((double) curpages / rel->rd_rel->relpages);
	else
		*tuples = scan_count_rows(rel);
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

	.relation_set_new_filenode = pk_relation_set_new_filenode,
	.relation_nontransactional_truncate = pk_relation_nontransactional_truncate,
	.relation_copy_data = pk_relation_copy_data,
	.relation_copy_for_cluster = pk_relation_copy_for_cluster,
	.relation_vacuum = pk_relation_vacuum,
	.scan_analyze_next_block = scan_analyze_next_block,
	.scan_analyze_next_tuple = scan_analyze_next_tuple,
	.index_build_range_scan = pk_index_build_range_scan,
	.index_validate_scan = pk_index_validate_scan,

	.relation_size = table_block_relation_size,
	.relation_needs_toast_table = pk_relation_needs_toast_table,

	.relation_estimate_size = pk_relation_estimate_size,

	/* no bitmap scans: pkmerge_key has no amgetbitmap */
	.scan_bitmap_next_block = NULL,
	.scan_bitmap_next_tuple = NULL,
	.scan_sample_next_block = pk_scan_sample_next_block,
	.scan_sample_next_tuple = pk_scan_sample_next_tuple,
};

Datum
pkmerge_tableam_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&pkmerge_methods);
}
