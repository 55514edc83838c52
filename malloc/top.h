/* SPDX-License-Identifier: MIT */
/* top.h: the top chunk -- serving from it, growing and trimming an
 * arena's heaps (top.c).  The caller holds the arena's lock (or the
 * process has one thread).  Includes: arena.h.  */
#ifndef HP_TOP_H
#define HP_TOP_H

#include "arena.h"

/* Whole chunks of nb bytes top can give while keeping MINSIZE.  */
static inline size_t top_room(struct arena *ar, size_t nb) {
  size_t size = chunksize(ar->top);
  if (size > ar->system_mem) hp_fatal("malloc(): corrupted top size");
  return size < nb + MINSIZE ? 0 : (size - MINSIZE) / nb;
}

/* Cut len bytes off the front of top (top_room said they fit); where
   they start.  The caller sets the headers of the chunks in them.  */
static inline struct chunk *top_cut(struct arena *ar, size_t len) {
  struct chunk *v = ar->top;
  size_t size = chunksize(v);
  HP_ASSERT(len + MINSIZE <= size && prev_inuse(v));
  ar->top = chunk_at(v, len);
  set_free_head(ar->top, (size - len) | PREV_INUSE);
  return v;
}

/* Serve nb from the top chunk when it can keep MINSIZE; else NULL.
   Inline: int_malloc's last step before the system.  */
static inline void *top_take(struct arena *ar, size_t nb) {
  HP_ASSERT(arena_held(ar));
  if (!top_room(ar, nb)) return NULL;
  struct chunk *v = top_cut(ar, nb);
  set_head(v, nb | PREV_INUSE | arena_flag(ar));
  return chunk2mem(v);
}

/* Carve chunks of nb bytes off the top chunk into the thread's cache bin
   tidx while the bin has room and top keeps MINSIZE (a refill: tcache.c).  */
HP_INTERNAL void top_fill_bin(struct arena *ar, size_t tidx, size_t nb);

/* The top chunk cannot serve nb: get memory from the system.  Memory for
   the request (possibly a chunk mapped on its own), or NULL with errno
   ENOMEM.  */
HP_INTERNAL void *sys_grow(struct arena *ar, size_t nb);
/* Release memory at the end of top beyond pad bytes, and heaps that are
   wholly free.  1 when something was released.  */
HP_INTERNAL int sys_trim(struct arena *ar, size_t pad);
/* Release the arena's current heaps while they hold nothing but top and
   the heap before can still grow top by pad bytes (glibc's heap_trim);
   true when one was released.  */
HP_INTERNAL bool heap_release_empty(struct arena *ar, size_t pad);
/* malloc_trim for one arena: consolidate, trim top, and give back the
   whole pages inside free chunks.  1 when something was released.  */
HP_INTERNAL int arena_trim(struct arena *ar, size_t pad);
/* Free chunk c may span a whole sealed heap: release that heap.  */
HP_INTERNAL void heap_release_drained(struct arena *ar, struct chunk *c);
/* An arena's first heap, with `extra` bytes of room beyond the headers.  */
HP_INTERNAL int heap_create_first(struct arena *ar, struct heap **out, size_t extra);
/* Make the free space of heap h, from `first`, the arena's top.  */
HP_INTERNAL void heap_attach_arena_top(struct arena *ar, struct heap *h, char *first);
/* mallopt(HPMALLOC_M_HUGETLB) switched to THP: advise and collapse ar's
   base-page heaps.  */
HP_INTERNAL void arena_hugify(struct arena *ar);

#endif
