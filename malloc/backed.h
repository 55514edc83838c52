/* SPDX-License-Identifier: MIT */
/* backed.h: how much of the allocator's memory the kernel backs with huge
 * pages now, measured for the statistics (backed.c).
 * Includes: hp_base.h, hp_sys.h.  */
#ifndef HP_BACKED_H
#define HP_BACKED_H

#include "hp_base.h"
#include "hp_sys.h"

struct arena;

/* Bytes on huge pages now, by the kind of huge page.  */
struct hp_backed {
  size_t thp;     /* mapped by transparent huge pages (whole, at the PMD level), advised or not */
  size_t hugetlb; /* on hugetlbfs pages that are present */
};

/* The less precise of two ways of measuring: unknown, then smaps, then
   PAGEMAP_SCAN.  */
static inline enum hp_census census_coarser(enum hp_census a, enum hp_census b) {
  if (a == HP_CENSUS_UNKNOWN || b == HP_CENSUS_UNKNOWN) return HP_CENSUS_UNKNOWN;
  return a == HP_CENSUS_SMAPS || b == HP_CENSUS_SMAPS ? HP_CENSUS_SMAPS : HP_CENSUS_PAGEMAP_SCAN;
}

/* Measure now what the kernel backs with huge pages: the committed part
   of the heaps of arena `only` (of every arena when NULL) into *heaps
   (skipped when heaps is NULL), and the chunks mapped on their own into
   *mm (skipped when mm is NULL); each is zeroed first.  Returns how it
   measured; HP_CENSUS_UNKNOWN leaves the figures 0.  Takes each arena's
   lock in turn only to copy out its heaps' ranges, and reads the kernel
   with no lock held: the caller must hold none.  Never allocates.  */
HP_INTERNAL enum hp_census backed_measure(struct arena *only, struct hp_backed *heaps, struct hp_backed *mm);

#ifdef HP_TEST_BUILD
/* The census backed_measure asks: hp_os_huge_backed, which unit tests
   replace to fake the kernel's answer and count the calls.  */
extern enum hp_census (*hp_census_fn)(struct hp_mem_range *r, size_t n) HP_INTERNAL;
#endif

#endif
