/* SPDX-License-Identifier: MIT */
/* backed.c: how much of the allocator's memory the kernel backs with huge
 * pages now.
 *
 * What the allocator advised (MADV_HUGEPAGE) or mapped (MAP_HUGETLB) is
 * counted as it happens; what the kernel actually backs with huge pages
 * only its page tables know, and it changes behind the allocator's back
 * (a fault that found no free huge page, khugepaged collapsing later, a
 * split).  So the statistics ask the kernel (hp_sys.h's census) about
 * every range the allocator holds: the committed part of each heap, found
 * through the arenas, and each chunk mapped on its own, found through
 * mmapped.c's registry.
 *
 * Only the statistics calls pay.  An arena's lock is held just long enough
 * to copy its heaps' ranges into a batch on the stack; the kernel is read
 * with no lock held, a batch at a time, so a program that allocates
 * meanwhile is never held up by the census.  The figures are therefore a
 * snapshot of moving memory, like the rest of the statistics.  */
#include "backed.h"

#include <string.h>

#include "arena.h"
#include "mmapped.h"
#include "track.h"

#ifdef HP_TEST_BUILD
enum hp_census (*hp_census_fn)(struct hp_mem_range *r, size_t n) = hp_os_huge_backed;
#else
static enum hp_census (*const hp_census_fn)(struct hp_mem_range *r, size_t n) = hp_os_huge_backed;
#endif

enum { CENSUS_BATCH = 64 };

/* Ranges waiting to be measured, and the figure each one adds to.  */
struct census {
  struct hp_mem_range r[CENSUS_BATCH];
  size_t *to[CENSUS_BATCH];
  size_t n;
  bool asked;         /* a batch went to the kernel */
  enum hp_census how; /* the least precise way a batch was measured */
};

static void census_flush(struct census *c) {
  enum hp_census how = hp_census_fn(c->r, c->n);
  c->how = c->asked ? census_coarser(c->how, how) : how;
  c->asked = true;
  for (size_t i = 0; i < c->n; i++) *c->to[i] += c->r[i].huge;
  c->n = 0;
}

/* Under arena ar's lock, copy the ranges of its heaps from the *skip-th
   on (newest first) into the census' free slots; *skip becomes the number
   of heaps looked at.  Returns whether heaps are left for another batch.  */
static bool copy_heaps(struct arena *ar, size_t *skip, struct census *c, struct hp_backed *to) {
  size_t i = 0, first = c->n;
  const struct heap *h;
  bool lk = arena_lock(ar);
  vg_enter();
  for (h = ar->heap; h && c->n < CENSUS_BATCH; h = h->prev, i++) {
    if (i < *skip || h->reg.committed == 0) continue;
    uintptr_t base = (uintptr_t)h->reg.base;
    c->r[c->n] = (struct hp_mem_range){ .lo = base, .hi = base + h->reg.committed };
    c->to[c->n++] = h->reg.kind == HP_REGION_HUGETLB ? &to->hugetlb : &to->thp;
  }
  bool more = h != NULL;
  vg_leave();
  arena_unlock(ar, lk);
  vg_define(&c->r[first], (c->n - first) * sizeof c->r[0]);
  *skip = i;
  return more;
}

static void census_heaps(struct census *c, struct arena *only, struct hp_backed *to) {
  for (struct arena *ar = only ? only : &main_arena; ar; ar = only ? NULL : arena_next(ar)) {
    size_t skip = 0;
    while (copy_heaps(ar, &skip, c, to)) census_flush(c);
  }
}

static void census_mmapped(struct census *c, struct hp_backed *to) {
  bool hugetlb[CENSUS_BATCH];
  size_t cursor = 0;
  for (;;) {
    if (c->n == CENSUS_BATCH) census_flush(c);
    size_t got = mmapped_ranges(&cursor, &c->r[c->n], hugetlb, CENSUS_BATCH - c->n);
    if (got == 0) break;
    for (size_t i = 0; i < got; i++) c->to[c->n + i] = hugetlb[i] ? &to->hugetlb : &to->thp;
    c->n += got;
  }
}

enum hp_census backed_measure(struct arena *only, struct hp_backed *heaps, struct hp_backed *mm) {
  struct census c;
  c.n = 0;
  c.asked = false;
  c.how = HP_CENSUS_UNKNOWN;
  if (heaps) {
    memset(heaps, 0, sizeof *heaps);
    census_heaps(&c, only, heaps);
  }
  if (mm) {
    memset(mm, 0, sizeof *mm);
    census_mmapped(&c, mm);
  }
  if (c.n || !c.asked) census_flush(&c); /* with nothing to measure: how it would be measured */
  if (c.how == HP_CENSUS_UNKNOWN) {
    if (heaps) memset(heaps, 0, sizeof *heaps);
    if (mm) memset(mm, 0, sizeof *mm);
  }
  return c.how;
}
