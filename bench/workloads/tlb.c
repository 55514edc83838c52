/* SPDX-License-Identifier: MIT */
/* tlb: TLB-heavy workloads, written for this project.  MIT licence.
 *
 *   tlb graph  N THREADS STEPS
 *       An object graph: N nodes of 100 bytes, allocated by THREADS threads
 *       (each its share, in its own arena where the allocator has them),
 *       every node given two edges to random nodes; then THREADS threads
 *       walk it, STEPS steps in all, each step following one of the current
 *       node's edges (a dependent load: the walk is bound by the TLB and the
 *       cache, not by the allocator's code).  Then everything is freed.
 *   tlb blocks COUNT SIZE_KIB READS [mixed]
 *       COUNT blocks of SIZE_KIB KiB (or, with "mixed", sizes from 1/4 to
 *       2x SIZE_KIB around the huge page size), each written in full; one
 *       block in four freed and allocated again (a different size with
 *       "mixed"); then READS random 8-byte reads, each in a random block at
 *       a random offset, dependent on the previous one.  Then everything is
 *       freed.
 *
 * Prints "build_s=.. walk_s=.. free_s=.. check=..".  */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload.h"

struct node { struct node *edge[2]; uint64_t payload[(100 - 2 * sizeof(void *)) / 8]; uint32_t pad; };

struct job { struct node **all; size_t lo, hi, n, steps; uint64_t seed, sum; int phase; };

static void *work(void *a) {
  struct job *j = a;
  uint64_t s = j->seed;
  if (j->phase == 0) {
    for (size_t i = j->lo; i < j->hi; i++) {
      struct node *p = xmalloc(sizeof *p);
      for (size_t k = 0; k < sizeof p->payload / 8; k++) p->payload[k] = i + k;
      j->all[i] = p;
    }
  } else if (j->phase == 1) {
    for (size_t i = j->lo; i < j->hi; i++) {
      j->all[i]->edge[0] = j->all[rnd(&s) % j->n];
      j->all[i]->edge[1] = j->all[rnd(&s) % j->n];
    }
  } else if (j->phase == 2) {
    struct node *p = j->all[rnd(&s) % j->n];
    uint64_t sum = 0;
    for (size_t i = 0; i < j->steps; i++) {
      sum += p->payload[i & 7];
      p = p->edge[(sum ^ i) & 1];
    }
    j->sum = sum;
  } else {
    for (size_t i = j->lo; i < j->hi; i++) free(j->all[i]);
  }
  return NULL;
}

static void phase(struct job *jobs, int t, int ph) {
  pthread_t th[64];
  for (int i = 0; i < t; i++) { jobs[i].phase = ph; pthread_create(&th[i], NULL, work, &jobs[i]); }
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
}

static int graph(size_t n, int t, size_t steps) {
  if (t < 1 || t > 64) return 2;
  struct node **all = xmalloc(n * sizeof *all);
  struct job jobs[64];
  for (int i = 0; i < t; i++)
    jobs[i] = (struct job){all, n * i / t, n * (i + 1) / t, n, steps / t, 0x9e3779b97f4a7c15ull * (i + 1), 0, 0};
  double t0 = now();
  phase(jobs, t, 0);
  phase(jobs, t, 1);
  double t1 = now();
  phase(jobs, t, 2);
  double t2 = now();
  phase(jobs, t, 3);
  double t3 = now();
  uint64_t sum = 0;
  for (int i = 0; i < t; i++) sum += jobs[i].sum;
  free(all);
  printf("build_s=%.4f walk_s=%.4f free_s=%.4f ns_per_step=%.2f check=%llu\n", t1 - t0, t2 - t1, t3 - t2,
         (t2 - t1) * 1e9 / (double)(steps / t), (unsigned long long)sum);
  return 0;
}

static int blocks(size_t count, size_t kib, size_t reads, int mixed) {
  char **b = xmalloc(count * sizeof *b);
  size_t *len = xmalloc(count * sizeof *len);
  uint64_t s = 4242;
  double t0 = now();
  for (size_t i = 0; i < count; i++) {
    len[i] = mixed ? (kib * 1024 / 4) + rnd(&s) % (kib * 1024 * 7 / 4) : kib * 1024;
    b[i] = xmalloc(len[i]);
    memset(b[i], (int)i, len[i]);
  }
  for (size_t i = 0; i < count; i += 4) {
    free(b[i]);
    if (mixed) len[i] = (kib * 1024 / 4) + rnd(&s) % (kib * 1024 * 7 / 4);
    b[i] = xmalloc(len[i]);
    memset(b[i], (int)i, len[i]);
  }
  double t1 = now();
  uint64_t sum = 0;
  for (size_t i = 0; i < reads; i++) {
    uint64_t r = rnd(&s) ^ sum;
    size_t k = r % count;
    size_t off = ((r >> 20) % len[k]) & ~(size_t)7;
    sum += *(volatile uint64_t *)(b[k] + off) & 1;
  }
  double t2 = now();
  for (size_t i = 0; i < count; i++) free(b[i]);
  double t3 = now();
  free(b);
  free(len);
  printf("build_s=%.4f walk_s=%.4f free_s=%.4f ns_per_step=%.2f check=%llu\n", t1 - t0, t2 - t1, t3 - t2,
         (t2 - t1) * 1e9 / (double)reads, (unsigned long long)sum);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "graph"))
    return graph(strtoull(argv[2], NULL, 0), atoi(argv[3]), strtoull(argv[4], NULL, 0));
  if (argc >= 5 && !strcmp(argv[1], "blocks"))
    return blocks(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
                  argc > 5 && !strcmp(argv[5], "mixed"));
  fprintf(stderr, "usage: tlb graph N THREADS STEPS | tlb blocks COUNT SIZE_KIB READS [mixed]\n");
  return 2;
}
