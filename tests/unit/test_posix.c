/* SPDX-License-Identifier: MIT */
/* Unit tests of sysdeps/posix: the error path's primitives (write to
 * stderr, abort without allocating, even when the program's SIGABRT
 * handler returns) and the weak random fallback.  MIT licence.  */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hp_posix.h"
#include "hp_sys.h"

Test(posix, weak_random_fills_every_byte) {
  unsigned char a[37], b[37];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  hp_posix_weak_random(a, sizeof a, 1);
  hp_posix_weak_random(b, sizeof b, 2);
  cr_assert_neq(memcmp(a, b, sizeof a), 0, "different seeds, different bytes");
  /* every 8-byte word and the 5-byte tail are written: none stays all zero */
  for (size_t w = 0; w < sizeof a; w += 8) {
    size_t n = sizeof a - w < 8 ? sizeof a - w : 8;
    unsigned char zero[8] = { 0 };
    cr_assert_neq(memcmp(a + w, zero, n), 0, "bytes %zu..%zu not written", w, w + n - 1);
  }
  hp_posix_weak_random(a, 0, 3); /* nothing to write */
}

Test(posix, write_err_to_a_closed_stderr_returns) {
  int saved = dup(STDERR_FILENO);
  close(STDERR_FILENO);
  hp_os_write_err("lost\n", 5); /* EBADF: gives up, does not loop */
  dup2(saved, STDERR_FILENO);
  close(saved);
}

static int handled_fd = -1;
static void returning_handler(int sig) {
  (void)sig;
  char c = 'h';
  (void)!write(handled_fd, &c, 1);
}

Test(posix, abort_survives_a_returning_handler) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    handled_fd = fds[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = returning_handler;
    sigaction(SIGABRT, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGABRT);
    sigprocmask(SIG_BLOCK, &set, NULL); /* hp_os_abort unblocks it */
    hp_os_abort();
  }
  close(fds[1]);
  char buf[8];
  ssize_t n = read(fds[0], buf, sizeof buf);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x", st);
  cr_assert_eq(n, 1, "the handler ran once, then the default action killed the process");
}
