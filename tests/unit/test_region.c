/* SPDX-License-Identifier: MIT */
/* Unit tests of malloc/region.c: the huge-page policy against a FAKE
 * KERNEL.  hp_kernel (struct hp_kernel_ops) is replaced by functions that
 * record every call and fail on demand: refuse MADV_HUGEPAGE, run the
 * hugetlb pool dry on the n-th MAP_HUGETLB, fail MADV_POPULATE_WRITE
 * midway, return misaligned addresses.  The fake map hands out addresses
 * that are never touched (region.c itself never touches memory), so any
 * layout can be tested.  A few tests pass the calls through to the real
 * kernel and only record them, and one live test reads /proc/self/smaps.
 *
 * Each test sets the mp fields it depends on after hp_ensure_init(), so
 * the machine's own huge-page configuration does not matter (except for
 * the live tests).  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "params.h"
#include "tunables.h"
#include "hpt_api.h"
#include "arena.h"
#include "prefault.h"
#include "region.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* ================================================================ the fake kernel */

enum op { OP_MAP, OP_UNMAP, OP_PROTECT, OP_ADVISE, OP_REMAP };

struct call {
  enum op op;
  uintptr_t addr;
  size_t len;
  int arg;          /* prot or advice */
  unsigned flags;   /* map flags */
  size_t huge;      /* map huge_size */
  uintptr_t result; /* map: the address returned (0 = failed) */
};

static struct {
  struct call calls[512];
  size_t n;
  bool real;                  /* pass every call through to the kernel */
  bool emulate_hugetlb;       /* with real: back MAP_HUGETLB by normal pages, aligned as the kernel would */
  uintptr_t script[8];        /* results of the next map calls (FAIL_MAP = fail) */
  size_t n_script, script_i;
  uintptr_t bump;             /* where unscripted fake maps go */
  int hugetlb_ok;             /* MAP_HUGETLB calls that succeed before the pool is dry; -1 = all */
  bool hugetlb_fail_all;
  bool refuse_hugepage;       /* MADV_HUGEPAGE fails with EINVAL */
  int populate_ok;            /* hugetlb pages the pool can still give to POPULATE_WRITE; -1 = any number */
  uintptr_t populated[1024];  /* pages already populated (they need nothing from the pool) */
  size_t n_populated;
  bool dontneed_fails;
  bool collapse_fails;
  bool protect_fails;
  bool populate_is_noop;      /* POPULATE_WRITE "succeeds" but leaves pages absent (qemu-user) */
  bool collapse_under_lock;   /* a MADV_COLLAPSE came while an arena lock was held */
} fk;

static const uintptr_t FAIL_MAP = 1;
static const uintptr_t FAKE_BASE = (uintptr_t)32 << 40; /* 32 TiB: 1 GiB aligned, never touched */

static struct call *record(enum op op, void *addr, size_t len, int arg) {
  cr_assert_lt(fk.n, sizeof fk.calls / sizeof fk.calls[0], "too many kernel calls");
  struct call *c = &fk.calls[fk.n++];
  *c = (struct call){ .op = op, .addr = (uintptr_t)addr, .len = len, .arg = arg };
  return c;
}

/* A hugetlb mapping emulated with normal pages: like the kernel's, it is
   aligned to the huge page size.  */
static void *emulated_hugetlb_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge) {
  if (flags & (HP_MAP_FIXED | HP_MAP_FIXED_NOREPLACE)) return hp_os_map(addr, len, prot, flags, 0);
  char *raw = hp_os_map(addr, len + huge, prot, flags, 0);
  if (!raw) return NULL;
  char *p = (char *)align_up((uintptr_t)raw, huge);
  if (p > raw) hp_os_unmap(raw, (size_t)(p - raw));
  if (p + len < raw + len + huge) hp_os_unmap(p + len, (size_t)(raw + len + huge - (p + len)));
  return p;
}

static void *fake_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge) {
  struct call *c = record(OP_MAP, addr, len, prot);
  c->flags = flags;
  c->huge = huge;
  if (flags & HP_MAP_HUGETLB) {
    if (fk.hugetlb_fail_all || fk.hugetlb_ok == 0) {
      errno = ENOMEM;
      return NULL;
    }
    if (fk.hugetlb_ok > 0) fk.hugetlb_ok--;
  }
  void *p;
  if (fk.real && fk.emulate_hugetlb && (flags & HP_MAP_HUGETLB)) {
    p = emulated_hugetlb_map(addr, len, prot, flags & ~(unsigned)HP_MAP_HUGETLB, huge);
  } else if (fk.real) {
    p = hp_os_map(addr, len, prot, flags, huge);
  } else if (fk.script_i < fk.n_script) {
    uintptr_t r = fk.script[fk.script_i++];
    p = r == FAIL_MAP ? NULL : (void *)r;
    if (!p) errno = ENOMEM;
  } else if (flags & (HP_MAP_FIXED | HP_MAP_FIXED_NOREPLACE)) {
    p = addr;
  } else {
    p = (void *)fk.bump;
    fk.bump += align_up(len, GiB) + GiB;
  }
  c->result = (uintptr_t)p;
  return p;
}

static int fake_unmap(void *addr, size_t len) {
  record(OP_UNMAP, addr, len, 0);
  return fk.real ? hp_os_unmap(addr, len) : 0;
}

static int fake_protect(void *addr, size_t len, enum hp_prot prot) {
  record(OP_PROTECT, addr, len, prot);
  if (fk.protect_fails && prot == HP_PROT_RW) {
    errno = ENOMEM;
    return -1;
  }
  return fk.real ? hp_os_protect(addr, len, prot) : 0;
}

/* The kernel's populate: page by page, each new page taken from the pool;
   on a dry pool it stops, the pages before staying populated.  */
static bool page_populated(uintptr_t a) {
  for (size_t i = 0; i < fk.n_populated; i++)
    if (fk.populated[i] == a) return true;
  return false;
}
static bool fake_populate(uintptr_t addr, size_t len) {
  size_t page = region_get_policy()->hugetlb_size ? region_get_policy()->hugetlb_size : 2 * MiB;
  for (uintptr_t a = addr; a < addr + len; a += page) {
    if (page_populated(a)) continue;
    if (fk.populate_ok == 0) return false;
    if (fk.populate_ok > 0) fk.populate_ok--;
    if (fk.n_populated < sizeof fk.populated / sizeof fk.populated[0]) fk.populated[fk.n_populated++] = a;
  }
  return true;
}

/* Is some arena's lock taken (by the calling thread: the tests that look
   run one allocating thread at a time)?  */
static bool an_arena_locked(void) {
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar))
    if (__atomic_load_n(&ar->lock.v, __ATOMIC_RELAXED) != 0) return true;
  return false;
}

static int fake_advise(void *addr, size_t len, enum hp_advice adv) {
  record(OP_ADVISE, addr, len, adv);
  if (adv == HP_ADV_COLLAPSE && an_arena_locked()) fk.collapse_under_lock = true;
  if ((adv == HP_ADV_HUGEPAGE && fk.refuse_hugepage) || (adv == HP_ADV_DONTNEED && fk.dontneed_fails) ||
      (adv == HP_ADV_COLLAPSE && fk.collapse_fails)) {
    errno = EINVAL;
    return -1;
  }
  if (adv == HP_ADV_POPULATE_WRITE && !fake_populate((uintptr_t)addr, len)) {
    errno = ENOMEM;
    return -1;
  }
  return fk.real ? hp_os_advise(addr, len, adv) : 0;
}

static int fake_resident(void *addr, size_t len) {
  if (fk.populate_is_noop) return 0;
  return fk.real ? hp_os_resident(addr, len) : 1;
}

static void *fake_remap(void *old, size_t oldlen, size_t newlen, int may_move) {
  record(OP_REMAP, old, newlen, may_move);
  return fk.real ? hp_os_remap(old, oldlen, newlen, may_move) : NULL;
}

/* Install the fake kernel and a known configuration: mode, page sizes,
   placement.  */
static void fake_kernel(int mode, size_t thp, size_t hugetlb) {
  hp_ensure_init();
  memset(&fk, 0, sizeof fk);
  fk.bump = FAKE_BASE;
  fk.populate_ok = -1;
  fk.hugetlb_ok = -1;
  hp_kernel = (struct hp_kernel_ops){ fake_map, fake_unmap, fake_protect, fake_advise, fake_remap, fake_resident };
  mp.page = 4096;
  region_set_policy(&(struct region_policy){ .mode = mode, .page = 4096, .thp_size = thp, .hugetlb_size = hugetlb,
                                             .huge_waste_pct = 12 });
  hp_placement.align = thp ? thp : 4096;
  hp_placement.huge_align = hugetlb ? hugetlb : 4096;
  hp_placement.hint = 0;
  hp_placement.huge_hint = 0;
  atomic_store(&region_fallbacks.hugetlb, 0);
  atomic_store(&region_fallbacks.thp, 0);
}

/* Change the waste allowance of the policy in force.  */
static void set_waste(size_t pct) {
  struct region_policy pol = *region_get_policy();
  pol.huge_waste_pct = pct;
  region_set_policy(&pol);
}

static void script_maps(size_t n, const uintptr_t *addrs) {
  cr_assert_leq(n, sizeof fk.script / sizeof fk.script[0]);
  memcpy(fk.script, addrs, n * sizeof *addrs);
  fk.n_script = n;
  fk.script_i = 0;
}

/* On stderr, for a failing expect_call.  */
static void dump_calls(void) {
  static const char *names[] = { "map", "unmap", "protect", "advise", "remap" };
  for (size_t i = 0; i < fk.n; i++)
    fprintf(stderr, "  %zu %s %#lx %#zx arg %d flags %#x huge %#zx -> %#lx\n", i, names[fk.calls[i].op],
            (unsigned long)fk.calls[i].addr, fk.calls[i].len, fk.calls[i].arg, fk.calls[i].flags, fk.calls[i].huge,
            (unsigned long)fk.calls[i].result);
}

static size_t count_calls(enum op op, int arg) {
  size_t n = 0;
  for (size_t i = 0; i < fk.n; i++) n += fk.calls[i].op == op && (arg < 0 || fk.calls[i].arg == arg);
  return n;
}

/* Index of the first call matching op/arg at or after `from`, or -1.  */
static long find_call(size_t from, enum op op, int arg) {
  for (size_t i = from; i < fk.n; i++)
    if (fk.calls[i].op == op && (arg < 0 || fk.calls[i].arg == arg)) return (long)i;
  return -1;
}

static void expect_call(size_t i, enum op op, uintptr_t addr, size_t len, int arg) {
  if (i >= fk.n || fk.calls[i].op != op || fk.calls[i].addr != addr || fk.calls[i].len != len) dump_calls();
  cr_assert_lt(i, fk.n, "call %zu missing (only %zu calls)", i, fk.n);
  const struct call *c = &fk.calls[i];
  cr_assert_eq(c->op, op, "call %zu: op %d, expected %d", i, c->op, op);
  cr_assert_eq(c->addr, addr, "call %zu: addr %#lx, expected %#lx", i, (unsigned long)c->addr, (unsigned long)addr);
  cr_assert_eq(c->len, len, "call %zu: len %#zx, expected %#zx", i, c->len, len);
  if (arg >= 0) cr_assert_eq(c->arg, arg, "call %zu: arg %d, expected %d", i, c->arg, arg);
}

/* ================================================================ THP */

Test(region, thp_reserve_aligns_and_advises_before_commit) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 7 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(r.kind, HP_REGION_THP);
  cr_assert_eq(r.page, 2 * MiB);
  cr_assert_eq(r.reserved, 8 * MiB, "rounded to whole huge pages");
  cr_assert_eq(r.committed, 0);
  cr_assert_eq((uintptr_t)r.base & (2 * MiB - 1), 0);
  cr_assert_eq(fk.calls[0].op, OP_MAP);
  cr_assert_eq(fk.calls[0].arg, HP_PROT_NONE, "reserved inaccessible");
  cr_assert_eq(fk.calls[0].flags & HP_MAP_NORESERVE, 0, "committing is charged against overcommit, as brk is");
  cr_assert_eq(fk.calls[0].flags & HP_MAP_HUGETLB, 0);
  expect_call(1, OP_ADVISE, (uintptr_t)r.base, 8 * MiB, HP_ADV_HUGEPAGE);
  expect_call(2, OP_MAP, (uintptr_t)r.base - 4096, 4096, HP_PROT_NONE);
  cr_assert(fk.calls[2].flags & HP_MAP_FIXED_NOREPLACE, "the guard never replaces a mapping");
  cr_assert(r.guard);
  cr_assert_eq(region_commit(&r, 2 * MiB - 100), 0);
  cr_assert_eq(r.committed, 2 * MiB, "commit rounds to the huge page");
  expect_call(3, OP_PROTECT, (uintptr_t)r.base, 2 * MiB, HP_PROT_RW);
  cr_assert_eq(region_commit(&r, 5 * MiB), 0);
  expect_call(4, OP_PROTECT, (uintptr_t)r.base + 2 * MiB, 4 * MiB, HP_PROT_RW);
  cr_assert_eq(r.committed, 6 * MiB);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 0, "nothing was committed in part");
  cr_assert_eq(atomic_load(&region_fallbacks.thp), 0);
}

/* A young THP region (its first huge page not yet committed) commits base
   pages while a whole huge page would waste more than huge_waste percent;
   once it takes the whole page it collapses what it holds into it.  */
Test(region, thp_young_region_commits_base_pages_then_collapses) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(12);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  size_t n0 = fk.n;
  cr_assert_eq(region_commit(&r, 1), 0);
  cr_assert_eq(r.committed, 4096, "a few bytes take one base page, not 2 MiB");
  expect_call(n0, OP_PROTECT, (uintptr_t)r.base, 4096, HP_PROT_RW);
  cr_assert_eq(region_commit(&r, 132 * 1024 + 5), 0);
  cr_assert_eq(r.committed, 136 * 1024);
  expect_call(n0 + 1, OP_PROTECT, (uintptr_t)r.base + 4096, 132 * 1024, HP_PROT_RW);
  /* a young region gives back base pages */
  region_decommit(&r, 8192 + 1);
  cr_assert_eq(r.committed, 12288);
  expect_call(n0 + 2, OP_ADVISE, (uintptr_t)r.base + 12288, 124 * 1024, HP_ADV_DONTNEED);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 0);
  /* 1.7 MiB would waste 0.3 MiB of 2 MiB: 17.6% > 12%, still base pages */
  cr_assert_eq(region_commit(&r, 1740 * 1024), 0);
  cr_assert_eq(r.committed, 1740 * 1024);
  /* 1.8 MiB wastes 11%: the whole huge page, and what it holds collapsed,
     once the caller has dropped its lock */
  size_t n1 = fk.n;
  cr_assert_eq(region_commit(&r, 1844 * 1024), 0);
  cr_assert_eq(r.committed, 2 * MiB);
  expect_call(n1, OP_PROTECT, (uintptr_t)r.base + 1740 * 1024, 2 * MiB - 1740 * 1024, HP_PROT_RW);
  cr_assert_eq(fk.n, n1 + 1, "no collapse under the caller's lock");
  cr_assert_eq(region_deferred.addr, r.base);
  cr_assert_eq(region_deferred.len, 2 * MiB);
  size_t c0 = atomic_load(&region_costs.collapses);
  region_run_deferred();
  expect_call(n1 + 1, OP_ADVISE, (uintptr_t)r.base, 2 * MiB, HP_ADV_COLLAPSE);
  cr_assert_eq(region_deferred.pending, 0);
  cr_assert_eq(atomic_load(&region_costs.collapses), c0 + 1, "counted");
  region_run_deferred();
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 1, "once");
  /* grown up, it gives back whole huge pages only */
  cr_assert_eq(region_commit(&r, 2 * MiB + 1), 0);
  cr_assert_eq(r.committed, 2 * MiB + 4096, "the second huge page starts in base pages too");
  region_decommit(&r, 4096);
  cr_assert_eq(r.committed, 2 * MiB, "never young again: the first huge page stays");
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 1, "nothing more to collapse");
}

/* Below two huge pages a lazy region commits base pages while rounding up
   wastes more than huge_waste percent of the commit (a thread arena of
   2.7 MB does not take 4), and collapses the second page once it takes it
   whole; past two huge pages it commits whole huge pages at once.  */
Test(region, thp_lazy_region_second_page_in_base_pages_then_whole_pages) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(12);
  struct region r;
  cr_assert_eq(region_reserve(&r, 16 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 2 * MiB), 0);
  region_run_deferred();
  size_t n0 = fk.n;
  /* 2.7 MiB would waste 1.3 MiB of 4: base pages */
  cr_assert_eq(region_commit(&r, 2764 * 1024 + 1), 0);
  cr_assert_eq(r.committed, 2768 * 1024);
  expect_call(n0, OP_PROTECT, (uintptr_t)r.base + 2 * MiB, 720 * 1024, HP_PROT_RW);
  /* 3.5 MiB wastes 14% of it: still base pages; 3.6 MiB wastes 11% */
  cr_assert_eq(region_commit(&r, 3584 * 1024), 0);
  cr_assert_eq(r.committed, 3584 * 1024);
  cr_assert_eq(region_deferred.pending & REGION_DEFERRED_COLLAPSE, 0, "nothing whole yet");
  cr_assert_eq(region_commit(&r, 3688 * 1024), 0);
  cr_assert_eq(r.committed, 4 * MiB);
  cr_assert_eq(region_deferred.addr, r.base + 2 * MiB, "the second huge page is collapsed");
  cr_assert_eq(region_deferred.len, 2 * MiB);
  size_t n1 = fk.n;
  region_run_deferred();
  expect_call(n1, OP_ADVISE, (uintptr_t)r.base + 2 * MiB, 2 * MiB, HP_ADV_COLLAPSE);
  /* 4 MiB + 1 would waste nearly 2 MiB of 6, but a heap past two huge
     pages takes whole ones: nothing to collapse later */
  cr_assert_eq(region_commit(&r, 4 * MiB + 1), 0);
  cr_assert_eq(r.committed, 6 * MiB);
  region_run_deferred();
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 1, "the first page was committed whole");
}

Test(region, thp_young_region_jumping_past_its_first_page_collapses_it) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(12);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 64 * 1024), 0);
  size_t n0 = fk.n;
  cr_assert_eq(region_commit(&r, 5 * MiB), 0);
  cr_assert_eq(r.committed, 6 * MiB);
  expect_call(n0, OP_PROTECT, (uintptr_t)r.base + 64 * 1024, 6 * MiB - 64 * 1024, HP_PROT_RW);
  region_run_deferred();
  expect_call(n0 + 1, OP_ADVISE, (uintptr_t)r.base, 2 * MiB, HP_ADV_COLLAPSE);
}

/* hpmalloc.prefault: a growing THP region commits N huge pages ahead and a
   helper thread faults them in, page by page, once started outside the
   caller's lock.  */
static void set_prefault(size_t pages) {
  struct region_policy pol = *region_get_policy();
  pol.prefault = pages;
  region_set_policy(&pol);
}

/* A THP region of `len` on the fake kernel, not lazy, with
   hpmalloc.prefault = pages.  */
static void prefault_region(struct region *r, size_t len, size_t pages) {
  set_prefault(pages);
  cr_assert_eq(region_reserve(r, len, 0, HP_REGION_THP), 0);
  r->lazy = false;
}

static bool wait_prefaulted(size_t bytes) {
  for (int i = 0; i < 2000 && atomic_load(&prefault_counters.bytes) < bytes; i++) usleep(1000);
  return atomic_load(&prefault_counters.bytes) >= bytes;
}

Test(region, prefault_commits_ahead_and_a_helper_faults_it_in) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  prefault_region(&r, 64 * MiB, 3);
  size_t b0 = atomic_load(&prefault_counters.bytes);
  cr_assert_eq(region_commit_ahead(&r, 5 * MiB), 0);
  cr_assert_eq(r.committed, 12 * MiB, "6 MiB asked (whole pages), 3 huge pages more");
  cr_assert_eq(r.prefaulted, 12 * MiB);
  cr_assert(region_deferred.pending & REGION_DEFERRED_PREFAULT, "the helper starts once the lock is dropped");
  size_t n0 = fk.n;
  region_run_deferred();
  cr_assert(wait_prefaulted(b0 + 6 * MiB), "the helper faulted the 6 MiB ahead in");
  size_t pops = 0;
  for (size_t i = n0; i < fk.n; i++) {
    const struct call *c = &fk.calls[i];
    if (c->op != OP_ADVISE || c->arg != HP_ADV_POPULATE_WRITE) continue;
    cr_assert_geq(c->addr, (uintptr_t)r.base + 6 * MiB, "not what the caller asked for");
    cr_assert_eq(c->len, 2 * MiB, "a huge page per call");
    pops++;
  }
  cr_assert_eq(pops, 3);
  /* the next growth: the window moves on, past what was faulted in */
  size_t q0 = atomic_load(&prefault_counters.requests);
  cr_assert_eq(region_commit_ahead(&r, 13 * MiB), 0);
  cr_assert_eq(r.committed, 20 * MiB);
  cr_assert_eq(atomic_load(&prefault_counters.requests), q0 + 1);
  cr_assert(wait_prefaulted(b0 + 12 * MiB), "[14, 20) MiB faulted in too");
  /* a trim below what was prefaulted lowers the mark */
  region_decommit(&r, 4 * MiB);
  cr_assert_eq(r.prefaulted, 4 * MiB);
}

/* Off (the default): region_commit_ahead is region_commit, nothing more
   is committed and nothing is queued for a helper.  */
Test(region, prefault_off_commits_only_what_was_asked) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  prefault_region(&r, 64 * MiB, 0);
  size_t q0 = atomic_load(&prefault_counters.requests);
  cr_assert_eq(region_commit_ahead(&r, 5 * MiB), 0);
  cr_assert_eq(r.committed, 6 * MiB, "whole huge pages, none ahead");
  cr_assert_eq(r.prefaulted, 0);
  cr_assert_eq(atomic_load(&prefault_counters.requests), q0, "nothing queued");
  cr_assert_eq(region_deferred.pending & REGION_DEFERRED_PREFAULT, 0, "no helper wanted");
}

/* A fork child has no helper (threads do not survive fork): the first
   request there starts its own.  */
Test(region, prefault_helper_restarts_in_a_fork_child) {
  fake_kernel(1, 2 * MiB, 0);
  fk.real = true; /* the child's helper must touch real memory */
  struct region r;
  prefault_region(&r, 16 * MiB, 1);
  cr_assert_eq(region_commit_ahead(&r, 2 * MiB), 0);
  region_run_deferred();
  cr_assert(wait_prefaulted(2 * MiB));
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    prefault_fork_child(); /* what arena.c's fork handler does */
    size_t b = atomic_load(&prefault_counters.bytes);
    if (region_commit_ahead(&r, 5 * MiB) != 0) _exit(1);
    if (!(region_deferred.pending & REGION_DEFERRED_PREFAULT)) _exit(2);
    region_run_deferred();
    _exit(wait_prefaulted(b + 2 * MiB) ? 0 : 3);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

Test(region, prefault_off_and_young_regions_commit_only_what_is_asked) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 64 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit_ahead(&r, 4096), 0);
  cr_assert_eq(r.committed, 4096, "young: base pages, nothing ahead");
  set_prefault(2);
  cr_assert_eq(region_commit_ahead(&r, 8192), 0);
  cr_assert_eq(r.committed, 8192, "still young");
  set_prefault(0);
  r.lazy = false;
  cr_assert_eq(region_commit_ahead(&r, 3 * MiB), 0);
  cr_assert_eq(r.committed, 4 * MiB, "prefault off");
  cr_assert_eq(r.prefaulted, 0);
}

/* A region its caller knows will grow (an arena's heap after the first)
   is not lazy: its first commit takes whole huge pages, nothing to
   collapse.  */
Test(region, thp_region_not_lazy_commits_huge_pages_at_once) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  r.lazy = false;
  size_t n0 = fk.n;
  cr_assert_eq(region_commit(&r, 4096), 0);
  cr_assert_eq(r.committed, 2 * MiB);
  expect_call(n0, OP_PROTECT, (uintptr_t)r.base, 2 * MiB, HP_PROT_RW);
  cr_assert_eq(region_commit(&r, 3 * MiB), 0);
  region_run_deferred();
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 0);
}

Test(region, thp_young_collapse_failure_is_harmless) {
  fake_kernel(1, 2 * MiB, 0);
  fk.collapse_fails = true;
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 4096), 0);
  errno = 1234;
  size_t f0 = atomic_load(&region_costs.collapse_failures);
  cr_assert_eq(region_commit(&r, 3 * MiB), 0, "an old kernel without MADV_COLLAPSE: khugepaged does it later");
  region_run_deferred();
  cr_assert_eq(r.committed, 3 * MiB, "the second huge page in base pages, the first whole");
  cr_assert_eq(errno, 1234, "errno untouched");
  cr_assert_eq(atomic_load(&region_costs.collapse_failures), f0 + 1, "counted");
}

Test(region, thp_refused_falls_back_to_base) {
  fake_kernel(1, 2 * MiB, 0);
  fk.refuse_hugepage = true;
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(r.kind, HP_REGION_BASE);
  cr_assert_eq(r.page, 4096);
  cr_assert_eq(atomic_load(&region_fallbacks.thp), 1);
  cr_assert_eq(region_commit(&r, 5000), 0);
  cr_assert_eq(r.committed, 8192, "a base region commits base pages");
}

Test(region, thp_refused_for_mapped_chunk) {
  fake_kernel(1, 2 * MiB, 0);
  fk.refuse_hugepage = true;
  size_t len = 4 * MiB;
  enum hp_region_kind kind;
  void *p = region_map_chunk(&len, &kind);
  cr_assert_not_null(p);
  cr_assert_eq(kind, HP_REGION_BASE);
  cr_assert_eq(len, 4 * MiB);
  cr_assert_eq(atomic_load(&region_fallbacks.thp), 1);
}

Test(region, extend_in_place_advises_the_new_part) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 4 * MiB, 0, HP_REGION_THP), 0);
  size_t n0 = fk.n;
  cr_assert_eq(region_extend(&r, 3 * MiB), 0);
  cr_assert_eq(r.reserved, 8 * MiB);
  expect_call(n0, OP_MAP, (uintptr_t)r.base + 4 * MiB, 4 * MiB, HP_PROT_NONE);
  cr_assert(fk.calls[n0].flags & HP_MAP_FIXED_NOREPLACE);
  expect_call(n0 + 1, OP_ADVISE, (uintptr_t)r.base + 4 * MiB, 4 * MiB, HP_ADV_HUGEPAGE);
}

Test(region, extend_elsewhere_is_undone) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 4 * MiB, 0, HP_REGION_THP), 0);
  size_t n0 = fk.n;
  uintptr_t elsewhere = FAKE_BASE + 100 * GiB;
  script_maps(1, &elsewhere);
  errno = 1234;
  cr_assert_eq(region_extend(&r, 2 * MiB), -1);
  cr_assert_eq(errno, 1234, "errno preserved");
  cr_assert_eq(r.reserved, 4 * MiB);
  expect_call(n0 + 1, OP_UNMAP, elsewhere, 2 * MiB, -1);
}

/* ================================================================ hugetlb fallbacks */

Test(region, hugetlb_reserve_uses_map_hugetlb) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 3 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_HUGETLB);
  cr_assert_eq(r.reserved, 4 * MiB);
  cr_assert_eq(r.page, 2 * MiB);
  cr_assert_eq(fk.calls[0].flags, HP_MAP_HUGETLB | HP_MAP_NORESERVE);
  cr_assert_eq(fk.calls[0].huge, 2 * MiB);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 0, "hugetlb regions are not THP-advised");
  cr_assert_eq(region_commit(&r, 4 * MiB), 0);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_POPULATE_WRITE), 1, "both huge pages populated in one call");
  cr_assert_eq(fk.n_populated, 2);
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 0);
}

/* qemu-user accepts MADV_POPULATE_WRITE and does nothing: a page that is
   still absent afterwards is a failed commit (touching it could SIGBUS). */
Test(region, hugetlb_populate_that_leaves_pages_absent_fails) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  fk.populate_is_noop = true;
  struct region r;
  cr_assert_eq(region_reserve(&r, 4 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_HUGETLB);
  cr_assert_neq(region_commit(&r, 2 * MiB), 0, "an absent page is not committed");
  cr_assert_eq(r.committed, 0);
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 1, "counted as a hugetlb fallback");
}

Test(region, hugetlb_enomem_first_call_uses_thp) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  fk.hugetlb_ok = 0; /* the pool is dry from the first call */
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_THP);
  cr_assert_eq(r.page, 2 * MiB);
  cr_assert_eq(r.reserved, 8 * MiB);
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 1);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 1);
  long last_map = -1;
  for (long i = find_call(0, OP_MAP, -1); i >= 0; i = find_call((size_t)i + 1, OP_MAP, -1)) last_map = i;
  cr_assert_eq(fk.calls[last_map].flags & HP_MAP_HUGETLB, 0, "the fallback is a normal mapping");
  cr_assert_neq(fk.calls[last_map].result, 0);
}

Test(region, hugetlb_enomem_nth_call) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  fk.hugetlb_ok = 2; /* two mappings, then the pool is dry */
  struct region r[4];
  for (int i = 0; i < 3; i++) cr_assert_eq(region_reserve(&r[i], 2 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r[0].kind, HP_REGION_HUGETLB);
  cr_assert_eq(r[1].kind, HP_REGION_HUGETLB);
  cr_assert_eq(r[2].kind, HP_REGION_THP, "the third hugetlb mapping failed");
  fk.hugetlb_ok = -1; /* refilled */
  cr_assert_eq(region_reserve(&r[3], 2 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r[3].kind, HP_REGION_HUGETLB, "region_reserve itself retries the pool");
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 1);
}

Test(region, hugetlb_failure_backs_off_mode_kind) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  cr_assert_eq(region_kind_for_mode(), HP_REGION_HUGETLB);
  fk.hugetlb_fail_all = true;
  struct region r;
  cr_assert_eq(region_reserve(&r, 2 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_THP);
  /* the next reservations skip the pool for a while, then try it again */
  int thp = 0;
  while (region_kind_for_mode() == HP_REGION_THP) cr_assert_lt(++thp, 100);
  cr_assert_gt(thp, 0);
  cr_assert_eq(region_kind_for_mode(), HP_REGION_HUGETLB);
}

Test(region, hugetlb_and_thp_unavailable_gives_base) {
  fake_kernel(2, 0, 2 * MiB); /* THP never: thp_size 0 */
  fk.hugetlb_fail_all = true;
  struct region r;
  cr_assert_eq(region_reserve(&r, 3 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_BASE);
  cr_assert_eq(r.page, 4096);
  cr_assert_eq(r.reserved, 3 * MiB);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 0, "no THP advice when THP is off");
  /* and the kind for the next reservations is base, not THP */
  cr_assert_eq(region_kind_for_mode(), HP_REGION_BASE);
  /* a mapped chunk too */
  size_t len = 4 * MiB;
  enum hp_region_kind kind;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_BASE);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 0);
}

Test(region, mode_zero_is_base) {
  fake_kernel(0, 2 * MiB, 2 * MiB);
  cr_assert_eq(region_kind_for_mode(), HP_REGION_BASE);
  size_t len = 4 * MiB;
  enum hp_region_kind kind;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_BASE);
  cr_assert_eq(fk.n, 1, "one plain mapping, no advice");
  cr_assert_eq(fk.calls[0].flags, 0);
}

/* ================================================================ commit */

Test(region, populate_failing_midway_keeps_last_good_page) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_HUGETLB), 0);
  fk.populate_ok = 2;
  size_t n0 = fk.n;
  cr_assert_eq(region_commit(&r, 8 * MiB), -1);
  cr_assert_eq(errno, ENOMEM);
  cr_assert_eq(r.committed, 4 * MiB, "the two populated pages stay committed");
  uintptr_t b = (uintptr_t)r.base;
  /* the whole range in one call; when that fails, one huge page at a
     time, stopping at the first failure */
  long iw = find_call(n0, OP_ADVISE, HP_ADV_POPULATE_WRITE);
  long i0 = find_call((size_t)iw + 1, OP_ADVISE, HP_ADV_POPULATE_WRITE);
  long i1 = find_call((size_t)i0 + 1, OP_ADVISE, HP_ADV_POPULATE_WRITE);
  long i2 = find_call((size_t)i1 + 1, OP_ADVISE, HP_ADV_POPULATE_WRITE);
  cr_assert(iw >= 0 && i0 >= 0 && i1 >= 0 && i2 >= 0);
  expect_call((size_t)iw, OP_ADVISE, b, 8 * MiB, HP_ADV_POPULATE_WRITE);
  expect_call((size_t)i0, OP_ADVISE, b, 2 * MiB, HP_ADV_POPULATE_WRITE);
  expect_call((size_t)i1, OP_ADVISE, b + 2 * MiB, 2 * MiB, HP_ADV_POPULATE_WRITE);
  expect_call((size_t)i2, OP_ADVISE, b + 4 * MiB, 2 * MiB, HP_ADV_POPULATE_WRITE);
  cr_assert_eq(find_call((size_t)i2 + 1, OP_ADVISE, HP_ADV_POPULATE_WRITE), -1, "no page after the failed one");
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 1);
  /* what is committed is still usable */
  size_t n1 = fk.n;
  cr_assert_eq(region_commit(&r, 3 * MiB), 0);
  cr_assert_eq(fk.n, n1, "nothing to do below committed");
}

Test(region, populate_failing_after_earlier_commit) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 16 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(region_commit(&r, 2 * MiB), 0);
  fk.populate_ok = 1; /* the pool has one more page */
  cr_assert_eq(region_commit(&r, 10 * MiB), -1);
  cr_assert_eq(r.committed, 4 * MiB);
  fk.populate_ok = -1;
  cr_assert_eq(region_commit(&r, 10 * MiB), 0, "the pool refilled: commit resumes");
  cr_assert_eq(r.committed, 10 * MiB);
}

Test(region, commit_beyond_reservation_fails) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 4 * MiB, 0, HP_REGION_THP), 0);
  size_t n0 = fk.n;
  cr_assert_eq(region_commit(&r, 4 * MiB + 1), -1);
  cr_assert_eq(errno, ENOMEM);
  cr_assert_eq(r.committed, 0);
  cr_assert_eq(fk.n, n0, "no kernel call");
}

Test(region, commit_refused_by_kernel) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  fk.protect_fails = true;
  cr_assert_eq(region_commit(&r, 4096), -1);
  cr_assert_eq(errno, ENOMEM);
  cr_assert_eq(r.committed, 0);
}

/* ================================================================ 1 GiB pages and alignment */

Test(region, gib_hugetlb_pages_round_and_align) {
  fake_kernel(2, 2 * MiB, GiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 3 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(r.kind, HP_REGION_HUGETLB);
  cr_assert_eq(r.reserved, GiB);
  cr_assert_eq(r.page, GiB);
  cr_assert_eq((uintptr_t)r.base & (GiB - 1), 0);
  cr_assert_eq(fk.calls[0].len, GiB);
  cr_assert_eq(fk.calls[0].huge, GiB);
  cr_assert_eq(region_commit(&r, 1), 0);
  cr_assert_eq(r.committed, GiB);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_POPULATE_WRITE), 1, "one 1 GiB page");
  size_t n0 = fk.n;
  region_decommit(&r, 1);
  cr_assert_eq(r.committed, GiB, "never split a 1 GiB page");
  cr_assert_eq(fk.n, n0);
  region_decommit(&r, 0);
  cr_assert_eq(r.committed, 0);
  expect_call(n0, OP_ADVISE, (uintptr_t)r.base, GiB, HP_ADV_DONTNEED);
}

Test(region, gib_hugetlb_misaligned_first_map_retried) {
  fake_kernel(2, 2 * MiB, GiB);
  uintptr_t a = FAKE_BASE + 2 * MiB; /* the kernel gave an address off the 1 GiB grid */
  uintptr_t good = FAKE_BASE + 4 * GiB;
  uintptr_t s[] = { a, good };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, 5 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq((uintptr_t)r.base, good);
  expect_call(1, OP_UNMAP, a, GiB, -1);
  cr_assert_eq(fk.calls[2].op, OP_MAP);
  cr_assert_eq(count_calls(OP_UNMAP, -1), 1, "span == len for one-page alignment: no trims");
}

Test(region, hugetlb_over_reserve_and_trim) {
  /* 2 MiB hugetlb pages, a reservation the caller wants 1 GiB aligned (the
     main heap: top.c passes the placement's alignment) */
  fake_kernel(2, 2 * MiB, 2 * MiB);
  hp_placement.huge_align = GiB;
  uintptr_t raw = FAKE_BASE + 5 * GiB + 6 * MiB;
  uintptr_t s[] = { raw, raw };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, GiB, HP_REGION_HUGETLB), 0);
  uintptr_t aligned = FAKE_BASE + 6 * GiB;
  size_t span = 8 * MiB + GiB - 2 * MiB;
  cr_assert_eq((uintptr_t)r.base, aligned);
  cr_assert_eq(r.reserved, 8 * MiB);
  expect_call(0, OP_MAP, 0, 8 * MiB, -1);
  expect_call(1, OP_UNMAP, raw, 8 * MiB, -1);
  expect_call(2, OP_MAP, 0, span, -1);
  cr_assert_eq(fk.calls[2].flags, HP_MAP_HUGETLB | HP_MAP_NORESERVE);
  cr_assert_eq(fk.calls[2].huge, 2 * MiB);
  expect_call(3, OP_UNMAP, raw, aligned - raw, -1);
  expect_call(4, OP_UNMAP, aligned + 8 * MiB, span - (aligned - raw) - 8 * MiB, -1);
  cr_assert_eq(fk.calls[4].len, 4 * MiB);
  expect_call(5, OP_MAP, aligned - 4096, 4096, HP_PROT_NONE);
  cr_assert_eq(fk.calls[5].flags & HP_MAP_HUGETLB, 0, "the guard is a base page");
  cr_assert_eq(fk.n, 6);
}

Test(region, base_over_reserve_trims_head_and_tail) {
  fake_kernel(0, 0, 0);
  uintptr_t first = FAKE_BASE + 0x3000, raw = FAKE_BASE + 0x5000;
  uintptr_t s[] = { first, raw };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, 3 * MiB, MiB, HP_REGION_BASE), 0);
  uintptr_t aligned = FAKE_BASE + MiB;
  size_t span = 3 * MiB + MiB - 4096;
  cr_assert_eq((uintptr_t)r.base, aligned);
  expect_call(1, OP_UNMAP, first, 3 * MiB, -1);
  expect_call(2, OP_MAP, 0, span, HP_PROT_NONE);
  expect_call(3, OP_UNMAP, raw, aligned - raw, -1);
  expect_call(4, OP_UNMAP, aligned + 3 * MiB, span - (aligned - raw) - 3 * MiB, -1);
  cr_assert_eq(fk.calls[4].len, 0x4000);
}

Test(region, over_reserve_without_tail) {
  fake_kernel(0, 0, 0);
  /* raw sits exactly align - page below a boundary: the head takes it all */
  uintptr_t raw = FAKE_BASE + MiB + 4096;
  uintptr_t s[] = { raw, raw };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, MiB, HP_REGION_BASE), 0);
  cr_assert_eq((uintptr_t)r.base, FAKE_BASE + 2 * MiB);
  cr_assert_eq(count_calls(OP_UNMAP, -1), 2, "the first try and the head only");
  expect_call(3, OP_UNMAP, raw, MiB - 4096, -1);
}

Test(region, aligned_map_fails) {
  fake_kernel(0, 0, 0);
  uintptr_t s[] = { FAKE_BASE + 0x3000, FAIL_MAP };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, MiB, HP_REGION_BASE), -1);
}

Test(region, odd_alignments_and_lengths) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 5000, 16, HP_REGION_BASE), 0);
  cr_assert_eq(r.reserved, 8192, "length rounded to base pages");
  cr_assert_eq((uintptr_t)r.base & 4095, 0);
  cr_assert_eq(region_reserve(&r, 1, 1, HP_REGION_BASE), 0);
  cr_assert_eq(r.reserved, 4096);
  /* an alignment far above the length */
  cr_assert_eq(region_reserve(&r, 64 * KiB, GiB, HP_REGION_BASE), 0);
  cr_assert_eq((uintptr_t)r.base & (GiB - 1), 0);
  cr_assert_eq(r.reserved, 64 * KiB);
  /* THP: a region smaller than the placement's alignment gets the THP
     size's (small heaps stay close together); one that can hold a page
     of the placement's size gets that */
  fake_kernel(1, 2 * MiB, 0);
  hp_placement.align = GiB;
  uintptr_t raw = FAKE_BASE + 2 * MiB;
  uintptr_t s[] = { raw, raw };
  script_maps(2, s);
  cr_assert_eq(region_reserve(&r, 3 * MiB, 4096, HP_REGION_THP), 0);
  cr_assert_eq((uintptr_t)r.base, raw, "2 MiB aligned already: kept where the kernel put it");
  cr_assert_eq(r.reserved, 4 * MiB);
  uintptr_t raw2 = FAKE_BASE + 3 * GiB + 2 * MiB;
  uintptr_t s2[] = { raw2, raw2 };
  script_maps(2, s2);
  cr_assert_eq(region_reserve(&r, GiB, 4096, HP_REGION_THP), 0);
  cr_assert_eq((uintptr_t)r.base & (GiB - 1), 0);
  cr_assert_eq(r.reserved, GiB);
}

/* ================================================================ decommit */

Test(region, decommit_rounds_to_whole_huge_pages) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 8 * MiB), 0);
  uintptr_t b = (uintptr_t)r.base;
  size_t n0 = fk.n;
  region_decommit(&r, 3 * MiB);
  cr_assert_eq(r.committed, 4 * MiB, "3 MiB rounds up: the page at 2 MiB stays whole");
  expect_call(n0, OP_ADVISE, b + 4 * MiB, 4 * MiB, HP_ADV_DONTNEED);
  expect_call(n0 + 1, OP_PROTECT, b + 4 * MiB, 4 * MiB, HP_PROT_NONE);
  n0 = fk.n;
  region_decommit(&r, 2 * MiB + 1);
  cr_assert_eq(r.committed, 4 * MiB);
  cr_assert_eq(fk.n, n0, "nothing below a whole page");
  region_decommit(&r, 1);
  cr_assert_eq(r.committed, 2 * MiB);
  for (size_t i = 0; i < fk.n; i++) {
    if (fk.calls[i].op == OP_ADVISE && fk.calls[i].arg == HP_ADV_DONTNEED) {
      cr_assert_eq((fk.calls[i].addr - b) % (2 * MiB), 0);
      cr_assert_eq(fk.calls[i].len % (2 * MiB), 0);
    }
  }
}

Test(region, decommit_base_pages) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  cr_assert_eq(region_commit(&r, 64 * KiB), 0);
  region_decommit(&r, 5000);
  cr_assert_eq(r.committed, 8192);
  expect_call(fk.n - 2, OP_ADVISE, (uintptr_t)r.base + 8192, 64 * KiB - 8192, HP_ADV_DONTNEED);
}

Test(region, hugetlb_decommit_refused_keeps_pages) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(region_commit(&r, 8 * MiB), 0);
  fk.dontneed_fails = true;
  size_t n0 = fk.n;
  region_decommit(&r, 0);
  cr_assert_eq(r.committed, 8 * MiB, "pages the kernel would not drop stay committed");
  cr_assert_eq(count_calls(OP_PROTECT, HP_PROT_NONE), 0);
  cr_assert_eq(fk.n, n0 + 1);
}

/* region_discard: the whole pages of the region's page size strictly
   inside [lo, hi) go back with DONTNEED; nothing else is called.  */
Test(region, discard_gives_back_whole_pages_inside) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 16 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 16 * MiB), 0);
  uintptr_t b = (uintptr_t)r.base;
  size_t n0 = fk.n;
  cr_assert(region_discard(&r, b + MiB, b + 7 * MiB + 5));
  expect_call(n0, OP_ADVISE, b + 2 * MiB, 4 * MiB, HP_ADV_DONTNEED);
  cr_assert_eq(fk.n, n0 + 1);
  cr_assert_eq(r.committed, 16 * MiB, "a discard keeps the pages committed");
  cr_assert_not(region_discard(&r, b + MiB, b + 3 * MiB), "no whole huge page inside");
  cr_assert_eq(fk.n, n0 + 1, "and no call for it");
  fk.dontneed_fails = true;
  script_maps(1, (uintptr_t[]){ FAIL_MAP });
  cr_assert_not(region_discard(&r, b, b + 4 * MiB), "the kernel refused DONTNEED and the fresh mapping");
}

Test(region, discard_keeps_hugetlb_pages) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_HUGETLB), 0);
  cr_assert_eq(region_commit(&r, 8 * MiB), 0);
  size_t n0 = fk.n;
  cr_assert_not(region_discard(&r, (uintptr_t)r.base, (uintptr_t)r.base + 8 * MiB));
  cr_assert_eq(fk.n, n0, "a dropped hugetlb page might not come back: no call");
}

/* region_hugify: a base region becomes THP (advised whole, what it holds
   collapsed in whole huge pages); anything else is left alone.  */
Test(region, hugify_advises_and_collapses_a_base_region) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 16 * MiB, 2 * MiB, HP_REGION_BASE), 0);
  cr_assert_eq(region_commit(&r, 5 * MiB), 0);
  uintptr_t b = (uintptr_t)r.base;
  size_t n0 = fk.n;
  errno = 1234;
  cr_assert(region_hugify(&r));
  cr_assert_eq(errno, 1234, "errno kept");
  cr_assert_eq(r.kind, HP_REGION_THP);
  cr_assert_eq(r.page, 2 * MiB);
  expect_call(n0, OP_ADVISE, b, 16 * MiB, HP_ADV_HUGEPAGE);
  expect_call(n0 + 1, OP_ADVISE, b, 4 * MiB, HP_ADV_COLLAPSE);
  cr_assert_not(region_hugify(&r), "already THP");
  cr_assert_eq(fk.n, n0 + 2);
}

Test(region, hugify_refused_stays_base) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 16 * MiB, 2 * MiB, HP_REGION_BASE), 0);
  fk.refuse_hugepage = true;
  cr_assert_not(region_hugify(&r));
  cr_assert_eq(r.kind, HP_REGION_BASE);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_COLLAPSE), 0);
  fake_kernel(0, 0, 0);
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  size_t n0 = fk.n;
  cr_assert_not(region_hugify(&r), "no THP on this machine");
  cr_assert_eq(fk.n, n0);
}

/* region_remap_chunk: in place first; moving only when allowed.  */
Test(region, remap_chunk_in_place_then_moving) {
  fake_kernel(0, 0, 0);
  void *base = (void *)FAKE_BASE;
  size_t n0 = fk.n;
  errno = 1234;
  cr_assert_null(region_remap_chunk(base, MiB, 2 * MiB, true));
  cr_assert_eq(errno, 1234);
  expect_call(n0, OP_REMAP, FAKE_BASE, 2 * MiB, 0);
  expect_call(n0 + 1, OP_REMAP, FAKE_BASE, 2 * MiB, 1);
  n0 = fk.n;
  cr_assert_null(region_remap_chunk(base, MiB, 2 * MiB, false));
  cr_assert_eq(fk.n, n0 + 1, "not allowed to move: one call, in place");
}

Test(region, release_unmaps_whole_reservation) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 6 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(region_commit(&r, 2 * MiB), 0);
  void *base = r.base;
  region_release(&r);
  expect_call(fk.n - 2, OP_UNMAP, (uintptr_t)base, 6 * MiB, -1);
  expect_call(fk.n - 1, OP_UNMAP, (uintptr_t)base - 4096, 4096, -1);
  cr_assert_eq(r.reserved, 0);
  cr_assert_eq(r.committed, 0);
  cr_assert_not(r.guard);
}

Test(region, heap_goes_without_guard_when_the_page_below_is_taken) {
  fake_kernel(1, 2 * MiB, 0);
  uintptr_t s[] = { FAKE_BASE + 2 * GiB, FAIL_MAP };
  script_maps(2, s);
  struct region r;
  cr_assert_eq(region_reserve(&r, 4 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq((uintptr_t)r.base, FAKE_BASE + 2 * GiB);
  cr_assert_not(r.guard);
  size_t n0 = fk.n;
  region_release(&r);
  cr_assert_eq(fk.n, n0 + 1, "only the region is unmapped, never the neighbour's page");
  expect_call(n0, OP_UNMAP, FAKE_BASE + 2 * GiB, 4 * MiB, -1);
}

Test(region, guard_kept_out_of_the_next_heap) {
  /* heaps are placed right below the lowest one: below its guard */
  fake_kernel(1, 2 * MiB, 0);
  struct region a, b;
  cr_assert_eq(region_reserve(&a, 64 * MiB, 64 * MiB, HP_REGION_THP), 0);
  cr_assert(a.guard);
  cr_assert_eq(region_reserve(&b, 64 * MiB, 64 * MiB, HP_REGION_THP), 0);
  cr_assert_leq((uintptr_t)b.base + b.reserved, (uintptr_t)a.base - 4096);
  cr_assert(b.guard);
}

/* ================================================================ mapped chunks */

Test(region, map_chunk_rounds_when_waste_is_small) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(10);
  size_t len = 4 * MiB - 100 * KiB; /* 2.5% waste */
  enum hp_region_kind kind;
  void *p = region_map_chunk(&len, &kind);
  cr_assert_not_null(p);
  cr_assert_eq(kind, HP_REGION_THP);
  cr_assert_eq(len, 4 * MiB);
  cr_assert_eq((uintptr_t)p & (2 * MiB - 1), 0);
  cr_assert_geq(find_call(0, OP_ADVISE, HP_ADV_HUGEPAGE), 0);
  cr_assert_eq(fk.calls[find_call(0, OP_ADVISE, HP_ADV_HUGEPAGE)].addr, (uintptr_t)p);
}

Test(region, map_chunk_stays_base_when_waste_is_large) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(10);
  size_t len = 2 * MiB + 512 * KiB + 1; /* 4 MiB would waste ~60% */
  enum hp_region_kind kind;
  void *p = region_map_chunk(&len, &kind);
  cr_assert_not_null(p);
  cr_assert_eq(kind, HP_REGION_BASE);
  cr_assert_eq(len, 2 * MiB + 512 * KiB + 4096, "base pages: rounded to the base page only");
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 0);
}

Test(region, map_chunk_waste_boundary) {
  fake_kernel(1, 2 * MiB, 0);
  set_waste(0);
  size_t len = 4 * MiB;
  enum hp_region_kind kind;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_THP, "an exact multiple wastes nothing");
  len = 4 * MiB - 4096;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_BASE, "pct 0: any waste is too much");
  cr_assert_eq(len, 4 * MiB - 4096);
  /* 25%: 3 MiB -> 4 MiB wastes 1/3 of the request: no; 3.5 MiB -> 4 MiB: yes */
  set_waste(25);
  len = 3 * MiB;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_BASE);
  len = 3 * MiB + 512 * KiB;
  cr_assert_not_null(region_map_chunk(&len, &kind));
  cr_assert_eq(kind, HP_REGION_THP);
  cr_assert_eq(len, 4 * MiB);
}

Test(region, map_chunk_hugetlb_and_fallback) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  set_waste(10);
  size_t len = 4 * MiB - 64 * KiB;
  enum hp_region_kind kind;
  void *p = region_map_chunk(&len, &kind);
  cr_assert_not_null(p);
  cr_assert_eq(kind, HP_REGION_HUGETLB);
  cr_assert_eq(len, 4 * MiB);
  cr_assert_eq(fk.calls[0].flags & HP_MAP_HUGETLB, HP_MAP_HUGETLB);
  cr_assert_eq(fk.calls[0].huge, 2 * MiB);
  cr_assert_eq(fk.calls[0].arg, HP_PROT_RW);
  /* the pool runs dry: THP instead, counted */
  fk.hugetlb_fail_all = true;
  len = 4 * MiB - 64 * KiB;
  p = region_map_chunk(&len, &kind);
  cr_assert_not_null(p);
  cr_assert_eq(kind, HP_REGION_THP);
  cr_assert_eq(len, 4 * MiB);
  cr_assert_eq(atomic_load(&region_fallbacks.hugetlb), 1);
}

Test(region, map_chunk_failure_is_enomem) {
  fake_kernel(0, 0, 0);
  uintptr_t s[] = { FAIL_MAP };
  script_maps(1, s);
  size_t len = MiB;
  enum hp_region_kind kind;
  errno = 0;
  cr_assert_null(region_map_chunk(&len, &kind));
  cr_assert_eq(errno, ENOMEM);
}

/* ================================================================ through the allocator, real kernel */

static bool thp_available(void) {
  char buf[128] = { 0 };
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, "[never]") == NULL && (strstr(buf, "[madvise]") || strstr(buf, "[always]"));
}

/* Record the real kernel's calls in mode 1: the heap is advised before its
   first byte is committed, and trimming releases whole huge pages only.  */
Test(region, thp_heap_keeps_huge_pages_whole) {
  if (!thp_available()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  fake_kernel(1, 2 * MiB, 0);
  fk.real = true;
  hp_placement.align = GiB;
  cr_assert_eq(hpt_mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
  cr_assert_eq(hpt_mallopt(M_TRIM_THRESHOLD, 2 << 20), 1);
  cr_assert_eq(hpt_mallopt(M_TOP_PAD, 0), 1);
  void *small = hpt_malloc(100);
  char *p = hpt_malloc(20 * MiB + 12345);
  cr_assert(small && p);
  memset(p, 1, 20 * MiB);
  struct heap *h = main_arena.heap;
  cr_assert_eq(h->reg.kind, HP_REGION_THP);
  long adv = find_call(0, OP_ADVISE, HP_ADV_HUGEPAGE);
  long rw = find_call(0, OP_PROTECT, HP_PROT_RW);
  cr_assert(adv >= 0 && rw >= 0 && adv < rw, "MADV_HUGEPAGE before the first commit");
  cr_assert_eq(h->reg.committed % (2 * MiB), 0);
  size_t n0 = fk.n;
  hpt_free(p);
  hpt_malloc_trim(0);
  size_t dontneed = 0;
  for (size_t i = n0; i < fk.n; i++) {
    const struct call *c = &fk.calls[i];
    if (c->op != OP_ADVISE || c->arg != HP_ADV_DONTNEED) continue;
    dontneed++;
    cr_assert_eq((c->addr - (uintptr_t)h->reg.base) % (2 * MiB), 0, "DONTNEED splits a huge page at %#lx",
                 (unsigned long)c->addr);
    cr_assert_eq(c->len % (2 * MiB), 0, "DONTNEED of %#zx bytes", c->len);
  }
  cr_assert_gt(dontneed, 0, "the free 20 MiB was given back");
  cr_assert_eq(h->reg.committed % (2 * MiB), 0);
  cr_assert_lt(h->reg.committed, 8 * MiB);
  cr_assert_eq(hpmalloc_check_heap(), 0);
  hpt_free(small);
}

/* A thread arena that grows past its first heap: the first heap starts
   lazily and collapses its first huge page, once, with no arena lock held;
   every later heap commits whole huge pages from the start.  */
static void *fill_two_heaps(void *arg) {
  enum { BLK = 100 * 1024, N = (70 << 20) / BLK };
  void **v = arg;
  for (int i = 0; i < N; i++) v[i] = hpt_malloc(BLK);
  for (int i = 0; i < N; i++) hpt_free(v[i]);
  return NULL;
}

Test(region, thread_arena_second_heap_starts_on_huge_pages) {
  if (!thp_available()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  fake_kernel(1, 2 * MiB, 0);
  fk.real = true;
  cr_assert_eq(mp.heap_max, 64 * MiB);
  static void *v[(70 << 20) / (100 * 1024)];
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, fill_two_heaps, v), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  /* a heap's first commit starts at its base, aligned to heap_max */
  size_t heaps = 0, collapses = count_calls(OP_ADVISE, HP_ADV_COLLAPSE);
  uintptr_t first = 0;
  for (size_t i = 0; i < fk.n; i++) {
    const struct call *c = &fk.calls[i];
    if (c->op == OP_ADVISE && c->arg == HP_ADV_COLLAPSE) {
      /* the first heap's first two pages, each committed in part */
      if (!first) first = c->addr - c->addr % mp.heap_max;
      cr_assert_eq(c->addr - c->addr % mp.heap_max, first, "only the first heap collapses");
      cr_assert_lt(c->addr % mp.heap_max, 4 * MiB, "only its first two huge pages");
    }
    if (c->op != OP_PROTECT || c->arg != HP_PROT_RW || c->addr % mp.heap_max) continue;
    heaps++;
    if (heaps > 1) cr_assert_geq(c->len, 2 * MiB, "heap %zu's first commit is a whole huge page", heaps);
  }
  cr_assert_geq(heaps, 2, "the thread's arena took a second heap");
  cr_assert_eq(collapses, 2, "the first heap collapsed its first two pages (%zu collapses)", collapses);
  cr_assert_not(fk.collapse_under_lock, "and not under an arena lock");
}

/* mode 2 with a dry pool: MAP_HUGETLB|MAP_NORESERVE succeeds, but every
   MADV_POPULATE_WRITE fails.  Heaps must fall back to THP, not fail.  */
static void dry_pool(void) {
  fake_kernel(2, 2 * MiB, 2 * MiB);
  fk.real = true;
  fk.emulate_hugetlb = true;
  fk.populate_ok = 0;
}

Test(region, dry_hugetlb_pool_main_heap_falls_back) {
  dry_pool();
  char *p = hpt_malloc(100);
  cr_assert_not_null(p);
  memset(p, 1, 100);
  cr_assert_not_null(main_arena.heap);
  cr_assert_neq(main_arena.heap->reg.kind, HP_REGION_HUGETLB);
  cr_assert_geq(atomic_load(&region_fallbacks.hugetlb), 1);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

struct thread_seen {
  struct arena *ar;
  int kind;
  void *p;
};

static void *thread_alloc(void *arg) {
  struct thread_seen *s = arg;
  s->p = hpt_malloc(100);
  s->ar = hp_self.arena;
  s->kind = s->ar && s->ar->heap ? (int)s->ar->heap->reg.kind : -1;
  return NULL;
}

/* The first thread arena made while the pool is dry: its heap is reserved
   with MAP_HUGETLB, populating it fails, and the heap must then be made of
   THP (or base) pages; the thread must not be left without an arena.  */
Test(region, dry_hugetlb_pool_thread_arena_falls_back) {
  dry_pool();
  struct thread_seen s = { 0 };
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, thread_alloc, &s), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  cr_assert_not_null(s.p);
  cr_assert_geq(count_calls(OP_ADVISE, HP_ADV_POPULATE_WRITE), 1, "the hugetlb heap was tried");
  cr_assert_geq(atomic_load(&region_fallbacks.hugetlb), 1);
  cr_assert_neq(s.ar, &main_arena, "the thread got no arena of its own: heap_new did not fall back from hugetlb");
  cr_assert_eq(s.kind, HP_REGION_THP);
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

/* Sum AnonHugePages of the smaps entries overlapping [lo, hi).  -1 if the
   file cannot be read.  */
static long anon_huge_kb(uintptr_t lo, uintptr_t hi) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  bool in = false;
  long kb = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    long v;
    if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = a < hi && b > lo;
    } else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1) {
      kb += v;
    }
  }
  fclose(f);
  return kb;
}

/* Live, real kernel: needs THP in madvise or always mode, and enough free
   contiguous memory for two huge pages (true on the project's machine).  */
Test(region, live_thp_region_gets_huge_pages) {
  if (!thp_available()) cr_skip_test("THP is not available (transparent_hugepage/enabled)");
  hp_ensure_init();
  struct region_policy pol = *region_get_policy();
  pol.mode = 1;
  pol.thp_size = 2 * MiB;
  region_set_policy(&pol);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  cr_assert_eq(r.kind, HP_REGION_THP, "MADV_HUGEPAGE accepted");
  cr_assert_eq((uintptr_t)r.base & (2 * MiB - 1), 0);
  cr_assert_eq(region_commit(&r, 4 * MiB), 0);
  cr_assert_eq(r.committed, 4 * MiB);
  for (size_t off = 0; off < 4 * MiB; off += 4096) r.base[off] = (char)off;
  long kb = anon_huge_kb((uintptr_t)r.base, (uintptr_t)r.base + 4 * MiB);
  cr_assert_geq(kb, 2048, "AnonHugePages %ld kB in the committed 4 MiB", kb);
  region_release(&r);
}

/* ================================================================ refused calls (seccomp) */

/* MADV_DONTNEED refused (EINVAL here; EPERM under a seccomp filter): the
   pages go back by a fresh inaccessible mapping over them, and only then
   does the region count them as given back.  */
Test(region, decommit_dontneed_refused_maps_fresh_pages) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  cr_assert_eq(region_commit(&r, 64 * KiB), 0);
  fk.dontneed_fails = true;
  size_t n0 = fk.n;
  region_decommit(&r, 8192);
  cr_assert_eq(r.committed, 8192);
  expect_call(n0, OP_ADVISE, (uintptr_t)r.base + 8192, 64 * KiB - 8192, HP_ADV_DONTNEED);
  expect_call(n0 + 1, OP_MAP, (uintptr_t)r.base + 8192, 64 * KiB - 8192, HP_PROT_NONE);
  cr_assert_eq(fk.calls[n0 + 1].flags, HP_MAP_FIXED);
  cr_assert_eq(fk.n, n0 + 2, "no mprotect: the fresh pages are inaccessible already");
}

Test(region, decommit_refused_and_remap_failing_keeps_committed) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  cr_assert_eq(region_commit(&r, 64 * KiB), 0);
  fk.dontneed_fails = true;
  script_maps(1, (uintptr_t[]){ FAIL_MAP });
  errno = 1234;
  region_decommit(&r, 0);
  cr_assert_eq(r.committed, 64 * KiB, "the bytes are still there: they stay committed and counted");
  cr_assert_eq(count_calls(OP_PROTECT, HP_PROT_NONE), 0);
  cr_assert_eq(errno, 1234);
}

Test(region, decommit_refused_on_thp_advises_the_fresh_pages) {
  fake_kernel(1, 2 * MiB, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, 8 * MiB, 0, HP_REGION_THP), 0);
  r.lazy = false;
  cr_assert_eq(region_commit(&r, 8 * MiB), 0);
  fk.dontneed_fails = true;
  size_t n0 = fk.n;
  region_decommit(&r, 4 * MiB);
  cr_assert_eq(r.committed, 4 * MiB);
  expect_call(n0 + 1, OP_MAP, (uintptr_t)r.base + 4 * MiB, 4 * MiB, HP_PROT_NONE);
  expect_call(n0 + 2, OP_ADVISE, (uintptr_t)r.base + 4 * MiB, 4 * MiB, HP_ADV_HUGEPAGE);
}

Test(region, discard_refused_maps_fresh_pages_or_reports_nothing_released) {
  fake_kernel(0, 0, 0);
  struct region r;
  cr_assert_eq(region_reserve(&r, MiB, 0, HP_REGION_BASE), 0);
  cr_assert_eq(region_commit(&r, 64 * KiB), 0);
  fk.dontneed_fails = true;
  uintptr_t b = (uintptr_t)r.base;
  size_t n0 = fk.n;
  cr_assert(region_discard(&r, b + 100, b + 5 * 4096 + 7));
  expect_call(n0 + 1, OP_MAP, b + 4096, 4 * 4096, HP_PROT_RW);
  cr_assert_eq(fk.calls[n0 + 1].flags, HP_MAP_FIXED);
  script_maps(1, (uintptr_t[]){ FAIL_MAP });
  cr_assert_not(region_discard(&r, b + 100, b + 5 * 4096 + 7), "nothing went back: not counted as released");
  cr_assert_eq(r.committed, 64 * KiB);
}

/* ---------------------------------------------------------------- asking the kernel when /sys is unreadable */

Test(region, probe_thp_advises_a_probe_mapping) {
  fake_kernel(0, 0, 0);
  errno = 77;
  cr_assert_eq(region_probe_thp(4096), 0);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 1);
  cr_assert_eq(count_calls(OP_UNMAP, -1), 1, "the probe mapping goes again");
  fk.refuse_hugepage = true;
  cr_assert_eq(region_probe_thp(4096), EINVAL);
  cr_assert_eq(count_calls(OP_UNMAP, -1), 2);
  cr_assert_eq(errno, 77);
}

Test(region, probe_hugetlb_maps_one_page_of_the_size) {
  fake_kernel(0, 0, 0);
  cr_assert_eq(region_probe_hugetlb(GiB), 0);
  expect_call(0, OP_MAP, 0, GiB, HP_PROT_RW);
  cr_assert_eq(fk.calls[0].flags, HP_MAP_HUGETLB | HP_MAP_NORESERVE);
  cr_assert_eq(fk.calls[0].huge, GiB);
  cr_assert_eq(count_calls(OP_UNMAP, -1), 1);
  fk.hugetlb_fail_all = true;
  cr_assert_eq(region_probe_hugetlb(2 * MiB), ENOMEM);
}

/* Start-up with /sys unreadable: mode 1 asks MADV_HUGEPAGE, mode 2
   MAP_HUGETLB; the answers decide, and the reason says so.  */
static const struct region_policy *resolve_with_unknown_sys(const char *tunables) {
  hp_sysinfo.thp = HP_THP_UNKNOWN;
  hp_sysinfo.thp_pmd_size = 2 * MiB;
  hp_sysinfo.hugetlb_unknown = 1;
  hp_sysinfo.n_hugetlb = 0;
  hp_sysinfo.hugetlb_default = 0;
  struct hp_tunable_values tv;
  hp_tunables_parse(&tv, tunables, NULL, 0);
  hp_apply_tunables(&tv);
  return region_get_policy();
}

Test(region, unknown_sys_thp_accepted) {
  fake_kernel(0, 0, 0);
  const struct region_policy *p = resolve_with_unknown_sys("glibc.malloc.hugetlb=1");
  cr_assert_eq(p->mode, 1);
  cr_assert_eq(p->thp_size, 2 * MiB);
  cr_assert(strstr(mp.mode_reason, "/sys unreadable") != NULL, "%s", mp.mode_reason);
  cr_assert_eq(count_calls(OP_ADVISE, HP_ADV_HUGEPAGE), 1);
}

Test(region, unknown_sys_thp_refused_is_off) {
  fake_kernel(0, 0, 0);
  fk.refuse_hugepage = true;
  const struct region_policy *p = resolve_with_unknown_sys("glibc.malloc.hugetlb=1");
  cr_assert_eq(p->mode, 0);
  cr_assert(strstr(mp.mode_reason, "EINVAL: no THP") != NULL, "%s", mp.mode_reason);
}

Test(region, unknown_sys_mode_zero_asks_nothing) {
  fake_kernel(0, 0, 0);
  cr_assert_eq(resolve_with_unknown_sys("glibc.malloc.hugetlb=0")->mode, 0);
  cr_assert_eq(fk.n, 0, "no probe in mode 0");
}

Test(region, unknown_sys_hugetlb_by_map_hugetlb) {
  fake_kernel(0, 0, 0);
  const struct region_policy *p = resolve_with_unknown_sys("glibc.malloc.hugetlb=2");
  cr_assert_eq(p->mode, 2);
  cr_assert_eq(p->hugetlb_size, 2 * MiB, "the architecture's PMD size");
  cr_assert(strstr(mp.mode_reason, "MAP_HUGETLB") != NULL, "%s", mp.mode_reason);
  fake_kernel(0, 0, 0);
  fk.hugetlb_fail_all = true;
  p = resolve_with_unknown_sys("glibc.malloc.hugetlb=2");
  cr_assert_eq(p->mode, 1, "no hugetlb pages: THP, which the kernel accepted");
  p = resolve_with_unknown_sys("glibc.malloc.hugetlb=1073741824");
  cr_assert_eq(p->mode, 0);
  cr_assert(strstr(mp.mode_reason, "refused") != NULL, "%s", mp.mode_reason);
}
