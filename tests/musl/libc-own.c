/* SPDX-License-Identifier: MIT */
/* libc-own: linked `musl-gcc -static` with libhpmalloc.a, the C library's
 * own allocations come from hpmalloc too -- those musl makes through the
 * public names (fopen, strdup, getdelim) and those it makes through its
 * internal __libc_malloc/__libc_calloc (duplocale, posix_spawn's file
 * actions, atexit past its static slots): each must raise hpmalloc's
 * bytes_in_use, and everything freed must leave a valid heap.
 * Prints "libc-own: N passed, M failed".  MIT licence. */
#define _GNU_SOURCE
#include <locale.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"

static int pass, fail;

static size_t in_use(void) {
  struct hpmalloc_stats st;
  memset(&st, 0, sizeof st);
  if (hpmalloc_stats(&st, sizeof st) != 0) return 0;
  return st.bytes_in_use;
}

static void expect_grew(const char *what, size_t before, int ok) {
  size_t after = in_use();
  if (ok && after > before) { printf("ok - %s: bytes_in_use %zu -> %zu\n", what, before, after); pass++; }
  else { printf("not ok - %s: %s, bytes_in_use %zu -> %zu\n", what, ok ? "succeeded" : "failed", before, after); fail++; }
}

static void nothing(void) {}

int main(void) {
  size_t b = in_use();
  FILE *f = fopen("/proc/self/maps", "r");
  expect_grew("fopen (malloc)", b, f != NULL);

  b = in_use();
  char *s = strdup("a string the C library copies");
  expect_grew("strdup (malloc)", b, s != NULL);

  b = in_use();
  char *line = NULL;
  size_t cap = 0;
  ssize_t got = f ? getline(&line, &cap, f) : -1;
  expect_grew("getline (realloc)", b, got > 0);

  b = in_use();
  locale_t loc = duplocale(LC_GLOBAL_LOCALE);
  expect_grew("duplocale (__libc_malloc)", b, loc != (locale_t)0);

  b = in_use();
  posix_spawn_file_actions_t fa;
  int ok = posix_spawn_file_actions_init(&fa) == 0 &&
           posix_spawn_file_actions_addopen(&fa, 3, "/dev/null", 0, 0) == 0;
  expect_grew("posix_spawn_file_actions_addopen (__libc_malloc)", b, ok);

  b = in_use();
  int registered = 0;
  for (int i = 0; i < 40; i++) registered += atexit(nothing) == 0; /* musl keeps 32 in place */
  expect_grew("atexit beyond the static slots (__libc_calloc)", b, registered == 40);

  if (ok) posix_spawn_file_actions_destroy(&fa);
  if (loc) freelocale(loc);
  free(line);
  free(s);
  if (f) fclose(f);
  if (hpmalloc_check_heap() == 0) { puts("ok - heap valid after freeing them"); pass++; }
  else { puts("not ok - hpmalloc_check_heap"); fail++; }
  printf("libc-own: %d passed, %d failed\n", pass, fail);
  return fail != 0;
}
