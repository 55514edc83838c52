/* SPDX-License-Identifier: MIT */
/* misuse: heap misuse must be caught, with glibc's fixed message and
 * SIGABRT (issue 6, hardening).
 *
 * Plain C against the standard malloc API: run it on glibc (which
 * validates the expected messages: they are glibc 2.36's own) and with
 * hpmalloc preloaded or linked.  Each case runs in a forked child whose
 * stderr is captured; the case passes when the child dies of SIGABRT and
 * its stderr is exactly the expected message and a newline.
 *
 *   misuse            every case, one "ok"/"FAIL" line each; exit 1 on a failure
 *   misuse NAME...    only these
 *   misuse -t [NAME...]  the same, each case in a second thread
 *   misuse -a [-t] [NAME...]  hpmalloc with its own cache (its default):
 *                     each case's `cached` message; a case whose set-up
 *                     needs glibc's tcache (seven per bin, 1032 bytes at
 *                     most, calloc going round it) is skipped, said so
 *   misuse -l         list the cases
 *
 * Without -a the cases assume glibc's tcache: run.sh gives hpmalloc
 * glibc.malloc.tcache_count=7:glibc.malloc.tcache_max=1032 for them, so
 * that the arena's checks are reached exactly as on glibc.
 *
 * The cases know the ptmalloc chunk layout both allocators share (a size
 * word right below the block, chunks allocated in address order from the
 * top chunk) and fill the tcache bin of a size, as glibc's tst-safe-linking
 * does, when a case needs the fastbins or the bins below it.  glibc prints
 * malloc errors on /dev/tty unless LIBC_FATAL_STDERR_ is set: the children
 * set it.  MIT licence.  */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Keep the compiler from folding malloc/free pairs or warning about the
   deliberate misuse.  */
static void *volatile sink;
static void *opaque(void *p) {
  sink = p;
  return sink;
}
static void do_free(void *p) { free(opaque(p)); }

enum { TCACHE_FILL = 7, SMALL = 0x20, BIG = 2000 /* above the tcache's 1032 */ };

/* Fill the tcache bin of n-byte requests, so the next frees of that size
   go to the arena.  calloc does not take from the tcache (both
   allocators), so the blocks are distinct.  */
static void fill_tcache(size_t n) {
  void *p[TCACHE_FILL];
  for (int i = 0; i < TCACHE_FILL; i++) p[i] = calloc(1, n);
  for (int i = 0; i < TCACHE_FILL; i++) do_free(p[i]);
}

/* A byte that, repeated over a safe-linked next pointer stored at `pos`,
   reveals a misaligned pointer: (pos >> 12) ^ mask must not end in 0000.  */
static int bad_mask(const void *pos) {
  return (((uintptr_t)pos >> 12) & 0xf) == 0x1 ? 0x42 : 0x41;
}

static size_t *size_word(void *p) { return (size_t *)p - 1; }

/* ---------------------------------------------------------------- double free */

static void tcache_double_free(void) {
  void *p = malloc(SMALL);
  do_free(p);
  do_free(p);
}

/* glibc's tst-tcfree2: the block is at the far end of a full bin.  */
static void tcache_double_free_deep(void) {
  void *p[TCACHE_FILL];
  for (int i = 0; i < TCACHE_FILL; i++) p[i] = malloc(SMALL);
  for (int i = 0; i < TCACHE_FILL; i++) do_free(p[i]);
  do_free(p[0]);
}

static void fastbin_double_free(void) {
  fill_tcache(SMALL);
  void *a = calloc(1, SMALL);
  do_free(a);
  do_free(a);
}

static void bin_double_free(void) {
  void *a = malloc(BIG);
  opaque(malloc(100)); /* keeps a away from top */
  do_free(a);
  do_free(a);
}

static void top_double_free(void) {
  opaque(malloc(100));
  void *a = malloc(BIG); /* borders top: freeing merges it into top */
  do_free(a);
  do_free(a);
}

/* ---------------------------------------------------------------- bad pointers */

static _Alignas(64) unsigned char never[256];

/* A zero size word: (uintptr_t)p > -0. */
static void free_never_allocated(void) { do_free(never + 64); }

static void free_misaligned_never_allocated(void) { do_free(never + 72); }

/* Claims to be mapped on its own, at an address no mapping can start.  */
static void free_never_allocated_fake_mapped(void) {
  size_t *h = (size_t *)(never + 128);
  h[-1] = 0x10000 | 0x2; /* IS_MMAPPED */
  h[-2] = 0;
  do_free(h);
}

static void free_middle_of_zeroed_block(void) {
  char *p = calloc(1, 4000);
  opaque(malloc(100));
  do_free(p + 2048);
}

static void free_middle_misaligned(void) {
  char *p = malloc(100);
  do_free(p + 8);
}

/* The middle of a block full of data: the "size" read below the pointer
   is 0x4141...40, far beyond the heap's end.  */
static void free_middle_of_filled_block(void) {
  char *p = malloc(4000);
  memset(p, 'A', 4000);
  opaque(malloc(100));
  do_free(p + 2048);
}

static void realloc_never_allocated(void) { opaque(realloc(never + 64 + 64, 100)); }

/* ---------------------------------------------------------------- overflows */

/* a's overflow runs 8 bytes past its usable size: over b's size word.  */
static void overflow(char *a, int byte) { memset(a, byte, malloc_usable_size(a) + sizeof(size_t)); }

static void overflow_next_size_normal(void) {
  char *a = malloc(BIG);
  opaque(malloc(BIG));
  opaque(malloc(100));
  overflow(a, 'A');
  do_free(a);
}

static void overflow_next_size_fast(void) {
  fill_tcache(SMALL - 8);
  char *a = calloc(1, SMALL - 8); /* malloc would take one back from the full tcache bin */
  opaque(calloc(1, SMALL - 8));
  overflow(a, 'A');
  do_free(a);
}

/* b's size word zeroed: its PREV_INUSE says a is free already.  */
static void overflow_zeroes_next_header(void) {
  char *a = malloc(BIG);
  opaque(malloc(BIG));
  opaque(malloc(100));
  overflow(a, 0);
  do_free(a);
}

/* The classic unlink set-up: b's prev_size forged and its PREV_INUSE
   cleared, so freeing b merges it with a "previous chunk" inside a.  */
static void overflow_forges_prev_size(void) {
  char *a = malloc(BIG);
  char *b = malloc(BIG);
  opaque(malloc(100));
  memset(a, 'A', malloc_usable_size(a));
  size_t *bh = size_word(b);
  bh[-1] = 0x100;          /* prev_size, the last word of a's block */
  bh[0] &= ~(size_t)1;     /* PREV_INUSE */
  do_free(b);
}

static void overflow_into_top(void) {
  char *a = malloc(100); /* borders top */
  overflow(a, 'A');
  opaque(malloc(BIG * 100));
}

/* ---------------------------------------------------------------- free lists (safe-linking) */

static void tcache_next_corrupted(void) {
  char *a = malloc(SMALL), *b = malloc(SMALL), *c = malloc(SMALL);
  do_free(a);
  do_free(b);
  do_free(c);
  memset(c, bad_mask(c), SMALL);
  opaque(malloc(SMALL)); /* c */
  opaque(malloc(SMALL)); /* the forged next */
}

static void fastbin_next_corrupted(void) {
  fill_tcache(SMALL);
  char *a = calloc(1, SMALL), *b = calloc(1, SMALL), *c = calloc(1, SMALL);
  do_free(a);
  do_free(b);
  do_free(c);
  memset(c, bad_mask(c), SMALL);
  opaque(calloc(1, SMALL)); /* c */
  opaque(calloc(1, SMALL)); /* the forged next */
}

static void fastbin_next_corrupted_consolidate(void) {
  fill_tcache(SMALL);
  char *a = calloc(1, SMALL), *b = calloc(1, SMALL), *c = calloc(1, SMALL);
  do_free(a);
  do_free(b);
  do_free(c);
  memset(c, bad_mask(c), SMALL);
  opaque(malloc(256 * 1024)); /* a large request consolidates the fastbins */
}

/* A forged back link: points at a "chunk" whose fd is not the victim.  */
static struct { size_t prev_size, size; void *fd, *bk; } forged;

static void smallbin_bk_corrupted(void) {
  fill_tcache(200);
  char *a = calloc(1, 200);
  opaque(malloc(100));
  do_free(a);                  /* unsorted */
  opaque(malloc(BIG));         /* sorts a into its small bin */
  ((void **)a)[1] = &forged;   /* a->bk */
  opaque(calloc(1, 200));      /* calloc skips the tcache: the small bin */
}

static void unsorted_bk_corrupted(void) {
  char *a = malloc(BIG);
  opaque(malloc(100));
  do_free(a);                  /* unsorted */
  ((void **)a)[1] = &forged;   /* a->bk */
  opaque(malloc(BIG + 500));   /* walks the unsorted list */
}

/* ---------------------------------------------------------------- the table */

struct misuse_case {
  const char *name;
  void (*fn)(void);
  const char *msg;
  const char *thread_msg; /* in a second thread, when it differs (glibc's own differ there) */
  const char *cached;     /* -a: with hpmalloc's own cache; NULL: the set-up needs glibc's tcache,
                             or the check is made only in the arena */
};

/* -a: what hpmalloc's own cache catches instead.  */
static const char same[] = "";

static const struct misuse_case cases[] = {
  { "tcache_double_free", tcache_double_free, "free(): double free detected in tcache 2", NULL, same },
  { "tcache_double_free_deep", tcache_double_free_deep, "free(): double free detected in tcache 2", NULL, same },
  { "fastbin_double_free", fastbin_double_free, "double free or corruption (fasttop)", NULL, "free(): double free detected in tcache 2" },
  /* a free chunk's header, and top's, lose the thread-arena bit: the second
     free goes to the main arena, where the chunk is out of bounds */
  { "bin_double_free", bin_double_free, "double free or corruption (!prev)", "double free or corruption (out)", "free(): double free detected in tcache 2" },
  { "top_double_free", top_double_free, "double free or corruption (top)", "double free or corruption (out)", "free(): double free detected in tcache 2" },
  { "free_never_allocated", free_never_allocated, "free(): invalid pointer", NULL, same },
  { "free_misaligned_never_allocated", free_misaligned_never_allocated, "free(): invalid pointer", NULL, same },
  { "free_never_allocated_fake_mapped", free_never_allocated_fake_mapped, "munmap_chunk(): invalid pointer", NULL, same },
  { "free_middle_of_zeroed_block", free_middle_of_zeroed_block, "free(): invalid pointer", NULL, same },
  { "free_middle_misaligned", free_middle_misaligned, "free(): invalid pointer", NULL, same },
  { "free_middle_of_filled_block", free_middle_of_filled_block, "double free or corruption (out)", NULL, same },
  { "realloc_never_allocated", realloc_never_allocated, "realloc(): invalid pointer", NULL, same },
  { "overflow_next_size_normal", overflow_next_size_normal, "free(): invalid next size (normal)", NULL, same },
  { "overflow_next_size_fast", overflow_next_size_fast, "free(): invalid next size (fast)", NULL, NULL },
  { "overflow_zeroes_next_header", overflow_zeroes_next_header, "double free or corruption (!prev)", NULL, same },
  /* -a: b is cached at its free; the forged prev_size is caught when b
     reaches its arena, where the neighbours are read under its lock */
  { "overflow_forges_prev_size", overflow_forges_prev_size, "corrupted size vs. prev_size while consolidating", NULL,
    NULL },
  { "overflow_into_top", overflow_into_top, "malloc(): corrupted top size", NULL, NULL },
  { "tcache_next_corrupted", tcache_next_corrupted, "malloc(): unaligned tcache chunk detected", NULL, same },
  /* with other threads about, the new head is checked when c is taken */
  { "fastbin_next_corrupted", fastbin_next_corrupted, "malloc(): unaligned fastbin chunk detected 2",
    "malloc(): unaligned fastbin chunk detected", "malloc(): unaligned tcache chunk detected" },
  { "fastbin_next_corrupted_consolidate", fastbin_next_corrupted_consolidate,
    "malloc_consolidate(): unaligned fastbin chunk detected", NULL, NULL },
  { "smallbin_bk_corrupted", smallbin_bk_corrupted, "malloc(): smallbin double linked list corrupted", NULL, NULL },
  { "unsorted_bk_corrupted", unsorted_bk_corrupted, "malloc(): unsorted double linked list corrupted", NULL, NULL },
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* -t: each case runs in a second thread (its own arena, and the
   allocator past its single-threaded shortcuts).  */
static bool in_thread;
/* -a: hpmalloc with its own cache.  */
static bool own_cache;

static void *case_thread(void *arg) {
  ((void (*)(void))arg)();
  return NULL;
}

static void run_fn(void (*fn)(void)) {
  if (!in_thread) {
    fn();
    return;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, case_thread, (void *)fn) != 0 || pthread_join(th, NULL) != 0) _exit(2);
}

/* Run one case in a child: 0 when it died of SIGABRT with exactly the
   message.  */
static int run_case(const struct misuse_case *c) {
  int fds[2];
  if (pipe(fds) != 0) return perror("pipe"), 1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return perror("fork"), 1;
  if (pid == 0) {
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    alarm(20);
    run_fn(c->fn);
    _exit(0);
  }
  close(fds[1]);
  char err[1024];
  size_t len = 0;
  ssize_t r;
  while (len < sizeof err - 1 && (r = read(fds[0], err + len, sizeof err - 1 - len)) > 0) len += (size_t)r;
  err[len] = '\0';
  close(fds[0]);
  int st;
  if (waitpid(pid, &st, 0) != pid) return perror("waitpid"), 1;
  const char *expected = in_thread && c->thread_msg ? c->thread_msg : c->msg;
#ifndef __GLIBC__
  /* A C library without glibc's __libc_single_threaded (musl) never lets
     the allocator know the process is single-threaded, so a fastbin is
     always popped the way glibc pops it with other threads about.  */
  if (c->fn == fastbin_next_corrupted) expected = c->thread_msg;
#endif
  if (own_cache && c->cached != same) expected = c->cached;
  char want[256];
  snprintf(want, sizeof want, "%s\n", expected);
  bool sig = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
  bool msg = strcmp(err, want) == 0;
  if (sig && msg) {
    printf("ok    %-36s %s\n", c->name, expected);
    return 0;
  }
  char *nl;
  while ((nl = strchr(err, '\n')) != NULL) *nl = '|';
  printf("FAIL  %-36s wanted SIGABRT and \"%s\"; got %s %d and stderr \"%s\"\n", c->name, expected,
         WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), err);
  return 1;
}

/* Defined when hpmalloc is the allocator (preloaded or linked).  */
extern const char *hpmalloc_version(void) __attribute__((weak));

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  setenv("LIBC_FATAL_STDERR_", "1", 1);
  if (argc == 2 && strcmp(argv[1], "-l") == 0) {
    for (int i = 0; i < NCASES; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  int failed = 0, ran = 0, skipped = 0, first = 1;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (strcmp(argv[first], "-t") == 0) in_thread = true;
    else if (strcmp(argv[first], "-a") == 0) own_cache = true;
    else return fprintf(stderr, "misuse: unknown option %s (-t, -a, -l)\n", argv[first]), 2;
  }
  for (int i = 0; i < NCASES; i++) {
    bool want = argc == first;
    for (int j = first; j < argc; j++) want |= strcmp(argv[j], cases[i].name) == 0;
    if (!want) continue;
    if (own_cache && !cases[i].cached) {
      printf("skip  %-36s needs glibc's tcache, or is checked only in the arena (run without -a)\n", cases[i].name);
      skipped++;
      continue;
    }
    ran++;
    failed += run_case(&cases[i]);
  }
  printf("misuse%s%s, allocator %s: %d of %d cases caught as expected, %d skipped\n",
         in_thread ? " (in a second thread)" : "", own_cache ? " (own cache)" : "", hpmalloc_version ? "hpmalloc" : "glibc",
         ran - failed, ran, skipped);
  return failed || ran == 0 ? 1 : 0;
}
