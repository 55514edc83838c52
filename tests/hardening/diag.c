/* SPDX-License-Identifier: MIT */
/* diag: a program for the checks on where hpmalloc's diagnostics go
 * (tests/hardening/run.sh).
 *
 *   diag data FILE   closes stderr, opens FILE (which gets descriptor 2),
 *                    writes 64 KiB of data into it between allocations of
 *                    every kind (small, large, mapped, realloc, a thread),
 *                    and exits 0: the caller checks FILE byte for byte;
 *   diag work        allocates and frees the same way, prints its pid on
 *                    stdout, and exits 0.
 * MIT licence.  */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Allocations the compiler cannot drop: the pointers escape into this.  */
static void *volatile sink;

static void *churn(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) {
    char *p = malloc((size_t)(16 + i * 37 % 5000));
    if (!p) return (void *)1;
    p[0] = (char)i;
    sink = p;
    free(p);
  }
  char *big = malloc(4u << 20); /* mapped on its own */
  if (!big) return (void *)1;
  memset(big, 1, 4u << 20);
  sink = big;
  char *bigger = realloc(big, 12u << 20);
  if (!bigger) return (void *)1;
  sink = bigger;
  free(bigger);
  return NULL;
}

static int work(void) {
  pthread_t t;
  void *r1 = churn(NULL), *r2 = (void *)1;
  if (pthread_create(&t, NULL, churn, NULL) == 0) pthread_join(t, &r2);
  return r1 == NULL && r2 == NULL ? 0 : 1;
}

static int write_block(int fd, unsigned seed) {
  char buf[4096];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)('a' + (seed + i) % 26);
  return write(fd, buf, sizeof buf) == (ssize_t)sizeof buf ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "data") == 0) {
    close(2);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != 2) return 3;
    int bad = 0;
    for (unsigned i = 0; i < 16; i++) {
      bad |= write_block(fd, i);
      if (i % 4 == 0) bad |= work();
    }
    return bad;
  }
  if (argc == 2 && strcmp(argv[1], "work") == 0) {
    printf("%d\n", (int)getpid());
    fflush(stdout);
    return work();
  }
  fprintf(stderr, "usage: diag data FILE | diag work\n");
  return 2;
}
