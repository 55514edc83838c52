/* SPDX-License-Identifier: MIT */
/* forktime: what fork() costs a process whose threads built a large heap
 * of small objects, written for this project.  MIT licence.
 *
 *   forktime MIB FORKS
 *       Two threads each allocate MIB/2 MiB of 100-byte objects (each in
 *       its own arena where the allocator has them) and write them; then
 *       the parent forks FORKS times, the child exiting at once, and times
 *       each fork() call in the parent.  fork() copies the parent's page
 *       tables: one entry per 4 KiB page of base-page memory, one per
 *       2 MiB transparent huge page.
 *
 * Prints "heap_mib=.. rss_mib=.. anonhuge_mib=.. fork_ms_min=.. fork_ms_median=..
 * fork_ms_max=..".  */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

#define OBJ 100

struct job { size_t n; void **all; };

static void *build(void *a) {
  struct job *j = a;
  j->all = xmalloc(j->n * sizeof *j->all);
  for (size_t i = 0; i < j->n; i++) {
    j->all[i] = xmalloc(OBJ);
    memset(j->all[i], (int)i, OBJ);
  }
  return NULL;
}

/* kB of a field of /proc/self/smaps_rollup, or -1 */
static long rollup_kb(const char *field) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  char line[256];
  long kb = -1;
  size_t len = strlen(field);
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, len) && line[len] == ':') { kb = atol(line + len + 1); break; }
  fclose(f);
  return kb;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: forktime MIB FORKS\n"); return 2; }
  size_t mib = strtoul(argv[1], NULL, 10);
  int forks = atoi(argv[2]);
  if (mib == 0 || forks < 1) { fprintf(stderr, "forktime: MIB and FORKS must be positive\n"); return 2; }
  struct job jobs[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    jobs[i].n = (mib << 20) / 2 / OBJ;
    if (pthread_create(&t[i], NULL, build, &jobs[i])) { perror("pthread_create"); return 1; }
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);

  double *ms = xmalloc((size_t)forks * sizeof *ms);
  for (int i = 0; i < forks; i++) {
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    double t1 = now();
    if (pid < 0) { perror("fork"); return 1; }
    waitpid(pid, NULL, 0);
    ms[i] = (t1 - t0) * 1e3;
  }
  qsort(ms, (size_t)forks, sizeof *ms, cmp);
  printf("heap_mib=%zu rss_mib=%ld anonhuge_mib=%ld fork_ms_min=%.3f fork_ms_median=%.3f fork_ms_max=%.3f\n",
         mib, rollup_kb("Rss") / 1024, rollup_kb("AnonHugePages") / 1024, ms[0], ms[forks / 2],
         ms[forks - 1]);
  return 0;
}
