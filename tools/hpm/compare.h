/* hpm compare and hpm tune: one trace replayed under several
   configurations (an allocator and its tunables), runs repeated, medians
   compared.  compare.c owns the configurations and `hpm compare`, tune.c
   `hpm tune`.  MIT licence.  */
#ifndef HPM_COMPARE_H
#define HPM_COMPARE_H

#include "replay.h"

#define MAX_REPS 51

/* The measurements kept of each run: keys of the engine's JSON, in this
   order (metric_names).  */
enum metric {
  M_WALL,
  M_CPU,
  M_P50,
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
  NMETRICS
};
extern const char *const metric_names[NMETRICS];

struct config {
  char alloc[256], tun[512], label[800];
  double v[MAX_REPS][NMETRICS]; /* per run */
  double med[NMETRICS];         /* config_medians */
  int runs;
};

/* Empty C for allocator ALLOC with tunables TUN (each cut to fit), and
   its label "ALLOC TUN".  */
void config_init(struct config *c, const char *alloc, const char *tun);
/* One more run of C on image FD with the replay options BASE.  Returns 0,
   or -1 after a message.  */
int config_run(int fd, const struct replay_opts *base, struct config *c);
void config_medians(struct config *c);

#endif
