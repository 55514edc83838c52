/* hpm: record, replay, compare, analyze and tune malloc traces; measure TLB
   costs.  This file: the command dispatcher, `record`, and the trace
   utilities `dump` and `reencode`.  MIT licence.  */
#include "hpm.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] = "usage: hpm COMMAND [ARGS]\n"
                            "  record -o FILE -- CMD ARGS...   run CMD with the recorder preloaded\n"
                            "  replay FILE [options]           replay a trace against an allocator\n"
                            "  compare FILE [options]          replay under several allocators, side by side\n"
                            "  analyze FILE [--json] [--svg DIR]  describe a trace\n"
                            "  tune FILE [options]             search malloc tunables for a trace\n"
                            "  tlbcost [options]               measure the cost of a TLB miss here\n"
                            "  dump FILE                       print every event (text)\n"
                            "  reencode FILE OUT               decode and encode again (format check)\n"
                            "`hpm COMMAND --help` describes each, `man hpm` all of them.\n";

static const char record_usage[] = "usage: hpm record -o FILE [--quiet] -- CMD ARGS...\n"
                                   "Runs CMD with libhpmtrace.so preloaded.  The first process's trace is FILE;\n"
                                   "every other process it starts writes FILE.<pid> (FILE.<pid>.<k> after an\n"
                                   "exec).  Exit status: CMD's (128+N if a signal N killed it).\n"
                                   "Environment: HPM_RECORDER=path/to/libhpmtrace.so overrides the library.\n";

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

static char *recorder_path(void) {
  const char *env = getenv("HPM_RECORDER");
  if (env) return strdup(env);
  return find_recorder();
}

int cmd_record(int argc, char **argv) {
  const char *out = NULL;
  int quiet = 0, i;
  for (i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      fputs(record_usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
      quiet = 1;
    else if (argv[i][0] != '-')
      break;
    else {
      fprintf(stderr, "hpm record: unknown option %s\n%s", argv[i], record_usage);
      return 2;
    }
  }
  if (!out || i >= argc) {
    fputs(record_usage, stderr);
    return 2;
  }
  char *lib = recorder_path();
  if (!lib) {
    fprintf(stderr, "hpm record: libhpmtrace.so not found (set HPM_RECORDER)\n");
    return 1;
  }
  /* An absolute output path: the program may change directory.  */
  char abs[PATH_MAX];
  int n;
  if (out[0] == '/')
    n = snprintf(abs, sizeof abs, "%s", out);
  else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
      perror("hpm record: getcwd");
      free(lib);
      return 1;
    }
    n = snprintf(abs, sizeof abs, "%s/%s", cwd, out);
  }
  if (n < 0 || n >= (int)sizeof abs) {
    fprintf(stderr, "hpm record: %s: path too long\n", out);
    free(lib);
    return 1;
  }
  /* Stale files of an earlier run would mix with this one.  */
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
    free(lib);
    return 1;
  }
  (void)close(probe); /* an empty file, removed next */
  unlink(abs);
  const char *old = getenv("LD_PRELOAD");
  size_t prelen = strlen(lib) + (old ? strlen(old) : 0) + 2;
  char *pre = malloc(prelen);
  if (!pre) {
    perror("hpm record");
    free(lib);
    return 1;
  }
  (void)snprintf(pre, prelen, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : ""); /* sized above */

  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    perror("hpm record: fork");
    free(lib);
    free(pre);
    return 1;
  }
  if (pid == 0) {
    if (setenv("HPM_TRACE_OUT", abs, 1) != 0 || setenv("LD_PRELOAD", pre, 1) != 0) {
      fprintf(stderr, "hpm record: setenv: %s\n", strerror(errno));
      _exit(127);
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "hpm record: %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  /* The program gets them; we finish the files.  signal() cannot fail
     for these valid signal numbers.  */
  (void)signal(SIGINT, SIG_IGN);
  (void)signal(SIGTERM, SIG_IGN);
  (void)signal(SIGQUIT, SIG_IGN);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  double wall = now_s() - t0;
  char first[PATH_MAX + 32];
  (void)snprintf(first, sizeof first, "%s.%d", abs, (int)pid); /* fits: strlen(abs) < PATH_MAX */
  if (rename(first, abs) != 0 && !quiet)
    fprintf(stderr,
            "hpm record: no trace from the first process (%s): a statically linked\n"
            "  program, or one that never called malloc, cannot be traced by preloading\n",
            first);
  if (!quiet) {
    (void)snprintf(pat, sizeof pat, "%s*", abs); /* fits: strlen(abs) < PATH_MAX */
    if (glob(pat, 0, NULL, &g) == 0) {
      uint64_t total_ev = 0, total_bytes = 0;
      for (size_t k = 0; k < g.gl_pathc; k++) {
        struct hpm_trace tr;
        char err[512];
        if (hpm_trace_read_file(g.gl_pathv[k], &tr, err, sizeof err) == 0) {
          FILE *f = fopen(g.gl_pathv[k], "rb");
          long sz = 0;
          if (f) {
            if (fseek(f, 0, SEEK_END) == 0) sz = ftell(f);
            if (sz < 0) sz = 0;
            (void)fclose(f); /* opened for reading: nothing to lose */
          }
          if (g.gl_pathc <= 10 || k == 0)
            fprintf(stderr, "hpm record: %s: %zu events, %ld bytes (%.2f bytes/event)\n", g.gl_pathv[k], tr.nev, sz,
                    tr.nev ? (double)sz / (double)tr.nev : 0.0);
          total_ev += tr.nev;
          total_bytes += (uint64_t)sz;
          hpm_trace_free(&tr);
        } else
          fprintf(stderr, "hpm record: %s\n", err);
      }
      fprintf(stderr, "hpm record: %zu file(s)%s, %llu events, %llu bytes, %.2f s\n", g.gl_pathc,
              g.gl_pathc > 10 ? " (one per process: FILE.<pid>)" : "", (unsigned long long)total_ev,
              (unsigned long long)total_bytes, wall);
      globfree(&g);
    }
  }
  free(lib);
  free(pre);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

int cmd_dump(int argc, char **argv) {
  if (argc != 2 || is_help(argv[1])) {
    fputs("usage: hpm dump FILE\nPrints the header and one line per event.\n", argc == 2 ? stdout : stderr);
    return argc == 2 ? 0 : 2;
  }
  struct hpm_trace tr;
  if (load_trace(argv[1], &tr, NULL, 0)) return 1;
  printf("version %u page_size %llu thp %llu pid %llu ppid %llu clock %llu chunks %zu events %zu\ncmdline:",
         tr.hdr.version, (unsigned long long)tr.hdr.page_size, (unsigned long long)tr.hdr.thp_mode,
         (unsigned long long)tr.hdr.pid, (unsigned long long)tr.hdr.ppid, (unsigned long long)tr.hdr.clock_id,
         tr.nchunks, tr.nev);
  for (size_t k = 0; k < tr.hdr.cmdline_len; k++) putchar(tr.hdr.cmdline[k] ? tr.hdr.cmdline[k] : ' ');
  putchar('\n');
  for (size_t k = 0; k < tr.nev; k++) {
    const struct hpm_event *e = &tr.ev[k];
    printf("%u %llu %s%s%s size=%llu arg=%llu id=%llu ref=%llu dur=%llu\n", e->thread, (unsigned long long)e->t,
           hpm_kind_name(e->kind), e->flags & HPM_F_FAIL ? " FAIL" : "", e->flags & HPM_F_OLD_FREED ? " OLD_FREED" : "",
           (unsigned long long)e->size, (unsigned long long)e->arg, (unsigned long long)e->id,
           (unsigned long long)e->ref, (unsigned long long)e->dur);
  }
  hpm_trace_free(&tr);
  return 0;
}

int cmd_reencode(int argc, char **argv) {
  if (argc != 3 || is_help(argv[1])) {
    fputs("usage: hpm reencode FILE OUT\nDecodes FILE and encodes it again into OUT; for a file written by\n"
          "the recorder OUT is byte-identical.\n",
          argc == 2 ? stdout : stderr);
    return argc == 2 ? 0 : 2;
  }
  struct hpm_trace tr;
  if (load_trace(argv[1], &tr, NULL, 0)) return 1;
  unsigned char *buf;
  size_t len;
  int rc = 1;
  if (hpm_trace_encode(&tr, &buf, &len) == 0) {
    FILE *f = fopen(argv[2], "wb");
    if (f) {
      int ok = fwrite(buf, 1, len, f) == len && !ferror(f);
      if (fclose(f) == 0 && ok) rc = 0;
    }
    if (rc) fprintf(stderr, "hpm reencode: %s: %s\n", argv[2], strerror(errno));
    free(buf);
  }
  hpm_trace_free(&tr);
  return rc;
}

/* Output errors (a full disk, a closed pipe, ...) are detected once, here:
   stdio keeps a sticky error flag on the stream, so the individual printf
   and fputs calls are not checked (see tools/hpm/.clang-tidy).  Returns
   the exit status: RC, or 1 if standard output could not be written.  */
static int close_stdout(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "hpm: write error on standard output: %s\n", strerror(errno));
    return 1;
  }
  return rc;
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } cmds[] = {
    { "record", cmd_record },   { "replay", cmd_replay },
    { "compare", cmd_compare }, { "analyze", cmd_analyze },
    { "tune", cmd_tune },       { "tlbcost", cmd_tlbcost },
    { "dump", cmd_dump },       { "reencode", cmd_reencode },
    { "__engine", cmd_engine }, { "__tlbdecode", cmd_tlbdecode },
    { "__tlbsim", cmd_tlbsim },
  };
  if (argc < 2 || is_help(argv[1])) {
    FILE *out = argc < 2 ? stderr : stdout;
    fputs(usage, out);
    fprintf(out, "Trace format: %s\n", format_doc_path());
    return close_stdout(argc < 2 ? 2 : 0);
  }
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
    if (!strcmp(argv[1], cmds[i].name)) return close_stdout(cmds[i].fn(argc - 1, argv + 1));
  fprintf(stderr, "hpm: unknown command %s\n%s", argv[1], usage);
  return 2;
}
