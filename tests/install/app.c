/* SPDX-License-Identifier: MIT */
/* A program that uses hpmalloc's own API, so it runs only on hpmalloc:
   prints "VERSION BYTES_IN_USE" and exits 0 when the stats saw its block.
   Built by check-install and check-deb against an installed tree.  MIT.  */
#include <hpmalloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void *p = malloc(1000);
  struct hpmalloc_stats s;
  if (hpmalloc_stats(&s, sizeof s) != 0) return 1;
  printf("%s %zu\n", hpmalloc_version(), s.bytes_in_use);
  free(p);
  return s.bytes_in_use >= 1000 ? 0 : 1;
}
