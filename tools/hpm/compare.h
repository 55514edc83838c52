/* SPDX-License-Identifier: MIT */
/* hpm replay, compare and tune: one trace replayed under one or several
   configurations (an allocator and its tunables), runs repeated and
   interleaved until they total a minimum time, summarised by medians.
   runs.c owns the configurations, the runs and the statistics of a
   comparison; compare.c `hpm compare`, tune.c `hpm tune`, replay.c
   `hpm replay`.  MIT licence.  */
#ifndef HPM_COMPARE_H
#define HPM_COMPARE_H

#include "replay.h"

#define MAX_RUNS 200         /* runs of one configuration, whatever --min-time asks */
#define DEFAULT_MIN_TIME 0.5 /* seconds of replay (wall) per configuration */

/* The measurements kept of each run: keys of the engine's JSON, in this
   order (metric_names).  */
enum metric {
  M_WALL,
  M_CPU,
  M_MEAN, /* time per op, the clock's cost taken out */
  M_P99,
  M_FAULTS,
  M_PEAK_RSS,
  M_PEAK_LIVE,
  M_COVERAGE,
  M_LIVE_ON_HUGE,
  M_TLB_4K,
  M_TLB,
  M_TLB_CYCLES,
  M_FAILURES,
  M_FALLBACK_HUGETLB, /* hpmalloc's: hugetlb mappings that failed, replaced by THP or base pages */
  M_FALLBACK_THP,     /* hpmalloc's: MADV_HUGEPAGE refused, base pages used */
  NMETRICS
};
extern const char *const metric_names[NMETRICS];

struct config {
  char alloc[256];
  char tun[512];                /* what the runs set: the entries of REQ the allocator reads */
  char req[512];                /* the tunables as asked for */
  char dropped[512];            /* the entries of REQ the allocator does not read, not set */
  char label[800];              /* "ALLOC TUN" */
  double v[MAX_RUNS][NMETRICS]; /* per run */
  double med[NMETRICS];         /* config_medians */
  double wall_total;            /* of the runs so far */
  int runs;
  int inherit; /* no tunables asked for: the runs inherit hpm's GLIBC_TUNABLES (replay) */
  /* Called after each run with its number (from 0) and the engine's JSON,
     which lasts until the next run; or NULL.  */
  void (*on_run)(int run, const char *json);
};

/* Empty C for allocator ALLOC with tunables TUN (each cut to fit): the
   entries ALLOC does not read are kept out (C->dropped); the label is
   "ALLOC TUN".  */
void config_init(struct config *c, const char *alloc, const char *tun);
/* One more run of C on image FD with the replay options BASE.  Returns 0,
   or -1 after a message.  */
int config_run(int fd, const struct replay_opts *base, struct config *c);
void config_medians(struct config *c);
/* The values of metric M over C's runs, into OUT (MAX_RUNS slots).  */
void config_values(const struct config *c, enum metric m, double *out);

/* How long each configuration is measured: at least REPS runs, and
   until its replays' wall times total MIN_TIME seconds; MAX_RUNS at most.  */
struct run_policy {
  int reps;
  double min_time;
};

/* --reps N (1 to MAX_RUNS) and --min-time SECONDS (0 to 3600), for an
   ARG_TABLE entry whose offset is the struct run_policy.  */
extern const struct arg_opt measure_args[];

#define RUN_INTERRUPTED 130 /* measure's result after SIGINT; the exit status then */

/* Run the N configurations CFG[] on image FD, interleaved: round after
   round, each configuration once (round R starting with configuration R
   mod N, so none is always first), until every one meets POLICY (all
   then have as many runs), then their medians.  WHAT names the command
   in the progress line.  Returns 0; 1 after a message when a replay
   failed; RUN_INTERRUPTED after SIGINT (see catch_sigint), with the runs
   finished so far kept and their medians computed.  */
int measure(int fd, const struct replay_opts *base, struct config *const *cfg, int n, const struct run_policy *policy,
            const char *what);

/* From now on SIGINT (Ctrl-C) does not end hpm: it makes measure stop
   after the run under way (an engine killed by it is not reported as a
   failure), so the command can report what it finished, marked partial.  */
void catch_sigint(void);
int sigint_caught(void);

/* The comparison of two configurations on metric M, lower better.  */
struct verdict {
  double ratio;  /* median(A) / median(B) */
  double lo, hi; /* its 95% bootstrap interval */
  double p;      /* two-sided Mann-Whitney U: A's and B's values differ */
};
/* A verdict in a word, for metric values where lower is better: "faster"
   (A's below B's), "slower", or "~" (no difference beyond the noise: the
   interval holds 1 or p >= ALPHA).  */
const char *verdict_word(const struct verdict *v, double alpha);
void compare_configs(const struct config *a, const struct config *b, enum metric m, struct verdict *v);

/* Metric M's value V for people: "92.4 ms", "12.3 MiB", "14.0 k".  */
void fmt_metric(enum metric m, double v, char *buf, size_t n);
/* C's median of M and its range: "92.4 ms [90.1-95.3 ms]".  */
void fmt_spread(const struct config *c, enum metric m, char *buf, size_t n);
/* S and spaces to WIDTH columns (UTF-8 "µ" is one column), left- or
   right-aligned, on stdout.  */
void print_cell(const char *s, int width);
void print_cell_right(const char *s, int width);

#endif
