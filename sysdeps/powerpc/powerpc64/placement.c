/* SPDX-License-Identifier: MIT */
/* powerpc64 placement policy.  MIT licence.
 *
 * Hash MMU (POWER5+ to POWER9 in hash mode).  Effective addresses are cut
 * into segments: 256 MiB ones below 1 TiB, and 1 TiB ones above it when the
 * CPU supports them (seg_1t).  A segment costs one SLB entry, so a heap in a
 * 1 TiB segment takes one entry where 256 MiB segments take four per GiB.
 * The kernel also cuts the address space into slices (16 of 256 MiB below
 * 4 GiB, then 1 TiB each), and a slice holds pages of one size only: a
 * hugetlb mapping turns its whole slice to that page size, and base-page
 * mappings are refused there.  So:
 *   - heap regions (base pages, and THP, which lives in base-page slices)
 *     start at 1 TiB, in the first high slice, aligned to 256 MiB (a
 *     multiple of the 16 MiB THP PMD and of a 256 MiB segment);
 *   - hugetlb regions start at 2 TiB, each aligned to a 1 TiB slice of its
 *     own, so a 16 MiB or 16 GiB pool never takes a slice the heap needs.
 * Without 1 TiB segments the same addresses are still right: they keep the
 * heap out of the low slices and away from the mmap area.
 *
 * Radix MMU (POWER9/10 in radix mode) has no segments nor slices; the PMD
 * maps 2 MiB and the PUD 1 GiB, with 4 KiB or 64 KiB base pages: placed as
 * on x86_64, heap aligned to 1 GiB, no hint.  An MMU the probe could not
 * name is treated as radix (the probe reports hash whenever it finds 16 MiB
 * huge pages or a POWER CPU without a radix PMD).
 *
 * Both MMUs limit user space by the kernel's page size: 128 TiB by default
 * with 64 KiB pages (4 PiB only for hints above 128 TiB), 64 TiB with 4 KiB
 * pages.  */
#include "hp_placement.h"

static inline uintptr_t ppc64_limit(size_t base_page) { return (uintptr_t)((base_page >= 65536 ? 128 : 64) * HP_TIB); }

static inline void ppc64_hash(const struct hp_sysinfo *si, struct hp_placement *pl) {
  pl->hint = (uintptr_t)HP_TIB;
  pl->align = 256 * HP_MIB;
  pl->huge_hint = (uintptr_t)(2 * HP_TIB);
  pl->huge_align = HP_TIB;
  hp_pl_desc(pl, si->seg_1t ? "powerpc64 hash: heap at 1 TiB (1T seg), align 256 MiB"
                            : "powerpc64 hash: heap at 1 TiB (256M seg), align 256 MiB");
  hp_pl_desc(pl, "; hugetlb slice 2 TiB");
}

static inline void ppc64_radix(const struct hp_sysinfo *si, struct hp_placement *pl) {
  pl->align = HP_GIB;
  pl->huge_align = HP_GIB;
  hp_pl_desc(pl, si->mmu == HP_MMU_RADIX ? "powerpc64 radix: heap aligned to 1 GiB, hint none"
                                         : "powerpc64 (MMU not hash): heap aligned to 1 GiB, hint none");
}

void hp_placement_powerpc64(const struct hp_sysinfo *si, struct hp_placement *pl) {
  size_t base = hp_pl_base_page(si);

  hp_pl_clear(pl, base);
  pl->limit = ppc64_limit(base);
  if (si->mmu == HP_MMU_HASH)
    ppc64_hash(si, pl);
  else
    ppc64_radix(si, pl);
  hp_pl_desc(pl, ", below ");
  hp_pl_desc_size(pl, pl->limit);
}

/* Hash: THP needs 64 KiB base pages and then maps 16 MiB (with 4 KiB base
   pages the PMD would map 2 MiB, which hash cannot back, so no THP).
   Radix: 2 MiB with either base page.  */
size_t hp_default_pmd_powerpc64(const struct hp_sysinfo *si) {
  if (si->mmu == HP_MMU_HASH) return hp_pl_base_page(si) >= 65536 ? 16 * HP_MIB : 0;
  return 2 * HP_MIB;
}
