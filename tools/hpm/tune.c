/* hpm tune: a search of the malloc tunables for one trace.  Coordinate
   descent: one tunable at a time, each candidate value run interleaved
   with the current best, medians compared; then the best against the
   defaults.  Each step is printed as it is decided.  MIT licence.  */
#include "compare.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_VALUES 6

struct tune_opts {
  const char *file, *alloc;
  int objective; /* index in objectives[] */
  int reps;
  struct replay_opts ro;
};

/* --objective, in the order of its choices.  */
static const struct {
  const char *name;
  enum metric metric;
} objectives[] = { { "wall", M_WALL }, { "cpu", M_CPU }, { "rss", M_PEAK_RSS }, { "tlb", M_TLB_CYCLES } };

static const struct arg_opt tune_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct tune_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--allocator", .kind = ARG_STR, .off = offsetof(struct tune_opts, alloc), .meta = "NAME" },
  { .name = "--objective",
    .kind = ARG_CHOICE,
    .off = offsetof(struct tune_opts, objective),
    .meta = "wall|cpu|rss|tlb" },
  { .name = "--reps", .kind = ARG_INT, .off = offsetof(struct tune_opts, reps), .min = 1, .max = MAX_REPS },
  { .kind = ARG_TABLE, .off = offsetof(struct tune_opts, ro), .sub = replay_common_args },
  { 0 },
};

static const struct arg_cmd tune_cmd = {
  .name = "tune",
  .synopsis = "usage: hpm tune FILE [--allocator NAME] [--objective wall|cpu|rss|tlb] [--reps N] [replay options]\n",
  .help = "Searches the malloc tunables by replaying FILE (coordinate descent: one\n"
          "tunable at a time, each candidate run interleaved with the current best,\n"
          "N times, medians compared; a change is kept when it gains more than 3%):\n"
          "  glibc.malloc.hugetlb (0, 1, and 2 when the hugetlb pool has pages),\n"
          "  mmap_threshold, top_pad, trim_threshold, arena_max, tcache_count.\n"
          "Objectives: wall or cpu time, rss (peak RSS growth), tlb (modelled TLB cycles).\n"
          "Prints every run and the GLIBC_TUNABLES line it recommends with the gain.\n"
          "A change is kept only if every one of its runs beats every run of the current\n"
          "best.  Defaults: --allocator hpmalloc --objective cpu --reps 3 --touch full.\n",
  .args = tune_args,
};

/* One tunable and the values tried (NULL-terminated when fewer).  */
struct tparam {
  const char *name;
  const char *values[MAX_VALUES];
};

/* The search: the tunables, the best value of each so far (-1: the
   default), the image and the runs made.  */
struct tuner {
  const struct tune_opts *o;
  enum metric metric;
  struct tparam ps[6];
  int np;
  int best[6];
  int fd, total_runs;
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

static void tune_params(struct tuner *t) {
  const struct tparam ps[] = {
    { "hugetlb", { "0", "1", hugetlb_pool() ? "2" : NULL } },
    { "mmap_threshold", { "131072", "1048576", "33554432" } },
    { "top_pad", { "0", "2097152", "67108864" } },
    { "trim_threshold", { "131072", "16777216", "268435456" } },
    { "arena_max", { "1", "2", "8" } },
    { "tcache_count", { "0", "16", "128" } },
  };
  t->np = (int)(sizeof ps / sizeof *ps);
  memcpy(t->ps, ps, sizeof ps);
  for (int k = 0; k < t->np; k++) t->best[k] = -1;
}

/* C for the tuner's allocator with the tunables CHOICE picks.  */
static void tuned_config(const struct tuner *t, const int *choice, struct config *c) {
  char tun[512];
  tun[0] = 0;
  for (int k = 0; k < t->np; k++) {
    if (choice[k] < 0) continue;
    size_t l = strlen(tun);
    /* fits: the six names and values take under 200 bytes */
    (void)snprintf(tun + l, sizeof tun - l, "%sglibc.malloc.%s=%s", l ? ":" : "", t->ps[k].name,
                   t->ps[k].values[choice[k]]);
  }
  config_init(c, t->o->alloc, tun);
}

/* O->reps runs of A, each followed by one of B when B is given; the
   medians of both.  PARAM and VALUE name the candidate in the progress
   line (PARAM NULL: no progress line).  Returns 0, or -1 after a
   message.  */
static int run_reps(struct tuner *t, struct config *a, struct config *b, const char *param, const char *value) {
  int reps = t->o->reps, rc = 0;
  for (int r = 0; r < reps && rc == 0; r++) {
    if (param) progress("tune: %s=%s, run %d/%d", param, value, r + 1, reps);
    rc = config_run(t->fd, &t->o->ro, a) || (b && config_run(t->fd, &t->o->ro, b)) ? -1 : 0;
    t->total_runs += b ? 2 : 1;
  }
  if (param) progress_done();
  config_medians(a);
  if (b) config_medians(b);
  return rc;
}

/* --- reports ------------------------------------------------------------------ */
static void report_step(const struct tuner *t, const struct config *cand, const struct config *cur, double rel,
                        int keep) {
  printf("  %-70s %12.6g  vs %12.6g  %+6.1f%%%s\n", cand->tun, cand->med[t->metric], cur->med[t->metric],
         (rel - 1) * 100, keep ? "  kept" : "");
}

static void report_final(const struct tuner *t, const struct config *best, const struct config *defaults) {
  const char *objective = objectives[t->o->objective].name;
  double gain = best->med[t->metric] > 0 ? defaults->med[t->metric] / best->med[t->metric] : 1;
  printf("%d runs; final check, %d interleaved runs each: %s %.6g with the tunables vs %.6g with the defaults\n",
         t->total_runs, t->o->reps, objective, best->med[t->metric], defaults->med[t->metric]);
  if (best->tun[0] && gain > 1.03)
    printf("recommended: GLIBC_TUNABLES=%s   (%.2fx on %s)\n", best->tun, gain, objective);
  else
    printf("recommended: GLIBC_TUNABLES=   (no tunable gained more than 3%% in the final check; the defaults stand)\n");
}

/* --- the search --------------------------------------------------------------- */
/* Value V of tunable K against the current best, interleaved; kept (in
   T->best) only for a clear gain: medians 3% apart and every run of the
   candidate better than every run of the best.  Returns 0, or -1 after a
   message.  */
static int try_value(struct tuner *t, int k, int v) {
  static struct config cand, cur;
  int choice[6];
  memcpy(choice, t->best, sizeof choice);
  choice[k] = v;
  tuned_config(t, choice, &cand);
  tuned_config(t, t->best, &cur);
  if (run_reps(t, &cand, &cur, t->ps[k].name, t->ps[k].values[v])) return -1;
  enum metric m = t->metric;
  double rel = cur.med[m] > 0 ? cand.med[m] / cur.med[m] : 1;
  double cmax = 0, bmin = 1e300;
  for (int r = 0; r < cand.runs; r++)
    if (cand.v[r][m] > cmax) cmax = cand.v[r][m];
  for (int r = 0; r < cur.runs; r++)
    if (cur.v[r][m] < bmin) bmin = cur.v[r][m];
  int keep = rel < 0.97 && cmax < bmin;
  report_step(t, &cand, &cur, rel, keep);
  if (keep) t->best[k] = v;
  return 0;
}

/* The defaults, then every value of every tunable in turn, then the best
   against the defaults.  Returns 0, or 1 after a message.  */
static int tune_run(struct tuner *t) {
  static struct config defaults, best;
  int none[6] = { -1, -1, -1, -1, -1, -1 };
  tuned_config(t, none, &defaults);
  printf("tuning %s under %s, objective %s (median of %d)\n", t->o->file, t->o->alloc, objectives[t->o->objective].name,
         t->o->reps);
  if (run_reps(t, &defaults, NULL, NULL, NULL)) return 1;
  printf("  %-70s %12.6g\n", "(defaults)", defaults.med[t->metric]);
  for (int k = 0; k < t->np; k++)
    for (int v = 0; v < MAX_VALUES && t->ps[k].values[v]; v++)
      if (try_value(t, k, v)) return 1;
  tuned_config(t, t->best, &best);
  tuned_config(t, none, &defaults);
  if (run_reps(t, &best, &defaults, NULL, NULL)) return 1;
  report_final(t, &best, &defaults);
  return 0;
}

/* The options, checked: ARGS_RUN, or the exit status (1: the allocator is
   not installed).  */
static int tune_parse(int argc, char **argv, struct tune_opts *o) {
  *o = (struct tune_opts){ .alloc = "hpmalloc", .objective = 1, .reps = 3, .ro = { .touch = TOUCH_FULL } };
  tlb_geom_get("auto", &o->ro.geom, NULL, 0);
  int rc = args_parse(&tune_cmd, argc, argv, o);
  if (rc != ARGS_RUN) return rc;
  if (!allocator_found(o->alloc)) {
    fprintf(stderr, "hpm tune: allocator %s not found\n", o->alloc);
    return 1;
  }
  if (strlen(o->alloc) >= sizeof((struct config *)NULL)->alloc)
    return args_usage_error(&tune_cmd, "--allocator %s: name too long", o->alloc);
  o->ro.walk_ns = tlbcost_cached_ns();
  return ARGS_RUN;
}

int cmd_tune(int argc, char **argv) {
  struct tune_opts o;
  struct tuner t = { .o = &o };
  int rc = tune_parse(argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  t.metric = objectives[o.objective].metric;
  tune_params(&t);
  t.fd = replay_load(o.file, &o.ro, replay_default_max_mem());
  if (t.fd < 0) return 1;
  rc = tune_run(&t);
  close(t.fd);
  return rc;
}
