/* SPDX-License-Identifier: MIT */
/* malloc.c: the public entry points.  Argument checks, errno, dispatch to
 * the tcache (inlined fast paths), the arenas and mapped chunks, and the
 * valgrind client requests that describe each block to memcheck.  The work
 * itself happens in the files each entry point calls.
 *
 * Test builds (HP_TEST_BUILD) rename every entry point hpt_NAME, so unit
 * tests can drive the allocator while their harness keeps the system's.  */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"
#include "arena.h"
#include "bins.h"
#include "mmapped.h"
#include "stats.h"
#include "tcache.h"
#include "top.h"
#include "track.h"

#ifdef HP_TEST_BUILD
#include "hpt_api.h"
#define HP_API(n) hpt_##n
#else
#define HP_API(n) n
#endif
#define HP_EXPORT __attribute__((visibility("default")))

#ifndef HP_TEST_BUILD
/* C23, not yet in glibc 2.36's headers.  */
HP_EXPORT void free_sized(void *p, size_t size);
HP_EXPORT void free_aligned_sized(void *p, size_t alignment, size_t size);
#endif

/* ------------------------------------------------------------------ valgrind */

#ifdef HP_HAVE_VALGRIND

/* Tell memcheck about a new block of n bytes at p; the slack after it and
   the next chunk's size field become inaccessible so overflows show.
   Takes the caller's pointer by address to define it.  */
static void vg_alloc_at(void **pp, size_t n, bool zeroed) {
  vg_define(pp, sizeof *pp);
  void *p = *pp;
  if (HP_LIKELY(!hp_vg) || !p) return;
  struct chunk *c = mem2chunk(p);
  VALGRIND_DISABLE_ERROR_REPORTING;
  size_t usable = chunk_usable(c);
  char *next_size = chunk_is_mmapped(c) ? NULL : (char *)next_chunk(c) + SIZE_SZ;
  VALGRIND_ENABLE_ERROR_REPORTING;
  /* read from headers memcheck may hold as inaccessible (slack of an
     earlier block): hpmalloc's own values, defined before they branch */
  vg_define(&usable, sizeof usable);
  vg_define(&next_size, sizeof next_size);
  VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, zeroed);
  if (usable > n) VALGRIND_MAKE_MEM_NOACCESS((char *)p + n, usable - n);
  if (next_size) VALGRIND_MAKE_MEM_NOACCESS(next_size, SIZE_SZ);
}
static void vg_free(void *p) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_FREELIKE_BLOCK(p, 0);
}
/* The program was told it may use *n bytes at p: open the slack after the
   block it asked for (inaccessible since vg_alloc) as undefined memory,
   leaving the bytes it wrote as they are.  */
static void vg_usable(void *p, size_t *n) {
  vg_define(n, sizeof *n);
  if (HP_LIKELY(!hp_vg) || !*n) return;
  VALGRIND_DISABLE_ERROR_REPORTING;
  char *slack = (char *)VALGRIND_CHECK_MEM_IS_ADDRESSABLE(p, *n);
  VALGRIND_ENABLE_ERROR_REPORTING;
  if (slack) VALGRIND_MAKE_MEM_UNDEFINED(slack, (size_t)((char *)p + *n - slack));
}
#else
static inline void vg_alloc_at(void **pp, size_t n, bool zeroed) {
  (void)pp;
  (void)n;
  (void)zeroed;
}
static inline void vg_free(void *p) { (void)p; }
static inline void vg_usable(void *p, size_t *n) {
  (void)p;
  (void)n;
}
#endif

/* ------------------------------------------------------------------ core paths */

/* Allocate n bytes from the thread's arena (or another, once).  */
static void *alloc_from_arena(size_t n) {
  void *p = malloc_from_arena(arena_of_thread(), 0, n);
  region_run_deferred();
  if (!p) errno = ENOMEM;
  return p;
}

/* A request larger than the address space can never be served: fail at
   once, without asking the kernel (glibc's PTRDIFF_MAX bound, and the
   architecture's user address space limit).  */
static inline bool hopeless(size_t n) { return n > mp.max_request; }

static bool alloc_prepare(size_t n) {
  hp_ensure_init();
  if (HP_UNLIKELY(hopeless(n))) {
    errno = ENOMEM;
    return false;
  }
  if (HP_UNLIKELY(hp_self.state == HP_THREAD_NEW)) tcache_thread_start();
  return true;
}

/* Allocate n bytes (in range) for an active thread: its cache's bin, which
   a miss refills, or, for a size no bin takes, its arena.  */
static void *alloc_cached(size_t n) {
  size_t nb = request2size(n), tidx = tcache_class(&nb);
  if (tidx == TC_BINS || !tcache_on()) return alloc_from_arena(nb - SIZE_SZ); /* a large class's size all the same */
  if (!hp_self.bins[tidx].head) return tcache_refill(tidx, nb);
  void *m = tcache_get(tidx);
  /* off the inline path, a cheap look at the header: a write past the end
     of the block before it, or into the freed block's header, shows here */
  if (HP_UNLIKELY(chunksize(mem2chunk(m)) != nb)) hp_fatal("malloc(): memory corruption (tcache)");
  return m;
}


/* Allocate n bytes: the cache, then an arena.  No valgrind marking.  */
static void *alloc_core(size_t n) { return alloc_prepare(n) ? alloc_cached(n) : NULL; }

/* Allocate n bytes, as alloc_core, for calloc: glibc's fixed tcache
   (tcache_count set) serves calloc from the arena only, as glibc 2.36.  */
static void *alloc_for_calloc(size_t n) {
  if (!mp.tcache_fixed) return alloc_core(n);
  return alloc_prepare(n) ? alloc_from_arena(n) : NULL;
}

/* Not inlined: malloc's fast path stays a leaf that ends in a jump here.  */
__attribute__((noinline)) static void *malloc_slow(size_t n) {
  /* the common case: an initialised thread whose small bin was empty
     (malloc looked already), or a larger request */
  if (HP_LIKELY(!hp_vg && thread_active() && !hopeless(n) &&
                atomic_load_explicit(&hp_initialized, memory_order_relaxed) == 2)) {
    void *p = alloc_cached(n);
    if (p && HP_UNLIKELY(mp.perturb) && !chunk_is_mmapped(mem2chunk(p))) perturb_alloc(p, n);
    return p;
  }
  vg_enter();
  void *p = alloc_core(n);
  if (p && !chunk_is_mmapped(mem2chunk(p))) perturb_alloc(p, n);
  vg_leave();
  vg_alloc_at(&p, n, false);
  return p;
}

/* Is chunk c (header `head`) of an arena other than this thread's?  For
   the main arena's thread, the header alone says.  */
static inline bool tcache_is_foreign(const struct chunk *c, size_t head) {
  uintptr_t tag = (head & NON_MAIN_ARENA) ? (uintptr_t)heap_for_ptr(c)->ar : 0;
  return tag != hp_self.home;
}

static const char double_free_msg[] = "free(): double free detected in tcache 2";

/* Free in-use chunk c for bin tidx, which free's inline path left: it
   carries the key (a double free, or a coincidence), it is another
   arena's (tcache.h, "Whose chunks"), or the bin is full.  */
__attribute__((noinline)) static void free_to_bin(struct chunk *c, size_t tidx) {
  /* a cached chunk carries the key, whether or not this bin has room */
  struct tc_entry *e = (struct tc_entry *)chunk2mem(c);
  if (HP_UNLIKELY(e->key == hp_tcache_key)) tcache_fatal_if_cached(e, tidx, double_free_msg);
  if (tcache_is_foreign(c, c->size)) {
    tcache_put_foreign(c);
  } else if (hp_self.bins[tidx].count < hp_self.bins[tidx].cap) {
    tcache_check_neighbours(c);
    tcache_put(c, tidx);
  } else {
    tcache_overflow(c, tidx);
  }
}

/* Free in-use heap chunk c of `size` (checked): into the cache, for the
   sizes free's inline path leaves (large classes, a full bin), else into
   its arena.  */
__attribute__((noinline)) static void free_to_cache_or_arena(struct chunk *c, size_t size) {
  size_t tidx = tcache_bin_of(size);
  if (tidx == TC_BINS || !tcache_on()) {
    if (size <= mp.max_fast)
      fastbin_push(arena_for_chunk(c), c); /* no lock */
    else
      free_chunk(arena_for_chunk(c), c, 0);
    return;
  }
  free_to_bin(c, tidx);
}

/* Free chunk c, whose header says its arena holds it free already: a
   double free, whose second free the arena's checks catch with glibc's
   words ("double free or corruption (top)", "(out)", "(!prev)"), or a
   header damaged in that bit, which the same checks judge as they would
   any chunk (one that passes is freed).  Not through the cache: its key
   is not there to catch it.  */
__attribute__((noinline, cold)) static void free_via_arena_checks(struct chunk *c) {
  struct arena *ar = arena_for_chunk(c);
  free_chunk(ar, c, FREE_NO_PARK);
}

/* Free chunk c (not NULL, checked for alignment and wrap).  */
static void free_core(struct chunk *c) {
  size_t size = chunksize(c);
  if (chunk_is_mmapped(c)) {
    munmap_chunk(c);
    return;
  }
  if (HP_UNLIKELY(size < MINSIZE)) hp_fatal("free(): invalid size");
  if (HP_UNLIKELY(c->size & ARENA_FREE)) {
    free_via_arena_checks(c);
    return;
  }
  if (HP_UNLIKELY(hp_self.state == HP_THREAD_NEW)) tcache_thread_start();
  free_to_cache_or_arena(c, size);
}

/* Does chunk c of `size` neither wrap the address space nor sit
   misaligned?  (glibc's "free(): invalid pointer" checks.)  */
static inline bool pointer_ok(const struct chunk *c, size_t size) {
  return (uintptr_t)c <= (uintptr_t)-size && aligned_ok((uintptr_t)chunk2mem(c));
}
static inline void check_pointer(const struct chunk *c, size_t size, const char *msg) {
  if (HP_UNLIKELY(!pointer_ok(c, size))) hp_fatal(msg);
}

/* errno is kept by the layers below (region.c saves it around the kernel).  */
__attribute__((noinline)) static void free_slow(void *p) {
  hp_ensure_init();
  struct chunk *c = mem2chunk(p);
  vg_enter();
  check_pointer(c, chunksize(c), "free(): invalid pointer");
  vg_leave();
  vg_free(p);
  vg_enter();
  free_core(c);
  vg_leave();
}

/* ------------------------------------------------------------------ malloc, free */

HP_EXPORT void *HP_API(malloc)(size_t n) {
  if (HP_LIKELY(n <= hp_tc_max_request)) {
    size_t tidx = csize2tidx(request2size(n));
    if (HP_LIKELY(hp_self.bins[tidx].head != NULL)) return tcache_get(tidx);
  }
  return malloc_slow(n);
}

HP_EXPORT void HP_API(free)(void *p) {
  if (HP_UNLIKELY(!p)) return;
  /* the cache is off before the thread's first call and under valgrind,
     where the header must not be read before error reporting is off */
  if (HP_LIKELY(tcache_on())) {
    struct chunk *c = mem2chunk(p);
    size_t head = c->size;
    /* a chunk its arena holds free says so in its header (ARENA_FREE) */
    if (HP_LIKELY(!(head & (IS_MMAPPED | ARENA_FREE)))) {
      size_t size = head & ~(size_t)SIZE_BITS;
      /* A pointer that fails the checks, or a size below MINSIZE (whose
         class index wraps past every bin), goes to free_slow, which
         reports it: this path then makes no call that needs a frame.  */
      if (HP_UNLIKELY(!pointer_ok(c, size))) goto slow;
      /* the small bins' classes, tested without shifting the size: a
         size below MINSIZE wraps past them */
      if (HP_LIKELY(size - MINSIZE < mp.tcache_small_span)) {
        /* a cached chunk carries the key, whether or not this bin has room */
        struct tc_entry *e = (struct tc_entry *)p;
        struct tc_bin *b = tcache_small_bin(size);
        if (HP_LIKELY(e->key != hp_tcache_key)) {
          if (HP_UNLIKELY(tcache_is_foreign(c, head))) {
            tcache_put_foreign(c);
            return;
          }
          if (HP_LIKELY(b->count < b->cap)) {
            tcache_push(b, e);
            return;
          }
        }
        free_to_bin(c, csize2tidx(size));
        return;
      }
      if (HP_LIKELY(size >= MINSIZE)) {
        free_to_cache_or_arena(c, size);
        return;
      }
    }
  }
slow:
  free_slow(p);
}

HP_EXPORT void HP_API(free_sized)(void *p, size_t size) {
  (void)size;
  HP_API(free)(p);
}

HP_EXPORT void HP_API(free_aligned_sized)(void *p, size_t alignment, size_t size) {
  (void)alignment;
  (void)size;
  HP_API(free)(p);
}

HP_EXPORT void *HP_API(calloc)(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  vg_enter();
  void *p = alloc_for_calloc(bytes);
  /* a chunk mapped on its own is fresh from the kernel, hence zero */
  if (p && !chunk_is_mmapped(mem2chunk(p))) memset(p, 0, bytes);
  vg_leave();
  vg_alloc_at(&p, bytes, true);
  return p;
}

/* ------------------------------------------------------------------ realloc */

static void *realloc_mapped(struct chunk *c, void *p, size_t n, size_t nb) {
  size_t oldsize = chunksize(c);
  void *q = mremap_chunk(c, nb);
  if (q) return q;
  if (oldsize - CHUNK_HDR >= n) return p;
  q = alloc_core(n);
  if (!q) return NULL;
  memcpy(q, p, oldsize - CHUNK_HDR);
  munmap_chunk(c);
  return q;
}

/* A block freed already is no block to resize: its arena holds it free
   (the header says so), or this thread's cache does (the key, and the
   block in its bin).  glibc resizes it and the heap is corrupt from then
   on; here it ends as a bad pointer does.  */
static void realloc_check_freed(const struct chunk *c, size_t oldsize) {
  if (HP_UNLIKELY(c->size & ARENA_FREE)) hp_fatal("realloc(): invalid pointer");
  const struct tc_entry *e = (const struct tc_entry *)chunk2mem(c);
  if (HP_UNLIKELY(e->key == hp_tcache_key) && tcache_on()) {
    size_t tidx = tcache_bin_of(oldsize);
    if (tidx != TC_BINS) tcache_fatal_if_cached(e, tidx, "realloc(): invalid pointer");
  }
}

static void *realloc_heap(struct chunk *c, void *p, size_t n, size_t nb) {
  size_t oldsize = chunksize(c);
  if (HP_UNLIKELY(oldsize < MINSIZE || (oldsize & HP_ALIGN_MASK))) hp_fatal("realloc(): invalid old size");
  realloc_check_freed(c, oldsize);
  struct arena *ar = arena_for_chunk(c);
  bool lk = arena_lock(ar);
  void *q = int_realloc(ar, c, oldsize, nb);
  arena_unlock(ar, lk);
  region_run_deferred();
  if (q) return q;
  /* that arena is out of memory: try elsewhere */
  q = alloc_core(n);
  if (!q) return NULL;
  memcpy(q, p, oldsize - SIZE_SZ);
  free_chunk(ar, c, 0);
  return q;
}

/* Under memcheck, realloc always moves, so each block keeps one identity.  */
static void *realloc_valgrind(void *p, size_t n) {
  struct chunk *c = mem2chunk(p);
  vg_enter();
  check_pointer(c, chunksize(c), "realloc(): invalid pointer");
  void *q = alloc_core(n);
  vg_leave();
  vg_define(&q, sizeof q);
  if (!q) return NULL;
  vg_alloc_at(&q, n, false);
  vg_enter();
  size_t old = chunk_usable(c);
  vg_define(&old, sizeof old);
  memcpy(q, p, old < n ? old : n);
  vg_leave();
  vg_free(p);
  vg_enter();
  free_core(c);
  vg_leave();
  return q;
}

HP_EXPORT void *HP_API(realloc)(void *p, size_t n) {
  if (!p) return HP_API(malloc)(n);
  if (n == 0) {
    HP_API(free)(p);
    return NULL;
  }
  hp_ensure_init();
  if (HP_UNLIKELY(hp_vg)) return realloc_valgrind(p, n);
  struct chunk *c = mem2chunk(p);
  check_pointer(c, chunksize(c), "realloc(): invalid pointer");
  if (HP_UNLIKELY(hopeless(n))) {
    errno = ENOMEM;
    return NULL;
  }
  size_t nb = request2size(n);
  if (nb > chunksize(c)) (void)tcache_class(&nb); /* growing: a large class's size, room to grow again */
  void *q = chunk_is_mmapped(c) ? realloc_mapped(c, p, n, nb) : realloc_heap(c, p, n, nb);
  if (!q) errno = ENOMEM;
  return q;
}

HP_EXPORT void *HP_API(reallocarray)(void *p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return HP_API(realloc)(p, bytes);
}

/* ------------------------------------------------------------------ aligned */

static void *aligned_core(size_t alignment, size_t n) {
  if (alignment <= HP_ALIGN) return alloc_core(n);
  hp_ensure_init();
  if (alignment > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  if (alignment < MINSIZE) alignment = MINSIZE;
  if (!is_pow2(alignment)) alignment = (size_t)1 << (64 - __builtin_clzll((unsigned long long)alignment));
  if (hopeless(n) || n > (size_t)PTRDIFF_MAX - alignment - MINSIZE) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = malloc_from_arena(arena_of_thread(), alignment, n);
  region_run_deferred();
  if (!p) errno = ENOMEM;
  return p;
}

/* Shared by the five aligned entry points: not inlined, so the library
   holds one copy of it rather than one per entry point.  */
__attribute__((noinline)) static void *aligned_entry(size_t alignment, size_t n) {
  vg_enter();
  void *p = aligned_core(alignment, n);
  if (p && !chunk_is_mmapped(mem2chunk(p))) perturb_alloc(p, n);
  vg_leave();
  vg_alloc_at(&p, n, false);
  return p;
}

HP_EXPORT void *HP_API(memalign)(size_t alignment, size_t n) { return aligned_entry(alignment, n); }

HP_EXPORT void *HP_API(aligned_alloc)(size_t alignment, size_t n) { return aligned_entry(alignment, n); }

HP_EXPORT int HP_API(posix_memalign)(void **out, size_t alignment, size_t n) {
  if (alignment % sizeof(void *) != 0 || !is_pow2(alignment / sizeof(void *)) || alignment == 0) return EINVAL;
  void *p = aligned_entry(alignment, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

HP_EXPORT void *HP_API(valloc)(size_t n) {
  hp_ensure_init();
  return aligned_entry(mp.page, n);
}

HP_EXPORT void *HP_API(pvalloc)(size_t n) {
  hp_ensure_init();
  size_t rounded = align_up(n, mp.page);
  if (rounded < n) {
    errno = ENOMEM;
    return NULL;
  }
  return aligned_entry(mp.page, rounded);
}

HP_EXPORT size_t HP_API(malloc_usable_size)(void *p) {
  if (!p) return 0;
  struct chunk *c = mem2chunk(p);
  size_t n;
  vg_enter();
  if (chunk_is_mmapped(c))
    n = chunksize(c) - CHUNK_HDR;
  else
    n = inuse(c) ? chunksize(c) - SIZE_SZ : 0;
  vg_leave();
  vg_usable(p, &n);
  return n;
}

/* ------------------------------------------------------------------ tuning and statistics */

HP_EXPORT int HP_API(mallopt)(int param, int value) { return hp_mallopt(param, value); }

HP_EXPORT int HP_API(malloc_trim)(size_t pad) {
  hp_ensure_init();
  int saved = errno, released = 0;
  vg_enter();
  tcache_reset(); /* the calling thread's cache; the others' stay theirs */
  vg_leave();
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    bool lk = arena_lock(ar);
    vg_enter();
    released |= arena_trim(ar, pad);
    vg_leave();
    arena_unlock(ar, lk);
  }
  errno = saved;
  return released;
}

HP_EXPORT struct mallinfo2 HP_API(mallinfo2)(void) { return hp_mallinfo2(); }
HP_EXPORT struct mallinfo HP_API(mallinfo)(void) { return hp_mallinfo(); }
HP_EXPORT void HP_API(malloc_stats)(void) { hp_malloc_stats(); }
HP_EXPORT int HP_API(malloc_info)(int options, FILE *fp) { return hp_malloc_info(options, fp); }

/* ------------------------------------------------------------------ extensions */

HP_EXPORT const char *hpmalloc_version(void) { return HPMALLOC_VERSION_STRING; }

HP_EXPORT int hpmalloc_stats(struct hpmalloc_stats *st, size_t size) { return hp_stats(st, size); }

HP_EXPORT int hpmalloc_check_heap(void) {
  hp_ensure_init();
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    bool lk = arena_lock(ar);
    vg_enter();
    check_arena(ar);
    vg_leave();
    arena_unlock(ar, lk);
  }
  return 0;
}

/* ------------------------------------------------------------------ glibc's internal names */
#ifndef HP_TEST_BUILD
#pragma GCC diagnostic ignored "-Wmissing-attributes"
/* Programs and libraries that call glibc's own entry points by these names
   must reach hpmalloc too, or glibc's block would come back to our free.
   The names are glibc's, hence reserved identifiers.  */
// NOLINTBEGIN(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)
HP_EXPORT void *__libc_malloc(size_t) __attribute__((alias("malloc")));
HP_EXPORT void __libc_free(void *) __attribute__((alias("free")));
HP_EXPORT void *__libc_calloc(size_t, size_t) __attribute__((alias("calloc")));
HP_EXPORT void *__libc_realloc(void *, size_t) __attribute__((alias("realloc")));
HP_EXPORT void *__libc_memalign(size_t, size_t) __attribute__((alias("memalign")));
HP_EXPORT void *__libc_valloc(size_t) __attribute__((alias("valloc")));
HP_EXPORT void *__libc_pvalloc(size_t) __attribute__((alias("pvalloc")));
HP_EXPORT struct mallinfo __libc_mallinfo(void) __attribute__((alias("mallinfo")));
HP_EXPORT struct mallinfo2 __libc_mallinfo2(void) __attribute__((alias("mallinfo2")));
HP_EXPORT int __libc_mallopt(int, int) __attribute__((alias("mallopt")));
HP_EXPORT int __posix_memalign(void **, size_t, size_t) __attribute__((alias("posix_memalign")));
// NOLINTEND(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)
#endif
