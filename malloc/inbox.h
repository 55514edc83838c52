/* SPDX-License-Identifier: MIT */
/* inbox.h: an arena's inbox (inbox.c).  Includes: hp_base.h, chunk.h,
 * lock.h.
 *
 * The small chunks of an arena that other threads freed, on their way
 * back to the arena's thread: a thread's foreign list (tcache.h, "Whose
 * chunks") goes home here, and the next refill of a thread bound to the
 * arena takes them into its cache (tcache.c); malloc_consolidate merges
 * what is left (bins.c).  An array, not a list through the chunks: the
 * refill reads the pointers a cache line of eight at a time and the
 * chunks' headers side by side, where popping a list the other CPU wrote
 * waits on one cache miss per chunk.  Guarded by its own lock, a leaf:
 * taken with the arena's or without it, never before it.  */
#ifndef HP_INBOX_H
#define HP_INBOX_H

#include "chunk.h"
#include "hp_base.h"
#include "lock.h"

enum {
  INBOX_SLOTS = 256,
  INBOX_TAKE = 64, /* chunks taken out at a time: a stack array (malloc may run on a small thread stack) */
};
struct inbox {
  hp_lock_t lock;
  unsigned n; /* chunks in slot[]; read without the lock as a hint */
  struct chunk *slot[INBOX_SLOTS];
};

struct arena;

/* Put up to n of the small in-use chunks v[] of ar in its inbox; the
   number it took (the rest are the caller's).  Needs no arena lock.  */
HP_INTERNAL size_t inbox_put(struct arena *ar, struct chunk *const *v, size_t n);
/* Take out what ar's inbox holds, INBOX_TAKE chunks at a time, each
   batch checked as chunks popped off a fastbin are (hp_fatal unless
   aligned and of a small size) and handed to take(ar, v, n).  At most
   INBOX_SLOTS chunks: what other threads send meanwhile waits.  The
   chunks taken.  Needs no arena lock; take runs with none of the
   inbox's held.  */
typedef void inbox_take_fn(struct arena *ar, struct chunk **v, size_t n);
HP_INTERNAL size_t inbox_drain(struct arena *ar, inbox_take_fn *take);

#endif
