/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/tcache.c and the cache paths of malloc.c and
 * bins.c: LIFO hits, the size classes (small and large), caps that grow
 * within the byte budget and shrink in the gc, refills and flushes in
 * batches (from top, from a split chunk, by arena), glibc's fixed caps
 * with tcache_count set, double-free detection and the key, malloc_trim,
 * the statistics, and the flush at thread exit.  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "bins.h"
#include "stats.h"
#include "tcache.h"
#include "unit_helpers.h"

/* ================================================================ helpers */

static size_t tidx_of(size_t request) {
  size_t nb = request2size(request);
  return tcache_class(&nb);
}
static struct tc_bin *bin_of(size_t request) { return &hp_self.bins[tidx_of(request)]; }

static bool in_tcache(size_t tidx, const void *p) {
  for (struct tc_entry *e = hp_self.bins[tidx].head; e; e = reveal_ptr(&e->next, e->next))
    if ((const void *)e == p) return true;
  return false;
}

/* Add entries to GLIBC_TUNABLES (check-unit sets the mode there) before
   the allocator starts.  */
static void tunables(const char *more) {
  const char *old = getenv("GLIBC_TUNABLES");
  char buf[512];
  snprintf(buf, sizeof buf, "%s%s%s", old ? old : "", old && *old ? ":" : "", more);
  cr_assert_eq(setenv("GLIBC_TUNABLES", buf, 1), 0);
  hp_ensure_init();
}

/* n blocks of `size` bytes, each followed by a 16-byte one that keeps it
   from merging with the next when freed into the arena.  */
static void alloc_apart(void **p, void **g, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    p[i] = hpt_malloc(size);
    g[i] = hpt_malloc(16);
  }
}

static size_t fastbin_length(struct arena *ar, size_t csz) {
  size_t n = 0;
  for (struct chunk *c = ar->fastbins[fastbin_index(csz)]; c; c = reveal_ptr(&c->fd, c->fd)) n++;
  return n;
}

/* Chunks of size csz in ar's inbox (arena.h).  */
static size_t inbox_length(struct arena *ar, size_t csz) {
  size_t n = 0;
  for (unsigned i = 0; i < ar->inbox.n; i++) n += chunksize(ar->inbox.slot[i]) == csz;
  return n;
}

/* ================================================================ defaults and classes */

Test(tcache, defaults) {
  hp_ensure_init();
  cr_assert_not(mp.tcache_fixed, "without tcache_count the caps adapt");
  cr_assert_eq(mp.tcache_bins, TC_SMALL_BINS);
  cr_assert_eq(mp.tcache_large_bins, TC_LARGE_BINS);
  cr_assert_eq(mp.tcache_max_bytes, TC_MAX_CHUNK - SIZE_SZ);
  cr_assert_eq(mp.tcache_bytes, 1 << 20);
  cr_assert(tcache_on(), "the initialising thread's cache is on");
  cr_assert_neq(hp_tcache_key, 0);
  for (size_t i = 0; i < TC_BINS; i++) cr_assert_eq(hp_self.bins[i].cap, 0, "bins start empty and grow on use");
}

/* Every chunk size up to TC_MAX_CHUNK has one bin; a large class's size
   is the largest its bin takes, at most 1/8 above the request.  */
Test(tcache, classes_cover_every_size_once) {
  hp_ensure_init();
  size_t prev_bin = 0, prev_size = 0;
  for (size_t csz = MINSIZE; csz <= TC_MAX_CHUNK; csz += HP_ALIGN) {
    size_t nb = csz, t = tcache_class(&nb);
    cr_assert_lt(t, TC_BINS, "chunk size %zu has a bin", csz);
    cr_assert_geq(nb, csz);
    cr_assert_eq(nb, tc_bin_size(t), "bin %zu holds chunks of %zu bytes", t, tc_bin_size(t));
    cr_assert_leq((nb - csz) * 8, csz, "rounding %zu up to %zu wastes at most 1/8", csz, nb);
    cr_assert(t == prev_bin || t == prev_bin + 1, "bins are consecutive");
    cr_assert_geq(nb, prev_size);
    cr_assert_eq(tcache_bin_of(nb), t, "a chunk of the class's size goes back to its bin");
    if (nb != csz) cr_assert_eq(tcache_bin_of(csz), TC_BINS, "a chunk between classes is not cached");
    prev_bin = t;
    prev_size = nb;
  }
  cr_assert_eq(prev_bin, TC_BINS - 1);
  cr_assert_eq(tc_bin_size(TC_BINS - 1), TC_MAX_CHUNK);
  size_t big = TC_MAX_CHUNK + HP_ALIGN;
  cr_assert_eq(tcache_class(&big), TC_BINS, "above the largest class");
  cr_assert_eq(big, TC_MAX_CHUNK + HP_ALIGN, "and not rounded");
}

Test(tcache, large_request_rounded_to_its_class) {
  hp_ensure_init();
  void *p = hpt_malloc(2000);
  cr_assert_not_null(p);
  cr_assert_eq(chunksize(mem2chunk(p)), 2048, "2000 bytes take the 2048-byte class");
  cr_assert_eq(hpt_malloc_usable_size(p), 2040);
  void *q = hpt_realloc(p, 5000);
  cr_assert_eq(chunksize(mem2chunk(q)), 5120, "realloc rounds too");
  hpt_free(q);
  cr_assert(in_tcache(tidx_of(5000), q), "so the block can be cached when freed");
}

/* ================================================================ hits */

Test(tcache, hit_is_most_recently_freed) {
  void *a = hpt_malloc(100), *b = hpt_malloc(100), *c = hpt_malloc(100);
  struct tc_bin *bin = bin_of(100);
  size_t n0 = bin->count;
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  cr_assert_eq(bin->count, n0 + 3);
  cr_assert_eq((void *)bin->head, c);
  cr_assert_eq(hpt_malloc(100), c);
  cr_assert_eq(hpt_malloc(90), b, "any request of the same size class hits");
  cr_assert_eq(hpt_malloc(104), a);
  cr_assert_eq(bin->count, n0);
}

Test(tcache, size_classes_are_separate) {
  void *a = hpt_malloc(24), *b = hpt_malloc(40), *c = hpt_malloc(3000);
  size_t na = bin_of(24)->count, nb = bin_of(40)->count, nc = bin_of(3000)->count;
  hpt_free(a);
  hpt_free(b);
  hpt_free(c);
  cr_assert_eq(bin_of(24)->count, na + 1);
  cr_assert_eq(bin_of(40)->count, nb + 1);
  cr_assert_eq(bin_of(3000)->count, nc + 1);
  cr_assert_eq(hpt_malloc(24), a);
  cr_assert_eq(hpt_malloc(40), b);
  cr_assert_eq(hpt_malloc(2900), c, "the same large class");
}

Test(tcache, largest_cached_size) {
  void *a = hpt_malloc(TC_MAX_CHUNK - SIZE_SZ), *b = hpt_malloc(TC_MAX_CHUNK), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  hpt_free(b);
  cr_assert(in_tcache(TC_BINS - 1, a), "32760 bytes is the cache's largest request");
  cr_assert_not(inuse(mem2chunk(b)), "32768 bytes went to the arena");
}

Test(tcache, cached_chunks_stay_in_use) {
  void *a = hpt_malloc(200), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  cr_assert(inuse(mem2chunk(a)), "a cached chunk is in use for the arena: it cannot coalesce");
  check_all_arenas();
}

Test(tcache, calloc_takes_from_the_cache_and_zeroes) {
  unsigned char *a = hpt_malloc(300);
  memset(a, 0xa5, 300);
  hpt_free(a);
  unsigned char *z = hpt_calloc(3, 100);
  cr_assert_eq(z, a, "calloc reuses the cached block");
  for (size_t i = 0; i < 300; i++) cr_assert_eq(z[i], 0, "byte %zu zeroed", i);
}

/* ================================================================ growth, budget, gc */

Test(tcache, first_miss_fills_the_bin_from_top) {
  hp_ensure_init();
  struct tc_bin *bin = bin_of(200);
  cr_assert_eq(bin->count, 0);
  char *p = hpt_malloc(200);
  cr_assert_eq(bin->cap, 8, "the first miss gives the bin its first cap");
  cr_assert_eq(bin->count, 8, "and fills it, in the same arena lock");
  /* carved from top one after the other, right behind p */
  char *q = p;
  for (int i = 0; i < 8; i++) {
    q += request2size(200);
    cr_assert(in_tcache(tidx_of(200), q), "chunk %d behind p is cached", i);
  }
  check_all_arenas();
}

Test(tcache, caps_grow_while_a_bin_overflows) {
  enum { N = 300 };
  void *p[N];
  for (int i = 0; i < N; i++) p[i] = hpt_malloc(200);
  struct tc_bin *bin = bin_of(200);
  size_t n0 = bin->count;
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  cr_assert_eq(bin->count, n0 + N, "every free stayed in the cache: the cap doubled as needed");
  cr_assert_geq(bin->cap, n0 + N);
  cr_assert_leq(hp_self.cap_bytes, mp.tcache_bytes);
  for (int i = N - 1; i >= 0; i--) cr_assert_eq(hpt_malloc(200), p[i], "and every malloc hits, LIFO");
}

Test(tcache, budget_limits_the_caps) {
  tunables("hpmalloc.tcache_bytes=8192");
  enum { N = 100 };
  void *p[N], *g[N];
  alloc_apart(p, g, N, 200);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  struct tc_bin *bin = bin_of(200);
  size_t size = request2size(200);
  cr_assert_leq(hp_self.cap_bytes, 8192, "caps add up to %zu", hp_self.cap_bytes);
  cr_assert_leq(bin->cap * size, 8192);
  cr_assert_leq(bin->count, bin->cap);
  cr_assert_lt(bin->count, N, "the rest went back to the arena");
  check_all_arenas();
  (void)g;
}

/* A full bin gives its most recent half back, in one batch: its own
   arena's chunks merged into the bins, as free() would.  */
Test(tcache, overflow_gives_half_back) {
  tunables("hpmalloc.tcache_bytes=8192");
  enum { N = 80 };
  void *p[N], *g[N];
  alloc_apart(p, g, N, 200);
  struct tc_bin *bin = bin_of(200);
  size_t size = request2size(200), c0 = bin->count;
  struct hp_arena_stats st0, st1;
  arena_collect(&main_arena, &st0);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  arena_collect(&main_arena, &st1);
  cr_assert_lt(8192 - hp_self.cap_bytes, size, "the cap grew until the budget stopped it");
  cr_assert_geq(bin->count, bin->cap / 2, "an overflow keeps half the bin");
  size_t flushed = c0 + N - bin->count;
  cr_assert_gt(flushed, 0);
  cr_assert_eq(st1.free - st0.free, flushed * size, "the rest went back to the arena, free there");
  cr_assert_eq(fastbin_length(&main_arena, size), 0, "nothing parked: its own arena's chunks above mxfast merge");
  check_all_arenas();
  (void)g;
}

/* 80 blocks of 200 bytes side by side, freed in address order through a
   small cache: the overflows give back runs of neighbours, which the arena
   takes as one free chunk each (merged, as chunk by chunk would leave it).
   free_in_order returns how many went back.  */
static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
  return (x > y) - (x < y);
}

static void alloc_neighbours(void **p, int n) {
  tunables("hpmalloc.tcache_bytes=8192");
  for (int i = 0; i < n; i++) p[i] = hpt_malloc(200);
  void *guard = hpt_malloc(200); /* keeps the last block away from top */
  (void)guard;
  qsort(p, (size_t)n, sizeof *p, cmp_ptr);
}

static size_t free_in_order(void **p, int n) {
  size_t c0 = bin_of(200)->count;
  for (int i = 0; i < n; i++) hpt_free(p[i]);
  return c0 + (size_t)n - bin_of(200)->count;
}

/* p[i] went back to the arena right after its neighbour p[i - 1] (the
   cache may hold chunks carved between two of the blocks).  */
static bool inside_free_run(void **p, int i) {
  struct chunk *a = mem2chunk(p[i - 1]), *c = mem2chunk(p[i]);
  return (a->size & ARENA_FREE) && (c->size & ARENA_FREE) && c == chunk_at(a, request2size(200));
}

Test(tcache, overflow_frees_runs_of_neighbours_as_one_chunk) {
  enum { N = 80 };
  void *p[N];
  size_t size = request2size(200);
  struct hp_arena_stats st0, st1;
  alloc_neighbours(p, N);
  arena_collect(&main_arena, &st0);
  size_t flushed = free_in_order(p, N);
  arena_collect(&main_arena, &st1);
  cr_assert_gt(flushed, 1);
  cr_assert_eq(st1.free - st0.free, flushed * size, "what went back is free in the arena");
  int inside = 0;
  for (int i = 1; i < N; i++) inside += inside_free_run(p, i) && !prev_inuse(mem2chunk(p[i]));
  cr_assert_gt(inside, 0, "some chunk went back inside a run, marked as after a free chunk");
  check_all_arenas();
}

static void do_double_free_inside_a_run(void) {
  enum { N = 80 };
  void *p[N];
  alloc_neighbours(p, N);
  free_in_order(p, N);
  /* the middle of three neighbours the arena holds: the third says the
     second is free */
  for (int i = 1; i + 1 < N; i++)
    if (inside_free_run(p, i) && inside_free_run(p, i + 1)) {
      hpt_free(p[i]);
      _exit(4);
    }
  _exit(3);
}

Test(tcache, double_free_of_a_block_inside_a_run_is_caught) {
  expect_abort(do_double_free_inside_a_run, "double free or corruption (!prev)");
}

/* Blocks another thread allocated go home, not into the freeing thread's
   bins: on its foreign list until TC_FOREIGN_BATCH of them are there, then
   into their arena's inbox, whence that arena's next refill takes them
   back by the batch.  */
struct foreign {
  void *p[80];
  struct arena *ar;
};

static void *alloc_foreign(void *arg) {
  struct foreign *f = arg;
  for (int i = 0; i < 80; i++) f->p[i] = hpt_malloc(200);
  f->ar = hp_self.arena;
  return NULL;
}

static void alloc_in_a_thread(struct foreign *f) {
  hp_ensure_init(); /* this thread has the main arena, the other another */
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_foreign, f), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_neq(f->ar, &main_arena);
}

static bool is_foreign_block(const struct foreign *f, const void *q) {
  for (int i = 0; i < 80; i++)
    if (f->p[i] == q) return true;
  return false;
}

Test(tcache, another_arenas_blocks_go_home_by_the_batch) {
  static struct foreign f;
  alloc_in_a_thread(&f);
  struct tc_bin *bin = bin_of(200);
  size_t size = request2size(200), c0 = bin->count, parked0 = fastbin_length(f.ar, size);
  cr_assert_eq(f.ar->inbox.n, 0);
  for (int i = 0; i < 80; i++) hpt_free(f.p[i]);
  cr_assert_eq(bin->count, c0, "no block of another arena went into the bin");
  cr_assert_eq(f.ar->inbox.n, TC_FOREIGN_BATCH, "a full list went home, to the inbox");
  cr_assert_eq(inbox_length(f.ar, size), TC_FOREIGN_BATCH);
  cr_assert_eq(fastbin_length(f.ar, size), parked0, "none parked: the inbox had room");
  cr_assert_eq(hp_self.foreign_count, 80 - TC_FOREIGN_BATCH, "the rest wait on the foreign list");
  cr_assert_eq(hp_self.foreign_bytes, (80 - TC_FOREIGN_BATCH) * size);
  cr_assert_eq(fastbin_length(&main_arena, size), 0);
  for (int i = 0; i < 40; i++) cr_assert_not(is_foreign_block(&f, hpt_malloc(200)), "this thread reuses none of them");
  check_all_arenas();
}

static void *alloc_mixed(void *arg) {
  void **p = arg;
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) p[i] = hpt_malloc(i % 3 == 0 ? 40 : i % 3 == 1 ? 300 : 1000);
  return NULL;
}

/* A foreign list of mixed sizes goes into the inbox whole; once the inbox
   is full, the rest parks each block on its own size's fastbin (a chain
   per size).  */
Test(tcache, another_arenas_blocks_of_mixed_sizes_park_by_size_once_its_inbox_is_full) {
  hp_ensure_init();
  static void *p[TC_FOREIGN_BATCH];
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_mixed, p), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  struct arena *ar = arena_for_chunk(mem2chunk(p[0]));
  cr_assert_neq(ar, &main_arena);
  size_t s40 = request2size(40), s300 = request2size(300), s1000 = request2size(1000);
  size_t n40 = fastbin_length(ar, s40), n300 = fastbin_length(ar, s300), n1000 = fastbin_length(ar, s1000);
  /* all but 10 slots taken */
  static struct chunk filler[INBOX_SLOTS];
  for (unsigned i = 0; i < INBOX_SLOTS - 10; i++) ar->inbox.slot[i] = &filler[i];
  ar->inbox.n = INBOX_SLOTS - 10;
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) hpt_free(p[i]);
  cr_assert_eq(hp_self.foreign_count, 0, "the full list went home");
  cr_assert_eq(ar->inbox.n, INBOX_SLOTS, "the inbox took what it had room for");
  size_t in40 = inbox_length(ar, s40), in300 = inbox_length(ar, s300), in1000 = inbox_length(ar, s1000);
  cr_assert_eq(in40 + in300 + in1000, 10);
  cr_assert_eq(fastbin_length(ar, s40) - n40 + in40, (TC_FOREIGN_BATCH + 2) / 3);
  cr_assert_eq(fastbin_length(ar, s300) - n300 + in300, (TC_FOREIGN_BATCH + 1) / 3);
  cr_assert_eq(fastbin_length(ar, s1000) - n1000 + in1000, TC_FOREIGN_BATCH / 3);
  ar->inbox.n = 0; /* the filler is no chunk */
  check_all_arenas();
}

/* The owner's next miss takes its inbox into its bins, without its
   arena's lock: the blocks another thread freed come back to the thread
   that allocated them.  */
enum { TC_CAP_LIMIT = 8192 };
struct owner {
  pthread_barrier_t freed, done;
  void *p[TC_FOREIGN_BATCH];
  void *again;
  struct arena *ar;
  size_t inbox_after, count_after;
};

static void *owner_thread(void *arg) {
  struct owner *o = arg;
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) o->p[i] = hpt_malloc(200);
  o->ar = hp_self.arena;
  /* empty the bin, so the next malloc misses */
  static void *rest[TC_CAP_LIMIT];
  size_t tidx = csize2tidx(request2size(200)), k = 0;
  while (hp_self.bins[tidx].count && k < TC_CAP_LIMIT) rest[k++] = hpt_malloc(200);
  pthread_barrier_wait(&o->freed); /* the main thread frees them */
  pthread_barrier_wait(&o->freed);
  o->again = hpt_malloc(200);
  o->inbox_after = o->ar->inbox.n;
  o->count_after = hp_self.bins[tidx].count;
  while (k) hpt_free(rest[--k]);
  pthread_barrier_wait(&o->done);
  return NULL;
}

Test(tcache, the_owners_refill_takes_its_inbox) {
  hp_ensure_init();
  static struct owner o;
  pthread_barrier_init(&o.freed, NULL, 2);
  pthread_barrier_init(&o.done, NULL, 2);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, owner_thread, &o), 0);
  pthread_barrier_wait(&o.freed);
  cr_assert_neq(o.ar, &main_arena);
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) hpt_free(o.p[i]);
  cr_assert_eq(o.ar->inbox.n, TC_FOREIGN_BATCH);
  pthread_barrier_wait(&o.freed);
  pthread_barrier_wait(&o.done);
  bool mine = false;
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) mine |= o.again == o.p[i];
  cr_assert(mine, "the owner got one of its blocks back");
  cr_assert_eq(o.inbox_after, 0, "the refill emptied the inbox");
  cr_assert_gt(o.count_after, 0, "into the bin");
  cr_assert_eq(pthread_join(th, NULL), 0);
  check_all_arenas();
}

/* A full inbox is taken whole, a part at a time: what the bin has no
   room for is parked.  */
struct whole {
  void *p[INBOX_SLOTS];
  size_t inbox_after, in_bin, parked;
  void *got;
};

static void *alloc_inbox_full(void *arg) {
  struct whole *w = arg;
  for (int i = 0; i < INBOX_SLOTS; i++) w->p[i] = hpt_malloc(200);
  tcache_switch_off(); /* no cache left to the arena: the next thread's bins start empty */
  return NULL;
}

static void *take_whole_inbox(void *arg) {
  struct whole *w = arg;
  w->got = hpt_malloc(200); /* the arena the first thread left, whose bin is empty */
  w->inbox_after = hp_self.arena->inbox.n;
  w->in_bin = hp_self.bins[csize2tidx(request2size(200))].count;
  w->parked = fastbin_length(hp_self.arena, request2size(200)); /* before the exit's flush merges them */
  return NULL;
}

/* A thread allocates INBOX_SLOTS blocks and exits; this one frees them
   all, filling that arena's inbox.  The arena; *parked0, what its
   fastbin held before.  */
static struct arena *fill_a_gone_threads_inbox(struct whole *w, size_t *parked0) {
  hp_ensure_init();
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_inbox_full, w), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  struct arena *ar = arena_for_chunk(mem2chunk(w->p[0]));
  *parked0 = fastbin_length(ar, request2size(200));
  for (int i = 0; i < INBOX_SLOTS; i++) hpt_free(w->p[i]);
  cr_assert_eq(ar->inbox.n, INBOX_SLOTS);
  return ar;
}

Test(tcache, a_full_inbox_is_taken_whole) {
  static struct whole w;
  size_t parked0;
  struct arena *ar = fill_a_gone_threads_inbox(&w, &parked0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, take_whole_inbox, &w), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(w.inbox_after, 0, "taken whole");
  cr_assert_eq(arena_for_chunk(mem2chunk(w.got)), ar);
  /* one served, the bin's share, the rest parked */
  cr_assert_gt(w.in_bin, 0);
  cr_assert_eq(w.parked - parked0, INBOX_SLOTS - 1 - w.in_bin, "the rest parked");
  check_all_arenas();
}

/* With fastbins switched off (M_MXFAST 0) after the blocks were sent,
   what the bin has no room for is merged, not parked.  */
Test(tcache, a_full_inbox_drained_with_fastbins_off_merges_the_rest) {
  static struct whole w;
  size_t parked0;
  fill_a_gone_threads_inbox(&w, &parked0);
  cr_assert_eq(hpt_mallopt(M_MXFAST, 0), 1);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, take_whole_inbox, &w), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(w.inbox_after, 0, "taken whole");
  cr_assert_gt(w.in_bin, 0);
  cr_assert_eq(w.parked, parked0, "none parked: merged");
  check_all_arenas();
}

/* The inbox is counted free, and malloc_trim merges it into the bins.  */
Test(tcache, an_inbox_counts_as_free_and_malloc_trim_merges_it) {
  static struct foreign f;
  alloc_in_a_thread(&f);
  struct mallinfo2 m0 = hpt_mallinfo2();
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) hpt_free(f.p[i]);
  cr_assert_eq(f.ar->inbox.n, TC_FOREIGN_BATCH);
  struct mallinfo2 m1 = hpt_mallinfo2();
  size_t bytes = TC_FOREIGN_BATCH * request2size(200);
  cr_assert_eq(m0.uordblks - m1.uordblks, bytes, "no longer in use");
  cr_assert_eq(m1.fordblks - m0.fordblks, bytes, "but free");
  cr_assert_eq(m1.smblks - m0.smblks, TC_FOREIGN_BATCH, "and small, as a fastbin's");
  check_all_arenas();
  hpt_malloc_trim(0);
  cr_assert_eq(f.ar->inbox.n, 0, "malloc_trim merged the inbox");
  check_all_arenas();
  for (int i = TC_FOREIGN_BATCH; i < 80; i++) hpt_free(f.p[i]);
}

/* A block freed twice by another thread, sent home twice, is caught when
   its owner's refill finds it in a bin already (the bin has room: fixed
   caps of 300).  */
enum { TWICE_N = 2 * TC_FOREIGN_BATCH };
static void *alloc_twice_n(void *arg) {
  void **p = arg;
  for (int i = 0; i < TWICE_N; i++) p[i] = hpt_malloc(200);
  return NULL;
}

static void *malloc_one(void *arg) {
  (void)arg;
  return hpt_malloc(200);
}

static void do_double_free_through_the_inbox(void) {
  static void *p[TWICE_N];
  pthread_t th;
  hp_ensure_init();
  if (pthread_create(&th, NULL, alloc_twice_n, p) != 0 || pthread_join(th, NULL) != 0) _exit(5);
  struct arena *ar = arena_for_chunk(mem2chunk(p[0]));
  if (ar == &main_arena) _exit(6);
  for (int i = 0; i < TC_FOREIGN_BATCH; i++) hpt_free(p[i]);
  if (ar->inbox.n != TC_FOREIGN_BATCH) _exit(7);
  hpt_free(p[3]); /* its key went with it into the inbox: not caught at the call */
  for (int i = TC_FOREIGN_BATCH + 1; i < TWICE_N; i++) hpt_free(p[i]);
  if (ar->inbox.n != 2 * TC_FOREIGN_BATCH) _exit(8);
  /* a new thread takes the arena the first one left, and misses */
  if (pthread_create(&th, NULL, malloc_one, NULL) != 0 || pthread_join(th, NULL) != 0) _exit(9);
  _exit(10);
}

Test(tcache, double_free_through_the_inbox_is_caught_at_the_owners_refill) {
  tunables("glibc.malloc.tcache_count=300");
  expect_abort(do_double_free_through_the_inbox, "free(): double free detected in tcache 2");
}

static void *alloc_big(void *arg) {
  void **p = arg;
  for (int i = 0; i < 8; i++) p[i] = hpt_malloc(20000);
  return NULL;
}

Test(tcache, another_arenas_large_blocks_go_home_by_the_bytes) {
  hp_ensure_init();
  static void *p[8];
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_big, p), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  size_t nb = request2size(20000), tidx = tcache_class(&nb), c0 = hp_self.bins[tidx].count;
  size_t fit = (TC_FOREIGN_BYTES - 1) / nb; /* blocks the list holds below its byte bound */
  cr_assert_lt(fit, 8);
  for (size_t i = 0; i < fit; i++) hpt_free(p[i]);
  cr_assert_eq(hp_self.foreign_count, fit);
  cr_assert_eq(hp_self.foreign_bytes, fit * nb);
  hpt_free(p[fit]);
  cr_assert_eq(hp_self.foreign_count, 0, "the byte bound sent the list home");
  cr_assert_eq(hp_self.bins[tidx].count, c0, "none went into the bin");
  check_all_arenas();
  for (size_t i = fit + 1; i < 8; i++) hpt_free(p[i]);
}

Test(tcache, another_arenas_blocks_on_their_way_home_count_as_free) {
  static struct foreign f;
  alloc_in_a_thread(&f);
  size_t n0, b0;
  tcache_totals(&n0, &b0);
  struct mallinfo2 m0 = hpt_mallinfo2();
  for (int i = 0; i < 10; i++) hpt_free(f.p[i]);
  cr_assert_eq(hp_self.foreign_count, 10, "on the foreign list, not in the bin");
  size_t n1, b1, bytes = 10 * request2size(200);
  tcache_totals(&n1, &b1);
  struct mallinfo2 m1 = hpt_mallinfo2();
  cr_assert_eq(n1, n0 + 10);
  cr_assert_eq(b1, b0 + bytes);
  cr_assert_eq(m0.uordblks - m1.uordblks, bytes, "no longer in use");
  cr_assert_eq(m1.fordblks - m0.fordblks, bytes, "but free");
  hpt_malloc_trim(0);
  cr_assert_eq(hp_self.foreign_count, 0, "malloc_trim sent them home");
  cr_assert_null(hp_self.foreign);
  check_all_arenas();
  for (int i = 10; i < 80; i++) hpt_free(f.p[i]);
}

/* In a child: no Criterion assertion there.  */
static void alloc_in_a_thread_or_exit(struct foreign *f) {
  hp_ensure_init(); /* this thread has the main arena, the other another */
  pthread_t th;
  if (pthread_create(&th, NULL, alloc_foreign, f) != 0 || pthread_join(th, NULL) != 0) _exit(5);
  if (f->ar == &main_arena) _exit(6);
}

static void do_double_free_foreign(void) {
  static struct foreign f;
  alloc_in_a_thread_or_exit(&f);
  hpt_free(f.p[3]);
  hpt_free(f.p[4]);
  hpt_free(f.p[3]);
  _exit(3);
}

Test(tcache, double_free_of_another_arenas_block_is_caught) {
  expect_abort(do_double_free_foreign, "free(): double free detected in tcache 2");
}

static void do_realloc_foreign_after_free(void) {
  static struct foreign f;
  alloc_in_a_thread_or_exit(&f);
  hpt_free(f.p[3]);
  void *q = hpt_realloc(f.p[3], 300);
  (void)q;
  _exit(3);
}

Test(tcache, realloc_of_another_arenas_freed_block_is_caught) {
  expect_abort(do_realloc_foreign_after_free, "realloc(): invalid pointer");
}

/* Own small chunks: an overflow parks them on the fastbins while the
   arena's record says parked chunks are reused; once malloc_consolidate
   has merged more than half of what was parked, flushes merge them at
   once (but one flush in eight still parks, to keep the record going).  */
Test(tcache, own_small_chunks_parked_until_consolidation_merges_them) {
  tunables("hpmalloc.tcache_bytes=8192");
  enum { N = 1000 };
  static void *p[N], *g[N];
  size_t size = request2size(64);
  cr_assert_leq(size, mp.max_fast);
  struct tc_bin *bin = bin_of(64);
  alloc_apart(p, g, N, 64);
  size_t c0 = bin->count;
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  size_t flushed = c0 + N - bin->count;
  cr_assert_gt(flushed, 0);
  cr_assert_eq(fastbin_length(&main_arena, size), flushed, "every flushed chunk was parked");
  cr_assert_eq(main_arena.flush_parked, flushed);
  bool lk = arena_lock(&main_arena);
  malloc_consolidate(&main_arena); /* what a large request does, with the lock */
  arena_unlock(&main_arena, lk);
  cr_assert_eq(fastbin_length(&main_arena, size), 0);
  cr_assert_geq(main_arena.fast_merged, flushed);
  for (int i = 0; i < N; i++) p[i] = hpt_malloc(64);
  c0 = bin->count;
  unsigned f0 = main_arena.flushes;
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  flushed = c0 + N - bin->count;
  unsigned flushes = main_arena.flushes - f0;
  size_t parked = fastbin_length(&main_arena, size);
  cr_assert_geq(flushes, TC_PROBE_EVERY);
  cr_assert_lt(parked, flushed / 2, "%zu of %zu flushed chunks parked after consolidation merged them", parked,
               flushed);
  cr_assert_gt(parked, 0, "a probe flush still parked");
  check_all_arenas();
  (void)g;
}

/* The record halves once the parked count reaches TC_PARK_WINDOW, so old
   history weighs less than what the program does now.  */
Test(tcache, park_record_halves_after_its_window) {
  tunables("hpmalloc.tcache_bytes=8192");
  enum { N = 400 };
  static void *p[N], *g[N];
  alloc_apart(p, g, N, 64);
  main_arena.flush_parked = TC_PARK_WINDOW;
  main_arena.fast_merged = 1000;
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  cr_assert_lt(main_arena.flush_parked, TC_PARK_WINDOW, "halved, plus what the flushes parked since");
  cr_assert_geq(main_arena.flush_parked, TC_PARK_WINDOW / 2);
  cr_assert_eq(main_arena.fast_merged, 500);
  check_all_arenas();
  (void)g;
}

/* A thread that exits gives another arena's small chunks back as free()
   would, to that arena's fastbins: merged instead, they set off
   malloc_consolidate over everything the thread had parked there.  */
struct exit_free {
  void **p;
  int n;
};

static void *free_then_exit(void *arg) {
  struct exit_free *x = arg;
  for (int i = 0; i < x->n; i++) hpt_free(x->p[i]);
  return NULL;
}

Test(tcache, exit_gives_another_arenas_small_chunks_to_its_fastbins) {
  tunables("hpmalloc.tcache_bytes=8192");
  enum { N = 80 };
  static void *p[N], *g[N];
  size_t size = request2size(64);
  alloc_apart(p, g, N, 64);
  size_t before = fastbin_length(&main_arena, size);
  struct exit_free x = {p, N};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, free_then_exit, &x), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(fastbin_length(&main_arena, size) + inbox_length(&main_arena, size), before + N,
               "sent to the inbox or parked by the overflows, parked by the exit");
  check_all_arenas();
  (void)g;
}

/* Slow-path events from another bin: a working set of 100-byte blocks
   larger than the small budget lets its bin hold.  */
static void churn_other_bin(int rounds) {
  enum { M = 200 };
  void *q[M];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < M; i++) q[i] = hpt_malloc(100);
    for (int i = 0; i < M; i++) hpt_free(q[i]);
  }
}

Test(tcache, gc_drains_an_idle_bin_and_lowers_its_cap) {
  tunables("hpmalloc.tcache_bytes=16384");
  enum { N = 20 };
  void *p[N];
  for (int i = 0; i < N; i++) p[i] = hpt_malloc(300);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  struct tc_bin *idle = bin_of(300);
  size_t count0 = idle->count, cap0 = idle->cap;
  cr_assert_geq(count0, N);
  churn_other_bin(400); /* two gc passes or more; the idle bin is not touched */
  cr_assert_lt(idle->count, count0 / 2, "the idle bin gave back most of its chunks (%u left of %zu)", idle->count,
               count0);
  cr_assert_lt(idle->cap, cap0, "and its cap came down");
  cr_assert_leq(hp_self.cap_bytes, 16384);
  check_all_arenas();
}

Test(tcache, gc_sends_the_foreign_list_home) {
  tunables("hpmalloc.tcache_bytes=16384");
  static struct foreign f;
  alloc_in_a_thread(&f);
  for (int i = 0; i < 10; i++) hpt_free(f.p[i]);
  cr_assert_eq(hp_self.foreign_count, 10);
  churn_other_bin(400); /* gc passes; no other thread's block is freed meanwhile */
  cr_assert_eq(hp_self.foreign_count, 0, "a gc pass sent the list home");
  cr_assert_null(hp_self.foreign);
  check_all_arenas();
  for (int i = 10; i < 80; i++) hpt_free(f.p[i]);
}

Test(tcache, gc_keeps_a_bin_in_use) {
  tunables("hpmalloc.tcache_bytes=16384");
  enum { N = 12 };
  void *p[N];
  struct tc_bin *bin = bin_of(500);
  for (int round = 0; round < 400; round++) {
    /* this bin's working set: it dips to empty every round */
    for (int i = 0; i < N; i++) p[i] = hpt_malloc(500);
    for (int i = 0; i < N; i++) hpt_free(p[i]);
    churn_other_bin(1);
  }
  cr_assert_geq(bin->cap, N, "a bin in use keeps room for its working set (cap %u)", bin->cap);
  cr_assert_geq(bin->count, N);
}

/* The budget spent by a large class whose working set still overflows
   its bin now and then, and a small class with a hundred times its
   traffic: the gc shares the budget again, by traffic and size, so the
   small bin gets the room doubling alone would never have given it.  */
Test(tcache, gc_shares_a_spent_budget_by_traffic) {
  tunables("hpmalloc.tcache_bytes=65536");
  enum { L = 12, S = 200 };
  void *big[L], *small[S];
  struct tc_bin *lb = bin_of(8000), *sb = bin_of(100);
  for (int r = 0; r < 4; r++) { /* the large class takes the whole budget first */
    for (int i = 0; i < L; i++) big[i] = hpt_malloc(8000);
    for (int i = 0; i < L; i++) hpt_free(big[i]);
  }
  cr_assert_eq(lb->cap * tc_bin_size(tidx_of(8000)), 65536, "the large bin holds the budget (cap %u)", lb->cap);
  for (int r = 0; r < 200; r++) {
    for (int i = 0; i < L; i++) big[i] = hpt_malloc(8000);
    for (int i = 0; i < L; i++) hpt_free(big[i]);
    for (int i = 0; i < S; i++) small[i] = hpt_malloc(100);
    for (int i = 0; i < S; i++) hpt_free(small[i]);
  }
  cr_assert_geq(sb->cap, 100, "the busy small bin got most of the budget (cap %u)", sb->cap);
  cr_assert_lt(lb->cap, 8, "the large one gave some back (cap %u)", lb->cap);
  cr_assert_geq(lb->cap, 1, "and keeps a little");
  cr_assert_leq(hp_self.cap_bytes, 65536);
  cr_assert_leq(lb->count, lb->cap);
  cr_assert_leq(sb->count, sb->cap);
  check_all_arenas();
}

/* ================================================================ glibc's fixed caps */

Test(tcache_fixed, count_limit_sends_eighth_to_arena) {
  tunables("glibc.malloc.tcache_count=7");
  cr_assert(mp.tcache_fixed);
  enum { N = 8 };
  void *p[N], *g[N];
  alloc_apart(p, g, N, 200);
  size_t t = tidx_of(200);
  cr_assert_eq(hp_self.bins[t].cap, 7);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  cr_assert_eq(hp_self.bins[t].count, 7);
  for (int i = 0; i < N - 1; i++) cr_assert(in_tcache(t, p[i]));
  cr_assert_not(in_tcache(t, p[N - 1]));
  cr_assert_not(inuse(mem2chunk(p[N - 1])), "the 8th free went to the arena, merged");
  check_all_arenas();
  (void)g;
}

Test(tcache_fixed, count_zero_switches_the_cache_off) {
  tunables("glibc.malloc.tcache_count=0");
  cr_assert_not(tcache_on());
  void *a = hpt_malloc(200), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  cr_assert_eq(bin_of(200)->count, 0);
  cr_assert_not(inuse(mem2chunk(a)));
}

Test(tcache_fixed, tcache_max_limits_the_bins) {
  tunables("glibc.malloc.tcache_max=100");
  cr_assert_eq(mp.tcache_bins, tidx_of(100) + 1);
  cr_assert_eq(mp.tcache_large_bins, 0);
  void *a = hpt_malloc(100), *b = hpt_malloc(300), *g = hpt_malloc(16);
  (void)g;
  hpt_free(a);
  hpt_free(b);
  cr_assert(in_tcache(tidx_of(100), a));
  cr_assert_not(inuse(mem2chunk(b)), "300 bytes is above tcache_max: the arena has it");
  cr_assert_eq(chunksize(mem2chunk(hpt_malloc(2000))), request2size(2000), "no large classes: no rounding");
}

Test(tcache_fixed, refilled_from_unsorted_exact_fits) {
  tunables("glibc.malloc.tcache_count=7");
  enum { N = 14 };
  void *p[N], *g[N];
  alloc_apart(p, g, N, 200);
  size_t t = tidx_of(200);
  for (int i = 0; i < N; i++) hpt_free(p[i]); /* 7 cached, 7 to the unsorted bin */
  cr_assert_eq(hp_self.bins[t].count, 7);
  for (int i = 0; i < 7; i++) cr_assert_not_null(hpt_malloc(200));
  cr_assert_eq(hp_self.bins[t].count, 0);
  /* the next miss walks the unsorted bin, caching exact fits on the way */
  void *q = hpt_malloc(200);
  bool from_arena = false;
  for (int i = 7; i < N; i++) from_arena |= q == p[i];
  cr_assert(from_arena);
  cr_assert_eq(hp_self.bins[t].count, 6, "the other six exact fits were cached");
  check_all_arenas();
  (void)g;
}

Test(tcache_fixed, refilled_from_small_bin) {
  tunables("glibc.malloc.tcache_count=7");
  enum { N = 14 };
  void *p[N], *g[N];
  alloc_apart(p, g, N, 300);
  size_t t = tidx_of(300);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  void *big = hpt_malloc(40000); /* sorts the unsorted chunks into their small bin */
  unsigned idx = smallbin_index(request2size(300));
  cr_assert_neq(bin_at(&main_arena, idx)->fd, bin_at(&main_arena, idx));
  for (int i = 0; i < 7; i++) hpt_malloc(300);
  cr_assert_eq(hp_self.bins[t].count, 0);
  void *q = hpt_malloc(300);
  cr_assert_not_null(q);
  cr_assert_eq(hp_self.bins[t].count, 6, "the small bin refilled the cache");
  cr_assert_eq(bin_at(&main_arena, idx)->fd, bin_at(&main_arena, idx), "and is empty now");
  check_all_arenas();
  (void)g;
  (void)big;
}

/* Adaptive caps: a miss that splits a larger free chunk carves more
   chunks of the size off it for the bin.  */
Test(tcache, refill_carves_a_split_chunk) {
  hp_ensure_init();
  char *big = hpt_malloc(40000), *g = hpt_malloc(16);
  (void)g;
  hpt_free(big); /* a 40 KB free chunk in the unsorted bin */
  struct tc_bin *bin = bin_of(700);
  cr_assert_eq(bin->count, 0);
  char *p = hpt_malloc(700);
  cr_assert_eq(p, big, "served from the front of the free chunk");
  cr_assert_eq(bin->count, bin->cap, "the bin was filled from the same chunk");
  for (unsigned i = 1; i <= bin->count; i++) cr_assert(in_tcache(tidx_of(700), p + i * request2size(700)));
  check_all_arenas();
}

/* A refill that must split prefers a free chunk holding a batch of the
   class over the best fit, which would bring the bin nothing more.  */
Test(tcache, refill_splits_a_chunk_that_holds_a_batch) {
  hp_ensure_init();
  size_t nb = request2size(392), sliver = nb + 16; /* the best fit: nb and less than MINSIZE over */
  char *big = hpt_malloc(40000), *g1 = hpt_malloc(16);
  /* a free chunk of `sliver` bytes in the arena: the tail realloc cuts off */
  char *s = hpt_malloc(1000), *g2 = hpt_malloc(16);
  size_t ssize = chunksize(mem2chunk(s));
  cr_assert_eq(hpt_realloc(s, ssize - sliver - SIZE_SZ), s);
  struct chunk *tail = chunk_at(mem2chunk(s), ssize - sliver);
  cr_assert_eq(chunksize(tail), sliver);
  cr_assert(tail->size & ARENA_FREE, "the tail is free in the arena");
  hpt_free(big); /* above the cache's classes: into the arena */
  struct tc_bin *bin = bin_of(392);
  cr_assert_eq(bin->count, 0);
  char *p = hpt_malloc(392);
  cr_assert_eq(p, big, "split from the chunk that holds a batch, not the sliver");
  cr_assert_geq(bin->count, 3, "the bin got the rest of the batch (%u)", bin->count);
  for (unsigned i = 1; i <= bin->count; i++) cr_assert(in_tcache(tidx_of(392), p + i * nb));
  cr_assert(tail->size & ARENA_FREE, "the sliver is still free");
  check_all_arenas();
  (void)g1;
  (void)g2;
}

/* A refill that finds only fragments (free chunks too small to hold a
   batch) splits several of them for the bin under the one lock, not one
   per refill.  */
Test(tcache, refill_splits_several_fragments) {
  hp_ensure_init();
  enum { NFRAG = 6 };
  size_t nb = request2size(392), frag = 2 * nb; /* holds one chunk of nb, not a batch */
  char *lo[NFRAG], *hi[NFRAG];
  for (int i = 0; i < NFRAG; i++) {
    /* the guard is above the cache's classes: it comes off top, right behind s; s loses more
       than half, so realloc cuts the tail off (a smaller tail stays in the block: bins.c) */
    char *s = hpt_malloc(1200), *g = hpt_malloc(TC_MAX_CHUNK + 100);
    (void)g;
    size_t ssize = chunksize(mem2chunk(s));
    cr_assert_eq(hpt_realloc(s, ssize - frag - SIZE_SZ), s);
    struct chunk *tail = chunk_at(mem2chunk(s), ssize - frag);
    cr_assert_eq(chunksize(tail), frag);
    cr_assert(tail->size & ARENA_FREE, "the tail is a free fragment in the arena");
    lo[i] = (char *)tail;
    hi[i] = (char *)tail + frag;
  }
  struct tc_bin *bin = bin_of(392);
  cr_assert_eq(bin->count, 0);
  char *p = hpt_malloc(392);
  cr_assert_eq(bin->count, NFRAG - 1, "one chunk from each other fragment (%u)", bin->count);
  char *got[NFRAG];
  got[0] = p;
  for (int i = 1; i < NFRAG; i++) got[i] = hpt_malloc(392);
  for (int i = 0; i < NFRAG; i++) {
    bool inside = false;
    for (int j = 0; j < NFRAG; j++) inside |= got[i] >= lo[j] && got[i] < hi[j];
    cr_assert(inside, "block %d came from a fragment", i);
  }
  check_all_arenas();
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

static void do_double_free_large_class(void) {
  void *a = hpt_malloc(20000);
  hpt_free(a);
  hpt_free(a);
}

Test(tcache, double_free_detected_in_a_large_class) {
  expect_abort(do_double_free_large_class, "free(): double free detected in tcache 2");
}

/* A chunk whose first free went to its arena (the budget left its bin no
   room) and merged there: freed again, its header names another class, one
   with room; the next chunk's header says it is free.  */
static void do_double_free_after_arena(void) {
  tunables("hpmalloc.tcache_bytes=0");
  void *a = hpt_malloc(496), *b = hpt_malloc(496), *g = hpt_malloc(496);
  (void)g;
  hpt_free(a);
  hpt_free(b); /* both in the arena, merged: a's header now says 1024 */
  hpt_free(a);
}

Test(tcache, double_free_of_a_chunk_the_arena_holds) {
  expect_abort(do_double_free_after_arena, "double free or corruption (!prev)");
}

static void do_double_free_into_a_bin_with_room(void) {
  hp_ensure_init();
  tcache_switch_off(); /* off: a and b come from the arena side by side and go back there */
  void *a = hpt_malloc(496), *b = hpt_malloc(496), *g = hpt_malloc(496);
  (void)g;
  hpt_free(a);
  hpt_free(b); /* merged: a's header says 1024 */
  hp_self.state = HP_THREAD_CACHING;
  hp_self.bins[tidx_of(1016)].cap = 8; /* the 1024-byte bin has room */
  hpt_free(a);                         /* the fast path must not take it */
}

Test(tcache, double_free_caught_on_the_fast_path) {
  expect_abort(do_double_free_into_a_bin_with_room, "double free or corruption (!prev)");
}

/* realloc of a block freed already: in the cache (the key, and the block
   in its bin) or in the arena (its header) -- glibc would resize it and
   corrupt the heap.  */
static void do_realloc_after_free_in_cache(void) {
  void *a = hpt_malloc(50), *b = hpt_malloc(50);
  hpt_free(a);
  hpt_free(b); /* a is below the head */
  (void)hpt_realloc(a, 500);
}

Test(tcache, realloc_of_a_block_in_the_cache_is_caught) {
  expect_abort(do_realloc_after_free_in_cache, "realloc(): invalid pointer");
}

static void do_realloc_after_free_in_arena(void) {
  tunables("hpmalloc.tcache_bytes=0");
  void *a = hpt_malloc(496), *g = hpt_malloc(496);
  (void)g;
  hpt_free(a); /* no room in the cache: into the arena, free there */
  (void)hpt_realloc(a, 100);
}

Test(tcache, realloc_of_a_block_the_arena_holds_is_caught) {
  expect_abort(do_realloc_after_free_in_arena, "realloc(): invalid pointer");
}

Test(tcache, realloc_of_a_block_holding_the_key_by_chance) {
  hp_ensure_init();
  uintptr_t *a = hpt_malloc(64);
  a[1] = hp_tcache_key; /* the user's data looks like a cached block's */
  uintptr_t *b = hpt_realloc(a, 2000);
  cr_assert_not_null(b);
  cr_assert_eq(b[1], hp_tcache_key, "the data moved with the block");
  hpt_free(b);
  check_all_arenas();
}

Test(tcache, key_set_in_cache_cleared_on_malloc) {
  void *a = hpt_malloc(64);
  hpt_free(a);
  cr_assert_eq(((struct tc_entry *)a)->key, hp_tcache_key);
  size_t n = bin_of(64)->count;
  void *b = hpt_malloc(64);
  cr_assert_eq(b, a);
  cr_assert_eq(((struct tc_entry *)b)->key, 0, "malloc clears the key");
  hpt_free(b); /* a legitimate second free: must not abort */
  cr_assert_eq(bin_of(64)->count, n);
  cr_assert_eq(hpt_malloc(64), a);
}

Test(tcache, key_lookalike_in_user_data_is_not_a_double_free) {
  void *a = hpt_malloc(64), *b = hpt_malloc(64);
  size_t n = bin_of(64)->count;
  hpt_free(b);
  /* the program happens to store the key where the cache keeps it */
  ((struct tc_entry *)a)->key = hp_tcache_key;
  hpt_free(a);
  cr_assert_eq(bin_of(64)->count, n + 2);
  cr_assert(in_tcache(tidx_of(64), a));
}

/* ================================================================ statistics and trim */

Test(tcache, cached_chunks_count_as_free) {
  hp_ensure_init();
  enum { N = 100 };
  void *p[N];
  for (int i = 0; i < N; i++) p[i] = hpt_malloc(200);
  struct mallinfo2 m0 = hpt_mallinfo2();
  struct hpmalloc_stats s0;
  cr_assert_eq(hpmalloc_stats(&s0, sizeof s0), 0);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  struct mallinfo2 m1 = hpt_mallinfo2();
  struct hpmalloc_stats s1;
  cr_assert_eq(hpmalloc_stats(&s1, sizeof s1), 0);
  size_t bytes = N * request2size(200);
  cr_assert_eq(m1.arena, m0.arena);
  cr_assert_eq(m0.uordblks - m1.uordblks, bytes, "freed into the cache: no longer in use");
  cr_assert_eq(m1.fordblks - m0.fordblks, bytes, "but free");
  cr_assert_eq(m1.fsmblks, m0.fsmblks, "not in the fastbin fields");
  cr_assert_eq(s1.bytes_cached - s0.bytes_cached, bytes);
  cr_assert_eq(s1.n_cached - s0.n_cached, N);
  cr_assert_eq(s0.bytes_in_use - s1.bytes_in_use, bytes);
  cr_assert_eq(s1.version, sizeof s1);
}

Test(tcache, stats_of_an_older_caller) {
  hp_ensure_init();
  /* a program built against 0.1.0's header passes its smaller struct */
  size_t v1 = offsetof(struct hpmalloc_stats, bytes_cached);
  struct hpmalloc_stats s;
  memset(&s, 0xee, sizeof s);
  cr_assert_eq(hpmalloc_stats(&s, v1), 0);
  cr_assert_eq(s.version, v1);
  cr_assert_eq(s.bytes_cached, (size_t)0xeeeeeeeeeeeeeeee, "nothing written past the caller's struct");
  errno = 0;
  cr_assert_eq(hpmalloc_stats(&s, v1 - 1), -1);
  cr_assert_eq(errno, EINVAL);
}

Test(tcache, malloc_trim_empties_the_callers_cache) {
  void *p[50];
  for (int i = 0; i < 50; i++) p[i] = hpt_malloc(100 + 40 * (size_t)i);
  for (int i = 0; i < 50; i++) hpt_free(p[i]);
  hpt_malloc_trim(0);
  for (size_t i = 0; i < TC_BINS; i++) {
    cr_assert_eq(hp_self.bins[i].count, 0);
    cr_assert_null(hp_self.bins[i].head);
    cr_assert_eq(hp_self.bins[i].cap, 0, "caps start again");
  }
  cr_assert_eq(hp_self.cap_bytes, 0);
  cr_assert(tcache_on(), "and the cache stays on");
  size_t n, b;
  tcache_totals(&n, &b);
  cr_assert_eq(n, 0);
  cr_assert_eq(b, 0);
  struct mallinfo2 m = hpt_mallinfo2();
  cr_assert_eq(m.fsmblks, 0, "given back merged: nothing parked in the fastbins");
  check_all_arenas();
}

/* ================================================================ threads */

Test(tcache, flush_returns_chunks_and_switches_off) {
  void *p[5];
  for (int i = 0; i < 5; i++) p[i] = hpt_malloc(200);
  void *g = hpt_malloc(16);
  for (int i = 0; i < 5; i++) hpt_free(p[i]);
  tcache_switch_off();
  for (size_t i = 0; i < TC_BINS; i++) {
    cr_assert_eq(hp_self.bins[i].count, 0);
    cr_assert_null(hp_self.bins[i].head);
  }
  cr_assert_not(tcache_on());
  struct chunk *c = mem2chunk(p[0]);
  cr_assert_not(inuse(c), "returned to the arena and merged");
  check_all_arenas();
  (void)g;
}

struct thread_blocks {
  void *p[64];
  size_t n;
  struct arena *ar;
  pthread_barrier_t *bar;
};

static void *alloc_free_thread(void *arg) {
  struct thread_blocks *tb = arg;
  static const size_t sizes[] = { 24, 100, 200, 500, 1000, 3000 };
  for (size_t i = 0; i < tb->n; i++) tb->p[i] = hpt_malloc(sizes[i % 6]);
  tb->ar = hp_self.arena;
  for (size_t i = 0; i < tb->n; i++) hpt_free(tb->p[i]); /* all cached */
  if (tb->bar) {
    pthread_barrier_wait(tb->bar); /* cached: the main thread looks */
    pthread_barrier_wait(tb->bar);
  }
  return NULL;
}

static void *first_alloc_thread(void *arg) {
  struct thread_blocks *tb = arg;
  tb->p[0] = hpt_malloc(24);
  tb->ar = hp_self.arena;
  return NULL;
}

static size_t left_count_of(const struct tc_left *l) {
  size_t n = 0;
  for (size_t i = 0; i < TC_BINS; i++) n += l->bins[i].count;
  return n;
}

/* The block the next malloc(24) of a thread holding left cache l would
   get: the head of the 24-byte bin.  */
static void *left_head_24(const struct tc_left *l) { return l->bins[csize2tidx(request2size(24))].head; }

Test(tcache, thread_exit_leaves_cache_to_its_arena) {
  hp_ensure_init();
  struct thread_blocks tb = { .n = 30 };
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_free_thread, &tb), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  struct arena *ar = tb.ar;
  cr_assert_not_null(ar);
  cr_assert_neq(ar, &main_arena, "a new thread gets its own arena");
  cr_assert(ar->left.held, "its last thread left the arena its cache");
  size_t left = left_count_of(&ar->left);
  cr_assert_geq(left, 25, "the freed blocks are in it (%zu)", left);
  size_t n, b;
  tcache_totals(&n, &b);
  cr_assert_eq(n, left, "the statistics count it");
  void *next = left_head_24(&ar->left);
  cr_assert_eq(next, tb.p[24], "the last 24-byte block freed heads its bin");
  check_all_arenas();
  /* the next thread bound to the arena takes the cache whole */
  struct thread_blocks tb2 = { .n = 1 };
  cr_assert_eq(pthread_create(&th, NULL, first_alloc_thread, &tb2), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(tb2.ar, ar);
  cr_assert_eq(tb2.p[0], next, "its first malloc pops the left bin");
  cr_assert(ar->left.held, "and it left the rest when it ended");
  cr_assert_eq(left_count_of(&ar->left), left - 1);
  check_all_arenas();
  /* malloc_trim gives a left cache back to its arena */
  hpt_free(tb2.p[0]);
  hpt_malloc_trim(0);
  cr_assert_not(ar->left.held);
  tcache_totals(&n, &b);
  cr_assert_eq(n, 0);
  bool lk = arena_lock(ar);
  cr_assert_eq(ar->top, ar->heap->first, "every block came back: the heap is one free top chunk");
  for (unsigned i = 0; i < NFASTBINS; i++) cr_assert_null(ar->fastbins[i]);
  arena_unlock(ar, lk);
  check_all_arenas();
}

/* An arena a thread still uses gets no left cache: the thread that ends
   flushes, as glibc's does.  */
Test(tcache, thread_exit_beside_another_thread_of_its_arena_flushes) {
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, 1), 1);
  hp_ensure_init();
  size_t n0, b0;
  tcache_totals(&n0, &b0);
  struct thread_blocks tb = { .n = 30 };
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_free_thread, &tb), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_eq(tb.ar, &main_arena, "one arena: the main thread's");
  cr_assert_not(main_arena.left.held);
  size_t n, b;
  tcache_totals(&n, &b);
  cr_assert_eq(n, n0, "nothing of the thread's is cached anywhere");
  check_all_arenas();
}

/* A thread that built and freed a structure larger than the trim
   threshold before it ended: its cached chunks border the freed memory,
   so its cache goes back merged and the arena can give that memory back.  */
struct built {
  struct arena *ar;
  size_t cached, peak;
};

static void *build_and_free_thread(void *arg) {
  struct built *b = arg;
  enum { N = 4096 };
  static void *p[N];
  for (int i = 0; i < N; i++) p[i] = hpt_malloc(1000); /* 4 MB */
  b->ar = hp_self.arena;
  b->peak = b->ar->system_mem;
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  for (size_t i = 0; i < TC_BINS; i++) b->cached += hp_self.bins[i].count;
  return NULL;
}

/* Run fn in a thread that ends; it caches some blocks, and its cache must
   go back merged, not be left to its arena.  */
static void expect_exit_flushes(void *(*fn)(void *), struct built *b) {
  hp_ensure_init();
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, fn, b), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_gt(b->cached, 0, "some blocks were cached when it ended");
  cr_assert_not(b->ar->left.held, "its cache bordered the freed memory: merged, not left");
}

Test(tcache, thread_exit_after_freeing_a_large_structure_flushes) {
  hp_ensure_init();
  cr_assert_lt(4 * HP_MIB, mp.heap_max, "one heap");
  struct built b = { 0 };
  expect_exit_flushes(build_and_free_thread, &b);
  bool lk = arena_lock(b.ar);
  cr_assert_eq(b.ar->top, b.ar->heap->first, "every block came back: the heap is one free top chunk");
  cr_assert_leq(b.ar->system_mem, b.peak / 2, "and top was trimmed (%zu of %zu bytes held)", b.ar->system_mem, b.peak);
  arena_unlock(b.ar, lk);
  check_all_arenas();
}

/* A thread that freed what it built, in pieces no run of which passes
   the trim threshold: most of its cached chunks border free memory, so
   its cache goes back merged all the same.  Each 2000-byte block (a
   large class: cached, and not carved from top by the batch) sits before
   a 40000-byte one (above the cache's classes: freed into the arena) and
   a 100-byte one that stays in use.  */
static void *free_beside_kept_thread(void *arg) {
  struct built *b = arg;
  enum { N = 32 };
  void *x[N], *y[N];
  for (int i = 0; i < N; i++) {
    x[i] = hpt_malloc(2000);
    y[i] = hpt_malloc(40000);
    (void)hpt_malloc(100); /* kept */
  }
  for (int i = 0; i < N; i++) {
    hpt_free(x[i]);
    hpt_free(y[i]);
  }
  b->ar = hp_self.arena;
  for (size_t i = 0; i < TC_BINS; i++) b->cached += hp_self.bins[i].count;
  return NULL;
}

Test(tcache, thread_exit_with_most_cached_chunks_by_free_memory_flushes) {
  hp_ensure_init();
  cr_assert_lt(42100, mp.trim_threshold, "no single run can reach the threshold");
  struct built b = { 0 };
  expect_exit_flushes(free_beside_kept_thread, &b);
  check_all_arenas();
}

/* A block a thread freed and left in its cache, freed again by another
   thread, is caught as the second free of a cached block.  */
static void do_double_free_of_a_left_block(void) {
  struct thread_blocks tb = { .n = 30 };
  pthread_t th;
  if (pthread_create(&th, NULL, alloc_free_thread, &tb) != 0 || pthread_join(th, NULL) != 0) return;
  if (!tb.ar->left.held) return;
  hpt_free(tb.p[24]);
}

Test(tcache, a_left_block_freed_again_is_a_double_free) {
  expect_abort(do_double_free_of_a_left_block, "free(): double free detected in tcache 2");
}

/* Start a thread that caches 30 blocks and waits at the barrier (twice)
   before it exits.  */
static pthread_t start_caching_thread(struct thread_blocks *tb, pthread_barrier_t *bar) {
  pthread_barrier_init(bar, NULL, 2);
  *tb = (struct thread_blocks){ .n = 30, .bar = bar };
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, alloc_free_thread, tb), 0);
  pthread_barrier_wait(bar); /* its blocks are cached now */
  return th;
}

Test(tcache, other_threads_caches_are_counted_until_they_exit) {
  hp_ensure_init();
  size_t n0, b0;
  tcache_totals(&n0, &b0);
  pthread_barrier_t bar;
  struct thread_blocks tb;
  pthread_t th = start_caching_thread(&tb, &bar);
  size_t n1, b1;
  tcache_totals(&n1, &b1);
  cr_assert_geq(n1, n0 + 30, "the other thread's 30 cached blocks are counted");
  pthread_barrier_wait(&bar);
  cr_assert_eq(pthread_join(th, NULL), 0);
  size_t n2, b2;
  tcache_totals(&n2, &b2);
  cr_assert_eq(n2, n1, "the cache a thread left its arena is counted");
  cr_assert_eq(b2, b1);
  hpt_malloc_trim(0);
  tcache_totals(&n2, &b2);
  cr_assert_eq(n2, 0, "until malloc_trim gives it back, with this thread's");
  cr_assert_eq(b2, 0);
}

Test(tcache, fork_child_keeps_only_its_own_cache) {
  hp_ensure_init();
  pthread_barrier_t bar;
  struct thread_blocks tb;
  pthread_t th = start_caching_thread(&tb, &bar);
  void *mine = hpt_malloc(200);
  hpt_free(mine);
  size_t own = 0;
  for (size_t i = 0; i < TC_BINS; i++) own += hp_self.bins[i].count;
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    size_t n, b;
    tcache_totals(&n, &b);
    _exit(n == own ? 0 : 1); /* the other thread's cache did not come along */
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child counts only the forking thread's cache");
  pthread_barrier_wait(&bar);
  cr_assert_eq(pthread_join(th, NULL), 0);
}
