/* SPDX-License-Identifier: MIT */
/* Generic placement policy, for an architecture sysdeps does not know.
 * MIT licence.
 *
 * No hint and no limit: the kernel's choice.  Heap regions are aligned to
 * the THP PMD size when the probe found one (so Linux on any architecture
 * still gets whole huge pages), else to the base page; hugetlb regions to
 * the default hugetlb size when larger.  */
#include "hp_placement.h"

void hp_placement_generic(const struct hp_sysinfo *si, struct hp_placement *pl) {
  size_t base = hp_pl_base_page(si);
  uint64_t align = base;

  if (is_pow2(si->thp_pmd_size)) align = hp_pl_max(align, si->thp_pmd_size);
  hp_pl_clear(pl, base);
  pl->align = align;
  pl->huge_align = align;
  if (is_pow2(si->hugetlb_default)) pl->huge_align = hp_pl_max(align, si->hugetlb_default);
  hp_pl_desc(pl, "generic: heap aligned to ");
  hp_pl_desc_size(pl, align);
  hp_pl_desc(pl, ", hint none, no limit");
}

size_t hp_default_pmd_generic(const struct hp_sysinfo *si) {
  (void)si;
  return 0;
}
