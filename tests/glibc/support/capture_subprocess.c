/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's support/support_capture_subprocess.c.
   Written for hpmalloc; MIT licence.  */
#include <support/capture_subprocess.h>
#include <support/check.h>
#include <support/xunistd.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
stream_append (struct xmemstream *s, size_t *capacity,
               const char *data, size_t n)
{
  if (s->length + n + 1 > *capacity)
    {
      size_t want = *capacity ? *capacity : 256;
      while (want < s->length + n + 1)
        want *= 2;
      char *p = realloc (s->buffer, want);
      if (p == NULL)
        FAIL_EXIT1 ("out of memory capturing subprocess output");
      s->buffer = p;
      *capacity = want;
    }
  memcpy (s->buffer + s->length, data, n);
  s->length += n;
  s->buffer[s->length] = '\0';
}

struct support_capture_subprocess
support_capture_subprocess (void (*callback) (void *), void *closure)
{
  struct support_capture_subprocess result;
  memset (&result, 0, sizeof (result));
  int out[2], err[2];
  xpipe (out);
  xpipe (err);

  fflush (stdout);
  fflush (stderr);
  pid_t pid = xfork ();
  if (pid == 0)
    {
      xclose (out[0]);
      xclose (err[0]);
      xdup2 (out[1], STDOUT_FILENO);
      xdup2 (err[1], STDERR_FILENO);
      xclose (out[1]);
      xclose (err[1]);
      callback (closure);
      fflush (stdout);
      fflush (stderr);
      _exit (0);
    }
  xclose (out[1]);
  xclose (err[1]);

  size_t cap_out = 0, cap_err = 0;
  stream_append (&result.out, &cap_out, "", 0);
  stream_append (&result.err, &cap_err, "", 0);
  struct pollfd fds[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
  int open_fds = 2;
  while (open_fds > 0)
    {
      if (poll (fds, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          FAIL_EXIT1 ("poll: %m");
        }
      for (int i = 0; i < 2; ++i)
        {
          if (fds[i].fd < 0 || fds[i].revents == 0)
            continue;
          char buf[4096];
          ssize_t n = read (fds[i].fd, buf, sizeof (buf));
          if (n < 0 && errno == EINTR)
            continue;
          if (n <= 0)
            {
              xclose (fds[i].fd);
              fds[i].fd = -1;
              --open_fds;
              continue;
            }
          if (i == 0)
            stream_append (&result.out, &cap_out, buf, n);
          else
            stream_append (&result.err, &cap_err, buf, n);
        }
    }
  xwaitpid (pid, &result.status, 0);
  return result;
}

void
support_capture_subprocess_free (struct support_capture_subprocess *p)
{
  free (p->out.buffer);
  free (p->err.buffer);
  p->out.buffer = NULL;
  p->err.buffer = NULL;
}
