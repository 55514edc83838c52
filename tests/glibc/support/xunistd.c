/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's system-call wrappers (support/x*.c) and
   signal wrappers.  Written for hpmalloc; MIT licence.  */
#include <support/xunistd.h>
#include <support/xsignal.h>
#include <support/check.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>

pid_t
xfork (void)
{
  pid_t pid = fork ();
  if (pid < 0)
    FAIL_EXIT1 ("fork: %m");
  return pid;
}

pid_t
xwaitpid (pid_t pid, int *status, int flags)
{
  pid_t ret;
  do
    ret = waitpid (pid, status, flags);
  while (ret < 0 && errno == EINTR);
  if (ret < 0)
    FAIL_EXIT1 ("waitpid (%ld): %m", (long int) pid);
  return ret;
}

void
xpipe (int fds[2])
{
  if (pipe (fds) != 0)
    FAIL_EXIT1 ("pipe: %m");
}

void
xdup2 (int from, int to)
{
  if (dup2 (from, to) < 0)
    FAIL_EXIT1 ("dup2 (%d, %d): %m", from, to);
}

int
xopen (const char *path, int flags, mode_t mode)
{
  int fd = open (path, flags, mode);
  if (fd < 0)
    FAIL_EXIT1 ("open (\"%s\", 0x%x, 0%o): %m", path, flags, (unsigned) mode);
  return fd;
}

void
xclose (int fd)
{
  if (close (fd) != 0 && errno != EINTR)
    FAIL_EXIT1 ("close (%d): %m", fd);
}

void
xwrite (int fd, const void *buffer, size_t length)
{
  const char *p = buffer;
  while (length > 0)
    {
      ssize_t n = write (fd, p, length);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          FAIL_EXIT1 ("write of %zu bytes: %m", length);
        }
      if (n == 0)
        FAIL_EXIT1 ("write of %zu bytes returned 0", length);
      p += n;
      length -= n;
    }
}

long int
xsysconf (int name)
{
  errno = 0;
  long int ret = sysconf (name);
  if (ret == -1 && errno != 0)
    FAIL_EXIT1 ("sysconf (%d): %m", name);
  return ret;
}

void *
xmmap (void *addr, size_t length, int prot, int flags, int fd)
{
  void *p = mmap (addr, length, prot, flags, fd, 0);
  if (p == MAP_FAILED)
    FAIL_EXIT1 ("mmap of %zu bytes, prot=0x%x, flags=0x%x: %m",
                length, prot, flags);
  return p;
}

void
xmprotect (void *addr, size_t length, int prot)
{
  if (mprotect (addr, length, prot) != 0)
    FAIL_EXIT1 ("mprotect (%p, %zu, 0x%x): %m", addr, length, prot);
}

void
xmunmap (void *addr, size_t length)
{
  if (munmap (addr, length) != 0)
    FAIL_EXIT1 ("munmap (%p, %zu): %m", addr, length);
}

void
xchdir (const char *path)
{
  if (chdir (path) != 0)
    FAIL_EXIT1 ("chdir (\"%s\"): %m", path);
}

/* --- signals ----------------------------------------------------------- */
void
xraise (int sig)
{
  if (raise (sig) != 0)
    FAIL_EXIT1 ("raise (%d): %m", sig);
}

sighandler_t
xsignal (int sig, sighandler_t handler)
{
  sighandler_t old = signal (sig, handler);
  if (old == SIG_ERR)
    FAIL_EXIT1 ("signal (%d): %m", sig);
  return old;
}

void
xsigaction (int sig, const struct sigaction *newact, struct sigaction *oldact)
{
  if (sigaction (sig, newact, oldact) != 0)
    FAIL_EXIT1 ("sigaction (%d): %m", sig);
}

void
xsigemptyset (sigset_t *set)
{
  if (sigemptyset (set) != 0)
    FAIL_EXIT1 ("sigemptyset: %m");
}

void
xsigaddset (sigset_t *set, int sig)
{
  if (sigaddset (set, sig) != 0)
    FAIL_EXIT1 ("sigaddset (%d): %m", sig);
}

void
xsigprocmask (int how, const sigset_t *set, sigset_t *oldset)
{
  if (sigprocmask (how, set, oldset) != 0)
    FAIL_EXIT1 ("sigprocmask: %m");
}
