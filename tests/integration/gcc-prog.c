/* SPDX-License-Identifier: MIT */
/* Compiled by gcc under the allocator being tested, then run.  MIT licence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; int v; char name[24]; };

static int cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int main(void) {
  enum { N = 100000 };
  int *v = malloc(N * sizeof *v);
  unsigned x = 12345;
  for (int i = 0; i < N; i++) { x = x * 1103515245u + 12345u; v[i] = (int)(x >> 8); }
  qsort(v, N, sizeof *v, cmp);
  struct node *head = NULL;
  for (int i = 0; i < 1000; i++) {
    struct node *n = malloc(sizeof *n);
    n->v = v[i * 100];
    snprintf(n->name, sizeof n->name, "n%d", i);
    n->next = head;
    head = n;
  }
  long long sum = 0;
  for (struct node *n = head; n; n = n->next) sum += n->v + (long long)strlen(n->name);
  printf("min %d max %d sum %lld\n", v[0], v[N - 1], sum);
  while (head) { struct node *n = head->next; free(head); head = n; }
  free(v);
  return 0;
}
