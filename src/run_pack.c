/*-------------------------------------------------------------------------
 *
 * run_pack.c
 *	  Packed rows of tight streams (run_format.h, RUN_MAGIC_PACKED): a
 *	  row's MinimalTuple without the bytes its descriptor can tell again.
 *
 *	  This file owns the packed row's bytes and nothing else: whether a
 *	  stream is tight or packed is run_write.c's choice, reading one
 *	  run_read.c's; no buffer, catalog or WAL is touched here.
 *
 *	  Only the attributes' width, by-value flag and alignment are read
 *	  from the descriptor: a dropped column keeps them in pg_attribute, a
 *	  tuple written before an ADD COLUMN has fewer attributes than the
 *	  descriptor (its t_infomask2 says how many), and a column's type
 *	  cannot be changed (ALTER COLUMN TYPE is refused).  A row is packed
 *	  only if unpacking it gives its bytes back exactly (run_pack_row
 *	  checks), so a tuple formed any other way leaves its stream tight.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "utils/memutils.h"

#include "run_format.h"
#include "run_pack.h"

/* a row's bytes start at this offset of its MinimalTuple */
#define ROW_START	MINIMAL_TUPLE_DATA_OFFSET

/* the integer-like attributes the mask covers; later ones are kept as they are */
#define MASK_BITS	63

/* is att a fixed-width by-value attribute that may be a varint? */
static inline bool
int_like(Form_pg_attribute att)
{
	return att->attbyval && (att->attlen == 2 || att->attlen == 4 || att->attlen == 8);
}

static int64
fixed_get(const char *p, int len)
{
	int16		v2;
	int32		v4;
	int64		v8;

	switch (len)
	{
		case 2:
			memcpy(&v2, p, sizeof(v2));
			return v2;
		case 4:
			memcpy(&v4, p, sizeof(v4));
			return v4;
		default:
			memcpy(&v8, p, sizeof(v8));
			return v8;
	}
}

/* put v at p (if not NULL) as len bytes; false if it does not fit them */
static bool
fixed_put(char *p, int len, int64 v)
{
	int16		v2 = (int16) v;
	int32		v4 = (int32) v;
	const void *bytes = len == 2 ? (const void *) &v2 :
		len == 4 ? (const void *) &v4 : (const void *) &v;

	if ((len == 2 && v2 != v) || (len == 4 && v4 != v))
		return false;
	if (p)
		memcpy(p, bytes, len);
	return true;
}

/* where a tuple's data begins (from its MinimalTuple's start) */
static inline uint32
data_start(int natts, bool hasnull)
{
	return MAXALIGN(SizeofMinimalTupleHeader + (hasnull ? BITMAPLEN(natts) : 0));
}

/*
 * The length of the varlena whose first avail bytes are at p (unaligned),
 * in *size; false if its header is cut short or is no header a row holds
 * (an external datum other than a TOAST pointer, a length shorter than
 * the header).
 */
static bool
varlena_size(const char *p, uint32 avail, uint32 *size)
{
	uint32		h4;

	if (avail < 1)
		return false;
	if (VARATT_IS_1B_E(p))
	{
		if (avail < VARHDRSZ_EXTERNAL || VARTAG_1B_E(p) != VARTAG_ONDISK)
			return false;
		*size = VARHDRSZ_EXTERNAL + sizeof(varatt_external);
	}
	else if (VARATT_IS_1B(p))
	{
		*size = VARSIZE_1B(p);
		if (*size < VARHDRSZ_SHORT)
			return false;
	}
	else
	{
		if (avail < VARHDRSZ)
			return false;
		memcpy(&h4, p, sizeof(h4));
		*size = VARSIZE_4B(&h4);
		if (*size < VARHDRSZ)
			return false;
	}
	return *size <= avail;
}

/*
 * Unpack the packed row of len bytes at packed: its tuple (from
 * t_infomask2 on) into out, if not NULL, and its length into *tlen.  False
 * if the row does not add up (a corrupt stream), or if the tuple would
 * take more than cap bytes of out: every length is checked against the
 * row's end before anything is taken by it, and nothing is written past
 * cap bytes (without out, cap bounds nothing).
 */
bool
run_unpack_row(TupleDesc desc, const char *packed, uint32 len, char *out, uint32 cap,
			   uint32 *tlen)
{
	const char *p = packed;
	const char *end = packed + len;
	uint64		infomask2;
	uint64		infomask;
	uint64		mask;
	int			natts;
	bool		hasnull;
	const bits8 *bits = NULL;
	uint32		off;
	int			nints = 0;

	if (!run_varint_get(&p, end, &infomask2) || infomask2 > PG_UINT16_MAX ||
		!run_varint_get(&p, end, &infomask) || infomask > PG_UINT16_MAX)
		return false;
	natts = (int) (infomask2 & HEAP_NATTS_MASK);
	hasnull = (infomask & HEAP_HASNULL) != 0;
	if (natts > desc->natts)
		return false;
	if (hasnull)
	{
		if (end - p < BITMAPLEN(natts))
			return false;
		bits = (const bits8 *) p;
		p += BITMAPLEN(natts);
	}
	if (!run_varint_get(&p, end, &mask))
		return false;
	off = data_start(natts, hasnull);
	if (out == NULL)
		cap = PG_UINT32_MAX;
	if (off - ROW_START > cap)
		return false;
	if (out)
	{
		uint16		v2 = (uint16) infomask2;
		uint16		v1 = (uint16) infomask;
		uint8		hoff = (uint8) (off + MINIMAL_TUPLE_OFFSET);

		memset(out, 0, off - ROW_START);
		memcpy(out + offsetof(MinimalTupleData, t_infomask2) - ROW_START, &v2, sizeof(v2));
		memcpy(out + offsetof(MinimalTupleData, t_infomask) - ROW_START, &v1, sizeof(v1));
		memcpy(out + offsetof(MinimalTupleData, t_hoff) - ROW_START, &hoff, sizeof(hoff));
		if (hasnull)
			memcpy(out + offsetof(MinimalTupleData, t_bits) - ROW_START, bits, BITMAPLEN(natts));
	}
	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		uint32		size;
		uint32		at;

		if (hasnull && att_isnull(i, bits))
			continue;
		if (att->attlen > 0)
		{
			size = (uint32) att->attlen;
			at = att_align_nominal(off, att->attalign);
			if (int_like(att) && nints < MASK_BITS && !((mask >> nints) & 1))
			{
				uint64		z;

				nints++;
				if ((uint64) at + size - ROW_START > cap)
					return false;
				if (out)
					memset(out + off - ROW_START, 0, at - off);
				if (!run_varint_get(&p, end, &z) ||
					!fixed_put(out ? out + at - ROW_START : NULL, att->attlen, run_unzigzag(z)))
					return false;
				off = at + size;
				continue;
			}
			nints += int_like(att) ? 1 : 0;
		}
		else if (att->attlen == -1)
		{
			if (!varlena_size(p, end - p, &size))
				return false;
			/* as heap_fill_tuple places it: a short header unaligned */
			at = VARATT_IS_1B(p) ? off : att_align_nominal(off, att->attalign);
		}
		else
		{
			const char *nul = memchr(p, '\0', end - p);

			if (nul == NULL)
				return false;
			size = (uint32) (nul - p) + 1;
			at = att_align_nominal(off, att->attalign);
		}
		if (size > (uint32) (end - p) || (uint64) at + size > MaxAllocSize ||
			(uint64) at + size - ROW_START > cap)
			return false;
		if (out)
		{
			memset(out + off - ROW_START, 0, at - off);
			memcpy(out + at - ROW_START, p, size);
		}
		p += size;
		off = at + size;
	}
	if (p != end)
		return false;
	*tlen = off - ROW_START;
	return true;
}

/*
 * Pack the tuple of len bytes at tuple (from t_infomask2 on) into out
 * (RUN_PACK_MAX(len) bytes); returns the packed row's length, or 0 if the
 * tuple does not unpack to itself exactly.
 *
 * Packed, a row is: varints t_infomask2 and t_infomask (t_hoff is the one
 * heap_form_minimal_tuple gives them), the null bitmap if the tuple has
 * one, a varint mask, then the attributes' values without the alignment
 * padding between them.  A fixed-width by-value attribute of 2, 4 or 8
 * bytes (an integer, a date, a timestamp, a float) is a zigzag varint of
 * its value when that is shorter, which the mask's bit for it (one per
 * such non-null attribute, in order; the 64th and later ones are kept as
 * they are) leaves clear; its bytes as they are when not (a float's bits
 * make a long varint).
 */
uint32
run_pack_row(TupleDesc desc, const char *tuple, uint32 len, char *out)
{
	uint32		end = len + ROW_START;
	uint16		infomask2;
	uint16		infomask;
	uint8		hoff;
	int			natts;
	bool		hasnull;
	const bits8 *bits;
	uint32		off;
	uint64		mask = 0;
	int			nints = 0;
	char	   *values;
	char	   *v;
	char	   *q;
	char	   *check;
	uint32		tlen;
	uint32		packed_len;
	bool		same;

/* the byte at offset o of the MinimalTuple */
#define AT(o)	(tuple + (o) - ROW_START)

	if (end < SizeofMinimalTupleHeader)
		return 0;
	memcpy(&infomask2, AT(offsetof(MinimalTupleData, t_infomask2)), sizeof(infomask2));
	memcpy(&infomask, AT(offsetof(MinimalTupleData, t_infomask)), sizeof(infomask));
	memcpy(&hoff, AT(offsetof(MinimalTupleData, t_hoff)), sizeof(hoff));
	natts = infomask2 & HEAP_NATTS_MASK;
	hasnull = (infomask & HEAP_HASNULL) != 0;
	off = data_start(natts, hasnull);
	if (natts > desc->natts || off > end || hoff != off + MINIMAL_TUPLE_OFFSET)
		return 0;
	bits = hasnull ? (const bits8 *) AT(offsetof(MinimalTupleData, t_bits)) : NULL;

	v = values = palloc(len);
	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		uint32		size;

		if (hasnull && att_isnull(i, bits))
			continue;
		if (att->attlen > 0)
		{
			off = att_align_nominal(off, att->attalign);
			size = (uint32) att->attlen;
			if (off + size > end)
				return 0;
			if (int_like(att))
			{
				uint64		z = run_zigzag(fixed_get(AT(off), att->attlen));

				if (nints < MASK_BITS && run_varint_len(z) < att->attlen)
				{
					v = run_varint_put(v, z);
					off += size;
					nints++;
					continue;
				}
				if (nints < MASK_BITS)
					mask |= UINT64CONST(1) << nints;
				nints++;
			}
		}
		else if (att->attlen == -1)
		{
			if (off >= end)
				return 0;
			off = att_align_pointer(off, att->attalign, -1, AT(off));
			if (off >= end || !varlena_size(AT(off), end - off, &size))
				return 0;
		}
		else
		{
			const char *nul;

			off = att_align_nominal(off, att->attalign);
			if (off >= end || (nul = memchr(AT(off), '\0', end - off)) == NULL)
				return 0;
			size = (uint32) (nul - AT(off)) + 1;
		}
		if (off + size > end || (v - values) + size > len)
			return 0;
		memcpy(v, AT(off), size);
		v += size;
		off += size;
	}
	if (off != end)
		return 0;

	q = run_varint_put(out, infomask2);
	q = run_varint_put(q, infomask);
	if (hasnull)
	{
		memcpy(q, bits, BITMAPLEN(natts));
		q += BITMAPLEN(natts);
	}
	q = run_varint_put(q, mask);
	memcpy(q, values, v - values);
	packed_len = (uint32) (q + (v - values) - out);
	pfree(values);

	/* the tuple again, byte for byte */
	check = palloc(len);
	same = run_unpack_row(desc, out, packed_len, check, len, &tlen) && tlen == len &&
		memcmp(check, tuple, len) == 0;
	pfree(check);
	return same ? packed_len : 0;
#undef AT
}
