/*-------------------------------------------------------------------------
 *
 * log_format.h
 *	  The bytes of a commit log page: its special space and its records,
 *	  encoded and decoded without buffers, locks or WAL (log_format.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_LOG_FORMAT_H
#define PK_LOG_FORMAT_H

#include "access/transam.h"
#include "storage/bufpage.h"

#include "catalog.h"
#include "table_options.h"

/* a record's flags (its first byte, the only one that changes) */
#define LOG_RESOLVED	0x01	/* its transaction committed */
#define LOG_DEAD		0x02	/* its transaction aborted */

/* a small commit's snapshot, as its record holds it */
typedef struct CommitRecord
{
	int64		snapshot_id;
	FullTransactionId xid;
	TimestampTz commit_time;
	CommitKind	kind;
	PkProducer	producer;
	char	   *user;
	int64		total_record_count;
	int64		delta_record_count;
	int64		changelog_record_count;
	double		duration_ms;
	RunInfo    *data;			/* its data run, or NULL */
	RunInfo    *changelog;		/* its changelog run, or NULL */
} CommitRecord;

/* what a record adds to a table's state folded after its row (catalog_tables.c) */
typedef struct CommitFold
{
	int64		snapshot_id;
	int64		seq;			/* its data run's sequence number */
	int64		delta_record_count;
	bool		has_data;		/* (a logged commit always has one) */
} CommitFold;

/* a record's header, whatever its layout */
typedef struct LogRecordHeader
{
	uint8		flags;			/* LOG_RESOLVED, LOG_DEAD */
	uint8		parts;
	uint8		kind;			/* CommitKind, with the layout's flags */
	uint8		producer;		/* PkProducer */
	pg_crc32c	crc;			/* of everything after it */
	int64		snapshot_id;
	uint64		xid;			/* FullTransactionId */
	TimestampTz commit_time;
	double		duration_ms;
} LogRecordHeader;

/*
 * What the records of a page are written and read against: its first
 * record's fields (user NULL: not read yet)
 */
typedef struct LogBase
{
	TimestampTz commit_time;
	char	   *user;
	int64		snapshot_id;
	uint64		xid;
	int64		total_record_count;
	int64		changelog_run_id;	/* 0 without a changelog */
} LogBase;

/* log_format.c: pages */
extern void log_format_page_init(Page page, Oid relfilenode, int64 first_snapshot_id);
extern bool log_format_is_page(Page page, Oid relfilenode);
extern int64 log_format_page_first_snapshot(Page page);
extern void log_format_page_moved(Page page, Oid relfilenode);
extern bool log_format_fits(const CommitRecord *rec);

/* log_format.c: records (the readers return NULL, or what is wrong) */
extern char *log_format_encode(const CommitRecord *rec, const LogBase *base,
							   uint32 *len);
extern bool log_format_needs_base(const char *item, uint32 len);
extern const char *log_format_base(const char *item, uint32 len, LogBase *base);
extern const char *log_format_header(const char *item, uint32 len,
									 const LogBase *base, LogRecordHeader *h);
extern const char *log_format_decode(const char *item, uint32 len,
									 const LogBase *base, Oid relfilenode,
									 CommitRecord **rec);
extern const char *log_format_fold(const char *item, uint32 len,
								   const LogBase *base, CommitFold *f);
extern void log_format_set_flag(char *item, uint8 flag);

#endif							/* PK_LOG_FORMAT_H */
