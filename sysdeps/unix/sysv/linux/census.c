/* SPDX-License-Identifier: MIT */
/* census.c: how much of some address ranges the kernel maps with huge
 * pages now (hp_os_huge_backed).  MIT licence.
 *
 * "Advised" is what the allocator asked for; "backed" is what the kernel
 * gave, and only the kernel's page tables know it.  Two ways to ask them:
 *
 *   PAGEMAP_SCAN (Linux 6.7+): an ioctl on /proc/self/pagemap that walks
 *   the page tables of one range and returns the runs of pages in the
 *   categories asked for: here present and huge (a PMD-mapped THP or a
 *   hugetlb page; a THP split into base-page mappings is not huge, as
 *   smaps' AnonHugePages does not count it either).  Exact to the page, and
 *   it costs only the ranges asked about: a 200 MiB heap on THP is about a
 *   hundred page-table entries.
 *
 *   /proc/self/smaps: every mapping of the process with its AnonHugePages
 *   and Private_Hugetlb/Shared_Hugetlb.  Exact for mappings that lie inside
 *   a range, which the allocator's do (each heap is its own mapping between
 *   a guard page and an inaccessible tail); but the kernel walks the page
 *   tables of the whole process to print it, and a mapping that crosses a
 *   range's edge can only be shared out in proportion.
 *
 * The first is tried once; a kernel without it answers ENOTTY or EINVAL,
 * and from then on smaps is used (remembered, as the probe's answers are).
 * Without /proc neither works, and the answer is "unknown", never 0.
 *
 * Nothing here allocates: the page regions and the smaps lines go through
 * stack buffers.  Contracts are in hp_sys.h and hp_linux.h.  */
#include "hp_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The kernel's PAGEMAP_SCAN interface (include/uapi/linux/fs.h, 6.7),
   declared here because older headers lack it; the layout and the numbers
   are the kernel ABI.  The kernel reads what cppcheck calls unused.  */
struct hp_pm_scan_arg {
  uint64_t size;                /* cppcheck-suppress unusedStructMember ; sizeof the struct */
  uint64_t flags;               /* cppcheck-suppress unusedStructMember ; 0: only read, write-protect nothing */
  uint64_t start;               /* cppcheck-suppress unusedStructMember ; the range to walk */
  uint64_t end;                 /* cppcheck-suppress unusedStructMember */
  uint64_t walk_end;            /* out: where the walk stopped */
  uint64_t vec;                 /* cppcheck-suppress unusedStructMember ; the output array ... */
  uint64_t vec_len;             /* cppcheck-suppress unusedStructMember ; ... and its length */
  uint64_t max_pages;           /* cppcheck-suppress unusedStructMember ; 0: no limit */
  uint64_t category_inverted;   /* cppcheck-suppress unusedStructMember */
  uint64_t category_mask;       /* cppcheck-suppress unusedStructMember ; categories a page must all have */
  uint64_t category_anyof_mask; /* cppcheck-suppress unusedStructMember */
  uint64_t return_mask;         /* cppcheck-suppress unusedStructMember ; categories reported */
};
#define HP_PAGEMAP_SCAN _IOWR('f', 16, struct hp_pm_scan_arg)
enum { HP_PAGE_IS_PRESENT = 1 << 3, HP_PAGE_IS_HUGE = 1 << 6 };

/* ---------------------------------------------------------------- PAGEMAP_SCAN */

uint64_t hp_linux_regions_bytes(const struct hp_page_region *v, size_t n, uint64_t lo, uint64_t hi) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = v[i].start > lo ? v[i].start : lo, b = v[i].end < hi ? v[i].end : hi;
    if (b > a) sum += b - a;
  }
  return sum;
}

enum { SCAN_VEC = 16 };

/* One range: the kernel fills up to SCAN_VEC runs per call and says in
   walk_end where it stopped when they ran out.  */
static int scan_range(int fd, struct hp_mem_range *r) {
  struct hp_page_region v[SCAN_VEC];
  uint64_t start = r->lo;
  r->huge = 0;
  /* written by the kernel, but valgrind does not know this ioctl and would
     take the runs for undefined memory */
  memset(v, 0, sizeof v);
  while (start < r->hi) {
    struct hp_pm_scan_arg a = { .size = sizeof a,
                                .start = start,
                                .end = r->hi,
                                .vec = (uint64_t)(uintptr_t)v,
                                .vec_len = SCAN_VEC,
                                .category_mask = HP_PAGE_IS_PRESENT | HP_PAGE_IS_HUGE,
                                .return_mask = HP_PAGE_IS_HUGE };
    long got = ioctl(fd, HP_PAGEMAP_SCAN, &a);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    r->huge += (size_t)hp_linux_regions_bytes(v, (size_t)got, r->lo, r->hi);
    if (got < SCAN_VEC || a.walk_end <= start) break; /* the walk reached the end (or made no progress) */
    start = a.walk_end;
  }
  return 0;
}

int hp_linux_scan_huge(int fd, struct hp_mem_range *r, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (scan_range(fd, &r[i]) != 0) return -1;
  return 0;
}

/* ---------------------------------------------------------------- smaps */

/* A hexadecimal number at *s, *s moved past it: 0, or -1 when there is no
   digit or it overflows.  */
static int parse_hex(const char **s, uint64_t *out) {
  const char *p = *s;
  uint64_t v = 0;
  for (;; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9')
      d = (unsigned)(*p - '0');
    else if (*p >= 'a' && *p <= 'f')
      d = (unsigned)(*p - 'a' + 10);
    else
      break;
    if (v >> 60) return -1;
    v = v << 4 | d;
  }
  if (p == *s) return -1;
  *s = p;
  *out = v;
  return 0;
}

/* v * part / whole without overflow where it matters (part <= whole).  */
static uint64_t share(uint64_t v, uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  if (part >= whole) return v;
  if (part == 0 || v <= UINT64_MAX / part) return v * part / whole;
  return v / whole * part;
}

/* Add `bytes` of the current mapping to the ranges it overlaps.  */
static void smaps_add(struct hp_smaps *sm, uint64_t bytes) {
  for (size_t i = 0; i < sm->n; i++) {
    struct hp_mem_range *r = &sm->r[i];
    uint64_t a = r->lo > sm->lo ? r->lo : sm->lo, b = r->hi < sm->hi ? r->hi : sm->hi;
    if (b > a) r->huge += (size_t)share(bytes, b - a, sm->hi - sm->lo);
  }
}

/* "Name:   N kB" at line: N in bytes, or -1 when the line is not that.  */
static int field_kb(const char *line, const char *name, uint64_t *bytes) {
  size_t len = strlen(name);
  uint64_t kb;
  if (strncmp(line, name, len) != 0) return -1;
  line += len;
  if (hp_linux_parse_u64(&line, &kb) != 0 || kb > UINT64_MAX / 1024) return -1;
  *bytes = kb * 1024;
  return 0;
}

void hp_linux_smaps_start(struct hp_smaps *sm, struct hp_mem_range *r, size_t n) {
  sm->r = r;
  sm->n = n;
  sm->lo = sm->hi = 0;
  for (size_t i = 0; i < n; i++) r[i].huge = 0;
}

int hp_linux_smaps_line(char *line, void *ctx) {
  struct hp_smaps *sm = ctx;
  const char *p = line;
  uint64_t lo, hi, bytes;
  if (parse_hex(&p, &lo) == 0 && *p == '-' && (p++, parse_hex(&p, &hi) == 0) && *p == ' ' && hi >= lo) {
    sm->lo = lo; /* a mapping's header: "lo-hi perms offset dev inode path" */
    sm->hi = hi;
    return 0;
  }
  if (sm->lo == sm->hi) return 0; /* the fields of a mapping whose header was not seen */
  if (field_kb(line, "Size:", &bytes) == 0) {
    if (bytes != sm->hi - sm->lo) sm->lo = sm->hi = 0; /* not this header's fields */
  } else if (field_kb(line, "AnonHugePages:", &bytes) == 0 || field_kb(line, "Private_Hugetlb:", &bytes) == 0 ||
             field_kb(line, "Shared_Hugetlb:", &bytes) == 0) {
    smaps_add(sm, bytes);
  } else if (strncmp(line, "VmFlags:", 8) == 0) {
    sm->lo = sm->hi = 0;
  }
  return 0;
}

int hp_linux_smaps_huge(const char *path, struct hp_mem_range *r, size_t n) {
  char buf[1024];
  struct hp_smaps sm;
  hp_linux_smaps_start(&sm, r, n);
  if (hp_linux_read_lines(path, buf, sizeof buf, hp_linux_smaps_line, &sm) == 0) return 0;
  for (size_t i = 0; i < n; i++) r[i].huge = 0;
  return -1;
}

/* ---------------------------------------------------------------- the census */

/* Whether this kernel has PAGEMAP_SCAN: 0 not known yet, 1 yes, -1 no.
   Racing first callers may both probe; they find the same answer.  */
static _Atomic int scan_works;

/* Measure with PAGEMAP_SCAN (n == 0: probe it on one page of this stack).
   0, or -1 when it cannot (remembered when the kernel lacks it).  */
static int census_scan(struct hp_mem_range *r, size_t n) {
  if (atomic_load_explicit(&scan_works, memory_order_relaxed) < 0) return -1;
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uintptr_t here = (uintptr_t)&fd & ~(uintptr_t)(hp_os_page_size() - 1);
  struct hp_mem_range probe = { here, here + hp_os_page_size(), 0 };
  int rc = n ? hp_linux_scan_huge(fd, r, n) : hp_linux_scan_huge(fd, &probe, 1);
  int err = errno;
  close(fd);
  if (rc == 0)
    atomic_store_explicit(&scan_works, 1, memory_order_relaxed);
  else if (err == ENOTTY || err == EINVAL)
    atomic_store_explicit(&scan_works, -1, memory_order_relaxed);
  return rc;
}

/* Measure with smaps (n == 0: only whether it can be read).  0 or -1.  */
static int census_smaps(struct hp_mem_range *r, size_t n) {
  static const char path[] = "/proc/self/smaps";
  if (n) return hp_linux_smaps_huge(path, r, n);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

enum hp_census hp_os_huge_backed(struct hp_mem_range *r, size_t n) {
  int saved = errno;
  enum hp_census how = HP_CENSUS_UNKNOWN;
  if (census_scan(r, n) == 0)
    how = HP_CENSUS_PAGEMAP_SCAN;
  else if (census_smaps(r, n) == 0)
    how = HP_CENSUS_SMAPS;
  else
    for (size_t i = 0; i < n; i++) r[i].huge = 0;
  errno = saved;
  return how;
}
