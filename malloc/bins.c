/* SPDX-License-Identifier: MIT */
/* bins.c: the arena's free lists and the core of malloc and free.
 *
 *   fastbins   singly linked LIFO per small size (<= mxfast), chunks stay
 *              marked in use until malloc_consolidate merges them;
 *   unsorted   recently freed and split chunks, sorted into bins lazily by
 *              the next malloc that walks it;
 *   smallbins  one size each below 1024 bytes, FIFO;
 *   largebins  size ranges, each kept sorted (largest first) with a skip
 *              list of distinct sizes (fd_nextsize/bk_nextsize);
 *   binmap     one bit per bin that may be non-empty, so malloc skips
 *              empty bins quickly;
 *   top        the chunk bordering the end of the current heap (top.c).
 *
 * Every function here runs with the arena's lock held (or while the
 * process has one thread), except fastbin_push, which needs no lock, and
 * free_chunk without FREE_LOCKED, which takes it: the debug build asserts
 * it (arena_held) at each entry point.  Integrity checks that are cheap
 * stay on in every build and end in hp_fatal(); the debug build asserts
 * more (HP_ASSERT): a free chunk's header and footer agree, a large bin
 * stays sorted, a chunk served is in use and large enough.  */
#include "bins.h"

#include <errno.h>
#include <string.h>

#include "top.h"
static inline bool have_fast(struct arena *ar) { return __atomic_load_n(&ar->have_fastchunks, __ATOMIC_RELAXED); }
static inline struct chunk *unsorted(struct arena *ar) { return bin_at(ar, UNSORTED_BIN); }

static inline void mark_bin(struct arena *ar, unsigned i) {
  ar->binmap[i >> BINMAP_SHIFT] |= 1u << (i & (BITSPERMAP - 1));
}

void arena_bins_init(struct arena *ar) {
  for (unsigned i = 0; i < NBINS; i++) {
    struct chunk *b = bin_at(ar, i);
    b->fd = b->bk = b;
    b->size = 0;
  }
  memset(ar->binmap, 0, sizeof ar->binmap);
  memset(ar->fastbins, 0, sizeof ar->fastbins);
  ar->have_fastchunks = false;
  ar->top = bin_at(ar, 0); /* size 0: the first malloc grows the heap */
  ar->last_remainder = NULL;
}

/* Remove free chunk p from whatever doubly linked bin holds it.  */
void unlink_chunk(struct arena *ar, struct chunk *p) {
  HP_ASSERT(arena_held(ar));
  if (chunksize(p) != next_chunk(p)->prev_size) hp_fatal("corrupted size vs. prev_size");
  struct chunk *fd = p->fd, *bk = p->bk;
  if (fd->bk != p || bk->fd != p) hp_fatal("corrupted double-linked list");
  HP_ASSERT(p->size & ARENA_FREE); /* a chunk in a bin is free in the arena's eyes */
  fd->bk = bk;
  bk->fd = fd;
  if (in_smallbin_range(chunksize(p)) || p->fd_nextsize == NULL) return;
  if (p->fd_nextsize->bk_nextsize != p || p->bk_nextsize->fd_nextsize != p)
    hp_fatal("corrupted double-linked list (not small)");
  if (fd->fd_nextsize == NULL && chunksize(fd) == chunksize(p)) {
    /* fd had p's size and was not on the skip list: it takes p's place
       (a bin header, size 0, never does) */
    if (p->fd_nextsize == p) {
      fd->fd_nextsize = fd->bk_nextsize = fd;
    } else {
      fd->fd_nextsize = p->fd_nextsize;
      fd->bk_nextsize = p->bk_nextsize;
      p->fd_nextsize->bk_nextsize = fd;
      p->bk_nextsize->fd_nextsize = fd;
    }
  } else {
    p->fd_nextsize->bk_nextsize = p->bk_nextsize;
    p->bk_nextsize->fd_nextsize = p->fd_nextsize;
  }
}

/* Put a free chunk of `size` (head and foot already set) at the front of
   the unsorted bin.  */
static void unsorted_push(struct arena *ar, struct chunk *p, size_t size) {
  HP_ASSERT(chunksize(p) == size && (p->size & ARENA_FREE) && prev_inuse(p));
  HP_ASSERT(chunk_at(p, size)->prev_size == size && !prev_inuse(chunk_at(p, size)));
  struct chunk *bck = unsorted(ar), *fwd = bck->fd;
  if (fwd->bk != bck) hp_fatal("free(): corrupted unsorted chunks");
  p->fd = fwd;
  p->bk = bck;
  if (!in_smallbin_range(size)) p->fd_nextsize = p->bk_nextsize = NULL;
  bck->fd = p;
  fwd->bk = p;
}

/* What a split carves for the thread's cache bin of the size served
   (tcache.c's refill), off the front of the remainder:
     CARVE_NONE       nothing (not a refill);
     CARVE_REFILL     chunks while the bin has room: the chunk served goes
                      to the caller;
     CARVE_LEAVE_ONE  the same, but leaving the bin room for the chunk
                      served, which goes into the bin too.  */
enum carve { CARVE_NONE, CARVE_REFILL, CARVE_LEAVE_ONE };

/* Carve chunks of nb off the front of free space `*rem` of `rsize`
   bytes, which follows an in-use chunk, into the cache bin of nb, as
   `how` says; leaves at least MINSIZE.  The bytes left.  */
static size_t carve_for_cache(struct arena *ar, struct chunk **rem, size_t rsize, size_t nb, enum carve how) {
  size_t tidx = tcache_bin_of(nb);
  if (tidx == TC_BINS) return rsize;
  const struct tc_bin *b = &hp_self.bins[tidx];
  unsigned keep = how == CARVE_LEAVE_ONE;
  while (rsize >= nb + MINSIZE && b->count + keep < b->cap) {
    struct chunk *c = *rem;
    set_head(c, nb | PREV_INUSE | arena_flag(ar));
    tcache_put(c, tidx);
    *rem = chunk_at(c, nb);
    rsize -= nb;
  }
  return rsize;
}

/* Split chunk v (already unlinked, of size `size`) to serve nb; the
   remainder, if any, goes to the unsorted bin, after a refill carved
   what it can use off its front (`carve`).  `remember`: the remainder is
   the last remainder.  */
static void *take_chunk(struct arena *ar, struct chunk *v, size_t size, size_t nb, bool remember, enum carve carve) {
  size_t rsize = size - nb;
  if (rsize < MINSIZE) {
    take_whole(v, size, arena_flag(ar));
    return chunk2mem(v);
  }
  struct chunk *rem = chunk_at(v, nb);
  set_head(v, nb | PREV_INUSE | arena_flag(ar));
  if (carve != CARVE_NONE) rsize = carve_for_cache(ar, &rem, rsize, nb, carve);
  set_free_head(rem, rsize | PREV_INUSE);
  set_foot(rem, rsize);
  unsorted_push(ar, rem, rsize);
  if (remember) ar->last_remainder = rem;
  HP_ASSERT(chunksize(v) == nb && inuse(v) && !(v->size & ARENA_FREE));
  return chunk2mem(v);
}

/* ------------------------------------------------------------------ consolidation */

/* Merge free chunk p (of size `size`, possibly preceded and followed by
   free chunks) with its neighbours and put the result in the unsorted bin
   or into top.  Returns the resulting chunk.  */
static struct chunk *coalesce(struct arena *ar, struct chunk *p, size_t size) {
  struct chunk *next = chunk_at(p, size);
  size_t nextsize = chunksize(next);
  if (!prev_inuse(p)) {
    p->size |= ARENA_FREE; /* p's header stays inside the merged chunk */
    size_t prevsize = p->prev_size;
    p = prev_chunk(p); /* not chunk_at (p, -prevsize): that wraps a pointer */
    if (chunksize(p) != prevsize) hp_fatal("corrupted size vs. prev_size while consolidating");
    size += prevsize;
    unlink_chunk(ar, p);
  }
  if (next != ar->top) {
    if (!inuse_at(next, nextsize)) {
      unlink_chunk(ar, next);
      size += nextsize;
    } else {
      clear_inuse_at(next, 0);
    }
    set_free_head(p, size | PREV_INUSE);
    set_foot(p, size);
    unsorted_push(ar, p, size);
  } else {
    size += nextsize;
    set_free_head(p, size | PREV_INUSE);
    HP_ASSERT(prev_inuse(p)); /* top follows an in-use chunk, always */
    ar->top = p;
    if (ar->last_remainder == p) ar->last_remainder = NULL;
  }
  return p;
}

/* Merge n chunks taken out of ar's inbox (inbox_drain).  */
static void merge_inbox_batch(struct arena *ar, struct chunk **v, size_t n) {
  for (size_t i = 0; i < n; i++) coalesce(ar, v[i], chunksize(v[i]));
}

void malloc_consolidate(struct arena *ar) {
  HP_ASSERT(arena_held(ar));
  __atomic_store_n(&ar->have_fastchunks, false, __ATOMIC_RELAXED);
  size_t merged = inbox_drain(ar, merge_inbox_batch);
  /* what other threads sent meanwhile waits, and says so */
  if (__atomic_load_n(&ar->inbox.n, __ATOMIC_RELAXED)) __atomic_store_n(&ar->have_fastchunks, true, __ATOMIC_RELAXED);
  for (unsigned i = 0; i < NFASTBINS; i++) {
    if (!__atomic_load_n(&ar->fastbins[i], __ATOMIC_RELAXED)) continue;
    struct chunk *p = __atomic_exchange_n(&ar->fastbins[i], NULL, __ATOMIC_ACQUIRE);
    while (p) {
      if (!aligned_ok((uintptr_t)chunk2mem(p))) hp_fatal("malloc_consolidate(): unaligned fastbin chunk detected");
      if (fastbin_index(chunksize(p)) != i) hp_fatal("malloc_consolidate(): invalid chunk size");
      struct chunk *nextp = reveal_ptr(&p->fd, p->fd);
      coalesce(ar, p, chunksize(p));
      p = nextp;
      merged++;
    }
  }
  ar->fast_merged += merged;
}

/* ------------------------------------------------------------------ free */

/* Does chunk p, `size` bytes, lie in the committed part of one of ar's
   heaps, with room for the next chunk's header?  A thread arena's chunk
   finds its heap by masking (arena_for_chunk read that header already);
   the main arena has few heaps (each reservation doubles), the current one
   first.  glibc checks only the main arena, against its one contiguous
   heap: a chunk that is not ar's (a block whose header says "main arena"
   in a thread's heap, as a free chunk's or top's does, or any wild
   pointer) would otherwise be merged with whatever lies past it.  */
static bool in_arena_heaps(const struct arena *ar, const struct chunk *p, size_t size) {
  const struct heap *h = ar == &main_arena ? ar->heap : heap_for_ptr(p);
  for (; h; h = ar == &main_arena ? h->prev : NULL) {
    const char *lo = h->reg.base, *hi = lo + h->reg.committed, *c = (const char *)p;
    if (c >= lo && c < hi) return size < (size_t)(hi - c);
  }
  return false;
}

/* Pushes on a fastbin need no lock, as in glibc: they are lock-free
   (compare and swap), pops happen only under the arena lock, so a popped
   chunk cannot come back during a pop (no ABA).  The next-size check
   reads a neighbour that may be changing under another thread's free;
   glibc accepts the same race.  */

/* Link p (of size <= max_fast) in front of the chain.  */
void fastbin_chain_add(struct arena *ar, struct fast_chain *ch, struct chunk *p) {
  size_t size = chunksize(p);
  struct chunk *next = chunk_at(p, size);
  /* the raw size field: a fencepost (16 | PREV_INUSE) passes */
  if (next->size <= CHUNK_HDR || chunksize(next) >= ar->system_mem) hp_fatal("free(): invalid next size (fast)");
  perturb_free(chunk2mem(p), size - CHUNK_HDR);
  unsigned idx = fastbin_index(size);
  if (ch->first && idx != ch->idx) fastbin_chain_push(ar, ch);
  p->fd = protect_ptr(&p->fd, ch->first);
  if (!ch->first) ch->last = p;
  ch->first = p;
  ch->idx = idx;
}

/* Push the chain on its fastbin and empty it.  */
void fastbin_chain_push(struct arena *ar, struct fast_chain *ch) {
  struct chunk *first = ch->first, *last = ch->last;
  if (!first) return;
  unsigned idx = ch->idx;
  struct chunk *old = __atomic_load_n(&ar->fastbins[idx], __ATOMIC_RELAXED);
  if (hp_single_threaded()) { /* nobody to race with: no locked instruction */
    if (old == first || old == last) hp_fatal("double free or corruption (fasttop)");
    /* old may be dereferenced only when no other thread can pop and
       reuse it meanwhile (glibc checks it only with the lock held) */
    if (old && fastbin_index(chunksize(old)) != idx) hp_fatal("invalid fastbin entry (free)");
    last->fd = protect_ptr(&last->fd, old);
    ar->fastbins[idx] = first;
  } else {
    do {
      if (old == first || old == last) hp_fatal("double free or corruption (fasttop)");
      last->fd = protect_ptr(&last->fd, old);
    } while (!__atomic_compare_exchange_n(&ar->fastbins[idx], &old, first, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  }
  if (!__atomic_load_n(&ar->have_fastchunks, __ATOMIC_RELAXED))
    __atomic_store_n(&ar->have_fastchunks, true, __ATOMIC_RELAXED);
  ch->first = ch->last = NULL;
}

/* Push p (of size <= max_fast) on its fastbin.  */
void fastbin_push(struct arena *ar, struct chunk *p) {
  struct fast_chain ch = { NULL, NULL, 0 };
  fastbin_chain_add(ar, &ch, p);
  fastbin_chain_push(ar, &ch);
}

/* Pop the head of fastbin idx (arena lock held).  */
static struct chunk *fastbin_pop(struct arena *ar, unsigned idx, const char *unaligned_msg) {
  HP_ASSERT(arena_held(ar)); /* pops only under the lock: no ABA */
  struct chunk *v = __atomic_load_n(&ar->fastbins[idx], __ATOMIC_ACQUIRE);
  struct chunk *next;
  if (hp_single_threaded()) {
    if (!v) return NULL;
    if (!aligned_ok((uintptr_t)chunk2mem(v))) hp_fatal(unaligned_msg);
    ar->fastbins[idx] = reveal_ptr(&v->fd, v->fd);
    return v;
  }
  do {
    if (!v) return NULL;
    if (!aligned_ok((uintptr_t)chunk2mem(v))) hp_fatal(unaligned_msg);
    next = reveal_ptr(&v->fd, v->fd);
    /* glibc checks the new head here when other threads may race */
    if (next && !aligned_ok((uintptr_t)chunk2mem(next))) hp_fatal("malloc(): unaligned fastbin chunk detected");
  } while (!__atomic_compare_exchange_n(&ar->fastbins[idx], &v, next, true, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
  return v;
}

/* Put in-use chunk p back: on a fastbin (`park`, when small enough), or
   merged into the unsorted bin or top.  Returns the free chunk made (NULL
   for a fastbin).  */
static struct chunk *merge_or_park(struct arena *ar, struct chunk *p, bool park) {
  size_t size = chunksize(p);
  struct chunk *next = chunk_at(p, size);
  if (park && size <= mp.max_fast) {
    fastbin_push(ar, p);
    return NULL;
  }
  if (p == ar->top) hp_fatal("double free or corruption (top)");
  /* in the current heap, this is glibc's "next chunk past top's end" */
  if (!in_arena_heaps(ar, p, size)) hp_fatal("double free or corruption (out)");
  if (!prev_inuse(next)) hp_fatal("double free or corruption (!prev)");
  if (next->size <= CHUNK_HDR || chunksize(next) >= ar->system_mem) hp_fatal("free(): invalid next size (normal)");
  perturb_free(chunk2mem(p), size - CHUNK_HDR);
  return coalesce(ar, p, size);
}

/* Free chunk c made is large enough to be worth a look: give back what
   the arena holds beyond what it keeps (glibc's trim on free).  */
static void trim_after_free(struct arena *ar, struct chunk *c) {
  if (c != ar->top) heap_release_drained(ar, c);
  if (have_fast(ar)) malloc_consolidate(ar);
  size_t keep = mp.no_dyn_threshold ? 0 : ar->trim_keep;
  /* an emptied heap goes whatever top's size: the heap before it may
     hold far more free memory at its end (glibc's heap_trim) */
  bool released = heap_release_empty(ar, mp.top_pad + keep);
  if (chunksize(ar->top) >= mp.trim_threshold + keep && sys_trim(ar, mp.top_pad + keep)) released = true;
  if (released) ar->trimmed = true;
}

void free_chunk(struct arena *ar, struct chunk *p, unsigned how) {
  bool lk = !(how & FREE_LOCKED) && arena_lock(ar);
  HP_ASSERT(arena_held(ar));
  struct chunk *c = merge_or_park(ar, p, !(how & FREE_NO_PARK));
  if (!(how & FREE_NO_TRIM) && c && chunksize(c) >= FASTBIN_CONSOLIDATION_THRESHOLD) trim_after_free(ar, c);
  arena_unlock(ar, lk);
}

/* ------------------------------------------------------------------ malloc */

/* Move more chunks of the size just served from a fastbin into the
   thread's tcache.  */
static void stash_fast(struct arena *ar, unsigned idx, size_t nb) {
  size_t tidx = csize2tidx(nb);
  if (tidx >= mp.tcache_bins) return;
  struct chunk *c;
  while (tcache_room(tidx) && (c = fastbin_pop(ar, idx, "malloc(): unaligned fastbin chunk detected 3")) != NULL)
    tcache_put(c, tidx);
}

static void *from_fastbin(struct arena *ar, size_t nb) {
  unsigned idx = fastbin_index(nb);
  struct chunk *v = fastbin_pop(ar, idx, "malloc(): unaligned fastbin chunk detected 2");
  if (!v) return NULL;
  if (fastbin_index(chunksize(v)) != idx) hp_fatal("malloc(): memory corruption (fast)");
  stash_fast(ar, idx, nb);
  return chunk2mem(v);
}

/* Take the oldest chunk of exactly nb from its small bin.  */
static struct chunk *smallbin_pop(struct arena *ar, struct chunk *bin) {
  struct chunk *v = bin->bk;
  if (v == bin) return NULL;
  struct chunk *bck = v->bk;
  if (bck->fd != v) hp_fatal("malloc(): smallbin double linked list corrupted");
  bin->bk = bck;
  bck->fd = bin;
  HP_ASSERT(smallbin_index(chunksize(v)) == (unsigned)(bin - ar->bins));
  take_whole(v, chunksize(v), arena_flag(ar));
  return v;
}

static void *from_smallbin(struct arena *ar, size_t nb) {
  struct chunk *bin = bin_at(ar, smallbin_index(nb));
  struct chunk *v = smallbin_pop(ar, bin);
  if (!v) return NULL;
  size_t tidx = csize2tidx(nb);
  if (tidx < mp.tcache_bins) {
    struct chunk *c;
    while (tcache_room(tidx) && (c = smallbin_pop(ar, bin)) != NULL) tcache_put(c, tidx);
  }
  return chunk2mem(v);
}

/* File free chunk v (just taken off the unsorted list) in its bin.  */
static void place_in_bin(struct arena *ar, struct chunk *v, size_t size) {
  unsigned idx;
  struct chunk *bck, *fwd;
  if (in_smallbin_range(size)) {
    idx = smallbin_index(size);
    bck = bin_at(ar, idx);
    fwd = bck->fd;
  } else {
    idx = largebin_index(size);
    bck = bin_at(ar, idx);
    fwd = bck->fd;
    if (fwd == bck) {
      v->fd_nextsize = v->bk_nextsize = v;
    } else if (size < chunksize(bck->bk)) {
      /* smaller than all: goes last */
      fwd = bck;
      bck = bck->bk;
      v->fd_nextsize = fwd->fd;
      v->bk_nextsize = fwd->fd->bk_nextsize;
      fwd->fd->bk_nextsize = v;
      v->bk_nextsize->fd_nextsize = v;
    } else {
      while (size < chunksize(fwd)) fwd = fwd->fd_nextsize;
      if (size == chunksize(fwd)) {
        fwd = fwd->fd; /* same size: insert after the skip-list entry */
        v->fd_nextsize = v->bk_nextsize = NULL;
      } else {
        v->fd_nextsize = fwd;
        v->bk_nextsize = fwd->bk_nextsize;
        if (fwd->bk_nextsize->fd_nextsize != fwd)
          hp_fatal("malloc(): largebin double linked list corrupted (nextsize)");
        fwd->bk_nextsize = v;
        v->bk_nextsize->fd_nextsize = v;
      }
      bck = fwd->bk;
      if (bck->fd != fwd) hp_fatal("malloc(): largebin double linked list corrupted (bk)");
    }
  }
  mark_bin(ar, idx);
  v->bk = bck;
  v->fd = fwd;
  fwd->bk = v;
  bck->fd = v;
  /* a large bin stays sorted, largest first (bin headers have size 0) */
  HP_ASSERT(in_smallbin_range(size) ||
            ((fwd == bin_at(ar, idx) || chunksize(fwd) <= size) && (bck == bin_at(ar, idx) || chunksize(bck) >= size)));
}

static void check_unsorted(struct arena *ar, struct chunk *v, size_t size) {
  struct chunk *next = chunk_at(v, size);
  if (size <= CHUNK_HDR || size > ar->system_mem) hp_fatal("malloc(): invalid size (unsorted)");
  if (chunksize(next) < CHUNK_HDR || chunksize(next) > ar->system_mem)
    hp_fatal("malloc(): invalid next size (unsorted)");
  if (next->prev_size != size) hp_fatal("malloc(): mismatching next->prev_size (unsorted)");
  if (v->bk->fd != v || v->fd->bk != v) hp_fatal("malloc(): unsorted double linked list corrupted");
  if (prev_inuse(next)) hp_fatal("malloc(): invalid next->prev_inuse (unsorted)");
}

enum { UNSORTED_MAX_ITERS = 10000 };

/* Walk the unsorted bin, sorting chunks into bins.  Returns a chunk for nb
   when one fits exactly or the last remainder can be split; exact fits for
   tcache-sized requests fill the tcache first (*cached counts them).  */
static void *process_unsorted(struct arena *ar, size_t nb, size_t *cached, bool refill) {
  struct chunk *ub = unsorted(ar);
  if (ub->bk == ub) return NULL; /* empty: nothing to sort */
  size_t tidx = tcache_bin_of(nb);
  bool can_cache = tidx != TC_BINS && tcache_on();
  size_t processed = 0;
  struct chunk *v;
  while ((v = ub->bk) != ub) {
    size_t size = chunksize(v);
    check_unsorted(ar, v, size);
    struct chunk *bck = v->bk;
    if (in_smallbin_range(nb) && bck == ub && v == ar->last_remainder && size > nb + MINSIZE) {
      ub->bk = ub->fd = ub; /* v was alone in the list */
      return take_chunk(ar, v, size, nb, true, refill ? CARVE_REFILL : CARVE_NONE);
    }
    ub->bk = bck;
    bck->fd = ub;
    if (size == nb) {
      take_whole(v, size, arena_flag(ar));
      if (can_cache && tcache_room(tidx)) {
        tcache_put(v, tidx);
        ++*cached;
      } else {
        return chunk2mem(v);
      }
    } else {
      place_in_bin(ar, v, size);
    }
    ++processed;
    if (*cached && mp.tcache_unsorted_limit && processed > mp.tcache_unsorted_limit) return tcache_get(tidx);
    if (processed >= UNSORTED_MAX_ITERS) break;
  }
  if (*cached) return tcache_get(tidx);
  return NULL;
}

/* Best fit in nb's own large bin.  */
static void *from_largebin(struct arena *ar, size_t nb, bool refill) {
  struct chunk *bin = bin_at(ar, largebin_index(nb));
  struct chunk *v = bin->fd;
  if (v == bin || chunksize(v) < nb) return NULL;
  v = v->bk_nextsize; /* the smallest size */
  while (chunksize(v) < nb) v = v->bk_nextsize;
  /* take the second of a size so the skip list need not change */
  if (v != bin->bk && chunksize(v->fd) == chunksize(v)) v = v->fd;
  size_t size = chunksize(v);
  unlink_chunk(ar, v);
  return take_chunk(ar, v, size, nb, false, refill ? CARVE_REFILL : CARVE_NONE);
}

/* No bin's bit set in the binmap?  */
static bool binmap_empty(const struct arena *ar) {
  unsigned any = 0;
  for (unsigned b = 0; b < BINMAPSIZE; b++) any |= ar->binmap[b];
  return any == 0;
}

/* The first non-empty bin from idx on (NBINS when there is none).  */
static unsigned binmap_next(struct arena *ar, unsigned idx) {
  for (unsigned block = idx >> BINMAP_SHIFT; block < BINMAPSIZE; block++) {
    unsigned map = ar->binmap[block];
    if (block == idx >> BINMAP_SHIFT) map &= ~0u << (idx & (BITSPERMAP - 1));
    while (map) {
      unsigned i = (block << BINMAP_SHIFT) + (unsigned)__builtin_ctz(map);
      struct chunk *bin = bin_at(ar, i);
      if (bin->bk != bin) return i;
      ar->binmap[block] &= ~(1u << (i & (BITSPERMAP - 1)));
      map &= map - 1;
    }
  }
  return NBINS;
}

/* A refill (tcache.c) that must split a free chunk would rather split
   one that also fills the bin's room, up to SPLIT_BATCH chunks of nb,
   than the best fit, whose remainder is often a sliver that brings the
   bin nothing.  The chunk size that does (0: no refill, or no room).
   Measured on larson (random sizes, 10..500 bytes, 1000 live blocks a
   thread): refills fell from 18.0 k to 2.7 k and flushes from 7.1 k to
   1.6 k for 1.2 M mallocs; batches of 2, 3, 4 and 6 did about as well,
   8 and 16 worse (fewer free chunks hold them).  */
enum { SPLIT_BATCH = 4 };
static size_t batch_size(size_t nb, bool refill) {
  if (HP_LIKELY(!refill)) return 0;
  size_t tidx = tcache_bin_of(nb);
  if (tidx == TC_BINS) return 0;
  const struct tc_bin *b = &hp_self.bins[tidx];
  size_t room = b->cap > b->count ? (size_t)(b->cap - b->count) : 0;
  return room ? (1 + (room < SPLIT_BATCH - 1 ? room : SPLIT_BATCH - 1)) * nb + MINSIZE : 0;
}

/* A refill's split brought the bin nothing more: no free chunk held a
   batch of nb, the free memory is in fragments.  Split up to SPLIT_MORE
   more of the smallest fragments above nb's bin for the bin, under the
   same lock, instead of one refill per chunk.  Measured on
   bench/workloads/pyalloc.py (PYTHONMALLOC=malloc, scale 0.25): 93% of
   the refills brought the bin nothing but the chunk asked for, 80% of
   them a split of a fragment a little larger than the request; with up
   to 15 more splits callgrind counted 2.969 G instructions in all against
   3.060 G (in a build that counted refills, 3, 7, 15, 31 and 63 more gave
   2.999, 2.985, 2.975, 2.980 and 2.977 G against 3.085 G), and the peak
   RSS at scale 1 stayed 133 MB.  */
enum { SPLIT_MORE = 15 };
static void fill_from_fragments(struct arena *ar, size_t nb) {
  size_t tidx = tcache_bin_of(nb);
  for (unsigned k = 0; k < SPLIT_MORE && tcache_room(tidx); k++) {
    unsigned i = binmap_next(ar, bin_index(nb) + 1);
    if (i == NBINS) return;
    struct chunk *v = bin_at(ar, i)->bk;
    size_t size = chunksize(v);
    if (size < nb) hp_fatal("malloc(): corrupted bin");
    if (size < nb + MINSIZE) return; /* taken whole, it would not be of the bin's size */
    unlink_chunk(ar, v);
    tcache_put(mem2chunk(take_chunk(ar, v, size, nb, false, CARVE_LEAVE_ONE)), tidx);
  }
}

/* Split the smallest chunk of the next non-empty bin above nb's, found by
   the binmap (one word of 32 bins at a time, the lowest set bit first; a
   bit can be stale, the bin emptied since: it is cleared on the way) --
   or, for a refill, the first that holds a batch (batch_size), if any,
   else fragments (fill_from_fragments).  */
static void *from_binmap(struct arena *ar, size_t nb, bool refill) {
  if (binmap_empty(ar)) return NULL; /* the common case while a heap only grows */
  unsigned i = binmap_next(ar, bin_index(nb) + 1);
  if (i == NBINS) return NULL;
  size_t batch = batch_size(nb, refill);
  if (batch && chunksize(bin_at(ar, i)->bk) < batch) {
    unsigned from = bin_index(batch), j = binmap_next(ar, from > i + 1 ? from : i + 1);
    if (j != NBINS) i = j;
  }
  struct chunk *v = bin_at(ar, i)->bk;
  size_t size = chunksize(v);
  if (size < nb) hp_fatal("malloc(): corrupted bin");
  unlink_chunk(ar, v);
  void *m = take_chunk(ar, v, size, nb, in_smallbin_range(nb), refill ? CARVE_REFILL : CARVE_NONE);
  if (batch) fill_from_fragments(ar, nb);
  return m;
}

/* Serve `bytes` from arena ar (locked).  NULL with errno ENOMEM on failure.  */
void *int_malloc(struct arena *ar, size_t bytes, bool refill) {
  HP_ASSERT(arena_held(ar));
  HP_ASSERT(ar->top == bin_at(ar, 0) || prev_inuse(ar->top));
  size_t nb = request2size(bytes);
  void *m;
  if (nb <= FASTBIN_MAX_CHUNK && (m = from_fastbin(ar, nb)) != NULL) return m;
  if (in_smallbin_range(nb)) {
    if ((m = from_smallbin(ar, nb)) != NULL) return m;
  } else if (nb > TC_MAX_CHUNK && have_fast(ar)) {
    /* merge what the fastbins hold before a request above the cache's
       classes looks for a large chunk (glibc does it for every large
       request; the cache's classes consolidate only when nothing else
       can serve them, below) */
    malloc_consolidate(ar);
  }
  for (;;) {
    size_t cached = 0;
    if ((m = process_unsorted(ar, nb, &cached, refill)) != NULL) return m;
    if (!in_smallbin_range(nb) && (m = from_largebin(ar, nb, refill)) != NULL) return m;
    if ((m = from_binmap(ar, nb, refill)) != NULL) return m;
    if ((m = top_take(ar, nb)) != NULL) return m;
    if (!have_fast(ar)) return sys_grow(ar, nb);
    malloc_consolidate(ar);
  }
}

/* Serve from ar, its lock held: `bytes` aligned as malloc aligns when
   alignment is 0, else to alignment (int_memalign's).  */
static void *serve(struct arena *ar, size_t alignment, size_t bytes) {
  return alignment ? int_memalign(ar, alignment, bytes) : int_malloc(ar, bytes, false);
}

void *malloc_elsewhere(const struct arena *ar, size_t alignment, size_t bytes) {
  struct arena *other = arena_other_or_new(ar);
  if (!other) return NULL;
  bool lk = arena_lock(other);
  void *p = serve(other, alignment, bytes);
  arena_unlock(other, lk);
  return p;
}

void *malloc_from_arena(struct arena *ar, size_t alignment, size_t bytes) {
  bool lk = arena_lock(ar);
  void *p = serve(ar, alignment, bytes);
  arena_unlock(ar, lk);
  return p ? p : malloc_elsewhere(ar, alignment, bytes);
}

/* ------------------------------------------------------------------ realloc, memalign */

/* Give back the tail of in-use chunk p beyond nb (p's size is `size`).  */
static void split_tail(struct arena *ar, struct chunk *p, size_t size, size_t nb) {
  size_t rsize = size - nb;
  if (rsize < MINSIZE) {
    set_head_size(p, size);
    set_inuse_at(p, size);
    return;
  }
  struct chunk *rem = chunk_at(p, nb);
  set_head_size(p, nb);
  set_head(rem, rsize | PREV_INUSE | arena_flag(ar));
  set_inuse_at(rem, rsize);
  free_chunk(ar, rem, FREE_LOCKED);
}

/* A shrink of a chunk above the cache's small classes keeps the whole
   chunk when the tail it would cut off is less than half the chunk and
   less than KEEP_TAIL bytes, and top does not follow.  Cut off, such a
   tail is a fragment the next malloc must sort, the block is left at a
   size no cache class takes, and the block's next grow must move; kept,
   the block grows back into it for nothing (the slab allocators' shrink
   within a size class; mimalloc keeps a block shrunk by less than half).
   A tail of a page or more goes back, so shrinking a large block still
   frees memory, and one before top goes back to top, which trim can then
   return.  Small chunks (up to TC_SMALL_MAX_CHUNK) are split as before:
   each size is its own cache class there, and a block kept at its old
   size is freed into a class the program may no longer ask for.
   Measured with callgrind: `small realloc 0.08` (random sizes 8 bytes to
   4 KiB, a quarter of the calls shrinks) 341 M instructions against
   374 M (glibc 349 M); peak RSS (make bench) 14.7 MB against 14.4 MB; python3
   pyalloc.py 0.25 (PYTHONMALLOC=malloc) 2.935 G against 2.931 G, and
   2.940 G when small chunks were kept too.  */
enum { KEEP_TAIL = 4096 };
static bool keep_whole(const struct arena *ar, const struct chunk *next, size_t oldsize, size_t nb) {
  size_t tail = oldsize - nb;
  return oldsize > TC_SMALL_MAX_CHUNK && tail < KEEP_TAIL && tail < oldsize / 2 && next != ar->top;
}

/* Resize in-use, non-mapped chunk old (of oldsize) to nb, in place when it
   shrinks or the next chunk is free or top, else by moving.  Returns
   memory or NULL (old unchanged).  */
void *int_realloc(struct arena *ar, struct chunk *old, size_t oldsize, size_t nb) {
  HP_ASSERT(arena_held(ar) && !chunk_is_mmapped(old) && chunksize(old) == oldsize);
  struct chunk *next = chunk_at(old, oldsize);
  size_t nextsize = chunksize(next);
  if (next->size <= CHUNK_HDR || nextsize >= ar->system_mem) hp_fatal("realloc(): invalid next size");
  if (oldsize >= nb) {
    if (!keep_whole(ar, next, oldsize, nb)) split_tail(ar, old, oldsize, nb);
    return chunk2mem(old);
  }
  if (next == ar->top && oldsize + nextsize >= nb + MINSIZE) {
    set_head_size(old, nb);
    ar->top = chunk_at(old, nb);
    set_free_head(ar->top, (oldsize + nextsize - nb) | PREV_INUSE);
    return chunk2mem(old);
  }
  if (next != ar->top && !inuse_at(next, nextsize) && oldsize + nextsize >= nb) {
    unlink_chunk(ar, next);
    split_tail(ar, old, oldsize + nextsize, nb);
    return chunk2mem(old);
  }
  void *m = int_malloc(ar, nb - HP_ALIGN_MASK, false);
  if (!m) return NULL;
  struct chunk *n = mem2chunk(m);
  if (n == next) {
    /* got the neighbour itself: merge instead of copying */
    split_tail(ar, old, oldsize + chunksize(n), nb);
    return chunk2mem(old);
  }
  memcpy(m, chunk2mem(old), oldsize - SIZE_SZ);
  free_chunk(ar, old, FREE_LOCKED);
  return m;
}

/* Memory of `bytes` aligned to `alignment` (a power of two > 16).  */
void *int_memalign(struct arena *ar, size_t alignment, size_t bytes) {
  HP_ASSERT(arena_held(ar) && is_pow2(alignment) && alignment > HP_ALIGN);
  size_t nb = request2size(bytes);
  if (nb > SIZE_MAX - alignment - MINSIZE) {
    errno = ENOMEM;
    return NULL;
  }
  void *m = int_malloc(ar, nb + alignment + MINSIZE, false);
  if (!m) return NULL;
  struct chunk *p = mem2chunk(m);
  if (((uintptr_t)m & (alignment - 1)) != 0) {
    char *brk = (char *)mem2chunk((void *)align_up((uintptr_t)m, alignment));
    if ((size_t)(brk - (char *)p) < MINSIZE) brk += alignment;
    struct chunk *np = (struct chunk *)brk;
    size_t lead = (size_t)(brk - (char *)p);
    size_t nsize = chunksize(p) - lead;
    if (chunk_is_mmapped(p)) {
      np->prev_size = p->prev_size + lead;
      set_head(np, nsize | IS_MMAPPED);
      return chunk2mem(np);
    }
    set_head(np, nsize | PREV_INUSE | arena_flag(ar));
    set_inuse_at(np, nsize);
    set_head_size(p, lead);
    free_chunk(ar, p, FREE_LOCKED);
    p = np;
  }
  if (!chunk_is_mmapped(p)) split_tail(ar, p, chunksize(p), nb);
  return chunk2mem(p);
}
