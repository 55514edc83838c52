/* SPDX-License-Identifier: MIT */
/* region.h: address space for heaps and for chunks mapped on their own,
 * and the huge-page policy (region.c, the only file that calls the
 * kernel).  Nothing above it knows page sizes: callers ask for bytes and
 * get them committed in whole pages of the region's kind.
 * Includes: hp_base.h, hp_sys.h.  */
#ifndef HP_REGION_H
#define HP_REGION_H

#include <stdatomic.h>

#include "hp_base.h"
#include "hp_sys.h"

enum hp_region_kind { HP_REGION_BASE = 0, HP_REGION_THP = 1, HP_REGION_HUGETLB = 2 };

/* The policy region.c decides with.  Set at start-up (init.c, before any
   other thread runs) and by mallopt(HPMALLOC_M_HUGETLB) (under the main
   arena lock); other threads may read an old policy for a moment, which
   only changes the kind of the next region they reserve.  */
struct region_policy {
  int mode;              /* 0 base pages, 1 THP, 2 hugetlbfs */
  size_t page;           /* base page size */
  size_t thp_size;       /* PMD size when the kernel offers THP (madvise or always), else 0 */
  size_t hugetlb_size;   /* hugetlb page size in mode 2 */
  size_t huge_waste_pct; /* hpmalloc.huge_waste: how much rounding to huge pages may add */
  size_t prefault;       /* hpmalloc.prefault: huge pages a growing THP heap faults in ahead, in a helper thread */
};
HP_INTERNAL void region_set_policy(const struct region_policy *p);
HP_INTERNAL const struct region_policy *region_get_policy(void);

/* The huge page size of a policy's mode: hugetlb_size in mode 2, thp_size
   in mode 1, 0 in mode 0.  region_mode_page(): of the policy in force.  */
static inline size_t policy_huge_page(const struct region_policy *p) {
  return p->mode == 2 ? p->hugetlb_size : p->mode == 1 ? p->thp_size : 0;
}
HP_INTERNAL size_t region_mode_page(void);

/* Would rounding len bytes up to whole huge pages of the mode in force add
   at most huge_waste_pct percent?  True in mode 0.  */
HP_INTERNAL bool region_rounding_ok(size_t len);

/* The kind the next region should be: the mode's, or THP (else base
   pages) for a while after the hugetlb pool ran dry.  */
HP_INTERNAL enum hp_region_kind region_kind_for_mode(void);

/* The commit granularity of a region of this kind.  */
HP_INTERNAL size_t region_huge_page(enum hp_region_kind kind);

/* Where heap regions go (sysdeps' placement), set once at start-up.  */
extern struct hp_placement hp_placement HP_INTERNAL;

/* Fallbacks counted by region.c (statistics; atomics, relaxed).  */
struct region_fallbacks {
  _Atomic size_t hugetlb; /* a hugetlb reservation or commit failed: the pool ran dry */
  _Atomic size_t thp;     /* MADV_HUGEPAGE was refused: the region went on base pages */
};
extern struct region_fallbacks region_fallbacks HP_INTERNAL;

/* What the kernel calls of the commit path cost (statistics; atomics,
   relaxed): commits (mprotect, or populating hugetlb pages) and collapses
   of a region's first huge page (MADV_COLLAPSE), each with the time spent
   in the call.  */
struct region_costs {
  _Atomic size_t commits, commit_ns;
  _Atomic size_t collapses, collapse_failures, collapse_ns;
};
extern struct region_costs region_costs HP_INTERNAL;

/* Work that can wait for the arena's lock to be dropped, run by
   region_run_deferred(): a collapse region_commit asked for (one per
   thread; a second request before the first ran replaces it, and a collapse
   not run is left to khugepaged), and the start of the prefault helper
   (prefault.c).  */
enum { REGION_DEFERRED_COLLAPSE = 1, REGION_DEFERRED_PREFAULT = 2 };
struct region_deferred {
  void *addr;
  size_t len;
  unsigned pending; /* REGION_DEFERRED_* */
};
extern __thread struct region_deferred region_deferred HP_INTERNAL __attribute__((tls_model("initial-exec")));
HP_INTERNAL void region_run_deferred_slow(void);
/* Call with no arena lock held, after a path that may have grown a heap.  */
static inline void region_run_deferred(void) {
  if (HP_UNLIKELY(region_deferred.pending != 0)) region_run_deferred_slow();
}

/* Fault [addr, addr+len) in (MADV_POPULATE_WRITE): for the prefault
   helper.  True when the kernel did; errno kept.  */
HP_INTERNAL bool region_populate(void *addr, size_t len);

/* ------------------------------------------------------------------ asking the kernel
 * Where the kernel's files cannot be read (no /sys: an initramfs, a
 * chroot, a scratch container), init.c asks the system calls instead.
 * Each returns 0, or the errno the kernel answered; errno is kept.  */
/* madvise(MADV_HUGEPAGE) on a mapping of len bytes, unmapped again:
   EINVAL means a kernel without THP.  (It cannot tell enabled=never.)  */
HP_INTERNAL int region_probe_thp(size_t len);
/* A MAP_HUGETLB|MAP_NORESERVE mapping of one page of `size`, unmapped
   again: 0 means the kernel has hugetlb pages of that size (its pool may
   still be empty: the commit path falls back then).  */
HP_INTERNAL int region_probe_hugetlb(size_t size);

/* ------------------------------------------------------------------ heap regions */

/* A reserved span of address space, committed from its start upwards.  */
struct region {
  char *base;       /* start (aligned as requested) */
  size_t reserved;  /* bytes of address space held */
  size_t committed; /* bytes from base that are readable and writable */
  size_t page;      /* commit granularity: base page or huge page */
  enum hp_region_kind kind;
  bool guard;        /* an inaccessible page of ours sits right below base */
  bool lazy;         /* THP: commit base pages until the first huge page would be nearly full (region_reserve
                 sets it; a caller that knows the region will grow, clears it) */
  size_t prefaulted; /* bytes from base handed to the prefault helper */
};

/* Reserve len bytes aligned to align (want: the kind asked for; a dry
   hugetlb pool falls back to THP, then base pages).  0, or -1 with errno.  */
HP_INTERNAL int region_reserve(struct region *r, size_t len, size_t align, enum hp_region_kind want);
/* Grow the reservation in place by at least more bytes.  0 or -1.  */
HP_INTERNAL int region_extend(struct region *r, size_t more);
/* Commit [0, upto), rounded up to the region's page.  0, or -1 with errno
   ENOMEM.  Completing a huge page a lazy region committed in part asks for a collapse,
   deferred (region_run_deferred).  */
HP_INTERNAL int region_commit(struct region *r, size_t upto);
/* region_commit, and with hpmalloc.prefault a THP region that is not young
   commits that many huge pages more and queues them to be faulted in by
   the helper thread (prefault.h).  What top.c's growth calls.  */
HP_INTERNAL int region_commit_ahead(struct region *r, size_t upto);
/* Give back [downto, committed) in whole pages of the region.  */
HP_INTERNAL void region_decommit(struct region *r, size_t downto);
HP_INTERNAL void region_release(struct region *r);

/* [lo, hi) inside r's committed part holds nothing the allocator needs:
   give back the whole pages of r's page size inside it, leaving them mapped
   (they read back as zero).  hugetlb regions keep theirs (a dropped page
   could not come back once the pool ran dry).  True when pages went back.  */
HP_INTERNAL bool region_discard(struct region *r, uintptr_t lo, uintptr_t hi);

/* Switch a base-page region to THP: advise all of it, collapse what it
   already holds.  True when it became a THP region (then r->page is the
   huge page and the caller accounts r->committed bytes as THP).  */
HP_INTERNAL bool region_hugify(struct region *r);

/* ------------------------------------------------------------------ mapped chunks */

/* A mapping for one large chunk: *len in, the mapped length out, the kind
   it got in *kind.  NULL with errno ENOMEM.  */
HP_INTERNAL void *region_map_chunk(size_t *len, enum hp_region_kind *kind);
HP_INTERNAL void region_unmap_chunk(void *p, size_t len);
/* Resize such a mapping from oldlen to newlen, in place, else (may_move)
   wherever the kernel can.  The new address, or NULL (errno kept, the
   mapping unchanged).  */
HP_INTERNAL void *region_remap_chunk(void *base, size_t oldlen, size_t newlen, bool may_move);

/* ------------------------------------------------------------------ the kernel, for tests
 * region.c reaches the kernel through a table of these primitives
 * (hp_sys.h states their contracts).  In the library the table is a
 * const object private to region.c, so the calls are direct and nothing
 * can redirect them; the test build (HP_TEST_BUILD) makes it a writable
 * global that unit tests replace to fake the kernel and count calls.  */
struct hp_kernel_ops {
  void *(*map)(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge_size);
  int (*unmap)(void *addr, size_t len);
  int (*protect)(void *addr, size_t len, enum hp_prot prot);
  int (*advise)(void *addr, size_t len, enum hp_advice adv);
  void *(*remap)(void *old, size_t oldlen, size_t newlen, int may_move);
  int (*resident)(void *addr, size_t len);
};
#ifdef HP_TEST_BUILD
extern struct hp_kernel_ops hp_kernel HP_INTERNAL;
#endif

#endif
