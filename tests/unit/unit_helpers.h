/* SPDX-License-Identifier: MIT */
/* unit_helpers.h: helpers shared by the unit tests (static, one copy per
 * test program).  MIT licence.  */
#ifndef HP_UNIT_HELPERS_H
#define HP_UNIT_HELPERS_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hpmalloc.h"
#include "arena.h"
#include "check.h"

/* Check every arena with the validator, and through the public call.  */
__attribute__((unused)) static void check_all_arenas(void) {
  for (struct arena *ar = &main_arena;; ar = ar->next) {
    bool lk = arena_lock(ar);
    cr_assert_eq(check_arena(ar), 0);
    arena_unlock(ar, lk);
    if (ar->next == &main_arena) break;
  }
  cr_assert_eq(hpmalloc_check_heap(), 0);
}

/* Under `make coverage` (gcc --coverage) a child killed by SIGABRT would
   lose its counters: write them out first, then die of SIGABRT all the
   same, so what the child ran before the abort counts (not the aborting
   functions themselves: gcov derives their lines from arcs that a call
   which never returns does not take).  __gcov_dump is libgcov's; weak, so
   NULL in other builds.  */
extern void __gcov_dump(void) __attribute__((weak));
__attribute__((unused)) static void gcov_dump_then_abort(int sig) {
  __gcov_dump();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Fork a child whose stderr goes to a pipe (its read end in fds[0] for
   the parent), with no core dump and an alarm after `secs` seconds.
   Returns the child's pid in both (0 in the child).  */
__attribute__((unused)) static pid_t fork_with_stderr_pipe(int fds[2], unsigned secs) {
  cr_assert_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    alarm(secs);
    return 0;
  }
  close(fds[1]);
  return pid;
}

/* Run fn in a child (as fork_with_stderr_pipe), collecting what it writes
   on stderr in buf[cap] (NUL-terminated); returns its wait status.  */
__attribute__((unused)) static int run_in_child(void (*fn)(void), char *buf, size_t cap, unsigned secs) {
  int fds[2];
  pid_t pid = fork_with_stderr_pipe(fds, secs);
  if (pid == 0) {
    if (__gcov_dump) signal(SIGABRT, gcov_dump_then_abort);
    fn();
    _exit(0);
  }
  size_t len = 0;
  ssize_t r;
  while (len < cap - 1 && (r = read(fds[0], buf + len, cap - 1 - len)) > 0) len += (size_t)r;
  buf[len] = '\0';
  close(fds[0]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return st;
}

/* Run fn in a child process; expect it to die of SIGABRT after printing
   `msg` on stderr.  */
__attribute__((unused)) static void expect_abort(void (*fn)(void), const char *msg) {
  char buf[1024];
  int st = run_in_child(fn, buf, sizeof buf, 20);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "expected SIGABRT (\"%s\"), got status %#x, stderr \"%s\"",
            msg, st, buf);
  cr_assert(strstr(buf, msg) != NULL, "stderr \"%s\" lacks \"%s\"", buf, msg);
}

#endif
