/* SPDX-License-Identifier: MIT */
/* init.c: start-up (probe, tunables, huge-page mode) and mallopt.
 *
 * Initialisation runs on the first call into the allocator, in two phases:
 * phase 1 must not allocate (probe the system, parse tunables, set up the
 * main arena); once it is done the allocator works, and phase 2 registers
 * the fork and thread-exit handlers, which may allocate.  */
#include "params.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"
#include "arena.h"
#include "bins.h"
#include "diag.h"
#include "stats.h"
#include "top.h"
#include "track.h"
#include "tunables.h"

#ifdef HP_HAVE_VALGRIND
#include <valgrind/valgrind.h>
/* Under a valgrind tool that tracks heap blocks (memcheck, helgrind, drd,
   massif, dhat), switch to the marked, cache-less paths.  Under callgrind
   or cachegrind keep the normal paths, so instruction counts are real.
   valgrind names its tool in the preload it adds to LD_PRELOAD.  */
static bool on_valgrind(void) {
  if (!RUNNING_ON_VALGRIND) return false;
  static const char *const heap_tools[] = { "vgpreload_memcheck", "vgpreload_helgrind", "vgpreload_drd",
                                            "vgpreload_massif", "vgpreload_dhat" };
  for (char *const *e = hp_os_environ(); e && *e; e++) {
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) continue;
    for (size_t i = 0; i < sizeof heap_tools / sizeof heap_tools[0]; i++)
      if (strstr(*e, heap_tools[i])) return true;
  }
  return false;
}
#else
static bool on_valgrind(void) { return false; }
#endif

struct hp_params mp;
struct hp_sysinfo hp_sysinfo;
bool hp_vg;
_Atomic int hp_initialized;

static const size_t DEFAULT_HEAP_MAX = (size_t)64 << 20;

_Static_assert(TC_MAX_CHUNK - SIZE_SZ == 32760, "tunables.c's range for glibc.malloc.tcache_max");

static bool tunable_set(const struct hp_tunable_values *tv, enum hp_tunable_id id) { return tv->set_mask & (1u << id); }

static bool hugetlb_size_listed(size_t sz) {
  for (unsigned i = 0; i < hp_sysinfo.n_hugetlb; i++)
    if (hp_sysinfo.hugetlb_sizes[i] == sz) return true;
  return false;
}

/* Where /sys cannot be read, the kernel's own answers decide: a
   MAP_HUGETLB mapping of the size (region_probe_hugetlb), and
   MADV_HUGEPAGE on a probe mapping (region_probe_thp), asked once.  */
static bool hugetlb_offered(size_t sz) {
  if (!hp_sysinfo.hugetlb_unknown) return hugetlb_size_listed(sz);
  return sz > mp.page && is_pow2(sz) && region_probe_hugetlb(sz) == 0;
}

/* The size hugetlb=2 means: /proc/meminfo's Hugepagesize, else the
   architecture's PMD size where that is offered (or nothing is known),
   else the smallest listed.  */
static size_t hugetlb_default(void) {
  size_t pmd = hp_arch_default_pmd(&hp_sysinfo);
  if (hp_sysinfo.hugetlb_default) return hp_sysinfo.hugetlb_default;
  if (pmd && (hp_sysinfo.hugetlb_unknown || hugetlb_size_listed(pmd))) return pmd;
  return hp_sysinfo.n_hugetlb ? hp_sysinfo.hugetlb_sizes[0] : 0;
}

static int thp_refused = -1; /* the errno region_probe_thp answered; -1: not asked yet */

/* The THP page size, 0 without THP.  PROBE: where /sys cannot be read,
   ask the kernel (else take it as no THP).  */
static size_t thp_size(bool probe) {
  size_t pmd = hp_sysinfo.thp_pmd_size ? hp_sysinfo.thp_pmd_size : hp_arch_default_pmd(&hp_sysinfo);
  if (hp_sysinfo.thp == HP_THP_UNKNOWN && pmd) {
    if (probe && thp_refused < 0) thp_refused = region_probe_thp(mp.page);
    return thp_refused == 0 ? pmd : 0;
  }
  if (hp_sysinfo.thp != HP_THP_MADVISE && hp_sysinfo.thp != HP_THP_ALWAYS) return 0;
  return pmd;
}

/* hugetlb=1: THP when the kernel offers it.  */
static const char *thp_mode(struct region_policy *pol) {
  if (pol->thp_size) {
    pol->mode = 1;
    if (hp_sysinfo.thp == HP_THP_UNKNOWN)
      return "THP (/sys unreadable: the kernel accepted MADV_HUGEPAGE; PMD size from the architecture)";
    return hp_sysinfo.thp == HP_THP_ALWAYS ? "THP (enabled=always)" : "THP (enabled=madvise)";
  }
  switch (hp_sysinfo.thp) {
  case HP_THP_NEVER: return "hugetlb=1 asked, but THP is disabled (enabled=never): off";
  case HP_THP_UNKNOWN:
    return thp_refused == EINVAL ? "hugetlb=1 asked; /sys unreadable and MADV_HUGEPAGE refused (EINVAL: no THP): off"
                                 : "hugetlb=1 asked; /sys unreadable and MADV_HUGEPAGE refused: off";
  default: return "hugetlb=1 asked, but the kernel has no THP (no transparent_hugepage in /sys/kernel/mm): off";
  }
}

/* Resolve glibc.malloc.hugetlb (and hpmalloc.hugetlb_size) into pol's mode
   and page sizes.  Returns why it resolved so (for malloc_info and the
   verbose line).  */
static const char *resolve_mode(struct region_policy *pol, uint64_t req, uint64_t size_req) {
  pol->thp_size = thp_size(req != 0);
  pol->mode = 0;
  if (req == 0) return "hugetlb=0 (default)";
  if (req == 1) return thp_mode(pol);
  bool unknown = hp_sysinfo.hugetlb_unknown;
  if (req > 2 && !hugetlb_offered((size_t)req))
    return unknown ? "hugetlb=<size>: /sys unreadable and MAP_HUGETLB of that size refused, ignored"
                   : "hugetlb=<size>: size not offered by /sys/kernel/mm/hugepages, ignored";
  size_t hsz = req > 2 ? (size_t)req : 0; /* offered: checked above */
  if (!hsz && size_req && hugetlb_offered((size_t)size_req)) hsz = (size_t)size_req;
  if (!hsz && (hsz = hugetlb_default()) != 0 && !hugetlb_offered(hsz)) hsz = 0;
  if (hsz) {
    pol->mode = 2;
    pol->hugetlb_size = hsz;
    return unknown ? "hugetlbfs pages (/sys unreadable: the kernel accepted MAP_HUGETLB of the size); falls back to "
                     "THP, then base pages, when the pool runs dry"
                   : "hugetlbfs pages; falls back to THP, then base pages, when the pool runs dry";
  }
  if (pol->thp_size) {
    pol->mode = 1;
    return unknown ? "hugetlb=2 asked; /sys unreadable and MAP_HUGETLB refused: using THP"
                   : "hugetlb=2 asked, but no hugetlb page size is offered: using THP";
  }
  return "hugetlb=2 asked, but neither hugetlbfs nor THP is available";
}

static size_t next_pow2(size_t v) {
  size_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/* Keep huge pages whole: trim in huge-page units, and serve requests below
   one huge page from the (huge-backed) heap.  The top pad stays as set: the
   region layer rounds every commit to whole huge pages already (but a small
   lazy heap's, see region.c), and a pad of a whole huge page would make every
   new heap take one up front, 2 MiB for a thread holding a few kilobytes
   and a second gigabyte of the pool with 1 GiB pages.  */
static void round_for_huge(bool raise_threshold) {
  size_t huge = region_mode_page();
  if (!huge) return;
  mp.trim_threshold = align_up(mp.trim_threshold ? mp.trim_threshold : 1, huge);
  /* what a growing heap faulted in ahead is not trimmed by the next free */
  size_t ahead = (region_get_policy()->prefault + 1) * huge;
  if (region_get_policy()->prefault && mp.trim_threshold < ahead) mp.trim_threshold = ahead;
  if (raise_threshold && mp.mmap_threshold < huge) mp.mmap_threshold = huge;
}

void hp_apply_tunables(const struct hp_tunable_values *tv) {
  const uint64_t *v = tv->val;
  mp.top_pad = (size_t)v[HP_T_TOP_PAD];
  mp.trim_threshold = (size_t)v[HP_T_TRIM_THRESHOLD];
  mp.mmap_threshold = (size_t)v[HP_T_MMAP_THRESHOLD];
  mp.n_mmaps_max = (int)v[HP_T_MMAP_MAX];
  mp.no_dyn_threshold = tunable_set(tv, HP_T_TOP_PAD) || tunable_set(tv, HP_T_TRIM_THRESHOLD) ||
                        tunable_set(tv, HP_T_MMAP_THRESHOLD) || tunable_set(tv, HP_T_MMAP_MAX);
  mp.arena_test = (size_t)v[HP_T_ARENA_TEST];
  mp.arena_max = (size_t)v[HP_T_ARENA_MAX];
  mp.max_fast = ((size_t)v[HP_T_MXFAST] + SIZE_SZ) & ~(size_t)HP_ALIGN_MASK;
  mp.perturb = (int)v[HP_T_PERTURB];
  mp.tcache_max_bytes = (size_t)v[HP_T_TCACHE_MAX];
  mp.tcache_count = (size_t)v[HP_T_TCACHE_COUNT];
  mp.tcache_fixed = tunable_set(tv, HP_T_TCACHE_COUNT);
  mp.tcache_bytes = (size_t)v[HP_T_TCACHE_BYTES];
  tcache_configure();
  mp.tcache_unsorted_limit = (size_t)v[HP_T_TCACHE_UNSORTED_LIMIT];
  struct region_policy pol = { .page = mp.page,
                               .huge_waste_pct = (size_t)v[HP_T_HUGE_WASTE],
                               .prefault = (size_t)v[HP_T_PREFAULT] };
  mp.mode_reason = resolve_mode(&pol, v[HP_T_HUGETLB], v[HP_T_HUGETLB_SIZE]);
  region_set_policy(&pol);
  size_t huge = region_mode_page();
  mp.heap_max = DEFAULT_HEAP_MAX;
  if (huge && 4 * huge > mp.heap_max) mp.heap_max = next_pow2(4 * huge);
  round_for_huge(!tunable_set(tv, HP_T_MMAP_THRESHOLD));
}

/* ------------------------------------------------------------------ start-up */

static void verbose_line(void) {
  char buf[512];
  size_t huge = region_mode_page();
  int n = snprintf(buf, sizeof buf, "hpmalloc %s: hugetlb mode %d, page %zu KiB: %s; placement: %s\n",
                   HPMALLOC_VERSION_STRING, region_get_policy()->mode, (huge ? huge : mp.page) >> 10, mp.mode_reason,
                   hp_placement.desc);
  if (n > 0) diag_line(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Where an ignored tunable entry came from, for verbose_ignored.  */
struct tunables_source {
  const char *name; /* before " entry": "GLIBC_TUNABLES"; NULL for an alias */
};
static struct tunables_source builtin_source = { "hpmalloc_default_tunables" }, env_source = { "GLIBC_TUNABLES" };

/* hpmalloc.verbose: one line for each tunable entry start-up ignored,
   with why (CTX: its tunables_source).  */
static void verbose_ignored(void *ctx, const struct hp_tunable_issue *is) {
  const struct tunables_source *src = ctx;
  const char *name = is->alias ? NULL : src->name;
  char what[200], buf[300];
  hp_tunable_describe(is, what, sizeof what);
  int n = snprintf(buf, sizeof buf, "hpmalloc: ignored %s%s%s\n", name ? name : "", name ? " entry " : "", what);
  if (n > 0) diag_line(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The mode line, then every entry of the built-in string and of the
   environment (unless AT_SECURE made start-up ignore it) left out.  */
static void verbose_lines(void) {
  verbose_line();
  if (&hpmalloc_default_tunables) hp_tunables_check_string(hpmalloc_default_tunables, verbose_ignored, &builtin_source);
  if (!hp_os_secure()) hp_tunables_check_env(hp_os_environ(), verbose_ignored, &env_source);
}

static bool verbose;
static bool stats_at_exit;

static void init_phase1(void) {
  hp_sys_probe(&hp_sysinfo);
  hp_arch_placement(&hp_sysinfo, &hp_placement);
  mp.page = hp_os_page_size();
  struct hp_tunable_values tv;
  const char *builtin = &hpmalloc_default_tunables ? hpmalloc_default_tunables : NULL;
  hp_tunables_parse(&tv, builtin, hp_os_environ(), hp_os_secure());
  hp_apply_tunables(&tv);
  mp.max_request = largest_request();
  if (hp_placement.limit && hp_placement.limit - 1 < mp.max_request) mp.max_request = hp_placement.limit - 1;
  hp_vg = on_valgrind();
  hp_os_random(&hp_tcache_key, sizeof hp_tcache_key);
  hp_tcache_key |= 1; /* never 0, the value of a key-less entry */
  arena_init_struct(&main_arena, 0);
  main_arena.next = &main_arena;
  main_arena.attached_threads = 1;
  atomic_store_explicit(&mp.n_arenas, 1, memory_order_relaxed);
  hp_self.arena = &main_arena;
  tcache_thread_start(); /* which also derives hp_self.home from the arena */
  hp_tc_max_request = tcache_on() ? tidx2usize(mp.tcache_bins - 1) : 0;
  verbose = tv.val[HP_T_VERBOSE] != 0;
  /* naming a file asks for the report, unless hpmalloc.stats=0 says not */
  bool file = tunable_set(&tv, HP_T_STATS_FILE);
  stats_at_exit = tunable_set(&tv, HP_T_STATS) ? tv.val[HP_T_STATS] != 0 : file;
  diag_setup(verbose, file ? tv.text[HP_T_STATS_FILE] : NULL, file ? (size_t)tv.val[HP_T_STATS_FILE] : 0);
}

static void report_at_exit(void) { hp_stats_report(); }

void hp_init_slow(void) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&hp_initialized, &expected, 1)) {
    init_phase1();
    atomic_store_explicit(&hp_initialized, 2, memory_order_release);
    arena_fork_setup();
    if (verbose) verbose_lines();
    if (stats_at_exit && atexit(report_at_exit) != 0) { /* may allocate: phase 2 */
      static const char msg[] = "hpmalloc: hpmalloc.stats: cannot print the statistics at exit (atexit failed)\n";
      diag_line(msg, sizeof msg - 1);
    }
    return;
  }
  while (atomic_load_explicit(&hp_initialized, memory_order_acquire) != 2) sched_yield();
}

/* ------------------------------------------------------------------ switching mode at run time */

/* mallopt(HPMALLOC_M_HUGETLB, v): the mode for memory mapped from now on;
   switching to THP also advises and collapses the heaps already there.
   Fails (returns 0, nothing changed) for a page size the heaps' layout
   cannot take.  The caller holds the main arena's lock.  */
static int set_mode(int value) {
  if (value < 0) return 0;
  struct region_policy pol = *region_get_policy();
  const char *reason = resolve_mode(&pol, (uint64_t)value, pol.hugetlb_size);
  size_t huge = policy_huge_page(&pol);
  if (huge && 4 * huge > mp.heap_max) return 0;
  region_set_policy(&pol);
  mp.mode_reason = reason;
  round_for_huge(!mp.no_dyn_threshold);
  if (pol.mode == 0) return 1;
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    bool lk = ar != &main_arena && arena_lock(ar);
    arena_hugify(ar);
    arena_unlock(ar, lk);
  }
  return 1;
}

/* ------------------------------------------------------------------ mallopt */

int hp_mallopt(int param, int value) {
  hp_ensure_init();
  int ok = 1;
  bool lk = arena_lock(&main_arena);
  malloc_consolidate(&main_arena);
  switch (param) {
  case M_MXFAST:
    if (value < 0 || (size_t)value > MAX_FAST_SIZE) {
      ok = 0;
      break;
    }
    mp.max_fast = ((size_t)value + SIZE_SZ) & ~(size_t)HP_ALIGN_MASK;
    break;
  case M_TRIM_THRESHOLD:
    mp.trim_threshold = (size_t)(unsigned long)value;
    mp.no_dyn_threshold = true;
    break;
  case M_TOP_PAD:
    mp.top_pad = (size_t)(unsigned long)value;
    mp.no_dyn_threshold = true;
    break;
  case M_MMAP_THRESHOLD: /* glibc 2.36 takes any value */
    mp.mmap_threshold = (size_t)(unsigned long)value;
    mp.no_dyn_threshold = true;
    break;
  case M_MMAP_MAX:
    mp.n_mmaps_max = value;
    mp.no_dyn_threshold = true;
    break;
  case M_CHECK_ACTION: break; /* accepted and ignored, as by glibc 2.36 without its debug library */
  case M_PERTURB: mp.perturb = value; break;
  case M_ARENA_TEST:
    if (value > 0) mp.arena_test = (size_t)value;
    break;
  case M_ARENA_MAX:
    if (value > 0) mp.arena_max = (size_t)value;
    break;
  case HPMALLOC_M_HUGETLB: ok = set_mode(value); break;
  default: break; /* glibc 2.36 ignores an unknown parameter and returns 1 */
  }
  arena_unlock(&main_arena, lk);
  return ok;
}
