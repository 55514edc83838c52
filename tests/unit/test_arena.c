/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/arena.c (and of top.c's heaps for thread arenas):
 * which thread uses which arena, the arena limit, cross-thread frees,
 * arena reuse after thread exit, fork in a multi-threaded process, finding
 * a chunk's heap by masking, and a thread arena growing past one heap and
 * shrinking back.  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "check.h"
#include "unit_helpers.h"

#define MiB ((size_t)1 << 20)

/* ================================================================ helpers */


static size_t count_arenas(void) {
  size_t n = 0;
  for (struct arena *ar = &main_arena;; ar = ar->next) {
    n++;
    if (ar->next == &main_arena) break;
  }
  return n;
}

static void run_thread(void *(*fn)(void *), void *arg) {
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, fn, arg), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
}

/* What a thread saw: its arena and a block it allocated.  */
struct seen {
  pthread_barrier_t *bar;   /* waited on after the first malloc, if set */
  struct arena *ar;
  void *p;
  atomic_bool done;         /* the first malloc returned */
};

static void *alloc_once(void *arg) {
  struct seen *s = arg;
  s->p = hpt_malloc(100);
  s->ar = hp_self.arena;
  atomic_store(&s->done, true);
  if (s->bar) pthread_barrier_wait(s->bar);
  return NULL;
}

/* Start n threads that each allocate once and stay alive until all have.
   Each thread is started only after the previous one's first malloc, so
   arena creation is not raced (arena_max_holds_when_threads_race does).  */
static void run_concurrent(struct seen *s, size_t n) {
  pthread_t th[16];
  pthread_barrier_t bar;
  cr_assert_leq(n, 16);
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  for (size_t i = 0; i < n; i++) {
    s[i].bar = &bar;
    cr_assert_eq(pthread_create(&th[i], NULL, alloc_once, &s[i]), 0);
    while (!atomic_load(&s[i].done)) sched_yield();
  }
  for (size_t i = 0; i < n; i++) cr_assert_eq(pthread_join(th[i], NULL), 0);
  pthread_barrier_destroy(&bar);
}

/* ================================================================ binding */

Test(arena, main_thread_uses_main_arena) {
  void *p = hpt_malloc(100);
  cr_assert_eq(hp_self.arena, &main_arena);
  cr_assert(chunk_main_arena(mem2chunk(p)));
  cr_assert_eq(arena_for_chunk(mem2chunk(p)), &main_arena);
  cr_assert_eq(mp.n_arenas, 1);
}

/* As in glibc, the thread that initialises the allocator is bound to the
   main arena, whichever thread it is.  */
Test(arena, initialising_thread_gets_main_arena) {
  struct seen s1 = { 0 }, s2 = { 0 };
  run_thread(alloc_once, &s1);
  cr_assert_eq(s1.ar, &main_arena);
  cr_assert_eq(mp.n_arenas, 1);
  /* it exited: the main arena is free, and the next thread takes it */
  run_thread(alloc_once, &s2);
  cr_assert_eq(s2.ar, &main_arena);
  cr_assert_eq(mp.n_arenas, 1);
}

Test(arena, concurrent_threads_get_different_arenas) {
  hp_ensure_init();
  cr_assert_geq(mp.arena_test, 3, "below arena_test every new thread gets a new arena");
  struct seen s[3] = { 0 };
  run_concurrent(s, 3);
  for (int i = 0; i < 3; i++) {
    cr_assert_not_null(s[i].ar);
    cr_assert_neq(s[i].ar, &main_arena);
    cr_assert_not(chunk_main_arena(mem2chunk(s[i].p)), "NON_MAIN_ARENA set on a thread arena's chunk");
    cr_assert_eq(arena_for_chunk(mem2chunk(s[i].p)), s[i].ar);
    for (int j = 0; j < i; j++) cr_assert_neq(s[i].ar, s[j].ar, "threads %d and %d share an arena", i, j);
  }
  cr_assert_eq(mp.n_arenas, 4);
  cr_assert_eq(count_arenas(), 4);
  check_all_arenas();
}

Test(arena, arena_max_one_keeps_everyone_on_main) {
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, 1), 1);
  struct seen s[3] = { 0 };
  run_concurrent(s, 3);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(s[i].ar, &main_arena);
    cr_assert(chunk_main_arena(mem2chunk(s[i].p)));
  }
  cr_assert_eq(mp.n_arenas, 1);
  check_all_arenas();
}

Test(arena, arena_max_one_holds_when_main_arena_fails) {
  /* a request the main arena cannot serve (127 TiB: no gap in a 128 TiB
     address space is that large, whatever the overcommit policy) is
     retried elsewhere, but never in an arena past the limit */
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, 1), 1);
  void *keep = hpt_malloc(100);
  cr_assert_not_null(keep);
  errno = 0;
  cr_assert_null(hpt_malloc((size_t)127 << 40));
  cr_assert_eq(errno, ENOMEM);
  cr_assert_eq(mp.n_arenas, 1, "arena_max=1, yet %zu arenas", (size_t)mp.n_arenas);
  cr_assert_eq(count_arenas(), 1);
  hpt_free(keep);
  check_all_arenas();
}

Test(arena, arena_max_two_caps_arena_count) {
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, 2), 1);
  struct seen s[4] = { 0 };
  run_concurrent(s, 4);
  cr_assert_eq(mp.n_arenas, 2);
  cr_assert_eq(count_arenas(), 2);
  size_t on_main = 0;
  for (int i = 0; i < 4; i++) {
    cr_assert_not_null(s[i].ar);
    cr_assert_eq(arena_for_chunk(mem2chunk(s[i].p)), s[i].ar);
    on_main += s[i].ar == &main_arena;
  }
  cr_assert_lt(on_main, 4, "the second arena is used");
  check_all_arenas();
}

static pthread_barrier_t start_line;

static void *race_to_first_malloc(void *arg) {
  pthread_barrier_wait(&start_line);
  *(void **)arg = hpt_malloc(64);
  return NULL;
}

/* In a fresh child: arena_max 2, then 8 threads make their first malloc at
   the same moment.  Exit code: the number of arenas beyond the limit.  */
static int arena_max_race_child(void) {
  enum { T = 8 };
  alarm(20);
  hpt_mallopt(M_ARENA_MAX, 2);
  pthread_t th[T];
  void *p[T];
  pthread_barrier_init(&start_line, NULL, T);
  for (int i = 0; i < T; i++)
    if (pthread_create(&th[i], NULL, race_to_first_malloc, &p[i]) != 0) return 100;
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < T; i++)
    if (!p[i]) return 101;
  size_t n = count_arenas();
  return n > 2 ? (int)(n - 2) : 0;
}

/* The limit must hold when threads race for new arenas: checking
   narenas < limit and creating the arena must be one step (glibc bumps
   narenas with a compare-and-swap before it creates).  Each round forks
   a child whose allocator was never used, so the race is run afresh.  */
Test(arena, arena_max_holds_when_threads_race) {
  int over = 0, rounds = 200;
  for (int i = 0; i < rounds; i++) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(arena_max_race_child());
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 100, "round %d: child status %#x", i, st);
    over += WEXITSTATUS(st) != 0;
  }
  cr_assert_eq(over, 0, "arena_max=2 exceeded in %d of %d rounds", over, rounds);
}

Test(arena, exited_threads_arena_is_reused) {
  hp_ensure_init();
  struct seen s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
  run_thread(alloc_once, &s1);
  size_t n = mp.n_arenas;
  cr_assert_eq(n, 2);
  run_thread(alloc_once, &s2);
  cr_assert_eq(s2.ar, s1.ar, "the exited thread's arena is taken from the free list");
  run_thread(alloc_once, &s3);
  cr_assert_eq(s3.ar, s1.ar);
  cr_assert_eq(mp.n_arenas, n, "no new arena");
  cr_assert_eq(s1.ar->attached_threads, 0);
  check_all_arenas();
}

/* ================================================================ heaps */

Test(arena, heap_for_ptr_finds_thread_heap) {
  hp_ensure_init();
  struct seen s = { 0 };
  run_thread(alloc_once, &s);
  struct chunk *c = mem2chunk(s.p);
  struct heap *h = heap_for_ptr(c);
  cr_assert_eq((uintptr_t)h & (mp.heap_max - 1), 0);
  cr_assert_eq(h->ar, s.ar);
  cr_assert_eq(s.ar->heap, h);
  cr_assert_eq((void *)h, (void *)h->reg.base, "the heap header starts its region");
  cr_assert((char *)c >= h->reg.base && (char *)c < h->reg.base + h->reg.committed);
  cr_assert_eq(h->reg.reserved, mp.heap_max);
  cr_assert_eq((char *)s.ar, (char *)h + sizeof(struct heap), "the arena lives after its heap header");
}

struct grow {
  void *p[100];
  size_t n;
  struct arena *ar;
  size_t heaps_at_peak;
  size_t system_at_peak;
  bool all_found_by_mask;
};

static void *grow_thread(void *arg) {
  struct grow *g = arg;
  for (size_t i = 0; i < g->n; i++) g->p[i] = hpt_malloc(MiB);
  g->ar = hp_self.arena;
  g->heaps_at_peak = g->ar->n_heaps;
  g->system_at_peak = g->ar->system_mem;
  g->all_found_by_mask = true;
  for (size_t i = 0; i < g->n; i++) {
    struct chunk *c = g->p[i] ? mem2chunk(g->p[i]) : NULL;
    if (!c || chunk_is_mmapped(c) || heap_for_ptr(c)->ar != g->ar) g->all_found_by_mask = false;
  }
  bool lk = arena_lock(g->ar);
  check_arena(g->ar);
  arena_unlock(g->ar, lk);
  for (size_t i = 0; i < g->n; i++) hpt_free(g->p[i]);
  return NULL;
}

Test(arena, thread_arena_grows_new_heap_and_releases_it) {
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  struct grow g = { .n = 80 };
  run_thread(grow_thread, &g);
  for (size_t i = 0; i < g.n; i++) cr_assert_not_null(g.p[i]);
  cr_assert_neq(g.ar, &main_arena);
  cr_assert(g.all_found_by_mask, "every 1 MiB block is a heap chunk whose heap names the arena");
  cr_assert_geq(g.heaps_at_peak, 2, "80 MiB cannot fit one %zu MiB heap", mp.heap_max >> 20);
  cr_assert_geq(g.system_at_peak, 80 * MiB);
  check_all_arenas();
  hpt_malloc_trim(0);
  cr_assert_eq(g.ar->n_heaps, 1, "empty heaps are released");
  cr_assert_null(g.ar->heap->prev);
  cr_assert_leq(g.ar->system_mem, 4 * MiB, "system_mem %zu after trim", g.ar->system_mem);
  check_all_arenas();
}

/* A thread heap emptied by free goes back even when top, the empty
   heap's committed part, is smaller than what the arena keeps at trims:
   the heap before it may end in far more free memory (glibc's
   heap_trim).  Kept out, a worker that built and freed 50 MB of small
   blocks left it all resident after its second run.  */
struct emptied {
  void *p[800];
  struct arena *ar;
  size_t heaps_at_peak, heaps_after, system_after;
};

static void *empty_second_heap(void *arg) {
  struct emptied *e = arg;
  for (size_t i = 0; i < 800; i++) e->p[i] = hpt_malloc(100 << 10); /* 80 MB: more than one heap */
  e->ar = hp_self.arena;
  e->heaps_at_peak = e->ar->n_heaps;
  e->ar->trim_keep = 32 * MiB; /* as after trims the program undid */
  for (size_t i = 0; i < 800; i++) hpt_free(e->p[i]);
  e->heaps_after = e->ar->n_heaps;
  e->system_after = e->ar->system_mem;
  return NULL;
}

Test(arena, an_emptied_heap_goes_back_whatever_the_trim_keep) {
  hp_ensure_init();
  cr_assert_lt(100 << 10, mp.mmap_threshold, "heap chunks, not mapped ones");
  static struct emptied e;
  run_thread(empty_second_heap, &e);
  cr_assert_geq(e.heaps_at_peak, 2, "80 MB cannot fit one %zu MiB heap", mp.heap_max >> 20);
  cr_assert_eq(e.heaps_after, 1, "the emptied heap was released");
  cr_assert_leq(e.system_after, 32 * MiB + mp.top_pad + 4 * MiB, "top trimmed to the keep: %zu", e.system_after);
  check_all_arenas();
}

/* ================================================================ cross-thread frees */

struct batch {
  void *big[20];
  void *small[20];
  struct arena *ar;
};

static void *alloc_batch(void *arg) {
  struct batch *b = arg;
  for (int i = 0; i < 20; i++) {
    b->big[i] = hpt_malloc(2000);  /* a large class of the tcache */
    b->small[i] = hpt_malloc(200); /* tcache-sized */
  }
  b->ar = hp_self.arena;
  return NULL;
}

Test(arena, blocks_freed_by_another_thread_go_home) {
  hp_ensure_init();
  struct batch b = { 0 };
  run_thread(alloc_batch, &b);
  cr_assert_neq(b.ar, &main_arena);
  for (int i = 0; i < 20; i++) hpt_free(b.big[i]);
  for (int i = 0; i < 20; i++) hpt_free(b.small[i]);
  cr_assert_eq(hp_self.bins[csize2tidx(request2size(200))].count, 0, "not into this thread's bins");
  cr_assert_eq(hp_self.foreign_count, 40, "but on its way home, on the foreign list");
  check_all_arenas();
  hpt_malloc_trim(0); /* this thread's cache, and the one the thread left its arena */
  bool lk = arena_lock(b.ar);
  cr_assert_eq(b.ar->top, b.ar->heap->first, "all of the thread arena is free again");
  arena_unlock(b.ar, lk);
  cr_assert_null(main_arena.heap, "nothing reached the main arena");
  check_all_arenas();
}

struct swap {
  pthread_barrier_t *bar;
  void **mine, **theirs;
  size_t n;
  unsigned seed;
};

static void *swap_thread(void *arg) {
  struct swap *s = arg;
  unsigned x = s->seed;
  for (size_t i = 0; i < s->n; i++) {
    x = x * 1103515245u + 12345u;
    s->mine[i] = hpt_malloc(1 + (x >> 8) % 3000);
    memset(s->mine[i], (int)i, 1);
  }
  pthread_barrier_wait(s->bar);
  for (size_t i = 0; i < s->n; i++) hpt_free(s->theirs[i]);
  pthread_barrier_wait(s->bar);
  return NULL;
}

Test(arena, concurrent_cross_frees_keep_arenas_consistent) {
  enum { N = 3000 };
  hp_ensure_init();
  static void *a[N], *b[N];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  struct swap s1 = { &bar, a, b, N, 1 }, s2 = { &bar, b, a, N, 2 };
  pthread_t t1, t2;
  cr_assert_eq(pthread_create(&t1, NULL, swap_thread, &s1), 0);
  cr_assert_eq(pthread_create(&t2, NULL, swap_thread, &s2), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  pthread_barrier_destroy(&bar);
  check_all_arenas();
  cr_assert_eq(hpt_malloc_trim(0) >= 0, 1);
  check_all_arenas();
}

/* ================================================================ fork */

static atomic_bool stop_worker;

static void *busy_worker(void *arg) {
  (void)arg;
  unsigned x = 7;
  void *keep[64] = { 0 };
  while (!atomic_load(&stop_worker)) {
    x = x * 1103515245u + 12345u;
    size_t i = (x >> 8) % 64;
    hpt_free(keep[i]);
    keep[i] = hpt_malloc(1 + (x >> 12) % 5000);
  }
  for (int i = 0; i < 64; i++) hpt_free(keep[i]);
  return NULL;
}

static void *child_thread(void *arg) {
  void *p = hpt_malloc(3000);
  hpt_free(hpt_malloc(100));
  *(void **)arg = p;
  return NULL;
}

/* In the child: allocate, free, check, start a thread.  Exit code 0 = good.  */
static int child_work(void) {
  alarm(20);
  void *v[200];
  for (int i = 0; i < 200; i++)
    if (!(v[i] = hpt_malloc((size_t)(i * 37 % 4000) + 1))) return 1;
  for (int i = 0; i < 200; i += 2) hpt_free(v[i]);
  hpmalloc_check_heap();
  void *tp = NULL;
  pthread_t th;
  if (pthread_create(&th, NULL, child_thread, &tp) != 0 || pthread_join(th, NULL) != 0) return 2;
  if (!tp) return 3;
  hpt_free(tp);
  for (int i = 1; i < 200; i += 2) hpt_free(v[i]);
  hpmalloc_check_heap();
  return 0;
}

Test(arena, fork_with_busy_thread) {
  hpt_free(hpt_malloc(10));
  pthread_t w;
  cr_assert_eq(pthread_create(&w, NULL, busy_worker, NULL), 0);
  for (int round = 0; round < 20; round++) {
    void *p = hpt_malloc(500);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(child_work());
    hpt_free(p);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: child status %#x", round, st);
  }
  atomic_store(&stop_worker, true);
  cr_assert_eq(pthread_join(w, NULL), 0);
  check_all_arenas();
}

struct fork_ctx {
  struct seen s;
  pid_t pid;
};

/* Allocate (binding to a thread arena), then fork; the child checks it
   kept that arena and exercises the allocator.  */
static void *fork_in_thread(void *arg) {
  struct fork_ctx *fc = arg;
  alloc_once(&fc->s);
  fc->pid = fork();
  if (fc->pid == 0) {
    if (hp_self.arena != fc->s.ar) _exit(10);
    _exit(child_work());
  }
  return NULL;
}

Test(arena, fork_from_thread_arena) {
  hp_ensure_init(); /* the main thread takes the main arena */
  struct seen other = { 0 };
  run_thread(alloc_once, &other);
  pthread_t w;
  cr_assert_eq(pthread_create(&w, NULL, busy_worker, NULL), 0);
  struct fork_ctx fc = { .pid = -1 };
  run_thread(fork_in_thread, &fc);
  cr_assert_geq(fc.pid, 1);
  cr_assert_neq(fc.s.ar, &main_arena);
  int st;
  cr_assert_eq(waitpid(fc.pid, &st, 0), fc.pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  atomic_store(&stop_worker, true);
  cr_assert_eq(pthread_join(w, NULL), 0);
  check_all_arenas();
}

/* ================================================================ drained heaps */

struct drain {
  size_t heaps_full, heaps_after, freed;
  bool middle_not_first, released_middle, contents_ok, all_allocated;
};

/* Fill three heaps of a thread arena with 1 MiB blocks, then free every
   block of the middle (sealed) heap: that heap goes back to the system,
   the arena stays consistent and the other blocks keep their contents.
   (Criterion's asserts belong to the main thread: this one records.)  */
static void *drain_thread(void *arg) {
  struct drain *d = arg;
  enum { N = 170 };
  static char *p[N];
  d->all_allocated = true;
  for (size_t i = 0; i < N; i++) {
    p[i] = hpt_malloc(MiB);
    if (!p[i]) { d->all_allocated = false; return NULL; }
    memset(p[i], (int)(i & 0xff), MiB);
  }
  struct arena *ar = hp_self.arena;
  d->heaps_full = ar->n_heaps;
  struct heap *middle = ar->heap->prev;
  d->middle_not_first = middle && middle->prev;
  if (!d->middle_not_first) return NULL;
  /* the heap header goes away with the heap: copy its bounds first */
  char *lo = middle->reg.base, *hi = middle->reg.base + middle->reg.committed;
  for (size_t i = 0; i < N; i++) {
    if (p[i] >= lo && p[i] < hi) {
      hpt_free(p[i]);
      p[i] = NULL;
      d->freed++;
    }
  }
  d->heaps_after = ar->n_heaps;
  d->released_middle = ar->heap->prev != middle;
  bool lk = arena_lock(ar);
  check_arena(ar);
  arena_unlock(ar, lk);
  d->contents_ok = true;
  for (size_t i = 0; i < N; i++) {
    if (!p[i]) continue;
    if ((unsigned char)p[i][0] != (unsigned char)(i & 0xff) || (unsigned char)p[i][MiB - 1] != (unsigned char)(i & 0xff))
      d->contents_ok = false;
    hpt_free(p[i]);
  }
  return NULL;
}

Test(arena, drained_sealed_heap_is_released) {
  hp_ensure_init();
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  struct drain d = { 0 };
  run_thread(drain_thread, &d);
  cr_assert(d.all_allocated);
  cr_assert(d.middle_not_first, "170 MiB fills three %zu MiB heaps (had %zu)", mp.heap_max >> 20, d.heaps_full);
  cr_assert_gt(d.freed, 0);
  cr_assert(d.released_middle, "the drained middle heap left the chain");
  cr_assert_eq(d.heaps_after, d.heaps_full - 1);
  cr_assert(d.contents_ok, "blocks in the other heaps kept their contents");
  check_all_arenas();
}

/* ================================================================ growth in place */

/* Fixed mappings that would cover the page at `obstacle` fail, as they do
   when another mapping sits there, above the main heap; every failed
   extension of the heap (this one's, or the kernel's own when something
   else sits closer) is recorded.  */
static char *obstacle;
static struct heap *grown;
static size_t failed_len[64];
static int nfailed;
static void *(*real_map)(void *, size_t, enum hp_prot, unsigned, size_t);
static void *map_below_obstacle(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge) {
  void *p = NULL;
  if (!(flags & HP_MAP_FIXED_NOREPLACE) || (char *)addr > obstacle || (char *)addr + len <= obstacle)
    p = real_map(addr, len, prot, flags, huge);
  else
    errno = EEXIST;
  if (!p && (char *)addr == grown->reg.base + grown->reg.reserved && nfailed < 64) failed_len[nfailed++] = len;
  return p;
}

/* Once an extension of the main heap's reservation did not fit, the next
   ones ask for half as much, not the same doubling again at every growth
   (115 failed mmaps on the way to a 2 GB heap).  */
Test(arena, main_heap_extension_backs_off_when_the_space_above_is_taken) {
  hp_ensure_init();
  (void)hpt_malloc(100);
  struct heap *h = main_arena.heap;
  cr_assert_not_null(h);
  grown = h;
  size_t reserved = h->reg.reserved;
  obstacle = h->reg.base + reserved + (16u << 20);
  real_map = hp_kernel.map;
  hp_kernel.map = map_below_obstacle;
  /* blocks under the mmap threshold, until the heap reaches 12 MiB past
     its first reservation or moves to a new heap (the space above it was
     shorter than the obstacle's distance) */
  while (main_arena.heap == h && h->reg.reserved < reserved + (12u << 20)) cr_assert_not_null(hpt_malloc(60000));
  hp_kernel.map = real_map;
  cr_assert_gt(nfailed, 0, "a doubling met the obstacle");
  /* a doubling that did not fit, then halves, then the bare need: each
     failure asks for less than the one before */
  for (int i = 1; i < nfailed; i++)
    cr_assert_lt(failed_len[i], failed_len[i - 1], "failed extension %d asked for %zu bytes after %zu", i,
                 failed_len[i], failed_len[i - 1]);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}
