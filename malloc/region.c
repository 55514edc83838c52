/* SPDX-License-Identifier: MIT */
/* region.c: reserving, committing and releasing address space, and the
 * huge-page policy.
 *
 * A region is reserved once (PROT_NONE, aligned as the caller and the
 * architecture's placement ask), advised once when it is
 * meant for transparent huge pages, and then committed from its start
 * upwards in steps of its page size: the base page, or the huge page so
 * that huge pages stay whole (a lazy THP region below two huge pages
 * excepted: it commits base pages while rounding up would waste much of
 * what it holds, see commit_unit()).
 * Nothing above this file knows page sizes.
 *
 * Overcommit: an inaccessible private mapping costs no commit charge, and
 * making part of it writable (committing) is charged then, as brk is, so
 * the kernel's overcommit policy sees exactly the committed bytes and
 * refuses what it would refuse glibc (malloc of more than RAM + swap is
 * NULL under the default heuristic).  MAP_NORESERVE would hide the whole
 * heap from that accounting; only hugetlb regions use it (the pool is
 * their limit).
 *
 * Modes (policy.mode, set by init.c through region_set_policy):
 *   0  base pages;
 *   1  THP: aligned to the PMD size, MADV_HUGEPAGE before first touch;
 *   2  hugetlbfs: reserved MAP_HUGETLB|MAP_NORESERVE (one mapping that grows
 *      in place), each huge page populated as it is committed so that a dry
 *      pool shows as an error here rather than SIGBUS later; on failure,
 *      fall back to THP, then to base pages, counting each fallback.
 *
 * The kernel is reached only through hp_kernel (region.h): a const table
 * of the hp_sys.h primitives in the library, one tests replace in the test
 * build.  No other file of malloc/ calls the kernel.  */
#include "region.h"

#include <errno.h>

#include "diag.h"
#include "prefault.h"

#define HP_KERNEL_OS                                                                                                \
  {                                                                                                                 \
    .map = hp_os_map, .unmap = hp_os_unmap, .protect = hp_os_protect, .advise = hp_os_advise, .remap = hp_os_remap, \
    .resident = hp_os_resident                                                                                      \
  }
#ifdef HP_TEST_BUILD
struct hp_kernel_ops hp_kernel = HP_KERNEL_OS;
#else
static const struct hp_kernel_ops hp_kernel = HP_KERNEL_OS;
#endif

struct hp_placement hp_placement;
struct region_fallbacks region_fallbacks;
struct region_costs region_costs;
__thread struct region_deferred region_deferred __attribute__((tls_model("initial-exec")));

static void count_cost(_Atomic size_t *n, _Atomic size_t *ns, uint64_t t0) {
  atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(ns, (size_t)(hp_os_now_ns() - t0), memory_order_relaxed);
}

/* Set before any other thread runs, changed only by mallopt (region.h).  */
static struct region_policy policy;

void region_set_policy(const struct region_policy *p) { policy = *p; }
const struct region_policy *region_get_policy(void) { return &policy; }

size_t region_mode_page(void) { return policy_huge_page(&policy); }

int region_probe_thp(size_t len) {
  int saved = errno, rc = 0;
  void *p = hp_kernel.map(NULL, len, HP_PROT_NONE, 0, 0);
  if (!p)
    rc = errno;
  else {
    if (hp_kernel.advise(p, len, HP_ADV_HUGEPAGE) != 0) rc = errno;
    hp_kernel.unmap(p, len);
  }
  errno = saved;
  return rc;
}

int region_probe_hugetlb(size_t size) {
  int saved = errno, rc = 0;
  void *p = hp_kernel.map(NULL, size, HP_PROT_RW, HP_MAP_HUGETLB | HP_MAP_NORESERVE, size);
  if (!p)
    rc = errno;
  else
    hp_kernel.unmap(p, size);
  errno = saved;
  return rc;
}

/* After a hugetlb failure, skip hugetlb for this many reservations before
   trying the pool again.  Guarded by nothing: a racy hint only.  */
static _Atomic unsigned hugetlb_backoff;
enum { HUGETLB_BACKOFF = 8 };

enum hp_region_kind region_kind_for_mode(void) {
  switch (policy.mode) {
  case 2:
    if (atomic_load_explicit(&hugetlb_backoff, memory_order_relaxed) == 0) return HP_REGION_HUGETLB;
    atomic_fetch_sub_explicit(&hugetlb_backoff, 1, memory_order_relaxed);
    return policy.thp_size ? HP_REGION_THP : HP_REGION_BASE;
  case 1: return HP_REGION_THP;
  default: return HP_REGION_BASE;
  }
}

size_t region_huge_page(enum hp_region_kind kind) {
  switch (kind) {
  case HP_REGION_HUGETLB: return policy.hugetlb_size;
  case HP_REGION_THP: return policy.thp_size ? policy.thp_size : policy.page;
  default: return policy.page;
  }
}

static void note_hugetlb_failure(void) {
  atomic_fetch_add_explicit(&region_fallbacks.hugetlb, 1, memory_order_relaxed);
  atomic_store_explicit(&hugetlb_backoff, HUGETLB_BACKOFF, memory_order_relaxed);
}

static void *map_aligned_anywhere(size_t len, size_t align, uintptr_t hint, enum hp_prot prot, unsigned flags,
                                  size_t huge) {
  void *p = hp_kernel.map((void *)hint, len, prot, flags, huge);
  if (p && ((uintptr_t)p & (align - 1)) == 0) return p;
  if (p) hp_kernel.unmap(p, len);
  if (len + align < len) {
    errno = ENOMEM;
    return NULL;
  }
  size_t gran = (flags & HP_MAP_HUGETLB) ? huge : policy.page;
  size_t span = len + align - gran;
  char *raw = hp_kernel.map((void *)hint, span, prot, flags, huge);
  if (!raw) return NULL;
  char *aligned = (char *)align_up((uintptr_t)raw, align);
  size_t head = (size_t)(aligned - raw), tail = span - head - len;
  if (head) hp_kernel.unmap(raw, head);
  if (tail) hp_kernel.unmap(aligned + len, tail);
  return aligned;
}


/* The lowest address of the heap regions mapped so far.  With no placement
   hint the kernel hands out addresses downwards, leaving a gap of up to
   `align` between regions reserved by over-reserving and trimming; the
   next region is first tried right below the last one, so that heaps stay
   together (fewer page-table pages to walk on a TLB miss).  A hint only.
   Chunks mapped on their own go where the kernel puts any mapping: some
   programs rely on that order (glibc's tst-free-errno maps over the pages
   around a large block).  */
static _Atomic uintptr_t lowest_region;

static void note_region(void *p) {
  uintptr_t v = (uintptr_t)p, cur = atomic_load_explicit(&lowest_region, memory_order_relaxed);
  while ((cur == 0 || v < cur) &&
         !atomic_compare_exchange_weak_explicit(&lowest_region, &cur, v, memory_order_relaxed, memory_order_relaxed)) {}
}

static void *map_below_last(size_t len, size_t align, enum hp_prot prot, unsigned flags, size_t huge) {
  uintptr_t low = atomic_load_explicit(&lowest_region, memory_order_relaxed);
  if (low < len + align) return NULL;
  uintptr_t cand = align_down(low - len, align);
  int saved = errno;
  void *p = hp_kernel.map((void *)cand, len, prot, flags | HP_MAP_FIXED_NOREPLACE, huge);
  errno = saved;
  if (p == (void *)cand) return p;
  if (p) hp_kernel.unmap(p, len);
  return NULL;
}

/* Map len bytes aligned to align (a power of two >= the page), at or near
   hint.  Over-reserves by align and trims both ends when the kernel's
   address is not aligned.  */
static void *map_aligned(size_t len, size_t align, uintptr_t hint, enum hp_prot prot, unsigned flags, size_t huge) {
  void *p = hint ? NULL : map_below_last(len, align, prot, flags, huge);
  if (!p) p = map_aligned_anywhere(len, align, hint, prot, flags, huge);
  return p;
}

/* A heap starts with its header and first chunks, and the kernel hands
   out addresses downwards: the next mapping anyone makes (a large block of
   ours, the program's own) tends to end right where a heap begins, so a
   linear overflow off its end, or a MAP_FIXED over "the page after my
   block" (glibc's tst-free-errno does exactly that), would land on heap
   metadata.  One inaccessible page below each heap keeps its neighbour
   out.  Best effort: when the page is taken, the heap goes without.  */
static bool add_guard(char *base) {
  if ((uintptr_t)base < policy.page) return false;
  char *g = base - policy.page;
  int saved = errno;
  void *q = hp_kernel.map(g, policy.page, HP_PROT_NONE, HP_MAP_FIXED_NOREPLACE, 0);
  errno = saved;
  if (q == g) return true;
  if (q) hp_kernel.unmap(q, policy.page);
  return false;
}

static uintptr_t next_hint(enum hp_region_kind kind) {
  return kind == HP_REGION_HUGETLB ? hp_placement.huge_hint : hp_placement.hint;
}

static int reserve_hugetlb(struct region *r, size_t len, size_t align) {
  size_t hsz = policy.hugetlb_size;
  len = align_up(len, hsz);
  if (align < hsz) align = hsz;
  /* the placement's alignment is for regions that can hold a page that
     large; smaller ones stay close together (fewer paging-structure
     entries to walk on a TLB miss) */
  if (len >= hp_placement.huge_align && align < hp_placement.huge_align) align = hp_placement.huge_align;
  /* readable and writable from the start: hugetlb mappings never merge
     again once mprotect splits them, so commit by populating instead */
  void *p = map_aligned(len, align, next_hint(HP_REGION_HUGETLB), HP_PROT_RW, HP_MAP_HUGETLB | HP_MAP_NORESERVE, hsz);
  if (!p) return -1;
  *r = (struct region){ .base = p, .reserved = len, .page = hsz, .kind = HP_REGION_HUGETLB };
  return 0;
}

static int reserve_normal(struct region *r, size_t len, size_t align, enum hp_region_kind kind) {
  size_t page = region_huge_page(kind);
  len = align_up(len, page);
  if (align < page) align = page;
  if (kind != HP_REGION_BASE && len >= hp_placement.align && align < hp_placement.align) align = hp_placement.align;
  void *p = map_aligned(len, align, next_hint(kind), HP_PROT_NONE, 0, 0);
  if (!p) return -1;
  *r = (struct region){ .base = p, .reserved = len, .page = page, .kind = kind, .lazy = true };
  if (kind == HP_REGION_THP && hp_kernel.advise(p, len, HP_ADV_HUGEPAGE) != 0) {
    diag_refused(DIAG_REFUSED_HUGEPAGE, errno);
    atomic_fetch_add_explicit(&region_fallbacks.thp, 1, memory_order_relaxed);
    r->kind = HP_REGION_BASE;
    r->page = policy.page;
  }
  return 0;
}

static void placed(struct region *r) {
  r->guard = add_guard(r->base);
  note_region(r->guard ? r->base - policy.page : r->base);
}

int region_reserve(struct region *r, size_t len, size_t align, enum hp_region_kind want) {
  int saved = errno;
  if (want == HP_REGION_HUGETLB) {
    if (reserve_hugetlb(r, len, align) == 0) {
      placed(r);
      errno = saved;
      return 0;
    }
    note_hugetlb_failure();
    want = policy.thp_size ? HP_REGION_THP : HP_REGION_BASE;
  }
  if (reserve_normal(r, len, align, want) == 0) {
    placed(r);
    errno = saved;
    return 0;
  }
  return -1;
}

/* Grow the reservation in place by at least `more` bytes.  0 on success.  */
int region_extend(struct region *r, size_t more) {
  more = align_up(more, r->page);
  char *end = r->base + r->reserved;
  unsigned flags = HP_MAP_FIXED_NOREPLACE;
  if (r->kind == HP_REGION_HUGETLB) flags |= HP_MAP_HUGETLB | HP_MAP_NORESERVE;
  enum hp_prot prot = r->kind == HP_REGION_HUGETLB ? HP_PROT_RW : HP_PROT_NONE;
  int saved = errno;
  char *p = hp_kernel.map(end, more, prot, flags, r->kind == HP_REGION_HUGETLB ? r->page : 0);
  if (p != end) {
    if (p) hp_kernel.unmap(p, more);
    errno = saved;
    return -1;
  }
  if (r->kind == HP_REGION_THP && hp_kernel.advise(p, more, HP_ADV_HUGEPAGE) != 0) {
    diag_refused(DIAG_REFUSED_HUGEPAGE, errno); /* the extension goes on base pages */
    errno = saved;
  }
  r->reserved += more;
  return 0;
}

/* Back hugetlb pages [from, to) now.  One call for the whole range when
   the pool can cover it; otherwise page by page, so that `committed` stays
   exact if the pool runs dry midway.  A populate that claims success but
   left the pages absent (emulators such as qemu-user) is a failure:
   touching them could raise SIGBUS.  */
static bool populated(struct region *r, size_t off, size_t len) {
  if (hp_kernel.advise(r->base + off, len, HP_ADV_POPULATE_WRITE) != 0) {
    diag_refused(DIAG_REFUSED_POPULATE, errno); /* a dry pool (ENOMEM, EFAULT) is no refusal */
    return false;
  }
  return hp_kernel.resident(r->base + off, len) != 0;
}

static int commit_hugetlb(struct region *r, size_t from, size_t to) {
  if (to - from > r->page && populated(r, from, to - from)) return 0;
  for (size_t off = from; off < to; off += r->page) {
    if (!populated(r, off, r->page)) {
      r->committed = off;
      note_hugetlb_failure();
      return -1;
    }
  }
  return 0;
}

/* Is rounding len up to whole pages of size hp cheap enough?  */
static bool waste_ok(size_t len, size_t hp) {
  size_t waste = align_up(len, hp) - len;
  return waste * 100 <= policy.huge_waste_pct * len;
}

bool region_rounding_ok(size_t len) {
  size_t hp = region_mode_page();
  return !hp || waste_ok(len, hp);
}

/* An arena's first heap on THP (top.c sets lazy).  */
static bool lazy_thp(const struct region *r) { return r->lazy && r->kind == HP_REGION_THP; }
/* A lazy THP region is young until it has committed its first huge page
   (trimming gives back base pages only then).  */
static bool young(const struct region *r) { return lazy_thp(r) && r->committed < r->page; }

/* The unit a commit up to `upto` is rounded to.  Below two huge pages, a
   lazy THP region commits base pages while rounding the commit up to whole
   huge pages would waste more than hpmalloc.huge_waste percent of it: a
   small program, or a thread arena holding a few kilobytes, does not take
   (and zero) 2 MiB for each heap, and one holding 2.7 MB does not take 4.
   The kernel gives base pages to a writable range that does not cover the
   whole aligned huge page, so nothing else is needed until the page fills
   (region_commit then collapses it).  Further up a heap takes whole huge
   pages: the same rule to 16 MB (where rounding stops wasting 12%) cost a
   heap growing past it 6 ms in base-page faults and collapses, against 1 ms
   for the first two pages.  Only an arena's first heap is lazy (top.c): a
   heap that replaces a full one will grow, and faulting its first 2 MiB
   page by page, then collapsing them, would cost more than the page
   itself.  */
static size_t commit_unit(const struct region *r, size_t upto) {
  if (lazy_thp(r) && upto < 2 * r->page && !waste_ok(align_up(upto, policy.page), r->page)) return policy.page;
  return r->page;
}

/* Commit [0, upto) (rounded up to the region's page, see commit_unit() for
   the exception).  0, or -1 with errno ENOMEM when the reservation is too small
   or the kernel refuses.  */
int region_commit(struct region *r, size_t upto) {
  upto = align_up(upto, commit_unit(r, upto));
  if (upto <= r->committed) return 0;
  if (upto > r->reserved) {
    errno = ENOMEM;
    return -1;
  }
  size_t from = r->committed;
  uint64_t t0 = hp_os_now_ns();
  int rc = r->kind == HP_REGION_HUGETLB ? commit_hugetlb(r, from, upto)
                                        : hp_kernel.protect(r->base + from, upto - from, HP_PROT_RW);
  count_cost(&region_costs.commits, &region_costs.commit_ns, t0);
  if (rc != 0) {
    errno = ENOMEM;
    return -1;
  }
  r->committed = upto;
  /* The huge page that was committed in part is now whole: what it holds
     sits in base pages, so it should be collapsed into one huge page
     (Linux 6.1+; best effort: khugepaged does it later where this fails).
     The caller holds the arena's lock, and a collapse copies up to 2 MiB:
     it runs once the lock is dropped.  */
  size_t part = align_down(from, r->page);
  if (r->kind == HP_REGION_THP && from != part && upto >= part + r->page) {
    region_deferred.addr = r->base + part;
    region_deferred.len = r->page;
    region_deferred.pending |= REGION_DEFERRED_COLLAPSE;
  }
  return 0;
}

/* With hpmalloc.prefault, a growing THP heap (not young) commits that many
   huge pages beyond what was asked and hands them to the helper thread to
   fault in: where the next growth will land, zeroed beside the program.  */
static size_t commit_ahead(const struct region *r, size_t upto) {
  if (r->kind != HP_REGION_THP || young(r)) return upto;
  size_t end = upto + policy.prefault * r->page;
  return end < upto || end > r->reserved ? r->reserved : end;
}

int region_commit_ahead(struct region *r, size_t upto) {
  if (!policy.prefault) return region_commit(r, upto); /* the default: nothing ahead, nothing queued */
  if (region_commit(r, commit_ahead(r, upto)) != 0) return region_commit(r, upto);
  size_t lo = align_up(upto, r->page);
  if (lo < r->prefaulted) lo = r->prefaulted;
  if (r->committed > lo) {
    prefault_request(r->base + lo, r->committed - lo);
    r->prefaulted = r->committed;
  }
  return 0;
}

bool region_populate(void *addr, size_t len) {
  int saved = errno;
  bool ok = hp_kernel.advise(addr, len, HP_ADV_POPULATE_WRITE) == 0;
  if (!ok) diag_refused(DIAG_REFUSED_POPULATE, errno);
  errno = saved;
  return ok;
}

void region_run_deferred_slow(void) {
  struct region_deferred d = region_deferred;
  region_deferred.pending = 0;
  if (d.pending & REGION_DEFERRED_PREFAULT) prefault_start();
  if (!(d.pending & REGION_DEFERRED_COLLAPSE)) return;
  int saved = errno;
  uint64_t t0 = hp_os_now_ns();
  if (hp_kernel.advise(d.addr, d.len, HP_ADV_COLLAPSE) != 0) {
    diag_refused(DIAG_REFUSED_COLLAPSE, errno);
    atomic_fetch_add_explicit(&region_costs.collapse_failures, 1, memory_order_relaxed);
  }
  count_cost(&region_costs.collapses, &region_costs.collapse_ns, t0);
  errno = saved;
}

/* MADV_DONTNEED refused on [p, p+len) of r (a seccomp filter, locked
   pages): give the pages back by mapping fresh ones over them, with prot
   (and advising a THP region's again).  False when that fails too: the
   bytes are still there, and nothing may count them as given back.  */
static bool replace_pages(struct region *r, char *p, size_t len, enum hp_prot prot) {
  if (hp_kernel.map(p, len, prot, HP_MAP_FIXED, 0) != p) return false;
  if (r->kind == HP_REGION_THP && hp_kernel.advise(p, len, HP_ADV_HUGEPAGE) != 0)
    diag_refused(DIAG_REFUSED_HUGEPAGE, errno);
  return true;
}

/* Give back [downto, committed) (downto rounded up to the region's page, so
   only whole pages, and in huge modes only whole huge pages, go; a young
   region gives back base pages).  What the kernel would not drop stays
   committed: r->committed says what is held.  */
void region_decommit(struct region *r, size_t downto) {
  downto = align_up(downto, young(r) ? policy.page : r->page);
  if (downto >= r->committed) return;
  char *p = r->base + downto;
  size_t len = r->committed - downto;
  int saved = errno;
  if (hp_kernel.advise(p, len, HP_ADV_DONTNEED) != 0) {
    int err = errno;
    diag_refused(DIAG_REFUSED_DONTNEED, err);
    /* hugetlb: old kernels cannot drop hugetlb pages this way, keep them;
       a failure that is no refusal (ENOMEM): keep them, try again later */
    bool gone = r->kind != HP_REGION_HUGETLB && diag_is_refusal(err) && replace_pages(r, p, len, HP_PROT_NONE);
    errno = saved;
    if (!gone) return;
  } else if (r->kind != HP_REGION_HUGETLB) {
    hp_kernel.protect(p, len, HP_PROT_NONE);
  }
  errno = saved;
  r->committed = downto;
  if (r->prefaulted > downto) r->prefaulted = downto;
}

void region_release(struct region *r) {
  int saved = errno;
  hp_kernel.unmap(r->base, r->reserved);
  if (r->guard) hp_kernel.unmap(r->base - policy.page, policy.page);
  errno = saved;
  r->reserved = r->committed = 0;
  r->guard = false;
}

bool region_discard(struct region *r, uintptr_t lo, uintptr_t hi) {
  if (r->kind == HP_REGION_HUGETLB) return false;
  lo = align_up(lo, r->page);
  hi = align_down(hi, r->page);
  if (hi <= lo) return false;
  int saved = errno;
  bool ok = hp_kernel.advise((void *)lo, hi - lo, HP_ADV_DONTNEED) == 0;
  if (!ok) {
    int err = errno;
    diag_refused(DIAG_REFUSED_DONTNEED, err);
    ok = diag_is_refusal(err) && replace_pages(r, (char *)lo, hi - lo, HP_PROT_RW);
  }
  errno = saved;
  return ok;
}

bool region_hugify(struct region *r) {
  if (r->kind != HP_REGION_BASE || !policy.thp_size) return false;
  int saved = errno;
  bool ok = hp_kernel.advise(r->base, r->reserved, HP_ADV_HUGEPAGE) == 0;
  if (!ok) diag_refused(DIAG_REFUSED_HUGEPAGE, errno);
  if (ok) {
    r->kind = HP_REGION_THP;
    r->page = policy.thp_size;
    uintptr_t lo = align_up((uintptr_t)r->base, policy.thp_size);
    uintptr_t hi = align_down((uintptr_t)r->base + r->committed, policy.thp_size);
    if (hi > lo) hp_kernel.advise((void *)lo, hi - lo, HP_ADV_COLLAPSE);
  }
  errno = saved;
  return ok;
}

/* A mapping for one large chunk: *len in, the mapped length out.  */
void *region_map_chunk(size_t *len, enum hp_region_kind *kind) {
  size_t want = align_up(*len, policy.page);
  enum hp_region_kind k = region_kind_for_mode();
  int saved = errno;
  if (k == HP_REGION_HUGETLB && waste_ok(want, policy.hugetlb_size)) {
    size_t l = align_up(want, policy.hugetlb_size);
    void *p = hp_kernel.map(NULL, l, HP_PROT_RW, HP_MAP_HUGETLB, policy.hugetlb_size);
    if (p) {
      *len = l;
      *kind = k;
      errno = saved;
      return p;
    }
    note_hugetlb_failure();
  }
  if (k != HP_REGION_BASE && policy.thp_size && waste_ok(want, policy.thp_size)) {
    size_t l = align_up(want, policy.thp_size);
    void *p = map_aligned_anywhere(l, policy.thp_size, 0, HP_PROT_RW, 0, 0); /* where the kernel puts mappings */
    if (p) {
      *len = l;
      *kind = HP_REGION_THP;
      if (hp_kernel.advise(p, l, HP_ADV_HUGEPAGE) != 0) {
        diag_refused(DIAG_REFUSED_HUGEPAGE, errno);
        atomic_fetch_add_explicit(&region_fallbacks.thp, 1, memory_order_relaxed);
        *kind = HP_REGION_BASE;
      }
      errno = saved;
      return p;
    }
  }
  errno = saved;
  void *p = hp_kernel.map(NULL, want, HP_PROT_RW, 0, 0);
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  *len = want;
  *kind = HP_REGION_BASE;
  return p;
}

void region_unmap_chunk(void *p, size_t len) {
  int saved = errno;
  hp_kernel.unmap(p, len);
  errno = saved;
}

void *region_remap_chunk(void *base, size_t oldlen, size_t newlen, bool may_move) {
  int saved = errno;
  void *p = hp_kernel.remap(base, oldlen, newlen, 0);
  if (!p && may_move) p = hp_kernel.remap(base, oldlen, newlen, 1);
  if (!p) diag_refused(DIAG_REFUSED_REMAP, errno); /* the caller copies instead */
  errno = saved;
  return p;
}
