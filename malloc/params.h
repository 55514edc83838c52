/* SPDX-License-Identifier: MIT */
/* params.h: the allocator-wide parameters (`mp`), start-up and mallopt
 * (init.c).  Includes: hp_base.h, hp_sys.h, chunk.h.
 *
 * Who writes mp:
 *   - init.c, at start-up (phase 1, before any other thread can call in)
 *     and in mallopt (under the main arena lock);
 *   - mmapped.c, glibc's dynamic threshold (mmap_threshold and
 *     trim_threshold) when a mapped chunk is freed, without a lock, as
 *     glibc does: a racing reader sees the old or the new value;
 *   - the statistics counters at the end, with atomics: mmapped.c (mapped
 *     chunks) and arena.c (n_arenas).
 * The huge-page mode and page sizes are not here: region.c owns them
 * (region.h, struct region_policy).  */
#ifndef HP_PARAMS_H
#define HP_PARAMS_H

#include <stdatomic.h>

#include "chunk.h"
#include "hp_base.h"
#include "hp_sys.h"

struct hp_params {
  size_t top_pad;
  size_t trim_threshold;
  size_t mmap_threshold;
  int n_mmaps_max;
  bool no_dyn_threshold; /* a threshold was set: no dynamic adjustment */
  size_t arena_test;
  size_t arena_max;
  size_t max_fast; /* largest fastbin chunk size (0 disables) */
  int perturb;
  size_t tcache_max_bytes;  /* largest request the per-thread cache takes (glibc.malloc.tcache_max) */
  size_t tcache_bins;       /* small bins in use (tcache.h) */
  size_t tcache_small_span; /* tcache_bins * HP_ALIGN: free tests size - MINSIZE against it */
  size_t tcache_large_bins; /* large bins in use */
  size_t tcache_count;      /* glibc.malloc.tcache_count: every bin's cap when tcache_fixed */
  bool tcache_fixed;        /* tcache_count was set: fixed caps, as glibc; else caps adapt */
  size_t tcache_bytes;      /* hpmalloc.tcache_bytes: what one thread's caps may add up to */
  size_t tcache_unsorted_limit;
  const char *mode_reason; /* why the huge-page mode resolved as it did */
  size_t heap_max;         /* size and alignment of non-main heaps (power of two) */
  size_t page;             /* base page size */
  size_t max_request;      /* larger requests fail at once (address space, PTRDIFF_MAX) */
  /* statistics (atomic) */
  _Atomic size_t n_mmaps, max_n_mmaps;
  _Atomic size_t mmapped_mem, max_mmapped_mem;
  _Atomic size_t mmapped_thp, mmapped_hugetlb;
  _Atomic size_t n_arenas;
};
extern struct hp_params mp HP_INTERNAL;
extern struct hp_sysinfo hp_sysinfo HP_INTERNAL; /* what the probe found at start-up */

/* 0 before start-up, 1 while one thread runs phase 1, 2 once the
   allocator works.  */
extern _Atomic int hp_initialized HP_INTERNAL;
HP_INTERNAL void hp_init_slow(void);
static inline void hp_ensure_init(void) {
  if (HP_UNLIKELY(atomic_load_explicit(&hp_initialized, memory_order_acquire) != 2)) hp_init_slow();
}

/* Set mp (and the region policy) from parsed tunables (tunables.h): at
   start-up, and by tests.  */
struct hp_tunable_values;
HP_INTERNAL void hp_apply_tunables(const struct hp_tunable_values *tv);
HP_INTERNAL int hp_mallopt(int param, int value);

/* glibc's M_PERTURB: fill allocated and freed blocks with a pattern.  */
static inline void perturb_alloc(void *p, size_t n) {
  if (HP_UNLIKELY(mp.perturb)) __builtin_memset(p, mp.perturb ^ 0xff, n);
}
static inline void perturb_free(void *p, size_t n) {
  if (HP_UNLIKELY(mp.perturb)) __builtin_memset(p, mp.perturb, n);
}

#endif
