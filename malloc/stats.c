/* SPDX-License-Identifier: MIT */
/* stats.c: mallinfo, mallinfo2, malloc_stats, malloc_info,
 * hpmalloc_stats and the report at exit (hpmalloc.stats).  Counters are
 * gathered under each arena's lock into a plain struct, and printed only
 * after the lock is dropped (printing may allocate).  What the kernel
 * backs with huge pages is measured by backed.c, with no lock held.  */
#include "stats.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "arena.h"
#include "backed.h"
#include "diag.h"
#include "mmapped.h"
#include "prefault.h"
#include "tcache.h"
#include "track.h"

_Static_assert(HPMALLOC_BACKED_UNKNOWN == HP_CENSUS_UNKNOWN && HPMALLOC_BACKED_PAGEMAP_SCAN == HP_CENSUS_PAGEMAP_SCAN &&
                   HPMALLOC_BACKED_SMAPS == HP_CENSUS_SMAPS,
               "hpmalloc.h's backed_source values are hp_sys.h's census values");

/* Per-bin figures for malloc_info.  */
struct bin_line {
  size_t from, to, total, count;
};

/* The chunks of ar's inbox (inbox.h), by fastbin: they are counted as
   the fastbins' are, free and small.  */
static void count_inbox(struct arena *ar, size_t *cnt, size_t *bytes) {
  bool lk = inbox_lock(ar);
  for (unsigned i = 0; i < ar->inbox.n; i++) {
    size_t sz = chunksize(ar->inbox.slot[i]);
    unsigned f = fastbin_index(sz);
    if (f >= NFASTBINS) continue; /* hpmalloc_check_heap says what is wrong */
    cnt[f]++;
    bytes[f] += sz;
  }
  inbox_unlock(ar, lk);
}

static void count_bins(struct arena *ar, struct hp_arena_stats *st, struct bin_line *lines, size_t *nlines) {
  size_t n = 0, in_cnt[NFASTBINS] = { 0 }, in_bytes[NFASTBINS] = { 0 };
  count_inbox(ar, in_cnt, in_bytes);
  for (unsigned i = 0; i < NFASTBINS; i++) {
    size_t cnt = in_cnt[i], bytes = in_bytes[i];
    for (struct chunk *c = ar->fastbins[i]; c; c = reveal_ptr(&c->fd, c->fd)) {
      cnt++;
      bytes += chunksize(c);
    }
    st->fast_count += cnt;
    st->fast_bytes += bytes;
    if (lines && cnt) lines[n++] = (struct bin_line){ ((size_t)i + 2) * 16 - 15, ((size_t)i + 2) * 16, bytes, cnt };
  }
  for (unsigned i = 1; i < NBINS; i++) {
    struct chunk *b = bin_at(ar, i);
    size_t cnt = 0, bytes = 0, lo = SIZE_MAX, hi = 0;
    for (struct chunk *c = b->fd; c != b; c = c->fd) {
      size_t sz = chunksize(c);
      cnt++;
      bytes += sz;
      if (sz < lo) lo = sz;
      if (sz > hi) hi = sz;
    }
    st->ordblks += cnt;
    st->free += bytes;
    if (lines && cnt)
      lines[n++] = (struct bin_line){ i == UNSORTED_BIN ? 0 : lo, i == UNSORTED_BIN ? i : hi, bytes, cnt };
  }
  if (nlines) *nlines = n;
}

static void collect(struct arena *ar, struct hp_arena_stats *st, struct bin_line *lines, size_t *nlines) {
  memset(st, 0, sizeof *st);
  bool lk = arena_lock(ar);
  vg_enter();
  count_bins(ar, st, lines, nlines);
  st->top = ar->heap ? chunksize(ar->top) : 0;
  st->ordblks += st->top ? 1 : 0;
  st->free += st->top + st->fast_bytes;
  st->system = ar->system_mem;
  st->inuse = st->system > st->free ? st->system - st->free : 0;
  st->thp = ar->bytes_thp;
  st->hugetlb = ar->bytes_hugetlb;
  st->heaps = ar->n_heaps;
  vg_leave();
  arena_unlock(ar, lk);
  vg_define(st, sizeof *st);
  if (lines && nlines) vg_define(lines, *nlines * sizeof *lines);
}

void arena_collect(struct arena *ar, struct hp_arena_stats *st) { collect(ar, st, NULL, NULL); }

/* Every arena summed, and every thread's cache: cached chunks are free
   chunks (the arenas count them in use).  */
struct totals {
  struct hp_arena_stats sum;
  size_t max_system;
  size_t cached_count, cached_bytes;
};

/* Add one arena's figures to a sum (top: only the main arena's counts,
   glibc's keepcost).  */
static void add_stats(struct hp_arena_stats *sum, const struct hp_arena_stats *st) {
  sum->system += st->system;
  sum->inuse += st->inuse;
  sum->free += st->free;
  sum->fast_count += st->fast_count;
  sum->fast_bytes += st->fast_bytes;
  sum->ordblks += st->ordblks;
  sum->thp += st->thp;
  sum->hugetlb += st->hugetlb;
  sum->heaps += st->heaps;
}

static void sum_all(struct totals *t) {
  memset(t, 0, sizeof *t);
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    struct hp_arena_stats st;
    arena_collect(ar, &st);
    add_stats(&t->sum, &st);
    t->max_system += ar->max_system_mem;
    if (ar == &main_arena) t->sum.top = st.top;
  }
  tcache_totals(&t->cached_count, &t->cached_bytes);
  if (t->cached_bytes > t->sum.inuse) t->cached_bytes = t->sum.inuse; /* snapshots of moving counts */
  t->sum.inuse -= t->cached_bytes;
  t->sum.free += t->cached_bytes;
}

struct mallinfo2 hp_mallinfo2(void) {
  hp_ensure_init();
  struct totals t;
  sum_all(&t);
  struct mallinfo2 mi = { 0 };
  mi.arena = t.sum.system;
  mi.ordblks = t.sum.ordblks;
  mi.smblks = t.sum.fast_count;
  mi.hblks = atomic_load(&mp.n_mmaps);
  mi.hblkhd = atomic_load(&mp.mmapped_mem);
  mi.usmblks = 0;
  mi.fsmblks = t.sum.fast_bytes; /* cached chunks are in fordblks, not in the fastbin fields */
  mi.uordblks = t.sum.inuse;
  mi.fordblks = t.sum.free;
  mi.keepcost = t.sum.top;
  return mi;
}

struct mallinfo hp_mallinfo(void) {
  struct mallinfo2 m2 = hp_mallinfo2();
  struct mallinfo m;
  /* glibc truncates to int, wrapping; do the same so old callers see what they always saw */
  m.arena = (int)m2.arena;
  m.ordblks = (int)m2.ordblks;
  m.smblks = (int)m2.smblks;
  m.hblks = (int)m2.hblks;
  m.hblkhd = (int)m2.hblkhd;
  m.usmblks = (int)m2.usmblks;
  m.fsmblks = (int)m2.fsmblks;
  m.uordblks = (int)m2.uordblks;
  m.fordblks = (int)m2.fordblks;
  m.keepcost = (int)m2.keepcost;
  return m;
}

/* The printers ignore what fprintf returns, as glibc's do: malloc_stats
   returns nothing and malloc_info returns 0; an output error stays in the
   stream's error flag for the caller to see.  */
// NOLINTBEGIN(cert-err33-c)
void hp_malloc_stats(void) {
  hp_ensure_init();
  /* not a cancellation point, as in glibc: print every line or none */
  int cancel_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  size_t system_total = 0, inuse_total = 0;
  int i = 0;
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar), i++) {
    struct hp_arena_stats st;
    arena_collect(ar, &st);
    fprintf(stderr, "Arena %d:\n", i);
    fprintf(stderr, "system bytes     = %10u\n", (unsigned int)st.system);
    fprintf(stderr, "in use bytes     = %10u\n", (unsigned int)st.inuse);
    system_total += st.system;
    inuse_total += st.inuse;
  }
  size_t mm = atomic_load(&mp.mmapped_mem), cached_count, cached_bytes;
  tcache_totals(&cached_count, &cached_bytes); /* free, though the arenas count them in use */
  inuse_total -= cached_bytes < inuse_total ? cached_bytes : inuse_total;
  fprintf(stderr, "Total (incl. mmap):\n");
  fprintf(stderr, "system bytes     = %10u\n", (unsigned int)(system_total + mm));
  fprintf(stderr, "in use bytes     = %10u\n", (unsigned int)(inuse_total + mm));
  fprintf(stderr, "max mmap regions = %10u\n", (unsigned int)atomic_load(&mp.max_n_mmaps));
  fprintf(stderr, "max mmap bytes   = %10lu\n", (unsigned long)atomic_load(&mp.max_mmapped_mem));
  pthread_setcancelstate(cancel_state, NULL);
}

/* ------------------------------------------------------------------ the report at exit */

/* hpmalloc.stats=1 (HPMALLOC_STATS=1) prints, at exit, a table a person
   reads, as jemalloc's stats_print does: per arena and in total, what the
   allocator holds, what it asked huge pages for and what the kernel backs
   with them.  It goes where diag.c says (the file hpmalloc.stats_file
   names, else stderr if descriptor 2 is still the file it was at
   start-up, else nowhere).  Each arena is gathered under its lock, then
   measured and printed with no lock held.  Lines go out whole with
   write(2): no stdio, which a program may have closed by then.  */

/* The descriptor the report goes to: set by hp_stats_report_fd, which
   runs once, at exit.  */
static int report_fd = -1;

enum { REPORT_LABEL = 10, REPORT_COL = 12, REPORT_COLS = 8 };
#define REPORT_NONE SIZE_MAX /* a figure a row does not have: "-" */

/* Bytes as a person reads them: "0", "512 B", "12.5 KiB", "200.3 MiB",
   "1.2 GiB" (tenths rounded down).  */
static void human(char *buf, size_t cap, size_t b) {
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  unsigned u = 0;
  while (u < 4 && b >> (10 * (u + 1)) != 0) u++;
  size_t whole = b >> (10 * u), rest = b - (whole << (10 * u));
  if (u == 0)
    snprintf(buf, cap, b ? "%zu B" : "0", whole);
  else
    snprintf(buf, cap, "%zu.%zu %s", whole, (size_t)((rest >> (10 * u - 10)) * 10 >> 10), units[u]);
}

/* One row: its label, then each figure right-aligned in its column
   ("?" for a backed figure the system could not measure).  */
static void report_row(const char *label, const size_t v[REPORT_COLS], bool backed_known) {
  char line[REPORT_LABEL + REPORT_COLS * REPORT_COL + 2], cell[48];
  size_t n = (size_t)snprintf(line, sizeof line, "%-*s", REPORT_LABEL, label);
  for (unsigned i = 0; i < REPORT_COLS && n < sizeof line - 1; i++) {
    bool backed = i == 5 || i == 7;
    if (v[i] == REPORT_NONE || (backed && !backed_known))
      snprintf(cell, sizeof cell, "%s", v[i] == REPORT_NONE ? "-" : "?");
    else
      human(cell, sizeof cell, v[i]);
    n += (size_t)snprintf(line + n, sizeof line - n, "%*s", REPORT_COL, cell);
  }
  if (n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  hp_os_write_fd(report_fd, line, n);
}

/* printf to the report's descriptor, one whole line of at most 255 bytes.  */
__attribute__((format(printf, 1, 2))) static void report_line(const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  hp_os_write_fd(report_fd, line, (size_t)n);
}

static void report_add(size_t sum[REPORT_COLS], const size_t v[REPORT_COLS]) {
  for (unsigned i = 0; i < REPORT_COLS; i++)
    if (v[i] != REPORT_NONE) sum[i] += v[i];
}

/* How backed bytes were measured: the name malloc_info gives it, and the
   words of the report at exit.  */
static const struct {
  const char *name, *words;
} census_text[] = {
  [HP_CENSUS_UNKNOWN] = { "unknown", "unknown: this system cannot tell (\"?\")" },
  [HP_CENSUS_PAGEMAP_SCAN] = { "pagemap_scan", "measured page by page (PAGEMAP_SCAN)" },
  [HP_CENSUS_SMAPS] = { "smaps", "measured mapping by mapping (/proc/self/smaps)" },
};

static unsigned census_index(enum hp_census how) {
  return (unsigned)how < sizeof census_text / sizeof census_text[0] ? (unsigned)how : HP_CENSUS_UNKNOWN;
}

/* The report's lines on what the kernel did for the heaps: the huge pages
   it refused, the commits and collapses and their time (milliseconds to a
   tenth, in integers: no floating point in the allocator's report).  */
static void report_kernel(void) {
  report_line("fallbacks: %zu from hugetlb (the pool ran dry), %zu from THP (MADV_HUGEPAGE refused)",
              atomic_load(&region_fallbacks.hugetlb), atomic_load(&region_fallbacks.thp));
  size_t commit_ns = atomic_load(&region_costs.commit_ns), collapse_ns = atomic_load(&region_costs.collapse_ns);
  report_line("kernel work: %zu commits in %zu.%zu ms, %zu collapses in %zu.%zu ms (%zu failed)",
              atomic_load(&region_costs.commits), commit_ns / 1000000, commit_ns / 100000 % 10,
              atomic_load(&region_costs.collapses), collapse_ns / 1000000, collapse_ns / 100000 % 10,
              atomic_load(&region_costs.collapse_failures));
}

void hp_stats_report(void) {
  struct diag_out o;
  if (!diag_open(&o)) return;
  hp_stats_report_fd(o.fd);
  diag_close(&o);
}

void hp_stats_report_fd(int fd) {
  report_fd = fd;
  hp_ensure_init();
  int cancel_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  const struct region_policy *pol = region_get_policy();
  size_t huge = region_mode_page();
  report_line("hpmalloc %s: statistics at exit of process %d", HPMALLOC_VERSION_STRING, (int)getpid());
  report_line("mode %d, huge page %zu KiB: %s", pol->mode, (huge ? huge : mp.page) >> 10, mp.mode_reason);
  report_line("placement: %s", hp_placement.desc);
  report_line("%-*s%*s%*s%*s%*s%*s%*s%*s%*s", REPORT_LABEL, "", REPORT_COL, "mapped", REPORT_COL, "in use", REPORT_COL,
              "free", REPORT_COL, "cached", REPORT_COL, "THP", REPORT_COL, "THP", REPORT_COL, "hugetlb", REPORT_COL,
              "hugetlb");
  report_line("%-*s%*s%*s%*s%*s", REPORT_LABEL + 4 * REPORT_COL, "", REPORT_COL, "advised", REPORT_COL, "backed",
              REPORT_COL, "committed", REPORT_COL, "backed");
  size_t total[REPORT_COLS] = { 0 };
  enum hp_census how = HP_CENSUS_PAGEMAP_SCAN;
  int i = 0;
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar), i++) {
    struct hp_arena_stats st;
    struct hp_backed hb;
    char label[24];
    arena_collect(ar, &st);
    enum hp_census h = backed_measure(ar, &hb, NULL);
    how = census_coarser(how, h);
    const size_t v[REPORT_COLS] = { st.system, st.inuse, st.free, REPORT_NONE, st.thp, hb.thp, st.hugetlb, hb.hugetlb };
    snprintf(label, sizeof label, "arena %d", i);
    report_row(label, v, h != HP_CENSUS_UNKNOWN);
    report_add(total, v);
  }
  struct hp_backed mb;
  enum hp_census h = backed_measure(NULL, NULL, &mb);
  how = census_coarser(how, h);
  size_t mm = atomic_load(&mp.mmapped_mem), cached_count, cached_bytes;
  const size_t mv[REPORT_COLS] = {
    mm, mm, REPORT_NONE, REPORT_NONE, atomic_load(&mp.mmapped_thp), mb.thp, atomic_load(&mp.mmapped_hugetlb), mb.hugetlb
  };
  report_row("mmapped", mv, h != HP_CENSUS_UNKNOWN);
  report_add(total, mv);
  tcache_totals(&cached_count, &cached_bytes); /* free, though the arenas count them in use */
  if (cached_bytes > total[1]) cached_bytes = total[1];
  total[1] -= cached_bytes;
  total[2] += cached_bytes;
  total[3] = cached_bytes;
  report_row("total", total, how != HP_CENSUS_UNKNOWN);
  report_line("huge pages backed: %s", census_text[census_index(how)].words);
  if (mmapped_unregistered())
    report_line("  %zu chunks mapped on their own were not measured (more than the registry holds)",
                mmapped_unregistered());
  report_kernel();
  report_line("an arena's \"in use\" includes the %zu blocks in the threads' caches; \"total\" counts them as cached",
              cached_count);
  pthread_setcancelstate(cancel_state, NULL);
}

static const char *kind_name(void) {
  switch (region_get_policy()->mode) {
  case 1: return "thp";
  case 2: return "hugetlb";
  default: return "none";
  }
}

/* One <heap> element: the arena's free chunks by bin, then its totals.  */
static void info_heap(FILE *fp, int nr, struct arena *ar, struct hp_arena_stats *st) {
  struct bin_line lines[NBINS + NFASTBINS];
  size_t nlines;
  collect(ar, st, lines, &nlines);
  fprintf(fp, "<heap nr=\"%d\">\n<sizes>\n", nr);
  for (size_t i = 0; i < nlines; i++) {
    const struct bin_line *l = &lines[i];
    if (l->from == 0 && l->to == UNSORTED_BIN)
      fprintf(fp, "  <unsorted from=\"0\" to=\"0\" total=\"%zu\" count=\"%zu\"/>\n", l->total, l->count);
    else
      fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n", l->from, l->to, l->total,
              l->count);
  }
  fputs("</sizes>\n", fp);
}

/* The totals glibc prints after each heap and after all of them; `mmap`
   only for the whole process.  */
static void info_totals(FILE *fp, const struct hp_arena_stats *st, size_t max_system, bool mmap) {
  fprintf(fp, "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n", st->fast_count, st->fast_bytes);
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", st->ordblks, st->free - st->fast_bytes);
  if (mmap)
    fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", atomic_load(&mp.n_mmaps),
            atomic_load(&mp.mmapped_mem));
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", st->system);
  fprintf(fp, "<system type=\"max\" size=\"%zu\"/>\n", max_system);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", st->system);
  fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", st->system);
}

/* hpmalloc's own element: the mode, why, the placement, bytes by kind,
   advised and backed (`heaps`: the heaps' backed bytes, measured per heap
   element; `how`: how they were).  */
static void info_hpmalloc(FILE *fp, const struct hp_arena_stats *sum, const struct hp_backed *heaps,
                          enum hp_census how) {
  struct hp_backed mm;
  how = census_coarser(how, backed_measure(NULL, NULL, &mm));
  fprintf(fp, "<hpmalloc version=\"%s\" mode=\"%d\" kind=\"%s\" pagesize=\"%zu\" hugepagesize=\"%zu\">\n",
          HPMALLOC_VERSION_STRING, region_get_policy()->mode, kind_name(), mp.page, region_mode_page());
  fprintf(fp, "  <reason>%s</reason>\n", mp.mode_reason);
  fprintf(fp, "  <placement align=\"%zu\" hint=\"0x%zx\" huge_hint=\"0x%zx\">%s</placement>\n", hp_placement.align,
          (size_t)hp_placement.hint, (size_t)hp_placement.huge_hint, hp_placement.desc);
  fprintf(fp, "  <bytes thp=\"%zu\" hugetlb=\"%zu\" mmap_thp=\"%zu\" mmap_hugetlb=\"%zu\"/>\n", sum->thp, sum->hugetlb,
          atomic_load(&mp.mmapped_thp), atomic_load(&mp.mmapped_hugetlb));
  if (how == HP_CENSUS_UNKNOWN) mm = (struct hp_backed){ 0, 0 };
  fprintf(fp,
          "  <backed source=\"%s\" thp=\"%zu\" hugetlb=\"%zu\" mmap_thp=\"%zu\" mmap_hugetlb=\"%zu\""
          " mmap_unmeasured=\"%zu\"/>\n",
          census_text[census_index(how)].name, how ? heaps->thp : 0, how ? heaps->hugetlb : 0, mm.thp, mm.hugetlb,
          mmapped_unregistered());
  fprintf(fp, "  <fallbacks hugetlb=\"%zu\" thp=\"%zu\"/>\n", atomic_load(&region_fallbacks.hugetlb),
          atomic_load(&region_fallbacks.thp));
  fprintf(
      fp,
      "  <costs commits=\"%zu\" commit_ns=\"%zu\" collapses=\"%zu\" collapse_failures=\"%zu\" collapse_ns=\"%zu\"/>\n",
      atomic_load(&region_costs.commits), atomic_load(&region_costs.commit_ns), atomic_load(&region_costs.collapses),
      atomic_load(&region_costs.collapse_failures), atomic_load(&region_costs.collapse_ns));
  fprintf(fp, "  <prefault pages=\"%zu\" requests=\"%zu\" dropped=\"%zu\" bytes=\"%zu\" ns=\"%zu\"/>\n",
          region_get_policy()->prefault, atomic_load(&prefault_counters.requests),
          atomic_load(&prefault_counters.dropped), atomic_load(&prefault_counters.bytes),
          atomic_load(&prefault_counters.ns));
  fputs("</hpmalloc>\n", fp);
}

int hp_malloc_info(int options, FILE *fp) {
  if (options != 0) return EINVAL; /* as glibc 2.36: the value, errno untouched */
  hp_ensure_init();
  struct hp_arena_stats sum = { 0 };
  struct hp_backed backed = { 0, 0 };
  enum hp_census how = HP_CENSUS_PAGEMAP_SCAN;
  size_t max_system = 0;
  int n = 0;
  fputs("<malloc version=\"1\">\n", fp);
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar), n++) {
    struct hp_arena_stats st;
    struct hp_backed hb;
    info_heap(fp, n, ar, &st);
    info_totals(fp, &st, ar->max_system_mem, false);
    how = census_coarser(how, backed_measure(ar, &hb, NULL));
    fprintf(fp, "<hugepages thp=\"%zu\" hugetlb=\"%zu\" heaps=\"%zu\" thp_backed=\"%zu\" hugetlb_backed=\"%zu\"/>\n",
            st.thp, st.hugetlb, st.heaps, hb.thp, hb.hugetlb);
    fputs("</heap>\n", fp);
    add_stats(&sum, &st);
    backed.thp += hb.thp;
    backed.hugetlb += hb.hugetlb;
    max_system += ar->max_system_mem;
  }
  info_totals(fp, &sum, max_system, true);
  size_t cached_count, cached_bytes;
  tcache_totals(&cached_count, &cached_bytes);
  fprintf(fp, "<total type=\"tcache\" count=\"%zu\" size=\"%zu\"/>\n", cached_count, cached_bytes);
  info_hpmalloc(fp, &sum, &backed, how);
  fputs("</malloc>\n", fp);
  return 0;
}
// NOLINTEND(cert-err33-c)

/* The struct as hpmalloc 0.1.0 had it: callers built then pass this size
   and get the fields it had.  */
static const size_t STATS_V1_SIZE = offsetof(struct hpmalloc_stats, bytes_cached);
/* A caller whose struct ends before the measured fields does not pay for
   the census.  */
static const size_t STATS_BACKED_OFFSET = offsetof(struct hpmalloc_stats, bytes_heap_thp_backed);

static void stats_backed(struct hpmalloc_stats *out) {
  struct hp_backed heaps, mm;
  out->backed_source = (int)backed_measure(NULL, &heaps, &mm);
  out->bytes_heap_thp_backed = heaps.thp;
  out->bytes_heap_hugetlb_backed = heaps.hugetlb;
  out->bytes_mmapped_thp_backed = mm.thp;
  out->bytes_mmapped_hugetlb_backed = mm.hugetlb;
  out->n_mmapped_unmeasured = mmapped_unregistered();
}

int hp_stats(struct hpmalloc_stats *dst, size_t size) {
  if (!dst || size < STATS_V1_SIZE) {
    errno = EINVAL;
    return -1;
  }
  hp_ensure_init();
  struct totals t;
  sum_all(&t);
  struct hpmalloc_stats st, *out = &st;
  memset(out, 0, sizeof *out);
  out->version = size < sizeof *out ? size : sizeof *out;
  size_t mm = atomic_load(&mp.mmapped_mem);
  out->bytes_heap = t.sum.system;
  out->bytes_mmapped = mm;
  out->bytes_mapped = t.sum.system + mm;
  out->bytes_free = t.sum.free;
  out->bytes_in_use = t.sum.inuse + mm;
  out->bytes_heap_thp = t.sum.thp;
  out->bytes_heap_hugetlb = t.sum.hugetlb;
  out->bytes_mmapped_thp = atomic_load(&mp.mmapped_thp);
  out->bytes_mmapped_hugetlb = atomic_load(&mp.mmapped_hugetlb);
  out->bytes_thp = out->bytes_heap_thp + out->bytes_mmapped_thp;
  out->bytes_hugetlb = out->bytes_heap_hugetlb + out->bytes_mmapped_hugetlb;
  out->fallbacks_hugetlb = atomic_load(&region_fallbacks.hugetlb);
  out->fallbacks_thp = atomic_load(&region_fallbacks.thp);
  out->n_arenas = atomic_load(&mp.n_arenas);
  out->n_heaps = t.sum.heaps;
  out->n_mmapped = atomic_load(&mp.n_mmaps);
  out->hugetlb_mode = region_get_policy()->mode;
  out->huge_page_size = region_mode_page();
  out->bytes_cached = t.cached_bytes;
  out->n_cached = t.cached_count;
  out->commits = atomic_load(&region_costs.commits);
  out->commit_ns = atomic_load(&region_costs.commit_ns);
  out->collapses = atomic_load(&region_costs.collapses);
  out->collapse_failures = atomic_load(&region_costs.collapse_failures);
  out->collapse_ns = atomic_load(&region_costs.collapse_ns);
  out->prefault_bytes = atomic_load(&prefault_counters.bytes);
  out->prefault_ns = atomic_load(&prefault_counters.ns);
  if (size > STATS_BACKED_OFFSET) stats_backed(out);
  memcpy(dst, out, out->version);
  return 0;
}
