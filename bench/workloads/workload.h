/* SPDX-License-Identifier: MIT */
/* workload.h: what the benchmark workloads (small.c, tlb.c) share: a
 * monotonic clock, a xorshift generator and a malloc that exits when it
 * fails.  MIT licence.  */
#ifndef HPB_WORKLOAD_H
#define HPB_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static inline uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  return *s = x;
}
static inline void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) { perror("malloc"); exit(1); }
  return p;
}

#endif
