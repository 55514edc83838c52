/* SPDX-License-Identifier: MIT */
/* bins.h: an arena's free lists and the core of malloc and free (bins.c).
 * Unless a function says otherwise, the caller holds the arena's lock
 * (or the process has one thread).  Includes: arena.h.  */
#ifndef HP_BINS_H
#define HP_BINS_H

#include "arena.h"

HP_INTERNAL void arena_bins_init(struct arena *ar);

/* Serve `bytes` from ar.  NULL with errno ENOMEM when neither the bins nor
   the system can.  With `refill` (tcache.c: the thread's cache bin for
   this size missed, and its cap adapts), a chunk it splits is split for
   the bin too: one that holds a batch of the size rather than the best
   fit, its front carved into the bin, and more fragments when none
   holds a batch.  */
HP_INTERNAL void *int_malloc(struct arena *ar, size_t bytes, bool refill);
/* Serve `bytes` (aligned to `alignment`, or as malloc aligns when it is
   0) from ar, whose lock the caller does not hold; when ar cannot, from
   another arena once (malloc_elsewhere).  NULL with errno ENOMEM when
   none can.  The caller runs region_run_deferred after.  */
HP_INTERNAL void *malloc_from_arena(struct arena *ar, size_t alignment, size_t bytes);
/* ar could not serve `bytes` (aligned as above): try once in another
   arena, the main arena or one arena_other_or_new picks or creates.  */
HP_INTERNAL void *malloc_elsewhere(const struct arena *ar, size_t alignment, size_t bytes);
/* Free in-use chunk c of ar as `how` says (flags, 0 for free()'s way):
     FREE_LOCKED   the caller holds ar's lock (else free_chunk takes it
                   when the thread needs locks at all);
     FREE_NO_PARK  merge c whatever its size, never park it on a fastbin
                   (what the cache gives back in bulk, tcache.c);
     FREE_NO_TRIM  neither trim top nor release heaps afterwards (top.c
                   frees a sealed heap's old top with it, while it
                   installs a new heap that trimming must not release).
   Without FREE_NO_PARK a chunk of at most max_fast bytes goes on its
   fastbin; else it is merged with its free neighbours, and a large
   enough result may trim the arena.  */
enum { FREE_LOCKED = 1, FREE_NO_PARK = 2, FREE_NO_TRIM = 4 };
HP_INTERNAL void free_chunk(struct arena *ar, struct chunk *c, unsigned how);
/* Push a chunk of at most max_fast bytes on its fastbin: needs no lock.  */
HP_INTERNAL void fastbin_push(struct arena *ar, struct chunk *p);
/* Chunks of one fastbin linked beforehand (fastbin_chain_add: checked as
   fastbin_push checks a chunk) and pushed with one atomic operation
   (fastbin_chain_push), for a flush that parks many chunks of a size: the
   fastbin's head is a cache line the arena's owner pops from on the other
   CPU, and a compare-and-swap per chunk kept it moving between the two
   (7% of the CPU time of the producer/consumer workload).  A chunk of
   another size pushes the chain first.  Needs no lock, as fastbin_push.  */
struct fast_chain {
  struct chunk *first, *last;
  unsigned idx;
};
HP_INTERNAL void fastbin_chain_add(struct arena *ar, struct fast_chain *ch, struct chunk *p);
HP_INTERNAL void fastbin_chain_push(struct arena *ar, struct fast_chain *ch);
/* Merge the chunks the fastbins and the inbox hold into the bins.  */
HP_INTERNAL void malloc_consolidate(struct arena *ar);
HP_INTERNAL void *int_realloc(struct arena *ar, struct chunk *old, size_t oldsize, size_t nb);
HP_INTERNAL void *int_memalign(struct arena *ar, size_t alignment, size_t bytes);
HP_INTERNAL void unlink_chunk(struct arena *ar, struct chunk *c);

#endif
