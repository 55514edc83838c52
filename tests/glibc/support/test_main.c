/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's support/support_test_main.c: the supervisor
   that runs a test function in a child under a timeout.  Written for
   hpmalloc; MIT licence.

   Environment:
     TIMEOUTFACTOR     integer multiplier of the timeout (as in glibc)
     HPM_TEST_TIMEOUT  seconds: replaces the test's own TIMEOUT (the
                       hpmalloc runner scales down glibc's long timeouts)
     TMPDIR            where temporary files go (default /tmp)
     TEST_COREDUMPS    set and non-empty: leave core dumps enabled
   Options: --direct (no fork, no timeout), --verbose, --test-dir=DIR.  */
#include <support/test-driver.h>
#include <support/check.h>
#include <support/support.h>
#include <support/temp_file.h>

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

unsigned int test_verbose;

static const struct option default_options[] =
  {
    TEST_DEFAULT_OPTIONS
    { NULL, 0, NULL, 0 }
  };

static pid_t test_pid;
static void (*cleanup_function) (void);
static int timeout_seconds;

static void
usage (const struct option *options)
{
  printf ("Usage: %s [options]\n\n"
          "Environment: TIMEOUTFACTOR, HPM_TEST_TIMEOUT, TMPDIR, "
          "TEST_COREDUMPS\n\nOptions:\n", program_invocation_short_name);
  for (size_t i = 0; options[i].name != NULL; ++i)
    printf ("  --%s%s\n", options[i].name,
            options[i].has_arg == required_argument ? " <arg>" : "");
}

/* SIGALRM (timeout) or SIGINT: kill the test's process group, report,
   exit 1.  */
static void __attribute__ ((noreturn))
supervisor_signal (int sig)
{
  int status = 0;
  pid_t killed = 0;
  kill (-test_pid, SIGKILL);
  kill (test_pid, SIGKILL);
  for (int i = 0; i < 10 && killed == 0; ++i)
    {
      killed = waitpid (test_pid, &status, WNOHANG | WUNTRACED);
      if (killed == 0)
        {
          struct timespec ts = { 0, 100 * 1000 * 1000 };
          nanosleep (&ts, NULL);
        }
    }
  if (cleanup_function != NULL)
    cleanup_function ();
  if (sig == SIGINT)
    {
      signal (sig, SIG_DFL);
      raise (sig);
    }
  if (killed <= 0 || (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL))
    printf ("Timed out after %d s: killed the child process\n",
            timeout_seconds);
  else if (WIFSIGNALED (status))
    printf ("Timed out: the child process got signal %s\n",
            strsignal (WTERMSIG (status)));
  else
    printf ("Timed out: killed the child process but it exited %d\n",
            WEXITSTATUS (status));
  fflush (stdout);
  _exit (1);
}

static int
run_test_function (int argc, char **argv, const struct test_config *config)
{
  if (config->test_function != NULL)
    return config->test_function ();
  if (config->test_function_argv != NULL)
    return config->test_function_argv (argc, argv);
  printf ("error: no test function defined\n");
  exit (1);
}

static unsigned int
env_uint (const char *name, unsigned int fallback)
{
  const char *s = getenv (name);
  if (s == NULL || *s == '\0')
    return fallback;
  char *end;
  unsigned long v = strtoul (s, &end, 0);
  if (*end != '\0' || v == 0 || v > 100000)
    return fallback;
  return (unsigned int) v;
}

int
support_test_main (int argc, char **argv, const struct test_config *config)
{
  static int called;
  if (called++)
    {
      printf ("error: support_test_main called twice\n");
      exit (1);
    }
  const struct option *options
    = config->options != NULL ? config->options : default_options;
  cleanup_function = config->cleanup_function;
  int direct = getenv ("WAIT_FOR_DEBUGGER") != NULL;

  if (!config->no_mallopt)
    mallopt (M_PERTURB, 42);

  int opt;
  const char *dir = NULL;
  while ((opt = getopt_long (argc, argv, config->optstring, options, NULL))
         != -1)
    switch (opt)
      {
      case '?':
        usage (options);
        exit (1);
      case 'v':
        ++test_verbose;
        break;
      case OPT_DIRECT:
        direct = 1;
        break;
      case OPT_TESTDIR:
        dir = optarg;
        break;
      default:
        if (config->cmdline_function != NULL)
          config->cmdline_function (opt);
      }

  unsigned int factor = env_uint ("TIMEOUTFACTOR", 1);
  if (dir != NULL)
    {
      setenv ("TMPDIR", dir, 1);
      if (chdir (dir) != 0)
        {
          printf ("chdir (%s): %m\n", dir);
          exit (1);
        }
    }
  else
    {
      dir = getenv ("TMPDIR");
      if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    }
  support_set_test_dir (dir);

  unsigned int timeout = config->timeout > 0 ? (unsigned) config->timeout
                                             : DEFAULT_TIMEOUT;
  timeout = env_uint ("HPM_TEST_TIMEOUT", timeout);
  timeout_seconds = (int) (timeout * factor);

  if (!config->no_setvbuf)
    setvbuf (stdout, NULL, _IONBF, 0);
  atexit (support_delete_temp_files);

  /* The test function sees argv without the driver's options.  */
  argv[optind - 1] = argv[0];
  argv += optind - 1;
  argc -= optind - 1;

  if (config->prepare_function != NULL)
    config->prepare_function (argc, argv);

  if (direct)
    return support_report_failure (run_test_function (argc, argv, config));

  const char *coredumps = getenv ("TEST_COREDUMPS");
  int disable_coredumps = coredumps == NULL || *coredumps == '\0';

  fflush (stdout);
  test_pid = fork ();
  if (test_pid < 0)
    {
      printf ("Cannot fork test program: %m\n");
      exit (1);
    }
  if (test_pid == 0)
    {
      if (disable_coredumps)
        {
          struct rlimit zero = { 0, 0 };
          setrlimit (RLIMIT_CORE, &zero);
        }
      /* Own process group, so that a timeout kills every descendant.  */
      if (setpgid (0, 0) != 0)
        printf ("Failed to set the process group ID: %m\n");
      exit (run_test_function (argc, argv, config));
    }

  signal (SIGALRM, supervisor_signal);
  alarm (timeout_seconds);
  signal (SIGINT, supervisor_signal);

  int status;
  pid_t ret;
  do
    ret = waitpid (test_pid, &status, 0);
  while (ret < 0 && errno == EINTR);
  if (ret != test_pid)
    {
      printf ("error: waiting for the test process: %m\n");
      exit (1);
    }
  alarm (0);

  if (WIFEXITED (status))
    {
      int code = WEXITSTATUS (status);
      if (config->expected_signal != 0)
        {
          printf ("Expected signal '%s' from child, got none (exit status "
                  "%d)\n", strsignal (config->expected_signal), code);
          exit (1);
        }
      if (config->expected_status != 0)
        {
          if (code != config->expected_status)
            {
              printf ("Expected status %d, got %d\n",
                      config->expected_status, code);
              exit (1);
            }
          return support_report_failure (0);
        }
      return support_report_failure (code);
    }

  /* Terminated by a signal.  */
  int sig = WTERMSIG (status);
  if (config->expected_signal == 0)
    {
      printf ("Didn't expect signal from child: got `%s'\n", strsignal (sig));
      exit (1);
    }
  if (sig != config->expected_signal)
    {
      printf ("Incorrect signal from child: got `%s', need `%s'\n",
              strsignal (sig), strsignal (config->expected_signal));
      exit (1);
    }
  return support_report_failure (0);
}
