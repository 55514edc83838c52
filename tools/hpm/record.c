/* SPDX-License-Identifier: MIT */
/* hpm record: run a program with the recorder (libhpmtrace.so) preloaded,
   then name and summarise the trace files it left.  MIT licence.  */
#include "args.h"
#include "hpm.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct record_opts {
  const char *out; /* -o FILE, as given */
  int quiet;
  int stacks; /* frames per call stack; 0: none */
  int unwind; /* index in "libunwind|libgcc|fp" */
  char **cmd; /* the program and its arguments, NULL-terminated */
};

static const struct arg_opt record_args[] = {
  { .name = "-o",
    .kind = ARG_STR,
    .off = offsetof(struct record_opts, out),
    .meta = "FILE",
    .required = 1,
    .doc = "the trace to write" },
  { .name = "--quiet", .alias = "-q", .kind = ARG_FLAG, .off = offsetof(struct record_opts, quiet) },
  { .name = "--stacks",
    .kind = ARG_INT,
    .off = offsetof(struct record_opts, stacks),
    .min = 1,
    .max = HPM_MAX_DEPTH,
    .implicit = "64" },
  { .name = "--unwind",
    .kind = ARG_CHOICE,
    .off = offsetof(struct record_opts, unwind),
    .meta = "libunwind|libgcc|fp" },
  { .name = "CMD",
    .kind = ARG_REST,
    .off = offsetof(struct record_opts, cmd),
    .meta = "ARGS...",
    .required = 1,
    .doc = "the program to record, after the options or after --" },
  { 0 },
};

static const struct arg_cmd record_cmd = {
  .name = "record",
  .synopsis = "usage: hpm record -o FILE [--quiet] [--stacks[=DEPTH]] [--unwind libunwind|libgcc|fp] -- CMD ARGS...\n",
  .help = "Runs CMD with libhpmtrace.so preloaded.  The first process's trace is FILE;\n"
          "every other process it starts writes FILE.<pid> (FILE.<pid>.<k> after an\n"
          "exec).  Exit status: CMD's (128+N if a signal N killed it).\n"
          "  --stacks[=DEPTH]  record each allocation's call stack, DEPTH frames (1 to 256,\n"
          "                    default 64), and the mappings for `hpm analyze --stacks`\n"
          "  --unwind U        how: libunwind (default; DWARF unwind tables, works without\n"
          "                    frame pointers), libgcc (_Unwind_Backtrace) or fp (frame\n"
          "                    pointers: fastest, only for code built with them)\n"
          "Environment: HPM_RECORDER=path/to/libhpmtrace.so overrides the library.\n",
  .args = record_args,
};

static char *recorder_path(void) {
  const char *env = getenv("HPM_RECORDER");
  if (env) return strdup(env);
  return find_recorder();
}

/* OUT as an absolute path in ABS (PATH_MAX bytes): the program may change
   directory.  Returns 0, or -1 after a message.  */
static int absolute_path(const char *out, char *abs) {
  int n;
  if (out[0] == '/')
    n = snprintf(abs, PATH_MAX, "%s", out);
  else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
      perror("hpm record: getcwd");
      return -1;
    }
    n = snprintf(abs, PATH_MAX, "%s/%s", cwd, out);
  }
  if (n < 0 || n >= PATH_MAX) {
    fprintf(stderr, "hpm record: %s: path too long\n", out);
    return -1;
  }
  return 0;
}

/* Remove ABS and ABS.<pid>... of an earlier run (they would mix with this
   one) and check that ABS can be created.  Returns 0, or -1 after a
   message.  */
static int clear_output(const char *abs) {
  char pat[PATH_MAX + 8];
  glob_t g;
  (void)snprintf(pat, sizeof pat, "%s.[0-9]*", abs); /* fits: strlen(abs) < PATH_MAX */
  if (glob(pat, 0, NULL, &g) == 0) {
    for (size_t k = 0; k < g.gl_pathc; k++) unlink(g.gl_pathv[k]);
    globfree(&g);
  }
  unlink(abs);
  int probe = open(abs, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (probe < 0) {
    fprintf(stderr, "hpm record: %s: %s\n", abs, strerror(errno));
    return -1;
  }
  (void)close(probe); /* an empty file, removed next */
  unlink(abs);
  return 0;
}

/* LD_PRELOAD for the program: LIB, then what the environment preloads
   already.  malloc'd, or NULL after a message.  */
static char *preload_value(const char *lib) {
  const char *old = getenv("LD_PRELOAD");
  size_t len = strlen(lib) + (old ? strlen(old) : 0) + 2;
  char *pre = malloc(len);
  if (!pre) {
    perror("hpm record");
    return NULL;
  }
  (void)snprintf(pre, len, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : ""); /* sized above */
  return pre;
}

/* Run CMD with the recorder writing to ABS; wait for it.  Returns its pid
   (with its wait status in *ST), or -1 after a message.  */
static pid_t run_traced(const struct record_opts *o, const char *abs, const char *pre, int *st) {
  char **cmd = o->cmd;
  pid_t pid = fork();
  if (pid < 0) {
    perror("hpm record: fork");
    return -1;
  }
  if (pid == 0) {
    static const char *const unwinders[] = { "libunwind", "libgcc", "fp" };
    char depth[16];
    (void)snprintf(depth, sizeof depth, "%d", o->stacks); /* fits: at most 256 */
    if (setenv("HPM_TRACE_OUT", abs, 1) != 0 || setenv("LD_PRELOAD", pre, 1) != 0 ||
        (o->stacks ? setenv("HPM_STACKS", depth, 1) != 0 || setenv("HPM_UNWIND", unwinders[o->unwind], 1) != 0
                   : unsetenv("HPM_STACKS") != 0)) {
      fprintf(stderr, "hpm record: setenv: %s\n", strerror(errno));
      _exit(127);
    }
    execvp(cmd[0], cmd);
    fprintf(stderr, "hpm record: %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  /* The program gets them; we finish the files.  signal() cannot fail
     for these valid signal numbers.  */
  (void)signal(SIGINT, SIG_IGN);
  (void)signal(SIGTERM, SIG_IGN);
  (void)signal(SIGQUIT, SIG_IGN);
  while (waitpid(pid, st, 0) < 0 && errno == EINTR)
    ;
  return pid;
}

/* The first process wrote ABS.<PID>: name it ABS.  */
static void adopt_first_trace(const char *abs, pid_t pid, int quiet) {
  char first[PATH_MAX + 32];
  (void)snprintf(first, sizeof first, "%s.%d", abs, (int)pid); /* fits: strlen(abs) < PATH_MAX */
  if (rename(first, abs) != 0 && !quiet)
    fprintf(stderr,
            "hpm record: no trace from the first process (%s): a statically linked\n"
            "  program, or one that never called malloc, cannot be traced by preloading\n",
            first);
}

/* One trace file's line of the summary (every file's when there are at
   most ten); adds its events and bytes to the totals.  */
static void report_file(const char *path, int show, uint64_t *events, uint64_t *bytes) {
  struct hpm_trace tr;
  char err[512];
  if (hpm_trace_read_file(path, &tr, err, sizeof err)) {
    fprintf(stderr, "hpm record: %s\n", err);
    return;
  }
  FILE *f = fopen(path, "rb");
  long sz = 0;
  if (f) {
    if (fseek(f, 0, SEEK_END) == 0) sz = ftell(f);
    if (sz < 0) sz = 0;
    (void)fclose(f); /* opened for reading: nothing to lose */
  }
  char size[32];
  fmt_bytes((double)sz, size, sizeof size);
  if (show)
    fprintf(stderr, "hpm record: %s: %zu events, %s (%.2f bytes/event)\n", path, tr.nev, size,
            tr.nev ? (double)sz / (double)tr.nev : 0.0);
  *events += tr.nev;
  *bytes += (uint64_t)sz;
  hpm_trace_free(&tr);
}

/* The summary on stderr: each file written, then the totals.  */
static void record_report(const char *abs, double wall) {
  char pat[PATH_MAX + 8];
  glob_t g;
  (void)snprintf(pat, sizeof pat, "%s*", abs); /* fits: strlen(abs) < PATH_MAX */
  if (glob(pat, 0, NULL, &g) != 0) return;
  uint64_t events = 0, bytes = 0;
  for (size_t k = 0; k < g.gl_pathc; k++) report_file(g.gl_pathv[k], g.gl_pathc <= 10 || k == 0, &events, &bytes);
  char size[32];
  fmt_bytes((double)bytes, size, sizeof size);
  fprintf(stderr, "hpm record: %zu file(s)%s, %llu events, %s, %.2f s\n", g.gl_pathc,
          g.gl_pathc > 10 ? " (one per process: FILE.<pid>)" : "", (unsigned long long)events, size, wall);
  globfree(&g);
}

/* Returns the program's exit status, or 1 when it could not be run.  */
static int record_run(const struct record_opts *o) {
  char abs[PATH_MAX];
  char *lib = recorder_path(), *pre = NULL;
  int rc = 1, st;
  if (!lib) {
    fprintf(stderr, "hpm record: libhpmtrace.so not found (set HPM_RECORDER)\n");
    return 1;
  }
  if (absolute_path(o->out, abs) == 0 && clear_output(abs) == 0 && (pre = preload_value(lib))) {
    double t0 = now_s();
    pid_t pid = run_traced(o, abs, pre, &st);
    if (pid > 0) {
      double wall = now_s() - t0;
      adopt_first_trace(abs, pid, o->quiet);
      if (!o->quiet) record_report(abs, wall);
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    }
  }
  free(lib);
  free(pre);
  return rc;
}

int cmd_record(int argc, char **argv) {
  struct record_opts o = { 0 };
  int rc = args_parse(&record_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  /* `-o -- cmd`: the FILE was forgotten, not a trace to name "--" */
  if (!strcmp(o.out, "--")) return args_usage_error(&record_cmd, "-o needs a FILE before --, e.g. -o app.hpmt -- CMD");
  return record_run(&o);
}
