/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/chunk.h: size arithmetic, the chunk layout, bin and
 * fastbin indices, and safe linking.  Pure functions: no allocator state.
 * MIT licence.  */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "chunk.h"
#include "tcache.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ================================================================ sizes */

Test(chunk, minsize_and_alignment_constants) {
  cr_assert_eq(SIZE_SZ, sizeof(size_t));
  cr_assert_eq(HP_ALIGN, 16);
  cr_assert_eq(CHUNK_HDR, 2 * sizeof(size_t));
  cr_assert_eq(MINSIZE, 32, "a free chunk needs prev_size, size, fd, bk");
  cr_assert_eq(MINSIZE % HP_ALIGN, 0);
  cr_assert_geq((size_t)MINSIZE, offsetof(struct chunk, fd_nextsize));
  cr_assert_eq(SIZE_BITS, 0xf);
}

Test(chunk, request2size_small_requests) {
  cr_assert_eq(request2size(0), 32);
  cr_assert_eq(request2size(1), 32);
  cr_assert_eq(request2size(24), 32, "24 bytes + 8 of size field fit a 32-byte chunk");
  cr_assert_eq(request2size(25), 48);
  cr_assert_eq(request2size(40), 48);
  cr_assert_eq(request2size(41), 64);
}

Test(chunk, request2size_large_requests) {
  cr_assert_eq(request2size(MiB), MiB + 16);
  cr_assert_eq(request2size(MiB - 8), MiB);
  cr_assert_eq(request2size(MiB - 7), MiB + 16);
  size_t big = ((size_t)1 << 40) + 3;
  cr_assert_eq(request2size(big), ((size_t)1 << 40) + 16);
}

Test(chunk, request2size_is_aligned_covers_and_tight) {
  for (size_t n = 0; n < 64 * KiB; n++) {
    size_t s = request2size(n);
    cr_assert_eq(s % HP_ALIGN, 0, "request2size(%zu) = %zu unaligned", n, s);
    cr_assert_geq(s, (size_t)MINSIZE);
    cr_assert_geq(s - SIZE_SZ, n, "request2size(%zu) = %zu cannot hold the request", n, s);
    if (s > MINSIZE) cr_assert_lt(s - SIZE_SZ - HP_ALIGN, n, "request2size(%zu) = %zu is not the smallest", n, s);
  }
}

Test(chunk, largest_request_boundary) {
  size_t lim = largest_request();
  cr_assert_eq(lim, (size_t)PTRDIFF_MAX - 2 * MINSIZE);
  /* the largest request rounds without wrapping, and its chunk still fits
     below PTRDIFF_MAX with room for the next chunk's header */
  cr_assert_gt(request2size(lim), lim);
  cr_assert_leq(request2size(lim) + MINSIZE, (size_t)PTRDIFF_MAX);
}

/* ================================================================ layout */

Test(chunk, chunk2mem_and_mem2chunk_round_trip) {
  _Alignas(16) char buf[256];
  struct chunk *c = (struct chunk *)buf;
  cr_assert_eq((char *)chunk2mem(c), buf + 16);
  cr_assert_eq(mem2chunk(chunk2mem(c)), c);
  cr_assert_eq(chunk2mem(mem2chunk(buf + 64)), (void *)(buf + 64));
  cr_assert(aligned_ok((uintptr_t)chunk2mem(c)));
  cr_assert_not(aligned_ok((uintptr_t)chunk2mem(c) + 8));
}

Test(chunk, boundary_tags_and_flags) {
  _Alignas(16) char buf[512];
  memset(buf, 0, sizeof buf);
  struct chunk *a = (struct chunk *)buf;
  set_head(a, 96 | PREV_INUSE | NON_MAIN_ARENA);
  struct chunk *b = next_chunk(a);
  cr_assert_eq((char *)b, buf + 96);
  cr_assert_eq(chunksize(a), 96);
  cr_assert(prev_inuse(a));
  cr_assert_not(chunk_main_arena(a));
  cr_assert_not(chunk_is_mmapped(a));

  set_head(b, 64 | PREV_INUSE);
  set_head(chunk_at(b, 64), 32 | PREV_INUSE);
  cr_assert(inuse(a), "a is in use: b's PREV_INUSE is set");
  clear_inuse_at(a, 96);
  cr_assert_not(inuse(a));
  set_foot(a, 96);
  cr_assert_eq(b->prev_size, 96);
  cr_assert_eq(prev_chunk(b), a);
  set_inuse_at(a, 96);
  cr_assert(inuse_at(a, 96));

  set_head_size(a, 48);
  cr_assert_eq(chunksize(a), 48);
  cr_assert(prev_inuse(a) && !chunk_main_arena(a), "set_head_size keeps the flag bits");
}

Test(chunk, usable_size_heap_and_mmapped) {
  struct chunk c = { 0 };
  set_head(&c, 48 | PREV_INUSE);
  cr_assert_eq(chunk_usable(&c), 40, "a heap chunk lends the next prev_size field");
  set_head(&c, 4096 | IS_MMAPPED);
  cr_assert(chunk_is_mmapped(&c));
  cr_assert_eq(chunk_usable(&c), 4096 - 16);
}

/* ================================================================ bins */

Test(chunk, smallbin_largebin_boundary) {
  cr_assert_eq(MIN_LARGE_SIZE, 1024);
  cr_assert(in_smallbin_range(1008));
  cr_assert_not(in_smallbin_range(1024));
  cr_assert_eq(bin_index(1008), 63);
  cr_assert_eq(bin_index(1024), 64);
  cr_assert_eq(bin_index(32), 2, "bins 0 and 1 are not size bins");
  cr_assert_eq(bin_index(48), 3);
}

Test(chunk, largebin_widths) {
  /* 64-byte-wide bins from 1024 */
  cr_assert_eq(largebin_index(1024), largebin_index(1087));
  cr_assert_eq(largebin_index(1088), largebin_index(1024) + 1);
  /* and the last bin holds everything big */
  cr_assert_eq(largebin_index((size_t)1 << 30), NBINS - 2);
  cr_assert_eq(largebin_index(SIZE_MAX & ~(size_t)15), NBINS - 2);
}

static void check_bin_index_run(size_t from, size_t to, size_t step, unsigned *prev) {
  for (size_t sz = from; sz <= to; sz += step) {
    unsigned i = bin_index(sz);
    cr_assert_geq(i, *prev, "bin_index(%zu) = %u < %u: not monotonic", sz, i, *prev);
    cr_assert(i >= 2 && i < NBINS - 1, "bin_index(%zu) = %u out of range", sz, i);
    if (in_smallbin_range(sz)) cr_assert_lt(i, (unsigned)NSMALLBINS);
    else cr_assert_geq(i, (unsigned)NSMALLBINS);
    *prev = i;
  }
}

Test(chunk, bin_index_monotonic) {
  unsigned prev = 0;
  check_bin_index_run(MINSIZE, 16 * MiB, 16, &prev);
  check_bin_index_run(16 * MiB + 16, (size_t)1 << 40, (size_t)1 << 24, &prev);
  cr_assert_eq(prev, NBINS - 2);
}

Test(chunk, small_bins_hold_one_size_each) {
  for (size_t sz = MINSIZE; sz < MIN_LARGE_SIZE; sz += 16) {
    cr_assert_eq(bin_index(sz), sz / 16);
    cr_assert_neq(bin_index(sz), bin_index(sz + 16), "sizes %zu and %zu share a small bin", sz, sz + 16);
  }
}

Test(chunk, binmap_geometry) {
  cr_assert_eq(BITSPERMAP, 32);
  cr_assert_eq(BINMAPSIZE * BITSPERMAP, NBINS, "one bit per bin");
}

/* ================================================================ fastbins */

Test(chunk, fastbin_index_values) {
  cr_assert_eq(fastbin_index(32), 0);
  cr_assert_eq(fastbin_index(48), 1);
  cr_assert_eq(fastbin_index(128), 6);
  cr_assert_eq(MAX_FAST_SIZE, 160);
  /* the largest chunk a user-set mxfast allows has a fastbin, and so has
     the largest chunk a cache's small bin gives back */
  cr_assert_lt(fastbin_index(request2size(MAX_FAST_SIZE)), (unsigned)NFASTBINS);
  cr_assert_eq(fastbin_index(FASTBIN_MAX_CHUNK), (unsigned)NFASTBINS - 1);
  for (size_t sz = MINSIZE; sz < FASTBIN_MAX_CHUNK; sz += 16)
    cr_assert_eq(fastbin_index(sz) + 1, fastbin_index(sz + 16), "fastbins are 16 bytes apart");
}

/* ================================================================ tcache indices */

Test(chunk, tcache_index_round_trip) {
  cr_assert_eq(csize2tidx(MINSIZE), 0);
  cr_assert_eq(tidx2usize(0), 24);
  for (size_t i = 0; i < TC_SMALL_BINS; i++) {
    cr_assert_eq(csize2tidx(request2size(tidx2usize(i))), i);
    cr_assert_eq(csize2tidx(request2size(tidx2usize(i) + 1)), i + 1, "usize is the largest request of bin %zu", i);
  }
  cr_assert_eq(tidx2usize(TC_SMALL_BINS - 1), 1032);
}

/* ================================================================ safe linking */

Test(chunk, protect_reveal_round_trip) {
  _Alignas(16) char slot[16];
  void *targets[] = { NULL, slot, (void *)0x7fffdeadbee0, (void *)(uintptr_t)-16 };
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    void *m = protect_ptr(slot, targets[i]);
    cr_assert_eq(reveal_ptr(slot, m), targets[i]);
  }
  /* NULL is stored mangled, not as 0 (the position's page bits show) */
  cr_assert_neq(protect_ptr(slot, NULL), NULL);
  /* the same pointer stored at positions in different pages mangles differently */
  cr_assert_neq(protect_ptr((void *)0x10000, slot), protect_ptr((void *)0x20000, slot));
  /* positions within one page share the key */
  cr_assert_eq(protect_ptr((void *)0x10010, slot), protect_ptr((void *)0x10ff0, slot));
}

/* ================================================================ helpers of internal.h */

Test(chunk, align_helpers) {
  cr_assert_eq(align_up(0, 4096), 0);
  cr_assert_eq(align_up(1, 4096), 4096);
  cr_assert_eq(align_up(4096, 4096), 4096);
  cr_assert_eq(align_down(8191, 4096), 4096);
  cr_assert(is_pow2(1) && is_pow2((size_t)1 << 63));
  cr_assert_not(is_pow2(0));
  cr_assert_not(is_pow2(48));
}
