/* SPDX-License-Identifier: MIT */
/* backed: the heap's huge pages as the kernel's smaps counts them, for the
 * acceptance check of hpmalloc's statistics (tests/hugepages/run.sh).
 *
 *   backed MiB THREADS     build MiB of 100-byte objects with THREADS
 *                          threads, then print what smaps says of the
 *                          heap and exit
 *
 * Prints "smaps_thp_kb=N smaps_hugetlb_kb=M heap_maps=K stats_us=U":
 * AnonHugePages, and Private_Hugetlb plus Shared_Hugetlb, summed over the
 * mappings that hold the heap (every mapping holding one of the blocks, or
 * the array of their addresses), how many mappings that is, and what one
 * hpmalloc_stats call (with the census of huge pages) took, in
 * microseconds, averaged over 10 calls (-1 when hpmalloc is not the
 * allocator).  Run with HPMALLOC_STATS=1, whose report at exit is then
 * held against these figures.  MIT licence.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SAMPLE_EVERY = 64 };

static size_t per_thread, per_sample;
static uintptr_t *samples; /* SAMPLE_EVERY-th block addresses, by thread */

struct job {
  int idx;
};

static void *build(void *arg) {
  const struct job *j = arg;
  for (size_t i = 0; i < per_thread; i++) {
    char *p = malloc(100);
    if (!p) {
      perror("malloc");
      exit(1);
    }
    memset(p, 1, 100);
    if (i % SAMPLE_EVERY == 0) samples[(size_t)j->idx * per_sample + i / SAMPLE_EVERY] = (uintptr_t)p;
  }
  return NULL;
}

static int cmp(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

/* Does a sample lie in [lo, hi)?  */
static int holds(const uintptr_t *s, size_t n, uintptr_t lo, uintptr_t hi) {
  size_t a = 0, b = n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (s[m] < lo)
      a = m + 1;
    else
      b = m;
  }
  return a < n && s[a] < hi;
}

static double stats_us(void) {
#ifdef HPT_LINKED /* linked with hpmalloc (a static program has no dlsym) */
  extern int hpmalloc_stats(void *, size_t);
  int (*fn)(void *, size_t) = hpmalloc_stats;
#else
  int (*fn)(void *, size_t) = (int (*)(void *, size_t))dlsym(RTLD_DEFAULT, "hpmalloc_stats");
#endif
  char st[1024];
  if (!fn) return -1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 10; i++)
    if (fn(st, sizeof st) != 0) return -1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / 10;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: backed MiB THREADS\n");
    return 2;
  }
  size_t mib = strtoul(argv[1], NULL, 10);
  int threads = atoi(argv[2]);
  if (threads < 1 || threads > 16) threads = 1;
  per_thread = (mib << 20) / 100 / (size_t)threads;
  per_sample = per_thread / SAMPLE_EVERY + 1;
  size_t n = per_sample * (size_t)threads + 1;
  samples = calloc(n, sizeof *samples);
  if (!samples) return 1;
  pthread_t th[16];
  struct job jobs[16];
  for (int i = 0; i < threads; i++) {
    jobs[i].idx = i;
    pthread_create(&th[i], NULL, build, &jobs[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  samples[n - 1] = (uintptr_t)samples; /* the main arena's heap holds the array */
  qsort(samples, n, sizeof *samples, cmp);
  double us = stats_us();

  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 1;
  char line[4096];
  int in = 0, maps = 0;
  unsigned long thp = 0, hugetlb = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, kb;
    char name[64];
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = holds(samples, n, lo, hi);
      maps += in;
    } else if (in && sscanf(line, "%63[A-Za-z_]: %lu kB", name, &kb) == 2) {
      if (!strcmp(name, "AnonHugePages")) thp += kb;
      if (!strcmp(name, "Private_Hugetlb") || !strcmp(name, "Shared_Hugetlb")) hugetlb += kb;
    }
  }
  fclose(f);
  printf("smaps_thp_kb=%lu smaps_hugetlb_kb=%lu heap_maps=%d stats_us=%.0f\n", thp, hugetlb, maps, us);
  return 0;
}
