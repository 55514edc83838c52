/* SPDX-License-Identifier: MIT */
/* diag.h: where hpmalloc's diagnostics go (diag.c): the verbose lines
 * (hpmalloc.verbose), the report at exit (hpmalloc.stats) and the notes on
 * what the kernel refused.  Every one of them goes through here.
 * Includes: hp_base.h, hp_sys.h.  */
#ifndef HP_DIAG_H
#define HP_DIAG_H

#include <errno.h>

#include "hp_base.h"
#include "hp_sys.h"

/* Where diagnostics go, chosen at start-up (init.c, phase 1, before any
   other thread runs): the file hpmalloc.stats_file names (file[0..len),
   not NUL-terminated; "%p" in it stands for the writing process's id, "%%"
   for '%'; a relative name is taken from the directory of start-up), else
   the process's stderr, as long as descriptor 2 is still the file it was
   at start-up.  verbose: hpmalloc.verbose.  */
HP_INTERNAL void diag_setup(bool verbose, const char *file, size_t len);

/* An open destination for a batch of lines.  */
struct diag_out {
  int fd;      /* -1: nowhere to write */
  bool opened; /* fd is ours, to close */
};

/* Open the destination: false (o->fd == -1) when there is none now (the
   file cannot be opened; descriptor 2 is closed or is another file).
   Async-signal-safe: fstat, open, getpid only; allocates nothing.  */
HP_INTERNAL bool diag_open(struct diag_out *o);
/* Write s[0..n) with write(2).  */
HP_INTERNAL void diag_put(const struct diag_out *o, const char *s, size_t n);
HP_INTERNAL void diag_close(struct diag_out *o);
/* Open, write one line (s[0..n), ending in '\n'), close.  */
HP_INTERNAL void diag_line(const char *s, size_t n);

/* hpmalloc.verbose.  */
extern bool diag_verbose HP_INTERNAL;

/* Kinds of system call the kernel (or a seccomp filter) refused: each is
   reported once, under hpmalloc.verbose, with what hpmalloc does instead.  */
enum diag_refusal {
  DIAG_REFUSED_HUGEPAGE, /* madvise(MADV_HUGEPAGE) */
  DIAG_REFUSED_DONTNEED, /* madvise(MADV_DONTNEED) */
  DIAG_REFUSED_POPULATE, /* madvise(MADV_POPULATE_WRITE) */
  DIAG_REFUSED_COLLAPSE, /* madvise(MADV_COLLAPSE) */
  DIAG_REFUSED_REMAP,    /* mremap */
  DIAG_REFUSALS
};
/* Does err mean the call is refused (EPERM, EACCES, ENOSYS, EINVAL), as
   opposed to failing for want of memory?  */
static inline bool diag_is_refusal(int err) { return err == EPERM || err == EACCES || err == ENOSYS || err == EINVAL; }
HP_INTERNAL void diag_refused_slow(enum diag_refusal what, int err);
/* A call of kind `what` failed with errno err: say so once, if verbose
   and err is a refusal.  Allocates nothing; safe under any lock.  */
static inline void diag_refused(enum diag_refusal what, int err) {
  if (HP_UNLIKELY(diag_verbose) && diag_is_refusal(err)) diag_refused_slow(what, err);
}

#endif
