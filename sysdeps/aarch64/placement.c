/* SPDX-License-Identifier: MIT */
/* aarch64 placement policy.  MIT licence.
 *
 * The translation granule is the base page, and it sets every level:
 *   4 KiB granule:  PMD 2 MiB, PUD 1 GiB (hugetlb also 64 KiB and 32 MiB
 *                   with the contiguous bit); 48-bit VA, 256 TiB.
 *                   Heap aligned to 1 GiB, so 2 MiB and 1 GiB pages fit.
 *   16 KiB granule: PMD 32 MiB (hugetlb also 2 MiB, 1 GiB contiguous);
 *                   47-bit VA, 128 TiB.  Heap aligned to 32 MiB, the PMD:
 *                   the 1 GiB contiguous size is rare and a 47-bit space
 *                   is small to spend in 1 GiB steps.
 *   64 KiB granule: PMD 512 MiB (hugetlb also 2 MiB, 16 GiB contiguous);
 *                   48-bit VA, 256 TiB.  Heap aligned to 512 MiB, the PMD.
 * No hint (kernel's choice, ASLR kept); the kernel maps above 48 bits only
 * for a hint there.  The limits are upper bounds: a kernel built with
 * fewer VA bits (39 is common with 4 KiB) just never maps that high.  */
#include "hp_placement.h"

struct granule {
  size_t base;    /* granule (base page) */
  uint64_t pmd;   /* PMD-level page */
  uint64_t align; /* heap and hugetlb alignment chosen */
  uint64_t limit; /* user space end with the usual VA bits */
};

static const struct granule granules[] = {
  { 4096, 2 * HP_MIB, HP_GIB, 256 * HP_TIB },
  { 16384, 32 * HP_MIB, 32 * HP_MIB, 128 * HP_TIB },
  { 65536, 512 * HP_MIB, 512 * HP_MIB, 256 * HP_TIB },
};

static inline const struct granule *aarch64_granule(size_t base) {
  for (size_t i = 0; i < sizeof granules / sizeof granules[0]; i++)
    if (granules[i].base == base) return &granules[i];
  return NULL;
}

void hp_placement_aarch64(const struct hp_sysinfo *si, struct hp_placement *pl) {
  size_t base = hp_pl_base_page(si);
  const struct granule *g = aarch64_granule(base);

  hp_pl_clear(pl, base);
  pl->align = g ? g->align : hp_pl_max(base, si->thp_pmd_size);
  pl->huge_align = pl->align;
  pl->limit = (uintptr_t)(g ? g->limit : 256 * HP_TIB);
  hp_pl_desc(pl, "aarch64 ");
  hp_pl_desc_size(pl, base);
  hp_pl_desc(pl, " granule: heap aligned to ");
  hp_pl_desc_size(pl, pl->align);
  hp_pl_desc(pl, ", hint none, below ");
  hp_pl_desc_size(pl, pl->limit);
}

size_t hp_default_pmd_aarch64(const struct hp_sysinfo *si) {
  const struct granule *g = aarch64_granule(hp_pl_base_page(si));
  return g ? g->pmd : 0;
}
