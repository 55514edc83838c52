/* SPDX-License-Identifier: MIT */
/* A program with a known leak, for `hpm analyze --stacks` (check-hpm):
   leak_records() keeps every record it makes and never frees them (the
   malloc on the line marked LEAK); parse_line() allocates and frees a
   buffer per line (many allocations, none live at the end); the peak of
   live bytes is the table grown by grow_table() (marked PEAK), freed
   before exit.  Every call site is reached through the same callers many
   times, so a recording with --stacks holds few distinct stacks.
   Built with -O0 -g -fno-omit-frame-pointer (mk/55-hpm.mk).  MIT licence.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record {
  struct record *next;
  char name[56];
};

static struct record *kept;

static void leak_records(int n) {
  for (int i = 0; i < n; i++) {
    struct record *r = malloc(sizeof *r); /* LEAK */
    if (!r) exit(1);
    snprintf(r->name, sizeof r->name, "record %d", i);
    r->next = kept;
    kept = r;
    kept = NULL; /* lost: nothing points at it any more */
  }
}

static size_t parse_line(int i) {
  char *buf = malloc(32 + (size_t)(i % 64));
  if (!buf) exit(1);
  size_t n = (size_t)snprintf(buf, 32, "line %d", i);
  free(buf);
  return n;
}

static char *grow_table(size_t bytes) {
  char *t = malloc(bytes); /* PEAK */
  if (!t) exit(1);
  memset(t, 1, bytes);
  return t;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  size_t total = 0;
  leak_records(n);
  for (int i = 0; i < 4 * n; i++) total += parse_line(i);
  char *table = grow_table((size_t)n * 1024);
  total += (size_t)table[n];
  free(table);
  printf("%zu\n", total);
  return 0;
}
