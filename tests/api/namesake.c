/* SPDX-License-Identifier: MIT */
/* A static program whose own globals bear every internal name of the
 * library (tests/api/namesake-gen.sh writes them into the file linked
 * beside this one): it must link with libhpmalloc.a, allocate from
 * hpmalloc, and find its own objects untouched by the allocator.
 * MIT licence. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"

extern void (*const namesake_funcs[])(void);
extern int *const namesake_objs[];
extern const unsigned namesake_nfuncs, namesake_nobjs;

int main(void) {
  int fails = 0;
  struct hpmalloc_stats a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (hpmalloc_stats(&a, sizeof a) != 0) { puts("not ok 1 - hpmalloc_stats"); return 1; }
  enum { N = 64, SIZE = 5000 };
  void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = malloc(SIZE);
    if (!p[i]) { puts("not ok 1 - malloc failed"); return 1; }
    memset(p[i], 0x5a, SIZE);
  }
  char *s = strdup("libc's own allocation");
  hpmalloc_stats(&b, sizeof b);
  if (b.bytes_in_use >= a.bytes_in_use + N * SIZE) printf("ok 1 - allocations are hpmalloc's (bytes_in_use %zu -> %zu)\n", a.bytes_in_use, b.bytes_in_use);
  else { printf("not ok 1 - bytes_in_use %zu -> %zu after %d bytes: not hpmalloc's blocks\n", a.bytes_in_use, b.bytes_in_use, N * SIZE); fails++; }
  if (!s || malloc_usable_size(s) < 22) { puts("not ok 2 - strdup's block unknown to malloc_usable_size"); fails++; }
  else puts("ok 2 - strdup's block is hpmalloc's");
  for (int i = 0; i < N; i++) free(p[i]);
  free(s);
  unsigned bad = 0;
  for (unsigned i = 0; i < namesake_nobjs; i++) bad += *namesake_objs[i] != 7;
  for (unsigned i = 0; i < namesake_nfuncs; i++) namesake_funcs[i]();
  if (bad == 0) printf("ok 3 - the program's %u objects named like the library's internals kept their values\n", namesake_nobjs);
  else { printf("not ok 3 - %u of the program's %u objects changed under the allocator\n", bad, namesake_nobjs); fails++; }
  if (hpmalloc_check_heap() != 0) { puts("not ok 4 - hpmalloc_check_heap"); fails++; }
  else puts("ok 4 - heap check");
  printf("# %u functions and %u objects named like the library's internals\n", namesake_nfuncs, namesake_nobjs);
  printf("namesake: %d passed, %d failed\n", 4 - fails, fails);
  return fails != 0;
}
