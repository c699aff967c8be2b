/*-------------------------------------------------------------------------
 *
 * am_onconflict.c
 *	  INSERT ... ON CONFLICT on pkmerge tables.  PostgreSQL 15 builds the
 *	  arbiter information (BuildSpeculativeIndexInfo) only for btree and
 *	  raises an error for any other unique index.  The executor opens a
 *	  result relation's indexes lazily, only if nobody did before; so right
 *	  after ExecutorStart this hook opens them for every pkmerge result
 *	  relation and fills in the equality operators of the pkmerge_key
 *	  index.  The conflict check then runs through the key index (a point
 *	  lookup), and ON CONFLICT DO UPDATE through tuple_lock and
 *	  tuple_update like any UPDATE.  Such a command keeps its writes in the
 *	  write buffer (no spilling) until it ends.
 *
 * The same hook keeps in the buffer until it ends the writes of a statement
 * that writes a pkmerge table from more than one of its parts (a
 * data-modifying WITH): one part may add a key that another then reads and
 * retracts, and the buffer orders the two only while both are in it
 * (wbuf_fold; a spilled add of the key would make the retraction find the
 * row "already changed by this command" and skip it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "am_onconflict.h"
#include "table_desc.h"
#include "write_buffer.h"

static ExecutorStart_hook_type prev_executor_start = NULL;

static void
prepare_result_relation(ResultRelInfo *rri, CommandId cid)
{
	Relation	rel = rri->ri_RelationDesc;

	if (!pk_is_pkmerge(rel))
		return;

	/*
	 * The command checks its proposed rows against each other (and what it
	 * wrote is looked up through the write buffer): its writes must stay
	 * in the buffer until it ends.
	 */
	if (rri->ri_onConflictArbiterIndexes != NIL || rri->ri_onConflict != NULL)
	{
		WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);

		wb->nospill_cid = Min(wb->nospill_cid, cid);
		/*
		 * Arbiters that leave out the key (ON CONFLICT on a unique index of
		 * other columns): the key is not checked, and an insert of a key
		 * that has a row replaces it, as a plain INSERT does.
		 */
		if (rri->ri_onConflictArbiterIndexes != NIL)
		{
			list_free(RelationGetIndexList(rel));	/* sets rd_pkindex */
			if (!list_member_oid(rri->ri_onConflictArbiterIndexes, rel->rd_pkindex))
				wb->key_blind_cid = cid;
		}
	}
	if (!rel->rd_rel->relhasindex || rri->ri_IndexRelationDescs != NULL)
		return;
	ExecOpenIndices(rri, false);
	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];
		int			n = IndexRelationGetNumberOfKeyAttributes(index);

		if (!ii->ii_Unique)
			continue;
		/* what BuildSpeculativeIndexInfo computes for btree */
		ii->ii_UniqueOps = palloc(sizeof(Oid) * n);
		ii->ii_UniqueProcs = palloc(sizeof(Oid) * n);
		ii->ii_UniqueStrats = palloc(sizeof(uint16) * n);
		for (int k = 0; k < n; k++)
		{
			Oid			op = get_opfamily_member(index->rd_opfamily[k],
												 index->rd_opcintype[k],
												 index->rd_opcintype[k],
												 BTEqualStrategyNumber);

			if (!OidIsValid(op))
				elog(ERROR, "missing equality operator in operator family %u",
					 index->rd_opfamily[k]);
			ii->ii_UniqueOps[k] = op;
			ii->ii_UniqueProcs[k] = get_opcode(op);
			ii->ii_UniqueStrats[k] = BTEqualStrategyNumber;
		}
	}
}

/*
 * A statement with a data-modifying WITH: the pkmerge tables that more
 * than one of its parts writes keep the command's records in the buffer
 * until it ends (see the header comment).
 */
static void
hold_shared_targets(List *rris, CommandId cid)
{
	ListCell   *lc;
	ListCell   *lc2;

	foreach(lc, rris)
	{
		Relation	rel = ((ResultRelInfo *) lfirst(lc))->ri_RelationDesc;

		if (!pk_is_pkmerge(rel))
			continue;
		for_each_cell(lc2, rris, lnext(rris, lc))
		{
			if (RelationGetRelid(((ResultRelInfo *) lfirst(lc2))->ri_RelationDesc) ==
				RelationGetRelid(rel))
			{
				WriteBuffer *wb = wbuf_get(RelationGetRelid(rel), true);

				wb->nospill_cid = Min(wb->nospill_cid, cid);
				break;
			}
		}
	}
}

static void
pk_executor_start(QueryDesc *queryDesc, int eflags)
{
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	foreach(lc, queryDesc->estate->es_opened_result_relations)
		prepare_result_relation(lfirst(lc), queryDesc->estate->es_output_cid);
	if (queryDesc->plannedstmt->hasModifyingCTE)
		hold_shared_targets(queryDesc->estate->es_opened_result_relations,
							queryDesc->estate->es_output_cid);
}

void
onconflict_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = pk_executor_start;
}
