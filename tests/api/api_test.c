/* SPDX-License-Identifier: MIT */
/* hpmalloc API tests: glibc 2.36 malloc semantics through the public API
 * only, plus hpmalloc's extensions.  MIT licence.
 *
 * Built three ways (see mk/20-api.mk):
 *   -DHPT_LINKED   linked against libhpmalloc (dynamically or -static):
 *                  the extensions are strong references;
 *   (plain)        linked against nothing: the extensions are weak
 *                  references, so the same binary runs on glibc's malloc
 *                  (hpmalloc-specific tests skipped) and under
 *                  LD_PRELOAD=libhpmalloc.so (HPT_REQUIRE_HPMALLOC=1 makes
 *                  a preload that did not take effect a failure).
 *
 * Every expectation below is what glibc 2.36's malloc/malloc.c does, so the
 * plain binary passes on glibc; tests marked T_HPM are hpmalloc's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
/* mallinfo() is deprecated but still part of the API under test. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* Reading a block after a (failed) realloc or after free is deliberate here. */
#if defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#include "tap.h"

/* C23, not declared by glibc 2.36's headers. */
void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);

#ifdef HPT_LINKED
#define HAVE_FN(f) 1
#else
#define HAVE_FN(f) ((f) != NULL)
#pragma weak hpmalloc_version
#pragma weak hpmalloc_stats
#pragma weak hpmalloc_check_heap
#pragma weak free_sized
#pragma weak free_aligned_sized
#endif

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

static size_t pagesize;
static double slow = 1.0; /* time limits are multiplied by this under valgrind */

static int is_aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

static size_t next_pow2(size_t a) {
  size_t r = 1;
  while (r < a) r <<= 1;
  return r;
}

static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = (unsigned char)(seed + i * 7u);
}
static int verify(const void *p, size_t n, unsigned seed) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != (unsigned char)(seed + i * 7u)) return 0;
  return 1;
}
/* For big blocks: pattern on the first and last 4 KiB and every 4 KiB. */
static void fill_sparse(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  if (n <= 16 * KiB) { fill(p, n, seed); return; }
  for (size_t i = 0; i < n; i += 4096) c[i] = (unsigned char)(seed + i / 4096);
  fill(c, 4 * KiB, seed);
  fill(c + n - 4 * KiB, 4 * KiB, seed + 1);
}
static int verify_sparse(const void *p, size_t n, unsigned seed) {
  const unsigned char *c = p;
  if (n <= 16 * KiB) return verify(p, n, seed);
  for (size_t i = 4 * KiB; i + 4 * KiB < n; i += 4096)
    if (c[i] != (unsigned char)(seed + i / 4096)) return 0;
  return verify(c, 4 * KiB, seed) && verify(c + n - 4 * KiB, 4 * KiB, seed + 1);
}

static size_t rss_bytes(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *s = strchr(buf, ' ');
  return s ? (size_t)strtoull(s + 1, NULL, 10) * pagesize : 0;
}

/* Bytes of hugetlbfs pages the process holds (not counted in RSS).  */
static size_t hugetlb_bytes(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0, v;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "Private_Hugetlb: %zu kB", &v) == 1) kb += v;
    else if (sscanf(line, "Shared_Hugetlb: %zu kB", &v) == 1) kb += v;
  }
  fclose(f);
  return kb * KiB;
}

static int get_hpm_stats(struct hpmalloc_stats *st) {
  memset(st, 0, sizeof *st);
  return hpmalloc_stats(st, sizeof *st);
}

/* The hugetlb mode asked for in GLIBC_TUNABLES, or -1 when not set. */
static int env_hugetlb_mode(void) {
  const char *t = getenv("GLIBC_TUNABLES");
  if (!t) return -1;
  const char *k = strstr(t, "malloc.hugetlb=");
  if (!k) return -1;
  return atoi(k + strlen("malloc.hugetlb="));
}

/* ------------------------------------------------------------------ */

/* The huge page size hpmalloc works with (0 in mode 0, or not hpmalloc). */
static size_t huge_page(void) {
  if (!tap_have_hpm) return 0;
  struct hpmalloc_stats st;
  memset(&st, 0, sizeof st);
  if (hpmalloc_stats(&st, sizeof st) != 0) return 0;
  return st.huge_page_size;
}

/* glibc maps a chunk directly only when the request is at or above the
   mmap threshold AND the top chunk cannot serve it (sysmalloc); a request
   of `extra` bytes more than the top (mallinfo2's keepcost) cannot.  In
   hpmalloc's huge-page modes a mapped chunk is a whole number of huge pages
   and one whose rounding would waste too much comes from the heap instead,
   so the size is rounded to a whole number of huge pages, less the chunk
   header (8 bytes) and a little; and at least two, since those modes raise
   the threshold to one huge page. */
static size_t beyond_top(size_t extra) {
  struct mallinfo2 mi = mallinfo2();
  size_t n = mi.keepcost + extra, hp = huge_page();
  if (hp) n = (n + 32 + hp - 1) / hp * hp - 32;
  if (hp && n < 2 * hp - 32) n = 2 * hp - 32;
  return n;
}

static void test_mallinfo2_mmapped(void) {
  /* First test, in a child: no mmapped chunk was freed yet, so the
     dynamic threshold is still at its default of 128 KiB. */
  struct mallinfo2 a = mallinfo2();
  size_t n = beyond_top(MiB);
  void *p = opaque(malloc(n));
  REQUIRE(p != NULL);
  memset(p, 1, n);
  struct mallinfo2 b = mallinfo2();
  CHECK(b.hblks == a.hblks + 1, "hblks %zu -> %zu after malloc(%zu) (top was %zu)", a.hblks, b.hblks, n, a.keepcost);
  CHECK(b.hblkhd >= a.hblkhd + n, "hblkhd %zu -> %zu", a.hblkhd, b.hblkhd);
  struct mallinfo old = mallinfo();
  CHECK((size_t)old.hblks == b.hblks, "mallinfo hblks %d vs mallinfo2 %zu", old.hblks, b.hblks);
  free(p);
  struct mallinfo2 c = mallinfo2();
  CHECK(c.hblks == a.hblks, "after free hblks %zu, before %zu", c.hblks, a.hblks);
  CHECK(c.hblkhd == a.hblkhd, "after free hblkhd %zu, before %zu", c.hblkhd, a.hblkhd);
}

static void test_mallinfo2_counts(void) {
  struct mallinfo2 a = mallinfo2();
  CHECK(a.uordblks + a.fordblks == a.arena, "uordblks %zu + fordblks %zu != arena %zu", a.uordblks,
        a.fordblks, a.arena);
  const size_t n = 10000;
  void *p = opaque(malloc(n));
  REQUIRE(p != NULL);
  struct mallinfo2 b = mallinfo2();
  CHECK(b.uordblks >= a.uordblks + n, "uordblks %zu -> %zu after malloc(%zu)", a.uordblks, b.uordblks, n);
  CHECK(b.uordblks + b.fordblks == b.arena, "uordblks+fordblks %zu != arena %zu", b.uordblks + b.fordblks,
        b.arena);
  CHECK(b.keepcost <= b.fordblks, "keepcost %zu > fordblks %zu", b.keepcost, b.fordblks);
  CHECK(b.fsmblks <= b.fordblks, "fsmblks %zu > fordblks %zu", b.fsmblks, b.fordblks);
  free(p);
  struct mallinfo2 c = mallinfo2();
  CHECK(c.uordblks + n <= b.uordblks, "uordblks %zu -> %zu after free of %zu", b.uordblks, c.uordblks, n);
  struct mallinfo o = mallinfo();
  CHECK((size_t)o.uordblks == (c.uordblks & 0xffffffffu) || (size_t)(unsigned)o.uordblks == (size_t)(unsigned)c.uordblks,
        "mallinfo uordblks %d vs mallinfo2 %zu", o.uordblks, c.uordblks);
}

static void test_malloc_zero(void) {
  void *a = opaque(malloc(0)), *b = opaque(malloc(0));
  CHECK(a != NULL);
  CHECK(b != NULL);
  CHECK(a != b, "two malloc(0) returned the same pointer");
  CHECK(is_aligned(a, 16));
  free(a);
  free(b);
  void *p = opaque(malloc(8));
  CHECK(p != NULL && is_aligned(p, 16), "malloc(8) = %p", p);
  CHECK(malloc_usable_size(p) >= 8);
  free(p);
}

#define NSIZES 4097
static void *live[NSIZES];
static void test_malloc_sizes(void) {
  for (size_t n = 0; n < NSIZES; n++) {
    void *p = live[n] = opaque(malloc(n));
    if (!CHECK(p != NULL, "malloc(%zu)", n)) continue;
    CHECK(is_aligned(p, 16), "malloc(%zu) = %p", n, p);
    CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu", malloc_usable_size(p), n);
    fill(p, n, (unsigned)n);
  }
  /* All live at once: a pattern that changed means two blocks overlap. */
  for (size_t n = 0; n < NSIZES; n++)
    if (live[n]) CHECK(verify(live[n], n, (unsigned)n), "block of %zu bytes overwritten", n);
  for (size_t n = 0; n < NSIZES; n += 2) free(live[n]);
  for (size_t n = 1; n < NSIZES; n += 2)
    if (live[n]) CHECK(verify(live[n], n, (unsigned)n), "block of %zu bytes overwritten after frees", n);
  for (size_t n = 1; n < NSIZES; n += 2) free(live[n]);
}

static void test_malloc_pow2(void) {
  for (size_t n = 1; n <= 64 * MiB; n <<= 1) {
    for (int d = -1; d <= 1; d++) {
      size_t sz = n + (size_t)d;
      void *p = opaque(malloc(sz));
      if (!CHECK(p != NULL, "malloc(%zu)", sz)) continue;
      CHECK(is_aligned(p, 16), "malloc(%zu) = %p", sz, p);
      size_t u = malloc_usable_size(p);
      CHECK(u >= sz, "usable %zu < %zu", u, sz);
      memset(p, 0xa5, sz);
      if (sz) CHECK(((unsigned char *)p)[sz - 1] == 0xa5);
      free(p);
    }
  }
}

/* A /proc/meminfo field in bytes, 0 when absent.  */
static size_t meminfo_bytes(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0, klen = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, klen) == 0 && line[klen] == ':') kb = (size_t)strtoull(line + klen + 1, NULL, 10);
  fclose(f);
  return kb * KiB;
}

/* Under the kernel's default overcommit heuristic (vm.overcommit_memory =
   0) one allocation larger than RAM + swap is refused: malloc is NULL with
   ENOMEM, as glibc's, instead of an address the program cannot touch.  */
static void test_malloc_beyond_commit(void) {
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  int policy = -1;
  if (f) {
    if (fscanf(f, "%d", &policy) != 1) policy = -1;
    fclose(f);
  }
  if (policy != 0) SKIP_TEST("vm.overcommit_memory is %d, not the heuristic (0)", policy);
  size_t ram = meminfo_bytes("MemTotal"), swap = meminfo_bytes("SwapTotal");
  REQUIRE(ram > 0);
  size_t big = 2 * (ram + swap);
  errno = 0;
  void *p = opaque(malloc(opaque_size(big)));
  CHECK(p == NULL && errno == ENOMEM, "malloc(%zu GiB) with %zu GiB of RAM + swap: %p errno %d", big >> 30,
        (ram + swap) >> 30, p, errno);
  free(p);
  errno = 0;
  p = opaque(calloc(opaque_size(big / 4096), 4096));
  CHECK(p == NULL && errno == ENOMEM, "calloc of %zu GiB: %p errno %d", big >> 30, p, errno);
  free(p);
  p = opaque(malloc(100));
  CHECK(p != NULL, "malloc(100) after the refusals");
  free(p);
}

static void test_malloc_impossible(void) {
  const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX,
                          (size_t)PTRDIFF_MAX - 4096, SIZE_MAX / 2 + 12345};
  struct mallinfo2 a = mallinfo2();
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    errno = 0;
    double t0 = tap_now();
    void *p = opaque(malloc(opaque_size(sizes[i])));
    double dt = tap_now() - t0;
    CHECK(p == NULL, "malloc(%zu) = %p", sizes[i], p);
    CHECK(errno == ENOMEM, "malloc(%zu): errno %d", sizes[i], errno);
    CHECK(dt < 0.2 * slow, "malloc(%zu) took %.3f s", sizes[i], dt);
  }
  struct mallinfo2 b = mallinfo2();
  CHECK(b.hblks == a.hblks && b.arena <= a.arena + MiB, "failed requests changed the heap: arena %zu -> %zu",
        a.arena, b.arena);
}

static void test_calloc(void) {
  void *a = opaque(calloc(0, 0)), *b = opaque(calloc(1, 0)), *c = opaque(calloc(0, 1));
  CHECK(a && b && c, "calloc of zero bytes returned NULL");
  free(a);
  free(b);
  free(c);
  /* Dirty the heap, free everything, calloc must still return zeroes. */
  enum { N = 3000 };
  static void *ptr[N];
  static size_t sz[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      size_t n = (i % 10 == 0) ? rnd_range(1, 300000) : rnd_range(1, 5000);
      ptr[i] = opaque(malloc(n));
      if (ptr[i]) memset(ptr[i], 0xff, malloc_usable_size(ptr[i]));
    }
    for (int i = 0; i < N; i++) {
      int j = (int)rnd_range(0, N - 1);
      void *t = ptr[i];
      ptr[i] = ptr[j];
      ptr[j] = t;
    }
    for (int i = 0; i < N; i++) free(ptr[i]);
    for (int i = 0; i < N; i++) {
      sz[i] = (i % 10 == 0) ? rnd_range(1, 300000) : rnd_range(1, 5000);
      size_t nmemb = (i & 1) ? sz[i] : 1, each = (i & 1) ? 1 : sz[i];
      ptr[i] = opaque(calloc(nmemb, each));
      if (!CHECK(ptr[i] != NULL, "calloc(%zu, %zu)", nmemb, each)) continue;
      CHECK(is_aligned(ptr[i], 16));
      const unsigned char *q = ptr[i];
      size_t bad = 0;
      for (size_t k = 0; k < sz[i]; k++) bad |= q[k];
      CHECK(bad == 0, "calloc(%zu) returned non-zero bytes (round %d)", sz[i], round);
      memset(ptr[i], 0xee, sz[i]);
    }
    for (int i = 0; i < N; i++) free(ptr[i]);
  }
  void *big = opaque(calloc(4, 8 * MiB));
  REQUIRE(big != NULL);
  const uint64_t *w = big;
  uint64_t acc = 0;
  for (size_t k = 0; k < 32 * MiB / 8; k += 511) acc |= w[k];
  CHECK(acc == 0, "calloc(4, 8 MiB) not zero");
  free(big);
}

static void test_calloc_overflow(void) {
  const size_t pairs[][2] = {{SIZE_MAX / 2 + 1, 2}, {SIZE_MAX, SIZE_MAX}, {(size_t)1 << 32, (size_t)1 << 32},
                             {1, SIZE_MAX}, {SIZE_MAX, 1}, {(size_t)PTRDIFF_MAX / 2 + 1, 2},
                             {65537, 281470681808895ull}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    errno = 0;
    double t0 = tap_now();
    void *p = opaque(calloc(opaque_size(pairs[i][0]), opaque_size(pairs[i][1])));
    CHECK(p == NULL, "calloc(%zu, %zu) = %p", pairs[i][0], pairs[i][1], p);
    CHECK(errno == ENOMEM, "calloc(%zu, %zu): errno %d", pairs[i][0], pairs[i][1], errno);
    CHECK(tap_now() - t0 < 0.2 * slow, "calloc(%zu, %zu) slow", pairs[i][0], pairs[i][1]);
  }
}

static void test_reallocarray(void) {
  int *p = opaque(reallocarray(NULL, 10, sizeof(int)));
  REQUIRE(p != NULL);
  for (int i = 0; i < 10; i++) p[i] = i * 3;
  errno = 0;
  void *q = opaque(reallocarray(p, opaque_size(SIZE_MAX / 2), 3));
  CHECK(q == NULL);
  CHECK(errno == ENOMEM, "errno %d", errno);
  errno = 0;
  q = opaque(reallocarray(p, opaque_size((size_t)1 << 33), (size_t)1 << 31));
  CHECK(q == NULL && errno == ENOMEM, "q %p errno %d", q, errno);
  int ok = 1;
  for (int i = 0; i < 10; i++) ok &= p[i] == i * 3;
  CHECK(ok, "contents changed by a failed reallocarray");
  p = opaque(reallocarray(p, 1000, sizeof(int)));
  REQUIRE(p != NULL);
  ok = 1;
  for (int i = 0; i < 10; i++) ok &= p[i] == i * 3;
  CHECK(ok, "contents lost by reallocarray growth");
  free(p);
}

static void test_realloc_basic(void) {
  void *p = opaque(realloc(NULL, 100));
  REQUIRE(p != NULL);
  CHECK(is_aligned(p, 16));
  CHECK(malloc_usable_size(p) >= 100);
  free(p);

  /* realloc(p, 0) frees p and returns NULL (glibc, REALLOC_ZERO_BYTES_FREES);
     a 100000-byte block is neither cached nor mmapped, so the arena's
     in-use count shows the free. */
  p = opaque(malloc(100000));
  REQUIRE(p != NULL);
  struct mallinfo2 a = mallinfo2();
  errno = 1234;
  void *r = opaque(realloc(p, 0));
  CHECK(r == NULL, "realloc(p, 0) = %p", r);
  CHECK(errno == 1234, "realloc(p, 0) changed errno to %d", errno);
  struct mallinfo2 b = mallinfo2();
  CHECK(b.uordblks + 100000 <= a.uordblks, "realloc(p, 0) did not free: uordblks %zu -> %zu", a.uordblks,
        b.uordblks);
  r = opaque(realloc(opaque(malloc(10)), 0));
  CHECK(r == NULL);

  /* Shrinking a heap chunk happens in place. */
  p = opaque(malloc(10000));
  REQUIRE(p != NULL);
  fill(p, 10000, 3);
  void *q = opaque(realloc(p, 5000));
  /* (memcheck's own realloc always moves; an allocator may do the same
     when it runs under valgrind) */
  CHECK(q == p || tap_under_valgrind(), "shrink of a heap chunk moved it");
  CHECK(verify(q, 5000, 3));
  /* Growing: contents kept, wherever it lands. */
  q = opaque(realloc(q, 20000));
  REQUIRE(q != NULL);
  CHECK(verify(q, 5000, 3));
  free(q);

  /* Failure leaves the block alone. */
  p = opaque(malloc(200));
  REQUIRE(p != NULL);
  fill(p, 200, 9);
  const size_t bad[] = {SIZE_MAX, (size_t)PTRDIFF_MAX + 1, SIZE_MAX - 64};
  for (size_t i = 0; i < 3; i++) {
    errno = 0;
    q = opaque(realloc(p, opaque_size(bad[i])));
    CHECK(q == NULL, "realloc(p, %zu) = %p", bad[i], q);
    CHECK(errno == ENOMEM, "realloc(p, %zu): errno %d", bad[i], errno);
  }
  CHECK(verify(p, 200, 9), "failed realloc changed the block");
  free(p);
}

static void test_realloc_mmapped(void) {
  /* Beyond any mmap threshold (32 MiB is the maximum dynamic one). */
  const size_t steps[] = {200 * KiB, MiB, 40 * MiB, 33 * MiB, 64 * MiB, 300 * KiB, 129 * KiB, 50, 3 * MiB, 10};
  size_t cur = 100;
  unsigned char *p = opaque(malloc(cur));
  REQUIRE(p != NULL);
  fill_sparse(p, cur, 11);
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    size_t n = steps[i];
    unsigned char *q = opaque(realloc(p, n));
    if (!CHECK(q != NULL, "realloc(%zu -> %zu)", cur, n)) break;
    CHECK(is_aligned(q, 16));
    CHECK(malloc_usable_size(q) >= n);
    size_t keep = cur < n ? cur : n;
    if (keep <= 16 * KiB) {
      CHECK(verify(q, keep, 11), "realloc %zu -> %zu lost contents", cur, n);
    } else if (cur <= n) {
      CHECK(verify_sparse(q, cur, 11), "realloc %zu -> %zu lost contents", cur, n);
    } else {
      CHECK(verify(q, 4 * KiB, 11), "realloc %zu -> %zu lost the head", cur, n);
    }
    p = q;
    cur = n;
    fill_sparse(p, cur, 11);
  }
  free(p);
}

static void test_realloc_random(void) {
  enum { SLOTS = 64 };
  static unsigned char *p[SLOTS];
  static size_t n[SLOTS], filled[SLOTS];
  for (int it = 0; it < 6000; it++) {
    int s = (int)rnd_range(0, SLOTS - 1);
    size_t want;
    uint64_t r = rnd() % 100;
    if (r < 60) want = rnd_range(1, 1024);
    else if (r < 90) want = rnd_range(1, 100000);
    else if (r < 99) want = rnd_range(100000, 2 * MiB);
    else want = rnd_range(33 * MiB, 36 * MiB);
    if (p[s]) {
      size_t keep = filled[s] < want ? filled[s] : want;
      unsigned char *q = opaque(realloc(p[s], want));
      if (!CHECK(q != NULL, "realloc(%zu)", want)) continue;
      CHECK(verify(q, keep, (unsigned)s), "realloc %zu -> %zu lost contents", n[s], want);
      p[s] = q;
    } else {
      p[s] = opaque(realloc(NULL, want));
      if (!CHECK(p[s] != NULL)) continue;
    }
    n[s] = want;
    CHECK(is_aligned(p[s], 16) && malloc_usable_size(p[s]) >= want);
    filled[s] = want <= 16 * KiB ? want : 4 * KiB;
    fill(p[s], filled[s], (unsigned)s);
  }
  for (int s = 0; s < SLOTS; s++) {
    free(p[s]);
    p[s] = NULL;
  }
}

/* A thread's arena grows by heaps; the last chunk of a full heap sits right
   before the heap's fenceposts.  Resizing and freeing it must work (a check
   of the next chunk's size once took the fencepost for corruption:
   "realloc(): invalid next size").  */
static void *heap_end_thread(void *arg) {
  size_t to = *(size_t *)arg;
  char *prev = opaque(malloc(40)), *p;
  for (long i = 0; i < 4000000; i++) {
    p = opaque(malloc(40));
    if (!p) return (void *)"malloc failed";
    p[0] = 1;
    if (i > 10 && (uintptr_t)p - (uintptr_t)prev != 48) {
      /* prev is the last chunk of the heap that just filled up */
      memset(prev, 0x5c, 40);
      char *q = opaque(realloc(prev, to));
      if (!q) return (void *)"realloc failed";
      for (size_t k = 0; k < 24 && k < to; k++)
        if ((unsigned char)q[k] != 0x5c) return (void *)"realloc lost contents";
      free(q);
      return NULL;
    }
    prev = p;
  }
  return (void *)"skip";
}

static void test_realloc_heap_end(void) {
  const size_t tos[] = {24, 40, 100, 5000};
  for (size_t i = 0; i < sizeof tos / sizeof tos[0]; i++) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      pthread_t t;
      void *ret = NULL;
      size_t to = tos[i];
      if (pthread_create(&t, NULL, heap_end_thread, &to) != 0) _exit(3);
      pthread_join(t, &ret);
      _exit(ret == NULL ? 0 : strcmp(ret, "skip") == 0 ? 4 : 5);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 4) SKIP_TEST("no heap switch within 4M blocks of 48 bytes");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "realloc(last chunk of a full heap, %zu): status 0x%x (signal %d)",
          tos[i], st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
}

/* memalign/aligned_alloc as glibc 2.36's _mid_memalign: alignment <= 16 is
   malloc; a non-power-of-two is rounded up to the next power of two; an
   alignment above SIZE_MAX/2+1 is EINVAL. */
static void check_memalign_one(const char *fn, void *p, size_t align, size_t n) {
  size_t eff = align <= 16 ? 16 : next_pow2(align);
  if (!CHECK(p != NULL, "%s(%zu, %zu) = NULL errno %d", fn, align, n, errno)) return;
  CHECK(is_aligned(p, eff), "%s(%zu, %zu) = %p not %zu-aligned", fn, align, n, p, eff);
  CHECK(malloc_usable_size(p) >= n, "%s(%zu, %zu): usable %zu", fn, align, n, malloc_usable_size(p));
  if (n) {
    memset(p, 0x3c, n);
  }
}

static void test_memalign_family(void) {
  static size_t aligns[200];
  size_t na = 0;
  for (size_t a = 1; a <= 64; a++) aligns[na++] = a;
  for (size_t a = 128; a <= MiB; a <<= 1) aligns[na++] = a;
  const size_t odd[] = {96, 100, 1000, 3000, 4097, 65537, 1000000, 48, 80, 130};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) aligns[na++] = odd[i];
  const size_t sizes[] = {0, 1, 17, 1000, 5000, 200000};
  static void *keep[200 * 3];
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t n = sizes[si], nk = 0;
    for (size_t ai = 0; ai < na; ai++) {
      size_t a = aligns[ai];
      void *p = opaque(memalign(a, n));
      check_memalign_one("memalign", p, a, n);
      keep[nk++] = p;
      p = opaque(aligned_alloc(a, n));
      check_memalign_one("aligned_alloc", p, a, n);
      keep[nk++] = p;
      void *m = (void *)0x1;
      errno = 4321;
      int rc = posix_memalign(&m, a, n);
      int valid = a % sizeof(void *) == 0 && ((a / sizeof(void *)) & (a / sizeof(void *) - 1)) == 0;
      if (valid) {
        CHECK(rc == 0, "posix_memalign(%zu, %zu) = %d", a, n, rc);
        if (rc == 0) check_memalign_one("posix_memalign", m, a, n);
        keep[nk++] = rc == 0 ? m : NULL;
      } else {
        CHECK(rc == EINVAL, "posix_memalign(align %zu) = %d, want EINVAL", a, rc);
        CHECK(m == (void *)0x1, "posix_memalign(align %zu) wrote *memptr on EINVAL", a);
      }
      CHECK(errno == 4321, "posix_memalign(%zu, %zu) changed errno to %d", a, n, errno);
    }
    /* Free in a scrambled order so aligned chunks' leftovers get merged. */
    for (size_t i = 0; i < nk; i++) {
      size_t j = rnd_range(0, nk - 1);
      void *t = keep[i];
      keep[i] = keep[j];
      keep[j] = t;
    }
    for (size_t i = 0; i < nk; i++) free(keep[i]);
  }
  /* posix_memalign(0) and bad alignments */
  void *m = NULL;
  CHECK(posix_memalign(&m, 0, 10) == EINVAL);
  CHECK(posix_memalign(&m, 4, 10) == EINVAL);
  CHECK(posix_memalign(&m, 24, 10) == EINVAL);
  errno = 0;
  void *p = opaque(memalign(((size_t)1 << 63) + 1, 10));
  CHECK(p == NULL && errno == EINVAL, "memalign(2^63+1): %p errno %d", p, errno);
  errno = 0;
  p = opaque(memalign((size_t)1 << 63, 10));
  CHECK(p == NULL && errno == ENOMEM, "memalign(2^63): %p errno %d", p, errno);
  errno = 0;
  p = opaque(aligned_alloc(64, opaque_size(SIZE_MAX)));
  CHECK(p == NULL && errno == ENOMEM, "aligned_alloc(64, SIZE_MAX): %p errno %d", p, errno);
  errno = 0;
  p = opaque(memalign(4096, opaque_size((size_t)PTRDIFF_MAX)));
  CHECK(p == NULL && errno == ENOMEM, "memalign(4096, PTRDIFF_MAX): %p errno %d", p, errno);
  m = (void *)0x1;
  int rc = posix_memalign(&m, 64, opaque_size(SIZE_MAX - 100));
  CHECK(rc == ENOMEM && m == (void *)0x1, "posix_memalign(64, SIZE_MAX-100) = %d", rc);
  /* Large alignment, large size: mmapped path. */
  p = opaque(memalign(2 * MiB, 5 * MiB));
  check_memalign_one("memalign", p, 2 * MiB, 5 * MiB);
  free(p);
}

static void test_valloc_pvalloc(void) {
  const size_t sizes[] = {0, 1, 100, 4095, 4096, 4097, 10000, 300000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    void *p = opaque(valloc(n));
    if (CHECK(p != NULL, "valloc(%zu)", n)) {
      CHECK(is_aligned(p, pagesize), "valloc(%zu) = %p", n, p);
      CHECK(malloc_usable_size(p) >= n);
      memset(p, 1, n);
    }
    void *q = opaque(pvalloc(n));
    if (CHECK(q != NULL, "pvalloc(%zu)", n)) {
      size_t rounded = (n + pagesize - 1) / pagesize * pagesize;
      CHECK(is_aligned(q, pagesize), "pvalloc(%zu) = %p", n, q);
      CHECK(malloc_usable_size(q) >= rounded, "pvalloc(%zu): usable %zu < %zu", n, malloc_usable_size(q),
            rounded);
      memset(q, 2, rounded);
    }
    free(p);
    free(q);
  }
  errno = 0;
  void *p = opaque(pvalloc(opaque_size(SIZE_MAX)));
  CHECK(p == NULL && errno == ENOMEM, "pvalloc(SIZE_MAX): %p errno %d", p, errno);
  errno = 0;
  p = opaque(valloc(opaque_size(SIZE_MAX)));
  CHECK(p == NULL && errno == ENOMEM, "valloc(SIZE_MAX): %p errno %d", p, errno);
}

static void test_null_args(void) {
  CHECK(malloc_usable_size(NULL) == 0);
  errno = 777;
  free(NULL);
  CHECK(errno == 777, "free(NULL) changed errno");
  void *p = opaque(malloc(1000));
  errno = 778;
  free(p);
  CHECK(errno == 778, "free(p) changed errno");
  p = opaque(malloc(5 * MiB));
  errno = 779;
  free(p);
  CHECK(errno == 779, "free(mmapped) changed errno");
}

static void test_free_sized(void) {
  if (!HAVE_FN(free_sized) || !HAVE_FN(free_aligned_sized)) SKIP_TEST("free_sized/free_aligned_sized not provided (glibc 2.36)");
  free_sized(NULL, 0);
  free_aligned_sized(NULL, 64, 0);
  const size_t sizes[] = {0, 1, 24, 100, 1000, 5000, 100000, 200 * KiB, 5 * MiB};
  for (int round = 0; round < 50; round++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      size_t n = sizes[i];
      void *p = opaque(malloc(n));
      REQUIRE(p != NULL);
      memset(p, 7, n);
      free_sized(p, n);
      for (size_t a = 16; a <= 8192; a <<= 3) {
        size_t an = (n + a - 1) / a * a;
        void *q = opaque(aligned_alloc(a, an));
        REQUIRE(q != NULL);
        CHECK(is_aligned(q, a));
        memset(q, 8, an);
        free_aligned_sized(q, a, an);
      }
    }
  if (HAVE_FN(hpmalloc_check_heap)) CHECK(hpmalloc_check_heap() == 0);
}

/* ---- mallopt ---- */

static void test_mallopt_values(void) {
  for (int v = 0; v <= 160; v++) CHECK(mallopt(M_MXFAST, v) == 1, "M_MXFAST %d", v);
  CHECK(mallopt(M_MXFAST, 161) == 0, "M_MXFAST 161 accepted");
  CHECK(mallopt(M_MXFAST, 1000) == 0, "M_MXFAST 1000 accepted");
  CHECK(mallopt(M_MXFAST, -1) == 0, "M_MXFAST -1 accepted");
  CHECK(mallopt(M_MXFAST, 64) == 1);
  CHECK(mallopt(M_TRIM_THRESHOLD, 256 * 1024) == 1);
  CHECK(mallopt(M_TOP_PAD, 64 * 1024) == 1);
  CHECK(mallopt(M_MMAP_THRESHOLD, 256 * 1024) == 1);
  /* glibc 2.36's do_set_mmap_threshold takes any value and returns 1; the
     32 MiB maximum only bounds the dynamic threshold and the tunable. */
  CHECK(mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024) == 1, "M_MMAP_THRESHOLD 64 MiB: glibc 2.36 returns 1");
  CHECK(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
  CHECK(mallopt(M_MMAP_MAX, 65536) == 1);
  CHECK(mallopt(M_CHECK_ACTION, 3) == 1);
  CHECK(mallopt(M_PERTURB, 0) == 1);
  CHECK(mallopt(M_ARENA_TEST, 8) == 1);
  CHECK(mallopt(M_ARENA_TEST, 0) == 1, "M_ARENA_TEST 0 is ignored and returns 1 in glibc");
  CHECK(mallopt(M_ARENA_MAX, 4) == 1);
  CHECK(mallopt(M_ARENA_MAX, 0) == 1, "M_ARENA_MAX 0 is ignored and returns 1 in glibc");
  /* glibc 2.36 returns 1 for a parameter it does not know (res starts at 1). */
  CHECK(mallopt(12345, 1) == 1, "unknown parameter: glibc 2.36 returns 1");
  CHECK(mallopt(-100, 1) == 1, "unknown parameter: glibc 2.36 returns 1");
  void *p = opaque(malloc(100));
  CHECK(p != NULL);
  free(p);
}

static void test_mallopt_mmap_threshold(void) {
  /* Run in a child of a fresh process: no free chunks but the top. */
  CHECK(mallopt(M_MMAP_THRESHOLD, 64 * 1024) == 1);
  struct mallinfo2 a = mallinfo2();
  size_t n = beyond_top(36 * KiB) > 100 * KiB ? beyond_top(36 * KiB) : 100 * KiB;
  void *big = opaque(malloc(n));
  void *small = opaque(malloc(32 * KiB));
  REQUIRE(big && small);
  struct mallinfo2 b = mallinfo2();
  CHECK(b.hblks == a.hblks + 1, "threshold 64 KiB: %zu + 32 KiB gave %zu new mmapped blocks (top was %zu)", n,
        b.hblks - a.hblks, a.keepcost);
  free(big);
  free(small);
  /* M_MMAP_MAX 0: nothing is mmapped, whatever its size. */
  CHECK(mallopt(M_MMAP_MAX, 0) == 1);
  a = mallinfo2();
  big = opaque(malloc(2 * MiB));
  REQUIRE(big);
  memset(big, 1, 2 * MiB);
  b = mallinfo2();
  CHECK(b.hblks == a.hblks, "M_MMAP_MAX 0 but a 2 MiB block was mmapped");
  CHECK(b.uordblks >= a.uordblks + 2 * MiB, "2 MiB block not counted in uordblks");
  free(big);
  CHECK(mallopt(M_MMAP_MAX, 65536) == 1);
}

/* Map a block of twice x (it must be mmapped), free it, then ask for x:
   1 when that block is mmapped too (the threshold did not move), 0 when
   it comes from the heap, -1 when the first block was not mmapped.  */
static int mapped_after_freeing_a_mapped_block(size_t x) {
  size_t n1 = beyond_top(2 * x);
  struct mallinfo2 a = mallinfo2();
  void *p = opaque(malloc(n1));
  if (!p) return -1;
  struct mallinfo2 b = mallinfo2();
  free(p);
  if (b.hblks != a.hblks + 1) return -1;
  size_t n2 = beyond_top(x);
  a = mallinfo2();
  p = opaque(malloc(n2));
  if (!p) return -1;
  b = mallinfo2();
  free(p);
  return b.hblks == a.hblks + 1;
}

static void test_fixed_threshold(void) {
  /* A fixed threshold disables the dynamic one: freeing a mmapped block
     must not raise it. */
  CHECK(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
  size_t x = huge_page() > 512 * KiB ? huge_page() : 512 * KiB;
  int r = mapped_after_freeing_a_mapped_block(x);
  CHECK(r != -1, "malloc(%zu) with threshold 128 KiB was not mmapped", 2 * x);
  CHECK(r != 0, "after mallopt(M_MMAP_THRESHOLD) the threshold moved dynamically");
}

static void test_dynamic_threshold(void) {
  /* Default: freeing a mmapped block raises the threshold to its size,
     so the next request of half that comes from the heap. */
  size_t x = huge_page() > 512 * KiB ? huge_page() : 512 * KiB;
  int r = mapped_after_freeing_a_mapped_block(x);
  CHECK(r != -1, "malloc(%zu) was not mmapped", 2 * x);
  CHECK(r != 1, "dynamic mmap threshold did not rise after freeing a %zu-byte mapped block", 2 * x);
}

enum { FAST_N = 10000 };

struct cross_free {
  void **p;
  struct mallinfo2 seen;
};

static void *free_all_thread(void *arg) {
  struct cross_free *x = arg;
  for (int i = 0; i < FAST_N; i++) free(x->p[i]);
  x->seen = mallinfo2(); /* before the thread's exit gives its cache back */
  return NULL;
}

/* Another thread frees FAST_N blocks of 32 bytes that this one allocated:
   what its cache cannot hold goes back to this thread's arena.  */
static void fastbins_after_cross_free(struct mallinfo2 *a) {
  static void *p[FAST_N];
  for (int i = 0; i < FAST_N; i++) p[i] = opaque(malloc(32));
  void *guard = opaque(malloc(32));
  struct cross_free x = {p, {0}};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, free_all_thread, &x) == 0);
  pthread_join(t, NULL);
  *a = x.seen;
  free(guard);
  malloc_trim(0); /* consolidates the fastbins */
}

static void test_mallopt_fastbins(void) {
  /* Small blocks another thread frees, beyond what its cache holds, are
     parked unmerged in the owner's fastbins (hpmalloc; glibc puts them
     there too once its tcache's 7 are taken) -- unless M_MXFAST is 0.  */
  struct mallinfo2 a;
  fastbins_after_cross_free(&a);
  CHECK(a.smblks >= 1 && a.fsmblks >= 32, "default M_MXFAST: smblks %zu fsmblks %zu", a.smblks, a.fsmblks);
  CHECK(mallopt(M_MXFAST, 0) == 1);
  fastbins_after_cross_free(&a);
  CHECK(a.smblks == 0 && a.fsmblks == 0, "M_MXFAST 0: smblks %zu fsmblks %zu", a.smblks, a.fsmblks);
}

static void test_mallopt_perturb(void) {
  CHECK(mallopt(M_PERTURB, 0x5a) == 1);
  /* 40000 bytes: above the cache's largest class (hpmalloc's, 32 KiB, and
     glibc's), so it goes through the arena, where the perturb byte is
     applied both ways. */
  const size_t n = 40000;
  void *g1 = opaque(malloc(n));
  unsigned char *p = opaque(malloc(n));
  void *g2 = opaque(malloc(n));
  REQUIRE(g1 && p && g2);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += p[i] != (0x5a ^ 0xff);
  CHECK(bad == 0, "%zu of %zu bytes of a fresh block are not 0x%x", bad, n, 0x5a ^ 0xff);
  unsigned char *z = opaque(calloc(1, n));
  REQUIRE(z);
  bad = 0;
  for (size_t i = 0; i < n; i++) bad += z[i] != 0;
  CHECK(bad == 0, "calloc with M_PERTURB returned %zu non-zero bytes", bad);
  free(z);
  free(p);
  /* Freed memory (past the free-list links at its start, before the next
     chunk's header) holds the perturb byte. */
  bad = 0;
  volatile unsigned char *f = opaque(p);
  for (size_t i = 32; i < n - 16; i++) bad += f[i] != 0x5a;
  CHECK(bad == 0, "%zu bytes of a freed block are not 0x5a", bad);
  free(g1);
  free(g2);
  CHECK(mallopt(M_PERTURB, 0) == 1);
}

static void *arena_thread(void *arg) {
  (void)arg;
  void *v[100];
  for (int r = 0; r < 20; r++) {
    for (int i = 0; i < 100; i++) v[i] = opaque(malloc(64 + (size_t)i * 8));
    for (int i = 0; i < 100; i++) free(v[i]);
  }
  return NULL;
}

static void test_arena_max_hpm(void) {
  CHECK(mallopt(M_ARENA_MAX, 1) == 1);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, arena_thread, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  struct hpmalloc_stats st;
  REQUIRE(get_hpm_stats(&st) == 0);
  CHECK(st.n_arenas == 1, "M_ARENA_MAX 1 but %zu arenas", st.n_arenas);
}

struct xfer {
  void **give;  /* blocks main allocated: the thread frees them */
  void **take;  /* blocks the thread allocates: main frees them */
  int n;
};

static void *xfer_thread(void *arg) {
  struct xfer *x = arg;
  for (int i = 0; i < x->n; i++) {
    unsigned char *b = x->give[i];
    if (b[0] != (unsigned char)i) return (void *)1;
    free(b);
  }
  for (int i = 0; i < x->n; i++) {
    size_t n = 1 + (size_t)(i * 37) % 3000;
    x->take[i] = malloc(n);
    if (!x->take[i]) return (void *)2;
    memset(x->take[i], i & 0xff, n);
  }
  arena_thread(NULL);
  return NULL;
}

static void test_threads_cross_free(void) {
  /* A small sanity check; tests/integration/stress.c does the heavy part. */
  enum { N = 2000 };
  static void *give[N], *take[N];
  for (int i = 0; i < N; i++) {
    give[i] = opaque(malloc(rnd_range(1, 3000)));
    REQUIRE(give[i]);
    *(unsigned char *)give[i] = (unsigned char)i;
  }
  struct xfer x = {give, take, N};
  for (int round = 0; round < 3; round++) {
    pthread_t t;
    void *ret = (void *)-1;
    REQUIRE(pthread_create(&t, NULL, xfer_thread, &x) == 0);
    pthread_join(t, &ret);
    CHECK(ret == NULL, "thread reported %p", ret);
    for (int i = 0; i < N; i++) {
      size_t n = 1 + (size_t)(i * 37) % 3000;
      const unsigned char *b = take[i];
      CHECK(b[0] == (i & 0xff) && b[n - 1] == (i & 0xff), "block from the thread corrupted");
      free(take[i]);
      give[i] = opaque(malloc(rnd_range(1, 3000)));
      REQUIRE(give[i]);
      *(unsigned char *)give[i] = (unsigned char)i;
    }
  }
  for (int i = 0; i < N; i++) free(give[i]);
}

/* ---- trim, stats, info ---- */

static void test_malloc_trim(void) {
  enum { BLK = 1000 };
  const size_t total = 100 * MiB;
  size_t n = total / BLK;
  void **v = opaque(malloc(n * sizeof *v));
  REQUIRE(v != NULL);
  for (size_t i = 0; i < n; i++) {
    v[i] = opaque(malloc(BLK));
    if (!v[i]) { CHECK(0, "malloc failed at %zu", i); return; }
    memset(v[i], 0x77, BLK);
  }
  void *fence = opaque(malloc(BLK)); /* keeps the freed space off the top */
  size_t r1 = rss_bytes(), h1 = hugetlb_bytes();
  for (size_t i = 0; i < n; i++) free(v[i]);
  int rc = malloc_trim(0);
  size_t r2 = rss_bytes(), h2 = hugetlb_bytes();
  /* On hugetlbfs pages (mode 2 with a pool) the pages inside a heap are
     kept: giving one back and populating it again could find the pool dry
     (glibc's mode 2 cannot release them either).  Then the check is that
     trimming keeps them and the space is reused, not that RSS falls.  */
  bool on_hugetlb = h1 >= 50 * MiB;
  if (!on_hugetlb) {
    CHECK(rc == 1, "malloc_trim(0) after freeing 100 MB below a live block returned %d", rc);
    CHECK(r2 + 80 * MiB <= r1, "RSS %zu MiB -> %zu MiB after free + malloc_trim", r1 / MiB, r2 / MiB);
  } else {
    CHECK(h2 <= h1, "hugetlb bytes grew from %zu to %zu MiB in free + malloc_trim", h1 / MiB, h2 / MiB);
    for (size_t i = 0; i < n; i++) {
      v[i] = opaque(malloc(BLK));
      REQUIRE(v[i]);
    }
    size_t h3 = hugetlb_bytes();
    CHECK(h3 <= h1, "the freed hugetlb space was not reused: %zu -> %zu MiB", h1 / MiB, h3 / MiB);
    for (size_t i = 0; i < n; i++) free(v[i]);
  }
  rc = malloc_trim(0);
  CHECK(rc == 0 || rc == 1, "malloc_trim returned %d", rc);
  rc = malloc_trim(1 * MiB);
  CHECK(rc == 0 || rc == 1, "malloc_trim returned %d", rc);
  /* The memory is reusable and reads as freshly written. */
  for (size_t i = 0; i < n; i += 97) {
    v[i] = opaque(malloc(BLK));
    REQUIRE(v[i]);
    memset(v[i], 0x12, BLK);
  }
  for (size_t i = 0; i < n; i += 97) free(v[i]);
  free(fence);
  free(v);
}

static int capture_stderr_begin(int *saved) {
  fflush(stderr);
  int fd = memfd_create("hpt-stderr", 0);
  if (fd < 0) return -1;
  *saved = dup(2);
  dup2(fd, 2);
  return fd;
}
static ssize_t capture_stderr_end(int fd, int saved, char *buf, size_t cap) {
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, buf, cap - 1, 0);
  close(fd);
  if (n < 0) n = 0;
  buf[n] = 0;
  return n;
}

static char textbuf[1 << 20];

static void test_malloc_stats(void) {
  void *p = opaque(malloc(64 * MiB)); /* some "max mmap" to report */
  REQUIRE(p);
  void *q = opaque(malloc(12345));
  int saved = -1, fd = capture_stderr_begin(&saved);
  REQUIRE(fd >= 0);
  malloc_stats();
  ssize_t n = capture_stderr_end(fd, saved, textbuf, sizeof textbuf);
  CHECK(n > 0, "malloc_stats printed nothing on stderr");
  const char *want[] = {"Arena 0:", "system bytes", "in use bytes", "Total (incl. mmap):", "max mmap regions",
                        "max mmap bytes"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    CHECK(strstr(textbuf, want[i]) != NULL, "malloc_stats output lacks \"%s\"", want[i]);
  const char *m = strstr(textbuf, "max mmap bytes");
  if (m) {
    m = strchr(m, '=');
    unsigned long long v = m ? strtoull(m + 1, NULL, 10) : 0;
    CHECK(v >= 64 * MiB, "max mmap bytes = %llu after a 64 MiB block", v);
  }
  const char *t = strstr(textbuf, "Total (incl. mmap):");
  if (t) {
    const char *iu = strstr(t, "in use bytes");
    const char *eq = iu ? strchr(iu, '=') : NULL;
    unsigned long long v = eq ? strtoull(eq + 1, NULL, 10) : 0;
    /* glibc prints these with %10u, so they wrap at 4 GiB; 64 MiB fits. */
    CHECK(v >= 64 * MiB + 12345, "total in use bytes = %llu with a 64 MiB block live", v);
  }
  free(p);
  free(q);
}

/* A small well-formedness check: elements with quoted attributes, properly
   nested, one root.  Returns NULL when fine, else a reason. */
static const char *xml_check(const char *s, char *root, size_t rootcap) {
  char stack[32][64];
  int depth = 0, roots = 0;
  root[0] = 0;
  while (*s) {
    if (*s != '<') {
      if (*s == '&') return "bare '&' in text";
      s++;
      continue;
    }
    s++;
    if (*s == '?') { /* declaration */
      const char *e = strstr(s, "?>");
      if (!e) return "unterminated <?";
      s = e + 2;
      continue;
    }
    int closing = 0;
    if (*s == '/') { closing = 1; s++; }
    char name[64];
    size_t nl = 0;
    while (*s && *s != ' ' && *s != '>' && *s != '/' && *s != '\n' && *s != '\t') {
      if (nl + 1 >= sizeof name) return "name too long";
      name[nl++] = *s++;
    }
    name[nl] = 0;
    if (nl == 0) return "empty element name";
    if (closing) {
      while (*s == ' ') s++;
      if (*s != '>') return "junk in end tag";
      s++;
      if (depth == 0 || strcmp(stack[depth - 1], name) != 0) return "mismatched end tag";
      depth--;
      continue;
    }
    if (depth == 0) {
      if (++roots > 1) return "more than one root element";
      snprintf(root, rootcap, "%s", name);
    }
    /* attributes */
    for (;;) {
      while (*s == ' ' || *s == '\n' || *s == '\t') s++;
      if (*s == '/' && s[1] == '>') { s += 2; break; }
      if (*s == '>') {
        s++;
        if (depth >= 32) return "nested too deep";
        snprintf(stack[depth++], 64, "%s", name);
        break;
      }
      if (!*s) return "unterminated tag";
      while (*s && *s != '=' && *s != ' ' && *s != '>') s++;
      if (*s != '=') return "attribute without value";
      s++;
      char q = *s;
      if (q != '"' && q != '\'') return "unquoted attribute value";
      s++;
      while (*s && *s != q) {
        if (*s == '<') return "'<' in attribute value";
        s++;
      }
      if (!*s) return "unterminated attribute value";
      s++;
    }
  }
  if (depth != 0) return "unclosed element";
  if (roots != 1) return "no root element";
  return NULL;
}

static void test_malloc_info(void) {
  void *big = opaque(malloc(64 * MiB));
  void *small[50];
  for (int i = 0; i < 50; i++) small[i] = opaque(malloc((size_t)i * 40 + 8));
  for (int i = 0; i < 50; i += 2) free(small[i]);
  int fd = memfd_create("hpt-info", 0);
  REQUIRE(fd >= 0);
  FILE *fp = fdopen(fd, "w+");
  REQUIRE(fp != NULL);
  int rc = malloc_info(0, fp);
  CHECK(rc == 0, "malloc_info(0, fp) = %d", rc);
  fflush(fp);
  ssize_t n = pread(fd, textbuf, sizeof textbuf - 1, 0);
  textbuf[n > 0 ? n : 0] = 0;
  CHECK(strncmp(textbuf, "<malloc version=\"1\">", 20) == 0, "malloc_info starts with \"%.30s\"", textbuf);
  char root[64];
  const char *why = xml_check(textbuf, root, sizeof root);
  CHECK(why == NULL, "malloc_info XML not well formed: %s", why ? why : "");
  CHECK(strcmp(root, "malloc") == 0, "root element <%s>", root);
  CHECK(strstr(textbuf, "<heap nr=\"0\">") != NULL, "no <heap nr=\"0\">");
  CHECK(strstr(textbuf, "<system type=\"current\" size=\"") != NULL, "no <system type=\"current\">");
  const char *mm = strstr(textbuf, "<total type=\"mmap\" count=\"");
  CHECK(mm != NULL, "no <total type=\"mmap\" ...>");
  if (mm) {
    long c = strtol(mm + strlen("<total type=\"mmap\" count=\""), NULL, 10);
    CHECK(c >= 1, "mmap count %ld with a 64 MiB block live", c);
  }
  const char *out = getenv("HPT_XML_OUT");
  if (out) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) {
      ssize_t w = write(o, textbuf, strlen(textbuf));
      (void)w;
      close(o);
    }
  }
  /* glibc 2.36: `if (options != 0) return EINVAL;` (returned, errno untouched) */
  errno = 0;
  rc = malloc_info(1, fp);
  CHECK(rc == EINVAL, "malloc_info(1, fp) = %d errno %d, glibc returns EINVAL", rc, errno);
  fclose(fp);
  for (int i = 1; i < 50; i += 2) free(small[i]);
  free(big);
}

/* ---- hpmalloc extensions ---- */

static void test_hpm_version(void) {
  const char *v = hpmalloc_version();
  REQUIRE(v != NULL);
  CHECK(v[0] != 0, "empty version");
  CHECK(strcmp(v, HPMALLOC_VERSION_STRING) == 0, "version \"%s\" vs header \"%s\"", v, HPMALLOC_VERSION_STRING);
}

static void test_hpm_stats(void) {
  struct hpmalloc_stats a, b, c;
  REQUIRE(get_hpm_stats(&a) == 0);
  CHECK(a.version == sizeof a, "version %zu", a.version);
  CHECK(a.bytes_mapped == a.bytes_heap + a.bytes_mmapped, "mapped %zu != heap %zu + mmapped %zu", a.bytes_mapped,
        a.bytes_heap, a.bytes_mmapped);
  CHECK(a.bytes_in_use <= a.bytes_mapped, "in use %zu > mapped %zu", a.bytes_in_use, a.bytes_mapped);
  CHECK(a.bytes_free <= a.bytes_heap, "free %zu > heap %zu", a.bytes_free, a.bytes_heap);
  CHECK(a.n_arenas >= 1);
  CHECK(a.bytes_thp + a.bytes_hugetlb <= a.bytes_mapped, "huge %zu + %zu > mapped %zu", a.bytes_thp,
        a.bytes_hugetlb, a.bytes_mapped);
  int mode = env_hugetlb_mode();
  if (mode >= 0 && mode <= 2) CHECK(a.hugetlb_mode == mode, "hugetlb_mode %d, GLIBC_TUNABLES asked %d", a.hugetlb_mode, mode);
  if (a.hugetlb_mode == 0) CHECK(a.huge_page_size == 0, "mode 0 but huge_page_size %zu", a.huge_page_size);
  else CHECK(a.huge_page_size >= 2 * MiB, "mode %d but huge_page_size %zu", a.hugetlb_mode, a.huge_page_size);

  const size_t n = 100000;
  void *p = opaque(malloc(n));
  REQUIRE(p);
  memset(p, 1, n);
  REQUIRE(get_hpm_stats(&b) == 0);
  CHECK(b.bytes_in_use >= a.bytes_in_use + n, "bytes_in_use %zu -> %zu after malloc(%zu)", a.bytes_in_use,
        b.bytes_in_use, n);
  void *big = opaque(malloc(64 * MiB));
  REQUIRE(big);
  REQUIRE(get_hpm_stats(&c) == 0);
  CHECK(c.n_mmapped == b.n_mmapped + 1, "n_mmapped %zu -> %zu after a 64 MiB malloc", b.n_mmapped, c.n_mmapped);
  CHECK(c.bytes_mmapped >= b.bytes_mmapped + 64 * MiB, "bytes_mmapped %zu -> %zu", b.bytes_mmapped,
        c.bytes_mmapped);
  CHECK(c.bytes_in_use >= b.bytes_in_use + 64 * MiB);
  CHECK(c.bytes_mapped == c.bytes_heap + c.bytes_mmapped);
  free(big);
  free(p);
  REQUIRE(get_hpm_stats(&c) == 0);
  CHECK(c.bytes_in_use + n <= b.bytes_in_use, "bytes_in_use %zu -> %zu after freeing %zu", b.bytes_in_use,
        c.bytes_in_use, n);
  CHECK(c.n_mmapped == b.n_mmapped, "n_mmapped %zu after free, %zu before", c.n_mmapped, b.n_mmapped);

  errno = 0;
  CHECK(hpmalloc_stats(NULL, sizeof a) == -1 && errno == EINVAL, "NULL: errno %d", errno);
  errno = 0;
  CHECK(hpmalloc_stats(&a, 4) == -1 && errno == EINVAL, "size 4: errno %d", errno);
}

static void test_hpm_check_heap(void) {
  enum { SLOTS = 4096 };
  static unsigned char *p[SLOTS];
  static size_t n[SLOTS];
  for (int it = 0; it < 200000; it++) {
    int s = (int)rnd_range(0, SLOTS - 1);
    if (p[s]) {
      CHECK(verify(p[s], n[s] < 64 ? n[s] : 64, (unsigned)s), "block %d of %zu bytes corrupted", s, n[s]);
      if (rnd() % 4 == 0) {
        size_t want = rnd_range(1, 4000);
        unsigned char *q = opaque(realloc(p[s], want));
        if (q) {
          p[s] = q;
          n[s] = want;
          fill(q, want < 64 ? want : 64, (unsigned)s);
        }
      } else {
        free(p[s]);
        p[s] = NULL;
      }
    } else {
      uint64_t r = rnd() % 1000;
      n[s] = r < 900 ? rnd_range(0, 512) : r < 995 ? rnd_range(512, 70000) : rnd_range(70000, 600000);
      p[s] = opaque(r % 7 == 0 ? calloc(1, n[s]) : r % 11 == 0 ? memalign(64, n[s]) : malloc(n[s]));
      if (!CHECK(p[s] != NULL)) continue;
      fill(p[s], n[s] < 64 ? n[s] : 64, (unsigned)s);
    }
  }
  if (HAVE_FN(hpmalloc_check_heap)) CHECK(hpmalloc_check_heap() == 0, "hpmalloc_check_heap after a random workload");
  for (int s = 0; s < SLOTS; s++) {
    if (p[s]) CHECK(verify(p[s], n[s] < 64 ? n[s] : 64, (unsigned)s), "block %d corrupted", s);
    free(p[s]);
    p[s] = NULL;
  }
  if (HAVE_FN(hpmalloc_check_heap)) CHECK(hpmalloc_check_heap() == 0, "hpmalloc_check_heap after freeing everything");
  if (!HAVE_FN(hpmalloc_check_heap)) NOTE("hpmalloc_check_heap not present; workload checked by patterns only");
}

/* ---- misuse: the process must abort with the fixed message ---- */

static char childerr[8192];

/* Does s contain one of the '|'-separated messages in alts (NULL: none)?  */
static bool any_of(const char *s, const char *alts) {
  while (alts && *alts) {
    const char *bar = strchr(alts, '|');
    size_t n = bar ? (size_t)(bar - alts) : strlen(alts);
    char one[256];
    snprintf(one, sizeof one, "%.*s", (int)n, alts);
    if (strstr(s, one)) return true;
    alts = bar ? bar + 1 : NULL;
  }
  return false;
}

/* Run fn in a child: it must die of SIGABRT with msg1, or one of the
   '|'-separated msg2, on stderr.  */
static void expect_abort(const char *what, void (*fn)(void), const char *msg1, const char *msg2) {
  int pfd[2];
  REQUIRE(pipe(pfd) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    dup2(pfd[1], 2);
    alarm(20);
    fn();
    _exit(0);
  }
  close(pfd[1]);
  size_t len = 0;
  for (;;) {
    ssize_t r = read(pfd[0], childerr + len, sizeof childerr - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len >= sizeof childerr - 1) break;
  }
  childerr[len] = 0;
  close(pfd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  for (char *c = childerr; *c; c++)
    if (*c == '\n') *c = '|';
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: child status 0x%x (signal %d), stderr \"%.200s\"", what,
        st, WIFSIGNALED(st) ? WTERMSIG(st) : 0, childerr);
  CHECK(strstr(childerr, msg1) || any_of(childerr, msg2), "%s: stderr \"%.200s\" lacks \"%s\"%s%s%s", what,
        childerr, msg1, msg2 ? " or \"" : "", msg2 ? msg2 : "", msg2 ? "\"" : "");
}

static void misuse_double_free_tcache(void) {
  void *p = opaque(malloc(24));
  free(p);
  free(opaque(p));
}
static void misuse_double_free_1000(void) {
  void *a[7];
  for (int i = 0; i < 7; i++) a[i] = opaque(malloc(1000));
  void *x = opaque(malloc(1000));
  void *guard = opaque(malloc(1000));
  for (int i = 0; i < 7; i++) free(a[i]);
  free(x);
  free(opaque(x));
  free(guard);
}
static void misuse_free_stack(void) {
  _Alignas(64) unsigned char buf[256];
  memset(buf, 0, sizeof buf);
  free(opaque(buf + 64));
}
static void misuse_free_misaligned(void) {
  unsigned char *p = opaque(malloc(64));
  free(opaque(p + 1));
}
static void misuse_free_misaligned8(void) {
  unsigned char *p = opaque(calloc(1, 64));
  free(opaque(p + 8));
}
static void misuse_free_interior(void) {
  unsigned char *p = opaque(calloc(1, 256));
  free(opaque(p + 64));
}

static void test_misuse(void) {
  expect_abort("double free of a 24-byte block", misuse_double_free_tcache, "free(): double free detected in tcache 2",
               NULL);
  /* glibc's tcache is full after seven frees, so glibc's arena catches it;
     hpmalloc's cache usually has room and its key catches it, with glibc's
     words.  When earlier tests left this thread's cache budget spent, the
     first free goes to the arena and merges with a freed neighbour, and
     the arena's check of the stale header catches the second one, again
     with glibc's words. */
  expect_abort("double free of a 1000-byte block after seven frees", misuse_double_free_1000,
               "double free or corruption",
               "free(): double free detected in tcache 2|corrupted size vs. prev_size while consolidating");
  expect_abort("free of a stack pointer", misuse_free_stack, "free(): invalid pointer", NULL);
  expect_abort("free of malloc()+1", misuse_free_misaligned, "free(): invalid pointer", NULL);
  expect_abort("free of malloc()+8", misuse_free_misaligned8, "free(): invalid pointer", NULL);
  expect_abort("free of a pointer inside a block", misuse_free_interior, "free(): invalid pointer",
               "free(): invalid size");
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *label = argc > 1 ? argv[1] : "api";
  tap_init();
  pagesize = (size_t)sysconf(_SC_PAGESIZE);
  if (tap_under_valgrind()) slow = 20.0;
  /* glibc writes fatal messages to /dev/tty unless this is set. */
  setenv("LIBC_FATAL_STDERR_", "1", 1);
  tap_have_hpm = HAVE_FN(hpmalloc_version);
  const char *req = getenv("HPT_REQUIRE_HPMALLOC");
  tap_printf("# %s: allocator %s%s%s\n", label, tap_have_hpm ? "hpmalloc " : "not hpmalloc (glibc?)",
             tap_have_hpm ? hpmalloc_version() : "", tap_under_valgrind() ? ", under valgrind" : "");
  if (req && req[0] == '1') {
    tap_s->cur_failed = 0;
    if (!tap_have_hpm) tap_check(0, __FILE__, __LINE__, "hpmalloc_version != NULL", "hpmalloc is not in this process");
    tap_report("hpmalloc is the allocator in use");
  }

  /* Tests that depend on a pristine heap run first, each in a child. */
  run_test("mallinfo2 counts a mmapped 1 MiB block", test_mallinfo2_mmapped, T_ISOLATE);
  run_test("dynamic mmap threshold rises", test_dynamic_threshold, T_ISOLATE);
  run_test("mallopt M_MMAP_THRESHOLD and M_MMAP_MAX take effect", test_mallopt_mmap_threshold, T_ISOLATE);
  run_test("mallopt M_MMAP_THRESHOLD fixes the threshold", test_fixed_threshold, T_ISOLATE);
  run_test("mallopt M_MXFAST takes effect", test_mallopt_fastbins, T_ISOLATE);
  run_test("mallopt M_PERTURB fills", test_mallopt_perturb, T_ISOLATE | T_NO_VALGRIND);
  run_test("mallopt M_ARENA_MAX 1 limits arenas", test_arena_max_hpm, T_HPM | T_ISOLATE);
  run_test("malloc_trim returns memory", test_malloc_trim, T_ISOLATE | T_NO_VALGRIND);
  run_test("malloc beyond RAM + swap is NULL (overcommit heuristic)", test_malloc_beyond_commit, T_ISOLATE | T_NO_VALGRIND);
  run_test("mallinfo2 uordblks/fordblks", test_mallinfo2_counts, 0);
  run_test("malloc(0) and malloc(8)", test_malloc_zero, 0);
  run_test("malloc sizes 0..4096 aligned, writable, disjoint", test_malloc_sizes, 0);
  run_test("malloc powers of two up to 64 MiB", test_malloc_pow2, 0);
  run_test("impossible sizes fail fast with ENOMEM", test_malloc_impossible, 0);
  run_test("calloc zeroes, also reused dirty memory", test_calloc, 0);
  run_test("calloc overflow is ENOMEM", test_calloc_overflow, 0);
  run_test("reallocarray", test_reallocarray, 0);
  run_test("realloc NULL, 0, shrink, grow, failure", test_realloc_basic, 0);
  run_test("realloc through mmapped sizes", test_realloc_mmapped, 0);
  run_test("realloc random walk", test_realloc_random, 0);
  run_test("realloc of the last chunk of a full heap", test_realloc_heap_end, 0);
  run_test("memalign, aligned_alloc, posix_memalign", test_memalign_family, 0);
  run_test("valloc and pvalloc", test_valloc_pvalloc, 0);
  run_test("NULL arguments, errno preserved by free", test_null_args, 0);
  run_test("free_sized and free_aligned_sized", test_free_sized, 0);
  run_test("mallopt return values", test_mallopt_values, T_ISOLATE);
  run_test("malloc_stats prints glibc's lines", test_malloc_stats, 0);
  run_test("malloc_info XML", test_malloc_info, 0);
  run_test("threads and a cross-thread free", test_threads_cross_free, 0);
  run_test("hpmalloc_version", test_hpm_version, T_HPM);
  run_test("hpmalloc_stats counters", test_hpm_stats, T_HPM);
  run_test("random workload, then hpmalloc_check_heap", test_hpm_check_heap, 0);
  run_test("misuse aborts with glibc's messages", test_misuse, T_NO_VALGRIND);
  return tap_finish(label);
}
