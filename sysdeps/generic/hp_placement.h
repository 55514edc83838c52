/* SPDX-License-Identifier: MIT */
/* hp_placement.h: the pure placement policy of every architecture, for
 * sysdeps only.  MIT licence.
 *
 * Each sysdeps/<arch>/placement.c defines one hp_placement_<arch>() and its
 * arch.c makes it the hp_arch_placement() of the build.  The policies use no
 * system call and no global state, so a unit test links all of them on any
 * host and checks each against fixture data.  The core never includes this
 * header: it calls hp_arch_placement().  */
#ifndef HP_PLACEMENT_H
#define HP_PLACEMENT_H

#include "hp_sys.h"

#include <string.h>

/* The policies.  Each fills every field of *pl from *si and nothing else.  */
void hp_placement_x86_64(const struct hp_sysinfo *si, struct hp_placement *pl);
void hp_placement_powerpc64(const struct hp_sysinfo *si, struct hp_placement *pl);
void hp_placement_aarch64(const struct hp_sysinfo *si, struct hp_placement *pl);
void hp_placement_generic(const struct hp_sysinfo *si, struct hp_placement *pl);

/* The PMD size each architecture's THP uses for the given base page and MMU,
   for hp_arch_default_pmd(); 0 = no THP.  */
size_t hp_default_pmd_x86_64(const struct hp_sysinfo *si);
size_t hp_default_pmd_powerpc64(const struct hp_sysinfo *si);
size_t hp_default_pmd_aarch64(const struct hp_sysinfo *si);
size_t hp_default_pmd_generic(const struct hp_sysinfo *si);

/* ---------------------------------------------------------------- helpers */

/* The base page size, assuming 4 KiB when the probe did not find one.  */
static inline size_t hp_pl_base_page(const struct hp_sysinfo *si) { return si->base_page ? si->base_page : 4096; }

static inline uint64_t hp_pl_max(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Clear *pl: no hint, base-page alignment, no limit, empty description
   (all of it zeroed, so two placements compare equal bytewise).  */
static inline void hp_pl_clear(struct hp_placement *pl, size_t base_page) {
  memset(pl->desc, 0, sizeof pl->desc);
  pl->hint = 0;
  pl->align = base_page;
  pl->huge_hint = 0;
  pl->huge_align = base_page;
  pl->limit = 0;
}

/* Append s to pl->desc, truncating at its end; always NUL-terminated.  */
static inline void hp_pl_desc(struct hp_placement *pl, const char *s) {
  size_t n = 0;
  while (pl->desc[n] != '\0') n++;
  while (*s != '\0' && n + 1 < sizeof pl->desc) pl->desc[n++] = *s++;
  pl->desc[n] = '\0';
}

/* Append a byte count as "<n> KiB|MiB|GiB|TiB", choosing the largest unit
   that divides it exactly ("0" for 0).  */
static inline void hp_pl_desc_size(struct hp_placement *pl, uint64_t bytes) {
  static const char *const units[] = { " B", " KiB", " MiB", " GiB", " TiB" };
  unsigned u = 0;
  char digits[24];
  int i = (int)sizeof digits - 1;

  while (u < 4 && bytes != 0 && (bytes & 1023) == 0) {
    bytes >>= 10;
    u++;
  }
  digits[i] = '\0';
  do {
    digits[--i] = (char)('0' + bytes % 10);
    bytes /= 10;
  } while (bytes != 0 && i > 0);
  hp_pl_desc(pl, &digits[i]);
  if (digits[i] != '0' || digits[i + 1] != '\0') hp_pl_desc(pl, units[u]);
}

#endif
