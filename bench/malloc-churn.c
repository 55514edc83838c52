/* SPDX-License-Identifier: MIT */
/* Two-threaded churn benchmark.  MIT licence.
 *
 *   malloc-churn [OPS]   OPS operations per thread (default 10,000,000)
 *
 * Each of two threads keeps a working set of 10,000 slots.  An operation
 * picks a random slot; a live block there is freed -- or, one time in ten,
 * handed to the other thread through a single-producer/single-consumer ring,
 * and that thread frees it (a cross-thread free) -- and a new block of
 * 16..512 bytes (some up to 4 KiB) takes its place.  Each thread drains its
 * incoming ring every 64 operations.  Prints a RESULT line with the wall time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 10000
#define RING 4096 /* power of two */

struct ring {
  _Atomic size_t head; /* written by the consumer */
  char pad1[64 - sizeof(size_t)];
  _Atomic size_t tail; /* written by the producer */
  char pad2[64 - sizeof(size_t)];
  void *item[RING];
};

static struct ring rings[2]; /* rings[i]: blocks sent TO thread i */
static long ops_per_thread;
static _Atomic long cross_frees, local_frees;
static pthread_barrier_t start_barrier;

static int ring_push(struct ring *r, void *p) {
  size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  if (t - h == RING) return 0;
  r->item[t & (RING - 1)] = p;
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
  return 1;
}

static long ring_drain(struct ring *r) {
  size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  long n = 0;
  for (; h != t; h++, n++) free(r->item[h & (RING - 1)]);
  atomic_store_explicit(&r->head, h, memory_order_release);
  return n;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
  int me = (int)(intptr_t)arg, other = 1 - me;
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
  void **slot = calloc(SLOTS, sizeof *slot);
  long cross = 0, local = 0, drained = 0;
  pthread_barrier_wait(&start_barrier);
  for (long i = 0; i < ops_per_thread; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    size_t s = (size_t)(x % SLOTS);
    if (slot[s]) {
      if ((x >> 40) % 10 == 0 && ring_push(&rings[other], slot[s])) cross++;
      else { free(slot[s]); local++; }
    }
    size_t n = ((x >> 20) % 16 == 0) ? 16 + (x >> 24) % 4081 : 16 + (x >> 24) % 497;
    unsigned char *p = malloc(n);
    p[0] = (unsigned char)i;
    p[n - 1] = (unsigned char)i;
    slot[s] = p;
    if ((i & 63) == 0) drained += ring_drain(&rings[me]);
  }
  pthread_barrier_wait(&start_barrier); /* both done sending */
  drained += ring_drain(&rings[me]);
  for (size_t s = 0; s < SLOTS; s++) free(slot[s]);
  free(slot);
  atomic_fetch_add(&cross_frees, drained);
  atomic_fetch_add(&local_frees, local);
  (void)cross;
  return NULL;
}

int main(int argc, char **argv) {
  ops_per_thread = argc > 1 ? atol(argv[1]) : 10000000L;
  pthread_barrier_init(&start_barrier, NULL, 2);
  pthread_t t[2];
  double t0 = now();
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  double tot = now() - t0;
  printf("malloc-churn: 2 threads x %ld ops: %.3f s (%.2f ns per op), %ld cross-thread frees, %ld local frees\n",
         ops_per_thread, tot, tot * 1e9 / (2.0 * (double)ops_per_thread), atomic_load(&cross_frees),
         atomic_load(&local_frees));
  printf("RESULT malloc-churn total_s=%.4f ns_per_op=%.3f\n", tot, tot * 1e9 / (2.0 * (double)ops_per_thread));
  return 0;
}
