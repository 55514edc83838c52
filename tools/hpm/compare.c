/* hpm compare and hpm tune: the same trace replayed under several
   allocators and tunables, runs interleaved and repeated, medians compared.
   MIT licence.  */
#include "replay.h"
#include "svg.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIGS 32
#define MAX_REPS 51

static const char *const metrics[] = {
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
#define NMETRICS (sizeof metrics / sizeof *metrics)

struct config {
  char alloc[256], tun[512], label[800];
  double v[MAX_REPS][NMETRICS];
  double med[NMETRICS];
  int runs;
};

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void medians(struct config *c) {
  for (size_t m = 0; m < NMETRICS; m++) {
    double tmp[MAX_REPS] = { 0 };
    for (int r = 0; r < c->runs; r++) tmp[r] = c->v[r][m];
    qsort(tmp, (size_t)c->runs, sizeof *tmp, cmp_d);
    c->med[m] = c->runs ? (c->runs % 2 ? tmp[c->runs / 2] : (tmp[c->runs / 2 - 1] + tmp[c->runs / 2]) / 2) : 0;
  }
}

static int run_config(int fd, const struct replay_opts *base, struct config *c) {
  static char out[65536];
  struct replay_opts o = *base;
  o.allocator = c->alloc;
  o.tunables = c->tun[0] ? c->tun : "";
  if (replay_run(fd, &o, out, sizeof out)) return -1;
  for (size_t m = 0; m < NMETRICS; m++)
    if (json_get_num(out, metrics[m], &c->v[c->runs][m])) c->v[c->runs][m] = 0;
  c->runs++;
  return 0;
}

static void set_label(struct config *c) {
  /* fits: label is longer than alloc + " " + tun */
  (void)snprintf(c->label, sizeof c->label, "%s%s%s", c->alloc, c->tun[0] ? " " : "", c->tun);
}

/* Split S at SEP into at most MAX items of LEN bytes.  */
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

static const char compare_usage[] =
    "usage: hpm compare FILE [--allocators LIST] [--tunables LIST] [--config ALLOC[:TUNABLES]]...\n"
    "                        [--reps N] [--json] [--svg OUT.svg] [replay options]\n"
    "Replays FILE under every allocator x tunables combination (or the --config\n"
    "entries), runs interleaved and repeated N times (default 3), and prints a\n"
    "table of medians.  LIST is comma-separated; allocators: glibc, hpmalloc,\n"
    "jemalloc, mimalloc, tcmalloc, a .so path, or `all` (glibc, hpmalloc and\n"
    "whichever of jemalloc/mimalloc/tcmalloc are installed).  A tunables entry is\n"
    "a GLIBC_TUNABLES string; `-` means none.  Defaults: --allocators\n"
    "glibc,hpmalloc --tunables -,glibc.malloc.hugetlb=1.\n"
    "Replay options: --threads, --touch (default full here), --tlb (see hpm replay --help).\n";

static int parse_replay_opt(int argc, char **argv, int *i, struct replay_opts *o) {
  int used, r = replay_parse_common(argv[*i], *i + 1 < argc ? argv[*i + 1] : NULL, o, &used);
  if (r > 0) *i += used - 1;
  return r;
}

static void print_table(struct config *cfg, int n, int reps) {
  printf("medians of %d interleaved runs\n", reps);
  printf("%-44s %9s %9s %7s %7s %9s %10s %8s %10s %10s %8s\n", "allocator / tunables", "wall s", "cpu s", "ns p50",
         "ns p99", "faults", "peakRSS K", "huge cov", "TLB walks", "walks 4K", "speedup");
  for (int c = 0; c < n; c++) {
    double *m = cfg[c].med;
    printf("%-44.44s %9.4f %9.4f %7.0f %7.0f %9.0f %10.0f %8.3f %10.0f %10.0f %7.2fx\n", cfg[c].label, m[0], m[1], m[2],
           m[3], m[4], m[5], m[7], m[10], m[9], m[0] > 0 ? cfg[0].med[0] / m[0] : 0);
  }
}

static void print_json(const char *file, struct config *cfg, int n, int reps) {
  printf("{\"file\":");
  json_str(stdout, file);
  printf(",\"reps\":%d,\"configs\":[", reps);
  for (int c = 0; c < n; c++) {
    printf("%s{\"allocator\":", c ? "," : "");
    json_str(stdout, cfg[c].alloc);
    printf(",\"tunables\":");
    json_str(stdout, cfg[c].tun);
    printf(",\"median\":{");
    for (size_t m = 0; m < NMETRICS; m++) printf("%s\"%s\":%.6g", m ? "," : "", metrics[m], cfg[c].med[m]);
    printf("},\"runs\":[");
    for (int r = 0; r < cfg[c].runs; r++) {
      printf("%s{", r ? "," : "");
      for (size_t m = 0; m < NMETRICS; m++) printf("%s\"%s\":%.6g", m ? "," : "", metrics[m], cfg[c].v[r][m]);
      printf("}");
    }
    printf("]}");
  }
  printf("]}\n");
}

static int write_svg(const char *path, const char *file, struct config *cfg, int n) {
  /* Groups: metrics relative to the first configuration; series: configurations.  */
  static const int idx[] = { 0, 1, 5, 10, 11 };
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
    v[5 * n + c] = cfg[c].med[7];
  }
  char title[512];
  (void)snprintf(title, sizeof title, "hpm compare %.200s (relative to %.200s; coverage absolute)", file, cfg[0].label);
  int rc = svg_bars(path, title, labels, ng, ser, n, v, "");
  free(v);
  free(ser);
  return rc;
}

int cmd_compare(int argc, char **argv) {
  const char *file = NULL, *svg = NULL, *allocs = "glibc,hpmalloc", *tuns = "-,glibc.malloc.hugetlb=1";
  static struct config cfg[MAX_CONFIGS];
  int n = 0, reps = 3, json = 0;
  uint64_t max_mem = replay_default_max_mem();
  struct replay_opts o = { .touch = TOUCH_FULL };
  tlb_geom_get("auto", &o.geom, NULL, 0);
  for (int i = 1; i < argc; i++) {
    int r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(compare_usage, stdout);
      return 0;
    }
    if ((r = parse_replay_opt(argc, argv, &i, &o))) {
      if (r < 0) {
        fprintf(stderr, "hpm compare: bad value for %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--allocators") && i + 1 < argc)
      allocs = argv[++i];
    else if (!strcmp(argv[i], "--tunables") && i + 1 < argc)
      tuns = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
      if (n == MAX_CONFIGS) {
        fprintf(stderr, "hpm compare: at most %d configurations\n", MAX_CONFIGS);
        return 2;
      }
      const char *a = argv[++i], *colon = strchr(a, ':');
      size_t alen = colon ? (size_t)(colon - a) : strlen(a);
      const char *t = colon ? colon + 1 : "";
      if (alen >= sizeof cfg[n].alloc || strlen(t) >= sizeof cfg[n].tun) {
        fprintf(stderr, "hpm compare: --config %s: too long\n", a);
        return 2;
      }
      memcpy(cfg[n].alloc, a, alen);
      cfg[n].alloc[alen] = 0;
      memcpy(cfg[n].tun, t, strlen(t) + 1);
      n++;
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      if (parse_int_opt("compare", "--reps", argv[++i], 1, MAX_REPS, &reps)) return 2;
    } else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
      svg = argv[++i];
    else if (!strcmp(argv[i], "--max-memory") && i + 1 < argc) {
      if (parse_size(argv[++i], &max_mem)) {
        fprintf(stderr, "hpm compare: bad --max-memory\n");
        return 2;
      }
    } else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "hpm compare: bad argument %s\n%s", argv[i], compare_usage);
      return 2;
    }
  }
  if (!file) {
    fputs(compare_usage, stderr);
    return 2;
  }
  if (n == 0) {
    static char al[16][512], tl[16][512];
    char expanded[1024];
    if (!strcmp(allocs, "all")) {
      size_t len = (size_t)snprintf(expanded, sizeof expanded, "glibc,hpmalloc"); /* fits */
      const char *opt[] = { "jemalloc", "mimalloc", "tcmalloc" };
      for (int k = 0; k < 3; k++) {
        char *p = find_allocator(opt[k]);
        if (p && *p) { /* fits: at most 42 bytes in all */
          int m = snprintf(expanded + len, sizeof expanded - len, ",%s", opt[k]);
          if (m > 0) len += (size_t)m;
        }
        free(p);
      }
      allocs = expanded;
    }
    int na = split(allocs, ',', al, 16), nt = split(tuns, ',', tl, 16);
    for (int a = 0; a < na; a++)
      for (int t = 0; t < nt && n < MAX_CONFIGS; t++, n++) {
        /* Truncated to fit, as split() does.  */
        (void)snprintf(cfg[n].alloc, sizeof cfg[n].alloc, "%.255s", al[a]);
        (void)snprintf(cfg[n].tun, sizeof cfg[n].tun, "%.511s", tl[t]);
      }
  }
  for (int c = 0; c < n; c++) {
    set_label(&cfg[c]);
    char *p = find_allocator(cfg[c].alloc);
    if (p && !*p) {
      fprintf(stderr, "hpm compare: allocator %s not found\n", cfg[c].alloc);
      free(p);
      return 1;
    }
    free(p);
  }
  o.walk_ns = tlbcost_cached_ns();
  int fd = replay_load(file, &o, max_mem);
  if (fd < 0) return 1;
  for (int r = 0; r < reps; r++)
    for (int c = 0; c < n; c++) {
      progress("compare: run %d/%d: %s", r * n + c + 1, reps * n, cfg[c].label);
      if (run_config(fd, &o, &cfg[c])) {
        progress_done();
        close(fd);
        return 1;
      }
    }
  progress_done();
  close(fd);
  for (int c = 0; c < n; c++) medians(&cfg[c]);
  if (json)
    print_json(file, cfg, n, reps);
  else
    print_table(cfg, n, reps);
  if (svg && write_svg(svg, file, cfg, n)) {
    fprintf(stderr, "hpm compare: cannot write %s\n", svg);
    return 1;
  }
  return 0;
}

/* ============================================================================ tune */
static const char tune_usage[] =
    "usage: hpm tune FILE [--allocator NAME] [--objective wall|cpu|rss|tlb] [--reps N] [replay options]\n"
    "Searches the malloc tunables by replaying FILE (coordinate descent: one\n"
    "tunable at a time, each candidate run interleaved with the current best,\n"
    "N times, medians compared; a change is kept when it gains more than 3%):\n"
    "  glibc.malloc.hugetlb (0, 1, and 2 when the hugetlb pool has pages),\n"
    "  mmap_threshold, top_pad, trim_threshold, arena_max, tcache_count.\n"
    "Objectives: wall or cpu time, rss (peak RSS growth), tlb (modelled TLB cycles).\n"
    "Prints every run and the GLIBC_TUNABLES line it recommends with the gain.\n"
    "A change is kept only if every one of its runs beats every run of the current\n"
    "best.  Defaults: --allocator hpmalloc --objective cpu --reps 3 --touch full.\n";

struct tparam {
  const char *name;
  const char *values[6];
};

static int hugetlb_pool(void) {
  FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
  long n = 0;
  if (f) {
    char line[64];
    unsigned long long v = 0;
    if (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      if (parse_uint(line, 0, LONG_MAX, &v)) v = 0;
    }
    n = (long)v;
    (void)fclose(f); /* opened for reading: nothing to lose */
  }
  return n > 0;
}

static void build_tun(char *out, size_t len, const struct tparam *ps, int np, const int *choice) {
  out[0] = 0;
  for (int k = 0; k < np; k++) {
    if (choice[k] < 0) continue;
    size_t l = strlen(out);
    /* fits: the six names and values of cmd_tune take under 200 bytes */
    (void)snprintf(out + l, len - l, "%sglibc.malloc.%s=%s", l ? ":" : "", ps[k].name, ps[k].values[choice[k]]);
  }
}

int cmd_tune(int argc, char **argv) {
  const char *file = NULL, *alloc = "hpmalloc", *objective = "cpu";
  int reps = 3;
  uint64_t max_mem = replay_default_max_mem();
  struct replay_opts o = { .touch = TOUCH_FULL };
  tlb_geom_get("auto", &o.geom, NULL, 0);
  for (int i = 1; i < argc; i++) {
    int r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(tune_usage, stdout);
      return 0;
    }
    if ((r = parse_replay_opt(argc, argv, &i, &o))) {
      if (r < 0) {
        fprintf(stderr, "hpm tune: bad value for %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--allocator") && i + 1 < argc)
      alloc = argv[++i];
    else if (!strcmp(argv[i], "--objective") && i + 1 < argc) {
      objective = argv[++i];
      if (strcmp(objective, "wall") != 0 && strcmp(objective, "cpu") != 0 && strcmp(objective, "rss") != 0 &&
          strcmp(objective, "tlb") != 0) {
        fprintf(stderr, "hpm tune: --objective wall|cpu|rss|tlb\n");
        return 2;
      }
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      if (parse_int_opt("tune", "--reps", argv[++i], 1, MAX_REPS, &reps)) return 2;
    } else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "hpm tune: bad argument %s\n%s", argv[i], tune_usage);
      return 2;
    }
  }
  if (!file) {
    fputs(tune_usage, stderr);
    return 2;
  }
  char *lp = find_allocator(alloc);
  if (lp && !*lp) {
    fprintf(stderr, "hpm tune: allocator %s not found\n", alloc);
    free(lp);
    return 1;
  }
  free(lp);
  if (strlen(alloc) >= sizeof((struct config *)NULL)->alloc) {
    fprintf(stderr, "hpm tune: --allocator %s: name too long\n", alloc);
    return 2;
  }
  int metric = !strcmp(objective, "wall") ? 0 : !strcmp(objective, "cpu") ? 1 : !strcmp(objective, "rss") ? 5 : 11;
  struct tparam ps[] = {
    { "hugetlb", { "0", "1", hugetlb_pool() ? "2" : NULL } },
    { "mmap_threshold", { "131072", "1048576", "33554432" } },
    { "top_pad", { "0", "2097152", "67108864" } },
    { "trim_threshold", { "131072", "16777216", "268435456" } },
    { "arena_max", { "1", "2", "8" } },
    { "tcache_count", { "0", "16", "128" } },
  };
  int np = (int)(sizeof ps / sizeof *ps);
  int best[8], cand[8];
  for (int k = 0; k < np; k++) best[k] = -1;
  o.walk_ns = tlbcost_cached_ns();
  int fd = replay_load(file, &o, max_mem);
  if (fd < 0) return 1;

  static struct config base, cur, cc;
  (void)snprintf(base.alloc, sizeof base.alloc, "%s", alloc); /* fits: checked above */
  base.tun[0] = 0;
  set_label(&base);
  int total_runs = 0;
  printf("tuning %s under %s, objective %s (median of %d)\n", file, alloc, objective, reps);
  for (int r = 0; r < reps; r++) {
    if (run_config(fd, &o, &base)) {
      close(fd);
      return 1;
    }
    total_runs++;
  }
  medians(&base);
  printf("  %-70s %12.6g\n", "(defaults)", base.med[metric]);
  double best_v = base.med[metric];
  for (int k = 0; k < np; k++) {
    for (int v = 0; v < 6 && ps[k].values[v]; v++) {
      memcpy(cand, best, sizeof cand);
      cand[k] = v;
      memset(&cc, 0, sizeof cc);
      memset(&cur, 0, sizeof cur);
      (void)snprintf(cc.alloc, sizeof cc.alloc, "%s", alloc); /* fits: checked above */
      build_tun(cc.tun, sizeof cc.tun, ps, np, cand);
      (void)snprintf(cur.alloc, sizeof cur.alloc, "%s", alloc); /* fits: checked above */
      build_tun(cur.tun, sizeof cur.tun, ps, np, best);
      for (int r = 0; r < reps; r++) { /* interleaved with the current best */
        progress("tune: %s=%s, run %d/%d", ps[k].name, ps[k].values[v], r + 1, reps);
        if (run_config(fd, &o, &cc) || run_config(fd, &o, &cur)) {
          progress_done();
          close(fd);
          return 1;
        }
        total_runs += 2;
      }
      progress_done();
      medians(&cc);
      medians(&cur);
      double rel = cur.med[metric] > 0 ? cc.med[metric] / cur.med[metric] : 1;
      /* Keep only a clear gain: medians 3% apart and no overlap of the runs.  */
      double cmax = 0, bmin = 1e300;
      for (int r = 0; r < cc.runs; r++)
        if (cc.v[r][metric] > cmax) cmax = cc.v[r][metric];
      for (int r = 0; r < cur.runs; r++)
        if (cur.v[r][metric] < bmin) bmin = cur.v[r][metric];
      int keep = rel < 0.97 && cmax < bmin;
      printf("  %-70s %12.6g  vs %12.6g  %+6.1f%%%s\n", cc.tun, cc.med[metric], cur.med[metric], (rel - 1) * 100,
             keep ? "  kept" : "");
      if (keep) {
        best[k] = v;
        best_v = cc.med[metric];
      }
    }
  }
  /* Final: best against the defaults, interleaved.  */
  memset(&cc, 0, sizeof cc);
  memset(&base, 0, sizeof base);
  (void)snprintf(cc.alloc, sizeof cc.alloc, "%s", alloc);     /* fits: checked above */
  (void)snprintf(base.alloc, sizeof base.alloc, "%s", alloc); /* fits: checked above */
  build_tun(cc.tun, sizeof cc.tun, ps, np, best);
  for (int r = 0; r < reps; r++) {
    if (run_config(fd, &o, &cc) || run_config(fd, &o, &base)) {
      close(fd);
      return 1;
    }
    total_runs += 2;
  }
  close(fd);
  medians(&cc);
  medians(&base);
  (void)best_v;
  double gain = cc.med[metric] > 0 ? base.med[metric] / cc.med[metric] : 1;
  printf("%d runs; final check, %d interleaved runs each: %s %.6g with the tunables vs %.6g with the defaults\n",
         total_runs, reps, objective, cc.med[metric], base.med[metric]);
  if (cc.tun[0] && gain > 1.03)
    printf("recommended: GLIBC_TUNABLES=%s   (%.2fx on %s)\n", cc.tun, gain, objective);
  else
    printf("recommended: GLIBC_TUNABLES=   (no tunable gained more than 3%% in the final check; the defaults stand)\n");
  return 0;
}
