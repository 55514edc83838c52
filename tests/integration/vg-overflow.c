/* SPDX-License-Identifier: MIT */
/* Deliberate heap errors, linked with hpmalloc: memcheck must report an
 * invalid write one byte past a 24-byte block and an invalid read of a freed
 * block.  MIT licence. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *volatile p = malloc(24);
  for (int i = 0; i < 24; i++) p[i] = (char)i;
  p[24] = 'X'; /* one past the end */
  free(p);
  volatile char c = p[3]; /* after free */
  (void)c;
  printf("vg-overflow: done\n");
  return 0;
}
