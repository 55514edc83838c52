/* SPDX-License-Identifier: MIT */
/* Multi-threaded malloc stress test.  MIT licence.
 *
 * NTHREADS workers (default 8) run for a bounded time doing random
 * malloc/calloc/realloc/memalign/posix_memalign/aligned_alloc/free of
 * 8 B .. 256 KiB (and a few 1-4 MiB) blocks.  Every block carries a pattern
 * derived from a per-block seed, checked before it is freed or reallocated.
 * Blocks are handed to other workers through bounded inboxes and freed
 * there (cross-thread frees); workers exit after a random lifetime, leaving
 * some blocks to a global list, and are replaced; some workers fork, and the
 * child allocates, checks inherited blocks, frees, runs the heap check and
 * exits 0.  At the end every live block's pattern is verified and
 * hpmalloc_check_heap() runs (when the allocator is hpmalloc).
 *
 * Usage: stress [seconds [threads [seed]]]          exit 0 when all is well.
 * Env: HPT_REQUIRE_HPMALLOC=1 fails when hpmalloc is not the allocator.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpmalloc.h"
#pragma weak hpmalloc_version
#pragma weak hpmalloc_stats
#pragma weak hpmalloc_check_heap

#define MAXTHREADS 64
#define SLOTS 256
#define INBOX 256
#define MAX_FORKS 20

struct blk {
  unsigned char *p;
  size_t n;
  uint32_t seed;
  uint32_t align; /* 0, or the alignment asked for */
};

struct inbox {
  pthread_mutex_t mu;
  struct blk q[INBOX];
  int head, count;
};

static struct inbox inboxes[MAXTHREADS];
static int nthreads = 8;
static double deadline;
static atomic_long errors, ops, cross_frees, forks_done, threads_started, reallocs;
static atomic_int fork_tickets; /* forks taken; ticket k is allowed after k/MAX_FORKS of the run */
static double t_start, t_budget;

static pthread_mutex_t orphans_mu = PTHREAD_MUTEX_INITIALIZER;
static struct blk *orphans;
static size_t n_orphans, cap_orphans;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
  if (n > 0) {
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
  }
}

#define FAIL(...) do { atomic_fetch_add(&errors, 1); if (atomic_load(&errors) < 20) say("stress: ERROR " __VA_ARGS__); } while (0)

static inline uint64_t xs(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

static inline unsigned char pat(uint32_t seed, size_t i) {
  return (unsigned char)((seed >> (i & 7)) ^ (uint32_t)(i * 0x9d));
}

static void fill(const struct blk *b) {
  size_t n = b->n, head = n < 128 ? n : 128;
  for (size_t i = 0; i < head; i++) b->p[i] = pat(b->seed, i);
  for (size_t i = n > 64 ? n - 64 : 0; i < n; i++) b->p[i] = pat(b->seed, i);
  for (size_t i = 4096; i < n; i += 4096) b->p[i] = pat(b->seed, i);
}

static int check(const struct blk *b, const char *where) {
  size_t n = b->n, head = n < 128 ? n : 128;
  if (b->align && ((uintptr_t)b->p & (b->align - 1))) {
    FAIL("%s: block %p not aligned to %u\n", where, (void *)b->p, b->align);
    return 0;
  }
  if (((uintptr_t)b->p & 15) != 0) {
    FAIL("%s: block %p not 16-byte aligned\n", where, (void *)b->p);
    return 0;
  }
  size_t bad = (size_t)-1;
  for (size_t i = 0; i < head && bad == (size_t)-1; i++)
    if (b->p[i] != pat(b->seed, i)) bad = i;
  for (size_t i = n > 64 ? n - 64 : 0; i < n && bad == (size_t)-1; i++)
    if (b->p[i] != pat(b->seed, i)) bad = i;
  for (size_t i = 4096; i < n && bad == (size_t)-1; i += 4096)
    if (b->p[i] != pat(b->seed, i)) bad = i;
  if (bad != (size_t)-1) {
    FAIL("%s: block %p of %zu bytes corrupted at offset %zu (0x%02x, expected 0x%02x)\n", where, (void *)b->p, n,
         bad, b->p[bad], pat(b->seed, bad));
    return 0;
  }
  if (malloc_usable_size(b->p) < n) {
    FAIL("%s: usable size %zu < %zu\n", where, malloc_usable_size(b->p), n);
    return 0;
  }
  return 1;
}

static size_t rand_size(uint64_t *rs) {
  uint64_t r = xs(rs) % 1000;
  if (r < 700) return 8 + xs(rs) % 249;             /* 8 .. 256 */
  if (r < 900) return 8 + xs(rs) % 4089;            /* .. 4 KiB */
  if (r < 996) return 4096 + xs(rs) % (252 * 1024); /* .. 256 KiB */
  return (1 + xs(rs) % 4) * 1024 * 1024 - xs(rs) % 4096;  /* 1 .. 4 MiB */
}

static int new_block(struct blk *b, uint64_t *rs) {
  size_t n = rand_size(rs);
  unsigned kind = (unsigned)(xs(rs) % 20);
  b->align = 0;
  b->n = n;
  b->seed = (uint32_t)xs(rs);
  switch (kind) {
  case 0:
    b->p = calloc(1, n);
    if (b->p) {
      for (size_t i = 0; i < n; i += (n > 4096 ? 511 : 1))
        if (b->p[i]) {
          FAIL("calloc(%zu) byte %zu not zero\n", n, i);
          break;
        }
    }
    break;
  case 1: b->align = 1u << (4 + xs(rs) % 9); b->p = memalign(b->align, n); break;
  case 2: {
    void *m = NULL;
    b->align = 1u << (3 + xs(rs) % 10);
    b->p = posix_memalign(&m, b->align, n) == 0 ? m : NULL;
    break;
  }
  case 3: b->align = 64; b->p = aligned_alloc(64, (n + 63) & ~(size_t)63); break;
  case 4: b->p = realloc(NULL, n); break;
  default: b->p = malloc(n); break;
  }
  if (!b->p) {
    FAIL("allocation of %zu bytes (kind %u) failed: errno %d\n", n, kind, errno);
    return 0;
  }
  fill(b);
  return 1;
}

static void free_block(struct blk *b, const char *where) {
  check(b, where);
  free(b->p);
  b->p = NULL;
}

static int inbox_put(int to, const struct blk *b) {
  struct inbox *ib = &inboxes[to];
  int ok = 0;
  pthread_mutex_lock(&ib->mu);
  if (ib->count < INBOX) {
    ib->q[(ib->head + ib->count) % INBOX] = *b;
    ib->count++;
    ok = 1;
  }
  pthread_mutex_unlock(&ib->mu);
  return ok;
}

static int inbox_take(int me, struct blk *out, int max) {
  struct inbox *ib = &inboxes[me];
  int n = 0;
  pthread_mutex_lock(&ib->mu);
  while (ib->count > 0 && n < max) {
    out[n++] = ib->q[ib->head];
    ib->head = (ib->head + 1) % INBOX;
    ib->count--;
  }
  pthread_mutex_unlock(&ib->mu);
  return n;
}

static void orphan(const struct blk *b) {
  pthread_mutex_lock(&orphans_mu);
  if (n_orphans == cap_orphans) {
    size_t nc = cap_orphans ? cap_orphans * 2 : 1024;
    struct blk *o = realloc(orphans, nc * sizeof *o);
    if (!o) {
      pthread_mutex_unlock(&orphans_mu);
      FAIL("realloc of the orphan list failed\n");
      return;
    }
    orphans = o;
    cap_orphans = nc;
  }
  orphans[n_orphans++] = *b;
  pthread_mutex_unlock(&orphans_mu);
}

/* In the child of a fork: only this thread exists.  Its own blocks must be
   intact, the allocator must work and the heap must check. */
static void forked_child(struct blk *slots, uint64_t rs) {
  alarm(20);
  int bad = 0;
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].p && !check(&slots[i], "fork child (inherited)")) bad = 1;
  struct blk mine[200];
  for (int r = 0; r < 5; r++) {
    for (int i = 0; i < 200; i++)
      if (!new_block(&mine[i], &rs)) bad = 1;
    for (int i = 0; i < 200; i++)
      if (mine[i].p) {
        if (!check(&mine[i], "fork child")) bad = 1;
        free(mine[i].p);
      }
  }
  for (int i = 0; i < SLOTS; i += 2)
    if (slots[i].p) free(slots[i].p);
  if (hpmalloc_check_heap && hpmalloc_check_heap() != 0) bad = 1;
  _exit(bad || atomic_load(&errors) ? 1 : 0);
}

struct worker_arg {
  int id;
  uint64_t seed;
};

static void *worker(void *argp) {
  struct worker_arg *arg = argp;
  int me = arg->id;
  uint64_t rs = arg->seed | 1;
  free(arg);
  struct blk *slots = calloc(SLOTS, sizeof *slots);
  if (!slots) {
    FAIL("calloc of slots failed\n");
    return NULL;
  }
  atomic_fetch_add(&threads_started, 1);
  long lifetime = 2000 + (long)(xs(&rs) % 60000);
  long myops = 0;
  struct blk got[64];
  while (myops < lifetime && now() < deadline) {
    /* take what others sent: check, then free or adopt */
    int ng = inbox_take(me, got, 64);
    for (int i = 0; i < ng; i++) {
      int s = (int)(xs(&rs) % SLOTS);
      if (!slots[s].p && xs(&rs) % 4 == 0) {
        check(&got[i], "adopted block");
        slots[s] = got[i];
      } else {
        free_block(&got[i], "cross-thread free");
        atomic_fetch_add(&cross_frees, 1);
      }
    }
    for (int k = 0; k < 64; k++, myops++) {
      int s = (int)(xs(&rs) % SLOTS);
      struct blk *b = &slots[s];
      unsigned op = (unsigned)(xs(&rs) % 100);
      if (!b->p) {
        new_block(b, &rs);
      } else if (op < 45) {
        free_block(b, "free");
      } else if (op < 60) {
        check(b, "before realloc");
        size_t n = xs(&rs) % 2 ? rand_size(&rs) : b->n / 2 + 1 + xs(&rs) % (b->n + 1);
        unsigned char *q = realloc(b->p, n);
        if (!q) {
          FAIL("realloc(%zu -> %zu) failed\n", b->n, n);
          continue;
        }
        /* the kept prefix still holds its pattern */
        struct blk kept = {q, n < b->n ? n : b->n, b->seed, 0};
        size_t lim = kept.n < 128 ? kept.n : 128;
        for (size_t i = 0; i < lim; i++)
          if (q[i] != pat(b->seed, i)) {
            FAIL("realloc %zu -> %zu lost byte %zu\n", b->n, n, i);
            break;
          }
        b->p = q;
        b->n = n;
        b->align = 0;
        b->seed = (uint32_t)xs(&rs);
        fill(b);
        atomic_fetch_add(&reallocs, 1);
      } else if (op < 85) {
        int to = (int)(xs(&rs) % (unsigned)nthreads);
        check(b, "before handing over");
        if (to != me && inbox_put(to, b)) b->p = NULL;
        else free_block(b, "free");
      } else {
        check(b, "check");
      }
    }
    int tk = atomic_load(&fork_tickets);
    if (tk < MAX_FORKS && now() > t_start + t_budget * tk / MAX_FORKS &&
        atomic_compare_exchange_strong(&fork_tickets, &tk, tk + 1)) {
      pid_t pid = fork();
      if (pid == 0) forked_child(slots, rs);
      if (pid < 0) {
        FAIL("fork failed: errno %d\n", errno);
      } else {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
          FAIL("fork child failed: status 0x%x (signal %d)\n", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        atomic_fetch_add(&forks_done, 1);
      }
    }
  }
  atomic_fetch_add(&ops, myops);
  /* Exit: free most, leave some to outlive this thread. */
  for (int i = 0; i < SLOTS; i++) {
    if (!slots[i].p) continue;
    if (xs(&rs) % 3 == 0) {
      check(&slots[i], "orphaned at thread exit");
      orphan(&slots[i]);
    } else {
      free_block(&slots[i], "free at thread exit");
    }
  }
  free(slots);
  return NULL;
}

static int start(pthread_t *t, int id, uint64_t seed) {
  struct worker_arg *a = malloc(sizeof *a);
  if (!a) return -1;
  a->id = id;
  a->seed = seed;
  int rc = pthread_create(t, NULL, worker, a);
  if (rc) {
    free(a);
    FAIL("pthread_create: %d\n", rc);
  }
  return rc;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3.0;
  nthreads = argc > 2 ? atoi(argv[2]) : 8;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
  if (nthreads < 1 || nthreads > MAXTHREADS) nthreads = 8;
  setenv("LIBC_FATAL_STDERR_", "1", 1);
  const char *req = getenv("HPT_REQUIRE_HPMALLOC");
  if (req && req[0] == '1' && !hpmalloc_version) {
    say("stress: hpmalloc is not the allocator of this process\n");
    say("stress: 0 passed, 1 failed\n");
    return 1;
  }
  say("stress: %d threads, %.1f s, seed %llu, allocator %s %s\n", nthreads, secs, (unsigned long long)seed,
      hpmalloc_version ? "hpmalloc" : "not hpmalloc", hpmalloc_version ? hpmalloc_version() : "");
  for (int i = 0; i < MAXTHREADS; i++) pthread_mutex_init(&inboxes[i].mu, NULL);
  double t0 = now();
  t_start = t0;
  t_budget = secs;
  deadline = t0 + secs;
  pthread_t th[MAXTHREADS];
  int alive[MAXTHREADS] = {0};
  uint64_t rs = seed * 2654435761u + 1;
  for (int i = 0; i < nthreads; i++) alive[i] = start(&th[i], i, xs(&rs)) == 0;
  /* Replace workers as they exit, until the deadline. */
  int replaced = 0;
  while (now() < deadline) {
    for (int i = 0; i < nthreads; i++) {
      if (alive[i] && pthread_tryjoin_np(th[i], NULL) == 0) {
        alive[i] = now() < deadline && start(&th[i], i, xs(&rs)) == 0;
        replaced += alive[i];
      }
    }
    usleep(2000);
  }
  for (int i = 0; i < nthreads; i++)
    if (alive[i]) pthread_join(th[i], NULL);
  double t1 = now();
  if (t1 - t0 > secs + 30) FAIL("run took %.1f s for a %.1f s budget\n", t1 - t0, secs);

  /* Everything still live: orphans and undelivered inbox contents. */
  size_t live = 0;
  struct blk got[64];
  for (int i = 0; i < nthreads; i++) {
    int n;
    while ((n = inbox_take(i, got, 64)) > 0)
      for (int k = 0; k < n; k++) {
        check(&got[k], "left in an inbox");
        orphan(&got[k]);
      }
  }
  size_t live_bytes = 0;
  for (size_t i = 0; i < n_orphans; i++, live++) {
    check(&orphans[i], "live at the end");
    live_bytes += orphans[i].n;
  }
  if (hpmalloc_stats) {
    struct hpmalloc_stats st;
    memset(&st, 0, sizeof st);
    if (hpmalloc_stats(&st, sizeof st) != 0) FAIL("hpmalloc_stats failed\n");
    else if (st.bytes_in_use < live_bytes)
      FAIL("hpmalloc_stats: bytes_in_use %zu < %zu bytes in %zu live blocks\n", st.bytes_in_use, live_bytes, live);
    else
      say("stress: %zu blocks (%zu bytes) live, hpmalloc bytes_in_use %zu\n", live, live_bytes, st.bytes_in_use);
  }
  int heap_rc = 0;
  if (hpmalloc_check_heap) {
    heap_rc = hpmalloc_check_heap();
    if (heap_rc != 0) FAIL("hpmalloc_check_heap() = %d with %zu blocks live\n", heap_rc, live);
  }
  for (size_t i = 0; i < n_orphans; i++) free(orphans[i].p);
  free(orphans);
  if (hpmalloc_check_heap && hpmalloc_check_heap() != 0) FAIL("hpmalloc_check_heap() failed after freeing all\n");
  if (hpmalloc_stats) {
    struct hpmalloc_stats st;
    memset(&st, 0, sizeof st);
    if (hpmalloc_stats(&st, sizeof st) == 0)
      say("stress: hpmalloc: arenas %zu, heaps %zu, in use %zu, mapped %zu, thp %zu, hugetlb %zu, mode %d\n",
          st.n_arenas, st.n_heaps, st.bytes_in_use, st.bytes_mapped, st.bytes_thp, st.bytes_hugetlb,
          st.hugetlb_mode);
    else
      FAIL("hpmalloc_stats failed\n");
  }
  long e = atomic_load(&errors);
  say("stress: %.1f s, %ld ops, %ld cross-thread frees, %ld reallocs, %ld threads, %ld forks, %zu blocks live at "
      "the end, %ld errors\n",
      t1 - t0, atomic_load(&ops), atomic_load(&cross_frees), atomic_load(&reallocs), atomic_load(&threads_started),
      atomic_load(&forks_done), live, e);
  if (atomic_load(&forks_done) == 0) say("stress: note: no fork happened in this run\n");
  say("stress: %d passed, %d failed\n", e == 0, e != 0);
  return e == 0 ? 0 : 1;
}
