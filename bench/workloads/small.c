/* SPDX-License-Identifier: MIT */
/* small: small-object workloads in the shape of the classic allocator
 * benchmarks, written for this project.  MIT licence.
 *
 *   small larson  SCALE   a server simulation (after Larson & Krishnan):
 *                         2 threads, each owning 1000 slots, replace the
 *                         block in a random slot (10..500 bytes); every
 *                         round the threads exit and new ones inherit their
 *                         slots, so blocks are freed by a thread other than
 *                         the one that allocated them.
 *   small xmalloc SCALE   producer/consumer (after xmalloc-test): one
 *                         thread allocates 16..256-byte blocks in batches of
 *                         256, the other frees them; a thread waiting for
 *                         the other spins briefly, then sleeps on a futex.
 *   small scratch SCALE   passive false sharing (after cache-scratch): each
 *                         thread frees an 8-byte object the main thread
 *                         allocated next to the others', then mallocs,
 *                         writes and frees 8-byte objects.
 *   small thrash  SCALE   active false sharing (after cache-thrash): each
 *                         thread mallocs 8-byte objects, writes each many
 *                         times, frees them.
 *   small simple  SCALE   glibc's bench-malloc-simple shape: one thread
 *                         allocates then frees 25/100/400/1600 blocks of
 *                         16..256 bytes, over and over.
 *   small thread  SCALE   glibc's bench-malloc-thread shape: 2 threads,
 *                         each replacing random blocks in a 1024-slot
 *                         working set, sizes from a power-law 4..32768.
 *   small realloc SCALE   random-size churn with realloc: malloc, free and
 *                         realloc (grow and shrink, 8 bytes..4 KiB, 1 in 64
 *                         up to 64 KiB) on 4096 slots, one thread.
 *
 * SCALE is a multiplier of the default work (1 = about a second under
 * glibc on the project's machine).  Prints "op_s=... check=..."; the
 * launcher measures wall and CPU time.  */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static inline void touch(void *p, size_t n) {
  unsigned char *c = p;
  c[0] = (unsigned char)n;
  c[n - 1] = (unsigned char)n;
  __asm__ volatile("" : : "r"(p) : "memory");
}
static double scale = 1;
static atomic_ulong check;

/* ---- larson ---- */
#define L_THREADS 2
#define L_SLOTS 1000
struct lar { void **slots; size_t *sz; long ops; uint64_t seed; };
static void *larson_thread(void *a) {
  struct lar *l = a;
  /* The generator's state lives on this thread's stack: the two threads'
     structs share a cache line of the parent's stack, and writing the seed
     there made every allocator's run a false-sharing benchmark.  */
  uint64_t seed = l->seed;
  void **slots = l->slots;
  for (long i = 0; i < l->ops; i++) {
    size_t k = rnd(&seed) % L_SLOTS;
    free(slots[k]);
    size_t n = 10 + rnd(&seed) % 491;
    slots[k] = xmalloc(n);
    touch(slots[k], n);
  }
  return NULL;
}
static void larson(void) {
  long rounds = (long)(30 * scale), ops = 100000;
  void **slots = calloc(L_THREADS * L_SLOTS, sizeof *slots);
  for (int i = 0; i < L_THREADS * L_SLOTS; i++) { slots[i] = xmalloc(64); touch(slots[i], 64); }
  for (long r = 0; r < rounds; r++) {
    pthread_t th[L_THREADS];
    struct lar l[L_THREADS];
    for (int t = 0; t < L_THREADS; t++) {
      /* new threads take the other thread's slots from the last round */
      l[t] = (struct lar){slots + ((t + r) % L_THREADS) * L_SLOTS, NULL, ops, 0x9e3779b97f4a7c15ull * (uint64_t)(r * 7 + t + 1)};
      pthread_create(&th[t], NULL, larson_thread, &l[t]);
    }
    for (int t = 0; t < L_THREADS; t++) pthread_join(th[t], NULL);
  }
  for (int i = 0; i < L_THREADS * L_SLOTS; i++) free(slots[i]);
  free(slots);
}

/* ---- xmalloc-test: producer/consumer ---- */
/* A thread with nothing to do spins briefly, then sleeps on a futex until
   the other thread moves its counter: the time measured is the
   allocator's, not the scheduler's (sched_yield made every allocator's
   best run the same).  */
#define X_BATCH 256
#define X_RING 64
#define X_SPIN 2000
static void *x_ring[X_RING][X_BATCH];
static atomic_int x_head, x_tail; /* batches produced / consumed */
static atomic_int x_sleepers;
static int x_batches;
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  __asm__ volatile("" ::: "memory");
#endif
}
static void x_wait_change(atomic_int *word, int seen) {
  for (int i = 0; i < X_SPIN; i++) {
    if (atomic_load_explicit(word, memory_order_acquire) != seen) return;
    cpu_relax();
  }
  atomic_fetch_add(&x_sleepers, 1);
  while (atomic_load(word) == seen) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
  atomic_fetch_sub(&x_sleepers, 1);
}
static void x_publish(atomic_int *word, int v) {
  atomic_store(word, v);
  if (atomic_load(&x_sleepers)) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
static void *x_producer(void *a) {
  (void)a;
  uint64_t s = 12345;
  for (int b = 0; b < x_batches; b++) {
    for (int t; b - (t = atomic_load_explicit(&x_tail, memory_order_acquire)) >= X_RING;) x_wait_change(&x_tail, t);
    void **slot = x_ring[b % X_RING];
    for (int i = 0; i < X_BATCH; i++) {
      size_t n = 16 + rnd(&s) % 241;
      slot[i] = xmalloc(n);
      touch(slot[i], n);
    }
    x_publish(&x_head, b + 1);
  }
  return NULL;
}
static void *x_consumer(void *a) {
  (void)a;
  for (int b = 0; b < x_batches; b++) {
    for (int h; (h = atomic_load_explicit(&x_head, memory_order_acquire)) <= b;) x_wait_change(&x_head, h);
    void **slot = x_ring[b % X_RING];
    for (int i = 0; i < X_BATCH; i++) free(slot[i]);
    x_publish(&x_tail, b + 1);
  }
  return NULL;
}
static void xmalloc_test(void) {
  double nb = 40000 * scale;
  x_batches = nb < 1 ? 1 : nb > 1e9 ? 1000000000 : (int)nb;
  pthread_t p, c;
  pthread_create(&c, NULL, x_consumer, NULL);
  pthread_create(&p, NULL, x_producer, NULL);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
}

/* ---- cache-scratch / cache-thrash ---- */
#define C_THREADS 2
struct cjob { char *given; long objs, writes; };
static void *cache_thread(void *a) {
  struct cjob *j = a;
  if (j->given) free(j->given);
  unsigned long sum = 0;
  for (long i = 0; i < j->objs; i++) {
    volatile char *p = xmalloc(8);
    for (long w = 0; w < j->writes; w++) { p[w & 7] = (char)w; sum += p[(w + 1) & 7]; }
    free((void *)p);
  }
  atomic_fetch_add(&check, sum);
  return NULL;
}
static void cache(int scratch) {
  pthread_t th[C_THREADS];
  struct cjob j[C_THREADS];
  for (int t = 0; t < C_THREADS; t++) {
    j[t] = (struct cjob){scratch ? xmalloc(8) : NULL, (long)(2000000 * scale), 50};
    if (scratch) touch(j[t].given, 8);
  }
  for (int t = 0; t < C_THREADS; t++) pthread_create(&th[t], NULL, cache_thread, &j[t]);
  for (int t = 0; t < C_THREADS; t++) pthread_join(th[t], NULL);
}

/* ---- glibc bench-malloc-simple shape ---- */
static void simple(void) {
  static const int counts[] = {25, 100, 400, 1600};
  void **a = xmalloc(1600 * sizeof *a);
  long reps = (long)(4000 * scale);
  for (int c = 0; c < 4; c++)
    for (size_t size = 16; size <= 256; size *= 2)
      for (long r = 0; r < reps * 25 / counts[c] / 4; r++) {
        for (int i = 0; i < counts[c]; i++) { a[i] = xmalloc(size); touch(a[i], size); }
        for (int i = 0; i < counts[c]; i++) free(a[i]);
      }
  free(a);
}

/* ---- glibc bench-malloc-thread shape ---- */
#define T_WS 1024
static size_t t_size(uint64_t *s) {
  /* power law between 4 and 32768: small sizes dominate */
  double u = (double)(rnd(s) >> 11) / 9007199254740992.0;
  double v = 4.0 * __builtin_pow(8192.0, u * u * u);
  return (size_t)v;
}
static void *t_thread(void *a) {
  uint64_t s = (uintptr_t)a * 0x9e3779b97f4a7c15ull + 1;
  void *ws[T_WS] = {0};
  long iters = (long)(4000000 * scale);
  for (long i = 0; i < iters; i++) {
    size_t k = rnd(&s) % T_WS;
    free(ws[k]);
    size_t n = t_size(&s);
    ws[k] = xmalloc(n);
    touch(ws[k], n);
  }
  for (int k = 0; k < T_WS; k++) free(ws[k]);
  return NULL;
}
static void thread_shape(void) {
  pthread_t th[2];
  for (uintptr_t t = 0; t < 2; t++) pthread_create(&th[t], NULL, t_thread, (void *)(t + 1));
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
}

/* ---- realloc churn ---- */
#define R_SLOTS 4096
static void realloc_churn(void) {
  void **a = calloc(R_SLOTS, sizeof *a);
  size_t *sz = calloc(R_SLOTS, sizeof *sz);
  uint64_t s = 777;
  long ops = (long)(10000000 * scale);
  for (long i = 0; i < ops; i++) {
    size_t k = rnd(&s) % R_SLOTS;
    uint64_t r = rnd(&s);
    size_t n = (r & 63) == 0 ? 8 + (r >> 8) % 65536 : 8 + (r >> 8) % 4089;
    switch ((r >> 6) % 4) {
    case 0: free(a[k]); a[k] = NULL; sz[k] = 0; break;
    default:
      a[k] = realloc(a[k], n);
      if (!a[k]) { perror("realloc"); exit(1); }
      touch(a[k], n);
      sz[k] = n;
    }
  }
  for (int k = 0; k < R_SLOTS; k++) free(a[k]);
  free(a);
  free(sz);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: small larson|xmalloc|scratch|thrash|simple|thread|realloc [SCALE]\n");
    return 2;
  }
  if (argc > 2) scale = atof(argv[2]);
  double t0 = now();
  const char *w = argv[1];
  if (!strcmp(w, "larson")) larson();
  else if (!strcmp(w, "xmalloc")) xmalloc_test();
  else if (!strcmp(w, "scratch")) cache(1);
  else if (!strcmp(w, "thrash")) cache(0);
  else if (!strcmp(w, "simple")) simple();
  else if (!strcmp(w, "thread")) thread_shape();
  else if (!strcmp(w, "realloc")) realloc_churn();
  else { fprintf(stderr, "small: unknown workload %s\n", w); return 2; }
  printf("op_s=%.4f check=%lu\n", now() - t0, (unsigned long)atomic_load(&check));
  return 0;
}
