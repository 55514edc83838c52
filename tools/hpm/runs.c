/* SPDX-License-Identifier: MIT */
/* hpm: configurations, their runs and how two are compared; shared by
   replay, compare and tune (compare.h has the contracts).

   The measurement plan, and why: on a shared machine a single run says
   little (a 3 ms replay took 10 to 27 ms here), so each configuration is
   run until its runs total --min-time of replay and at least --reps times,
   round by round with every configuration once a round, the first of a
   round rotating.  Load that comes and goes then hits every configuration
   alike, and no configuration always follows the same one (the memory the
   previous run freed, the caches it left).  All configurations get the
   same number of runs.  MIT licence.  */
#include "compare.h"
#include "stats.h"

#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BOOT_RESAMPLES 2000
#define BOOT_SEED 0x5eed5eedull /* fixed: the same runs give the same interval */

const char *const metric_names[NMETRICS] = {
  "wall_s",
  "cpu_s",
  "ns_mean",
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
  "fallbacks_hugetlb",
  "fallbacks_thp",
};

/* ======================================================================== configurations */
void config_values(const struct config *c, enum metric m, double *out) {
  for (int r = 0; r < c->runs; r++) out[r] = c->v[r][m];
}

void config_medians(struct config *c) {
  double tmp[MAX_RUNS];
  for (size_t m = 0; m < NMETRICS; m++) {
    config_values(c, (enum metric)m, tmp);
    c->med[m] = stats_median(tmp, c->runs);
  }
}

int config_run(int fd, const struct replay_opts *base, struct config *c) {
  static char out[65536];
  struct replay_opts o = *base;
  if (c->runs >= MAX_RUNS) return 0;
  o.allocator = c->alloc;
  o.tunables = c->inherit && !c->req[0] ? NULL : c->tun;
  if (replay_run(fd, &o, out, sizeof out)) return -1;
  for (size_t m = 0; m < NMETRICS; m++)
    if (json_get_num(out, metric_names[m], &c->v[c->runs][m])) c->v[c->runs][m] = 0;
  if (c->on_run) c->on_run(c->runs, out);
  c->wall_total += c->v[c->runs][M_WALL];
  c->runs++;
  return 0;
}

void config_init(struct config *c, const char *alloc, const char *tun) {
  memset(c, 0, sizeof *c);
  /* Cut to fit; the label is longer than alloc + " " + tun.  */
  (void)snprintf(c->alloc, sizeof c->alloc, "%.255s", alloc);
  (void)snprintf(c->req, sizeof c->req, "%.511s", tun);
  tunables_split(c->alloc, c->req, c->tun, sizeof c->tun, c->dropped, sizeof c->dropped);
  (void)snprintf(c->label, sizeof c->label, "%s%s%s", c->alloc, c->tun[0] ? " " : "", c->tun);
}

/* --min-time SECONDS into the double FIELD.  */
static int seconds_arg(void *field, const char *val, char *err, size_t errlen) {
  char *end;
  double v = strtod(val, &end);
  if (end == val || *end || !(v >= 0 && v <= 3600)) {
    (void)snprintf(err, errlen, "bad value '%s' (expected seconds, a number from 0 to 3600, e.g. 0.5)", val);
    return -1;
  }
  *(double *)field = v;
  return 0;
}

const struct arg_opt measure_args[] = {
  { .name = "--reps", .kind = ARG_INT, .off = offsetof(struct run_policy, reps), .min = 1, .max = MAX_RUNS },
  { .name = "--min-time",
    .kind = ARG_FN,
    .off = offsetof(struct run_policy, min_time),
    .meta = "SECONDS",
    .set = seconds_arg },
  { 0 },
};

/* ======================================================================== SIGINT */
static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
}

void catch_sigint(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint; /* no SA_RESTART: a wait returns, sees the flag */
  sigemptyset(&sa.sa_mask);
  (void)sigaction(SIGINT, &sa, NULL); /* cannot fail for SIGINT and a valid handler */
}

int sigint_caught(void) { return got_sigint != 0; }

/* ======================================================================== measuring */
static int policy_met(const struct config *c, const struct run_policy *p) {
  return c->runs >= MAX_RUNS || (c->runs >= p->reps && c->wall_total >= p->min_time);
}

/* One round: every configuration once, starting with CFG[ROUND % N].
   Returns 0, 1 after a message, or RUN_INTERRUPTED.  */
static int one_round(int fd, const struct replay_opts *base, struct config *const *cfg, int n, int round,
                     const char *what) {
  for (int k = 0; k < n; k++) {
    struct config *c = cfg[(round + k) % n];
    if (sigint_caught()) return RUN_INTERRUPTED;
    progress("%s: round %d, run %d of %d: %s", what, round + 1, k + 1, n, c->label);
    if (config_run(fd, base, c)) return sigint_caught() ? RUN_INTERRUPTED : 1;
    if (!progress_on_terminal() && c->runs == 1) { /* a log, a pipe: a line per configuration */
      char t[32];
      fmt_seconds(c->v[0][M_WALL], t, sizeof t);
      fprintf(stderr, "hpm %s: %s: first run %s\n", what, c->label, t);
    }
  }
  return sigint_caught() ? RUN_INTERRUPTED : 0;
}

int measure(int fd, const struct replay_opts *base, struct config *const *cfg, int n, const struct run_policy *policy,
            const char *what) {
  int rc = 0;
  double start = now_s();
  for (int round = 0; rc == 0; round++) {
    int done = 1;
    for (int k = 0; k < n; k++) done &= policy_met(cfg[k], policy);
    if (done) break;
    rc = one_round(fd, base, cfg, n, round, what);
  }
  progress_done();
  for (int k = 0; k < n; k++) config_medians(cfg[k]);
  if (!progress_on_terminal() && n > 1)
    fprintf(stderr, "hpm %s: %d configurations measured, %d runs each, %.1f s\n", what, n, cfg[0]->runs,
            now_s() - start);
  return rc;
}

/* ======================================================================== comparing */
void compare_configs(const struct config *a, const struct config *b, enum metric m, struct verdict *v) {
  double va[MAX_RUNS], vb[MAX_RUNS];
  config_values(a, m, va);
  config_values(b, m, vb);
  v->ratio = b->med[m] > 0 ? a->med[m] / b->med[m] : 1;
  stats_ratio_ci(va, a->runs, vb, b->runs, 0.95, BOOT_RESAMPLES, BOOT_SEED, &v->lo, &v->hi);
  v->p = stats_mwu_two_sided(va, a->runs, vb, b->runs);
}

const char *verdict_word(const struct verdict *v, double alpha) {
  if (v->p >= alpha || (v->lo <= 1 && v->hi >= 1)) return "~";
  return v->ratio < 1 ? "faster" : "slower";
}

void fmt_metric(enum metric m, double v, char *buf, size_t n) {
  switch (m) {
  case M_WALL:
  case M_CPU: fmt_seconds(v, buf, n); break;
  case M_MEAN:
  case M_P99: fmt_seconds(v * 1e-9, buf, n); break;
  case M_PEAK_RSS: fmt_bytes(v * 1024, buf, n); break;
  case M_PEAK_LIVE: fmt_bytes(v, buf, n); break;
  case M_COVERAGE:
  case M_LIVE_ON_HUGE: (void)snprintf(buf, n, "%.1f%%", v * 100); break; /* fits: callers pass 32 bytes */
  default: fmt_count(v, buf, n); break;
  }
}

void fmt_spread(const struct config *c, enum metric m, char *buf, size_t n) {
  double vals[MAX_RUNS], lo, hi;
  char med[32], a[32], b[32];
  config_values(c, m, vals);
  stats_minmax(vals, c->runs, &lo, &hi);
  fmt_metric(m, c->med[m], med, sizeof med);
  fmt_metric(m, lo, a, sizeof a);
  fmt_metric(m, hi, b, sizeof b);
  /* "90.1 ms" and "95.3 ms": the unit once, "90.1-95.3 ms" */
  const char *ua = strchr(a, ' '), *ub = strchr(b, ' ');
  if (ua && ub && !strcmp(ua, ub)) a[ua - a] = 0;
  (void)snprintf(buf, n, "%s [%s-%s]", med, a, b); /* a table cell: truncation is harmless */
}

/* Columns S takes on a terminal: UTF-8 continuation bytes take none.  */
static int columns(const char *s) {
  int n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

void print_cell(const char *s, int width) { printf("%s%*s", s, width > columns(s) ? width - columns(s) : 0, ""); }

void print_cell_right(const char *s, int width) { printf("%*s%s", width > columns(s) ? width - columns(s) : 0, "", s); }
