/* SPDX-License-Identifier: MIT */
/* coverage: build a heap in one of three shapes and report how much of it
 * sits on huge pages, from the kernel's own accounting.
 *
 *   coverage small MiB THREADS   100-byte objects built by THREADS threads
 *                                (0 = by the main thread itself)
 *   coverage large MiB           3 MiB blocks from the main thread
 *   coverage grow MiB            a 1 MiB block realloc'd up to MiB
 *   coverage place 0             where the main heap starts: prints
 *                                heap_start=0x... gib_aligned=0|1
 *   coverage switch MiB          100-byte objects built in the mode the
 *                                environment gives, then
 *                                mallopt(HPMALLOC_M_HUGETLB, 1)
 *
 * Prints "rss_kb=N thp_kb=N hugetlb_kb=N pct=P hugetlb_maps=M fallbacks=F":
 * pct is the share of the heap's resident memory on huge pages (the
 * baseline the process held before building is subtracted), hugetlb_maps
 * the number of hugetlbfs mappings, fallbacks hpmalloc's count of hugetlb
 * fallbacks (-1 when hpmalloc is not the allocator).  MIT licence.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>

#define HPMALLOC_M_HUGETLB (-201) /* from include/hpmalloc.h, without depending on it */

static size_t per_thread;

static long field_kb(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[256];
  long v = 0;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) v = strtol(line + n, NULL, 10);
  fclose(f);
  return v;
}

struct snap { long rss, thp, hugetlb; };

static int hugetlb_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, "anon_hugepage") != NULL;
  fclose(f);
  return n;
}

/* hpmalloc_stats through dlsym, so the program runs under any malloc.  */
struct hp_stats_prefix { size_t version, in_use, mapped, heap, mmapped, free_, thp, hugetlb, fb_hugetlb, fb_thp, pad[16]; };
static long fallbacks(void) {
#ifdef HPT_LINKED /* linked with hpmalloc (a static program has no dlsym) */
  extern int hpmalloc_stats(void *, size_t);
  int (*fn)(void *, size_t) = hpmalloc_stats;
#else
  int (*fn)(void *, size_t) = (int (*)(void *, size_t))dlsym(RTLD_DEFAULT, "hpmalloc_stats");
#endif
  struct hp_stats_prefix st;
  if (!fn || fn(&st, sizeof st) != 0) return -1;
  return (long)st.fb_hugetlb;
}

static struct snap snap(void) {
  return (struct snap){ field_kb("/proc/self/smaps_rollup", "Rss:"), field_kb("/proc/self/smaps_rollup", "AnonHugePages:"),
                        field_kb("/proc/self/status", "HugetlbPages:") };
}

static void *build_small(void *arg) {
  (void)arg;
  for (size_t i = 0; i < per_thread; i++) {
    char *p = malloc(100);
    if (!p) { perror("malloc"); exit(1); }
    memset(p, 1, 100);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: coverage small|large|grow MiB [THREADS]\n");
    return 2;
  }
  size_t mib = strtoul(argv[2], NULL, 10);
  if (strcmp(argv[1], "place") == 0) {
    char *p = malloc(100);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo, hi, start = 0;
    /* the heap's first mapping: the one holding p, extended down over
       adjacent mappings (a reservation may be split by protection) */
    while (f && fgets(line, sizeof line, f)) {
      if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
      if ((unsigned long)p >= lo && (unsigned long)p < hi) start = lo;
    }
    if (f) fclose(f);
    printf("heap_start=0x%lx gib_aligned=%d\n", start, start && (start & ((1ul << 30) - 1)) == 0);
    free(p);
    return 0;
  }
  struct snap before = snap();
  if (strcmp(argv[1], "small") == 0) {
    int t = argc > 3 ? atoi(argv[3]) : 0;
    per_thread = (mib << 20) / 100 / (size_t)(t ? t : 1);
    if (t == 0) {
      build_small(NULL);
    } else {
      pthread_t th[16];
      for (int i = 0; i < t && i < 16; i++) pthread_create(&th[i], NULL, build_small, NULL);
      for (int i = 0; i < t && i < 16; i++) pthread_join(th[i], NULL);
    }
  } else if (strcmp(argv[1], "switch") == 0) {
    per_thread = (mib << 20) / 100;
    build_small(NULL);
    if (mallopt(HPMALLOC_M_HUGETLB, 1) != 1) {
      fprintf(stderr, "coverage: mallopt(HPMALLOC_M_HUGETLB, 1) refused\n");
      return 1;
    }
  } else if (strcmp(argv[1], "large") == 0) {
    for (size_t i = 0; i < mib / 3; i++) {
      char *p = malloc(3 << 20);
      if (!p) { perror("malloc"); return 1; }
      memset(p, 1, 3 << 20);
    }
  } else if (strcmp(argv[1], "grow") == 0) {
    char *p = NULL;
    for (size_t sz = 1; sz <= mib; sz++) {
      p = realloc(p, sz << 20);
      if (!p) { perror("realloc"); return 1; }
      memset(p + ((sz - 1) << 20), 1, 1 << 20);
    }
  } else {
    fprintf(stderr, "coverage: unknown shape %s\n", argv[1]);
    return 2;
  }
  struct snap after = snap();
  long rss = after.rss - before.rss, thp = after.thp - before.thp, htlb = after.hugetlb - before.hugetlb;
  long total = rss + htlb;
  printf("rss_kb=%ld thp_kb=%ld hugetlb_kb=%ld pct=%ld hugetlb_maps=%d fallbacks=%ld\n", rss, thp, htlb,
         total > 0 ? 100 * (thp + htlb) / total : 0, hugetlb_maps(), fallbacks());
  return 0;
}
