/* SPDX-License-Identifier: MIT */
/* A tiny TAP-like harness for tests that exercise a malloc implementation
 * through its public API.  MIT licence.
 *
 * The harness itself never allocates: messages are formatted into a static
 * buffer with vsnprintf and written with write(2), so nothing it does goes
 * through the allocator under test.  Counters live in a MAP_SHARED page so
 * that tests run in a forked child (to isolate global allocator state such
 * as mallopt settings or the dynamic mmap threshold) report into the same
 * totals.
 *
 *   TEST(name) { CHECK(cond, "fmt", ...); ... }
 *   run_test("name", fn, flags)      flags: T_ISOLATE | T_HPM | T_NO_VALGRIND
 *   tap_finish("label")              prints "label: N passed, N failed, N skipped"
 */
#ifndef HPT_TAP_H
#define HPT_TAP_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HPT_HAVE_VG_H 1
#endif
#endif

#define T_ISOLATE 1u     /* run in a forked child: global state stays local */
#define T_HPM 2u         /* needs hpmalloc's extensions: skipped on another malloc */
#define T_NO_VALGRIND 4u /* reads freed memory, measures RSS or aborts on purpose */

struct tap_shared {
  int n;            /* tests run */
  int pass, fail, skip;
  int cur_failed;   /* failed checks in the current test */
  int cur_skipped;  /* the current test asked to be skipped */
  char skip_reason[160];
};

static struct tap_shared *tap_s;
static int tap_have_hpm;   /* set by the test program */
static int tap_verbose;

static void tap_write(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

__attribute__((format(printf, 1, 2))) static void tap_printf(const char *fmt, ...) {
  static char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  tap_write(buf, (size_t)n);
}

static int tap_under_valgrind(void) {
#ifdef HPT_HAVE_VG_H
  if (RUNNING_ON_VALGRIND) return 1;
#endif
  const char *e = getenv("HPT_VALGRIND");
  return e != NULL && e[0] == '1';
}

static void tap_init(void) {
  void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    tap_printf("Bail out! mmap for the harness failed\n");
    _exit(2);
  }
  tap_s = m;
  tap_verbose = getenv("HPT_VERBOSE") != NULL;
}

/* Record one check.  Only failures are printed (at most 10 per test). */
__attribute__((format(printf, 5, 6))) static int tap_check(int ok, const char *file, int line,
                                                            const char *expr, const char *fmt, ...) {
  if (ok) return 1;
  tap_s->cur_failed++;
  if (tap_s->cur_failed <= 10) {
    static char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *m = msg[0] == ' ' ? msg + 1 : msg;
    tap_printf("#   FAILED %s:%d: %s%s%s\n", file, line, expr, m[0] ? " -- " : "", m);
  } else if (tap_s->cur_failed == 11) {
    tap_printf("#   (further failures of this test not shown)\n");
  }
  return 0;
}

#define CHECK(cond, ...) tap_check(!!(cond), __FILE__, __LINE__, #cond, " " __VA_ARGS__)
/* Like CHECK but stops the current test function on failure. */
#define REQUIRE(cond, ...) do { if (!CHECK(cond, __VA_ARGS__)) return; } while (0)
#define SKIP_TEST(...) do { tap_s->cur_skipped = 1; \
    snprintf(tap_s->skip_reason, sizeof tap_s->skip_reason, __VA_ARGS__); return; } while (0)
#define NOTE(...) do { if (tap_verbose) { tap_printf("# "); tap_printf(__VA_ARGS__); tap_printf("\n"); } } while (0)

static void tap_report(const char *name) {
  tap_s->n++;
  if (tap_s->cur_skipped && tap_s->cur_failed == 0) {
    tap_s->skip++;
    tap_printf("ok %d - %s # SKIP %s\n", tap_s->n, name, tap_s->skip_reason);
  } else if (tap_s->cur_failed == 0) {
    tap_s->pass++;
    tap_printf("ok %d - %s\n", tap_s->n, name);
  } else {
    tap_s->fail++;
    tap_printf("not ok %d - %s (%d failed checks)\n", tap_s->n, name, tap_s->cur_failed);
  }
}

/* HPT_ONLY=a,b runs only the tests whose names contain one of the words. */
static int tap_selected(const char *name) {
  const char *only = getenv("HPT_ONLY");
  if (!only || !*only) return 1;
  char word[128];
  while (*only) {
    size_t n = strcspn(only, ",");
    if (n > 0 && n < sizeof word) {
      memcpy(word, only, n);
      word[n] = 0;
      if (strstr(name, word)) return 1;
    }
    only += n;
    if (*only == ',') only++;
  }
  return 0;
}

static void run_test(const char *name, void (*fn)(void), unsigned flags) {
  if (!tap_selected(name)) return;
  tap_s->cur_failed = 0;
  tap_s->cur_skipped = 0;
  tap_s->skip_reason[0] = 0;
  if ((flags & T_HPM) && !tap_have_hpm) {
    tap_s->cur_skipped = 1;
    snprintf(tap_s->skip_reason, sizeof tap_s->skip_reason, "hpmalloc extensions not present");
  } else if ((flags & T_NO_VALGRIND) && tap_under_valgrind()) {
    tap_s->cur_skipped = 1;
    snprintf(tap_s->skip_reason, sizeof tap_s->skip_reason, "not meaningful under valgrind");
  } else if (flags & T_ISOLATE) {
    pid_t pid = fork();
    if (pid < 0) {
      tap_check(0, __FILE__, __LINE__, "fork()", "errno %d", errno);
    } else if (pid == 0) {
      alarm(120);
      fn();
      _exit(0);
    } else {
      int st = 0;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        tap_check(0, __FILE__, __LINE__, "isolated test child exited normally",
                  "status 0x%x (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
  } else {
    fn();
  }
  tap_report(name);
}

static int tap_finish(const char *label) {
  tap_printf("1..%d\n", tap_s->n);
  tap_printf("%s: %d passed, %d failed, %d skipped\n", label, tap_s->pass, tap_s->fail, tap_s->skip);
  return tap_s->fail == 0 ? 0 : 1;
}

static double tap_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keep the compiler from eliding malloc/free pairs or reasoning about them. */
static inline void *opaque(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}
static inline size_t opaque_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/* Small deterministic PRNG (xorshift64*), so runs are reproducible. */
static uint64_t tap_rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t rnd(void) {
  uint64_t x = tap_rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  tap_rng_state = x;
  return x * 0x2545f4914f6cdd1dull;
}
static inline size_t rnd_range(size_t lo, size_t hi) { /* inclusive */
  return lo + (size_t)(rnd() % (hi - lo + 1));
}

#endif
