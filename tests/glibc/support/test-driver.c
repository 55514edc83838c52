/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/test-driver.c>.  Written for
   hpmalloc; MIT licence.

   Included at the end of a test; defines main.  Macros the test may
   define before including it:
     TEST_FUNCTION       the test function's name (default do_test); the
                         legacy test-skeleton.c turns an expression form
                         into a function
     TEST_FUNCTION_ARGV  a test function taking (argc, argv)
     PREPARE             void PREPARE (int, char **), run before the test
     CLEANUP_HANDLER     void CLEANUP_HANDLER (void), run on timeout
     EXPECTED_SIGNAL     the test passes only if it dies of this signal
     EXPECTED_STATUS     the test passes only if it exits with this status
     TIMEOUT             seconds (default DEFAULT_TIMEOUT, 20)
     TEST_NO_MALLOPT     do not call mallopt (M_PERTURB, 42)
     TEST_NO_SETVBUF     keep stdout buffered
     CMDLINE_OPTIONS, CMDLINE_PROCESS, CMDLINE_OPTSTRING  extra options  */

#include <support/test-driver.h>
#include <getopt.h>
#include <string.h>

int
main (int argc, char **argv)
{
  struct test_config hpm_config;
  memset (&hpm_config, 0, sizeof (hpm_config));

#ifdef PREPARE
  hpm_config.prepare_function = (PREPARE);
#endif

#if defined (TEST_FUNCTION) && defined (TEST_FUNCTION_ARGV)
# error TEST_FUNCTION and TEST_FUNCTION_ARGV are mutually exclusive
#endif
#if defined (TEST_FUNCTION)
  hpm_config.test_function = TEST_FUNCTION;
#elif defined (TEST_FUNCTION_ARGV)
  hpm_config.test_function_argv = TEST_FUNCTION_ARGV;
#else
  hpm_config.test_function = do_test;
#endif

#ifdef CLEANUP_HANDLER
  hpm_config.cleanup_function = CLEANUP_HANDLER;
#endif
#ifdef EXPECTED_SIGNAL
  hpm_config.expected_signal = (EXPECTED_SIGNAL);
#endif
#ifdef EXPECTED_STATUS
  hpm_config.expected_status = (EXPECTED_STATUS);
#endif
#ifdef TEST_NO_MALLOPT
  hpm_config.no_mallopt = 1;
#endif
#ifdef TEST_NO_SETVBUF
  hpm_config.no_setvbuf = 1;
#endif
#ifdef TIMEOUT
  hpm_config.timeout = (TIMEOUT);
#endif

#ifdef CMDLINE_OPTIONS
  static const struct option hpm_options[] =
    {
      CMDLINE_OPTIONS
      TEST_DEFAULT_OPTIONS
      { NULL, 0, NULL, 0 }
    };
  hpm_config.options = hpm_options;
#endif
#ifdef CMDLINE_PROCESS
  hpm_config.cmdline_function = CMDLINE_PROCESS;
#endif
#ifdef CMDLINE_OPTSTRING
  hpm_config.optstring = "+" CMDLINE_OPTSTRING;
#else
  hpm_config.optstring = "+";
#endif

  return support_test_main (argc, argv, &hpm_config);
}
