/* The error path's primitives, for every POSIX system: write to stderr
 * with write(2) and abort without allocating.  Shared by sysdeps/unix/sysv/
 * linux and sysdeps/generic/os (the GNUmakefile compiles this directory
 * for every target).  MIT licence.  */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hp_sys.h"

void
hp_os_write_err (const char *s, size_t n)
{
  while (n > 0)
    {
      ssize_t w = write (STDERR_FILENO, s, n);
      if (w > 0)
        {
          s += w;
          n -= (size_t) w;
        }
      else if (w < 0 && errno == EINTR)
        continue;
      else
        return;
    }
}

_Noreturn void
hp_os_abort (void)
{
  sigset_t set;
  struct sigaction sa;

  sigemptyset (&set);
  sigaddset (&set, SIGABRT);
  sigprocmask (SIG_UNBLOCK, &set, NULL);
  raise (SIGABRT);
  /* A handler returned: take the default action, as abort() does.  */
  sa.sa_handler = SIG_DFL;
  sa.sa_flags = 0;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGABRT, &sa, NULL);
  raise (SIGABRT);
  _exit (127);
}
