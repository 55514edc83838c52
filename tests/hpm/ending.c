/* SPDX-License-Identifier: MIT */
/* A program for check-hpm's tests of names and of the ways a program
   ends.  make_list() keeps N names that make_name() allocates (the
   malloc on the line marked NAME); built with -O2 -g (mk/55-hpm.mk),
   both are inlined into main, so the malloc's return address is in
   main's code and only DWARF's inlined-call records name make_name and
   make_list.  Then it ends as the second argument says:
     exit   returns from main
     kill   raises SIGKILL (as the OOM killer would kill it)
     pipe   ignores SIGPIPE, restores the default action (as a python3
            script does with signal.signal), writes to a pipe nobody reads
     term   raises SIGTERM
   MIT licence.  */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char **names;

static inline __attribute__((always_inline)) char *make_name(int i) {
  char *s = malloc(48); /* NAME */
  if (!s) exit(1);
  snprintf(s, 48, "name %d", i);
  return s;
}

static inline __attribute__((always_inline)) void make_list(int n) {
  names = malloc((size_t)n * sizeof *names);
  if (!names) exit(1);
  for (int i = 0; i < n; i++) names[i] = make_name(i);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  const char *how = argc > 2 ? argv[2] : "exit";
  make_list(n);
  if (!strcmp(how, "kill")) raise(SIGKILL);
  if (!strcmp(how, "term")) raise(SIGTERM);
  if (!strcmp(how, "pipe")) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    close(fd[0]);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGPIPE, SIG_DFL);
    (void)!write(fd[1], "x", 1);
  }
  printf("%s\n", names[n - 1]);
  return 0;
}
