/* SPDX-License-Identifier: MIT */
/* A deliberate leak, linked with hpmalloc: memcheck (with hpmalloc's own
 * malloc running and its client requests describing the blocks) must report
 * 12345 bytes definitely lost.  MIT licence. */
#include <stdlib.h>
#include <string.h>

void *keep;

__attribute__((noinline)) static void leak(void) {
  char *volatile p = malloc(12345);
  memset(p, 1, 12345);
  p = NULL;
}

int main(void) {
  keep = malloc(777); /* still reachable: not a leak */
  leak();
  /* scrub the stack area leak() used */
  volatile char scrub[4096];
  memset((char *)scrub, 0, sizeof scrub);
  return 0;
}
