/* SPDX-License-Identifier: MIT */
/* Fault injection through hp_kernel (issue 6, hardening).
 *
 * Every kernel call hpmalloc makes goes through the hp_kernel table (map,
 * unmap, protect, advise, remap, resident: mmap, munmap, mprotect,
 * madvise, mremap, mincore; hpmalloc never calls brk).  This test wraps the
 * table with a counting layer that passes each call to the real kernel,
 * runs a fixed workload once to count the calls, and then, each time in a
 * forked child (the allocator's state is global):
 *
 *   single:   for k = 1..N, makes exactly the k-th call fail;
 *   from:     for each kind of call and k = 1..N(kind), makes every call of
 *             that kind fail from its k-th on (the kernel stays out of
 *             memory, or mprotect keeps failing, until the workload ends).
 *
 * After each run it checks:
 *   - the injected fault was reached (k <= N: the calls before it are the
 *     baseline's, the workload being deterministic);
 *   - every allocation that failed returned NULL with errno == ENOMEM, and
 *     a failed realloc left the old block intact;
 *   - every live block still holds the bytes written into it;
 *   - hpmalloc_check_heap() passes (it aborts on corruption);
 *   - with the faults switched off, allocations of every kind (small,
 *     large, mapped, in a new thread) succeed;
 *   - nothing leaks: after everything is freed, the bytes mapped through
 *     the table equal the heaps' reservations (with their guard pages) plus
 *     the chunks mapped on their own (which must be none), plus exactly the
 *     bytes of any munmap the test made fail (memory the allocator had
 *     handed back; nobody can do better).
 *
 * Mode 2 (hugetlbfs) would exercise only the dry-pool paths on a machine
 * without a pool, so here MAP_HUGETLB is emulated with base pages (aligned
 * to the huge page size, as the kernel does) and MADV_POPULATE_WRITE and
 * mincore report success: the hugetlb call sites run their success paths
 * and each of their calls can then be made to fail.  The real pool is
 * exercised by tests/hardening (check-hardening).
 *
 * MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "region.h"
#include "unit_helpers.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ================================================================ the counting kernel */

enum kop { K_MAP, K_UNMAP, K_PROTECT, K_ADVISE, K_REMAP, K_RESIDENT, K_NOPS };
static const char *const kop_name[K_NOPS] = { "map", "unmap", "protect", "advise", "remap", "resident" };

enum { MAX_SITES = 64 };

/* What a child tells the parent (shared memory).  */
struct report {
  long calls;                 /* kernel calls during the faulted workload */
  long kind_calls[K_NOPS];
  long fired;                 /* calls made to fail */
  int fired_kind;             /* kind of the first failed call */
  long nulls;                 /* allocations that returned NULL (with ENOMEM) */
  int done;                   /* the child reached the end */
  void *sites[MAX_SITES];     /* distinct return addresses of failed calls */
  int site_kind[MAX_SITES];
  size_t nsites;
  char msg[512];              /* first failed check */
};

static struct report *rep;    /* shared with the children */

static struct hp_kernel_ops real;

static struct {
  enum { F_NONE, F_SINGLE, F_FROM } how;
  long at;                    /* single: the call to fail (1-based); from: the kind's k-th call */
  int kind;                   /* from: the kind */
  bool off;                   /* faults switched off (the "later allocations" phase) */
  long n, kind_n[K_NOPS];
  long mapped;                /* net bytes mapped through the table */
  size_t unmap_failed;        /* bytes left mapped by failed munmaps */
  bool emulate_hugetlb;
  bool misplace;              /* MAP_FIXED_NOREPLACE taken as a mere hint, and not honoured (old kernels, qemu-user) */
  pthread_mutex_t lock;
} fw = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void note_site(void *ra, int kind) {
  for (size_t i = 0; i < rep->nsites; i++)
    if (rep->sites[i] == ra) return;
  if (rep->nsites < MAX_SITES) {
    rep->site_kind[rep->nsites] = kind;
    rep->sites[rep->nsites++] = ra;
  }
}

/* Count the call; true when it must fail.  */
static bool inject(int kind, void *ra) {
  pthread_mutex_lock(&fw.lock);
  fw.n++;
  fw.kind_n[kind]++;
  bool fail = false;
  if (!fw.off) {
    if (fw.how == F_SINGLE) fail = fw.n == fw.at;
    else if (fw.how == F_FROM) fail = kind == fw.kind && fw.kind_n[kind] >= fw.at;
  }
  if (fail) {
    if (rep->fired++ == 0) rep->fired_kind = kind;
    note_site(ra, kind);
  }
  pthread_mutex_unlock(&fw.lock);
  if (fail) errno = ENOMEM;
  return fail;
}

static void add_mapped(long delta) {
  pthread_mutex_lock(&fw.lock);
  fw.mapped += delta;
  pthread_mutex_unlock(&fw.lock);
}

/* MAP_HUGETLB with base pages, aligned to the huge page as the kernel's.  */
static void *emulated_hugetlb(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge) {
  flags &= ~(unsigned)HP_MAP_HUGETLB;
  if (flags & (HP_MAP_FIXED | HP_MAP_FIXED_NOREPLACE)) return real.map(addr, len, prot, flags, 0);
  char *raw = real.map(addr, len + huge, prot, flags, 0);
  if (!raw) return NULL;
  char *p = (char *)align_up((uintptr_t)raw, huge);
  if (p > raw) real.unmap(raw, (size_t)(p - raw));
  if (p + len < raw + len + huge) real.unmap(p + len, (size_t)(raw + len + huge - (p + len)));
  return p;
}

static __attribute__((noinline)) void *w_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge) {
  if (inject(K_MAP, __builtin_return_address(0))) return NULL;
  if (fw.misplace && (flags & HP_MAP_FIXED_NOREPLACE)) {
    flags &= ~(unsigned)HP_MAP_FIXED_NOREPLACE;
    addr = NULL;
  }
  void *p = fw.emulate_hugetlb && (flags & HP_MAP_HUGETLB) ? emulated_hugetlb(addr, len, prot, flags, huge)
                                                           : real.map(addr, len, prot, flags, huge);
  if (p) add_mapped((long)len);
  return p;
}

static __attribute__((noinline)) int w_unmap(void *addr, size_t len) {
  if (inject(K_UNMAP, __builtin_return_address(0))) {
    pthread_mutex_lock(&fw.lock);
    fw.unmap_failed += len;
    pthread_mutex_unlock(&fw.lock);
    return -1;
  }
  int r = real.unmap(addr, len);
  if (r == 0) add_mapped(-(long)len);
  return r;
}

static __attribute__((noinline)) int w_protect(void *addr, size_t len, enum hp_prot prot) {
  if (inject(K_PROTECT, __builtin_return_address(0))) return -1;
  return real.protect(addr, len, prot);
}

static __attribute__((noinline)) int w_advise(void *addr, size_t len, enum hp_advice adv) {
  if (inject(K_ADVISE, __builtin_return_address(0))) return -1;
  if (fw.emulate_hugetlb && adv == HP_ADV_POPULATE_WRITE) return 0; /* base pages: nothing to reserve */
  return real.advise(addr, len, adv);
}

static __attribute__((noinline)) void *w_remap(void *old, size_t oldlen, size_t newlen, int may_move) {
  if (inject(K_REMAP, __builtin_return_address(0))) return NULL;
  void *p = real.remap(old, oldlen, newlen, may_move);
  if (p) add_mapped((long)newlen - (long)oldlen);
  return p;
}

static __attribute__((noinline)) int w_resident(void *addr, size_t len) {
  if (inject(K_RESIDENT, __builtin_return_address(0))) return -1;
  if (fw.emulate_hugetlb) return 1;
  return real.resident(addr, len);
}

/* ================================================================ checks in the child */

/* A failed check in a child: say why, and end the child.  */
__attribute__((format(printf, 1, 2), noreturn)) static void child_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (rep->msg[0] == '\0') vsnprintf(rep->msg, sizeof rep->msg, fmt, ap);
  va_end(ap);
  _exit(1);
}

#define CHECK(cond, ...) do { if (!(cond)) child_fail(__VA_ARGS__); } while (0)

/* ================================================================ the workload */

struct blk {
  unsigned char *p;
  size_t n;
  unsigned char tag;
};

enum { MAX_BLKS = 1024 };
static struct blk blks[MAX_BLKS];
static size_t nblks;
static size_t ngot;           /* allocations that succeeded */
static pthread_mutex_t blk_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The bytes checked: all of a small block, the first and last 4 KiB of a
   large one (the rest is never touched, so large heaps stay cheap).  */
static void fill(unsigned char *p, size_t n, unsigned char tag) {
  if (n <= 16 * KiB) {
    memset(p, tag, n);
    return;
  }
  memset(p, tag, 4 * KiB);
  memset(p + n - 4 * KiB, tag, 4 * KiB);
}

static void verify(const struct blk *b, const char *when) {
  size_t n = b->n, head = n <= 16 * KiB ? n : 4 * KiB;
  for (size_t i = 0; i < head; i++)
    CHECK(b->p[i] == b->tag, "%s: block %p (%zu bytes) byte %zu is %#x, wrote %#x", when, (void *)b->p, n, i,
          b->p[i], b->tag);
  if (n > 16 * KiB)
    for (size_t i = n - 4 * KiB; i < n; i++)
      CHECK(b->p[i] == b->tag, "%s: block %p (%zu bytes) byte %zu is %#x, wrote %#x", when, (void *)b->p, n, i,
            b->p[i], b->tag);
}

/* An allocation's result: NULL only with ENOMEM (counted); else filled and
   remembered.  */
static void got(void *p, size_t n, int err, const char *what) {
  if (!p) {
    CHECK(err == ENOMEM, "%s(%zu) returned NULL with errno %d, not ENOMEM", what, n, err);
    __atomic_fetch_add(&rep->nulls, 1, __ATOMIC_RELAXED);
    return;
  }
  pthread_mutex_lock(&blk_lock);
  CHECK(nblks < MAX_BLKS, "too many blocks");
  struct blk *b = &blks[nblks++];
  ngot++;
  b->p = p;
  b->n = n;
  b->tag = (unsigned char)(nblks * 7 + 1);
  fill(b->p, n, b->tag);
  pthread_mutex_unlock(&blk_lock);
}

static void do_malloc(size_t n) {
  errno = 0;
  void *p = hpt_malloc(n);
  got(p, n, errno, "malloc");
}

static void release(size_t i) {
  verify(&blks[i], "before free");
  hpt_free(blks[i].p);
  blks[i] = blks[--nblks];
}

static void free_every(size_t step, size_t first) {
  pthread_mutex_lock(&blk_lock);
  /* downwards: release() moves the last block into the hole */
  for (size_t i = nblks; i-- > first;)
    if ((i - first) % step == 0) release(i);
  pthread_mutex_unlock(&blk_lock);
}

/* realloc of block i to n bytes: on failure the block must be intact.  */
static void do_realloc(size_t i, size_t n) {
  struct blk *b = &blks[i];
  size_t keep = b->n < n ? b->n : n;
  errno = 0;
  unsigned char *q = hpt_realloc(b->p, n);
  if (!q) {
    CHECK(errno == ENOMEM, "realloc(%zu) returned NULL with errno %d", n, errno);
    rep->nulls++;
    verify(b, "after a failed realloc");
    return;
  }
  struct blk moved = { q, keep, b->tag };
  verify(&moved, "after realloc");
  b->p = q;
  b->n = n;
  fill(q, n, b->tag);
}

static void *thread_work(void *arg) {
  size_t n = (size_t)arg;
  for (size_t i = 0; i < n; i++) do_malloc(16 + (i * 37) % 900);
  do_malloc(100 * KiB);
  do_malloc(300 * KiB);
  free_every(3, 0); /* some of the main thread's blocks too: cross-thread frees */
  return NULL;
}

static void in_thread(size_t n) {
  pthread_t th;
  int e = pthread_create(&th, NULL, thread_work, (void *)n);
  if (e != 0) return; /* glibc could not make the thread (its own malloc): not ours to check */
  CHECK(pthread_join(th, NULL) == 0, "pthread_join");
}

static void aligned(size_t align, size_t n) {
  void *p = NULL;
  errno = 0;
  int r = hpt_posix_memalign(&p, align, n);
  if (r == 0) CHECK(((uintptr_t)p & (align - 1)) == 0, "posix_memalign(%zu) gave %p", align, p);
  got(r == 0 ? p : NULL, n, r == 0 ? 0 : r, "posix_memalign");
}

static void workload(int mode0) {
  for (int i = 0; i < 300; i++) do_malloc(1 + rnd() % 1200);
  free_every(3, 1);
  for (int i = 0; i < 20; i++) do_malloc(2 * KiB + rnd() % (200 * KiB));
  for (int i = 0; i < 40; i++) do_malloc(100 * KiB); /* a heap of a few MiB */
  /* mode 0: switching to THP advises the base-page heap and collapses
     what it holds (MADV_COLLAPSE); then back, with mode 0's padding and
     thresholds again for the rest */
  if (mode0 == 0 && region_get_policy()->thp_size) {
    size_t pad = mp.top_pad, trim = mp.trim_threshold, mmap_thr = mp.mmap_threshold;
    hpt_mallopt(HPMALLOC_M_HUGETLB, 1);
    hpt_mallopt(HPMALLOC_M_HUGETLB, 0);
    mp.top_pad = pad;
    mp.trim_threshold = trim;
    mp.mmap_threshold = mmap_thr;
  }
  /* mapped on their own (or from the heap where huge pages would waste too much) */
  do_malloc(1 * MiB + 123);
  do_malloc(4 * MiB - 4096);
  do_malloc(8 * MiB + 1);
  do_malloc(20 * MiB);
  /* grow the mapped ones: mremap */
  for (size_t i = 0; i < nblks; i++)
    if (blks[i].n >= MiB) do_realloc(i, blks[i].n * 2 + 4096);
  aligned(64 * KiB, 100 * KiB);
  aligned(2 * MiB, 3 * MiB);
  aligned(4096, 5000);
  errno = 0;
  unsigned char *z = hpt_calloc(1000, 100);
  if (z)
    for (size_t i = 0; i < 100000; i++) CHECK(z[i] == 0, "calloc byte %zu is %#x", i, z[i]);
  got(z, 100000, errno, "calloc");
  /* thread arenas: one new, then reused after the first thread exited */
  in_thread(150);
  in_thread(150);
  /* a heap past its first reservation (64 MiB): extend in place or a new heap */
  hpt_mallopt(M_MMAP_MAX, 0);
  do_malloc(70 * MiB);
  hpt_mallopt(M_MMAP_MAX, 65536);
  /* give memory back: madvise(DONTNEED), mprotect(PROT_NONE), heaps released */
  free_every(2, 0);
  hpt_malloc_trim(0);
  for (int i = 0; i < 50; i++) do_malloc(1 + rnd() % 4000);
  for (size_t i = 0; i < nblks; i++) verify(&blks[i], "after the workload");
  hpmalloc_check_heap();
}

/* With the faults off: everything must work again.  */
static void later_allocations(void) {
  size_t before = ngot;
  long nulls = rep->nulls;
  do_malloc(100);
  do_malloc(5000);
  do_malloc(300 * KiB);
  do_malloc(8 * MiB);
  in_thread(20);
  CHECK(rep->nulls == nulls, "an allocation failed with the faults off");
  CHECK(ngot >= before + 4 + 20 + 2, "%zu allocations with the faults off, expected 26", ngot - before);
  hpmalloc_check_heap();
}

/* Bytes the allocator holds: heap reservations, their guard pages, and
   chunks mapped on their own.  */
static long held_bytes(void) {
  long held = (long)atomic_load(&mp.mmapped_mem);
  for (struct arena *ar = &main_arena;; ar = ar->next) {
    for (struct heap *h = ar->heap; h; h = h->prev) held += (long)(h->reg.reserved + (h->reg.guard ? mp.page : 0));
    if (ar->next == &main_arena) break;
  }
  return held;
}

static void no_leak(void) {
  free_every(1, 0);
  hpt_malloc_trim(0);
  hpmalloc_check_heap();
  CHECK(atomic_load(&mp.n_mmaps) == 0, "%zu chunks still mapped after every block was freed",
        atomic_load(&mp.n_mmaps));
  long held = held_bytes();
  CHECK(fw.mapped == held + (long)fw.unmap_failed,
        "mapped through the kernel: %ld bytes; held by the allocator: %ld, left by failed munmaps: %zu "
        "(difference %ld)",
        fw.mapped, held, fw.unmap_failed, fw.mapped - held - (long)fw.unmap_failed);
}

static void child(int how, long at, int kind, int mode0) {
  fw.how = how;
  fw.at = at;
  fw.kind = kind;
  hp_kernel = (struct hp_kernel_ops){ w_map, w_unmap, w_protect, w_advise, w_remap, w_resident };
  workload(mode0);
  fw.off = true;
  rep->calls = fw.n;
  memcpy(rep->kind_calls, fw.kind_n, sizeof fw.kind_n);
  later_allocations();
  no_leak();
  rep->done = 1;
  _exit(0);
}

/* ================================================================ the parent */

static int mode0;

static void setup(void) {
  hp_ensure_init();
  mode0 = region_get_policy()->mode;
  real = hp_kernel;
  fw.emulate_hugetlb = region_get_policy()->mode == 2;
  rep = mmap(NULL, sizeof *rep, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(rep, MAP_FAILED);
}

/* Run one scenario in a child; returns its report (in *rep) after
   asserting it ended well.  */
static void run(int how, long at, int kind, const char *what) {
  memset(rep, 0, sizeof *rep);
  int fds[2];
  pid_t pid = fork_with_stderr_pipe(fds, 60);
  if (pid == 0) child(how, at, kind, mode0);
  char err[1024];
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], err + len, sizeof err - 1 - len)) > 0) len += (size_t)r;
  err[len] = '\0';
  close(fds[0]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  const char *fk = rep->fired ? kop_name[rep->fired_kind] : "none";
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0 && rep->done,
            "%s: the child %s %d (failed call: %s); check: \"%s\"; stderr: \"%s\"", what,
            WIFSIGNALED(st) ? "died of signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), fk,
            rep->msg, err);
}

struct summary {
  long runs, with_nulls, unreached;
  void *sites[4 * MAX_SITES];
  int site_kind[4 * MAX_SITES];
  size_t nsites;
};

static void add_sites(struct summary *s) {
  s->runs++;
  if (rep->nulls) s->with_nulls++;
  for (size_t i = 0; i < rep->nsites; i++) {
    size_t j = 0;
    while (j < s->nsites && s->sites[j] != rep->sites[i]) j++;
    if (j == s->nsites && s->nsites < 4 * MAX_SITES) {
      s->site_kind[s->nsites] = rep->site_kind[i];
      s->sites[s->nsites++] = rep->sites[i];
    }
  }
}

static void print_summary(const char *name, const struct report *base, const struct summary *s) {
  size_t per[K_NOPS] = { 0 };
  for (size_t i = 0; i < s->nsites; i++) per[s->site_kind[i]]++;
  fprintf(stderr,
          "faults/%s (hugetlb mode %d): baseline %ld calls (map %ld, unmap %ld, protect %ld, advise %ld, remap %ld, "
          "resident %ld); %ld faulted runs, %ld with an allocation failing (ENOMEM); %zu distinct call sites failed "
          "(map %zu, unmap %zu, protect %zu, advise %zu, remap %zu, resident %zu)\n",
          name, mode0, base->calls, base->kind_calls[K_MAP], base->kind_calls[K_UNMAP], base->kind_calls[K_PROTECT],
          base->kind_calls[K_ADVISE], base->kind_calls[K_REMAP], base->kind_calls[K_RESIDENT], s->runs,
          s->with_nulls, s->nsites, per[K_MAP], per[K_UNMAP], per[K_PROTECT], per[K_ADVISE], per[K_REMAP],
          per[K_RESIDENT]);
  /* HP_FAULTS_SITES=1: the return addresses, for addr2line (run under
     `setarch -R` so a PIE loads at 0x555555554000) */
  if (getenv("HP_FAULTS_SITES"))
    for (size_t i = 0; i < s->nsites; i++) fprintf(stderr, "site %s %p\n", kop_name[s->site_kind[i]], s->sites[i]);
}

static struct report baseline(void) {
  run(F_NONE, 0, 0, "baseline (no fault)");
  cr_assert_eq(rep->fired, 0);
  cr_assert_eq(rep->nulls, 0, "an allocation failed without any fault");
  struct report b = *rep;
  /* the workload reaches every kind of call the mode uses */
  cr_assert_gt(b.kind_calls[K_MAP], 0);
  cr_assert_gt(b.kind_calls[K_UNMAP], 0);
  cr_assert_gt(b.kind_calls[K_ADVISE], 0);
  cr_assert_gt(b.kind_calls[K_REMAP], 0);
  if (mode0 != 2) cr_assert_gt(b.kind_calls[K_PROTECT], 0, "heaps are committed with mprotect");
  else cr_assert_gt(b.kind_calls[K_RESIDENT], 0, "hugetlb commits are confirmed with mincore");
  return b;
}

Test(faults, each_call_fails_once, .timeout = 240) {
  setup();
  struct report base = baseline();
  struct summary s = { 0 };
  char what[128];
  for (long k = 1; k <= base.calls; k++) {
    snprintf(what, sizeof what, "call %ld of %ld fails", k, base.calls);
    run(F_SINGLE, k, 0, what);
    cr_assert_eq(rep->fired, 1, "%s: the call was never made (the workload is not deterministic?)", what);
    add_sites(&s);
  }
  /* past the last call: nothing fails, nothing changes */
  run(F_SINGLE, base.calls + 1, 0, "no call fails");
  cr_assert_eq(rep->fired, 0);
  cr_assert_eq(rep->calls, base.calls);
  print_summary("each_call_fails_once", &base, &s);
}

/* A kernel that takes MAP_FIXED_NOREPLACE as a hint and maps elsewhere:
   the guard page, the heap placed below the last one and the in-place
   extension are all given up (their mappings unmapped again), and each
   of those calls can fail too.  */
Test(faults, fixed_noreplace_ignored_each_call_fails_once, .timeout = 240) {
  setup();
  fw.misplace = true;
  struct report base = baseline();
  struct summary s = { 0 };
  char what[128];
  for (long k = 1; k <= base.calls; k++) {
    snprintf(what, sizeof what, "MAP_FIXED_NOREPLACE ignored, call %ld of %ld fails", k, base.calls);
    run(F_SINGLE, k, 0, what);
    cr_assert_eq(rep->fired, 1, "%s: the call was never made (the workload is not deterministic?)", what);
    add_sites(&s);
  }
  print_summary("fixed_noreplace_ignored_each_call_fails_once", &base, &s);
}

Test(faults, every_call_of_a_kind_fails_from_the_kth, .timeout = 240) {
  setup();
  struct report base = baseline();
  struct summary s = { 0 };
  char what[128];
  for (int kind = 0; kind < K_NOPS; kind++) {
    for (long k = 1; k <= base.kind_calls[kind]; k++) {
      snprintf(what, sizeof what, "every %s from its call %ld of %ld fails", kop_name[kind], k,
               base.kind_calls[kind]);
      run(F_FROM, k, kind, what);
      cr_assert_geq(rep->fired, 1, "%s: the call was never made", what);
      cr_assert_eq(rep->fired_kind, kind);
      add_sites(&s);
    }
  }
  print_summary("every_call_of_a_kind_fails_from_the_kth", &base, &s);
}
