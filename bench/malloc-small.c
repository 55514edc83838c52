/* SPDX-License-Identifier: MIT */
/* Single-threaded small-object malloc/free benchmark.  MIT licence.
 *
 *   malloc-small [N [lifo|batch]]   N mallocs in all (default 50,000,000),
 *                                   half in each pattern, or all in one:
 *   lifo   a stack of depth 1..8: push (malloc) then pop (free) in reverse
 *          order, sizes 16..512 -- the tcache fast path;
 *   batch  1000 blocks of sizes 16..512 allocated, then freed in allocation
 *          order -- more than tcache holds: fastbins, small bins, merging.
 * Every block is written to (first and last byte).  Prints seconds per
 * pattern and a RESULT line: "RESULT malloc-small total_s=... ns_per_op=...".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define NSIZES 4096
static size_t sizes[NSIZES];

static inline void *use(void *p, size_t n) {
  unsigned char *c = p;
  c[0] = (unsigned char)n;
  c[n - 1] = (unsigned char)n;
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

int main(int argc, char **argv) {
  long total = argc > 1 ? atol(argv[1]) : 50000000L;
  const char *only = argc > 2 ? argv[2] : "";
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < NSIZES; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    /* biased to small sizes, as programs are: half 16..64, the rest ..512 */
    sizes[i] = (x & 1) ? 16 + (x >> 8) % 49 : 16 + (x >> 8) % 497;
  }
  unsigned long sink = 0;

  /* LIFO */
  long lifo_n = strcmp(only, "lifo") == 0 ? total : strcmp(only, "batch") == 0 ? 0 : total / 2, done = 0;
  void *stack[8];
  unsigned si = 0;
  double t0 = now();
  while (done < lifo_n) {
    int depth = 1 + (int)(done & 7);
    for (int d = 0; d < depth; d++) {
      size_t n = sizes[si++ & (NSIZES - 1)];
      stack[d] = use(malloc(n), n);
    }
    for (int d = depth - 1; d >= 0; d--) free(stack[d]);
    done += depth;
  }
  double t1 = now();

  /* batch */
  enum { BATCH = 1000 };
  static void *batch[BATCH];
  long batch_n = total - lifo_n;
  done = 0;
  while (done < batch_n) {
    for (int i = 0; i < BATCH; i++) {
      size_t n = sizes[si++ & (NSIZES - 1)];
      batch[i] = use(malloc(n), n);
    }
    for (int i = 0; i < BATCH; i++) {
      sink += ((unsigned char *)batch[i])[0];
      free(batch[i]);
    }
    done += BATCH;
  }
  double t2 = now();
  double tot = t2 - t0;
  printf("malloc-small: %ld mallocs: lifo %.3f s, batch %.3f s, total %.3f s (%.2f ns per malloc+free) [%lu]\n",
         total, t1 - t0, t2 - t1, tot, tot * 1e9 / (double)total, sink & 1);
  printf("RESULT malloc-small total_s=%.4f lifo_s=%.4f batch_s=%.4f ns_per_op=%.3f\n", tot, t1 - t0, t2 - t1,
         tot * 1e9 / (double)total);
  return 0;
}
