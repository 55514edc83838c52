/* SPDX-License-Identifier: MIT */
/* Exits 0 when the allocations of this process are hpmalloc's (its
 * counters move), 3 when something else (memcheck's replacement malloc)
 * served them.  With the argument "census": builds 8 MiB of small blocks
 * and prints what hpmalloc_stats measured on huge pages, so that memcheck
 * sees the census's figures used (it does not know the kernel's
 * PAGEMAP_SCAN ioctl, whose output would otherwise look undefined).
 * MIT licence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"

static int census(void) {
  struct hpmalloc_stats st;
  for (int i = 0; i < 80000; i++) memset(malloc(100), 1, 100);
  if (hpmalloc_stats(&st, sizeof st) != 0) return 2;
  printf("vg-uses-hpm: census: %zu of %zu heap bytes on THP, %zu on hugetlb pages (source %d)\n",
         st.bytes_heap_thp_backed, st.bytes_heap, st.bytes_heap_hugetlb_backed, st.backed_source);
  return st.backed_source != HPMALLOC_BACKED_UNKNOWN ? 0 : 4;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "census") == 0) return census();
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
