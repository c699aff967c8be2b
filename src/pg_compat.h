/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  The PostgreSQL API differences between the majors pkchangelog builds
 *	  against (15 and 18), in one place: the rest of the code is written
 *	  against PostgreSQL 18's names and includes this header after its
 *	  PostgreSQL headers; for 15 each name is mapped to its older spelling.
 *	  No other file tests PG_VERSION_NUM.
 *
 *	  Where the two majors differ only in a member's name, the code uses an
 *	  accessor macro defined here (RelationFileNumber, ...); where a function
 *	  gained an argument, the code passes PostgreSQL 18's argument and the
 *	  15 macro drops it; where the older major has no equivalent at all, a
 *	  small function here does the job with each major's means
 *	  (compat_check_query_perms, compat_prune_page).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PKCHANGELOG_PG_COMPAT_H
#define PKCHANGELOG_PG_COMPAT_H

#include "postgres.h"

#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/pg_class_d.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "replication/reorderbuffer.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "access/heapam.h"
#include "access/stratnum.h"
#if PG_VERSION_NUM >= 180000
#include "storage/read_stream.h"
#endif

#if PG_VERSION_NUM < 150000 || (PG_VERSION_NUM >= 160000 && PG_VERSION_NUM < 180000)
#error "pkchangelog builds against PostgreSQL 15 and 18"
#endif

/* ---- a relation's file: RelFileNode before 16, RelFileLocator since ---- */

#if PG_VERSION_NUM >= 180000
#define RelationLocator(rel)		((rel)->rd_locator)
#define LocatorFileNumber(loc)		((loc).relNumber)
#define LocatorDatabase(loc)		((loc).dbOid)
#define LocatorTablespace(loc)		((loc).spcOid)
#define RelationNewFileSubid(rel)	((rel)->rd_newRelfilelocatorSubid)
#else
#include "storage/relfilenode.h"
typedef RelFileNode RelFileLocator;
#define RelationLocator(rel)		((rel)->rd_node)
#define LocatorFileNumber(loc)		((loc).relNode)
#define LocatorDatabase(loc)		((loc).dbNode)
#define LocatorTablespace(loc)		((loc).spcNode)
#define RelationNewFileSubid(rel)	((rel)->rd_newRelfilenodeSubid)
#define RelFileLocatorEquals(a, b)	RelFileNodeEquals(a, b)
#define InitBufferTag(tag, loc, fork, blk) INIT_BUFFERTAG(*(tag), *(loc), fork, blk)
/* the table AM's callback for a new file, under its 15 name */
#define relation_set_new_filelocator relation_set_new_filenode
#endif

/* the relation's file number (pg_class.relfilenode) */
#define RelationFileNumber(rel)		LocatorFileNumber(RelationLocator(rel))

/* ---- backends and transactions ---- */

#if PG_VERSION_NUM >= 180000
#define ProcLocalTransactionId(proc) ((proc)->vxid.lxid)
#else
#define ProcLocalTransactionId(proc) ((proc)->lxid)
#define GetNumberFromPGProc(proc)	((proc)->pgprocno)
#endif

/* ---- tuples ---- */

#if PG_VERSION_NUM < 180000
#define heap_form_minimal_tuple(desc, values, isnull, extra) \
	heap_form_minimal_tuple(desc, values, isnull)
#define heap_copy_minimal_tuple(mtup, extra) heap_copy_minimal_tuple(mtup)
#define minimal_tuple_from_heap_tuple(htup, extra) minimal_tuple_from_heap_tuple(htup)
#endif

/*
 * A TupleHashTable entry's space for its user: inline before the tuple
 * since 18, a pointer field before.  The code keeps a pointer there
 * (additionalsize sizeof(void *)) and reaches it as *(void **) of this.
 */
#if PG_VERSION_NUM < 180000
#define TupleHashEntryGetAdditional(table, entry) ((void *) &(entry)->additional)
#define BuildTupleHashTable(parent, desc, ops, ncols, cols, eqfns, hashfns, colls, \
							nbuckets, addsize, metacxt, tablecxt, tempcxt, variable_iv) \
	BuildTupleHashTableExt(parent, desc, ncols, cols, eqfns, hashfns, colls, \
						   nbuckets, addsize, metacxt, tablecxt, tempcxt, variable_iv)
#endif

/*
 * ---- logical decoding: a change's tuples ----
 * A queued change's tuple is a HeapTuple since 17, a ReorderBufferTupleBuf
 * wrapping one before; ReorderBufferTuple is whichever the server takes.
 */
#if PG_VERSION_NUM >= 180000
typedef HeapTuple ReorderBufferTuple;
#define ReorderBufferTupleHeap(t)	(t)
#define ReorderBufferFreeTuple(rb, t) ReorderBufferFreeTupleBuf(t)
#define ChangeRelLocator(change)	((change)->data.tp.rlocator)
#else
typedef ReorderBufferTupleBuf *ReorderBufferTuple;
#define ReorderBufferTupleHeap(t)	(&(t)->tuple)
#define ReorderBufferAllocTupleBuf(rb, len) ReorderBufferGetTupleBuf(rb, len)
#define ReorderBufferFreeTuple(rb, t) ReorderBufferReturnTupleBuf(rb, t)
#define ReorderBufferAllocChange(rb) ReorderBufferGetChange(rb)
#define ChangeRelLocator(change)	((change)->data.tp.relnode)
#endif

/* a queued change's new and old tuples, NULL where it has none */
#define ChangeNewTuple(change) \
	((change)->data.tp.newtuple ? ReorderBufferTupleHeap((change)->data.tp.newtuple) : NULL)
#define ChangeOldTuple(change) \
	((change)->data.tp.oldtuple ? ReorderBufferTupleHeap((change)->data.tp.oldtuple) : NULL)

/* ---- table access method callbacks ---- */

#if PG_VERSION_NUM < 180000
/* tuple_update's answer: update the indexes or not (an enum since 16) */
typedef bool TU_UpdateIndexes;
#define TU_None false
#define TU_All true
#endif

/* a parallel scan's shared state names its relation */
#if PG_VERSION_NUM >= 180000
#define ParallelScanSetRelation(pscan, rel) ((pscan)->phs_locator = (rel)->rd_locator)
#else
#define ParallelScanSetRelation(pscan, rel) ((pscan)->phs_relid = RelationGetRelid(rel))
#endif

/*
 * scan_analyze_next_block: given the sampled block's number (15), or a
 * read stream of the sampled blocks (17 on).  COMPAT_ANALYZE_NEXT_BLOCK
 * defines the callback "name" on bool fn(TableScanDesc, BlockNumber).
 */
#if PG_VERSION_NUM >= 180000
#define COMPAT_ANALYZE_NEXT_BLOCK(name, fn) \
static bool \
name(TableScanDesc scan, ReadStream *stream) \
{ \
	Buffer		buf = read_stream_next_buffer(stream, NULL); \
	BlockNumber blockno; \
	if (!BufferIsValid(buf)) \
		return false; \
	blockno = BufferGetBlockNumber(buf); \
	ReleaseBuffer(buf); \
	return fn(scan, blockno); \
}
#else
#define COMPAT_ANALYZE_NEXT_BLOCK(name, fn) \
static bool \
name(TableScanDesc scan, BlockNumber blockno, BufferAccessStrategy bstrategy) \
{ \
	return fn(scan, blockno); \
}
#endif

/*
 * Bitmap scans: 15 hands the table AM each page of the bitmap
 * (scan_bitmap_next_block), then asks for its tuples; 18 asks for tuples
 * only, and the AM iterates the bitmap itself.  COMPAT_SCAN_BITMAP defines
 * the callbacks, prefixed "name", on bool page(TableScanDesc, BlockNumber,
 * const OffsetNumber *, int noffsets: -1 when lossy) and bool
 * next(TableScanDesc, TupleTableSlot *); COMPAT_SCAN_BITMAP_CALLBACKS
 * names them in the TableAmRoutine.
 */
#if PG_VERSION_NUM >= 180000
#define COMPAT_SCAN_BITMAP(name, page, next) \
static bool \
name##_next_tuple(TableScanDesc scan, TupleTableSlot *slot, bool *recheck, \
				  uint64 *lossy_pages, uint64 *exact_pages) \
{ \
	for (;;) \
	{ \
		TBMIterateResult res; \
		OffsetNumber offsets[TBM_MAX_TUPLES_PER_PAGE]; \
		int			n = -1; \
		if (next(scan, slot)) \
			return true; \
		if (!tbm_iterate(&scan->st.rs_tbmiterator, &res)) \
			return false; \
		if (!res.lossy) \
			n = tbm_extract_page_tuple(&res, offsets, TBM_MAX_TUPLES_PER_PAGE); \
		*recheck = res.recheck; \
		if (res.lossy) \
			(*lossy_pages)++; \
		else \
			(*exact_pages)++; \
		(void) page(scan, res.blockno, offsets, n); \
	} \
}
#define COMPAT_SCAN_BITMAP_CALLBACKS(name) \
	.scan_bitmap_next_tuple = name##_next_tuple
#else
#define COMPAT_SCAN_BITMAP(name, page, next) \
static bool \
name##_next_block(TableScanDesc scan, TBMIterateResult *tbmres) \
{ \
	return page(scan, tbmres->blockno, tbmres->offsets, tbmres->ntuples); \
} \
static bool \
name##_next_tuple(TableScanDesc scan, TBMIterateResult *tbmres, TupleTableSlot *slot) \
{ \
	return next(scan, slot); \
}
#define COMPAT_SCAN_BITMAP_CALLBACKS(name) \
	.scan_bitmap_next_block = name##_next_block, \
	.scan_bitmap_next_tuple = name##_next_tuple
#endif

/*
 * 15's bitmap heap scan node reads ahead the blocks its bitmap's TIDs name
 * (effective_io_concurrency), through the buffer manager; a pkmerge TID
 * names a row id, not a block, and a block past the file's last segment
 * fails there.  Turned off for such a scan, before it runs.  18 leaves
 * reading ahead to the table AM.
 */
static inline void
compat_bitmap_scan_no_prefetch(PlanState *ps)
{
#if PG_VERSION_NUM < 180000
	if (IsA(ps, BitmapHeapScanState))
		((BitmapHeapScanState *) ps)->prefetch_maximum = 0;
#endif
}

/* ---- planner and statistics ---- */

#if PG_VERSION_NUM < 180000
#define debug_parallel_query force_parallel_mode
#define DEBUG_PARALLEL_OFF FORCE_PARALLEL_OFF
#define pgstat_count_heap_update(rel, hot, newpage) pgstat_count_heap_update(rel, hot)
#define pgstat_report_vacuum(relid, shared, live, dead, starttime) \
	((void) (starttime), pgstat_report_vacuum(relid, shared, live, dead))
#endif

/* ---- index builds ---- */

#if PG_VERSION_NUM < 180000
/* 16 let the caller say whether a pass-by-reference datum is copied */
#define tuplesort_getdatum(state, forward, copy, val, isnull, abbrev) \
	((void) (copy), tuplesort_getdatum(state, forward, val, isnull, abbrev))
#endif

/* ---- VACUUM of indexes ---- */

#if PG_VERSION_NUM >= 180000
/* 16 gave IndexVacuumInfo the table the index is on */
#define IndexVacuumInfoSetTable(ivinfo, rel) ((ivinfo)->heaprel = (rel))
#else
#define IndexVacuumInfoSetTable(ivinfo, rel) ((void) (rel))
/* 18 counts all-frozen pages beside all-visible ones */
#define vac_update_relstats(rel, pages, tuples, visible, frozen, hasindex, frozenxid, \
							minmulti, frozenxid_updated, minmulti_updated, outer) \
	((void) (frozen), vac_update_relstats(rel, pages, tuples, visible, hasindex, frozenxid, \
										  minmulti, frozenxid_updated, minmulti_updated, outer))
#endif

/* ---- privileges ---- */

#if PG_VERSION_NUM < 180000
/* the owner check of a relation (pg_class only, as in 15) */
#define object_ownercheck(classid, objectid, roleid) \
	(AssertMacro((classid) == RelationRelationId), pg_class_ownercheck(objectid, roleid))
#define stringToQualifiedNameList(string, escontext) stringToQualifiedNameList(string)
#endif

/*
 * Checks the privileges the parsed query q needs on its relations, as
 * as_user would have them running it (InvalidOid: the current user);
 * raises the usual error if not.  16 keeps them apart from the range table.
 */
static inline void
compat_check_query_perms(Query *q, Oid as_user)
{
	ListCell   *lc;

#if PG_VERSION_NUM >= 180000
	foreach(lc, q->rteperminfos)
		((RTEPermissionInfo *) lfirst(lc))->checkAsUser = as_user;
	(void) ExecCheckPermissions(q->rtable, q->rteperminfos, true);
	foreach(lc, q->rteperminfos)
		((RTEPermissionInfo *) lfirst(lc))->checkAsUser = InvalidOid;
#else
	foreach(lc, q->rtable)
		((RangeTblEntry *) lfirst(lc))->checkAsUser = as_user;
	(void) ExecCheckRTPerms(q->rtable, true);
	foreach(lc, q->rtable)
		((RangeTblEntry *) lfirst(lc))->checkAsUser = InvalidOid;
#endif
}

/*
 * Since 18 a grouped query's range table ends with a group RTE, through
 * which its target list refers to the GROUP BY expressions.  Flattened
 * back to the expressions themselves, the query reads as 15 gives it (and
 * the planner takes it so too).
 */
static inline void
compat_flatten_group_rte(Query *q)
{
#if PG_VERSION_NUM >= 180000
	if (q->hasGroupRTE)
	{
		q->targetList = (List *) flatten_group_exprs(NULL, q, (Node *) q->targetList);
		q->havingQual = flatten_group_exprs(NULL, q, q->havingQual);
		Assert(llast_node(RangeTblEntry, q->rtable)->rtekind == RTE_GROUP);
		q->rtable = list_truncate(q->rtable, list_length(q->rtable) - 1);
		q->hasGroupRTE = false;
	}
#endif
}

/* ---- index access methods ---- */

/*
 * An index AM whose operator strategies are numbered as btree's (1 "<" to
 * 5 ">"): since 18 the planner finds an ordered index's sort order through
 * the AM's translation of strategies to compare types, and without one
 * takes the index as unordered.
 */
#if PG_VERSION_NUM >= 180000
static inline CompareType
compat_btree_strategy_cmptype(StrategyNumber strategy, Oid opfamily)
{
	return strategy >= BTLessStrategyNumber && strategy <= BTGreaterStrategyNumber ?
		(CompareType) strategy : COMPARE_INVALID;
}

static inline StrategyNumber
compat_btree_cmptype_strategy(CompareType cmptype, Oid opfamily)
{
	return cmptype >= COMPARE_LT && cmptype <= COMPARE_GT ?
		(StrategyNumber) cmptype : InvalidStrategy;
}

#define IndexAmNumbersAsBtree(amroutine) \
	((amroutine)->amtranslatestrategy = compat_btree_strategy_cmptype, \
	 (amroutine)->amtranslatecmptype = compat_btree_cmptype_strategy)
#else
#define IndexAmNumbersAsBtree(amroutine) ((void) (amroutine))
#endif

/*
 * ---- node trees kept in a table ----
 * nodeToString's format is a major's own: a tree stored in a table (and
 * carried to another major by pg_upgrade) is tagged with the major that
 * wrote it, "PG18 {QUERY ...", and read back only by that major.  A tree
 * without a tag was written by 15, the one major before tags.
 * compat_node_load returns NULL for another major's tree.
 */
static inline char *
compat_node_store(const void *node)
{
	return psprintf("PG%d %s", PG_MAJORVERSION_NUM, nodeToString(node));
}

static inline void *
compat_node_load(const char *stored)
{
	int			major = 15;

	if (strncmp(stored, "PG", 2) == 0)
	{
		major = atoi(stored + 2);
		stored = strchr(stored, ' ');
		if (stored == NULL)
			return NULL;
		stored++;
	}
	return major == PG_MAJORVERSION_NUM ? stringToNode(stored) : NULL;
}

/* ---- errors ---- */

/*
 * 72000 (snapshot_too_old) left PostgreSQL's list with old_snapshot_threshold
 * in 17; pkchangelog keeps raising it for changes no longer retained.
 */
#ifndef ERRCODE_SNAPSHOT_TOO_OLD
#define ERRCODE_SNAPSHOT_TOO_OLD MAKE_SQLSTATE('7','2','0','0','0')
#endif

/* ---- heap pages of the extension's catalog ---- */

/*
 * Prunes a heap page (buffer cleanup-locked) of what no snapshot of
 * vistest can see.
 */
static inline void
compat_prune_page(Relation rel, Buffer buf, struct GlobalVisState *vistest)
{
#if PG_VERSION_NUM >= 180000
	PruneFreezeResult presult;
	OffsetNumber off_loc;		/* where an error was, for a callback */

	heap_page_prune_and_freeze(rel, buf, vistest, 0, NULL, &presult,
							   PRUNE_ON_ACCESS, &off_loc, NULL, NULL);
#else
	int			nnewlpdead;

	(void) heap_page_prune(rel, buf, InvalidTransactionId, vistest,
						   InvalidTransactionId, 0, &nnewlpdead, NULL);
#endif
}

#endif							/* PKCHANGELOG_PG_COMPAT_H */
