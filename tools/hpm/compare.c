/* hpm compare: the same trace replayed under several allocators and
   tunables, runs interleaved and repeated, medians side by side (text,
   JSON, SVG); and the configurations and runs that hpm tune shares
   (compare.h).  MIT licence.  */
#include "compare.h"
#include "svg.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIGS 32

const char *const metric_names[NMETRICS] = {
  "wall_s",
  "cpu_s",
  "ns_p50",
  "ns_p99",
  "minor_faults",
  "peak_rss_kb",
  "peak_live_bytes",
  "hugepage_coverage",
  "live_bytes_on_huge",
  "tlb_misses_4k",
  "tlb_misses",
  "tlb_cycles",
  "alloc_failures",
};

/* ======================================================================== configurations */
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void config_medians(struct config *c) {
  for (size_t m = 0; m < NMETRICS; m++) {
    double tmp[MAX_REPS] = { 0 };
    for (int r = 0; r < c->runs; r++) tmp[r] = c->v[r][m];
    qsort(tmp, (size_t)c->runs, sizeof *tmp, cmp_d);
    c->med[m] = c->runs ? (c->runs % 2 ? tmp[c->runs / 2] : (tmp[c->runs / 2 - 1] + tmp[c->runs / 2]) / 2) : 0;
  }
}

int config_run(int fd, const struct replay_opts *base, struct config *c) {
  static char out[65536];
  struct replay_opts o = *base;
  o.allocator = c->alloc;
  o.tunables = c->tun[0] ? c->tun : "";
  if (replay_run(fd, &o, out, sizeof out)) return -1;
  for (size_t m = 0; m < NMETRICS; m++)
    if (json_get_num(out, metric_names[m], &c->v[c->runs][m])) c->v[c->runs][m] = 0;
  c->runs++;
  return 0;
}

void config_init(struct config *c, const char *alloc, const char *tun) {
  memset(c, 0, sizeof *c);
  /* Cut to fit; the label is longer than alloc + " " + tun.  */
  (void)snprintf(c->alloc, sizeof c->alloc, "%.255s", alloc);
  (void)snprintf(c->tun, sizeof c->tun, "%.511s", tun);
  (void)snprintf(c->label, sizeof c->label, "%s%s%s", c->alloc, c->tun[0] ? " " : "", c->tun);
}

/* ======================================================================== options */
struct config_list {
  struct config *cfg; /* MAX_CONFIGS of them */
  int n;
};

struct compare_opts {
  const char *file, *svg;
  const char *allocs, *tuns; /* comma-separated lists, used when there is no --config */
  struct config_list list;
  int reps, json;
  uint64_t max_mem;
  struct replay_opts ro;
};

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
  memcpy(alloc, val, alen);
  alloc[alen] = 0;
  config_init(&l->cfg[l->n++], alloc, tun);
  return 0;
}

static const struct arg_opt compare_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct compare_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--allocators", .kind = ARG_STR, .off = offsetof(struct compare_opts, allocs), .meta = "LIST" },
  { .name = "--tunables", .kind = ARG_STR, .off = offsetof(struct compare_opts, tuns), .meta = "LIST" },
  { .name = "--config",
    .kind = ARG_FN,
    .off = offsetof(struct compare_opts, list),
    .meta = "ALLOC[:TUNABLES]",
    .set = add_config },
  { .name = "--reps", .kind = ARG_INT, .off = offsetof(struct compare_opts, reps), .min = 1, .max = MAX_REPS },
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct compare_opts, json) },
  { .name = "--svg", .kind = ARG_STR, .off = offsetof(struct compare_opts, svg), .meta = "OUT.svg" },
  { .name = "--max-memory", .kind = ARG_SIZE, .off = offsetof(struct compare_opts, max_mem) },
  { .kind = ARG_TABLE, .off = offsetof(struct compare_opts, ro), .sub = replay_common_args },
  { 0 },
};

static const struct arg_cmd compare_cmd = {
  .name = "compare",
  .synopsis = "usage: hpm compare FILE [--allocators LIST] [--tunables LIST] [--config ALLOC[:TUNABLES]]...\n"
              "                        [--reps N] [--json] [--svg OUT.svg] [replay options]\n",
  .help = "Replays FILE under every allocator x tunables combination (or the --config\n"
          "entries), runs interleaved and repeated N times (default 3), and prints a\n"
          "table of medians.  LIST is comma-separated; allocators: glibc, hpmalloc,\n"
          "jemalloc, mimalloc, tcmalloc, a .so path, or `all` (glibc, hpmalloc and\n"
          "whichever of jemalloc/mimalloc/tcmalloc are installed).  A tunables entry is\n"
          "a GLIBC_TUNABLES string; `-` means none.  Defaults: --allocators\n"
          "glibc,hpmalloc --tunables -,glibc.malloc.hugetlb=1.\n"
          "Replay options: --threads, --touch (default full here), --tlb (see hpm replay --help).\n",
  .args = compare_args,
};

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

/* Without --config: every allocator of O->allocs with every tunables entry
   of O->tuns, up to MAX_CONFIGS.  */
static void expand_configs(struct compare_opts *o) {
  static char al[16][512], tl[16][512];
  char expanded[1024];
  const char *allocs = !strcmp(o->allocs, "all") ? all_allocators(expanded, sizeof expanded) : o->allocs;
  int na = split(allocs, ',', al, 16), nt = split(o->tuns, ',', tl, 16);
  for (int a = 0; a < na; a++)
    for (int t = 0; t < nt && o->list.n < MAX_CONFIGS; t++) config_init(&o->list.cfg[o->list.n++], al[a], tl[t]);
}

/* The options, checked: ARGS_RUN, or the exit status (1: an allocator is
   not installed).  */
static int compare_parse(int argc, char **argv, struct compare_opts *o) {
  static struct config cfg[MAX_CONFIGS];
  *o = (struct compare_opts){ .allocs = "glibc,hpmalloc",
                              .tuns = "-,glibc.malloc.hugetlb=1",
                              .list = { cfg, 0 },
                              .reps = 3,
                              .max_mem = replay_default_max_mem(),
                              .ro = { .touch = TOUCH_FULL } };
  tlb_geom_get("auto", &o->ro.geom, NULL, 0);
  int rc = args_parse(&compare_cmd, argc, argv, o);
  if (rc != ARGS_RUN) return rc;
  if (o->list.n == 0) expand_configs(o);
  for (int c = 0; c < o->list.n; c++)
    if (!allocator_found(o->list.cfg[c].alloc)) {
      fprintf(stderr, "hpm compare: allocator %s not found\n", o->list.cfg[c].alloc);
      return 1;
    }
  o->ro.walk_ns = tlbcost_cached_ns();
  return ARGS_RUN;
}

/* ======================================================================== running */
/* Every configuration O->reps times, interleaved; then the medians.
   Returns 0, or 1 after a message.  */
static int compare_run(struct compare_opts *o) {
  struct config *cfg = o->list.cfg;
  int n = o->list.n, fd = replay_load(o->file, &o->ro, o->max_mem);
  if (fd < 0) return 1;
  for (int r = 0; r < o->reps; r++)
    for (int c = 0; c < n; c++) {
      progress("compare: run %d/%d: %s", r * n + c + 1, o->reps * n, cfg[c].label);
      if (config_run(fd, &o->ro, &cfg[c])) {
        progress_done();
        close(fd);
        return 1;
      }
    }
  progress_done();
  close(fd);
  for (int c = 0; c < n; c++) config_medians(&cfg[c]);
  return 0;
}

/* ======================================================================== reports */
static void print_table(const struct config *cfg, int n, int reps) {
  printf("medians of %d interleaved runs\n", reps);
  printf("%-44s %9s %9s %7s %7s %9s %10s %8s %10s %10s %8s\n", "allocator / tunables", "wall s", "cpu s", "ns p50",
         "ns p99", "faults", "peakRSS K", "huge cov", "TLB walks", "walks 4K", "speedup");
  for (int c = 0; c < n; c++) {
    const double *m = cfg[c].med;
    printf("%-44.44s %9.4f %9.4f %7.0f %7.0f %9.0f %10.0f %8.3f %10.0f %10.0f %7.2fx\n", cfg[c].label, m[M_WALL],
           m[M_CPU], m[M_P50], m[M_P99], m[M_FAULTS], m[M_PEAK_RSS], m[M_COVERAGE], m[M_TLB], m[M_TLB_4K],
           m[M_WALL] > 0 ? cfg[0].med[M_WALL] / m[M_WALL] : 0);
  }
}

static void print_metrics(const double *v) {
  printf("{");
  for (size_t m = 0; m < NMETRICS; m++) printf("%s\"%s\":%.6g", m ? "," : "", metric_names[m], v[m]);
  printf("}");
}

static void print_json(const char *file, const struct config *cfg, int n, int reps) {
  printf("{\"file\":");
  json_str(stdout, file);
  printf(",\"reps\":%d,\"configs\":[", reps);
  for (int c = 0; c < n; c++) {
    printf("%s{\"allocator\":", c ? "," : "");
    json_str(stdout, cfg[c].alloc);
    printf(",\"tunables\":");
    json_str(stdout, cfg[c].tun);
    printf(",\"median\":");
    print_metrics(cfg[c].med);
    printf(",\"runs\":[");
    for (int r = 0; r < cfg[c].runs; r++) {
      printf("%s", r ? "," : "");
      print_metrics(cfg[c].v[r]);
    }
    printf("]}");
  }
  printf("]}\n");
}

static int write_svg(const char *path, const char *file, const struct config *cfg, int n) {
  /* Groups: metrics relative to the first configuration; series: configurations.  */
  static const int idx[] = { M_WALL, M_CPU, M_PEAK_RSS, M_TLB, M_TLB_CYCLES };
  const char *labels[] = { "wall time",         "CPU time",           "peak RSS",
                           "TLB walks (model)", "TLB cycles (model)", "huge-page coverage" };
  int ng = 6;
  double *v = calloc((size_t)ng * (size_t)n, sizeof *v);
  const char **ser = calloc((size_t)n, sizeof *ser);
  if (!v || !ser) {
    free(v);
    free(ser);
    return -1;
  }
  for (int c = 0; c < n; c++) {
    ser[c] = cfg[c].label;
    for (int g = 0; g < 5; g++) {
      double base = cfg[0].med[idx[g]];
      v[g * n + c] = base > 0 ? cfg[c].med[idx[g]] / base : 0;
    }
    v[5 * n + c] = cfg[c].med[M_COVERAGE];
  }
  char title[512];
  (void)snprintf(title, sizeof title, "hpm compare %.200s (relative to %.200s; coverage absolute)", file, cfg[0].label);
  int rc = svg_bars(path, title, labels, ng, ser, n, v, "");
  free(v);
  free(ser);
  return rc;
}

/* Returns 0, or 1 when the SVG could not be written.  */
static int compare_report(const struct compare_opts *o) {
  if (o->json)
    print_json(o->file, o->list.cfg, o->list.n, o->reps);
  else
    print_table(o->list.cfg, o->list.n, o->reps);
  if (o->svg && write_svg(o->svg, o->file, o->list.cfg, o->list.n)) {
    fprintf(stderr, "hpm compare: cannot write %s\n", o->svg);
    return 1;
  }
  return 0;
}

int cmd_compare(int argc, char **argv) {
  struct compare_opts o;
  int rc = compare_parse(argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  return compare_run(&o) ? 1 : compare_report(&o);
}
