/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/test-driver.h>.  Written for
   hpmalloc; MIT licence.

   A test defines `int do_test (void)' (or names it with TEST_FUNCTION, or
   uses TEST_FUNCTION_ARGV) and includes <support/test-driver.c>, which
   provides main.  The driver runs the test in a forked child under a
   timeout and turns the outcome into an exit status: 0 pass, 1 fail,
   77 (EXIT_UNSUPPORTED) unsupported.  */
#ifndef HPM_SUPPORT_TEST_DRIVER_H
#define HPM_SUPPORT_TEST_DRIVER_H

#include <sys/cdefs.h>

__BEGIN_DECLS

struct test_config
{
  void (*prepare_function) (int argc, char **argv);
  int (*test_function) (void);
  int (*test_function_argv) (int argc, char **argv);
  void (*cleanup_function) (void);
  void (*cmdline_function) (int);
  const void *options;          /* struct option[], or NULL */
  int timeout;                  /* seconds; 0 means DEFAULT_TIMEOUT */
  int expected_status;          /* expected exit status */
  int expected_signal;          /* nonzero: the test must die of it */
  char no_mallopt;              /* do not call mallopt (M_PERTURB, 42) */
  char no_setvbuf;              /* keep stdout buffered */
  const char *optstring;
};

enum
  {
    EXIT_UNSUPPORTED = 77,
    DEFAULT_TIMEOUT = 20,
    OPT_DIRECT = 1000,
    OPT_TESTDIR,
  };

#define TEST_DEFAULT_OPTIONS                            \
  { "verbose", no_argument, NULL, 'v' },                \
  { "direct", no_argument, NULL, OPT_DIRECT },          \
  { "test-dir", required_argument, NULL, OPT_TESTDIR },

extern const char *test_dir;
extern unsigned int test_verbose;

#define verbose_printf(...)                      \
  do {                                           \
    if (test_verbose > 0)                        \
      printf (__VA_ARGS__);                      \
  } while (0);

int support_test_main (int argc, char **argv, const struct test_config *);

__END_DECLS

#endif
