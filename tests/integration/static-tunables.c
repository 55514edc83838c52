/* SPDX-License-Identifier: MIT */
/* An appliance that links hpmalloc statically gives its tunables in code:
 * hpmalloc_default_tunables sets the mmap threshold to 4 KiB (and top_pad
 * to 0, so the top chunk stays small), so a malloc of 8 KiB more than the
 * top chunk holds is mapped directly; with the default 128 KiB threshold it
 * would extend the heap.  The environment (GLIBC_TUNABLES,
 * MALLOC_MMAP_THRESHOLD_) still wins.
 * Usage: static-tunables mmap|heap    (what malloc(8192) must do)
 * Built without -DHPT_DEFAULTS it is a plain program, to check the
 * expectation on glibc with GLIBC_TUNABLES.                    MIT licence. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HPT_DEFAULTS
const char hpmalloc_default_tunables[] = "glibc.malloc.mmap_threshold=4096:glibc.malloc.top_pad=0";
#endif

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int want_mmap = strcmp(argv[1], "mmap") == 0;
  void *volatile warm = malloc(16); /* the heap exists, with a top chunk of keepcost bytes */
  free(warm);
  struct mallinfo2 a = mallinfo2();
  size_t n = a.keepcost + 8192;
  void *p = malloc(n);
  struct mallinfo2 b = mallinfo2();
  int mapped = b.hblks == a.hblks + 1;
  int ok = p != NULL && mapped == want_mmap && n < 128 * 1024;
  free(p);
  printf("static-tunables: malloc(%zu) %s (hblks %zu -> %zu), expected %s: %s\n", n, mapped ? "mmapped" : "from the heap",
         a.hblks, b.hblks, want_mmap ? "mmapped" : "from the heap", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
