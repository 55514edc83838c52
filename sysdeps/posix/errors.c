/* The error path's primitives, for every POSIX system: write to stderr
 * with write(2) and abort without allocating.  Shared by sysdeps/unix/sysv/
 * linux and sysdeps/generic/os (the GNUmakefile compiles this directory
 * for every target).  MIT licence.  */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hp_sys.h"

void hp_os_write_err(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w > 0) {
      s += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR)
      continue;
    else
      return;
  }
}

_Noreturn void hp_os_abort(void) {
  sigset_t set;
  struct sigaction sa;

  sigemptyset(&set);
  sigaddset(&set, SIGABRT);
  /* Nothing to do if these fail: the _exit below ends the process anyway.  */
  (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
  (void)raise(SIGABRT);
  /* A handler returned: take the default action, as abort() does.  */
  // cppcheck-suppress unreachableCode ; reachable: raise returns when the program's SIGABRT handler does
  sa.sa_handler = SIG_DFL;
  sa.sa_flags = 0;
  sigemptyset(&sa.sa_mask);
  (void)sigaction(SIGABRT, &sa, NULL);
  (void)raise(SIGABRT);
  // cppcheck-suppress unreachableCode ; reachable if another thread installs a handler again in between
  _exit(127);
}
