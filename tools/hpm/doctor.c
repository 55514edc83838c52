/* SPDX-License-Identifier: MIT */
/* hpm doctor: what this machine will do with each huge-page mode.
   Settings (read from /sys and /proc, or from a copy of them under
   --root): transparent huge pages (enabled, defrag, khugepaged's
   max_ptes_none, the per-size mTHP switches), the hugetlb pools per page
   size, overcommit, and whether this is a VM whose balloon reports free
   pages to the host.  Measurements (not with --quick): the first touch per
   2 MiB of base pages and of THP, warm (memory freed a moment ago) and
   cold (memory the host has taken back: freed, the kernel's per-CPU free
   lists drained into the buddy lists, then a wait until free-page
   reporting has handed it to the host), and the cost of a TLB miss (the
   measurement of `hpm tlbcost`, at one working set).  Then a verdict per
   mode and the GLIBC_TUNABLES line for a heap of --heap bytes.

   Every reader takes the text of its file (doctor_parse_*), so that the
   tests feed it fixture trees (tests/hpm/doctor/).  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SIZES 16
#define F_HINT 3      /* VIRTIO_BALLOON_F_FREE_PAGE_HINT */
#define F_REPORTING 5 /* VIRTIO_BALLOON_F_REPORTING */
#define HUGE_2M (2ull << 20)
#define PROBE_MIB 128     /* warm probes */
#define COLD_MIB 256      /* cold probes, after a HEAD_MIB head left out */
#define COLD_BASE_MIB 512 /* base pages first take the free fragments too small to be reported: go past them */
#define HEAD_MIB 64       /* what the per-CPU free lists may still hold (warm) */
#define TLB_WS (512ull << 20)
#define REPORT_CAP_S 5.5 /* the longest wait for free-page reporting */
#define QUIET_S 2.5      /* no report for this long: nothing left (passes are 2 s apart) */
#define DELAY_S 3.5      /* the wait without reporting counters: the kernel's 2 s delay, a pass */

struct doctor_opts {
  int quick, json, repeat;
  uint64_t heap;
  const char *root;
};

static const struct arg_opt doctor_args[] = {
  { .name = "--quick", .kind = ARG_FLAG, .off = offsetof(struct doctor_opts, quick) },
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct doctor_opts, json) },
  { .name = "--heap", .kind = ARG_SIZE, .off = offsetof(struct doctor_opts, heap), .min = 4096 },
  { .name = "--root", .kind = ARG_STR, .off = offsetof(struct doctor_opts, root), .meta = "DIR" },
  { .name = "--repeat", .kind = ARG_INT, .off = offsetof(struct doctor_opts, repeat), .min = 1, .max = 9 },
  { 0 },
};

static const struct arg_cmd doctor_cmd = {
  .name = "doctor",
  .synopsis = "usage: hpm doctor [--quick] [--heap SIZE] [--repeat N] [--json] [--root DIR]\n",
  .help = "What this machine will do with each huge-page mode: THP settings (enabled,\n"
          "defrag, khugepaged max_ptes_none, per-size mTHP), hugetlb pools, overcommit,\n"
          "the VM's free-page reporting; measured (about 8 s a time, N times): the first\n"
          "touch per 2 MiB of base pages and THP, cold (memory the host took back) and\n"
          "warm (freed a moment ago), and the cost of a TLB miss, each the median of the\n"
          "N measurements with their range.  Then a verdict per mode with its caveats\n"
          "and the GLIBC_TUNABLES line recommended for a heap of SIZE.\n"
          "  --repeat N   measure N times (1 to 9, default 3)\n"
          "  --quick      read the settings only\n"
          "  --heap SIZE  the heap the recommendation is for (default 1G)\n"
          "  --json       one JSON object\n"
          "  --root DIR   read /sys and /proc below DIR (a copy from another machine;\n"
          "               implies --quick)\n",
  .args = doctor_args,
};

/* --- settings ------------------------------------------------------------------ */
struct pool {
  long kb, nr, free, resv, surplus, overcommit;
};

struct settings {
  char thp[16], defrag[24]; /* "" when absent */
  long max_ptes_none, pmd_kb;
  int nmthp;
  struct {
    long kb;
    char enabled[16];
  } mthp[MAX_SIZES];
  int npools;
  struct pool pools[MAX_SIZES];
  long default_kb; /* Hugepagesize of /proc/meminfo */
  int overcommit;
  int hypervisor, balloon, reporting, hinting;
  long report_order;          /* -1: unknown */
  double frag_mib, whole_mib; /* free memory in blocks below / at or above the reporting order (buddyinfo) */
};

/* The selected word of a sysfs choice ("always [madvise] never"), or the
   text's first word when nothing is bracketed, into OUT.  */
void doctor_parse_choice(const char *text, char *out, size_t n) {
  const char *a = strchr(text, '['), *b = a ? strchr(a, ']') : NULL;
  size_t len;
  if (a && b) {
    a++;
    len = (size_t)(b - a);
  } else {
    a = text + strspn(text, " \t\n");
    len = strcspn(a, " \t\n");
  }
  if (len >= n) len = n - 1;
  memcpy(out, a, len);
  out[len] = 0;
}

/* A decimal number at the start of TEXT, or DFLT.  */
long doctor_parse_long(const char *text, long dflt) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  return end == text || errno ? dflt : v;
}

/* Bit BIT of a virtio device's features file (one '0'/'1' per bit, bit 0 first).  */
int doctor_parse_feature(const char *features, int bit) { return (int)strlen(features) > bit && features[bit] == '1'; }

/* The "hypervisor" CPU flag in /proc/cpuinfo's text.  */
int doctor_parse_hypervisor(const char *cpuinfo) {
  for (const char *p = strstr(cpuinfo, "flags"); p; p = strstr(p + 1, "flags")) {
    const char *eol = strchr(p, '\n'), *h = strstr(p, " hypervisor");
    if (h && (!eol || h < eol) && (h[11] == ' ' || h[11] == '\n' || !h[11])) return 1;
    if (!eol) break;
  }
  return 0;
}

/* "Hugepagesize:       2048 kB" of /proc/meminfo, or 0.  */
long doctor_parse_meminfo_hugepagesize(const char *meminfo) {
  const char *p = strstr(meminfo, "Hugepagesize:");
  return p ? doctor_parse_long(p + 13 + strspn(p + 13, " \t"), 0) : 0;
}

/* /proc/buddyinfo's text: free MiB in blocks of order below ORDER into
   *BELOW, at or above it into *ABOVE (PAGE_KB: the base page).  Returns
   the zones read.  */
int doctor_parse_buddyinfo(const char *text, long order, long page_kb, double *below, double *above) {
  int zones = 0;
  *below = *above = 0;
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    const char *z = strstr(line, "zone"), *eol = strchr(line, '\n');
    if (!z || (eol && z > eol)) continue;
    char *p = (char *)z + 4;
    p += strspn(p, " ");
    p += strcspn(p, " \n"); /* the zone's name */
    for (long o = 0;; o++) {
      char *end;
      unsigned long n = strtoul(p, &end, 10);
      if (end == p || (eol && end > eol)) break;
      double mib = (double)n * (double)page_kb * (double)(1ul << (o < 40 ? o : 40)) / 1024;
      *(o < order ? below : above) += mib;
      p = end;
    }
    zones++;
  }
  return zones;
}

/* ROOT/REL into BUF (N bytes, NUL-terminated); 0, or -1 if unreadable.  */
static int slurp(const char *root, const char *rel, char *buf, size_t n) {
  char path[4096];
  (void)snprintf(path, sizeof path, "%s%s", root, rel); /* a path too long is one that cannot be read */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  buf[0] = 0;
  if (fd < 0) return -1;
  size_t got = 0;
  for (ssize_t r; got < n - 1 && (r = read(fd, buf + got, n - 1 - got)) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += (size_t)r;
  }
  buf[got] = 0;
  (void)close(fd); /* opened for reading */
  return 0;
}

static long slurp_long(const char *root, const char *rel, long dflt) {
  char buf[64];
  return slurp(root, rel, buf, sizeof buf) ? dflt : doctor_parse_long(buf, dflt);
}

/* The NNNkB of ".../hugepages-NNNkB".  */
static long size_of_dir(const char *path) {
  const char *p = strrchr(path, '-');
  return p ? doctor_parse_long(p + 1, 0) : 0;
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static void read_pools(const char *root, struct settings *s) {
  char pat[4096], rel[4200];
  glob_t g;
  (void)snprintf(pat, sizeof pat, "%s/sys/kernel/mm/hugepages/hugepages-*kB", root); /* too long: none found */
  if (glob(pat, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc && s->npools < MAX_SIZES; i++) {
    struct pool *p = &s->pools[s->npools++];
    const char *d = g.gl_pathv[i] + strlen(root);
    p->kb = size_of_dir(d);
    (void)snprintf(rel, sizeof rel, "%s/nr_hugepages", d); /* fits: d is shorter than pat */
    p->nr = slurp_long(root, rel, 0);
    (void)snprintf(rel, sizeof rel, "%s/free_hugepages", d);
    p->free = slurp_long(root, rel, 0);
    (void)snprintf(rel, sizeof rel, "%s/resv_hugepages", d);
    p->resv = slurp_long(root, rel, 0);
    (void)snprintf(rel, sizeof rel, "%s/surplus_hugepages", d);
    p->surplus = slurp_long(root, rel, 0);
    (void)snprintf(rel, sizeof rel, "%s/nr_overcommit_hugepages", d);
    p->overcommit = slurp_long(root, rel, 0);
  }
  globfree(&g);
  qsort(s->pools, (size_t)s->npools, sizeof *s->pools, cmp_long); /* kb is the first field */
}

static void read_mthp(const char *root, struct settings *s) {
  char pat[4096], rel[4200], buf[256];
  glob_t g;
  (void)snprintf(pat, sizeof pat, "%s/sys/kernel/mm/transparent_hugepage/hugepages-*kB", root); /* as above */
  if (glob(pat, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc && s->nmthp < MAX_SIZES; i++) {
    const char *d = g.gl_pathv[i] + strlen(root);
    (void)snprintf(rel, sizeof rel, "%s/enabled", d); /* fits */
    if (slurp(root, rel, buf, sizeof buf)) continue;
    s->mthp[s->nmthp].kb = size_of_dir(d);
    doctor_parse_choice(buf, s->mthp[s->nmthp].enabled, sizeof s->mthp[s->nmthp].enabled);
    s->nmthp++;
  }
  globfree(&g);
  qsort(s->mthp, (size_t)s->nmthp, sizeof *s->mthp, cmp_long);
}

static void read_virtio(const char *root, struct settings *s) {
  char pat[4096], rel[4200], buf[512];
  glob_t g;
  (void)snprintf(pat, sizeof pat, "%s/sys/bus/virtio/devices/*", root); /* as above */
  if (glob(pat, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const char *d = g.gl_pathv[i] + strlen(root);
    (void)snprintf(rel, sizeof rel, "%s/device", d);                               /* fits */
    if (slurp(root, rel, buf, sizeof buf) || strtol(buf, NULL, 16) != 5) continue; /* 5: the balloon */
    s->balloon = 1;
    (void)snprintf(rel, sizeof rel, "%s/features", d);
    if (slurp(root, rel, buf, sizeof buf) == 0) {
      s->reporting |= doctor_parse_feature(buf, F_REPORTING);
      s->hinting |= doctor_parse_feature(buf, F_HINT);
    }
  }
  globfree(&g);
}

static void read_settings(const char *root, struct settings *s) {
  static char big[1 << 16]; /* cpuinfo's first CPU, meminfo */
  char buf[256];
  memset(s, 0, sizeof *s);
  if (slurp(root, "/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) == 0)
    doctor_parse_choice(buf, s->thp, sizeof s->thp);
  if (slurp(root, "/sys/kernel/mm/transparent_hugepage/defrag", buf, sizeof buf) == 0)
    doctor_parse_choice(buf, s->defrag, sizeof s->defrag);
  s->max_ptes_none = slurp_long(root, "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", -1);
  s->pmd_kb = slurp_long(root, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", -1024) / 1024;
  read_mthp(root, s);
  read_pools(root, s);
  s->default_kb = slurp(root, "/proc/meminfo", big, sizeof big) ? 0 : doctor_parse_meminfo_hugepagesize(big);
  s->overcommit = (int)slurp_long(root, "/proc/sys/vm/overcommit_memory", -1);
  s->hypervisor = slurp(root, "/proc/cpuinfo", big, sizeof big) ? 0 : doctor_parse_hypervisor(big);
  read_virtio(root, s);
  s->report_order = slurp_long(root, "/sys/module/page_reporting/parameters/page_reporting_order", -1);
  if (slurp(root, "/proc/buddyinfo", big, sizeof big) == 0)
    (void)doctor_parse_buddyinfo(big, s->report_order >= 0 ? s->report_order : 9, 4, &s->frag_mib, &s->whole_mib);
}

/* --- measurements ---------------------------------------------------------------- */
struct measured {
  double base_cold, base_warm, thp_cold, thp_warm; /* ms per 2 MiB */
  double thp_share;                                /* of the THP probes that were huge pages (smaps) */
  double wait_s, reported_mib;                     /* the cold wait, what reporting handed back meanwhile */
  double drained_mib;                              /* what the per-CPU lists gave back (-1: not root) */
  double walk_ns, ns_4k, ns_thp;                   /* TLB */
  int drained;                                     /* the per-CPU lists were drained (root) */
  int settled;                                     /* free-page reporting went quiet before the cold probes */
  int repeats;                                     /* the figures above: medians of this many measurements */
  double lo[7], hi[7];                             /* their ranges, in the order of figure_of */
};

/* The repeated figures, by index: lo[i], hi[i] are figure_of(m, i)'s range.  */
static double *figure_of(struct measured *m, int i) {
  /* the callers write through the pointer returned: not const */
  // cppcheck-suppress constVariable
  double *const f[7] = { &m->base_cold, &m->base_warm, &m->thp_cold, &m->thp_warm, &m->walk_ns, &m->ns_4k, &m->ns_thp };
  return f[i];
}

static long anon_huge_kb(void) {
  char buf[4096];
  if (slurp("", "/proc/self/smaps_rollup", buf, sizeof buf)) return -1;
  const char *p = strstr(buf, "AnonHugePages:");
  return p ? doctor_parse_long(p + 14 + strspn(p + 14, " "), -1) : -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct probe {
  unsigned char *raw, *p;
  size_t len;
};

/* MIB MiB aligned to 2 MiB, THP advised or not; 0, or -1.  */
static int probe_map(struct probe *pr, unsigned mib, int thp) {
  pr->len = (size_t)mib << 20;
  pr->raw = mmap(NULL, pr->len + HUGE_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pr->raw == MAP_FAILED) return -1;
  pr->p = (unsigned char *)(((uintptr_t)pr->raw + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
  (void)madvise(pr->p, pr->len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* without it: the kernel's default */
  return 0;
}

static void probe_unmap(struct probe *pr) {
  if (pr->raw != MAP_FAILED) munmap(pr->raw, pr->len + HUGE_2M);
}

/* Touch one byte per 4 KiB page of PR: the first HEAD MiB untimed, then
   segments of 32 MiB; the median ms per 2 MiB of the segments.  *HUGE
   (when not NULL): the share that went on huge pages.  */
static double probe_touch(const struct probe *pr, unsigned head, double *huge) {
  size_t seg = 32u << 20, h = (size_t)head << 20, nseg = pr->len > h ? (pr->len - h) / seg : 0;
  double ms[64];
  if (pr->raw == MAP_FAILED || nseg == 0 || nseg > 64) return -1;
  long before = anon_huge_kb();
  for (size_t o = 0; o < h; o += 4096) pr->p[o] = 1;
  for (size_t k = 0; k < nseg; k++) {
    unsigned char *q = pr->p + h + k * seg;
    double t0 = now_s();
    for (size_t o = 0; o < seg; o += 4096) q[o] = 1;
    ms[k] = (now_s() - t0) * 1e3 * (double)HUGE_2M / (double)seg;
  }
  long after = anon_huge_kb();
  if (huge) *huge = before >= 0 && after >= before ? (double)(after - before) * 1024 / (double)pr->len : -1;
  qsort(ms, nseg, sizeof *ms, cmp_double);
  return ms[nseg / 2];
}

/* A fresh probe of MIB MiB touched and unmapped: ms per 2 MiB, or -1.  */
static double first_touch(unsigned mib, int thp, double *huge) {
  struct probe pr;
  double v = probe_map(&pr, mib, thp) ? -1 : probe_touch(&pr, 0, huge);
  probe_unmap(&pr);
  return v;
}

/* Free memory the per-CPU lists hold, in MiB: the "count:" lines of
   /proc/zoneinfo's text, in pages of PAGE_KB.  */
double doctor_parse_zoneinfo_pcp(const char *zoneinfo, long page_kb) {
  double pages = 0;
  for (const char *p = strstr(zoneinfo, "count:"); p; p = strstr(p + 6, "count:"))
    pages += (double)doctor_parse_long(p + 6 + strspn(p + 6, " "), 0);
  return pages * (double)page_kb / 1024;
}

static double pcp_mib(void) {
  static char buf[1 << 18];
  return slurp("", "/proc/zoneinfo", buf, sizeof buf) ? 0 : doctor_parse_zoneinfo_pcp(buf, 4);
}

/* The kernel's per-CPU free lists into the buddy lists, where free-page
   reporting finds them (each write to stat_refresh runs the lists' decay
   once; root only).  Returns the MiB they gave back, or -1 if it could
   not.  */
static double drain_pcp(void) {
  double before = pcp_mib();
  for (int i = 0; i < 64; i++) {
    int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t w = write(fd, "1\n", 2);
    (void)close(fd); /* written or not: the next write tries again */
    if (w < 0 && errno != EINVAL) return -1;
  }
  double after = pcp_mib();
  return before > after ? before - after : 0;
}

static double reported_mib(void) {
  return (double)slurp_long("", "/sys/module/page_reporting/parameters/reported_kib", -1024) / 1024;
}

/* Wait until free-page reporting has handed to the host what the lists
   gave back (DRAINED MiB): with the reporting counter, until it grew by
   that much, or stayed still for QUIET_S (a pass every 2 s: nothing
   left), at most REPORT_CAP_S; without the counter DELAY_S.  */
static void wait_reported(double drained, struct measured *m) {
  double t0 = now_s(), r0 = reported_mib(), last = r0, t_last = t0;
  if (r0 < 0)
    (void)usleep((useconds_t)(DELAY_S * 1e6));
  else
    while (now_s() - t0 < REPORT_CAP_S && now_s() - t_last < QUIET_S && (last == r0 || last - r0 < drained)) {
      (void)usleep(50000);
      double r = reported_mib();
      if (r != last) {
        last = r;
        t_last = now_s();
      }
    }
  m->wait_s = now_s() - t0;
  m->reported_mib = r0 < 0 ? -1 : last - r0;
  m->settled = r0 < 0 || now_s() - t_last >= QUIET_S || (last > r0 && last - r0 >= drained);
}

/* Cold first: before this process frees anything, the free memory is what
   the host took back, but for what the per-CPU lists hold (drained, then
   reported during the wait) and a head of HEAD_MIB left out.  Both cold
   probes are mapped until both are done, so that the second cannot reuse
   the first's pages.  Then warm (a primer touched and freed just before
   each probe), then the TLB.  */
static void measure(const struct settings *s, struct measured *m) {
  struct probe thp, base;
  memset(m, 0, sizeof *m);
  progress("doctor: waiting for free-page reporting");
  m->drained_mib = drain_pcp();
  m->drained = m->drained_mib >= 0;
  m->settled = 1; /* nothing to wait for without reporting */
  if (s->reporting) wait_reported(m->drained_mib > 0 ? m->drained_mib : 0, m);
  progress("doctor: first touch, cold");
  int ok = probe_map(&thp, COLD_MIB + HEAD_MIB, 1) == 0;
  ok &= probe_map(&base, COLD_BASE_MIB + HEAD_MIB, 0) == 0;
  m->thp_cold = ok ? probe_touch(&thp, HEAD_MIB, NULL) : -1;
  m->base_cold = ok ? probe_touch(&base, HEAD_MIB, NULL) : -1;
  probe_unmap(&thp);
  probe_unmap(&base);
  progress("doctor: first touch, warm");
  (void)first_touch(PROBE_MIB, 0, NULL); /* primers: freed just before the probe */
  m->base_warm = first_touch(PROBE_MIB, 0, NULL);
  (void)first_touch(PROBE_MIB, 1, NULL);
  m->thp_warm = first_touch(PROBE_MIB, 1, &m->thp_share);
  progress("doctor: TLB miss cost (hpm tlbcost at %llu MiB)", (unsigned long long)(TLB_WS >> 20));
  double ns[2];
  m->walk_ns = tlbcost_walk_ns(TLB_WS, 1000000, ns);
  m->ns_4k = ns[0];
  m->ns_thp = ns[1];
  progress_done();
}

/* --- verdicts ---------------------------------------------------------------- */
/* What each mode costs besides its gain, whatever the machine: stated with
   every verdict (malloc/region.c is the source of mode 2's behaviour).  */
static const char *const caveats[3] = {
  "every page a 4 KiB TLB entry",
  "RSS grows by whole 2 MiB pages (a page is faulted whole), and with khugepaged's max_ptes_none at 511 pages "
  "trimmed from inside a huge range can come back; THP allocation may stall on compaction (defrag)",
  "the pool's pages are taken from the system when reserved, whether used or not; hpmalloc maps the heap "
  "MAP_NORESERVE and populates each page as it commits it, so a dry pool falls back to THP then base pages "
  "(counted in hpmalloc_stats) instead of raising SIGBUS; but after fork a write to a shared page needs a free pool "
  "page: with the pool empty the child is killed by SIGBUS (the kernel keeps the page for the parent); the heap is "
  "not charged to overcommit, the pool is its limit",
};

struct verdict {
  int usable;
  char reason[512];
};

struct advice {
  struct verdict mode[3];
  char tunables[256], why[512];
};

static const struct pool *pool_of(const struct settings *s, long kb) {
  for (int i = 0; i < s->npools; i++)
    if (s->pools[i].kb == kb) return &s->pools[i];
  return NULL;
}

/* What khugepaged's max_ptes_none means for memory hpmalloc gave back.  */
static const char *ptes_none_text(long v) {
  if (v < 0) return "khugepaged: max_ptes_none unknown";
  if (v >= 511)
    return "khugepaged may collapse a 2 MiB range with a single page in use (max_ptes_none 511): pages trimmed "
           "from inside a huge range can come back as a whole huge page";
  if (v == 0) return "khugepaged collapses only fully populated ranges (max_ptes_none 0): trimmed pages stay trimmed";
  return "khugepaged collapses ranges with up to max_ptes_none empty pages";
}

static void verdict_thp(const struct settings *s, const struct measured *m, struct verdict *v) {
  int on = !strcmp(s->thp, "always") || !strcmp(s->thp, "madvise");
  int direct = strstr(s->defrag, "madvise") || !strcmp(s->defrag, "always");
  char cost[200] = "";
  if (m && m->thp_cold > 0 && m->base_cold > 0)
    (void)snprintf(cost, sizeof cost, "; a cold first touch costs %.2f ms per 2 MiB on THP vs %.2f on base pages%s",
                   m->thp_cold, m->base_cold, m->thp_cold < m->base_cold ? " (cheaper)" : " (dearer)"); /* fits */
  v->usable = on;
  if (!s->thp[0])
    (void)snprintf(v->reason, sizeof v->reason, "no transparent huge pages in this kernel");
  else if (!on)
    (void)snprintf(v->reason, sizeof v->reason, "THP is %s: MADV_HUGEPAGE does nothing", s->thp);
  else
    (void)snprintf(v->reason, sizeof v->reason, "THP %s, defrag %s: %s; %s%s", s->thp, s->defrag,
                   direct ? "a fault in an advised range compacts memory for a huge page when none is free"
                          : "a fault gets a huge page only when one is free, else base pages until khugepaged",
                   ptes_none_text(s->max_ptes_none), cost); /* a message: truncation is harmless */
}

static void verdict_hugetlb(const struct settings *s, uint64_t heap, struct verdict *v) {
  long kb = s->default_kb ? s->default_kb : 2048;
  const struct pool *p = pool_of(s, kb);
  long need = (long)((heap + (uint64_t)kb * 1024 - 1) / ((uint64_t)kb * 1024));
  long have = p ? p->free - p->resv + (p->overcommit - p->surplus > 0 ? p->overcommit - p->surplus : 0) : 0;
  const struct pool *g1 = pool_of(s, 1048576);
  long need1 = (long)((heap + (1ull << 30) - 1) >> 30);
  v->usable = p && have >= need;
  if (!v->usable && kb != 1048576 && g1 && g1->free - g1->resv >= need1) {
    v->usable = 2; /* on 1 GiB pages */
    (void)snprintf(v->reason, sizeof v->reason,
                   "the pool of 1 GiB pages holds the heap (%ld free, %ld needed) with "
                   "hpmalloc.hugetlb_size=1073741824; the %ld kB pool does not (%ld free)",
                   g1->free - g1->resv, need1, kb, have); /* a message: truncation is harmless */
  } else if (!p)
    (void)snprintf(v->reason, sizeof v->reason, "no hugetlb pool of %ld kB pages", kb);
  else if (v->usable) /* messages: truncation is harmless */
    (void)snprintf(v->reason, sizeof v->reason,
                   "pool of %ld kB pages: %ld free, %ld reserved, overcommit %ld; the heap needs %ld (pool pages "
                   "are never handed back to a host: no cold first touch)",
                   kb, p->free, p->resv, p->overcommit, need);
  else
    (void)snprintf(v->reason, sizeof v->reason,
                   "pool of %ld kB pages: %ld free, %ld reserved, overcommit %ld; the heap needs %ld: as root, echo "
                   "%ld > /proc/sys/vm/nr_hugepages (else mode 2 falls back to THP)",
                   kb, p->free, p->resv, p->overcommit, need, p->nr + need - have);
}

static void advise(const struct settings *s, const struct measured *m, uint64_t heap, struct advice *a) {
  memset(a, 0, sizeof *a);
  a->mode[0].usable = 1;
  if (m && m->base_cold > 0)
    (void)snprintf(a->mode[0].reason, sizeof a->mode[0].reason,
                   "base pages: always works; first touch %.2f ms per 2 MiB cold, %.2f warm; every 4 KiB page is "
                   "a TLB entry (a miss costs %.1f ns here)",
                   m->base_cold, m->base_warm, m->walk_ns); /* fits */
  else
    (void)snprintf(a->mode[0].reason, sizeof a->mode[0].reason, "base pages: always works");
  if (s->reporting && s->frag_mib > 0) {
    size_t l = strlen(a->mode[0].reason);
    (void)snprintf(a->mode[0].reason + l, sizeof a->mode[0].reason - l,
                   "; base-page faults take the %.0f MiB free in blocks smaller than the reported ones first, which "
                   "the host never took back: until they run out a cold touch costs what a warm one does",
                   s->frag_mib); /* a message: truncation is harmless */
  }
  verdict_thp(s, m, &a->mode[1]);
  verdict_hugetlb(s, heap, &a->mode[2]);
  int mode = heap < 4 * HUGE_2M ? 0 : a->mode[2].usable ? 2 : a->mode[1].usable ? 1 : 0;
  int n = snprintf(a->tunables, sizeof a->tunables, "glibc.malloc.hugetlb=%d", mode);
  const struct pool *g1 = pool_of(s, 1048576);
  if (mode == 2 &&
      (a->mode[2].usable == 2 || (heap >= (1ull << 30) && g1 && g1->free - g1->resv >= (long)(heap >> 30))))
    n += snprintf(a->tunables + n, sizeof a->tunables - (size_t)n, ":hpmalloc.hugetlb_size=1073741824"); /* fits */
  if (mode == 0)
    (void)snprintf(a->why, sizeof a->why, "%s",
                   heap < 4 * HUGE_2M ? "a heap under 8 MiB fits the TLB on base pages" : "no huge pages to be had");
  else if (mode == 2)
    (void)snprintf(a->why, sizeof a->why, "the hugetlb pool holds the heap");
  else {
    uint64_t keep = heap / 8 < (32u << 20) ? (32u << 20) : heap / 8 & ~(HUGE_2M - 1);
    if (s->reporting) {
      (void)snprintf(a->tunables + n, sizeof a->tunables - (size_t)n, ":glibc.malloc.trim_threshold=%llu",
                     (unsigned long long)keep); /* fits */
      (void)snprintf(a->why, sizeof a->why,
                     "THP; this VM hands freed memory to the host within seconds and a huge page then costs a "
                     "cold first touch again, so keep up to %llu MiB free in the heap instead of trimming it",
                     (unsigned long long)(keep >> 20));
    } else
      (void)snprintf(a->why, sizeof a->why, "THP, advised before first touch");
  }
}

/* --- reports ---------------------------------------------------------------------- */
static void text_settings(const struct settings *s) {
  printf("transparent huge pages: enabled %s, defrag %s, PMD size %ld kB\n", s->thp[0] ? s->thp : "(none)",
         s->defrag[0] ? s->defrag : "(none)", s->pmd_kb);
  printf("  %s\n", ptes_none_text(s->max_ptes_none));
  if (s->nmthp) {
    printf("  per-size (mTHP):");
    for (int i = 0; i < s->nmthp; i++) printf(" %ldK=%s", s->mthp[i].kb, s->mthp[i].enabled);
    putchar('\n');
  }
  printf("hugetlb pools (default %ld kB):", s->default_kb);
  for (int i = 0; i < s->npools; i++)
    printf("%s %ld kB: %ld pages, %ld free, %ld reserved, %ld surplus, overcommit %ld", i ? ";" : "", s->pools[i].kb,
           s->pools[i].nr, s->pools[i].free, s->pools[i].resv, s->pools[i].surplus, s->pools[i].overcommit);
  printf("%s\n", s->npools ? "" : " none");
  static const char *const oc[] = { "heuristic", "always", "never (strict accounting)" };
  printf("overcommit_memory %d (%s)\n", s->overcommit,
         s->overcommit >= 0 && s->overcommit < 3 ? oc[s->overcommit] : "?");
  printf("VM: %s; virtio balloon %s", s->hypervisor ? "yes (hypervisor flag)" : "no hypervisor flag",
         s->balloon ? "present" : "absent");
  if (s->balloon)
    printf(", free-page reporting %s (feature bit %d), free-page hinting %s", s->reporting ? "on" : "off", F_REPORTING,
           s->hinting ? "on" : "off");
  if (s->report_order >= 0)
    printf(", page_reporting_order %ld (%ld kB blocks)", s->report_order, 4L << s->report_order);
  putchar('\n');
  if (s->frag_mib + s->whole_mib > 0)
    printf("free memory: %.0f MiB in blocks that can be reported, %.0f MiB in smaller ones (buddyinfo)\n", s->whole_mib,
           s->frag_mib);
}

static void text_measured(const struct measured *m) {
  printf("\nfirst touch, ms per 2 MiB, median [range] of %d  base pages               THP\n", m->repeats);
  printf("  warm (freed just before)            %6.2f [%.2f-%.2f] %9.2f [%.2f-%.2f]\n", m->base_warm, m->lo[1],
         m->hi[1], m->thp_warm, m->lo[3], m->hi[3]);
  printf("  cold (taken by the host)            %6.2f [%.2f-%.2f] %9.2f [%.2f-%.2f]\n", m->base_cold, m->lo[0],
         m->hi[0], m->thp_cold, m->lo[2], m->hi[2]);
  printf("  (THP probes on huge pages: %.0f%%; cold after the per-CPU lists gave back %.0f MiB and a wait of %.1f s",
         100 * m->thp_share, m->drained_mib > 0 ? m->drained_mib : 0, m->wait_s);
  if (m->reported_mib >= 0) printf(", %.0f MiB reported meanwhile", m->reported_mib);
  printf("%s)\n", m->drained ? "" : "; per-CPU free lists not drained (not root): cold may be warmer");
  if (!m->settled)
    printf("  warning: free-page reporting was still handing memory back when the wait ended (memory freed\n"
           "  shortly before, by hpm doctor itself too): the cold figures may be warm; run again after an idle "
           "minute\n");
  printf("TLB miss: %.1f ns [%.1f-%.1f] (%.1f ns per load on 4 KiB pages, %.1f on THP, %llu MiB working set)\n",
         m->walk_ns, m->lo[4], m->hi[4], m->ns_4k, m->ns_thp, (unsigned long long)(TLB_WS >> 20));
}

static void text_report(const struct settings *s, const struct measured *m, const struct advice *a, uint64_t heap) {
  static const char *const names[3] = { "0 (base pages)", "1 (THP)", "2 (hugetlbfs)" };
  text_settings(s);
  if (m) text_measured(m);
  printf("\n");
  for (int i = 0; i < 3; i++)
    printf("hugetlb=%-15s %-4s %s\n%24s caveats: %s\n", names[i], a->mode[i].usable ? "yes" : "no", a->mode[i].reason,
           "", caveats[i]);
  printf("\nfor a heap of %llu MiB: GLIBC_TUNABLES=%s\n  (%s)\n", (unsigned long long)(heap >> 20), a->tunables,
         a->why);
  int mode = strstr(a->tunables, "hugetlb=2") ? 2 : strstr(a->tunables, "hugetlb=1") ? 1 : 0;
  printf("  caveats of hugetlb=%d: %s\n", mode, caveats[mode]);
}

static void json_num(const char *key, double v, int comma) {
  printf("%s\"%s\":", comma ? "," : "", key);
  if (v < 0)
    printf("null");
  else
    printf("%.3f", v);
}

static void json_report(const struct settings *s, const struct measured *m, const struct advice *a, uint64_t heap) {
  printf("{\"settings\":{\"thp\":{\"enabled\":");
  json_str(stdout, s->thp);
  printf(",\"defrag\":");
  json_str(stdout, s->defrag);
  printf(",\"khugepaged_max_ptes_none\":%ld,\"pmd_size_kb\":%ld,\"mthp\":[", s->max_ptes_none, s->pmd_kb);
  for (int i = 0; i < s->nmthp; i++) {
    printf("%s{\"size_kb\":%ld,\"enabled\":", i ? "," : "", s->mthp[i].kb);
    json_str(stdout, s->mthp[i].enabled);
    printf("}");
  }
  printf("]},\"hugetlb\":{\"default_kb\":%ld,\"pools\":[", s->default_kb);
  for (int i = 0; i < s->npools; i++)
    printf("%s{\"size_kb\":%ld,\"nr\":%ld,\"free\":%ld,\"reserved\":%ld,\"surplus\":%ld,\"overcommit\":%ld}",
           i ? "," : "", s->pools[i].kb, s->pools[i].nr, s->pools[i].free, s->pools[i].resv, s->pools[i].surplus,
           s->pools[i].overcommit);
  printf("]},\"overcommit_memory\":%d,\"vm\":{\"hypervisor\":%s,\"virtio_balloon\":%s,\"free_page_reporting\":%s,"
         "\"free_page_hinting\":%s,\"page_reporting_order\":%ld,\"free_reportable_mib\":%.0f,"
         "\"free_fragments_mib\":%.0f}}",
         s->overcommit, s->hypervisor ? "true" : "false", s->balloon ? "true" : "false",
         s->reporting ? "true" : "false", s->hinting ? "true" : "false", s->report_order, s->whole_mib, s->frag_mib);
  printf(",\"measured\":");
  if (!m)
    printf("null");
  else {
    printf("{\"first_touch_ms_per_2m\":{");
    json_num("base_cold", m->base_cold, 0);
    json_num("base_warm", m->base_warm, 1);
    json_num("thp_cold", m->thp_cold, 1);
    json_num("thp_warm", m->thp_warm, 1);
    printf("}");
    json_num("thp_share", m->thp_share, 1);
    json_num("cold_wait_s", m->wait_s, 1);
    json_num("reported_mib", m->reported_mib, 1);
    json_num("drained_mib", m->drained_mib, 1);
    printf(",\"drained\":%s,\"cold_settled\":%s,\"tlb\":{", m->drained ? "true" : "false",
           m->settled ? "true" : "false");
    json_num("walk_ns", m->walk_ns, 0);
    json_num("ns_4k", m->ns_4k, 1);
    json_num("ns_thp", m->ns_thp, 1);
    printf(",\"working_set_bytes\":%llu}", (unsigned long long)TLB_WS);
    static const char *const keys[7] = {
      "base_cold", "base_warm", "thp_cold", "thp_warm", "walk_ns", "ns_4k", "ns_thp"
    };
    printf(",\"repeats\":%d,\"range\":{", m->repeats);
    for (int i = 0; i < 7; i++) printf("%s\"%s\":[%.3f,%.3f]", i ? "," : "", keys[i], m->lo[i], m->hi[i]);
    printf("}}");
  }
  printf(",\"verdicts\":[");
  for (int i = 0; i < 3; i++) {
    printf("%s{\"hugetlb\":%d,\"usable\":%s,\"reason\":", i ? "," : "", i, a->mode[i].usable ? "true" : "false");
    json_str(stdout, a->mode[i].reason);
    printf(",\"caveats\":");
    json_str(stdout, caveats[i]);
    printf("}");
  }
  printf("],\"recommended\":{\"heap_bytes\":%llu,\"glibc_tunables\":", (unsigned long long)heap);
  json_str(stdout, a->tunables);
  printf(",\"reason\":");
  json_str(stdout, a->why);
  printf("}}\n");
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* measure() N times (a single measurement of first touch moved 10-fold
   from one minute to the next here): each figure the median, with its
   range; the rest from the last time, settled only if every time was.  */
static void measure_repeated(const struct settings *s, struct measured *m, int n) {
  double v[7][9];
  int settled = 1;
  if (n < 1) n = 1; /* the option's range is 1 to 9; v holds 9 */
  if (n > 9) n = 9;
  for (int k = 0; k < n; k++) {
    progress("doctor: measurement %d of %d", k + 1, n);
    measure(s, m);
    settled &= m->settled;
    for (int i = 0; i < 7; i++) v[i][k] = *figure_of(m, i);
  }
  for (int i = 0; i < 7; i++) {
    m->lo[i] = m->hi[i] = v[i][0];
    for (int k = 1; k < n; k++) {
      if (v[i][k] < m->lo[i]) m->lo[i] = v[i][k];
      if (v[i][k] > m->hi[i]) m->hi[i] = v[i][k];
    }
    *figure_of(m, i) = median_of(v[i], n);
  }
  m->settled = settled;
  m->repeats = n;
}

int cmd_doctor(int argc, char **argv) {
  struct doctor_opts o = { .heap = 1ull << 30, .root = "", .repeat = 3 };
  struct settings s;
  struct measured m;
  struct advice a;
  int rc = args_parse(&doctor_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  if (o.root[0]) {
    char probe[256];
    if (slurp(o.root, "/sys/kernel/mm", probe, sizeof probe) && access(o.root, R_OK) != 0) {
      fprintf(stderr, "hpm doctor: --root %s: %s\n", o.root, strerror(errno));
      return 1;
    }
    o.quick = 1;
  }
  read_settings(o.root, &s);
  if (!o.quick) measure_repeated(&s, &m, o.repeat);
  advise(&s, o.quick ? NULL : &m, o.heap, &a);
  if (o.json)
    json_report(&s, o.quick ? NULL : &m, &a, o.heap);
  else
    text_report(&s, o.quick ? NULL : &m, &a, o.heap);
  return 0;
}
