/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/bins.c (and of top.c as bins.c reaches it): the
 * fastbins, the unsorted, small and large bins, the binmap, coalescing,
 * realloc and memalign in the arena, trimming, mallinfo2, and the cheap
 * corruption checks.  Driven through the test build's hpt_* API and
 * checked through the internals (main_arena, check_arena).
 *
 * Most tests switch the calling thread's tcache off (tcache_switch_off()) so
 * that every free reaches the arena.  Criterion runs each test in a fresh
 * process, so the allocator starts from nothing every time.  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "bins.h"
#include "check.h"
#include "unit_helpers.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ================================================================ helpers */

/* Initialise the allocator and switch this thread's tcache off; requests
   keep their exact chunk sizes (no large classes), as these tests of the
   bins count on.  */
static void tcache_off(void) {
  hp_ensure_init();
  tcache_thread_start();
  tcache_switch_off(); /* empty, and off */
  mp.tcache_large_bins = 0;
}

static void check_main(void) {
  bool lk = arena_lock(&main_arena);
  cr_assert_eq(check_arena(&main_arena), 0);
  arena_unlock(&main_arena, lk);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

static bool bit_in_binmap(struct arena *ar, unsigned idx) {
  return ar->binmap[idx >> BINMAP_SHIFT] & (1u << (idx & (BITSPERMAP - 1)));
}

static bool in_bin_list(struct arena *ar, unsigned idx, const struct chunk *c) {
  struct chunk *b = bin_at(ar, idx);
  for (struct chunk *p = b->fd; p != b; p = p->fd)
    if (p == c) return true;
  return false;
}

/* A deterministic pseudo-random sequence (no libc state).  */
static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static void fill(void *p, size_t n, unsigned char tag) { memset(p, tag, n); }

static void expect_filled(const void *p, size_t n, unsigned char tag) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) cr_assert_eq(b[i], tag, "byte %zu of a %zu-byte block changed", i, n);
}


/* ================================================================ allocation patterns */

struct block {
  unsigned char *p;
  size_t n;
};

static void alloc_block(struct block *b, size_t n, unsigned char tag) {
  b->p = hpt_malloc(n);
  b->n = n;
  cr_assert_not_null(b->p, "malloc(%zu)", n);
  cr_assert(aligned_ok((uintptr_t)b->p), "malloc(%zu) = %p misaligned", n, (void *)b->p);
  cr_assert_geq(hpt_malloc_usable_size(b->p), n);
  fill(b->p, n, tag);
}

/* Allocate nblocks of sizes in [lo, hi], free some, reallocate, verify
   contents, check the heap, free everything, check again.  */
static void run_pattern(size_t nblocks, size_t lo, size_t hi, uint32_t seed) {
  struct block *v = calloc(nblocks, sizeof *v);
  cr_assert_not_null(v);
  uint32_t s = seed;
  for (size_t i = 0; i < nblocks; i++) alloc_block(&v[i], lo + lcg(&s) % (hi - lo + 1), (unsigned char)i);
  for (size_t i = 0; i < nblocks; i += 3) {
    hpt_free(v[i].p);
    v[i].p = NULL;
  }
  check_main();
  for (size_t i = 0; i < nblocks; i += 3) alloc_block(&v[i], lo + lcg(&s) % (hi - lo + 1), (unsigned char)i);
  for (size_t i = 0; i < nblocks; i++) expect_filled(v[i].p, v[i].n, (unsigned char)i);
  check_main();
  for (size_t i = 0; i < nblocks; i += 2) hpt_free(v[i].p);
  check_main();
  for (size_t i = 1; i < nblocks; i += 2) {
    expect_filled(v[i].p, v[i].n, (unsigned char)i);
    hpt_free(v[i].p);
  }
  check_main();
  free(v);
}

Test(bins, pattern_small_with_tcache) { run_pattern(2000, 1, 1024, 1); }
Test(bins, pattern_small_tcache_off) { tcache_off(); run_pattern(2000, 1, 1024, 2); }
Test(bins, pattern_large_tcache_off) { tcache_off(); run_pattern(300, 1025, 100 * KiB, 3); }
Test(bins, pattern_mixed_with_tcache) { run_pattern(1500, 1, 64 * KiB, 4); }

Test(bins, pattern_mixed_with_realloc) {
  tcache_off();
  enum { N = 400 };
  struct block v[N];
  uint32_t s = 5;
  for (size_t i = 0; i < N; i++) alloc_block(&v[i], 1 + lcg(&s) % 5000, (unsigned char)i);
  for (int round = 0; round < 4; round++) {
    for (size_t i = (size_t)round; i < N; i += 4) {
      size_t n = 1 + lcg(&s) % 9000;
      size_t keep = n < v[i].n ? n : v[i].n;
      unsigned char *q = hpt_realloc(v[i].p, n);
      cr_assert_not_null(q);
      expect_filled(q, keep, (unsigned char)i);
      fill(q, n, (unsigned char)i);
      v[i].p = q;
      v[i].n = n;
    }
    check_main();
  }
  for (size_t i = 0; i < N; i++) {
    expect_filled(v[i].p, v[i].n, (unsigned char)i);
    hpt_free(v[i].p);
  }
  check_main();
}

Test(bins, usable_size_covers_request) {
  static const size_t sizes[] = { 0, 1, 8, 24, 25, 100, 1000, 1024, 1032, 1033, 4096, 100000, 200000, 5 * MiB };
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = hpt_malloc(sizes[i]);
    cr_assert_not_null(p);
    cr_assert_geq(hpt_malloc_usable_size(p), sizes[i], "usable_size(malloc(%zu))", sizes[i]);
    cr_assert_lt(hpt_malloc_usable_size(p), sizes[i] + 2 * MiB, "usable size absurdly large");
    hpt_free(p);
  }
  cr_assert_eq(hpt_malloc_usable_size(NULL), 0);
}

/* ================================================================ coalescing */

Test(bins, coalesce_three_neighbours) {
  tcache_off();
  char *a = hpt_malloc(2000), *b = hpt_malloc(2000), *c = hpt_malloc(2000);
  void *guard = hpt_malloc(100);
  cr_assert(a && b && c && guard);
  cr_assert_eq(b, a + 2016, "consecutive chunks from top");
  cr_assert_eq(c, b + 2016);
  hpt_free(a);
  hpt_free(c);
  cr_assert_eq(chunksize(mem2chunk(a)), 2016);
  cr_assert_eq(chunksize(mem2chunk(c)), 2016);
  hpt_free(b);
  struct chunk *m = mem2chunk(a);
  cr_assert_eq(chunksize(m), 3 * 2016, "a, b and c merged into one chunk");
  cr_assert_not(inuse(m));
  cr_assert_eq(next_chunk(m), mem2chunk(guard));
  cr_assert_eq(mem2chunk(guard)->prev_size, 3 * 2016, "footer of the merged chunk");
  check_main();
  void *d = hpt_malloc(5900);
  cr_assert_eq(d, a, "the merged chunk serves a request only it can hold");
  check_main();
}

Test(bins, free_next_to_top_merges_into_top) {
  tcache_off();
  void *a = hpt_malloc(3000), *b = hpt_malloc(3000);
  size_t top_before = chunksize(main_arena.top);
  hpt_free(b);
  cr_assert_eq(main_arena.top, mem2chunk(b));
  cr_assert_eq(chunksize(main_arena.top), top_before + 3008);
  hpt_free(a);
  cr_assert_eq(main_arena.top, mem2chunk(a), "top grows backwards over a free neighbour");
  check_main();
}

/* ================================================================ bins and binmap */

Test(bins, best_fit_from_large_bin) {
  tcache_off();
  /* three chunks in one large bin (4096..4607), kept apart by guards */
  char *x = hpt_malloc(4200), *g1 = hpt_malloc(16);
  char *y = hpt_malloc(4400), *g2 = hpt_malloc(16);
  char *z = hpt_malloc(4300), *g3 = hpt_malloc(16);
  cr_assert(x && y && z && g1 && g2 && g3);
  unsigned idx = largebin_index(chunksize(mem2chunk(x)));
  cr_assert_eq(idx, largebin_index(chunksize(mem2chunk(y))));
  cr_assert_eq(idx, largebin_index(chunksize(mem2chunk(z))));
  hpt_free(x);
  hpt_free(y);
  hpt_free(z);
  /* a request for another bin sorts the unsorted chunks into their bin */
  void *big = hpt_malloc(20000);
  cr_assert(in_bin_list(&main_arena, idx, mem2chunk(x)));
  cr_assert(in_bin_list(&main_arena, idx, mem2chunk(y)));
  cr_assert(in_bin_list(&main_arena, idx, mem2chunk(z)));
  cr_assert(bit_in_binmap(&main_arena, idx));
  /* sorted largest first */
  struct chunk *bin = bin_at(&main_arena, idx);
  cr_assert_eq(bin->fd, mem2chunk(y));
  cr_assert_eq(bin->bk, mem2chunk(x));
  check_main();
  /* 4250 fits z (4304) best: not y (4416), and x (4208) is too small */
  void *w = hpt_malloc(4250);
  cr_assert_eq(w, z);
  void *w2 = hpt_malloc(4200);
  cr_assert_eq(w2, x);
  check_main();
  hpt_free(big);
  hpt_free(w);
  hpt_free(w2);
  check_main();
}

/* Bin headers are whole struct chunks here, with fd_nextsize NULL; taking
   the last (smallest) chunk of a large bin must not link the header into
   the size skip list (glibc's headers overlap the next bin, never NULL).  */
Test(bins, large_bin_stays_sorted_after_taking_its_last_chunk) {
  tcache_off();
  char *x = hpt_malloc(4200), *g1 = hpt_malloc(16), *y = hpt_malloc(4400), *g2 = hpt_malloc(16);
  char *u = hpt_malloc(4300), *g3 = hpt_malloc(16), *t = hpt_malloc(4350), *g4 = hpt_malloc(16);
  cr_assert(x && y && u && t && g1 && g2 && g3 && g4);
  unsigned idx = largebin_index(chunksize(mem2chunk(x)));
  struct chunk *bin = bin_at(&main_arena, idx);
  hpt_free(x);
  hpt_free(y);
  void *b1 = hpt_malloc(20000); /* sorts x and y into their bin */
  cr_assert_eq(hpt_malloc(4200), x, "exact fit: x, the bin's last chunk");
  cr_assert_eq(bin->fd, mem2chunk(y));
  cr_assert_eq(mem2chunk(y)->fd_nextsize, mem2chunk(y), "y alone in the bin is its own skip list");
  hpt_free(u);
  void *b2 = hpt_malloc(20000);
  hpt_free(t);
  void *b3 = hpt_malloc(20000);
  size_t prev = SIZE_MAX;
  for (struct chunk *c = bin->fd; c != bin; c = c->fd) {
    cr_assert_leq(chunksize(c), prev, "large bin %u out of order: %zu after %zu", idx, chunksize(c), prev);
    prev = chunksize(c);
  }
  check_main();
  /* best fit still works: 4340 fits t (4368), not y (4416) */
  cr_assert_eq(hpt_malloc(4340), t);
  check_main();
  hpt_free(b1);
  hpt_free(b2);
  hpt_free(b3);
}

Test(bins, small_bin_and_binmap) {
  tcache_off();
  char *a = hpt_malloc(500), *g = hpt_malloc(16);
  cr_assert(a && g);
  unsigned idx = smallbin_index(chunksize(mem2chunk(a)));
  cr_assert_eq(idx, 512 / 16);
  hpt_free(a);
  cr_assert(in_bin_list(&main_arena, UNSORTED_BIN, mem2chunk(a)), "freed chunks go to the unsorted bin first");
  cr_assert_not(bit_in_binmap(&main_arena, idx));
  void *big = hpt_malloc(3000);
  cr_assert(in_bin_list(&main_arena, idx, mem2chunk(a)), "sorted into its small bin");
  cr_assert(bit_in_binmap(&main_arena, idx));
  cr_assert_not(in_bin_list(&main_arena, UNSORTED_BIN, mem2chunk(a)));
  check_main();
  void *b = hpt_malloc(500);
  cr_assert_eq(b, a, "exact fit from the small bin");
  cr_assert_eq(bin_at(&main_arena, idx)->fd, bin_at(&main_arena, idx), "small bin empty again");
  check_main();
  hpt_free(big);
  hpt_free(b);
}

Test(bins, binmap_search_splits_next_larger_bin) {
  tcache_off();
  char *a = hpt_malloc(3000), *g = hpt_malloc(16);
  cr_assert(a && g);
  hpt_free(a);
  void *big = hpt_malloc(20000); /* sorts a into its large bin */
  unsigned idx = bin_index(chunksize(mem2chunk(a)));
  cr_assert(bit_in_binmap(&main_arena, idx));
  /* 600 has an empty small bin: the binmap leads to a's bin, a is split */
  void *s = hpt_malloc(600);
  cr_assert_eq(s, a);
  cr_assert_eq(chunksize(mem2chunk(s)), request2size(600));
  struct chunk *rem = next_chunk(mem2chunk(s));
  cr_assert_not(inuse(rem), "the remainder is free");
  cr_assert_eq(chunksize(rem), 3008 - request2size(600));
  cr_assert_eq(main_arena.last_remainder, rem, "small requests remember the remainder");
  check_main();
  hpt_free(big);
  hpt_free(s);
  check_main();
}

/* ================================================================ fastbins */

Test(bins, fastbins_lifo_with_mxfast) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_MXFAST, 64), 1);
  cr_assert_eq(mp.max_fast, 64);
  char *a = hpt_malloc(40), *b = hpt_malloc(40), *c = hpt_malloc(40), *g = hpt_malloc(16);
  cr_assert(a && b && c && g);
  unsigned idx = fastbin_index(48);
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  cr_assert_eq(main_arena.fastbins[idx], mem2chunk(c), "LIFO: the last freed is first");
  cr_assert(main_arena.have_fastchunks);
  cr_assert(inuse(mem2chunk(c)), "fast chunks stay marked in use");
  cr_assert_eq(chunksize(mem2chunk(a)), 48, "fast chunks do not coalesce");
  check_main();
  cr_assert_eq(hpt_malloc(40), c);
  cr_assert_eq(hpt_malloc(40), b);
  cr_assert_eq(hpt_malloc(40), a);
  cr_assert_null(main_arena.fastbins[idx]);
  check_main();
}

Test(bins, above_mxfast_not_fast) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_MXFAST, 64), 1);
  char *a = hpt_malloc(80), *g = hpt_malloc(16);
  cr_assert(a && g);
  hpt_free(a);
  for (unsigned i = 0; i < NFASTBINS; i++) cr_assert_null(main_arena.fastbins[i]);
  cr_assert_not(inuse(mem2chunk(a)));
  check_main();
}

Test(bins, mxfast_zero_disables_fastbins) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_MXFAST, 0), 1);
  cr_assert_eq(mp.max_fast, 0);
  char *a = hpt_malloc(24), *g = hpt_malloc(16);
  hpt_free(a);
  for (unsigned i = 0; i < NFASTBINS; i++) cr_assert_null(main_arena.fastbins[i]);
  cr_assert_not(main_arena.have_fastchunks);
  cr_assert_not(inuse(mem2chunk(a)));
  hpt_free(g);
  check_main();
}

Test(bins, mxfast_out_of_range_rejected) {
  hp_ensure_init();
  size_t before = mp.max_fast;
  cr_assert_eq(hpt_mallopt(M_MXFAST, MAX_FAST_SIZE + 1), 0);
  cr_assert_eq(hpt_mallopt(M_MXFAST, -1), 0);
  cr_assert_eq(mp.max_fast, before);
  /* glibc's set_max_fast: (s + SIZE_SZ) & ~MALLOC_ALIGN_MASK */
  cr_assert_eq(hpt_mallopt(M_MXFAST, MAX_FAST_SIZE), 1);
  cr_assert_eq(mp.max_fast, (MAX_FAST_SIZE + SIZE_SZ) & ~(size_t)HP_ALIGN_MASK);
  cr_assert_lt(fastbin_index(mp.max_fast), (unsigned)NFASTBINS);
}

Test(bins, malloc_consolidate_merges_fast_chunks) {
  tcache_off();
  char *a = hpt_malloc(40), *b = hpt_malloc(40), *c = hpt_malloc(40), *g = hpt_malloc(16);
  cr_assert(a && b && c && g);
  hpt_free(b);
  hpt_free(a);
  hpt_free(c);
  cr_assert(main_arena.have_fastchunks);
  bool lk = arena_lock(&main_arena);
  malloc_consolidate(&main_arena);
  arena_unlock(&main_arena, lk);
  cr_assert_not(main_arena.have_fastchunks);
  for (unsigned i = 0; i < NFASTBINS; i++) cr_assert_null(main_arena.fastbins[i]);
  cr_assert_eq(chunksize(mem2chunk(a)), 3 * 48, "three fast chunks merged");
  cr_assert_not(inuse(mem2chunk(a)));
  check_main();
}

/* glibc merges the fastbins before any request of 1024 bytes or more;
   hpmalloc before one above the cache's largest class (a refill of a large
   class merges them only when nothing else can serve it).  */
Test(bins, large_request_consolidates_fastbins) {
  tcache_off();
  char *a = hpt_malloc(40), *b = hpt_malloc(40), *g = hpt_malloc(16);
  cr_assert(a && b && g);
  hpt_free(a);
  hpt_free(b);
  cr_assert(main_arena.have_fastchunks);
  void *mid = hpt_malloc(2000);
  cr_assert(main_arena.have_fastchunks, "a request of a cache class leaves them");
  void *big = hpt_malloc(40000);
  cr_assert_not(main_arena.have_fastchunks, "a larger request runs malloc_consolidate");
  cr_assert_eq(chunksize(mem2chunk(a)), 96);
  check_main();
  hpt_free(big);
  hpt_free(mid);
}

/* ================================================================ realloc */

Test(bins, realloc_grows_into_top_in_place) {
  tcache_off();
  char *p = hpt_malloc(100);
  fill(p, 100, 0x5a);
  cr_assert_eq(next_chunk(mem2chunk(p)), main_arena.top);
  char *q = hpt_realloc(p, 50000);
  cr_assert_eq(q, p, "grew into top without moving");
  expect_filled(q, 100, 0x5a);
  cr_assert_geq(hpt_malloc_usable_size(q), 50000);
  cr_assert_eq(next_chunk(mem2chunk(q)), main_arena.top);
  check_main();
}

Test(bins, realloc_grows_into_free_neighbour_in_place) {
  tcache_off();
  char *a = hpt_malloc(2000), *b = hpt_malloc(2000), *g = hpt_malloc(100);
  cr_assert(a && b && g);
  fill(a, 2000, 0x11);
  hpt_free(b);
  char *q = hpt_realloc(a, 3500);
  cr_assert_eq(q, a, "grew into the free neighbour without moving");
  expect_filled(q, 2000, 0x11);
  cr_assert_geq(hpt_malloc_usable_size(q), 3500);
  check_main();
  /* and all of the neighbour when the request needs it */
  q = hpt_realloc(a, 4000);
  cr_assert_eq(q, a);
  cr_assert_eq(next_chunk(mem2chunk(q)), mem2chunk(g));
  check_main();
}

/* realloc(p, n) shrinks p where it is and cuts the tail off: the chunk is
   n's size, and the chunk after it free.  */
static void expect_cut(char *p, size_t n) {
  cr_assert_eq(hpt_realloc(p, n), p);
  cr_assert_eq(chunksize(mem2chunk(p)), request2size(n));
  cr_assert_not(inuse(next_chunk(mem2chunk(p))), "the cut-off tail was freed");
}

Test(bins, realloc_shrink_keeps_address_and_frees_tail) {
  tcache_off();
  char *a = hpt_malloc(5000), *g = hpt_malloc(100);
  cr_assert(a && g);
  fill(a, 5000, 0x22);
  char *q = a;
  expect_cut(q, 1000);
  expect_filled(q, 1000, 0x22);
  cr_assert_eq(chunksize(next_chunk(mem2chunk(q))), 5008 - request2size(1000));
  check_main();
  /* a shrink by less than MINSIZE keeps the chunk whole */
  size_t before = chunksize(mem2chunk(q));
  cr_assert_eq(hpt_realloc(q, 1000 - 16), q);
  cr_assert_eq(chunksize(mem2chunk(q)), before);
  check_main();
}

Test(bins, realloc_shrink_of_a_large_class_by_less_than_half_keeps_the_chunk) {
  tcache_off();
  char *a = hpt_malloc(3000), *g = hpt_malloc(100);
  cr_assert(a && g);
  fill(a, 3000, 0x33);
  size_t whole = chunksize(mem2chunk(a));
  char *q = hpt_realloc(a, 2000);
  cr_assert_eq(q, a);
  cr_assert_eq(chunksize(mem2chunk(q)), whole, "a tail of a third stays in the block");
  cr_assert_eq(next_chunk(mem2chunk(q)), mem2chunk(g));
  expect_filled(q, 2000, 0x33);
  cr_assert_geq(hpt_malloc_usable_size(q), 2000);
  check_main();
  /* and the block grows back into it without moving */
  cr_assert_eq(hpt_realloc(q, 2900), q);
  expect_filled(q, 2000, 0x33);
  /* half or more is cut off */
  expect_cut(q, 1400);
  check_main();
  /* a small chunk (each size its own cache class) is cut as before */
  char *s = hpt_malloc(1000), *g2 = hpt_malloc(100);
  cr_assert(s && g2);
  expect_cut(s, 700);
  check_main();
}

Test(bins, realloc_shrink_gives_back_a_page_or_a_tail_before_top) {
  tcache_off();
  char *a = hpt_malloc(20000), *g = hpt_malloc(100);
  cr_assert(a && g);
  fill(a, 20000, 0x44);
  /* a quarter of the block, but more than a page: cut off */
  expect_cut(a, 15000);
  expect_filled(a, 15000, 0x44);
  check_main();
  /* a small tail before top goes back to top */
  char *t = hpt_malloc(8000); /* larger than the free tail: from top */
  cr_assert_eq(next_chunk(mem2chunk(t)), main_arena.top);
  cr_assert_eq(hpt_realloc(t, 6500), t);
  cr_assert_eq(chunksize(mem2chunk(t)), request2size(6500));
  cr_assert_eq(next_chunk(mem2chunk(t)), main_arena.top);
  check_main();
}

Test(bins, realloc_moves_when_blocked_and_keeps_contents) {
  tcache_off();
  char *a = hpt_malloc(3000), *g = hpt_malloc(100);
  cr_assert(a && g);
  for (size_t i = 0; i < 3000; i++) a[i] = (char)(i * 7);
  char *q = hpt_realloc(a, 20000);
  cr_assert_not_null(q);
  cr_assert_neq(q, a, "the neighbour is in use: must move");
  for (size_t i = 0; i < 3000; i++) cr_assert_eq(q[i], (char)(i * 7));
  cr_assert_not(inuse(mem2chunk(a)), "the old chunk was freed");
  check_main();
}

/* ================================================================ memalign */

Test(bins, memalign_all_alignments) {
  enum { N = 16 };
  void *v[N][2];
  size_t k = 0;
  for (size_t al = 32; al <= MiB; al <<= 1, k++) {
    cr_assert_lt(k, (size_t)N);
    for (int j = 0; j < 2; j++) {
      size_t n = j ? al + 100 : 100;
      void *p = hpt_memalign(al, n);
      cr_assert_not_null(p, "memalign(%zu, %zu)", al, n);
      cr_assert_eq((uintptr_t)p & (al - 1), 0, "memalign(%zu) = %p", al, p);
      cr_assert_geq(hpt_malloc_usable_size(p), n);
      fill(p, n, (unsigned char)k);
      v[k][j] = p;
    }
    check_main();
  }
  for (size_t i = 0; i < k; i++) {
    size_t al = (size_t)32 << i;
    expect_filled(v[i][0], 100, (unsigned char)i);
    expect_filled(v[i][1], al + 100, (unsigned char)i);
    hpt_free(v[i][i & 1]);
  }
  check_main();
  for (size_t i = 0; i < k; i++) hpt_free(v[i][!(i & 1)]);
  check_main();
}

Test(bins, memalign_tcache_off_reuses_lead) {
  tcache_off();
  for (size_t al = 64; al <= 64 * KiB; al <<= 1) {
    void *p = hpt_memalign(al, 3 * al);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p & (al - 1), 0);
    void *q = hpt_aligned_alloc(al, al);
    cr_assert_eq((uintptr_t)q & (al - 1), 0);
    void *r = NULL;
    cr_assert_eq(hpt_posix_memalign(&r, al, 10), 0);
    cr_assert_eq((uintptr_t)r & (al - 1), 0);
    check_main();
    hpt_free(q);
    hpt_free(p);
    hpt_free(r);
    check_main();
  }
}

/* ================================================================ top trimming */

Test(bins, free_of_big_heap_block_trims_top) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  cr_assert_eq(hpt_mallopt(M_TRIM_THRESHOLD, 128 << 10), 1);
  void *small = hpt_malloc(100);
  char *p = hpt_malloc(10 * MiB);
  cr_assert_not_null(p);
  cr_assert_not(chunk_is_mmapped(mem2chunk(p)), "below the threshold: from the heap");
  memset(p, 1, 10 * MiB);
  size_t before = main_arena.system_mem;
  cr_assert_geq(before, 10 * MiB);
  hpt_free(p);
  cr_assert_leq(main_arena.system_mem, before - 9 * MiB, "system_mem %zu -> %zu: not trimmed", before,
                main_arena.system_mem);
  check_main();
  hpt_free(small);
}

Test(bins, no_trim_below_threshold_then_malloc_trim) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  cr_assert_eq(hpt_mallopt(M_TRIM_THRESHOLD, 64 << 20), 1);
  void *small = hpt_malloc(100);
  char *p = hpt_malloc(10 * MiB);
  cr_assert_not_null(p);
  size_t before = main_arena.system_mem;
  hpt_free(p);
  cr_assert_eq(main_arena.system_mem, before, "top below trim_threshold is kept");
  cr_assert_eq(hpt_malloc_trim(0), 1);
  cr_assert_leq(main_arena.system_mem, before - 9 * MiB);
  check_main();
  hpt_free(small);
}

/* Blocks of 100 KiB (below the mmap threshold) that grow the heap by
   10 MiB, freed again, so that free trims: the arena's peak and what it
   keeps after.  */
enum { GROW_N = 100 };
static void grow_and_free(size_t *peak, size_t *after) {
  void *p[GROW_N];
  for (int i = 0; i < GROW_N; i++) {
    p[i] = hpt_malloc(100 * KiB);
    cr_assert_not_null(p[i]);
    cr_assert_not(chunk_is_mmapped(mem2chunk(p[i])));
    memset(p[i], 1, 100 * KiB);
  }
  *peak = main_arena.system_mem;
  for (int i = 0; i < GROW_N; i++) hpt_free(p[i]);
  *after = main_arena.system_mem;
  cr_assert_leq(*after + 4 * MiB, *peak, "system_mem %zu -> %zu: free trimmed", *peak, *after);
}

/* A heap that grows again after free trimmed it keeps more of top at the
   next trims (trim_threshold, then twice as much each time), and
   malloc_trim still gives back everything beyond its pad.  */
Test(bins, a_trim_undone_by_growth_keeps_more_of_top) {
  tcache_off();
  void *small = hpt_malloc(100);
  size_t peak, after;
  grow_and_free(&peak, &after);
  cr_assert(main_arena.trimmed);
  cr_assert_eq(main_arena.trim_keep, 0, "nothing kept before a trim was undone");
  grow_and_free(&peak, &after);
  cr_assert_eq(main_arena.trim_keep, mp.trim_threshold, "the heap grew again: free keeps trim_threshold more");
  cr_assert_geq(chunksize(main_arena.top), main_arena.trim_keep, "top %zu: kept", chunksize(main_arena.top));
  grow_and_free(&peak, &after);
  cr_assert_eq(main_arena.trim_keep, 2 * mp.trim_threshold, "and twice as much the next time");
  cr_assert_geq(chunksize(main_arena.top), main_arena.trim_keep);
  for (int round = 0; round < 6; round++) grow_and_free(&peak, &after);
  size_t max = 4 * MiB > mp.trim_threshold ? 4 * MiB : mp.trim_threshold;
  cr_assert_eq(main_arena.trim_keep, max, "up to 4 MiB (or the threshold): %zu", main_arena.trim_keep);
  cr_assert_eq(hpt_malloc_trim(0), 1);
  cr_assert_lt(chunksize(main_arena.top), main_arena.trim_keep, "malloc_trim gives back what free kept");
  check_main();
  hpt_free(small);
}

/* With the trim threshold set (mallopt, or any tunable that stops glibc's
   dynamic thresholds), free trims as far every time.  */
Test(bins, a_set_trim_threshold_keeps_nothing_more) {
  tcache_off();
  cr_assert_eq(hpt_mallopt(M_TRIM_THRESHOLD, 128 << 10), 1);
  void *small = hpt_malloc(100);
  size_t peak, after, first = 0;
  for (int round = 0; round < 3; round++) {
    grow_and_free(&peak, &after);
    if (round == 0) first = chunksize(main_arena.top);
    cr_assert_eq(main_arena.trim_keep, 0);
    cr_assert_leq(chunksize(main_arena.top), first + 4 * KiB, "round %d: top %zu against %zu", round,
                  chunksize(main_arena.top), first);
  }
  check_main();
  hpt_free(small);
}

/* ================================================================ mallinfo2 */

static void expect_mallinfo_consistent(void) {
  struct mallinfo2 mi = hpt_mallinfo2();
  cr_assert_eq(mi.uordblks + mi.fordblks, mi.arena, "uordblks %zu + fordblks %zu != arena %zu", mi.uordblks,
               mi.fordblks, mi.arena);
  cr_assert_eq(mi.arena, main_arena.system_mem, "one arena: arena is its system_mem");
  cr_assert_leq(mi.fsmblks, mi.fordblks);
  cr_assert_geq(mi.ordblks, 1, "top counts as a free block");
}

Test(bins, mallinfo2_consistent) {
  hp_ensure_init();
  struct mallinfo2 m0 = hpt_mallinfo2();
  void *v[300];
  uint32_t s = 9;
  for (size_t i = 0; i < 300; i++) v[i] = hpt_malloc(1 + lcg(&s) % 4000);
  expect_mallinfo_consistent();
  struct mallinfo2 m1 = hpt_mallinfo2();
  cr_assert_gt(m1.uordblks, m0.uordblks + 300 * 1);
  for (size_t i = 0; i < 300; i += 2) hpt_free(v[i]);
  expect_mallinfo_consistent();
  struct mallinfo2 m2 = hpt_mallinfo2();
  cr_assert_lt(m2.uordblks, m1.uordblks);
  for (size_t i = 1; i < 300; i += 2) hpt_free(v[i]);
  expect_mallinfo_consistent();
}

Test(bins, mallinfo2_counts_fastbins_and_mmapped) {
  tcache_off();
  struct mallinfo2 m0 = hpt_mallinfo2();
  char *a = hpt_malloc(40), *b = hpt_malloc(40), *g = hpt_malloc(16);
  cr_assert(a && b && g);
  hpt_free(a);
  hpt_free(b);
  struct mallinfo2 m1 = hpt_mallinfo2();
  cr_assert_eq(m1.smblks, m0.smblks + 2);
  cr_assert_eq(m1.fsmblks, m0.fsmblks + 96);
  expect_mallinfo_consistent();
  /* 4 MiB - 24: the chunk fills exactly 4 MiB, so it is mapped in every
     huge-page mode too (no rounding waste) */
  void *big = hpt_malloc(4 * MiB - 24);
  cr_assert(chunk_is_mmapped(mem2chunk(big)));
  struct mallinfo2 m2 = hpt_mallinfo2();
  cr_assert_eq(m2.hblks, m1.hblks + 1);
  cr_assert_geq(m2.hblkhd, m1.hblkhd + 4 * MiB);
  cr_assert_eq(m2.arena, m1.arena, "a mapped chunk is not heap");
  hpt_free(big);
  struct mallinfo2 m3 = hpt_mallinfo2();
  cr_assert_eq(m3.hblks, m1.hblks);
  cr_assert_eq(m3.hblkhd, m1.hblkhd);
}

/* ================================================================ corruption */

static void do_double_free_large(void) {
  tcache_off();
  void *a = hpt_malloc(40000), *g = hpt_malloc(100);
  (void)g;
  hpt_free(a);
  hpt_free(a);
}

Test(bins_corrupt, double_free_large) { expect_abort(do_double_free_large, "double free or corruption (!prev)"); }

static void do_double_free_large_with_tcache(void) {
  /* 40000 bytes is above the cache's classes: same check with the cache on */
  void *a = hpt_malloc(40000), *g = hpt_malloc(100);
  (void)g;
  hpt_free(a);
  hpt_free(a);
}

Test(bins_corrupt, double_free_large_with_tcache) {
  expect_abort(do_double_free_large_with_tcache, "double free or corruption (!prev)");
}

static void do_double_free_large_class(void) {
  /* 2000 bytes is in a large class of the cache: its key catches it */
  void *a = hpt_malloc(2000), *g = hpt_malloc(100);
  (void)g;
  hpt_free(a);
  hpt_free(a);
}

Test(bins_corrupt, double_free_large_class_caught_by_the_key) {
  expect_abort(do_double_free_large_class, "free(): double free detected in tcache 2");
}

/* ARENA_FREE follows a chunk: set while the arena holds it free (a bin, or
   top), clear once it is handed out, never on a fastbin's chunk.  */
Test(bins, arena_free_bit_follows_the_chunk) {
  tcache_off();
  /* guards above mxfast: freed, they merge */
  void *a = hpt_malloc(200), *g = hpt_malloc(300), *f = hpt_malloc(40), *g2 = hpt_malloc(300);
  cr_assert_not(mem2chunk(a)->size & ARENA_FREE, "in use");
  cr_assert(main_arena.top->size & ARENA_FREE, "top");
  hpt_free(a);
  cr_assert(mem2chunk(a)->size & ARENA_FREE, "in the unsorted bin");
  hpt_free(f);
  cr_assert_not(mem2chunk(f)->size & ARENA_FREE, "a fastbin's chunk looks in use, as in glibc");
  void *b = hpt_malloc(200);
  cr_assert_eq(b, a, "the exact fit");
  cr_assert_not(mem2chunk(b)->size & ARENA_FREE, "handed out");
  hpt_free(g);
  hpt_free(b); /* merges with g, and b's header keeps the bit inside the merged chunk */
  cr_assert(mem2chunk(b)->size & ARENA_FREE);
  void *c = hpt_malloc(100); /* split from the merged chunk */
  cr_assert_not(mem2chunk(c)->size & ARENA_FREE);
  cr_assert(next_chunk(mem2chunk(c))->size & ARENA_FREE, "the remainder");
  /* too large for what is free: both off top, side by side */
  void *x = hpt_malloc(600), *y = hpt_malloc(600), *g3 = hpt_malloc(300);
  cr_assert_eq(mem2chunk(y), next_chunk(mem2chunk(x)));
  hpt_free(x);
  hpt_free(y); /* merges backwards into x: its header stays inside */
  cr_assert(mem2chunk(y)->size & ARENA_FREE, "a header merged backwards");
  (void)g2;
  (void)g3;
  check_main();
}

/* The chunks on fastbin idx of the main arena, head first.  */
static size_t fastbin_list(struct chunk **out, size_t max, unsigned idx) {
  size_t n = 0;
  for (struct chunk *c = main_arena.fastbins[idx]; c && n < max; c = reveal_ptr(&c->fd, c->fd)) out[n++] = c;
  return n;
}

/* A chain goes on the fastbin in one push, in the order single pushes
   leave (the last added on top), above what the bin held; a chunk of
   another size pushes the chain first.  */
Test(bins, fastbin_chain_pushes_in_order) {
  tcache_off();
  struct chunk *c[5];
  for (int i = 0; i < 5; i++) {
    c[i] = mem2chunk(hpt_malloc(40));
    (void)hpt_malloc(16); /* keeps the blocks apart */
  }
  unsigned idx = fastbin_index(chunksize(c[0]));
  fastbin_push(&main_arena, c[0]); /* already there */
  struct fast_chain ch = { NULL, NULL, 0 };
  fastbin_chain_add(&main_arena, &ch, c[1]);
  fastbin_chain_add(&main_arena, &ch, c[2]);
  fastbin_chain_add(&main_arena, &ch, c[3]);
  struct chunk *list[8];
  cr_assert_eq(fastbin_list(list, 8, idx), 1, "nothing pushed before fastbin_chain_push");
  fastbin_chain_push(&main_arena, &ch);
  cr_assert_null(ch.first, "the chain is empty after its push");
  cr_assert_eq(fastbin_list(list, 8, idx), 4);
  cr_assert(list[0] == c[3] && list[1] == c[2] && list[2] == c[1] && list[3] == c[0]);
  /* a chunk of another size pushes the chain first */
  struct chunk *big = mem2chunk(hpt_malloc(100));
  unsigned bidx = fastbin_index(chunksize(big));
  fastbin_chain_add(&main_arena, &ch, c[4]);
  fastbin_chain_add(&main_arena, &ch, big);
  cr_assert_eq(fastbin_list(list, 8, idx), 5, "c[4] was pushed when the size changed");
  cr_assert_eq(list[0], c[4]);
  fastbin_chain_push(&main_arena, &ch);
  cr_assert_eq(fastbin_list(list, 8, bidx), 1);
  cr_assert_eq(list[0], big);
  check_main();
}

static void do_chain_fasttop(void) {
  tcache_off();
  void *a = hpt_malloc(40), *g1 = hpt_malloc(16), *b = hpt_malloc(40), *g2 = hpt_malloc(16);
  (void)g1;
  (void)g2;
  hpt_free(a); /* on the fastbin */
  struct fast_chain ch = { NULL, NULL, 0 };
  fastbin_chain_add(&main_arena, &ch, mem2chunk(a)); /* the top again, at the chain's end */
  fastbin_chain_add(&main_arena, &ch, mem2chunk(b));
  fastbin_chain_push(&main_arena, &ch);
}

Test(bins_corrupt, fasttop_double_free_in_a_chain) {
  expect_abort(do_chain_fasttop, "double free or corruption (fasttop)");
}

static void do_fasttop_double_free(void) {
  tcache_off();
  void *a = hpt_malloc(40), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  hpt_free(a);
}

Test(bins_corrupt, fasttop_double_free) { expect_abort(do_fasttop_double_free, "double free or corruption (fasttop)"); }

static void do_corrupt_unsorted_size(void) {
  tcache_off();
  char *a = hpt_malloc(2000), *g = hpt_malloc(100);
  memset(g, 0, 100);
  hpt_free(a);
  /* a's size now claims 16 more bytes: its "next chunk" lands inside g */
  mem2chunk(a)->size = 2032 | PREV_INUSE;
  hpt_malloc(3000);
}

Test(bins_corrupt, overwritten_size_of_unsorted_chunk) {
  expect_abort(do_corrupt_unsorted_size, "malloc(): invalid next size (unsorted)");
}

static void do_corrupt_prev_size(void) {
  tcache_off();
  char *a = hpt_malloc(2000), *g = hpt_malloc(100);
  hpt_free(a);
  /* a's footer (g's prev_size) no longer matches its size */
  mem2chunk(g)->prev_size = 1024;
  hpt_malloc(3000);
}

Test(bins_corrupt, overwritten_footer_of_unsorted_chunk) {
  expect_abort(do_corrupt_prev_size, "malloc(): mismatching next->prev_size (unsorted)");
}

static void do_corrupt_binned_size(void) {
  tcache_off();
  char *a = hpt_malloc(2000), *g = hpt_malloc(100);
  memset(g, 0, 100);
  hpt_free(a);
  void *big = hpt_malloc(3000); /* sorts a into its large bin */
  (void)big;
  mem2chunk(a)->size = 2032 | PREV_INUSE;
  hpt_malloc(2000); /* takes a from the bin: unlink checks the footer */
}

Test(bins_corrupt, overwritten_size_of_binned_chunk) {
  expect_abort(do_corrupt_binned_size, "corrupted size vs. prev_size");
}

static void do_corrupt_top(void) {
  tcache_off();
  void *a = hpt_malloc(100);
  (void)a;
  main_arena.top->size = (SIZE_MAX & ~(size_t)SIZE_BITS) | PREV_INUSE;
  hpt_malloc(200);
}

Test(bins_corrupt, overwritten_top_size) { expect_abort(do_corrupt_top, "malloc(): corrupted top size"); }

static void do_free_misaligned(void) {
  char *a = hpt_malloc(100);
  hpt_free(a + 8);
}

Test(bins_corrupt, free_misaligned_pointer) { expect_abort(do_free_misaligned, "free(): invalid pointer"); }

/* A header whose size is below MINSIZE, zero, or wraps the address space,
   with the cache on: free's inline path must hand each to the checks
   that report it, in glibc's words.  */
static void free_with_size(size_t size) {
  char *a = hpt_malloc(100);
  struct chunk *c = mem2chunk(a);
  c->size = size | (c->size & (PREV_INUSE | NON_MAIN_ARENA));
  hpt_free(a);
}
static void do_free_size_16(void) { free_with_size(16); }
static void do_free_size_0(void) { free_with_size(0); }
static void do_free_size_wraps(void) { free_with_size((size_t)-4096); }

Test(bins_corrupt, free_size_below_minsize) { expect_abort(do_free_size_16, "free(): invalid size"); }
Test(bins_corrupt, free_size_zero) { expect_abort(do_free_size_0, "free(): invalid pointer"); }
Test(bins_corrupt, free_size_wrapping) { expect_abort(do_free_size_wraps, "free(): invalid pointer"); }

static void do_check_heap_footer(void) {
  tcache_off();
  char *a = hpt_malloc(2000), *g = hpt_malloc(100);
  hpt_free(a);
  mem2chunk(g)->prev_size = 2048;
  hpmalloc_check_heap();
}

Test(bins_corrupt, check_heap_finds_bad_footer) {
  expect_abort(do_check_heap_footer, "hpmalloc_check_heap(): footer does not match size");
}
