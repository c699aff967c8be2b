/*-------------------------------------------------------------------------
 *
 * run_pack.h
 *	  Packed rows of tight streams: a MinimalTuple without its padding and
 *	  with small integers as varints (run_format.h, RUN_MAGIC_PACKED).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_RUN_PACK_H
#define PK_RUN_PACK_H

#include "access/tupdesc.h"

/*
 * The most bytes a packed row of a tuple of len bytes (from t_infomask2)
 * takes: its header's 5 bytes become up to 16 of varints
 */
#define RUN_PACK_MAX(len)	((len) + 11)

extern uint32 run_pack_row(TupleDesc desc, const char *tuple, uint32 len, char *out);
extern bool run_unpack_row(TupleDesc desc, const char *packed, uint32 len,
						   char *out, uint32 cap, uint32 *tlen);

#endif							/* PK_RUN_PACK_H */
