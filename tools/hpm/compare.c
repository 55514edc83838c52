/* SPDX-License-Identifier: MIT */
/* hpm compare: the same trace replayed under several allocators and
   tunables, runs interleaved and repeated until each configuration has
   enough (runs.c), medians side by side with their spread and the
   speed-up's confidence interval (text, JSON, SVG).  MIT licence.  */
#include "compare.h"
#include "stats.h"
#include "svg.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIGS 32
#define COMPARE_ALPHA 0.05 /* the two-sided test's level for "faster" and "slower" */

/* ======================================================================== options */
struct config_list {
  struct config *cfg; /* MAX_CONFIGS of them */
  int n;
};

struct compare_opts {
  const char *file, *svg;
  const char *allocs, *tuns; /* comma-separated lists, used when there is no --config */
  struct config_list list;
  int json, metric; /* metric: index in metric_choice */
  struct run_policy policy;
  uint64_t max_mem;
  struct replay_opts ro;
};

/* --metric, in the order of its choices.  */
static const enum metric metric_choice[] = { M_CPU, M_WALL };
static const char *const metric_words[] = { "CPU time (user + sys)", "wall time" };

/* --config ALLOC[:TUNABLES], appended to the config_list FIELD.  */
static int add_config(void *field, const char *val, char *err, size_t errlen) {
  struct config_list *l = field;
  const char *colon = strchr(val, ':'), *tun = colon ? colon + 1 : "";
  size_t alen = colon ? (size_t)(colon - val) : strlen(val);
  char alloc[sizeof l->cfg->alloc];
  /* Messages: truncation is harmless.  */
  if (l->n == MAX_CONFIGS) {
    (void)snprintf(err, errlen, "at most %d configurations", MAX_CONFIGS);
    return -1;
  }
  if (alen >= sizeof alloc || strlen(tun) >= sizeof l->cfg->tun) {
    (void)snprintf(err, errlen, "%.100s...: too long (allocator: at most %zu bytes, tunables: %zu)", val,
                   sizeof alloc - 1, sizeof l->cfg->tun - 1);
    return -1;
  }
  if (tunables_check(tun, err, errlen)) return -1;
  memcpy(alloc, val, alen);
  alloc[alen] = 0;
  config_init(&l->cfg[l->n++], alloc, tun);
  return 0;
}

/* Split S at SEP into at most MAX items (each cut to 511 bytes); `-` and
   `none` become empty.  Returns how many.  */
static int split(const char *s, char sep, char items[][512], int max) {
  int n = 0;
  const char *p = s;
  while (n < max) {
    const char *e = strchr(p, sep);
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len >= 512) len = 511;
    memcpy(items[n], p, len);
    items[n][len] = 0;
    if (!strcmp(items[n], "-") || !strcmp(items[n], "none")) items[n][0] = 0;
    n++;
    if (!e) break;
    p = e + 1;
  }
  return n;
}

/* --tunables LIST: every entry checked.  */
static int tunables_list_arg(void *field, const char *val, char *err, size_t errlen) {
  static char items[16][512];
  int n = split(val, ',', items, 16);
  for (int i = 0; i < n; i++)
    if (tunables_check(items[i], err, errlen)) return -1;
  *(const char **)field = val;
  return 0;
}

static const struct arg_opt compare_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct compare_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--allocators", .kind = ARG_STR, .off = offsetof(struct compare_opts, allocs), .meta = "LIST" },
  { .name = "--tunables",
    .kind = ARG_FN,
    .off = offsetof(struct compare_opts, tuns),
    .meta = "LIST",
    .set = tunables_list_arg },
  { .name = "--config",
    .kind = ARG_FN,
    .off = offsetof(struct compare_opts, list),
    .meta = "ALLOC[:TUNABLES]",
    .set = add_config },
  { .name = "--metric", .kind = ARG_CHOICE, .off = offsetof(struct compare_opts, metric), .meta = "cpu|wall" },
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct compare_opts, json) },
  { .name = "--svg", .kind = ARG_STR, .off = offsetof(struct compare_opts, svg), .meta = "OUT.svg" },
  { .name = "--max-memory", .kind = ARG_SIZE, .off = offsetof(struct compare_opts, max_mem) },
  { .kind = ARG_TABLE, .off = offsetof(struct compare_opts, policy), .sub = measure_args },
  { .kind = ARG_TABLE, .off = offsetof(struct compare_opts, ro), .sub = replay_common_args },
  { 0 },
};

static const struct arg_cmd compare_cmd = {
  .name = "compare",
  .synopsis = "usage: hpm compare FILE [--allocators LIST] [--tunables LIST] [--config ALLOC[:TUNABLES]]...\n"
              "                        [--metric cpu|wall] [--reps N] [--min-time SECONDS] [--json] [--svg OUT.svg]\n"
              "                        [--max-memory SIZE] [replay options]\n",
  .help = "Replays FILE under every allocator x tunables combination (or the --config\n"
          "entries), interleaved: round after round, each configuration once, until each\n"
          "has at least N runs (--reps, default 3) totalling SECONDS of replay (--min-time,\n"
          "default 0.5; at most 200 runs).  Prints medians with their range [min-max] and\n"
          "the speed-up over the first configuration on --metric (cpu, the default: user\n"
          "+ sys time; or wall) with its 95% bootstrap confidence interval.\n"
          "LIST is comma-separated; allocators: glibc, hpmalloc, jemalloc, mimalloc,\n"
          "tcmalloc, a .so path, or `all` (glibc, hpmalloc and whichever of\n"
          "jemalloc/mimalloc/tcmalloc are installed).  A tunables entry is a\n"
          "GLIBC_TUNABLES string, checked against hpmalloc's table; `-` means none.\n"
          "Tunables are set only for allocators that read them (glibc: glibc.malloc.*;\n"
          "hpmalloc: those and malloc.*, hpmalloc.*; jemalloc, mimalloc and tcmalloc:\n"
          "none); a row says what it left out.  Defaults: --allocators glibc,hpmalloc\n"
          "--tunables -,glibc.malloc.hugetlb=1.  Ctrl-C prints the runs finished so far,\n"
          "marked partial (exit status 130).\n"
          "Replay options: --threads, --touch (default full here), --tlb (see hpm replay --help).\n",
  .args = compare_args,
};

/* --allocators all: glibc, hpmalloc and the others that are installed,
   into BUF.  */
static const char *all_allocators(char *buf, size_t len) {
  static const char *const opt[] = { "jemalloc", "mimalloc", "tcmalloc" };
  size_t n = (size_t)snprintf(buf, len, "glibc,hpmalloc"); /* fits */
  for (int k = 0; k < 3; k++)
    if (allocator_found(opt[k])) { /* fits: at most 42 bytes in all */
      int m = snprintf(buf + n, len - n, ",%s", opt[k]);
      if (m > 0) n += (size_t)m;
    }
  return buf;
}

/* The configuration of L with C's allocator and tunables as run, or NULL.  */
static struct config *same_run(struct config_list *l, const struct config *c) {
  for (int k = 0; k < l->n; k++)
    if (!strcmp(l->cfg[k].alloc, c->alloc) && !strcmp(l->cfg[k].tun, c->tun)) return &l->cfg[k];
  return NULL;
}

/* Without --config: every allocator of O->allocs with every tunables entry
   of O->tuns, up to MAX_CONFIGS.  Combinations that would run alike (an
   allocator that reads none of the entries) are run once; the row says
   what it left out.  */
static void expand_configs(struct compare_opts *o) {
  static char al[16][512], tl[16][512];
  static struct config c;
  char expanded[1024];
  const char *allocs = !strcmp(o->allocs, "all") ? all_allocators(expanded, sizeof expanded) : o->allocs;
  int na = split(allocs, ',', al, 16), nt = split(o->tuns, ',', tl, 16);
  for (int a = 0; a < na; a++)
    for (int t = 0; t < nt && o->list.n < MAX_CONFIGS; t++) {
      config_init(&c, al[a], tl[t]);
      struct config *twin = same_run(&o->list, &c);
      if (!twin)
        o->list.cfg[o->list.n++] = c;
      else if (!twin->dropped[0])
        memcpy(twin->dropped, c.dropped, sizeof c.dropped);
    }
}

/* The options, checked: ARGS_RUN, or the exit status (1: an allocator is
   not installed).  */
static int compare_parse(int argc, char **argv, struct compare_opts *o) {
  static struct config cfg[MAX_CONFIGS];
  *o = (struct compare_opts){ .allocs = "glibc,hpmalloc",
                              .tuns = "-,glibc.malloc.hugetlb=1",
                              .list = { cfg, 0 },
                              .policy = { .reps = 3, .min_time = DEFAULT_MIN_TIME },
                              .max_mem = replay_default_max_mem(),
                              .ro = { .touch = TOUCH_FULL } };
  tlb_geom_get("auto", &o->ro.geom, NULL, 0);
  int rc = args_parse(&compare_cmd, argc, argv, o);
  if (rc != ARGS_RUN) return rc;
  if (o->list.n == 0) expand_configs(o);
  for (int c = 0; c < o->list.n; c++)
    if (!allocator_found(o->list.cfg[c].alloc)) return allocator_missing("compare", o->list.cfg[c].alloc);
  o->ro.walk_ns = tlbcost_cached_ns();
  return ARGS_RUN;
}

/* ======================================================================== reports */
/* What a row left out of its tunables, for the note column; "" if nothing.  */
static void row_note(const struct config *c, char *buf, size_t n) {
  buf[0] = 0;
  if (c->dropped[0]) /* a note: truncation is harmless */
    (void)snprintf(buf, n, "not applied: %.400s (%.100s %s)", c->dropped, c->alloc, allocator_reads_text(c->alloc));
  size_t l = strlen(buf);
  if (c->med[M_FALLBACK_HUGETLB] > 0 || c->med[M_FALLBACK_THP] > 0)
    (void)snprintf(buf + l, n - l,
                   "%sfallbacks: %.0f hugetlb mappings failed, %.0f THP advice refused: the coverage "
                   "is not of the pages asked for",
                   l ? "; " : "", c->med[M_FALLBACK_HUGETLB], c->med[M_FALLBACK_THP]);
}

static void print_header(const struct compare_opts *o, int partial) {
  const struct config *cfg = o->list.cfg;
  int n = o->list.n, lo = MAX_RUNS, hi = 0;
  for (int c = 0; c < n; c++) {
    if (cfg[c].runs < lo) lo = cfg[c].runs;
    if (cfg[c].runs > hi) hi = cfg[c].runs;
  }
  printf("compare %s: %d configurations, %d", o->file, n, lo);
  if (hi > lo) printf(" to %d", hi);
  printf(" interleaved runs each (at least %d and %.2g s of replay)%s\n", o->policy.reps, o->policy.min_time,
         partial ? "; PARTIAL: interrupted, the runs finished so far" : "");
  printf("speed-up: %s's median %s over each one's, with its 95%% bootstrap confidence\n"
         "interval and a word: faster or slower when the interval excludes 1 and a two-sided\n"
         "Mann-Whitney U test gives p < 0.05, else ~ (no difference beyond the noise).\n"
         "Times: median [min-max] over the runs; the other columns: medians.  op mean: the\n"
         "time per operation less the clock's own cost; op p99: as measured, clock included.\n\n",
         cfg[0].label, metric_words[o->metric]);
}

/* The word for a speed-up V (base / c, above 1 when c is faster): c is
   "faster", "slower", or "~" when the interval holds 1 or the two-sided
   Mann-Whitney U test gives p >= COMPARE_ALPHA.  */
static const char *speedup_word(const struct verdict *v) {
  struct verdict c = { v->ratio > 0 ? 1 / v->ratio : HUGE_VAL, v->hi > 0 ? 1 / v->hi : 0,
                       v->lo > 0 ? 1 / v->lo : HUGE_VAL, v->p };
  return verdict_word(&c, COMPARE_ALPHA);
}

static void print_speedup(const struct compare_opts *o, const struct config *c, char *buf, size_t n) {
  enum metric m = metric_choice[o->metric];
  const struct config *base = &o->list.cfg[0];
  struct verdict v;
  if (c == base) {
    (void)snprintf(buf, n, "1 (baseline)");
    return;
  }
  if (!base->runs || !c->runs) {
    (void)snprintf(buf, n, "-");
    return;
  }
  compare_configs(base, c, m, &v); /* base / c: above 1 when c is faster */
  /* a table cell: truncation is harmless */
  (void)snprintf(buf, n, "%.2fx [%.2f-%.2f] %s", v.ratio, v.lo, v.hi, speedup_word(&v));
}

static void print_table(const struct compare_opts *o) {
  const struct config *cfg = o->list.cfg;
  enum metric m = metric_choice[o->metric], other = m == M_CPU ? M_WALL : M_CPU;
  int n = o->list.n, w = 13;
  char head[64];
  for (int c = 0; c < n; c++)
    if ((int)strlen(cfg[c].label) > w) w = (int)strlen(cfg[c].label);
  if (w > 44) w = 44;
  (void)snprintf(head, sizeof head, "speed-up (%s)", m == M_CPU ? "cpu" : "wall");
  printf("%-*s %4s  ", w, "configuration", "runs");
  print_cell(m == M_CPU ? "cpu time" : "wall time", 26);
  print_cell(head, 27);
  print_cell(m == M_CPU ? "wall time" : "cpu time", 10);
  printf(" %8s %8s %7s %9s %8s %9s %9s\n", "op mean", "op p99", "faults", "peak RSS", "huge cov", "TLB walks",
         "walks 4K");
  for (int c = 0; c < n; c++) {
    static const enum metric rest[] = { M_MEAN, M_P99, M_FAULTS, M_PEAK_RSS, M_COVERAGE, M_TLB, M_TLB_4K };
    static const int width[] = { 8, 8, 7, 9, 8, 9, 9 };
    char cell[600];
    printf("%-*.*s %4d  ", w, w, cfg[c].label, cfg[c].runs);
    fmt_spread(&cfg[c], m, cell, sizeof cell);
    print_cell(cell, 26);
    print_speedup(o, &cfg[c], cell, sizeof cell);
    print_cell(cell, 27);
    fmt_metric(other, cfg[c].med[other], cell, sizeof cell);
    print_cell(cell, 10);
    for (size_t k = 0; k < sizeof rest / sizeof *rest; k++) {
      fmt_metric(rest[k], cfg[c].med[rest[k]], cell, sizeof cell);
      putchar(' ');
      print_cell_right(cell, width[k]);
    }
    row_note(&cfg[c], cell, sizeof cell);
    printf("%s%s\n", cell[0] ? "  " : "", cell);
  }
}

static void print_metrics(const double *v) {
  printf("{");
  for (size_t m = 0; m < NMETRICS; m++) printf("%s\"%s\":%.6g", m ? "," : "", metric_names[m], v[m]);
  printf("}");
}

static void print_config_json(const struct compare_opts *o, const struct config *c) {
  enum metric m = metric_choice[o->metric];
  double vals[MAX_RUNS], lo, hi;
  char note[600];
  printf("{\"allocator\":");
  json_str(stdout, c->alloc);
  printf(",\"tunables\":");
  json_str(stdout, c->tun);
  printf(",\"tunables_requested\":");
  json_str(stdout, c->req);
  printf(",\"not_applied\":");
  json_str(stdout, c->dropped);
  row_note(c, note, sizeof note);
  printf(",\"note\":");
  json_str(stdout, note);
  printf(",\"median\":");
  print_metrics(c->med);
  for (int k = 0; k < 2; k++) {
    enum metric t = k ? M_CPU : M_WALL;
    config_values(c, t, vals);
    stats_minmax(vals, c->runs, &lo, &hi);
    printf(",\"%s_min\":%.6g,\"%s_max\":%.6g", metric_names[t], lo, metric_names[t], hi);
  }
  if (c != &o->list.cfg[0] && c->runs && o->list.cfg[0].runs) {
    struct verdict v;
    compare_configs(&o->list.cfg[0], c, m, &v);
    printf(",\"speedup\":%.6g,\"speedup_ci95\":[%.6g,%.6g],\"p_two_sided\":%.6g,\"verdict\":\"%s\"", v.ratio, v.lo,
           v.hi, v.p, speedup_word(&v));
  } else
    printf(",\"speedup\":1,\"speedup_ci95\":[1,1],\"p_two_sided\":1,\"verdict\":\"baseline\"");
  printf(",\"runs\":[");
  for (int r = 0; r < c->runs; r++) {
    printf("%s", r ? "," : "");
    print_metrics(c->v[r]);
  }
  printf("]}");
}

static void print_json(const struct compare_opts *o, int partial) {
  printf("{\"file\":");
  json_str(stdout, o->file);
  printf(",\"metric\":\"%s\",\"reps\":%d,\"min_time_s\":%.6g,\"partial\":%s,\"configs\":[",
         metric_names[metric_choice[o->metric]], o->policy.reps, o->policy.min_time, partial ? "true" : "false");
  for (int c = 0; c < o->list.n; c++) {
    printf("%s", c ? "," : "");
    print_config_json(o, &o->list.cfg[c]);
  }
  printf("]}\n");
}

/* The chart: one panel per quantity, a bar per configuration.  */
static int write_svg(const struct compare_opts *o) {
  const struct config *cfg = o->list.cfg;
  enum metric m = metric_choice[o->metric];
  int n = o->list.n;
  double time[MAX_CONFIGS], lo[MAX_CONFIGS], hi[MAX_CONFIGS], rss[MAX_CONFIGS], cov[MAX_CONFIGS], tlb[MAX_CONFIGS];
  const char *labels[MAX_CONFIGS];
  for (int c = 0; c < n; c++) {
    struct verdict v = { 1, 1, 1, 1 };
    if (c && cfg[c].runs && cfg[0].runs) compare_configs(&cfg[c], &cfg[0], m, &v); /* c / base: lower is better */
    time[c] = v.ratio;
    lo[c] = v.lo;
    hi[c] = v.hi;
    rss[c] = cfg[c].med[M_PEAK_RSS] * 1024;
    cov[c] = cfg[c].med[M_COVERAGE] * 100;
    tlb[c] = cfg[c].med[M_TLB];
    labels[c] = cfg[c].label;
  }
  char sub[700], t1[400], a1[400];
  /* titles: truncation is harmless */
  (void)snprintf(sub, sizeof sub, "%.400s: medians of %d interleaved runs per configuration", o->file, cfg[0].runs);
  (void)snprintf(t1, sizeof t1, "%s relative to %.200s (median, 95%% CI; lower is better)",
                 m == M_CPU ? "CPU time" : "Wall time", cfg[0].label);
  (void)snprintf(a1, sizeof a1, "%s / %.200s's (1 = as fast; 0.5 = twice as fast)",
                 m == M_CPU ? "CPU time (user + sys)" : "wall time", cfg[0].label);
  int tlb_log = svg_spans_decades(tlb, n);
  const struct svg_hpanel p[] = {
    { t1, a1, SVG_RATIO, 0, time, lo, hi, 1 },
    { "Peak RSS growth (lower is better)", "bytes over the replayer's own", SVG_BYTES, 0, rss, NULL, NULL, -1 },
    { "Huge-page coverage of the live heap at its peak (higher is better)", "share of its resident bytes on huge pages",
      SVG_PERCENT, 0, cov, NULL, NULL, -1 },
    { tlb_log ? "TLB page walks, modelled (log scale; lower is better)" : "TLB page walks, modelled (lower is better)",
      "page walks in the TLB model", SVG_COUNT, tlb_log, tlb, NULL, NULL, -1 },
  };
  struct svg_text t = { "hpm compare", sub, NULL };
  return svg_hbars(o->svg, &t, labels, n, p, 4);
}

/* Returns 0, or 1 when the SVG could not be written.  */
static int compare_report(const struct compare_opts *o, int partial) {
  if (o->json)
    print_json(o, partial);
  else {
    print_header(o, partial);
    print_table(o);
  }
  if (!o->svg) return 0;
  if (write_svg(o)) {
    fprintf(stderr, "hpm compare: cannot write %s\n", o->svg);
    return 1;
  }
  fprintf(stderr, "hpm compare: wrote %s\n", o->svg);
  return 0;
}

/* ======================================================================== hpm compare */
int cmd_compare(int argc, char **argv) {
  struct compare_opts o;
  struct config *list[MAX_CONFIGS];
  int rc = compare_parse(argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  int fd = replay_load(o.file, &o.ro, o.max_mem);
  if (fd < 0) return 1;
  for (int c = 0; c < o.list.n; c++) list[c] = &o.list.cfg[c];
  catch_sigint();
  rc = measure(fd, &o.ro, list, o.list.n, &o.policy, "compare");
  close(fd);
  if (rc == 1) return 1;
  int svg_rc = compare_report(&o, rc == RUN_INTERRUPTED);
  return rc == RUN_INTERRUPTED ? RUN_INTERRUPTED : svg_rc;
}
