/* SPDX-License-Identifier: MIT */
/* The error path's and the diagnostics' primitives, for every POSIX
 * system: write with write(2), identify and open the files diagnostics go
 * to, and abort, all without allocating.  Shared by sysdeps/unix/sysv/
 * linux and sysdeps/generic/os (the GNUmakefile compiles this directory
 * for every target).  MIT licence.  */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_sys.h"

void hp_os_write_fd(int fd, const char *s, size_t n) {
  int saved = errno;
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w > 0) {
      s += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  errno = saved;
}

void hp_os_write_err(const char *s, size_t n) { hp_os_write_fd(STDERR_FILENO, s, n); }

int hp_os_file_id(int fd, struct hp_file_id *id) {
  struct stat st;
  int saved = errno;
  if (fstat(fd, &st) != 0) {
    errno = saved;
    return -1;
  }
  *id = (struct hp_file_id){ (uint64_t)st.st_dev, (uint64_t)st.st_ino, (unsigned)(st.st_mode & S_IFMT) };
  return 0;
}

int hp_os_open_append(const char *path) {
  int saved = errno, fd;
  do fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
  while (fd < 0 && errno == EINTR);
  errno = saved;
  return fd;
}

void hp_os_close(int fd) {
  int saved = errno;
  (void)close(fd);
  errno = saved;
}

int hp_os_pid(void) { return (int)getpid(); }

int hp_os_cwd(char *buf, size_t n) {
  int saved = errno;
  int ok = getcwd(buf, n) != NULL && buf[0] == '/';
  errno = saved;
  return ok ? 0 : -1;
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
