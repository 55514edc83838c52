/* SPDX-License-Identifier: MIT */
/* chunk.h: the chunk layout, boundary tags and size arithmetic.
 *
 * A chunk is the unit the arenas manage (the ptmalloc / dlmalloc layout):
 *
 *   chunk ->  +--------------------------------+
 *             | prev_size (valid if prev free) |   belongs to the previous chunk when it is in use
 *             | size | A | M | P               |   this chunk's size and three flag bits
 *   mem   ->  +--------------------------------+
 *             | user data ... (or fd, bk, fd_nextsize, bk_nextsize when free)
 *   next  ->  +--------------------------------+
 *             | prev_size = size (when free)   |   the boundary tag (footer) of a free chunk
 *
 * P (PREV_INUSE): the previous chunk is in use (so prev_size is not valid).
 * M (IS_MMAPPED): the chunk was mapped on its own (mmapped.c).
 * A (NON_MAIN_ARENA): the chunk belongs to a thread arena, found from its heap.
 *
 * Everything here is static inline; no logic lives in macros.  */
#ifndef HP_CHUNK_H
#define HP_CHUNK_H

#include "hp_base.h"

struct chunk {
  size_t prev_size;
  size_t size;
  struct chunk *fd, *bk;                   /* free chunks: bin links */
  struct chunk *fd_nextsize, *bk_nextsize; /* free large chunks: size-ordered skip list */
};

enum {
  SIZE_SZ = sizeof(size_t),
  HP_ALIGN = 16, /* malloc's alignment: 2 * SIZE_SZ on 64-bit, 16 everywhere */
  HP_ALIGN_MASK = HP_ALIGN - 1,
  CHUNK_HDR = 2 * sizeof(size_t), /* offset from chunk to mem */
  MINSIZE = 32 > 4 * sizeof(size_t) ? 32 : 4 * sizeof(size_t),
};

enum {
  PREV_INUSE = 0x1,
  IS_MMAPPED = 0x2,
  NON_MAIN_ARENA = 0x4,
  /* In the header of a chunk its arena holds free: in a bin other than a
     fastbin, or top, and the header of a chunk merged into one of those.
     free's fast path finds it in the header it reads anyway, where it
     would otherwise read the next chunk's PREV_INUSE, a cache line the
     program may not have touched for long.  Sizes are multiples of
     HP_ALIGN (16), so the bit is spare (glibc rejects a size with it as
     "free(): invalid size").  */
  ARENA_FREE = 0x8,
  SIZE_BITS = PREV_INUSE | IS_MMAPPED | NON_MAIN_ARENA | ARENA_FREE,
};
_Static_assert((size_t)HP_ALIGN > (size_t)ARENA_FREE, "ARENA_FREE lies below malloc's alignment");

static inline void *chunk2mem(const struct chunk *c) { return (char *)c + CHUNK_HDR; }
static inline struct chunk *mem2chunk(const void *m) { return (struct chunk *)((char *)m - CHUNK_HDR); }

static inline size_t chunksize(const struct chunk *c) { return c->size & ~(size_t)SIZE_BITS; }
static inline bool prev_inuse(const struct chunk *c) { return c->size & PREV_INUSE; }
static inline bool chunk_is_mmapped(const struct chunk *c) { return c->size & IS_MMAPPED; }
static inline bool chunk_main_arena(const struct chunk *c) { return !(c->size & NON_MAIN_ARENA); }

static inline struct chunk *chunk_at(const struct chunk *c, size_t off) { return (struct chunk *)((char *)c + off); }
static inline struct chunk *next_chunk(const struct chunk *c) { return chunk_at(c, chunksize(c)); }
static inline struct chunk *prev_chunk(const struct chunk *c) { return (struct chunk *)((char *)c - c->prev_size); }

/* In-use bit of c lives in the next chunk's PREV_INUSE.  */
static inline bool inuse(const struct chunk *c) { return prev_inuse(next_chunk(c)); }
static inline bool inuse_at(const struct chunk *c, size_t off) { return prev_inuse(chunk_at(c, off)); }
static inline void set_inuse_at(struct chunk *c, size_t off) { chunk_at(c, off)->size |= PREV_INUSE; }
static inline void clear_inuse_at(struct chunk *c, size_t off) { chunk_at(c, off)->size &= ~(size_t)PREV_INUSE; }

static inline void set_head(struct chunk *c, size_t v) { c->size = v; }
/* The header of a chunk the arena holds free (bins, top).  */
static inline void set_free_head(struct chunk *c, size_t v) { c->size = v | ARENA_FREE; }
/* Free chunk c of `size` leaves its bin whole (an exact fit): in use, and
   its header says so.  */
static inline void take_whole(struct chunk *c, size_t size, size_t arena_bit) {
  set_inuse_at(c, size);
  c->size = (c->size & ~(size_t)ARENA_FREE) | arena_bit;
}
static inline void set_head_size(struct chunk *c, size_t s) { c->size = (c->size & SIZE_BITS) | s; }
static inline void set_foot(struct chunk *c, size_t s) { chunk_at(c, s)->prev_size = s; }

static inline bool aligned_ok(uintptr_t v) { return (v & HP_ALIGN_MASK) == 0; }

/* The largest request the chunk arithmetic can serve (glibc's PTRDIFF_MAX
   limit); the architecture's address space may lower it (init.c).  */
static inline size_t largest_request(void) { return (size_t)PTRDIFF_MAX - 2 * (size_t)MINSIZE; }

/* Chunk size serving a request of n bytes (n must be in range).  */
static inline size_t request2size(size_t n) {
  size_t s = (n + SIZE_SZ + HP_ALIGN_MASK) & ~(size_t)HP_ALIGN_MASK;
  return s < MINSIZE ? MINSIZE : s;
}

/* Bytes the program may use in an in-use chunk.  */
static inline size_t chunk_usable(const struct chunk *c) {
  return chunksize(c) - (chunk_is_mmapped(c) ? CHUNK_HDR : SIZE_SZ);
}

/* ------------------------------------------------------------------ bins
 * Bin 0 is unused; bin 1 is the unsorted bin; bins 2..63 hold one exact
 * size each (16-byte spacing, chunks below 1024 bytes); bins 64..126 hold
 * ranges that widen geometrically, sorted by size.  */
enum {
  NBINS = 128,
  NSMALLBINS = 64,
  SMALLBIN_WIDTH = HP_ALIGN,
  MIN_LARGE_SIZE = NSMALLBINS * SMALLBIN_WIDTH, /* 1024 */
  UNSORTED_BIN = 1,
  BINMAP_SHIFT = 5,
  BITSPERMAP = 1 << BINMAP_SHIFT,
  BINMAPSIZE = NBINS / BITSPERMAP,
};

static inline bool in_smallbin_range(size_t sz) { return sz < MIN_LARGE_SIZE; }
static inline unsigned smallbin_index(size_t sz) { return (unsigned)(sz >> 4); }

/* Large bins: 32 bins 64 bytes wide from 1024 (indices 64..), then 16 of
   512, 8 of 4096, 4 of 32768, 2 of 262144, and one for the rest.
   Not inlined: the compiler would otherwise hoist it out of malloc's loop
   and compute it for every small request too.  */
__attribute__((noinline, unused)) static unsigned largebin_index(size_t sz) {
  if ((sz >> 6) <= 48) return 48 + (unsigned)(sz >> 6);    /* up to 3135: 64..96 */
  if ((sz >> 9) <= 20) return 91 + (unsigned)(sz >> 9);    /* up to 10751: 97..111 */
  if ((sz >> 12) <= 10) return 110 + (unsigned)(sz >> 12); /* 112..120 */
  if ((sz >> 15) <= 4) return 119 + (unsigned)(sz >> 15);  /* 121..123 */
  if ((sz >> 18) <= 2) return 124 + (unsigned)(sz >> 18);  /* 124..126 */
  return 126;
}

static inline unsigned bin_index(size_t sz) {
  if (HP_LIKELY(in_smallbin_range(sz))) return smallbin_index(sz);
  return largebin_index(sz);
}

/* ------------------------------------------------------------------ fastbins
 * Singly linked LIFO lists of small chunks, kept "in use" so they do not
 * coalesce until malloc_consolidate runs.  free() puts chunks up to
 * max_fast there (glibc.malloc.mxfast, at most MAX_FAST_SIZE); a thread's
 * cache that gives chunks back in a batch puts every size up to
 * FASTBIN_MAX_CHUNK there, so that the next refill, of this thread or the
 * owner's, takes them back by the batch without splitting or merging.  */
enum {
  MAX_FAST_SIZE = 80 * sizeof(size_t) / 4, /* largest mxfast a user may set (160 on 64-bit) */
  FASTBIN_MAX_CHUNK = 1040,                /* the largest chunk of a small cache bin (tcache.h) */
  NFASTBINS = FASTBIN_MAX_CHUNK / 16 - 1,  /* 64 */
  FASTBIN_CONSOLIDATION_THRESHOLD = 65536,
};

static inline unsigned fastbin_index(size_t sz) { return (unsigned)(sz >> 4) - 2; }

/* ------------------------------------------------------------------ safe linking
 * Singly linked lists (tcache, fastbins) store next pointers mangled with
 * the address they are stored at, as glibc does, so a heap overflow cannot
 * plant an arbitrary pointer without knowing addresses.  */
static inline void *protect_ptr(const void *pos, const void *ptr) {
  return (void *)(((uintptr_t)pos >> 12) ^ (uintptr_t)ptr);
}
static inline void *reveal_ptr(const void *pos, const void *mangled) { return protect_ptr(pos, mangled); }

#endif
