/* SPDX-License-Identifier: MIT */
/* hpm tune: a search of the malloc tunables for one trace.  Coordinate
   descent: one tunable at a time, each candidate value run interleaved
   with the current best until both have enough runs (runs.c), kept only
   when its gain clears the noise; then every kept change must pay on its
   own (an ablation), and what is left is measured afresh against the
   defaults.  Each step is printed as it is decided.

   The rule for a candidate in the search (it must clear both):
   - a two-sided Mann-Whitney U test (stats.c) of the candidate's runs
     against the best's at p < FAMILY_ALPHA / M, M the number of
     candidates the search tries (Bonferroni: the chance that any of the
     M steps keeps a change that does nothing stays below FAMILY_ALPHA;
     Holm's procedure needs every p-value at once, which a search that
     builds on its own decisions does not have); a candidate whose runs
     are beyond the noise and worse is reported "slower";
   - a median gain of at least 3%: smaller ones are not worth a change to
     production tunables even when they are real.
   Then the ablation, with two or more kept changes: the best and the best
   without each kept change, interleaved; a change stays only when
   dropping it makes the objective worse, the K one-sided tests corrected
   by Holm-Bonferroni at ALPHA, and by at least 3%.  Last, the changes
   left against the defaults, measured afresh, two-sided at ALPHA: what a
   recommendation must pass.  arena_max is not searched on a trace whose
   operations are all on one thread: it cannot change a single-threaded
   heap.  --null-test runs every candidate with the best so far's
   tunables (every difference then is noise) to check all this on this
   machine: it must recommend nothing.  MIT licence.  */
#include "compare.h"
#include "stats.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_VALUES 6
#define NPARAMS 6
#define ALPHA 0.01        /* the level of the ablation (Holm) and of the final check */
#define FAMILY_ALPHA 0.05 /* the search's: the chance of keeping any change that does nothing */
#define MIN_GAIN 1.03     /* the smallest median gain kept */

/* The tunables searched (glibc.malloc.NAME), in the order tried.  */
static const char *const param_names[NPARAMS] = { "hugetlb",        "mmap_threshold", "top_pad",
                                                  "trim_threshold", "arena_max",      "tcache_count" };

struct tune_opts {
  const char *file, *alloc;
  int objective; /* index in objectives[] */
  int null_test;
  unsigned search; /* bit k: param_names[k] is searched */
  struct run_policy policy;
  struct replay_opts ro;
};

/* --objective, in the order of its choices.  */
static const struct {
  const char *name, *words;
  enum metric metric;
} objectives[] = { { "wall", "wall time", M_WALL },
                   { "cpu", "CPU time (user + sys)", M_CPU },
                   { "rss", "peak RSS growth", M_PEAK_RSS },
                   { "tlb", "modelled TLB cycles", M_TLB_CYCLES } };

/* --search LIST into the unsigned FIELD.  */
static int search_arg(void *field, const char *val, char *err, size_t errlen) {
  unsigned set = 0;
  for (const char *p = val; *p;) {
    size_t len = strcspn(p, ","), k = 0;
    while (k < NPARAMS && (strlen(param_names[k]) != len || strncmp(p, param_names[k], len) != 0)) k++;
    if (k == NPARAMS) {
      /* a message: truncation is harmless */
      (void)snprintf(err, errlen,
                     "bad value '%.*s' (expected a comma-separated list of hugetlb, mmap_threshold, top_pad, "
                     "trim_threshold, arena_max and tcache_count)",
                     (int)(len < 100 ? len : 100), p);
      return -1;
    }
    set |= 1u << k;
    p += len + (p[len] == ',');
  }
  *(unsigned *)field = set;
  return 0;
}

static const struct arg_opt tune_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct tune_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--allocator", .kind = ARG_STR, .off = offsetof(struct tune_opts, alloc), .meta = "NAME" },
  { .name = "--objective",
    .kind = ARG_CHOICE,
    .off = offsetof(struct tune_opts, objective),
    .meta = "wall|cpu|rss|tlb" },
  { .name = "--search", .kind = ARG_FN, .off = offsetof(struct tune_opts, search), .meta = "LIST", .set = search_arg },
  { .name = "--null-test", .kind = ARG_FLAG, .off = offsetof(struct tune_opts, null_test) },
  { .kind = ARG_TABLE, .off = offsetof(struct tune_opts, policy), .sub = measure_args },
  { .kind = ARG_TABLE, .off = offsetof(struct tune_opts, ro), .sub = replay_common_args },
  { 0 },
};

static const struct arg_cmd tune_cmd = {
  .name = "tune",
  .synopsis = "usage: hpm tune FILE [--allocator hpmalloc|glibc|PATH.so] [--objective wall|cpu|rss|tlb]\n"
              "                     [--search LIST] [--reps N] [--min-time SECONDS] [--null-test] [replay options]\n",
  .help = "Searches the malloc tunables by replaying FILE: one tunable at a time, each\n"
          "candidate value run interleaved with the best so far until both have at least\n"
          "N runs (--reps; default: the fewest that can reach the level below, plus 2,\n"
          "at least 5) totalling SECONDS of replay (--min-time, default 0.5).  With M\n"
          "candidates, a change is kept only when a two-sided Mann-Whitney U test of its\n"
          "runs against the best's gives p < 0.05/M (Bonferroni) and its median gains at\n"
          "least 3%; a candidate worse beyond the noise is reported \"slower\".  With two\n"
          "or more kept, each must pay on its own: the best without it must be worse\n"
          "(one-sided tests, Holm-Bonferroni at 0.01, and by 3%), else it is dropped.\n"
          "What is left is measured afresh against the defaults (two-sided, p < 0.01,\n"
          "3%) and recommended only if it passes; otherwise tune says \"no change\n"
          "recommended\".  arena_max is not searched when every operation of the trace\n"
          "is on one thread.\n"
          "Tunables (glibc.malloc.*; --search picks some, comma-separated): hugetlb (0, 1,\n"
          "and 2 when the hugetlb pool has pages), mmap_threshold, top_pad,\n"
          "trim_threshold, arena_max, tcache_count.\n"
          "Objectives (lower is better): wall or cpu time, rss (peak RSS growth), tlb\n"
          "(modelled TLB cycles).  --null-test runs every candidate with the best so\n"
          "far's tunables, so that every difference is noise: a check of the rule on this\n"
          "machine, which must recommend nothing.  Ctrl-C stops the search and prints\n"
          "where it was, marked partial (exit status 130).\n"
          "Defaults: --allocator hpmalloc --objective cpu --touch full.\n",
  .args = tune_args,
};

/* One tunable and the values tried (NULL-terminated when fewer).  */
struct tparam {
  const char *name;
  const char *values[MAX_VALUES];
};

/* The search: the tunables, the best value of each so far (-1: the
   default), the image, the runs made and the changes kept.  */
struct tuner {
  const struct tune_opts *o;
  enum metric metric;
  struct tparam ps[NPARAMS];
  int best[NPARAMS];
  int fd, total_runs, kept;
  int candidates; /* how many the search tries */
  double alpha;   /* each candidate's level: FAMILY_ALPHA / candidates */
  int min_runs;   /* fewer runs each can never reach it */
  int single;     /* the trace's operations are all on one thread */
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
  const struct tparam ps[NPARAMS] = {
    { param_names[0], { "0", "1", hugetlb_pool() ? "2" : NULL } },
    { param_names[1], { "131072", "1048576", "33554432" } },
    { param_names[2], { "0", "2097152", "67108864" } },
    { param_names[3], { "131072", "16777216", "268435456" } },
    { param_names[4], { "1", "2", "8" } },
    { param_names[5], { "0", "16", "128" } },
  };
  memcpy(t->ps, ps, sizeof ps);
  for (int k = 0; k < NPARAMS; k++) t->best[k] = -1;
}

/* The GLIBC_TUNABLES string CHOICE picks, into BUF.  */
static void tunables_of(const struct tuner *t, const int *choice, char *buf, size_t n) {
  buf[0] = 0;
  for (int k = 0; k < NPARAMS; k++) {
    if (choice[k] < 0) continue;
    size_t l = strlen(buf);
    /* fits: callers pass 512 bytes; the six names and values take under 200 */
    (void)snprintf(buf + l, n - l, "%sglibc.malloc.%s=%s", l ? ":" : "", t->ps[k].name, t->ps[k].values[choice[k]]);
  }
}

/* Is tunable K searched?  */
static int searched(const struct tuner *t, int k) {
  return (t->o->search >> k & 1) && !(t->single && !strcmp(t->ps[k].name, "arena_max"));
}

/* The candidates, each one's level and the runs that level needs.  */
static void tune_levels(struct tuner *t) {
  t->candidates = 0;
  for (int k = 0; k < NPARAMS; k++)
    for (int v = 0; v < MAX_VALUES && t->ps[k].values[v] && searched(t, k); v++) t->candidates++;
  t->alpha = FAMILY_ALPHA / (t->candidates ? t->candidates : 1);
  t->min_runs = stats_mwu_min_runs(t->alpha);
}

/* --- reports ------------------------------------------------------------------ */
static void report_head(const struct tuner *t) {
  const struct tune_opts *o = t->o;
  printf("tune %s under %s, objective %s (%s; lower is better)\n", o->file, o->alloc, objectives[o->objective].name,
         objectives[o->objective].words);
  printf("each candidate runs interleaved with the best so far, each at least %d runs and %.2g s of replay;\n"
         "%d candidates: a change is kept when a two-sided Mann-Whitney U test gives p < %.2g (%.2g / %d,\n"
         "Bonferroni) and its median gains >= %.0f%%; fewer than %d runs each cannot reach that level\n",
         o->policy.reps, o->policy.min_time, t->candidates, t->alpha, FAMILY_ALPHA, t->candidates, (MIN_GAIN - 1) * 100,
         t->min_runs);
  if (t->single && (o->search >> 4 & 1))
    printf("arena_max not searched: every operation of this trace is on one thread, whose heap is the main arena\n");
  if (o->null_test)
    printf("NULL TEST: every candidate runs with the best so far's tunables, so every difference is noise\n");
  printf("\n  %-38s %-26s %-26s %-18s %8s %7s\n", "candidate (on top of the best so far)", "median [range]",
         "best so far", "ratio [95% CI]", "p", "runs");
  (void)fflush(stdout);
}

/* One decided step: CAND (named NAME) against CUR.  */
static void report_step(const struct tuner *t, const char *name, const struct config *cand, const struct config *cur,
                        const struct verdict *v, int keep) {
  char a[128], b[128], r[64];
  fmt_spread(cand, t->metric, a, sizeof a);
  fmt_spread(cur, t->metric, b, sizeof b);
  (void)snprintf(r, sizeof r, "%.3g [%.3g-%.3g]", v->ratio, v->lo, v->hi); /* fits */
  printf("  %-38s ", name);
  print_cell(a, 27);
  print_cell(b, 27);
  char few[64];
  (void)snprintf(few, sizeof few, "(too few runs to tell: %d needed)", t->min_runs); /* fits */
  printf("%-18s %8.2g %3d+%-3d %s\n", r, v->p, cand->runs, cur->runs,
         keep                                                  ? "kept"
         : cand->runs < t->min_runs || cur->runs < t->min_runs ? few
         : v->p >= t->alpha                                    ? "noise"
         : v->ratio > 1                                        ? "slower"
         : v->ratio > 1.0 / MIN_GAIN                           ? "gain below 3%"
                                                               : "");
  (void)fflush(stdout); /* as it is decided, into a pipe or a file too; errors show at exit */
}

/* Is CAND better than CUR beyond the noise at level ALPHA (V filled)?  */
static int clears_noise(const struct tuner *t, const struct config *cand, const struct config *cur, double alpha,
                        struct verdict *v) {
  compare_configs(cand, cur, t->metric, v);
  return v->p < alpha && cand->med[t->metric] * MIN_GAIN <= cur->med[t->metric];
}

/* --- the search --------------------------------------------------------------- */
/* Value V of tunable K against the current best, interleaved; kept (in
   T->best) only when it clears the noise.  Returns 0, 1 after a message,
   or RUN_INTERRUPTED.  */
static int try_value(struct tuner *t, int k, int v) {
  static struct config cand, cur;
  char name[128], all[512], tun[512];
  int choice[NPARAMS];
  memcpy(choice, t->best, sizeof choice);
  choice[k] = v;
  tunables_of(t, choice, all, sizeof all);
  tunables_of(t, t->best, tun, sizeof tun);
  (void)snprintf(name, sizeof name, "glibc.malloc.%s=%s", t->ps[k].name, t->ps[k].values[v]); /* fits */
  config_init(&cand, t->o->alloc, t->o->null_test ? tun : all);
  config_init(&cur, t->o->alloc, tun);
  struct config *pair[2] = { &cand, &cur };
  int rc = measure(t->fd, &t->o->ro, pair, 2, &t->o->policy, "tune");
  t->total_runs += cand.runs + cur.runs;
  if (rc) return rc;
  struct verdict verdict;
  int keep = clears_noise(t, &cand, &cur, t->alpha, &verdict);
  report_step(t, name, &cand, &cur, &verdict, keep);
  if (keep) {
    t->best[k] = v;
    t->kept++;
  }
  return 0;
}

/* Every kept change must pay on its own: with two or more kept, the best
   and the best without each of them, interleaved; a change whose absence
   does not make the objective worse (one-sided Mann-Whitney U of the
   best's runs below the ablated one's, Holm-Bonferroni over the K changes
   at ALPHA, and by at least 3%) is dropped.  Returns 0, 1 after a message,
   or RUN_INTERRUPTED.  */
static int ablation(struct tuner *t) {
  static struct config cfg[NPARAMS + 1];
  struct config *list[NPARAMS + 1];
  int which[NPARAMS], k = 0, reject[NPARAMS];
  double p[NPARAMS];
  char tun[512];
  if (t->kept < 2) return 0;
  for (int i = 0; i < NPARAMS; i++)
    if (t->best[i] >= 0) which[k++] = i;
  tunables_of(t, t->best, tun, sizeof tun);
  config_init(&cfg[0], t->o->alloc, t->o->null_test ? "" : tun);
  list[0] = &cfg[0];
  for (int j = 0; j < k; j++) {
    int choice[NPARAMS];
    memcpy(choice, t->best, sizeof choice);
    choice[which[j]] = -1;
    tunables_of(t, choice, tun, sizeof tun);
    config_init(&cfg[j + 1], t->o->alloc, t->o->null_test ? "" : tun);
    list[j + 1] = &cfg[j + 1];
  }
  int rc = measure(t->fd, &t->o->ro, list, k + 1, &t->o->policy, "tune: ablation");
  for (int j = 0; j <= k; j++) t->total_runs += cfg[j].runs;
  if (rc) return rc;
  for (int j = 0; j < k; j++) {
    double va[MAX_RUNS], vb[MAX_RUNS];
    config_values(&cfg[0], t->metric, va);
    config_values(&cfg[j + 1], t->metric, vb);
    p[j] = stats_mwu_less(va, cfg[0].runs, vb, cfg[j + 1].runs);
  }
  stats_holm(p, k, ALPHA, reject);
  printf("\nablation, %d interleaved runs each: the best without each kept change (Holm-Bonferroni over %d one-sided "
         "tests at %.2g)\n",
         cfg[0].runs, k, ALPHA);
  for (int j = 0; j < k; j++) {
    char a[128], b[128];
    int pays = reject[j] && cfg[0].med[t->metric] * MIN_GAIN <= cfg[j + 1].med[t->metric];
    fmt_spread(&cfg[j + 1], t->metric, a, sizeof a);
    fmt_spread(&cfg[0], t->metric, b, sizeof b);
    printf("  without glibc.malloc.%s=%s: %s vs %s, p = %.2g: %s\n", t->ps[which[j]].name,
           t->ps[which[j]].values[t->best[which[j]]], a, b, p[j],
           pays ? "it pays, kept" : "it does not pay on its own, dropped");
    if (!pays) {
      t->best[which[j]] = -1;
      t->kept--;
    }
  }
  (void)fflush(stdout);
  return 0;
}

/* The best against the defaults, measured afresh; the recommendation.
   Returns 0, 1 after a message, or RUN_INTERRUPTED.  */
static int final_check(struct tuner *t) {
  static struct config best, defaults;
  const char *obj = objectives[t->o->objective].name;
  char tun[512], a[128], b[128];
  struct verdict v;
  if (!t->kept) {
    printf("\nno change recommended: no tunable's gain cleared the noise (two-sided Mann-Whitney U p < %.2g and a "
           "median gain of at least %.0f%%); the defaults stand\n",
           t->alpha, (MIN_GAIN - 1) * 100);
    return 0;
  }
  tunables_of(t, t->best, tun, sizeof tun);
  config_init(&best, t->o->alloc, t->o->null_test ? "" : tun);
  config_init(&defaults, t->o->alloc, "");
  struct config *pair[2] = { &best, &defaults };
  int rc = measure(t->fd, &t->o->ro, pair, 2, &t->o->policy, "tune: final check");
  t->total_runs += best.runs + defaults.runs;
  if (rc) return rc;
  int ok = clears_noise(t, &best, &defaults, ALPHA, &v);
  fmt_spread(&best, t->metric, a, sizeof a);
  fmt_spread(&defaults, t->metric, b, sizeof b);
  printf("\nfinal check, %d+%d interleaved runs: %s %s with GLIBC_TUNABLES=%s vs %s with the defaults;\n"
         "ratio %.3g [95%% CI %.3g-%.3g], two-sided Mann-Whitney U p = %.2g\n",
         best.runs, defaults.runs, obj, a, tun, b, v.ratio, v.lo, v.hi, v.p);
  if (ok)
    printf("recommended: GLIBC_TUNABLES=%s   (%.3gx on %s, 95%% CI %.3g-%.3g)\n", tun, 1 / v.ratio, obj, 1 / v.hi,
           1 / v.lo);
  else
    printf("no change recommended: the changes kept did not clear the noise against the defaults "
           "(p < %.2g and a gain of at least %.0f%%); the defaults stand\n",
           ALPHA, (MIN_GAIN - 1) * 100);
  return 0;
}

/* Every value of every tunable searched in turn, then the final check.
   Returns 0, 1 after a message, or RUN_INTERRUPTED.  */
static int tune_run(struct tuner *t) {
  report_head(t);
  for (int k = 0; k < NPARAMS; k++)
    for (int v = 0; v < MAX_VALUES && t->ps[k].values[v] && searched(t, k); v++) {
      int rc = try_value(t, k, v);
      if (rc) return rc;
    }
  int rc = ablation(t);
  return rc ? rc : final_check(t);
}

static void report_partial(const struct tuner *t) {
  char tun[512];
  tunables_of(t, t->best, tun, sizeof tun);
  printf("\nPARTIAL: interrupted after %d runs; the best so far, GLIBC_TUNABLES=%s, was not checked against the "
         "defaults: no recommendation\n",
         t->total_runs, tun);
}

/* The options, checked: ARGS_RUN, or the exit status (1: the allocator is
   not installed).  */
static int tune_parse(int argc, char **argv, struct tune_opts *o) {
  *o = (struct tune_opts){ .alloc = "hpmalloc",
                           .objective = 1,
                           .search = (1u << NPARAMS) - 1,
                           .policy = { .reps = 0, .min_time = DEFAULT_MIN_TIME }, /* 0: from the level */
                           .ro = { .touch = TOUCH_FULL } };
  tlb_geom_get("auto", &o->ro.geom, NULL, 0);
  int rc = args_parse(&tune_cmd, argc, argv, o);
  if (rc != ARGS_RUN) return rc;
  if (!allocator_found(o->alloc)) return allocator_missing("tune", o->alloc);
  if (strlen(o->alloc) >= sizeof((struct config *)NULL)->alloc)
    return args_usage_error(&tune_cmd, "--allocator %s: name too long", o->alloc);
  if (allocator_reads(o->alloc) == READS_NONE)
    return args_usage_error(&tune_cmd, "--allocator %s: %s %s; tune searches glibc.malloc.* for hpmalloc or glibc",
                            o->alloc, o->alloc, allocator_reads_text(o->alloc));
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
  t.single = replay_image_busy_threads(t.fd) <= 1;
  tune_levels(&t);
  if (!o.policy.reps) o.policy.reps = t.min_runs + 2 > 5 ? t.min_runs + 2 : 5;
  catch_sigint();
  double start = now_s();
  rc = tune_run(&t);
  close(t.fd);
  if (rc == RUN_INTERRUPTED) report_partial(&t);
  if (rc != 1) printf("%d runs in %.1f s\n", t.total_runs, now_s() - start);
  return rc;
}
