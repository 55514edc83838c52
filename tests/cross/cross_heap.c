/* SPDX-License-Identifier: MIT */
/* cross_heap: where the allocator's own heap lands, on the probe's view of
 * a fixture machine.  Linked with the test build (hpt_* API), run under
 * qemu-user with HPMALLOC_TEST_SYSROOT pointing at a fixture tree.
 *
 *   cross_heap MIN_ADDRESS_HEX
 *
 * Allocates small blocks from the main arena, in the hugetlb mode
 * GLIBC_TUNABLES gives, and checks that they lie at or above MIN_ADDRESS
 * (1 TiB for a POWER hash MMU: heap regions in 1 TiB segments).  A thread
 * arena is made too and must serve a block; where it lands is not checked:
 * the hint is taken by the main heap, and the kernel's own choice is above
 * 1 TiB anyway, so such a check could not fail.  Prints "N passed, N failed".
 * MIT licence.  */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpt_api.h"
#include "params.h"
#include "region.h"

static int passed, failed;

static void check(int ok, const char *what, const void *p) {
  printf("%s %s (%p)\n", ok ? "ok  " : "FAIL", what, p);
  if (ok) passed++;
  else failed++;
}

static uintptr_t min_addr;

static void *thread_alloc(void *arg) {
  (void)arg;
  return hpt_malloc(100);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cross_heap MIN_ADDRESS_HEX\n");
    return 2;
  }
  min_addr = (uintptr_t)strtoull(argv[1], NULL, 16);
  void *small = hpt_malloc(100);
  printf("probe: arch %s, mmu %d, 1T segments %d, base page %zu, pmd %zu; placement: %s\n", hp_sysinfo.arch,
         (int)hp_sysinfo.mmu, hp_sysinfo.seg_1t, hp_sysinfo.base_page, hp_sysinfo.thp_pmd_size, hp_placement.desc);
  check(small && (uintptr_t)small >= min_addr, "main-arena block at or above the placement floor", small);
  pthread_t t;
  void *from_thread = NULL;
  if (pthread_create(&t, NULL, thread_alloc, NULL) == 0) pthread_join(t, &from_thread);
  check(from_thread != NULL, "a thread arena serves a block", from_thread);
  /* a block served from the heap whatever the mode: below the mmap threshold */
  void *mid = hpt_malloc(64 << 10);
  check(mid && (uintptr_t)mid >= min_addr, "64 KiB heap block at or above the floor", mid);
  memset(mid, 1, 64 << 10);
  hpt_free(mid);
  hpt_free(small);
  hpt_free(from_thread);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
