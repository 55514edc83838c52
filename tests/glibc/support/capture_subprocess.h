/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/capture_subprocess.h>: run a
   callback in a forked child and capture its output.  Written for
   hpmalloc; MIT licence.  */
#ifndef HPM_SUPPORT_CAPTURE_SUBPROCESS_H
#define HPM_SUPPORT_CAPTURE_SUBPROCESS_H

#include <stddef.h>
#include <sys/cdefs.h>

__BEGIN_DECLS

/* A captured stream: BUFFER is never NULL and always NUL-terminated.  */
struct xmemstream
{
  char *buffer;
  size_t length;
};

struct support_capture_subprocess
{
  struct xmemstream out;
  struct xmemstream err;
  int status;                   /* as returned by waitpid */
};

/* Fork, run CALLBACK (CLOSURE) in the child with its standard output and
   standard error captured, wait for it.  The child exits with status 0
   when CALLBACK returns.  */
struct support_capture_subprocess
support_capture_subprocess (void (*callback) (void *), void *closure);

void support_capture_subprocess_free (struct support_capture_subprocess *);

__END_DECLS

#endif
