/* SPDX-License-Identifier: MIT */
/* Linked `gcc -static static-app.c libhpmalloc.a -lpthread`: it must link,
 * run, and really allocate from hpmalloc.  MIT licence. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"

static void *thread_fn(void *arg) {
  (void)arg;
  for (int i = 0; i < 10000; i++) {
    char *p = malloc(1 + (size_t)i % 2000);
    if (!p) return (void *)1;
    p[0] = 1;
    free(p);
  }
  return NULL;
}

int main(void) {
  int fails = 0;
  const char *v = hpmalloc_version();
  if (!v || !*v) { fprintf(stderr, "static-app: empty hpmalloc_version\n"); fails++; }
  struct hpmalloc_stats a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (hpmalloc_stats(&a, sizeof a) != 0) { fprintf(stderr, "static-app: hpmalloc_stats failed\n"); fails++; }
  const size_t n = 3 * 1000 * 1000;
  char *p = malloc(n);
  char *q = calloc(1000, 100);
  if (!p || !q) { fprintf(stderr, "static-app: malloc failed\n"); return 1; }
  memset(p, 7, n);
  if (hpmalloc_stats(&b, sizeof b) != 0) { fprintf(stderr, "static-app: hpmalloc_stats failed\n"); fails++; }
  if (b.bytes_in_use < a.bytes_in_use + n + 100000) {
    fprintf(stderr, "static-app: bytes_in_use %zu -> %zu after allocating %zu bytes: not hpmalloc's blocks?\n",
            a.bytes_in_use, b.bytes_in_use, n + 100000);
    fails++;
  }
  /* stdio, threads and strdup inside libc.a allocate too: all of it must
     go to hpmalloc, or free() would meet a foreign block. */
  char *s = strdup("static");
  char buf[64];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  if (f) { fprintf(f, "%s %d", s, 42); fclose(f); }
  pthread_t t[2];
  void *r0 = NULL, *r1 = NULL;
  pthread_create(&t[0], NULL, thread_fn, NULL);
  pthread_create(&t[1], NULL, thread_fn, NULL);
  pthread_join(t[0], &r0);
  pthread_join(t[1], &r1);
  if (r0 || r1) { fprintf(stderr, "static-app: thread allocation failed\n"); fails++; }
  free(s);
  free(p);
  free(q);
  if (hpmalloc_check_heap() != 0) { fprintf(stderr, "static-app: heap check failed\n"); fails++; }
  printf("static-app: hpmalloc %s, %d failures\n", v ? v : "?", fails);
  return fails != 0;
}
