/* Exits 0 when the allocations of this process are hpmalloc's (its
 * counters move), 3 when something else (memcheck's replacement malloc)
 * served them.  MIT licence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"

int main(void) {
  struct hpmalloc_stats a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (hpmalloc_stats(&a, sizeof a) != 0) return 2;
  char *volatile p = malloc(100000);
  char *volatile q = calloc(10, 1000);
  if (hpmalloc_stats(&b, sizeof b) != 0) return 2;
  int hpm = b.bytes_in_use >= a.bytes_in_use + 110000;
  printf("vg-uses-hpm: bytes_in_use %zu -> %zu: %s\n", a.bytes_in_use, b.bytes_in_use,
         hpm ? "hpmalloc served the blocks" : "hpmalloc did NOT serve the blocks");
  free(p);
  free(q);
  return hpm ? 0 : 3;
}
