/* SPDX-License-Identifier: MIT */
/* hpm: replaying a prepared trace in a child process under an allocator:
   the driver (replay.c) and the engine (engine.c) it runs.  MIT licence.  */
#ifndef HPM_REPLAY_H
#define HPM_REPLAY_H

#include "args.h"
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

/* The options replay, compare and tune share (--threads, --touch, --tlb),
   for an ARG_TABLE entry whose offset is the struct replay_opts.  */
extern const struct arg_opt replay_common_args[];

/* Run one replay of image FD in a child; the child's JSON (one line) into
   OUT.  Returns 0, or -1 with a message on stderr.  */
int replay_run(int fd, const struct replay_opts *o, char *out, size_t outlen);
/* Read FILE, check it fits in MAX_MEM (its largest allocation and its peak
   of live bytes) and write its replay image into a memfd: the image's fd,
   or -1 after a message on stderr.  */
int replay_load(const char *file, const struct replay_opts *o, uint64_t max_mem);
uint64_t replay_default_max_mem(void); /* 80% of RAM */
/* How many threads of image FD have operations to replay (0 when the image
   cannot be read).  */
uint32_t replay_image_busy_threads(int fd);

/* The replay image: the driver writes it into a memfd, the engine maps it
   read-only.  A header, then the threads, the ops (64-byte aligned) and the
   serial order.  */
#define IMG_MAGIC "HPMIMG01"
struct img_hdr {
  char magic[8];
  uint32_t nthreads, nobj;
  uint64_t nops, peak_op, peak_live; /* peak_op: the op after which live bytes peak, UINT64_MAX: none */
  struct tlb_geom geom;
  uint64_t off_threads, off_ops, off_serial, total;
};
struct img_thread {
  uint64_t first_op, nops;
};

#endif
