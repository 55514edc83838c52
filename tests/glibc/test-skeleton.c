/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's top-level test-skeleton.c, the legacy entry
   point that older tests include as "../test-skeleton.c" (found through
   -iquote tests/glibc/support).  Written for hpmalloc; MIT licence.

   Legacy tests define TEST_FUNCTION as an expression (`do_test ()') and
   PREPARE / CLEANUP_HANDLER as calls; wrap them as the functions the
   current driver expects, then include it.  */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <paths.h>
#include <search.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/param.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <support/check.h>
#include <support/support.h>
#include <support/temp_file.h>
#include <support/xsignal.h>

static int
hpm_legacy_test_function (int argc __attribute__ ((unused)),
                          char **argv __attribute__ ((unused)))
{
#ifdef TEST_FUNCTION
  return TEST_FUNCTION;
# undef TEST_FUNCTION
#else
  return do_test (argc, argv);
#endif
}
#define TEST_FUNCTION_ARGV hpm_legacy_test_function

#ifdef PREPARE
static void
hpm_legacy_prepare (int argc __attribute__ ((unused)),
                    char **argv __attribute__ ((unused)))
{
  PREPARE (argc, argv);
}
# undef PREPARE
# define PREPARE hpm_legacy_prepare
#endif

#ifdef CLEANUP_HANDLER
static void
hpm_legacy_cleanup (void)
{
  CLEANUP_HANDLER;
}
# undef CLEANUP_HANDLER
# define CLEANUP_HANDLER hpm_legacy_cleanup
#endif

#ifdef CMDLINE_PROCESS
static void
hpm_legacy_cmdline (int c)
{
  switch (c)
    {
      CMDLINE_PROCESS
    }
}
# undef CMDLINE_PROCESS
# define CMDLINE_PROCESS hpm_legacy_cmdline
#endif

#include <support/test-driver.c>

/* Legacy tests that included <pthread.h> also got the thread wrappers.  */
#ifdef _PTHREAD_H
# include <support/xthread.h>
#endif
