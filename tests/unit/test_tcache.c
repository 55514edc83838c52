/* Unit tests of malloc/tcache.c and the tcache paths of malloc.c and
 * bins.c: LIFO hits, the per-bin count limit, refills from the arena,
 * double-free detection, the key, and the flush at thread exit.
 * MIT licence.  */
#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "tcache.h"
#include "unit_helpers.h"

/* ================================================================ helpers */

static size_t tidx_of(size_t request) { return csize2tidx(request2size(request)); }


static bool in_tcache(size_t tidx, const void *p) {
  for (struct tc_entry *e = hp_self.entries[tidx]; e; e = reveal_ptr(&e->next, e->next))
    if ((const void *)e == p) return true;
  return false;
}


/* ================================================================ hits */

Test(tcache, defaults) {
  hp_ensure_init();
  cr_assert_eq(mp.tcache_count, 7);
  cr_assert_eq(mp.tcache_bins, TCACHE_MAX_BINS);
  cr_assert_eq(mp.tcache_max_bytes, 1032);
  cr_assert_eq(hp_self.limit, 7, "the initialising thread's cache is on");
  cr_assert_neq(hp_tcache_key, 0);
}

Test(tcache, hit_is_most_recently_freed) {
  void *a = hpt_malloc(100), *b = hpt_malloc(100), *c = hpt_malloc(100);
  size_t t = tidx_of(100);
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  cr_assert_eq(hp_self.counts[t], 3);
  cr_assert_eq((void *)hp_self.entries[t], c);
  cr_assert_eq(hpt_malloc(100), c);
  cr_assert_eq(hpt_malloc(90), b, "any request of the same size class hits");
  cr_assert_eq(hpt_malloc(104), a);
  cr_assert_eq(hp_self.counts[t], 0);
  cr_assert_null(hp_self.entries[t]);
}

Test(tcache, size_classes_are_separate) {
  void *a = hpt_malloc(24), *b = hpt_malloc(40);
  hpt_free(a);
  hpt_free(b);
  cr_assert_eq(hp_self.counts[tidx_of(24)], 1);
  cr_assert_eq(hp_self.counts[tidx_of(40)], 1);
  cr_assert_eq(hpt_malloc(24), a);
  cr_assert_eq(hpt_malloc(40), b);
}

Test(tcache, largest_cached_size) {
  void *a = hpt_malloc(1032), *b = hpt_malloc(1033), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  hpt_free(b);
  cr_assert_eq(hp_self.counts[TCACHE_MAX_BINS - 1], 1, "1032 bytes is the tcache's largest request");
  cr_assert(in_tcache(TCACHE_MAX_BINS - 1, a));
  cr_assert_not(inuse(mem2chunk(b)), "1033 bytes went to the arena");
}

Test(tcache, cached_chunks_stay_in_use) {
  void *a = hpt_malloc(200), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  cr_assert(inuse(mem2chunk(a)), "a cached chunk is in use for the arena: it cannot coalesce");
  check_all_arenas();
}

/* ================================================================ limit and refill */

Test(tcache, count_limit_sends_eighth_to_arena) {
  enum { N = 8 };
  void *p[N], *g[N];
  for (int i = 0; i < N; i++) {
    p[i] = hpt_malloc(200);
    g[i] = hpt_malloc(16); /* keeps each block from coalescing */
  }
  size_t t = tidx_of(200);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  cr_assert_eq(hp_self.counts[t], 7);
  for (int i = 0; i < N - 1; i++) cr_assert(in_tcache(t, p[i]));
  cr_assert_not(in_tcache(t, p[N - 1]));
  cr_assert_not(inuse(mem2chunk(p[N - 1])), "the 8th free went to the arena");
  check_all_arenas();
  (void)g;
}

Test(tcache, per_thread_limit_caps_each_bin) {
  hp_ensure_init();
  hp_self.limit = 2;
  void *a = hpt_malloc(64), *b = hpt_malloc(64), *c = hpt_malloc(64), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  cr_assert_eq(hp_self.counts[tidx_of(64)], 2);
  cr_assert_not(in_tcache(tidx_of(64), c));
}

Test(tcache, refilled_from_unsorted_exact_fits) {
  enum { N = 14 };
  void *p[N], *g[N];
  for (int i = 0; i < N; i++) {
    p[i] = hpt_malloc(200);
    g[i] = hpt_malloc(16);
  }
  size_t t = tidx_of(200);
  for (int i = 0; i < N; i++) hpt_free(p[i]); /* 7 cached, 7 to the unsorted bin */
  cr_assert_eq(hp_self.counts[t], 7);
  for (int i = 0; i < 7; i++) cr_assert_not_null(hpt_malloc(200));
  cr_assert_eq(hp_self.counts[t], 0);
  /* the next miss walks the unsorted bin, caching exact fits on the way */
  void *q = hpt_malloc(200);
  bool from_arena = false;
  for (int i = 7; i < N; i++) from_arena |= q == p[i];
  cr_assert(from_arena);
  cr_assert_eq(hp_self.counts[t], 6, "the other six exact fits were cached");
  check_all_arenas();
  (void)g;
}

Test(tcache, refilled_from_small_bin) {
  enum { N = 14 };
  void *p[N], *g[N];
  for (int i = 0; i < N; i++) {
    p[i] = hpt_malloc(300);
    g[i] = hpt_malloc(16);
  }
  size_t t = tidx_of(300);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  void *big = hpt_malloc(5000); /* sorts the unsorted chunks into their small bin */
  unsigned idx = smallbin_index(request2size(300));
  cr_assert_neq(bin_at(&main_arena, idx)->fd, bin_at(&main_arena, idx));
  for (int i = 0; i < 7; i++) hpt_malloc(300);
  cr_assert_eq(hp_self.counts[t], 0);
  void *q = hpt_malloc(300);
  cr_assert_not_null(q);
  cr_assert_eq(hp_self.counts[t], 6, "the small bin refilled the cache");
  cr_assert_eq(bin_at(&main_arena, idx)->fd, bin_at(&main_arena, idx), "and is empty now");
  check_all_arenas();
  (void)g;
  (void)big;
}

/* ================================================================ double free and key */

static void do_double_free(void) {
  void *a = hpt_malloc(50);
  hpt_free(a);
  hpt_free(a);
}

Test(tcache, double_free_detected) { expect_abort(do_double_free, "free(): double free detected in tcache 2"); }

static void do_double_free_deep(void) {
  void *a = hpt_malloc(50), *b = hpt_malloc(50), *c = hpt_malloc(50);
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  hpt_free(a); /* not at the head of the bin */
}

Test(tcache, double_free_detected_below_head) {
  expect_abort(do_double_free_deep, "free(): double free detected in tcache 2");
}

Test(tcache, key_set_in_cache_cleared_on_malloc) {
  void *a = hpt_malloc(64);
  hpt_free(a);
  cr_assert_eq(((struct tc_entry *)a)->key, hp_tcache_key);
  void *b = hpt_malloc(64);
  cr_assert_eq(b, a);
  cr_assert_eq(((struct tc_entry *)b)->key, 0, "malloc clears the key");
  hpt_free(b); /* a legitimate second free: must not abort */
  cr_assert_eq(hp_self.counts[tidx_of(64)], 1);
  cr_assert_eq(hpt_malloc(64), a);
}

Test(tcache, key_lookalike_in_user_data_is_not_a_double_free) {
  void *a = hpt_malloc(64), *b = hpt_malloc(64);
  hpt_free(b);
  /* the program happens to store the key where the cache keeps it */
  ((struct tc_entry *)a)->key = hp_tcache_key;
  hpt_free(a);
  cr_assert_eq(hp_self.counts[tidx_of(64)], 2);
  cr_assert(in_tcache(tidx_of(64), a));
}

/* ================================================================ flush */

Test(tcache, flush_returns_chunks_and_switches_off) {
  void *p[5];
  for (int i = 0; i < 5; i++) p[i] = hpt_malloc(200);
  void *g = hpt_malloc(16);
  for (int i = 0; i < 5; i++) hpt_free(p[i]);
  cr_assert_eq(hp_self.counts[tidx_of(200)], 5);
  tcache_flush();
  for (size_t i = 0; i < TCACHE_MAX_BINS; i++) {
    cr_assert_eq(hp_self.counts[i], 0);
    cr_assert_null(hp_self.entries[i]);
  }
  cr_assert_eq(hp_self.limit, 0);
  struct chunk *c = mem2chunk(p[0]);
  cr_assert_not(inuse(c), "returned to the arena and merged");
  cr_assert_eq(chunksize(c), 5 * request2size(200));
  check_all_arenas();
  (void)g;
}

struct thread_blocks {
  void *p[64];
  size_t n;
  struct arena *ar;
};

static void *alloc_free_thread(void *arg) {
  struct thread_blocks *tb = arg;
  static const size_t sizes[] = { 24, 100, 200, 500, 1000 };
  for (size_t i = 0; i < tb->n; i++) tb->p[i] = hpt_malloc(sizes[i % 5]);
  tb->ar = hp_self.arena;
  for (size_t i = 0; i < tb->n; i++) hpt_free(tb->p[i]); /* all cached (at most 7 per size) */
  return NULL;
}

static void *first_alloc_thread(void *arg) {
  struct thread_blocks *tb = arg;
  tb->p[0] = hpt_malloc(24);
  tb->ar = hp_self.arena;
  return NULL;
}

Test(tcache, thread_exit_flushes_cache_to_its_arena) {
  hp_ensure_init();
  struct thread_blocks tb = { .n = 30 };
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_free_thread, &tb), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  struct arena *ar = tb.ar;
  cr_assert_not_null(ar);
  cr_assert_neq(ar, &main_arena, "a new thread gets its own arena");
  arena_lock(ar);
  cr_assert_eq(ar->top, ar->heap->first, "every block came back: the heap is one free top chunk");
  for (unsigned i = 0; i < NFASTBINS; i++) cr_assert_null(ar->fastbins[i]);
  arena_unlock(ar);
  check_all_arenas();
  /* the arena is free again; the next thread takes it and reuses the memory */
  struct thread_blocks tb2 = { .n = 1 };
  cr_assert_eq(pthread_create(&th, NULL, first_alloc_thread, &tb2), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(tb2.ar, ar);
  cr_assert_eq(tb2.p[0], tb.p[0], "the first block's memory is handed out again");
  check_all_arenas();
}
