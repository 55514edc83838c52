/* SPDX-License-Identifier: MIT */
/* hpm analyze: operation counts, size and lifetime histograms, live bytes
   over time, per-thread counts and the allocating x freeing thread matrix;
   text, JSON and SVG.  MIT licence.  */
#include "args.h"
#include "hpm.h"
#include "stacks.h"
#include "stats.h"
#include "svg.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NSIZE 41      /* size buckets: 0, then [2^(k-1), 2^k) for k = 1..39, then >= 2^39 */
#define NLIFE 12      /* lifetime buckets, see life_label */
#define NTIME 200     /* live-bytes samples */
#define MATRIX_MAX 16 /* threads shown in the matrix */

struct analyze_opts {
  const char *file, *svgdir, *flame;
  int json, stacks, top, flame_by, largest;
};

static const struct arg_opt analyze_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct analyze_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct analyze_opts, json) },
  { .name = "--svg", .kind = ARG_STR, .off = offsetof(struct analyze_opts, svgdir), .meta = "DIR" },
  { .name = "--stacks", .kind = ARG_FLAG, .off = offsetof(struct analyze_opts, stacks) },
  { .name = "--top", .kind = ARG_INT, .off = offsetof(struct analyze_opts, top), .min = 1, .max = 100 },
  { .name = "--flame", .kind = ARG_STR, .off = offsetof(struct analyze_opts, flame), .meta = "OUT.svg" },
  { .name = "--flame-by",
    .kind = ARG_CHOICE,
    .off = offsetof(struct analyze_opts, flame_by),
    .meta = "peak|leaked|count|bytes" },
  { .name = "--largest", .kind = ARG_FLAG, .off = offsetof(struct analyze_opts, largest) },
  { 0 },
};

static const struct arg_cmd analyze_cmd = {
  .name = "analyze",
  .synopsis = "usage: hpm analyze FILE [--largest] [--json] [--svg DIR] [--stacks] [--top N]\n"
              "                   [--flame OUT.svg] [--flame-by peak|leaked|count|bytes]\n",
  .help = "Describes a trace: operation counts, size histogram (by count and by bytes),\n"
          "lifetime histogram, live bytes over time, the peak and when it happened,\n"
          "per-thread counts and the matrix of allocating vs freeing thread.\n"
          "  --json      one JSON object (keys: events, threads, peak_live_bytes,\n"
          "              peak_time_s, ops, size_histogram, lifetime_histogram,\n"
          "              live_bytes_over_time, per_thread, free_matrix, ...)\n"
          "  --svg DIR   write live_bytes.svg, sizes.svg and lifetimes.svg into DIR\n"
          "  --stacks    (a trace recorded with --stacks) the top call sites by bytes live at\n"
          "              the peak, bytes never freed and allocations, with file:line where\n"
          "              debug information has it (libdw) and their callers\n"
          "  --top N     call sites per table (1 to 100, default 10)\n"
          "  --flame OUT.svg  a flame graph of the call stacks, and the folded stacks in\n"
          "              OUT.folded; --flame-by: bytes live at the peak (default), bytes\n"
          "              never freed, allocations or bytes allocated\n"
          "  --largest   FILE names a recording: analyze its process with the largest peak\n",
  .args = analyze_args,
};

/* What analyze_run finds in a prepared trace.  */
struct analysis {
  uint64_t sc[NSIZE], sb[NSIZE]; /* objects and their bytes per size bucket */
  uint64_t lc[NLIFE];            /* objects per lifetime bucket */
  double tx[NTIME], ty[NTIME];   /* live bytes over time: end of each bin (s), the most live in it */
  uint32_t mt;                   /* threads in the matrix: the first MATRIX_MAX */
  uint64_t *mx;                  /* mt x mt frees, allocating thread (rows) x freeing thread; NULL: no memory */
  uint64_t cross, total_bytes, never;
};

static int size_bucket(uint64_t s) {
  if (s == 0) return 0;
  int b = 64 - __builtin_clzll(s); /* s in [2^(b-1), 2^b) */
  return b > NSIZE - 1 ? NSIZE - 1 : b;
}

static void size_label(int b, char *buf, size_t n) {
  static const char *u[] = { "", "K", "M", "G", "T" };
  /* Callers pass 32 bytes: every label fits.  */
  if (b == 0) {
    (void)snprintf(buf, n, "0");
    return;
  }
  uint64_t lo = 1ull << (b - 1);
  int k = 0;
  while (lo >= 1024 && lo % 1024 == 0 && k < 4) {
    lo /= 1024;
    k++;
  }
  (void)snprintf(buf, n, "%s%llu%s", b == NSIZE - 1 ? ">=" : "", (unsigned long long)lo, u[k]);
}

/* A size bucket's lower bound for people: "0", "32 B", "1 KiB".  */
static void size_tick(int b, char *buf, size_t n) {
  svg_tick_label(SVG_BYTES, b ? (double)(1ull << (b - 1)) : 0, buf, n);
}

static const uint64_t life_edges[NLIFE - 1] = {
  100,       1000,          10000,          100000,          1000000,        10000000,
  100000000, 1000000000ull, 10000000000ull, 100000000000ull, UINT64_MAX - 1,
};
static const char *const life_label[NLIFE] = {
  "<100ns", "<1us", "<10us", "<100us", "<1ms", "<10ms", "<100ms", "<1s", "<10s", "<100s", ">=100s", "never freed",
};

static int life_bucket(uint64_t ns, int freed) {
  if (!freed) return NLIFE - 1;
  for (int i = 0; i < NLIFE - 1; i++)
    if (ns < life_edges[i]) return i;
  return NLIFE - 2;
}

static void histograms(const struct prep *p, struct analysis *a) {
  for (uint32_t o = 0; o < p->nobj; o++) {
    const struct pobj *ob = &p->obj[o];
    int b = size_bucket(ob->size);
    a->sc[b]++;
    a->sb[b] += ob->size > UINT64_MAX - a->sb[b] ? 0 : ob->size;
    int freed = ob->free_thread != NONE32;
    a->lc[life_bucket(freed && ob->t_free > ob->t_alloc ? ob->t_free - ob->t_alloc : 0, freed)]++;
  }
  for (int b = 0; b < NSIZE; b++) a->total_bytes += a->sb[b];
  a->never = a->lc[NLIFE - 1];
}

/* Live bytes over time along the serial order; max per time bin.  */
static void live_over_time(const struct prep *p, struct analysis *a) {
  uint64_t span = p->end_t ? p->end_t : 1, live = 0;
  for (int k = 0; k < NTIME; k++) {
    a->tx[k] = (double)span * (k + 1) / NTIME / 1e9;
    a->ty[k] = -1;
  }
  for (size_t s = 0; s < p->nops; s++) {
    const struct rop *op = &p->ops[p->serial[s]];
    if (op->ref != NONE32) live -= p->obj[op->ref].size > live ? live : p->obj[op->ref].size;
    if (op->obj != NONE32) live = p->obj[op->obj].size > UINT64_MAX - live ? UINT64_MAX : live + p->obj[op->obj].size;
    int k = (int)((double)op->t / (double)span * NTIME);
    if (k >= NTIME) k = NTIME - 1;
    if (k < 0) k = 0;
    if ((double)live > a->ty[k]) a->ty[k] = (double)live;
  }
  for (int k = 0; k < NTIME; k++) /* empty bins carry the previous value */
    if (a->ty[k] < 0) a->ty[k] = k ? a->ty[k - 1] : 0;
}

/* Matrix of allocating (rows) vs freeing (columns) thread.  */
static void free_matrix(const struct prep *p, struct analysis *a) {
  uint32_t mt = p->nthreads < MATRIX_MAX ? p->nthreads : MATRIX_MAX;
  a->mt = mt;
  a->mx = calloc((size_t)mt * mt + 1, sizeof *a->mx);
  for (uint32_t o = 0; o < p->nobj; o++) {
    const struct pobj *ob = &p->obj[o];
    if (ob->free_thread == NONE32) continue;
    if (ob->free_thread != ob->alloc_thread) a->cross++;
    /* cppcheck-suppress knownConditionTrueFalse ; wrong: mt is p->nthreads (capped), not 0 */
    if (a->mx && ob->alloc_thread < mt && ob->free_thread < mt) a->mx[ob->alloc_thread * mt + ob->free_thread]++;
  }
}

/* Fill A from P; release with free(A->mx).  */
static void analyze_run(const struct prep *p, struct analysis *a) {
  memset(a, 0, sizeof *a);
  histograms(p, a);
  live_over_time(p, a);
  free_matrix(p, a);
}

/* --- JSON ---------------------------------------------------------------------- */
static void json_summary(const char *file, const struct hpm_trace *tr, const struct prep *p, const struct analysis *a) {
  printf("{\"file\":");
  json_str(stdout, file);
  printf(",\"command\":\"");
  for (size_t k = 0; k < tr->hdr.cmdline_len; k++) {
    char c = tr->hdr.cmdline[k];
    if (!c) c = ' ';
    if (c == '"' || c == '\\') putchar('\\');
    if ((unsigned char)c >= 0x20) putchar(c);
  }
  printf("\",\"pid\":%llu,\"events\":%zu,\"chunks\":%zu,\"threads\":%u,\"objects\":%u,"
         "\"duration_s\":%.6f,\"peak_live_bytes\":%llu,\"peak_time_s\":%.6f,"
         "\"total_bytes_allocated\":%llu,\"cross_thread_frees\":%llu,\"never_freed\":%llu,"
         "\"unknown_frees\":%llu,\"double_frees\":%llu,\"failed_calls\":%llu,\"truncated\":%s,\"ops\":{",
         (unsigned long long)tr->hdr.pid, tr->nev, tr->nchunks, p->nthreads, p->nobj, (double)p->end_t / 1e9,
         (unsigned long long)p->peak_live, (double)p->peak_t / 1e9, (unsigned long long)a->total_bytes,
         (unsigned long long)a->cross, (unsigned long long)a->never, (unsigned long long)p->unknown_frees,
         (unsigned long long)p->double_frees, (unsigned long long)p->failed, tr->truncated ? "true" : "false");
  for (int k = 0; k < HPM_NKINDS; k++)
    printf("%s\"%s\":%llu", k ? "," : "", hpm_kind_name((unsigned)k), (unsigned long long)p->kind_count[k]);
  printf("}");
}

static void json_histograms(const struct analysis *a) {
  char lab[32];
  int first = 1;
  printf(",\"size_histogram\":[");
  for (int b = 0; b < NSIZE; b++) {
    if (!a->sc[b]) continue;
    size_label(b, lab, sizeof lab);
    printf("%s{\"min\":%llu,\"label\":\"%s\",\"count\":%llu,\"bytes\":%llu}", first ? "" : ",",
           b ? 1ull << (b - 1) : 0ull, lab, (unsigned long long)a->sc[b], (unsigned long long)a->sb[b]);
    first = 0;
  }
  printf("],\"lifetime_histogram\":[");
  for (int b = 0; b < NLIFE; b++)
    printf("%s{\"label\":\"%s\",\"count\":%llu}", b ? "," : "", life_label[b], (unsigned long long)a->lc[b]);
  printf("],\"live_bytes_over_time\":[");
  for (int k = 0; k < NTIME; k++) printf("%s[%.6f,%.0f]", k ? "," : "", a->tx[k], a->ty[k]);
  printf("]");
}

static void json_threads(const struct prep *p, const struct analysis *a) {
  uint32_t mt = a->mt;
  printf(",\"per_thread\":[");
  for (uint32_t t = 0; t < p->nthreads; t++)
    printf("%s{\"thread\":%u,\"tid\":%llu,\"ops\":%zu,\"allocs\":%llu,\"frees\":%llu,\"bytes\":%llu}", t ? "," : "",
           p->th[t].number, (unsigned long long)p->th[t].tid, p->th[t].nops, (unsigned long long)p->th[t].allocs,
           (unsigned long long)p->th[t].frees, (unsigned long long)p->th[t].bytes);
  printf("],\"free_matrix\":{\"threads\":[");
  for (uint32_t t = 0; t < mt; t++) printf("%s%u", t ? "," : "", p->th[t].number);
  printf("],\"rows_allocating_cols_freeing\":[");
  for (uint32_t r = 0; r < mt; r++) {
    printf("%s[", r ? "," : "");
    for (uint32_t f = 0; f < mt; f++)
      printf("%s%llu", f ? "," : "", a->mx ? (unsigned long long)a->mx[r * mt + f] : 0ull);
    printf("]");
  }
  printf("]}");
}

/* Without the closing brace: --stacks adds its key.  */
static void report_json(const char *file, const struct hpm_trace *tr, const struct prep *p, const struct analysis *a) {
  json_summary(file, tr, p, a);
  json_histograms(a);
  json_threads(p, a);
}

/* --- text ---------------------------------------------------------------------- */
static void text_summary(const char *file, const struct hpm_trace *tr, const struct prep *p, const struct analysis *a) {
  printf("trace %s: pid %llu, command: ", file, (unsigned long long)tr->hdr.pid);
  for (size_t k = 0; k < tr->hdr.cmdline_len; k++) putchar(tr->hdr.cmdline[k] ? tr->hdr.cmdline[k] : ' ');
  printf("\n%zu events in %zu chunks, %u threads, %u objects, %.3f s traced%s\n", tr->nev, tr->nchunks, p->nthreads,
         p->nobj, (double)p->end_t / 1e9, tr->truncated ? " (truncated)" : "");
  char peak[32], when[32], total[32];
  fmt_bytes((double)p->peak_live, peak, sizeof peak);
  fmt_seconds((double)p->peak_t / 1e9, when, sizeof when);
  fmt_bytes((double)a->total_bytes, total, sizeof total);
  printf("peak live bytes: %s at %s; total allocated %s; %llu never freed; %llu cross-thread frees\n", peak, when,
         total, (unsigned long long)a->never, (unsigned long long)a->cross);
  printf("\noperations:\n");
  for (int k = 0; k < HPM_NKINDS; k++)
    if (p->kind_count[k]) printf("  %-15s %12llu\n", hpm_kind_name((unsigned)k), (unsigned long long)p->kind_count[k]);
  if (p->failed) printf("  (failed calls   %12llu)\n", (unsigned long long)p->failed);
}

static void text_histograms(const struct prep *p, const struct analysis *a) {
  char lab[32], bytes[32];
  printf("\nsize histogram   %12s %7s %12s %7s\n", "count", "%", "bytes", "%");
  for (int b = 0; b < NSIZE; b++) {
    if (!a->sc[b]) continue;
    size_tick(b, lab, sizeof lab);
    fmt_bytes((double)a->sb[b], bytes, sizeof bytes);
    printf("  %-14s %12llu %6.2f%% %12s %6.2f%%\n", lab, (unsigned long long)a->sc[b],
           100.0 * (double)a->sc[b] / (p->nobj ? p->nobj : 1), bytes,
           100.0 * (double)a->sb[b] / (double)(a->total_bytes ? a->total_bytes : 1));
  }
  printf("\nlifetime histogram\n");
  for (int b = 0; b < NLIFE; b++)
    if (a->lc[b]) printf("  %-14s %12llu\n", life_label[b], (unsigned long long)a->lc[b]);
  printf("\nlive bytes over time (max per tenth of the run)\n");
  for (int d = 0; d < 10; d++) {
    double m = 0;
    for (int k = d * NTIME / 10; k < (d + 1) * NTIME / 10; k++)
      if (a->ty[k] > m) m = a->ty[k];
    char t[32], v[32];
    fmt_seconds(a->tx[(d + 1) * NTIME / 10 - 1], t, sizeof t);
    fmt_bytes(m, v, sizeof v);
    printf("  %10s %10s ", t, v);
    int bar = p->peak_live ? (int)(40.0 * m / (double)p->peak_live) : 0;
    for (int k = 0; k < bar; k++) putchar('#');
    putchar('\n');
  }
}

static void text_threads(const struct prep *p, const struct analysis *a) {
  uint32_t mt = a->mt;
  printf("\nper thread:  %8s %10s %12s %12s %12s\n", "thread", "tid", "allocs", "frees", "bytes");
  for (uint32_t t = 0; t < p->nthreads; t++) {
    char bytes[32];
    fmt_bytes((double)p->th[t].bytes, bytes, sizeof bytes);
    printf("             %8u %10llu %12llu %12llu %12s\n", p->th[t].number, (unsigned long long)p->th[t].tid,
           (unsigned long long)p->th[t].allocs, (unsigned long long)p->th[t].frees, bytes);
  }
  if (mt <= 1 || !a->mx) return;
  printf("\nfrees: allocating thread (rows) x freeing thread (columns)%s\n        ",
         p->nthreads > mt ? " (first 16 threads)" : "");
  for (uint32_t f = 0; f < mt; f++) printf(" %9u", p->th[f].number);
  putchar('\n');
  for (uint32_t r = 0; r < mt; r++) {
    printf("  %5u ", p->th[r].number);
    for (uint32_t f = 0; f < mt; f++) printf(" %9llu", (unsigned long long)a->mx[r * mt + f]);
    putchar('\n');
  }
}

static void report_text(const char *file, const struct hpm_trace *tr, const struct prep *p, const struct analysis *a) {
  text_summary(file, tr, p, a);
  text_histograms(p, a);
  text_threads(p, a);
}

/* --- SVG ----------------------------------------------------------------------- */
/* sizes.svg: objects and bytes by request size, every bucket from the
   smallest to the largest used (a log2 axis: empty ones show as gaps).  */
static int svg_sizes(const char *path, const char *file, const struct analysis *a) {
  const char *lbl[NSIZE];
  char lbuf[NSIZE][32], sub[600];
  double objs[NSIZE], bytes[NSIZE];
  int first = NSIZE, last = -1, n = 0;
  for (int b = 0; b < NSIZE; b++)
    if (a->sc[b]) {
      if (b < first) first = b;
      last = b;
    }
  for (int b = first; b <= last; b++, n++) {
    size_tick(b, lbuf[n], sizeof lbuf[n]);
    lbl[n] = lbuf[n];
    objs[n] = (double)a->sc[b];
    bytes[n] = (double)a->sb[b];
  }
  (void)snprintf(sub, sizeof sub, "%.500s: each bar counts the requests from its size up to twice it",
                 file); /* a subtitle: truncation is harmless */
  struct svg_text t = { "Request sizes", sub, "request size (log scale: each bar twice the one before)" };
  int lo = svg_spans_decades(objs, n), lb = svg_spans_decades(bytes, n);
  struct svg_vpanel p[2] = {
    { lo ? "Objects allocated (log scale)" : "Objects allocated", "objects", SVG_COUNT, lo, objs },
    { lb ? "Bytes requested (log scale)" : "Bytes requested", "bytes", SVG_BYTES, lb, bytes },
  };
  return svg_columns(path, &t, lbl, n, p, 2);
}

/* lifetimes.svg: objects by lifetime.  */
static int svg_lifetimes(const char *path, const char *file, const struct analysis *a) {
  double v[NLIFE];
  char sub[600];
  static const char *const labels[NLIFE] = { "< 100 ns", "< 1 µs", "< 10 µs", "< 100 µs", "< 1 ms",  "< 10 ms",
                                             "< 100 ms", "< 1 s",  "< 10 s",  "< 100 s",  "≥ 100 s", "never freed" };
  for (int b = 0; b < NLIFE; b++) v[b] = (double)a->lc[b];
  (void)snprintf(sub, sizeof sub, "%.500s: time from each allocation to its free", file); /* truncation is harmless */
  struct svg_text t = { "Object lifetimes", sub, "lifetime (log scale; never freed: still live when the trace ends)" };
  int lg = svg_spans_decades(v, NLIFE);
  struct svg_vpanel p = { lg ? "Objects (log scale)" : "Objects", "objects", SVG_COUNT, lg, v };
  return svg_columns(path, &t, labels, NLIFE, &p, 1);
}

/* live_bytes.svg: live bytes over time, the peak marked.  */
static int svg_live(const char *path, const char *file, const struct analysis *a) {
  char sub[600];
  (void)snprintf(sub, sizeof sub, "%.500s: the most bytes live in each 1/%d of the trace", file, NTIME); /* cut ok */
  struct svg_text t = { "Live bytes over time", sub, "time since the trace began" };
  return svg_line(path, &t, "live bytes (allocated, not yet freed)", a->tx, SVG_SECONDS, a->ty, SVG_BYTES, NTIME);
}

/* sizes.svg, lifetimes.svg and live_bytes.svg into DIR (made if needed);
   their names on stderr.  Returns 0, or 1 after a message.  */
static int report_svg(const char *dir, const char *file, const struct analysis *a) {
  static const char *const names[] = { "live_bytes.svg", "sizes.svg", "lifetimes.svg" };
  int (*const draw[])(const char *, const char *, const struct analysis *) = { svg_live, svg_sizes, svg_lifetimes };
  char path[4096];
  if (strlen(dir) > sizeof path - 32) {
    fprintf(stderr, "hpm analyze: --svg %s: path too long\n", dir);
    return 1;
  }
  (void)mkdir(dir, 0755); /* may exist already; a real problem shows when the files are written */
  for (int k = 0; k < 3; k++) {
    (void)snprintf(path, sizeof path, "%s/%s", dir, names[k]); /* fits: length checked above */
    if (draw[k](path, file, a)) {
      fprintf(stderr, "hpm analyze: %s: %s\n", path, strerror(errno));
      return 1;
    }
    fprintf(stderr, "hpm analyze: wrote %s\n", path);
  }
  return 0;
}

/* --stacks and --flame: 0, or 1 after a message.  */
static int run_stacks(const struct analyze_opts *o, const struct hpm_trace *tr, const struct prep *p,
                      struct stacks_result *sr) {
  if (!tr->nstacks) {
    fprintf(stderr, "hpm analyze: %s: no call stacks in this trace (record it with hpm record --stacks)\n", o->file);
    return 1;
  }
  return stacks_run(tr, p, sr) ? 1 : 0;
}

/* OUT.svg's folded stacks: OUT.folded.  */
static int report_flame(const struct analyze_opts *o, const struct hpm_trace *tr, const struct stacks_result *sr) {
  static const char *const by[] = { "bytes live at the peak", "bytes never freed", "allocations", "bytes allocated" };
  char folded[4096], title[512];
  size_t l = strlen(o->flame);
  if (l >= 4 && !strcmp(o->flame + l - 4, ".svg")) l -= 4;
  if (l + 8 > sizeof folded) {
    fprintf(stderr, "hpm analyze: --flame %s: path too long\n", o->flame);
    return 1;
  }
  memcpy(folded, o->flame, l);
  memcpy(folded + l, ".folded", 8);
  (void)snprintf(title, sizeof title, "%s: %s by call stack", o->file, by[o->flame_by]); /* a title */
  return stacks_flame(o->flame, folded, tr, sr, o->flame_by, title);
}

int cmd_analyze(int argc, char **argv) {
  struct analyze_opts o = { .top = 10 };
  struct hpm_trace tr;
  struct prep p;
  struct analysis a;
  struct stacks_result sr = { 0 };
  char picked[4096];
  int rc = args_parse(&analyze_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  if (!(o.file = trace_pick("analyze", o.file, o.largest, picked, sizeof picked))) return 1;
  if (load_trace(o.file, &tr, &p)) return 1;
  if ((o.stacks || o.flame) && run_stacks(&o, &tr, &p, &sr)) {
    prep_free(&p);
    hpm_trace_free(&tr);
    return 1;
  }
  analyze_run(&p, &a);
  if (o.json) {
    report_json(o.file, &tr, &p, &a);
    if (o.stacks) stacks_report_json(&tr, &sr, o.top);
    printf("}\n");
  } else {
    report_text(o.file, &tr, &p, &a);
    if (o.stacks) stacks_report_text(&tr, &p, &sr, o.top);
  }
  rc = o.svgdir ? report_svg(o.svgdir, o.file, &a) : 0;
  if (o.flame) rc |= report_flame(&o, &tr, &sr);
  stacks_free(&sr);
  free(a.mx);
  prep_free(&p);
  hpm_trace_free(&tr);
  return rc;
}
