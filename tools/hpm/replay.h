/* hpm: replaying a prepared trace in a child process under an allocator.
   MIT licence.  */
#ifndef HPM_REPLAY_H
#define HPM_REPLAY_H

#include "hpm.h"

enum { TOUCH_NONE, TOUCH_FIRST, TOUCH_FULL };

struct replay_opts {
  const char *allocator; /* "glibc", "hpmalloc", "jemalloc", ..., or a path */
  const char *tunables;  /* GLIBC_TUNABLES for the run, NULL: inherit */
  int serial;            /* --threads serial */
  int touch;
  struct tlb_geom geom;
  double walk_ns; /* measured cost of a walk, 0: unknown */
};

/* Write P as a replay image into a memfd; returns the fd or -1.  */
int replay_image(const struct prep *p, const struct replay_opts *o);
/* Run one replay of image FD in a child; the child's JSON (one line) into
   OUT.  Returns 0, or -1 with a message on stderr.  */
int replay_run(int fd, const struct replay_opts *o, char *out, size_t outlen);
/* Read FILE, check it fits (replay_check_limits) and write its replay
   image: the image's fd, or -1 after a message on stderr.  */
int replay_load(const char *file, const struct replay_opts *o, uint64_t max_mem);
/* Check the trace fits this machine (sizes, peak).  */
int replay_check_limits(const struct prep *p, const char *file, uint64_t max_mem);
uint64_t replay_default_max_mem(void);
int replay_parse_common(const char *arg, const char *val, struct replay_opts *o, int *used);

#endif
