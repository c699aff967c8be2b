/*-------------------------------------------------------------------------
 *
 * pin_notes.h
 *	  A backend's notes of the pins it holds in one of the server's shared
 *	  caches (block_cache.c, index_cache.c): each pin taken is noted, and
 *	  whatever a transaction leaves pinned is given back at its end and at
 *	  the backend's exit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PK_PIN_NOTES_H
#define PK_PIN_NOTES_H

#include "storage/ipc.h"
#include "utils/memutils.h"

typedef struct PinNotes
{
	Size	   *held;			/* what each pin is on, once per pin */
	int			n;
	int			cap;
	bool		exit_registered;
} PinNotes;

/*
 * Room to note one more pin, made before the pin is taken, so that no
 * error can come between a pin and its note; the first call registers
 * at_exit, which gives the notes' pins back.
 */
static inline void
pin_notes_reserve(PinNotes *notes, pg_on_exit_callback at_exit)
{
	if (notes->n < notes->cap)
		return;
	if (notes->held == NULL)
	{
		notes->cap = 16;
		notes->held = MemoryContextAlloc(TopMemoryContext, sizeof(Size) * notes->cap);
	}
	else
	{
		notes->cap *= 2;
		notes->held = repalloc(notes->held, sizeof(Size) * notes->cap);
	}
	if (!notes->exit_registered)
	{
		before_shmem_exit(at_exit, 0);
		notes->exit_registered = true;
	}
}

/* note a pin (after pin_notes_reserve) */
static inline void
pin_notes_add(PinNotes *notes, Size what)
{
	notes->held[notes->n++] = what;
}

#endif							/* PK_PIN_NOTES_H */
