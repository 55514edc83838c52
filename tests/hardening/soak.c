/* SPDX-License-Identifier: MIT */
/* soak: a bounded load test (issue 6; `make check-soak`, not in `make check`).
 *
 * For SOAK_SECONDS (default 60) worker threads allocate and free blocks of
 * random sizes (17 B .. 4.5 MiB, mostly small) in a shared table of slots,
 * so a block is as often freed by another thread as by its own; some
 * blocks are grown or shrunk with realloc, some come from calloc (checked
 * zero) or memalign (checked aligned).  Each worker lives for a random
 * number of operations and exits; the main thread starts a new one in its
 * place (thread creation and exit all along).  Every 2 s the main thread
 * validates the heap (hpmalloc_check_heap, with the workers running);
 * every 5 s the main thread and, in turn, a worker fork: the child
 * allocates, frees, validates its heap and checks the blocks it inherited.
 *
 * Every block carries its size and a tag derived from its address in its
 * first 16 bytes and the tag in its last byte; they are checked when the
 * block is freed.  When the time is up the workers stop, every block is
 * freed, malloc_trim(0) runs, and the memory the process holds (VmRSS plus
 * HugetlbPages) must be back within a bound of what it held before the
 * load: per arena two huge pages (of the hugetlb size if hugetlb pages
 * were had, else 2 MiB) and 16 MiB for the rest; and the bytes in use
 * (hpmalloc_stats) at most 64 KiB and 16 KiB per arena, the arenas' own
 * structures.  Prints one line of results; exit 0 on success.
 *
 * Environment: SOAK_SECONDS, SOAK_THREADS (default 8).  Linked with
 * -lhpmalloc.  MIT licence.  */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

enum { NSLOTS = 1 << 14, MAX_THREADS = 64 };

static _Atomic(unsigned char *) *slots;
static atomic_bool stop;
static atomic_ulong ops, forks_done, checks_done, threads_started;
static atomic_ulong live_bytes;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("soak FAILED: ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  fflush(stdout);
  _exit(1);
}

static long status_kb(const char *key) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *l = strstr(buf, key);
  return l ? strtol(l + strlen(key), NULL, 10) : 0;
}

/* Memory the process holds: resident pages plus hugetlb pages (which
   VmRSS does not count).  */
static size_t held_bytes(void) { return (size_t)(status_kb("VmRSS:") + status_kb("HugetlbPages:")) * KiB; }

static uint64_t xs(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t tag_of(const void *p, size_t n) { return ((uintptr_t)p * 0x9e3779b97f4a7c15ull) ^ n; }

/* Blocks are at least 17 bytes: size and tag, and the tag's low byte last.  */
static void stamp(unsigned char *p, size_t n) {
  uint64_t t = tag_of(p, n);
  memcpy(p, &n, sizeof n);
  memcpy(p + 8, &t, sizeof t);
  p[n - 1] = (unsigned char)t;
}

static size_t check_block(const unsigned char *p, const char *when) {
  size_t n;
  uint64_t t;
  memcpy(&n, p, sizeof n);
  memcpy(&t, p + 8, sizeof t);
  if (n < 17 || n > 64 * MiB || t != tag_of(p, n) || p[n - 1] != (unsigned char)t)
    fail("%s: block %p damaged (size word %zu, tag %#llx)", when, (const void *)p, n, (unsigned long long)t);
  return n;
}

static size_t pick_size(uint64_t *s) {
  uint64_t r = xs(s) % 1000;
  if (r < 750) return 17 + xs(s) % 500;
  if (r < 945) return 512 + xs(s) % (64 * KiB);
  if (r < 995) return 64 * KiB + xs(s) % (448 * KiB);
  return 512 * KiB + xs(s) % (4 * MiB);
}

static void release(unsigned char *p) {
  size_t n = check_block(p, "free");
  atomic_fetch_sub_explicit(&live_bytes, n, memory_order_relaxed);
  free(p);
}

static unsigned char *make(uint64_t *s, size_t n) {
  unsigned char *p;
  uint64_t how = xs(s) % 100;
  if (how < 5) {
    p = calloc(1, n);
    if (p)
      for (size_t i = 0; i < n; i += 61)
        if (p[i]) fail("calloc(%zu): byte %zu is %#x", n, i, p[i]);
  } else if (how < 8) {
    size_t align = (size_t)64 << (xs(s) % 10); /* 64 B .. 32 KiB */
    p = memalign(align, n);
    if (p && ((uintptr_t)p & (align - 1))) fail("memalign(%zu) gave %p", align, (void *)p);
  } else {
    p = malloc(n);
  }
  if (!p) fail("allocation of %zu bytes failed (errno %d)", n, errno);
  stamp(p, n);
  atomic_fetch_add_explicit(&live_bytes, n, memory_order_relaxed);
  return p;
}

/* A child of fork: the allocator works, the inherited blocks are intact.  */
static void forked_child(void) {
  void *p[200];
  for (int i = 0; i < 200; i++) {
    p[i] = malloc(16 + (size_t)i * 97);
    if (!p[i]) _exit(3);
    memset(p[i], i, 16 + (size_t)i * 97);
  }
  for (int i = 0; i < 200; i += 2) free(p[i]);
  size_t seen = 0;
  for (size_t i = 0; i < NSLOTS; i += 7) {
    unsigned char *b = atomic_load(&slots[i]);
    if (b) check_block(b, "in a fork child"), seen++;
  }
  hpmalloc_check_heap();
  for (int i = 1; i < 200; i += 2) free(p[i]);
  malloc_trim(0);
  hpmalloc_check_heap();
  _exit(0);
}

static void do_fork(void) {
  pid_t pid = fork();
  if (pid < 0) fail("fork: %s", strerror(errno));
  if (pid == 0) forked_child();
  int st;
  if (waitpid(pid, &st, 0) != pid) fail("waitpid: %s", strerror(errno));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail("a fork child %s %d", WIFSIGNALED(st) ? "died of signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  atomic_fetch_add(&forks_done, 1);
}

struct worker {
  pthread_t th;
  uint64_t seed;
  atomic_bool running;
  atomic_bool fork_now;
};

static void *work(void *arg) {
  struct worker *w = arg;
  uint64_t s = w->seed;
  unsigned long life = 2000 + xs(&s) % 200000; /* operations before this thread exits */
  for (unsigned long i = 0; i < life && !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
    size_t k = xs(&s) % NSLOTS;
    unsigned char *p = atomic_exchange(&slots[k], NULL);
    if (p) {
      if (xs(&s) % 10 == 0) { /* realloc, then keep it */
        size_t old = check_block(p, "realloc");
        size_t n = pick_size(&s);
        unsigned char *q = realloc(p, n);
        if (!q) fail("realloc(%zu) failed", n);
        /* the first bytes moved with the block */
        size_t oldn;
        memcpy(&oldn, q, sizeof oldn);
        if (oldn != old) fail("realloc lost the block's first bytes");
        stamp(q, n);
        atomic_fetch_add_explicit(&live_bytes, n - old, memory_order_relaxed);
        unsigned char *expected = NULL;
        if (!atomic_compare_exchange_strong(&slots[k], &expected, q)) release(q);
      } else {
        release(p);
      }
    } else {
      p = make(&s, pick_size(&s));
      unsigned char *expected = NULL;
      if (!atomic_compare_exchange_strong(&slots[k], &expected, p)) release(p);
    }
    atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
    if (atomic_exchange_explicit(&w->fork_now, false, memory_order_relaxed)) do_fork();
  }
  w->seed = s;
  atomic_store(&w->running, false);
  return NULL;
}

static void start(struct worker *w, uint64_t seed) {
  w->seed = seed;
  atomic_store(&w->running, true);
  atomic_store(&w->fork_now, false);
  int e = pthread_create(&w->th, NULL, work, w);
  if (e) fail("pthread_create: %s", strerror(e));
  atomic_fetch_add(&threads_started, 1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double secs = getenv("SOAK_SECONDS") ? atof(getenv("SOAK_SECONDS")) : 60;
  int nthreads = getenv("SOAK_THREADS") ? atoi(getenv("SOAK_THREADS")) : 8;
  if (nthreads < 1 || nthreads > MAX_THREADS) nthreads = 8;
  /* the table is not the allocator's */
  slots = mmap(NULL, NSLOTS * sizeof *slots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED) fail("mmap");
  free(malloc(1)); /* the allocator initialised: measure after */
  struct hpmalloc_stats st;
  hpmalloc_stats(&st, sizeof st);
  size_t before = held_bytes(), peak = before, peak_hugetlb = 0;
  struct worker w[MAX_THREADS];
  uint64_t seed = 0x1234567887654321ull ^ (uint64_t)getpid();
  for (int i = 0; i < nthreads; i++) start(&w[i], xs(&seed));
  double t0 = now(), next_check = t0 + 2, next_fork = t0 + 5;
  int fork_turn = 0;
  while (now() - t0 < secs) {
    usleep(20000);
    for (int i = 0; i < nthreads; i++) {
      if (!atomic_load(&w[i].running)) {
        pthread_join(w[i].th, NULL);
        start(&w[i], xs(&seed));
      }
    }
    size_t h = held_bytes();
    if (h > peak) peak = h;
    hpmalloc_stats(&st, sizeof st);
    if (st.bytes_hugetlb > peak_hugetlb) peak_hugetlb = st.bytes_hugetlb;
    if (now() >= next_check) {
      hpmalloc_check_heap();
      atomic_fetch_add(&checks_done, 1);
      next_check += 2;
    }
    if (now() >= next_fork) {
      if (fork_turn++ % 2 == 0) do_fork(); /* from the main thread */
      else atomic_store(&w[fork_turn % nthreads].fork_now, true); /* from a worker, mid-allocation */
      next_fork += 5;
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < nthreads; i++) pthread_join(w[i].th, NULL);
  double elapsed = now() - t0;
  size_t live = atomic_load(&live_bytes), nlive = 0;
  for (size_t i = 0; i < NSLOTS; i++) {
    unsigned char *p = atomic_exchange(&slots[i], NULL);
    if (p) release(p), nlive++;
  }
  hpmalloc_check_heap();
  size_t at_end = held_bytes();
  malloc_trim(0);
  hpmalloc_check_heap();
  size_t after = held_bytes();
  hpmalloc_stats(&st, sizeof st);
  /* the largest page a heap's top may end on: a hugetlb page if any was
     had, else a THP-sized one (2 MiB also bounds mode 0's padding) */
  size_t page = peak_hugetlb && st.huge_page_size > 2 * MiB ? st.huge_page_size : 2 * MiB;
  size_t bound = before + st.n_arenas * 2 * page + 16 * MiB;
  printf("soak: mode %d, %.0f s, %d threads at a time (%lu started), %lu operations (%.0f/s), %lu heap checks, %lu "
         "forks; at the end %zu blocks (%zu MiB) live; %zu arenas, %zu heaps; held (RSS + hugetlb) before %zu MiB, "
         "peak %zu MiB, after freeing %zu MiB, after malloc_trim %zu MiB (bound %zu MiB); fallbacks hugetlb %zu, thp "
         "%zu\n",
         st.hugetlb_mode, elapsed, nthreads, atomic_load(&threads_started), atomic_load(&ops),
         (double)atomic_load(&ops) / elapsed, atomic_load(&checks_done), atomic_load(&forks_done), nlive, live >> 20,
         st.n_arenas, st.n_heaps, before >> 20, peak >> 20, at_end >> 20, after >> 20, bound >> 20,
         st.fallbacks_hugetlb, st.fallbacks_thp);
  if (atomic_load(&forks_done) == 0 && secs >= 10) fail("no fork happened");
  /* what stays in use is the allocator's own: each thread arena's
     structure (about 9 KiB with its inbox) lies in its first heap and
     counts in use, as glibc counts its arenas'; a leak shows above that */
  size_t in_use_bound = 64 * KiB + st.n_arenas * 16 * KiB;
  if (st.bytes_in_use > in_use_bound)
    fail("%zu bytes still in use after every block was freed (bound %zu: 64 KiB and 16 KiB per arena)",
         st.bytes_in_use, in_use_bound);
  if (after > bound) fail("memory did not go back to the system: %zu MiB held, bound %zu MiB", after >> 20, bound >> 20);
  return 0;
}
