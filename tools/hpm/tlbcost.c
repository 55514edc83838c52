/* SPDX-License-Identifier: MIT */
/* hpm tlbcost: what a TLB miss costs on this machine.  A pointer chase
   over growing working sets on 4 KiB pages, THP and hugetlbfs pages; the
   extra latency of 4 KiB over huge pages at the largest size is the cost
   of a page walk.  It is cached for `hpm replay`, which turns modelled
   walks into time with it (tlbcost_cached_ns).  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define NKINDS 3 /* 4 KiB, THP, hugetlb */

struct tlbcost_opts {
  uint64_t max, reads;
  int no_save;
};

static const struct arg_opt tlbcost_args[] = {
  { .name = "--max", .kind = ARG_SIZE, .off = offsetof(struct tlbcost_opts, max), .min = 4u << 20, .max = 64ull << 30 },
  { .name = "--reads", .kind = ARG_SIZE, .off = offsetof(struct tlbcost_opts, reads), .meta = "a count", .min = 1000 },
  { .name = "--no-save", .kind = ARG_FLAG, .off = offsetof(struct tlbcost_opts, no_save) },
  { 0 },
};

static const struct arg_cmd tlbcost_cmd = {
  .name = "tlbcost",
  .synopsis = "usage: hpm tlbcost [--max SIZE] [--reads N] [--no-save]\n",
  .help = "Measures the latency of a dependent load (pointer chase, one cache line per\n"
          "page, random order) over growing working sets on 4 KiB pages, THP\n"
          "(MADV_HUGEPAGE) and hugetlbfs pages (when the pool has pages), and prints\n"
          "nanoseconds per load by working-set size.  The extra latency of 4 KiB over\n"
          "huge pages at the largest size is the cost of a TLB miss (page walk); it is\n"
          "saved to $XDG_CACHE_HOME/hpm/tlbcost (or ~/.cache/hpm/tlbcost) where\n"
          "`hpm replay` reads it to turn model misses into time.  Default --max 1G.\n",
  .args = tlbcost_args,
};

static const char *const kind_names[NKINDS] = { "4K", "THP", "hugetlb" };

/* --- the cache ----------------------------------------------------------------- */
static const char *cache_path(void) {
  static char path[4096];
  const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (getenv("HPM_TLBCOST_FILE")) return getenv("HPM_TLBCOST_FILE");
  int n;
  if (x && *x)
    n = snprintf(path, sizeof path, "%s/hpm/tlbcost", x);
  else if (home && *home)
    n = snprintf(path, sizeof path, "%s/.cache/hpm/tlbcost", home);
  else
    return NULL;
  return n > 0 && (size_t)n < sizeof path ? path : NULL; /* too long: no cache */
}

double tlbcost_cached_ns(void) {
  const char *p = cache_path();
  FILE *f = p ? fopen(p, "r") : NULL;
  double v = 0;
  if (f) {
    char line[128];
    if (fgets(line, sizeof line, f) && !strncmp(line, "walk_ns ", 8)) {
      char *end;
      v = strtod(line + 8, &end);
      if (end == line + 8 || (*end && *end != '\n')) v = 0;
    }
    if (!(v > 0 && v < 10000)) v = 0;
    (void)fclose(f); /* opened for reading: nothing to lose */
  }
  return v;
}

/* Save WALK to the cache file PATH, making its directories.  */
static void save_cost(const char *path, double walk) {
  char dir[4096];
  (void)snprintf(dir, sizeof dir, "%s", path); /* fits: cache_path() is shorter than 4096 */
  for (char *s = dir + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(dir, 0755);
      *s = '/';
    }
  FILE *f = fopen(path, "w");
  int ok = 0;
  if (f) {
    fprintf(f, "walk_ns %.2f\n", walk);
    ok = !ferror(f);
    ok &= fclose(f) == 0;
  }
  if (ok)
    printf("saved to %s\n", path);
  else
    fprintf(stderr, "hpm tlbcost: %s: %s\n", path, strerror(errno));
}

/* --- measuring ----------------------------------------------------------------- */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* ns per dependent load over SIZE bytes of MEM, one line per 4 KiB page.  */
static double chase(unsigned char *mem, size_t size, uint64_t reads) {
  size_t pages = size / 4096;
  size_t *perm = calloc(pages ? pages : 1, sizeof *perm);
  if (!perm || pages < 2) {
    free(perm);
    return -1;
  }
  for (size_t i = 0; i < pages; i++) perm[i] = i;
  for (size_t i = pages - 1; i > 0; i--) {
    size_t j = rng() % (i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  /* Vary the line within the page so that cache sets are spread.  */
  for (size_t i = 0; i < pages; i++) {
    size_t from = perm[i] * 4096 + (perm[i] % 64) * 64, nx = perm[(i + 1) % pages];
    *(void **)(mem + from) = mem + nx * 4096 + (nx % 64) * 64;
  }
  void **p = (void **)(mem + perm[0] * 4096 + (perm[0] % 64) * 64);
  for (size_t i = 0; i < pages; i++) p = *p; /* warm */
  double t0 = now_s();
  for (uint64_t i = 0; i < reads; i++) p = *p;
  double dt = now_s() - t0;
  __asm__ volatile("" : : "r"(p));
  free(perm);
  return dt * 1e9 / (double)reads;
}

/* MAX bytes, touched, on each kind of page: MEM[k] NULL where that kind
   cannot be had (hugetlb without a pool).  */
static void map_memory(uint64_t max, unsigned char *mem[NKINDS]) {
  for (int k = 0; k < NKINDS; k++) {
    void *m;
    if (k == 2)
      m = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    else {
      /* Over-map by 2 MiB and align, so THP can back every huge page.  */
      m = mmap(NULL, max + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) {
        m = (void *)(((uintptr_t)m + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
        madvise(m, max, k == 0 ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
        memset(m, 1, max);
      }
    }
    mem[k] = m == MAP_FAILED ? NULL : m;
  }
}

double tlbcost_walk_ns(uint64_t ws, uint64_t reads, double ns[2]) {
  unsigned char *mem[NKINDS] = { NULL, NULL, NULL };
  ws &= ~((2ull << 20) - 1);
  map_memory(ws, mem);
  for (int k = 0; k < 2; k++) ns[k] = mem[k] ? chase(mem[k], ws, reads) : -1;
  for (int k = 0; k < NKINDS; k++)
    if (mem[k]) munmap(mem[k], ws);
  return ns[0] > 0 && ns[1] > 0 && ns[0] > ns[1] ? ns[0] - ns[1] : 0;
}

/* --- reports ------------------------------------------------------------------- */
static void report_header(void) {
  printf("%-12s %10s %10s %10s   (ns per dependent load, random page order)\n", "working set", kind_names[0],
         kind_names[1], kind_names[2]);
}

/* One working set's row, shown at once: ns per load by kind (< 0: none).  */
static void report_row(const char *label, const double *v) {
  printf("%-12s", label);
  for (int k = 0; k < NKINDS; k++)
    if (v[k] < 0)
      printf(" %10s", "-");
    else
      printf(" %10.1f", v[k]);
  putchar('\n');
  (void)fflush(stdout); /* show the row now; a write error is reported at exit (main) */
}

static void report_cost(uint64_t max, double walk, int have_hugetlb) {
  printf("TLB miss cost (4K minus huge at %llu MiB): %.1f ns\n", (unsigned long long)(max >> 20), walk);
  if (!have_hugetlb) printf("(hugetlb: no pages in the pool; as root: echo N > /proc/sys/vm/nr_hugepages)\n");
}

/* Chase every working set from 1 MiB to MAX on each kind of page in MEM,
   reporting each row.  Returns the walk cost: 4 KiB minus huge pages (THP,
   else hugetlb) at the largest set, 0 if unknown.  */
static double measure(unsigned char *const mem[NKINDS], uint64_t max, uint64_t reads) {
  double last[NKINDS] = { 0, 0, 0 };
  for (uint64_t ws = 1u << 20; ws <= max; ws *= 2) {
    char lab[32];
    double v[NKINDS];
    /* fits: at most 64 GiB */
    if (ws >= (1u << 30))
      (void)snprintf(lab, sizeof lab, "%llu GiB", (unsigned long long)(ws >> 30));
    else
      (void)snprintf(lab, sizeof lab, "%llu MiB", (unsigned long long)(ws >> 20));
    for (int k = 0; k < NKINDS; k++) {
      progress("tlbcost: %s on %s", lab, kind_names[k]);
      v[k] = mem[k] ? chase(mem[k], ws, reads) : -1;
      progress_done();
      if (v[k] >= 0) last[k] = v[k];
    }
    report_row(lab, v);
  }
  double huge = last[1] > 0 ? last[1] : last[2];
  double walk = last[0] > 0 && huge > 0 ? last[0] - huge : 0;
  return walk < 0 ? 0 : walk;
}

int cmd_tlbcost(int argc, char **argv) {
  struct tlbcost_opts o = { .max = 1ull << 30, .reads = 2000000 };
  unsigned char *mem[NKINDS] = { NULL, NULL, NULL };
  int rc = args_parse(&tlbcost_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  uint64_t max = o.max & ~((2ull << 20) - 1);
  map_memory(max, mem);
  report_header();
  double walk = measure(mem, max, o.reads);
  report_cost(max, walk, mem[2] != NULL);
  const char *cp = cache_path();
  if (!o.no_save && cp && walk > 0) save_cost(cp, walk);
  for (int k = 0; k < NKINDS; k++)
    if (mem[k]) munmap(mem[k], max);
  return 0;
}
