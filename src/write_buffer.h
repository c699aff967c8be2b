/*-------------------------------------------------------------------------
 *
 * write_buffer.h
 *	  The write buffer: a transaction's writes to one pkmerge table, kept in
 *	  backend memory until pre-commit flushes them as a run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_WRITE_BUFFER_H
#define PK_WRITE_BUFFER_H

#include "access/htup.h"
#include "utils/rel.h"

#include "run_format.h"
#include "table_desc.h"

#define WB_TRUNCATE 0xFF		/* kind of the entry a TRUNCATE leaves */

/*
 * What a read-modify-write read, for the check at commit (am_dml.c):
 * read_seq is one past the newest sequence number committed then (0: a
 * blind write; PG_UINT64_MAX: the transaction's own row), base_seq the
 * version it read (0: the key was absent), snapshot_id the newest commit's
 * then (commits take snapshot ids in commit order, not so run ids: runs are
 * written before the commit lock).
 */
typedef struct PkRead
{
	uint64		read_seq;
	uint64		base_seq;
	int64		snapshot_id;
} PkRead;

/*
 * One record as written.  Records are never changed or moved once
 * appended (their position is their TID); a savepoint rollback cuts the
 * log back to where the savepoint began.
 */
typedef struct WbEntry
{
	MinimalTuple tup;			/* the row (-U/-D: the row retracted) */
	uint64		id;				/* its TID's number (tid.h): ascending */
	Datum	   *keys;			/* key columns, pointing into tup */
	uint32		hash;			/* pk_key_hash */
	CommandId	cid;			/* command that wrote it */
	SubTransactionId subid;
	uint8		kind;			/* PkRowKind, or WB_TRUNCATE */
	PkRead		read;			/* read-modify-write: what was read */
} WbEntry;

/*
 * A retraction by a read-modify-write: UPDATE, DELETE or MERGE took away
 * the version of the key it read.  A command never reads its own writes, so
 * what it retracts is older than the command; if the same command already
 * wrote the key (a key update moved another row onto it), the retraction
 * takes nothing away from that write (wbuf_fold).
 */
static inline bool
wbuf_is_rmw_retraction(const WbEntry *e)
{
	return (e->kind == PK_UPDATE_BEFORE || e->kind == PK_DELETE) &&
		e->read.read_seq != 0;
}

/* a key-sorted view of the log, shared by the scans that started on it */
typedef struct WbSorted
{
	int			refcount;
	uint32		n;				/* entries covered: positions < n */
	uint32		npos;			/* rows among them (TRUNCATE marks left out) */
	uint32	   *pos;			/* positions, by key, then newest first */
} WbSorted;

/*
 * A run spilled from the buffer (write_spill.c), while its transaction runs.
 * Its catalog row makes it visible to later commands; this entry serves
 * the writing command itself and savepoints.  The rows a TRUNCATE removed
 * join them at commit, as a changelog run without data run
 * (dml_truncate_finish).
 */
typedef struct WbSpill
{
	RunInfo    *run;			/* the data run (NULL: removals) */
	RunInfo    *changelog;		/* the input producer's run, or NULL */
	CommandId	max_cid;		/* newest command among its records */
	SubTransactionId subid;
} WbSpill;

typedef struct WriteBuffer
{
	Oid			relid;
	MemoryContext cxt;
	MemoryContext rowcxt;		/* rows and key arrays: sized exactly */
	WbEntry   **segs;			/* the log, WB_SEG_SIZE entries per segment */
	uint32		nsegs;
	uint32		maxsegs;		/* room in segs */
	uint32		seg0_cap;		/* segment 0 grows up to WB_SEG_SIZE */
	uint32		n;
	Size		bytes;			/* what its entries take (wbuf_entry_bytes) */
	int			nkeys;
	WbSorted   *sorted;			/* latest view, may cover fewer than n */
	List	   *views;			/* every view not yet freed */
	int64		truncate_pos;	/* last WB_TRUNCATE entry, or -1 */
	int64		rmw_snapshot;		/* least PkRead.snapshot_id of its entries */
	bool		ids;			/* entries' ids are row ids, not buffer TIDs */
	uint32		next_tidpos;	/* TIDs of a table without row ids */
	uint64		next_id;		/* of a table with row ids: the chunk
								 * reserved, [next_id, end_id) */
	uint64		end_id;
	/* spilling (write_spill.c) */
	List	   *spills;			/* WbSpill, oldest first */
	uint32		nspills;		/* spills so far, rolled back ones included */
	CommandId	nospill_cid;	/* records of this command and later ones stay
								 * until it ends (ON CONFLICT, key updates) */
	CommandId	key_blind_cid;	/* its ON CONFLICT's arbiters leave out the
								 * key: its inserts are blind on the key */
	Size		spill_check_bytes;	/* look for something to spill above this */
	/* the rows a TRUNCATE removed, written as a run at commit (am_dml.c) */
	struct Tuplestorestate *removed;
	SubTransactionId removed_subid;
} WriteBuffer;

/*
 * The log is kept in segments so that it grows without copying: segment 0
 * starts small (most transactions write a few rows) and doubles up to
 * WB_SEG_SIZE entries; the others are allocated whole.
 */
#define WB_SEG_SHIFT 12
#define WB_SEG_SIZE (1U << WB_SEG_SHIFT)

static inline WbEntry *
wbuf_entry(WriteBuffer *wb, uint32 pos)
{
	return &wb->segs[pos >> WB_SEG_SHIFT][pos & (WB_SEG_SIZE - 1)];
}

/* write_buffer.c */
extern Size wbuf_shmem_size(void);
extern void wbuf_shmem_init(void);
extern bool wbuf_leader_writes(Oid relid);
extern WriteBuffer *wbuf_get(Oid relid, bool create);
extern uint32 wbuf_append(WriteBuffer *wb, PkTable *t, uint8 kind,
						  MinimalTuple tup, CommandId cid, bool copy);
extern WbSorted *wbuf_sorted_pin(WriteBuffer *wb, PkTable *t);
extern void wbuf_sorted_unpin(WriteBuffer *wb, WbSorted *s);
extern int64 wbuf_lookup(WriteBuffer *wb, PkTable *t, const Datum *keys,
						 uint32 hash, CommandId curcid);
extern bool wbuf_visible(WriteBuffer *wb, uint32 pos, CommandId curcid);
extern void wbuf_tid(WriteBuffer *wb, uint32 pos, ItemPointer tid);
extern void wbuf_assign_ids(WriteBuffer *wb, uint64 first);
extern int64 wbuf_find_tid(WriteBuffer *wb, ItemPointer tid);
extern uint32 wbuf_pinned_extent(WriteBuffer *wb);
extern Size wbuf_entry_bytes(WriteBuffer *wb, WbEntry *e);
extern bool wbuf_retracted_by(WriteBuffer *wb, PkTable *t, const Datum *keys,
							  uint32 hash, CommandId cid);
extern PkRowKind wbuf_net_kind(WriteBuffer *wb, const uint32 *group, uint32 n,
							   int64 newest);
extern int64 wbuf_fold(WriteBuffer *wb, const uint32 *group, uint32 n,
					   CommandId curcid);
extern uint32 *wbuf_input_order(WriteBuffer *wb, PkTable *t,
								const uint32 *sorted, uint32 nsorted,
								uint32 from, uint32 to, const bool *skip,
								uint32 *count);
extern uint32 *wbuf_sort_range(WriteBuffer *wb, PkTable *t, uint32 from,
								uint32 to, uint32 *count);
extern void wbuf_remove(WriteBuffer *wb, uint32 from, const bool *keep);
extern List *wbuf_all(void);
extern void wbuf_close(bool close);
extern void wbuf_forget_all(void);
extern void wbuf_subxact_commit(SubTransactionId mysubid,
								SubTransactionId parentsubid);
extern void wbuf_subxact_abort(SubTransactionId mysubid);

#endif							/* PK_WRITE_BUFFER_H */
