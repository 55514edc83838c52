/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/init.c (huge-page mode resolution, mallopt,
 * switching the mode at run time, the verbose start-up line) and of the
 * public entry points in malloc/malloc.c that the other files leave out
 * (free_sized, free_aligned_sized, reallocarray and pvalloc overflow,
 * realloc of a chunk mapped on its own with and without mremap).
 *
 * Mode resolution is driven through hp_apply_tunables() with a made-up
 * hp_sysinfo (the probe's result), so the machine's own huge pages do not
 * matter; the run-time switch records the kernel calls through a
 * hp_kernel whose advise is faked.  Tests that depend on the start-up mode
 * set GLIBC_TUNABLES themselves before the allocator's first call (each
 * Criterion test runs in a fresh process).  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "region.h"
#include "tunables.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* Start the allocator in mode 0 whatever check-unit's environment says.  */
static void init_mode0(void) {
  setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);
  hp_ensure_init();
}

/* A made-up machine: THP mode and PMD size, hugetlb page sizes.  */
static void machine(enum hp_thp_mode thp, size_t pmd, size_t hugetlb_default, unsigned n, const size_t *sizes) {
  hp_sysinfo.thp = thp;
  hp_sysinfo.thp_pmd_size = pmd;
  hp_sysinfo.hugetlb_default = hugetlb_default;
  hp_sysinfo.n_hugetlb = n;
  for (unsigned i = 0; i < n; i++) hp_sysinfo.hugetlb_sizes[i] = sizes[i];
}

/* Apply a GLIBC_TUNABLES-syntax string as start-up would.  */
static void apply(const char *s) {
  struct hp_tunable_values tv;
  hp_tunables_parse(&tv, s, NULL, 0);
  hp_apply_tunables(&tv);
}

static const size_t sizes_2m_1g[] = { 2 * MiB, GiB };

/* ================================================================ mode resolution */

Test(mode, hugetlb_size_not_offered_is_ignored) {
  init_mode0();
  machine(HP_THP_MADVISE, 2 * MiB, 2 * MiB, 1, sizes_2m_1g);
  apply("glibc.malloc.hugetlb=1073741824");
  cr_assert_eq(region_get_policy()->mode, 0);
  cr_assert(strstr(mp.mode_reason, "size not offered"), "%s", mp.mode_reason);
}

Test(mode, hugetlb_size_offered) {
  init_mode0();
  machine(HP_THP_MADVISE, 2 * MiB, 2 * MiB, 2, sizes_2m_1g);
  apply("glibc.malloc.hugetlb=2097152");
  cr_assert_eq(region_get_policy()->mode, 2);
  cr_assert_eq(region_get_policy()->hugetlb_size, 2 * MiB);
  cr_assert(strstr(mp.mode_reason, "hugetlbfs pages"), "%s", mp.mode_reason);
}

Test(mode, hugetlb2_with_hpmalloc_hugetlb_size) {
  init_mode0();
  machine(HP_THP_MADVISE, 2 * MiB, 2 * MiB, 2, sizes_2m_1g);
  apply("glibc.malloc.hugetlb=2:hpmalloc.hugetlb_size=1073741824:glibc.malloc.top_pad=4096");
  cr_assert_eq(region_get_policy()->mode, 2);
  cr_assert_eq(region_get_policy()->hugetlb_size, GiB);
  /* four huge pages must fit a heap: 4 GiB heaps; the trim threshold in
     whole huge pages; the pad left as set (commits are whole 1 GiB pages
     anyway; a 1 GiB pad would take a second page for every heap) */
  cr_assert_eq(mp.heap_max, 4 * GiB);
  cr_assert_eq(mp.top_pad, 4096);
  cr_assert_eq(mp.trim_threshold % GiB, 0);
  cr_assert_geq(mp.mmap_threshold, GiB, "threshold raised to a huge page when not set");
}

Test(mode, hugetlb2_unlisted_size_takes_default) {
  init_mode0();
  machine(HP_THP_MADVISE, 2 * MiB, 2 * MiB, 2, sizes_2m_1g);
  apply("glibc.malloc.hugetlb=2:hpmalloc.hugetlb_size=12345");
  cr_assert_eq(region_get_policy()->mode, 2);
  cr_assert_eq(region_get_policy()->hugetlb_size, 2 * MiB);
}

Test(mode, hugetlb2_without_pool_uses_thp) {
  init_mode0();
  machine(HP_THP_MADVISE, 2 * MiB, 0, 0, NULL);
  apply("glibc.malloc.hugetlb=2");
  cr_assert_eq(region_get_policy()->mode, 1);
  cr_assert(strstr(mp.mode_reason, "no hugetlb page size"), "%s", mp.mode_reason);
}

Test(mode, hugetlb2_without_anything_is_off) {
  init_mode0();
  machine(HP_THP_UNSUPPORTED, 0, 0, 0, NULL);
  apply("glibc.malloc.hugetlb=2");
  cr_assert_eq(region_get_policy()->mode, 0);
  cr_assert(strstr(mp.mode_reason, "neither hugetlbfs nor THP"), "%s", mp.mode_reason);
}

Test(mode, hugetlb1_thp_always) {
  init_mode0();
  machine(HP_THP_ALWAYS, 2 * MiB, 0, 0, NULL);
  apply("glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=65536");
  cr_assert_eq(region_get_policy()->mode, 1);
  cr_assert_str_eq(mp.mode_reason, "THP (enabled=always)");
  cr_assert_eq(mp.mmap_threshold, 65536, "a threshold that was set stays");
  cr_assert_eq(mp.top_pad, 128 * 1024, "the pad stays glibc's: the region layer rounds commits");
  cr_assert_eq(mp.trim_threshold % (2 * MiB), 0);
}

Test(mode, hugetlb1_thp_never_or_absent) {
  init_mode0();
  machine(HP_THP_NEVER, 0, 0, 0, NULL);
  apply("glibc.malloc.hugetlb=1");
  cr_assert_eq(region_get_policy()->mode, 0);
  cr_assert(strstr(mp.mode_reason, "enabled=never"), "%s", mp.mode_reason);
  machine(HP_THP_UNSUPPORTED, 0, 0, 0, NULL);
  apply("glibc.malloc.hugetlb=1");
  cr_assert_eq(region_get_policy()->mode, 0);
  cr_assert(strstr(mp.mode_reason, "no THP"), "%s", mp.mode_reason);
}

/* ================================================================ mallopt */

Test(mallopt, parameters) {
  init_mode0();
  cr_assert_eq(hpt_mallopt(12345, 1), 1, "unknown parameters are ignored (glibc returns 1)");
  cr_assert_eq(hpt_mallopt(M_MXFAST, 161), 0);
  cr_assert_eq(hpt_mallopt(M_MXFAST, -1), 0);
  cr_assert_eq(hpt_mallopt(M_MXFAST, 0), 1);
  cr_assert_eq(mp.max_fast, 8 & ~(size_t)HP_ALIGN_MASK);
  cr_assert_eq(hpt_mallopt(M_CHECK_ACTION, 3), 1, "accepted (and ignored), as glibc");
  size_t test = mp.arena_test, max = mp.arena_max;
  cr_assert_eq(hpt_mallopt(M_ARENA_TEST, 0), 1);
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, -2), 1);
  cr_assert_eq(mp.arena_test, test, "non-positive values are ignored");
  cr_assert_eq(mp.arena_max, max);
  cr_assert_eq(hpt_mallopt(M_ARENA_TEST, 5), 1);
  cr_assert_eq(hpt_mallopt(M_ARENA_MAX, 3), 1);
  cr_assert_eq(mp.arena_test, 5);
  cr_assert_eq(mp.arena_max, 3);
}

Test(mallopt, perturb_fills_blocks) {
  init_mode0();
  tcache_switch_off(); /* no tcache: every call reaches the arena */
  cr_assert_eq(hpt_mallopt(M_PERTURB, 0x5a), 1);
  unsigned char *p = hpt_malloc(2000);
  cr_assert_not_null(p);
  for (size_t i = 0; i < 2000; i++) cr_assert_eq(p[i], 0x5a ^ 0xff, "byte %zu of a new block", i);
  unsigned char *guard = hpt_malloc(100); /* keeps p off the top */
  hpt_free(p);
  /* a freed chunk in a bin: its user bytes past the links carry the perturb byte */
  cr_assert_eq(p[100], 0x5a);
  cr_assert_eq(p[1999], 0x5a);
  unsigned char *z = hpt_calloc(1, 2000);
  for (size_t i = 0; i < 2000; i++) cr_assert_eq(z[i], 0, "calloc zeroes despite perturb");
  hpt_free(z);
  hpt_free(guard);
}

/* ================================================================ mode switch at run time */

static struct { int hugepage, collapse; uintptr_t addr; size_t len; } adv;
static int (*real_advise)(void *, size_t, enum hp_advice);

static int fake_advise(void *addr, size_t len, enum hp_advice a) {
  if (a == HP_ADV_HUGEPAGE) {
    adv.hugepage++;
    adv.addr = (uintptr_t)addr;
    adv.len = len;
    return 0;
  }
  if (a == HP_ADV_COLLAPSE) {
    adv.collapse++;
    return 0;
  }
  return real_advise(addr, len, a);
}

Test(set_mode, thp_advises_and_collapses_existing_heaps) {
  init_mode0();
  tcache_switch_off();
  void *v[64];
  for (int i = 0; i < 64; i++) v[i] = hpt_malloc(100000); /* 6 MB of heap, below the mmap threshold */
  struct heap *h = main_arena.heap;
  cr_assert_eq(h->reg.kind, HP_REGION_BASE);
  machine(HP_THP_MADVISE, 2 * MiB, 0, 0, NULL);
  real_advise = hp_kernel.advise;
  hp_kernel.advise = fake_advise;
  size_t thp_before = main_arena.bytes_thp;
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 1), 1);
  cr_assert_eq(region_get_policy()->mode, 1);
  cr_assert_eq(h->reg.kind, HP_REGION_THP);
  cr_assert_eq(h->reg.page, 2 * MiB);
  cr_assert_eq(adv.hugepage, 1);
  cr_assert_eq(adv.addr, (uintptr_t)h->reg.base);
  cr_assert_eq(adv.len, h->reg.reserved);
  cr_assert_eq(adv.collapse, 1, "6 MB committed hold whole huge pages to collapse");
  cr_assert_eq(main_arena.bytes_thp, thp_before + h->reg.committed);
  cr_assert_eq(mp.trim_threshold % (2 * MiB), 0);
  /* a second switch leaves THP heaps alone */
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 1), 1);
  cr_assert_eq(adv.hugepage, 1);
  for (int i = 0; i < 64; i++) hpt_free(v[i]);
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 0), 1);
  cr_assert_eq(region_get_policy()->mode, 0);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

Test(set_mode, refuses_what_the_heaps_cannot_take) {
  init_mode0();
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, -1), 0);
  machine(HP_THP_MADVISE, 2 * MiB, 2 * MiB, 2, sizes_2m_1g);
  size_t heap_max = mp.heap_max;
  cr_assert_lt(heap_max, 4 * GiB);
  /* 1 GiB pages need 4 GiB heaps; the heaps already laid out cannot */
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, (int)GiB), 0);
  cr_assert_eq(region_get_policy()->mode, 0, "the mode stays");
  cr_assert_eq(mp.heap_max, heap_max);
}

/* ================================================================ verbose start-up */

/* Start the allocator with GLIBC_TUNABLES=TUN and the extra environment
   variable EXTRA (or none); what it wrote into BUF.  Diagnostics go to the
   stderr of start-up only while descriptor 2 is still that file (diag.c),
   so they are caught in a file named by hpmalloc.stats_file (the report
   at exit kept off).  */
static void start_capturing(const char *tun, const char *extra, char *buf, size_t len) {
  char path[64], t[1024];
  snprintf(path, sizeof path, "/tmp/hpmalloc-verbose.%d", (int)getpid());
  unlink(path);
  snprintf(t, sizeof t, "hpmalloc.stats=0:hpmalloc.stats_file=%s:%s", path, tun);
  setenv("GLIBC_TUNABLES", t, 1);
  if (extra) putenv((char *)extra);
  hp_ensure_init();
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
  buf[n > 0 ? n : 0] = '\0';
  if (fd >= 0) close(fd);
  unlink(path);
}

/* A program that put another file on descriptor 2 after start-up gets no
   diagnostics there.  */
Test(init, verbose_not_written_to_a_replaced_stderr) {
  setenv("GLIBC_TUNABLES", "hpmalloc.verbose=1", 1);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  int saved = dup(STDERR_FILENO);
  dup2(fds[1], STDERR_FILENO);
  hp_ensure_init();
  dup2(saved, STDERR_FILENO);
  close(fds[1]);
  char buf[256];
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  cr_assert_eq(n, 0, "wrote %zd bytes into the pipe on descriptor 2", n);
  close(fds[0]);
}

Test(init, verbose_prints_the_mode) {
  char buf[1024];
  start_capturing("glibc.malloc.hugetlb=0:hpmalloc.verbose=1", NULL, buf, sizeof buf);
  cr_assert(strstr(buf, "hpmalloc " HPMALLOC_VERSION_STRING ": hugetlb mode 0, page ") == buf, "%s", buf);
  cr_assert(strstr(buf, "hugetlb=0 (default)") && strstr(buf, "placement: "), "%s", buf);
  cr_assert(!strstr(buf, "ignored"), "%s", buf);
}

/* The typo of issue 15 (glibc.malloc.hugtlb=1 ran in mode 0 without a
   word): verbose names every entry it ignored and why.  */
Test(init, verbose_names_what_it_ignored) {
  char buf[2048];
  start_capturing("glibc.malloc.hugtlb=1:malloc.perturb=300:glibc.pthread.rseq=0:malloc.top_pad=1x:junk",
                  "HPMALLOC_VERBOSE=1", buf, sizeof buf);
  cr_assert(strstr(buf, ": hugetlb mode 0, page ") != NULL, "%s", buf);
  cr_expect(strstr(buf, "\nhpmalloc: ignored GLIBC_TUNABLES entry glibc.malloc.hugtlb=1: unknown tunable "
                        "(did you mean glibc.malloc.hugetlb?)\n") != NULL,
            "%s", buf);
  cr_expect(strstr(buf, "\nhpmalloc: ignored GLIBC_TUNABLES entry malloc.perturb=300: out of range (0 to 255)\n"),
            "%s", buf);
  cr_expect(strstr(buf, "\nhpmalloc: ignored GLIBC_TUNABLES entry malloc.top_pad=1x: not a number"), "%s", buf);
  cr_expect(strstr(buf, "\nhpmalloc: ignored GLIBC_TUNABLES entry junk: no value"), "%s", buf);
  cr_expect(!strstr(buf, "rseq"), "glibc's own tunables are not hpmalloc's to judge: %s", buf);
  int lines = 0;
  for (const char *p = buf; *p; p++) lines += *p == '\n';
  cr_expect_eq(lines, 5, "%s", buf);
}

Test(init, verbose_names_bad_aliases) {
  char buf[1024];
  start_capturing("hpmalloc.verbose=1", "MALLOC_ARENA_MAX=two", buf, sizeof buf);
  cr_expect(strstr(buf, "\nhpmalloc: ignored MALLOC_ARENA_MAX=two: not a number"), "%s", buf);
}

/* glibc says nothing about what it ignores; neither does hpmalloc
   unless asked.  */
Test(init, silent_without_verbose) {
  char buf[1024];
  start_capturing("glibc.malloc.hugtlb=1:malloc.perturb=300", "MALLOC_ARENA_MAX=two", buf, sizeof buf);
  cr_expect_str_eq(buf, "");
}

/* ================================================================ entry points */

Test(api, free_sized_and_aligned_sized) {
  init_mode0();
  void *p = hpt_malloc(100);
  void *q = hpt_aligned_alloc(256, 1000);
  cr_assert_not_null(p);
  cr_assert_not_null(q);
  cr_assert_eq((uintptr_t)q % 256, 0);
  hpt_free_sized(p, 100);
  hpt_free_aligned_sized(q, 256, 1000);
  hpt_free_sized(NULL, 0);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

Test(api, overflowing_sizes) {
  init_mode0();
  void *p = hpt_malloc(10);
  errno = 0;
  cr_assert_null(hpt_reallocarray(p, SIZE_MAX / 2, 3));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(hpt_realloc(p, SIZE_MAX - 100));
  cr_assert_eq(errno, ENOMEM, "the old block stays");
  p = hpt_reallocarray(p, 10, 10);
  cr_assert_not_null(p);
  cr_assert_geq(hpt_malloc_usable_size(p), 100);
  errno = 0;
  cr_assert_null(hpt_pvalloc(SIZE_MAX - 10));
  cr_assert_eq(errno, ENOMEM);
  void *v = hpt_pvalloc(1);
  cr_assert_not_null(v);
  cr_assert_eq((uintptr_t)v % mp.page, 0);
  cr_assert_geq(hpt_malloc_usable_size(v), mp.page);
  hpt_free(v);
  hpt_free(p);
}

static void *no_remap(void *old, size_t oldlen, size_t newlen, int may_move) {
  (void)old, (void)oldlen, (void)newlen, (void)may_move;
  return NULL;
}

static void fill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + 3);
}
static void expect_filled(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(i * 7 + 3)) cr_assert_fail("byte %zu lost", i);
}

Test(api, realloc_mapped_chunk) {
  init_mode0();
  mp.no_dyn_threshold = true; /* keep the 128 KiB threshold */
  unsigned char *p = hpt_malloc(1 * MiB);
  cr_assert(chunk_is_mmapped(mem2chunk(p)));
  fill(p, MiB);
  p = hpt_realloc(p, 3 * MiB); /* mremap */
  cr_assert_not_null(p);
  cr_assert(chunk_is_mmapped(mem2chunk(p)));
  expect_filled(p, MiB);
  fill(p, 3 * MiB);
  p = hpt_realloc(p, 2 * MiB); /* shrinks in place */
  expect_filled(p, 2 * MiB);

  /* without mremap: growing moves by copying, shrinking keeps the block */
  hp_kernel.remap = no_remap;
  size_t n_mmaps = atomic_load(&mp.n_mmaps);
  unsigned char *q = hpt_realloc(p, 4 * MiB);
  cr_assert_not_null(q);
  cr_assert_neq(q, p);
  expect_filled(q, 2 * MiB);
  cr_assert_eq(atomic_load(&mp.n_mmaps), n_mmaps, "the old mapping was released");
  fill(q, 4 * MiB);
  unsigned char *r = hpt_realloc(q, 1 * MiB);
  cr_assert_eq(r, q, "shrinking without mremap keeps the block");
  expect_filled(r, MiB);
  hpt_free(r);
  cr_assert_eq(atomic_load(&mp.n_mmaps), n_mmaps - 1);
}
