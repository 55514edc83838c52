/* SPDX-License-Identifier: MIT */
/* tlbdemo: a TLB-heavy workload for `make demo`.
 *
 * Builds a heap of small objects (100 bytes by default) from T threads,
 * reads them back in random order (the TLB-bound phase), frees them, and
 * prints one line of key=value figures: time per phase, RSS, and how much
 * of the heap sits on huge pages (THP from /proc/self/smaps_rollup,
 * hugetlbfs from /proc/self/status).  The allocator under test is whatever
 * malloc the process has (glibc, or hpmalloc preloaded).  MIT licence.  */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
  char **objs;
  size_t n, size, reads;
  uint64_t seed, sum;
  size_t total_objs;
  char **all;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static void *build(void *arg) {
  struct job *j = arg;
  for (size_t i = 0; i < j->n; i++) {
    char *p = malloc(j->size);
    if (!p) { perror("malloc"); exit(1); }
    memset(p, (int)(i & 0x7f), j->size);
    j->objs[i] = p;
  }
  return NULL;
}

static void *readers(void *arg) {
  struct job *j = arg;
  uint64_t s = j->seed, sum = 0;
  for (size_t i = 0; i < j->reads; i++) {
    const char *p = j->all[xorshift(&s) % j->total_objs];
    sum += (unsigned char)p[(s >> 32) % j->size];
  }
  j->sum = sum;
  return NULL;
}

static void *freer(void *arg) {
  struct job *j = arg;
  for (size_t i = 0; i < j->n; i++) free(j->objs[i]);
  return NULL;
}

static long field_kb(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, klen) == 0) v = strtol(line + klen, NULL, 10);
  fclose(f);
  return v;
}

static void run_phase(void *(*fn)(void *), struct job *jobs, int t) {
  pthread_t th[64];
  for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, fn, &jobs[i]);
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
  int t = argc > 2 ? atoi(argv[2]) : 2;
  size_t reads = argc > 3 ? strtoul(argv[3], NULL, 10) : 20000000;
  size_t size = argc > 4 ? strtoul(argv[4], NULL, 10) : 100;
  if (t < 1 || t > 64 || size == 0 || mb == 0) {
    fprintf(stderr, "usage: tlbdemo [MiB=1024] [threads=2] [reads=20000000] [objsize=100]\n");
    return 2;
  }
  size_t total = (mb << 20) / size;
  size_t per = total / (size_t)t;
  total = per * (size_t)t;
  char **all = malloc(total * sizeof *all);
  struct job jobs[64];
  for (int i = 0; i < t; i++)
    jobs[i] = (struct job){ .objs = all + per * (size_t)i, .n = per, .size = size, .reads = reads / (size_t)t,
                            .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), .total_objs = total, .all = all };
  double t0 = now();
  run_phase(build, jobs, t);
  double t1 = now();
  long rss = field_kb("/proc/self/smaps_rollup", "Rss:");
  long thp = field_kb("/proc/self/smaps_rollup", "AnonHugePages:");
  long htlb = field_kb("/proc/self/status", "HugetlbPages:");
  run_phase(readers, jobs, t);
  double t2 = now();
  run_phase(freer, jobs, t);
  double t3 = now();
  uint64_t sum = 0;
  for (int i = 0; i < t; i++) sum += jobs[i].sum;
  long heap_kb = rss + (htlb > 0 ? htlb : 0);
  double huge_pct = heap_kb > 0 ? 100.0 * ((thp > 0 ? thp : 0) + (htlb > 0 ? htlb : 0)) / heap_kb : 0;
  printf("build_s=%.3f read_s=%.3f free_s=%.3f rss_mb=%.1f thp_mb=%.1f hugetlb_mb=%.1f huge_pct=%.1f ns_per_read=%.1f checksum=%llu\n",
         t1 - t0, t2 - t1, t3 - t2, heap_kb / 1024.0, (thp > 0 ? thp : 0) / 1024.0, (htlb > 0 ? htlb : 0) / 1024.0,
         huge_pct, (t2 - t1) * 1e9 / (double)(reads / (size_t)t) , (unsigned long long)sum);
  free(all);
  return 0;
}
