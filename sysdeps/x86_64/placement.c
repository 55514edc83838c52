/* SPDX-License-Identifier: MIT */
/* x86_64 placement policy.  MIT licence.
 *
 * Base pages are 4 KiB, the PMD maps 2 MiB and the PUD 1 GiB.  Heap
 * reservations are aligned to 1 GiB so that both huge page sizes fit whole
 * pages from the region's first byte.  No hint: the kernel's choice keeps
 * ASLR (the mmap area grows down from below the stack; a large PROT_NONE
 * reservation then grows upward inside itself, away from that growth).
 * User space ends at 128 TiB (47 bits) with 4-level paging; with 5-level
 * paging the kernel maps above it only for a hint above 47 bits, which this
 * policy never gives (a request for it is not supported yet).  */
#include "hp_placement.h"

void hp_placement_x86_64(const struct hp_sysinfo *si, struct hp_placement *pl) {
  hp_pl_clear(pl, hp_pl_base_page(si));
  pl->align = HP_GIB;
  pl->huge_align = HP_GIB;
  pl->limit = (uintptr_t)(128 * HP_TIB);
  hp_pl_desc(pl, "x86_64: heap aligned to 1 GiB, hint none, below 128 TiB");
}

size_t hp_default_pmd_x86_64(const struct hp_sysinfo *si) {
  (void)si;
  return 2 * HP_MIB;
}
