/* SPDX-License-Identifier: MIT */
/* Unit tests of what the statistics say about huge pages: the census's
 * parsers (sysdeps/unix/sysv/linux/census.c) on the smaps fixtures under
 * tests/fixtures/smaps/ and on made-up PAGEMAP_SCAN output, the census
 * live against the kernel's own smaps, and through the allocator
 * (malloc/backed.c, mmapped.c's registry, stats.c): advised and backed
 * bytes per kind of region, a faked census (unknown, or everything huge),
 * old callers not paying for the census, the registry when it overflows,
 * the report at exit, and that none of the census allocates.  MIT
 * licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unit_helpers.h"
#include "backed.h"
#include "hpt_api.h"
#include "mmapped.h"
#include "stats.h"
#include "../../sysdeps/unix/sysv/linux/hp_linux.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* ================================================================ helpers */

static const char *fixture(const char *name) {
  static char path[1024];
  const char *env = getenv("HPMALLOC_TEST_FIXTURES");
  if (env && *env) {
    snprintf(path, sizeof path, "%s/smaps/%s", env, name);
  } else {
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*s/../fixtures/smaps/%s", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".", name);
  }
  cr_assert_eq(access(path, R_OK), 0, "fixture %s is missing", path);
  return path;
}

static bool thp_on(void) {
  char buf[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  bool ok = fgets(buf, sizeof buf, f) && (strstr(buf, "[madvise]") || strstr(buf, "[always]"));
  fclose(f);
  return ok;
}

static bool thp_always(void) {
  char buf[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  bool ok = fgets(buf, sizeof buf, f) && strstr(buf, "[always]");
  fclose(f);
  return ok;
}

/* The kernel's own figure, read with stdio here (the test may allocate):
   AnonHugePages plus Private_ and Shared_Hugetlb of the smaps entries that
   lie inside [lo, hi), in bytes.  */
static size_t smaps_huge_inside(uintptr_t lo, uintptr_t hi) {
  FILE *f = fopen("/proc/self/smaps", "r");
  cr_assert_not_null(f);
  char line[4096];
  bool in = false;
  size_t kb = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b, v;
    char name[64];
    if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = a >= lo && b <= hi;
    else if (in && sscanf(line, "%63[A-Za-z_]: %lu kB", name, &v) == 2 &&
             (!strcmp(name, "AnonHugePages") || !strcmp(name, "Private_Hugetlb") || !strcmp(name, "Shared_Hugetlb")))
      kb += v;
  }
  fclose(f);
  return kb * KiB;
}

/* Sum smaps_huge_inside over the main arena's heaps.  */
static size_t smaps_huge_of_main_heaps(void) {
  size_t sum = 0;
  for (struct heap *h = main_arena.heap; h; h = h->prev)
    sum += smaps_huge_inside((uintptr_t)h->reg.base, (uintptr_t)h->reg.base + h->reg.committed);
  return sum;
}

static void fill_small(size_t bytes) {
  for (size_t i = 0; i < bytes / 100; i++) {
    char *p = hpt_malloc(100);
    cr_assert_not_null(p);
    memset(p, 1, 100);
  }
}

static size_t diff(size_t a, size_t b) { return a > b ? a - b : b - a; }

/* ================================================================ the parsers */

/* The fixtures hold, in order: a program's text, a heap's guard page, the
   heap's committed part (18 MiB, all of it on THP), its inaccessible tail,
   a file mapping with a path longer than the reader's line buffer (whose
   fields claim 4 MiB of AnonHugePages), a hugetlb mapping with one of its
   two 2 MiB pages present, and libc.  */
static void check_fixture(const char *name) {
  struct hp_mem_range r[] = {
    { 0x7f17bffff000, 0x7f17c1200000, 99 }, /* guard and heap */
    { 0x7f17c1200000, 0x7f17c4400000, 99 }, /* tail and the long-path mapping */
    { 0x7f1800000000, 0x7f1800400000, 99 }, /* hugetlb */
    { 0x7f18004fd000, 0x7f1800523000, 99 }, /* libc */
    { 0x1000, 0x2000, 99 },                 /* nothing there */
  };
  cr_assert_eq(hp_linux_smaps_huge(fixture(name), r, 5), 0);
  cr_assert_eq(r[0].huge, 18432 * KiB, "%s: heap %zu", name, r[0].huge);
  cr_assert_eq(r[1].huge, 0, "%s: the long header's fields went to the mapping before it: %zu", name, r[1].huge);
  cr_assert_eq(r[2].huge, 2048 * KiB, "%s: hugetlb %zu", name, r[2].huge);
  cr_assert_eq(r[3].huge, 0);
  cr_assert_eq(r[4].huge, 0);
}

Test(smaps, fixture_linux_6_18) { check_fixture("linux-6.18"); }

/* Without VmFlags lines (kernels before 3.8) the Size line keeps the long
   header's fields from the mapping before it.  */
Test(smaps, fixture_without_vmflags) { check_fixture("no-vmflags"); }

/* A range that covers part of a mapping gets that part of its huge pages.  */
Test(smaps, straddling_ranges_share_in_proportion) {
  struct hp_mem_range r[] = {
    { 0x7f17c0000000 + 9 * MiB, 0x7f17c1200000 + 4 * MiB, 0 }, /* half the heap, part of the tail */
    { 0x7f1800000000, 0x7f1800200000, 0 },                     /* half the hugetlb mapping */
  };
  cr_assert_eq(hp_linux_smaps_huge(fixture("linux-6.18"), r, 2), 0);
  cr_assert_eq(r[0].huge, 9216 * KiB, "%zu", r[0].huge);
  cr_assert_eq(r[1].huge, 1024 * KiB, "%zu", r[1].huge);
}

Test(smaps, lines) {
  struct hp_mem_range r = { 0x10000, 0x30000, 7 };
  struct hp_smaps sm;
  hp_linux_smaps_start(&sm, &r, 1);
  cr_assert_eq(r.huge, 0, "start zeroes the ranges");
  char l0[] = "AnonHugePages:    64 kB"; /* before any header: dropped */
  char l1[] = "10000-30000 rw-p 00000000 00:00 0 ";
  char l2[] = "Size:                128 kB";
  char l3[] = "ShmemPmdMapped:      64 kB"; /* not anonymous memory of ours */
  char l4[] = "AnonHugePages:       64 kB";
  char l5[] = "Private_Hugetlb:      8 kB";
  char l6[] = "Shared_Hugetlb:       4 kB";
  char l7[] = "VmFlags: rd wr mr mw me ac hg";
  char l8[] = "AnonHugePages:     1024 kB"; /* after VmFlags, without a header: dropped */
  char l9[] = "zz-30000 rw-p"; /* not a header */
  char *lines[] = { l0, l1, l2, l3, l4, l5, l6, l7, l8, l9 };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) cr_assert_eq(hp_linux_smaps_line(lines[i], &sm), 0);
  cr_assert_eq(r.huge, 76 * KiB, "%zu", r.huge);
  char h2[] = "10000-30000 rw-p 00000000 00:00 0";
  char s2[] = "Size:                 64 kB"; /* not this header's size: the header line was lost */
  char a2[] = "AnonHugePages:       64 kB";
  char *more[] = { h2, s2, a2 };
  for (size_t i = 0; i < 3; i++) hp_linux_smaps_line(more[i], &sm);
  cr_assert_eq(r.huge, 76 * KiB, "fields after a mismatched Size: %zu", r.huge);
}

Test(smaps, unreadable) {
  struct hp_mem_range r = { 0x1000, 0x2000, 5 };
  errno = 0;
  cr_assert_eq(hp_linux_smaps_huge("/nonexistent/smaps", &r, 1), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(r.huge, 0);
}

/* PAGEMAP_SCAN's output, clipped to the range asked about.  */
Test(pagemap, regions_bytes) {
  const struct hp_page_region v[] = {
    { 0x100000, 0x300000, 1 << 6 }, /* starts before the range */
    { 0x400000, 0x600000, 1 << 6 }, /* inside */
    { 0x700000, 0x900000, 1 << 6 }, /* ends after */
    { 0xa00000, 0xc00000, 1 << 6 }, /* outside */
  };
  cr_assert_eq(hp_linux_regions_bytes(v, 4, 0x200000, 0x800000), 0x100000 + 0x200000 + 0x100000);
  cr_assert_eq(hp_linux_regions_bytes(v, 4, 0, UINT64_MAX), 4 * 0x200000);
  cr_assert_eq(hp_linux_regions_bytes(v, 0, 0, UINT64_MAX), 0);
  cr_assert_eq(hp_linux_regions_bytes(v, 4, 0x300000, 0x400000), 0, "between two regions");
}

/* ================================================================ the census, live */

/* A 2 MiB-aligned mapping of `len` bytes, advised as asked and touched.  */
static char *touched_mapping(size_t len, enum hp_advice adv) {
  char *raw = hp_os_map(NULL, len + 2 * MiB, HP_PROT_RW, 0, 0);
  cr_assert_not_null(raw);
  char *p = (char *)align_up((uintptr_t)raw, 2 * MiB);
  hp_os_advise(p, len, adv);
  for (size_t off = 0; off < len; off += 4096) p[off] = 1;
  return p;
}

Test(census, live_agrees_with_smaps) {
  if (!thp_on()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  char *thp = touched_mapping(16 * MiB, HP_ADV_HUGEPAGE);
  char *base = touched_mapping(8 * MiB, HP_ADV_NOHUGEPAGE);
  hp_os_advise(thp + 3 * MiB, 4096, HP_ADV_DONTNEED); /* splits the second huge page */
  struct hp_mem_range r[] = { { (uintptr_t)thp, (uintptr_t)thp + 16 * MiB, 0 },
                              { (uintptr_t)base, (uintptr_t)base + 8 * MiB, 0 } };
  enum hp_census how = hp_os_huge_backed(r, 2);
  cr_assert_neq(how, HP_CENSUS_UNKNOWN);
  size_t kernel = smaps_huge_inside(r[0].lo, r[0].hi);
  cr_assert_geq(kernel, 8 * MiB, "THP granted only %zu bytes of 16 MiB", kernel);
  cr_assert_lt(kernel, 16 * MiB, "the split page is still counted");
  cr_assert_eq(r[0].huge, kernel, "census %zu (how %d), smaps %zu", r[0].huge, how, kernel);
  cr_assert_eq(r[1].huge, 0);
  struct hp_mem_range s[2] = { r[0], r[1] };
  cr_assert_eq(hp_linux_smaps_huge("/proc/self/smaps", s, 2), 0);
  cr_assert_eq(s[0].huge, kernel, "the smaps fallback on the same range");
  cr_assert_eq(s[1].huge, 0);
}

/* Linux 6.7 and later: the page-by-page census is the one used.  */
Test(census, pagemap_scan_where_the_kernel_has_it) {
  int fd = open("/proc/self/pagemap", O_RDONLY);
  cr_assert_geq(fd, 0);
  struct hp_mem_range r = { 0, 0, 0 };
  int rc = hp_linux_scan_huge(fd, &r, 1);
  int err = errno;
  close(fd);
  if (rc != 0 && (err == ENOTTY || err == EINVAL)) cr_skip_test("no PAGEMAP_SCAN on this kernel (before 6.7)");
  cr_assert_eq(rc, 0);
  cr_assert_eq(hp_os_huge_backed(NULL, 0), HP_CENSUS_PAGEMAP_SCAN);
}

/* ================================================================ through the allocator */

static struct hpmalloc_stats stats_now(void) {
  struct hpmalloc_stats st;
  memset(&st, 0xa5, sizeof st);
  cr_assert_eq(hpmalloc_stats(&st, sizeof st), 0);
  cr_assert_eq(st.version, sizeof st);
  return st;
}

Test(backed, base_page_heap_is_not_on_huge_pages) {
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 0), 1);
  fill_small(32 * MiB);
  struct hpmalloc_stats st = stats_now();
  cr_assert_neq(st.backed_source, HPMALLOC_BACKED_UNKNOWN);
  cr_assert_eq(st.bytes_heap_thp, 0);
  cr_assert_geq(st.bytes_heap, 32 * MiB);
  if (thp_always()) cr_skip_test("THP enabled=always: the kernel may put any heap on huge pages");
  cr_assert_eq(st.bytes_heap_thp_backed, 0, "%zu", st.bytes_heap_thp_backed);
  cr_assert_eq(st.bytes_heap_hugetlb_backed, 0);
}

Test(backed, thp_heap_agrees_with_smaps) {
  if (!thp_on()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 1), 1);
  fill_small(64 * MiB);
  struct hpmalloc_stats st = stats_now();
  size_t kernel = smaps_huge_of_main_heaps();
  cr_assert_geq(st.bytes_heap_thp, 64 * MiB, "advised %zu", st.bytes_heap_thp);
  cr_assert_geq(kernel, 32 * MiB, "the kernel gave only %zu bytes of huge pages", kernel);
  cr_assert_leq(diff(st.bytes_heap_thp_backed, kernel), 2 * MiB, "backed %zu, smaps %zu", st.bytes_heap_thp_backed,
                kernel);
  cr_assert_leq(st.bytes_heap_thp_backed, st.bytes_heap_thp);
  cr_assert_eq(st.bytes_thp, st.bytes_heap_thp + st.bytes_mmapped_thp);
}

/* ---------------------------------------------------------------- a faked census */

static size_t census_calls, census_ranges;

static enum hp_census census_unknown(struct hp_mem_range *r, size_t n) {
  census_calls++;
  for (size_t i = 0; i < n; i++) r[i].huge = 12345; /* must not show */
  return HP_CENSUS_UNKNOWN;
}

/* Everything the allocator holds is on huge pages.  */
static enum hp_census census_all_huge(struct hp_mem_range *r, size_t n) {
  census_calls++;
  census_ranges += n;
  for (size_t i = 0; i < n; i++) {
    cr_assert_lt(r[i].lo, r[i].hi);
    r[i].huge = r[i].hi - r[i].lo;
  }
  return HP_CENSUS_SMAPS;
}

Test(backed, unknown_is_reported_as_unknown) {
  hp_census_fn = census_unknown;
  char *big = hpt_malloc(8 * MiB);
  fill_small(MiB);
  struct hpmalloc_stats st = stats_now();
  cr_assert_geq(census_calls, 1);
  cr_assert_eq(st.backed_source, HPMALLOC_BACKED_UNKNOWN);
  cr_assert_eq(st.bytes_heap_thp_backed + st.bytes_heap_hugetlb_backed, 0);
  cr_assert_eq(st.bytes_mmapped_thp_backed + st.bytes_mmapped_hugetlb_backed, 0);
  char *xml = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&xml, &len);
  cr_assert_eq(hpt_malloc_info(0, f), 0);
  fclose(f);
  cr_assert_not_null(strstr(xml, "<backed source=\"unknown\" thp=\"0\" hugetlb=\"0\" mmap_thp=\"0\""), "%s", xml);
  cr_assert_null(strstr(xml, "12345"));
  free(xml);
  hpt_free(big);
}

/* A caller built against 0.1.0's header, or the first 0.2.0 one, passes a
   smaller struct: it gets its fields and the census is not taken.  */
Test(backed, old_callers_do_not_pay) {
  hp_census_fn = census_all_huge;
  fill_small(MiB);
  struct hpmalloc_stats st;
  memset(&st, 0xa5, sizeof st);
  cr_assert_eq(hpmalloc_stats(&st, offsetof(struct hpmalloc_stats, bytes_cached)), 0);
  cr_assert_eq(st.version, offsetof(struct hpmalloc_stats, bytes_cached));
  cr_assert_eq(st.bytes_cached, (size_t)0xa5a5a5a5a5a5a5a5, "a field past the caller's struct was written");
  cr_assert_eq(hpmalloc_stats(&st, offsetof(struct hpmalloc_stats, bytes_heap_thp_backed)), 0);
  cr_assert_eq(census_calls, 0);
  cr_assert_eq(st.bytes_heap_thp_backed, (size_t)0xa5a5a5a5a5a5a5a5);
  cr_assert_eq(hpmalloc_stats(&st, sizeof st), 0);
  cr_assert_geq(census_calls, 1);
}

/* With every range reported whole, the backed figures are exactly what the
   allocator holds: the census saw each heap's committed part and each
   mapped chunk's mapping, across several batches, and nothing else.  */
Test(backed, every_range_is_measured_once) {
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 0), 1);
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
  enum { N = 150 };
  static char *p[N];
  for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = hpt_malloc(100 * 1024 + (size_t)i * 4096));
  fill_small(2 * MiB);
  p[0] = hpt_realloc(p[0], 3 * MiB); /* mremap: the registry follows the move */
  cr_assert_not_null(p[0]);
  hpt_free(p[1]);
  p[1] = NULL;
  hp_census_fn = census_all_huge;
  struct hpmalloc_stats st = stats_now();
  cr_assert_eq(st.backed_source, HPMALLOC_BACKED_SMAPS);
  cr_assert_eq(st.n_mmapped, N - 1);
  cr_assert_eq(st.n_mmapped_unmeasured, 0);
  cr_assert_eq(census_ranges, st.n_mmapped + st.n_heaps, "ranges %zu", census_ranges);
  cr_assert_geq(census_calls, 3, "150 ranges take three batches");
  cr_assert_eq(st.bytes_heap_thp_backed + st.bytes_heap_hugetlb_backed, st.bytes_heap);
  cr_assert_eq(st.bytes_mmapped_thp_backed + st.bytes_mmapped_hugetlb_backed, st.bytes_mmapped);
  for (int i = 0; i < N; i++) hpt_free(p[i]);
}

/* More mapped chunks than the registry holds: the rest are counted as
   unmeasured, and the count goes back to 0 as they are freed.  */
Test(backed, registry_overflow_is_counted) {
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 0), 1);
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
  enum { N = 4400 };
  char **p = calloc(N, sizeof *p);
  for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = hpt_malloc(64 * 1024));
  hp_census_fn = census_all_huge;
  struct hpmalloc_stats st = stats_now();
  cr_assert_eq(st.n_mmapped, N);
  cr_assert_geq(st.n_mmapped_unmeasured, N - 4096);
  cr_assert_eq(census_ranges - st.n_heaps + st.n_mmapped_unmeasured, N, "every chunk measured or counted");
  for (int i = 0; i < N; i++) hpt_free(p[i]);
  free(p);
  st = stats_now();
  cr_assert_eq(st.n_mmapped, 0);
  cr_assert_eq(st.n_mmapped_unmeasured, 0);
  cr_assert_eq(st.bytes_mmapped_thp_backed, 0);
}

/* ---------------------------------------------------------------- the report at exit */

static char report[8192];

static void report_to_stderr(void) { hp_stats_report_fd(2); }

static void report_of_child(void) {
  int status = run_in_child(report_to_stderr, report, sizeof report, 20);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

/* The row of the report whose label is `label`: its 8 cells, as text.  */
static void row(const char *label, char cells[8][16]) {
  char start[32];
  snprintf(start, sizeof start, "\n%-10s", label);
  const char *p = strstr(report, start);
  cr_assert_not_null(p, "no row %s in:\n%s", label, report);
  p += 11;
  for (int i = 0; i < 8; i++, p += 12) {
    char cell[13];
    memcpy(cell, p, 12);
    cell[12] = '\0';
    char *c = cell;
    while (*c == ' ') c++;
    snprintf(cells[i], 16, "%s", c);
  }
}

Test(report, what_it_says) {
  if (!thp_on()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  cr_assert_eq(hpt_mallopt(HPMALLOC_M_HUGETLB, 1), 1);
  fill_small(24 * MiB);
  char *big = hpt_malloc(6 * MiB + 100);
  cr_assert_not_null(big);
  report_of_child();
  cr_assert_not_null(strstr(report, "hpmalloc " HPMALLOC_VERSION_STRING ": statistics at exit of process"), "%s",
                     report);
  cr_assert_not_null(strstr(report, "\nmode 1, huge page 2048 KiB: "), "%s", report);
  cr_assert_not_null(strstr(report, "\nhuge pages backed: measured "), "%s", report);
  cr_assert_not_null(strstr(report, "\nfallbacks: "), "%s", report);
  /* 24 MiB of small blocks grew the heap: commits, each timed */
  const char *kw = strstr(report, "\nkernel work: ");
  cr_assert_not_null(kw, "%s", report);
  size_t commits = 0, ms = 0, tenths = 0;
  cr_assert_eq(sscanf(kw, "\nkernel work: %zu commits in %zu.%zu ms, ", &commits, &ms, &tenths), 3, "%s", report);
  cr_assert(commits >= 1 && tenths <= 9, "%s", report);
  char c[8][16];
  row("arena 0", c);
  cr_assert_str_eq(c[3], "-", "an arena has no cached column: %s", report);
  cr_assert(strstr(c[0], " MiB") && strstr(c[4], " MiB") && strstr(c[5], " MiB"), "%s", report);
  row("total", c);
  double backed = strtod(c[5], NULL), advised = strtod(c[4], NULL);
  cr_assert(backed >= 16 && backed <= advised, "backed %s of advised %s:\n%s", c[5], c[4], report);
  row("mmapped", c);
  cr_assert_str_eq(c[2], "-");
  hpt_free(big);
}

Test(report, unknown_backed_is_a_question_mark) {
  hp_census_fn = census_unknown;
  fill_small(MiB);
  report_of_child();
  char c[8][16];
  row("total", c);
  cr_assert_str_eq(c[5], "?", "%s", report);
  cr_assert_str_eq(c[7], "?");
  cr_assert_not_null(strstr(report, "huge pages backed: unknown"), "%s", report);
}

/* ================================================================ no allocation */

/* This executable's malloc: counts the calls while `counting` is set.  */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t s);
extern void *__libc_realloc(void *p, size_t n);
static volatile int counting;
static volatile unsigned long allocations;
void *malloc(size_t n) {
  allocations += counting;
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t s) {
  allocations += counting;
  return __libc_calloc(n, s);
}
void *realloc(void *p, size_t n) {
  allocations += counting;
  return __libc_realloc(p, n);
}

Test(no_alloc, census_and_stats) {
  fill_small(4 * MiB);
  char *big = hpt_malloc(4 * MiB);
  struct hp_mem_range r[] = { { (uintptr_t)big & ~(uintptr_t)4095, ((uintptr_t)big & ~(uintptr_t)4095) + MiB, 0 } };
  struct hpmalloc_stats st;
  allocations = 0;
  counting = 1;
  hp_os_huge_backed(r, 1);
  hp_linux_smaps_huge("/proc/self/smaps", r, 1);
  hpmalloc_stats(&st, sizeof st);
  counting = 0;
  cr_assert_eq(allocations, 0, "the census or hpmalloc_stats called malloc %lu times", allocations);
  hpt_free(big);
}
