/* SPDX-License-Identifier: MIT */
/* emptyroot: a static program (linked with libhpmalloc.a) for the check of
 * huge pages in an empty root (tests/hugepages/run.sh): run there, with no
 * /proc and no /sys, hpmalloc learns what the kernel offers from the
 * system calls themselves.
 *
 *   emptyroot MB   builds a heap of MB megabytes of 1000-byte blocks, each
 *                  filled with its own byte, prints "ready PID" on stdout,
 *                  waits for end of file on stdin (the parent reads the
 *                  child's /proc/PID/smaps_rollup meanwhile, from outside
 *                  the root), then checks every block and frees them:
 *                  exit 0, or 1 when a block lost its bytes or an
 *                  allocation failed.
 * MIT licence.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BLOCK = 1000 };

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 200, n = (mb << 20) / BLOCK;
  unsigned char **v = malloc(n * sizeof *v);
  if (!v) return 1;
  for (size_t i = 0; i < n; i++) {
    v[i] = malloc(BLOCK);
    if (!v[i]) return 1;
    memset(v[i], (int)(i * 7 + 1), BLOCK);
  }
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {}
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    bad |= v[i][0] != (unsigned char)(i * 7 + 1) || v[i][BLOCK - 1] != (unsigned char)(i * 7 + 1);
    free(v[i]);
  }
  free(v);
  return bad;
}
