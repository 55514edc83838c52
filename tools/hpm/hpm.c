/* SPDX-License-Identifier: MIT */
/* hpm: record, replay, compare, analyze and tune malloc traces; measure TLB
   costs.  This file: the table of commands and the dispatcher.  A command
   is one entry here and a function `int cmd_NAME(int argc, char **argv)`
   (argv[0] is the command's name), declared in hpm.h.  MIT licence.  */
#include "hpm.h"

#include "../../include/hpmalloc.h"

#include <errno.h>
#include <string.h>

/* SUMMARY: the command's line in `hpm --help`; NULL for the internal ones
   (the replay engine, the tests' entry points).  */
static const struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} commands[] = {
  { "record", cmd_record, "record -o FILE [--stacks] -- CMD ARGS...  run CMD with the recorder preloaded" },
  { "replay", cmd_replay, "replay FILE [options]           replay a trace against an allocator" },
  { "compare", cmd_compare, "compare FILE [options]          replay under several allocators, side by side" },
  { "analyze", cmd_analyze, "analyze FILE [--json] [--svg DIR] [--stacks] [--flame OUT.svg]  describe a trace" },
  { "ls", cmd_ls, "ls BASE...                      the processes of a recording" },
  { "tune", cmd_tune, "tune FILE [options]             search malloc tunables for a trace" },
  { "tlbcost", cmd_tlbcost, "tlbcost [options]               measure the cost of a TLB miss here" },
  { "doctor", cmd_doctor, "doctor [--quick] [--heap SIZE] [--json]  what this machine does with each mode" },
  { "dump", cmd_dump, "dump FILE                       print every event (text)" },
  { "reencode", cmd_reencode, "reencode FILE OUT               decode and encode again (format check)" },
  { "__engine", cmd_engine, NULL },
  { "__tlbdecode", cmd_tlbdecode, NULL },
  { "__tlbsim", cmd_tlbsim, NULL },
};

static void usage(FILE *f) {
  fputs("usage: hpm COMMAND [ARGS]\n", f);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (commands[i].summary) fprintf(f, "  %s\n", commands[i].summary);
  fputs("`hpm COMMAND --help` describes each, `man hpm` all of them; `hpm --version`.\n", f);
  fprintf(f, "Trace format: %s\n", format_doc_path());
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
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return close_stdout(argc < 2 ? 2 : 0);
  }
  if (!strcmp(argv[1], "--version")) {
    printf("hpm %s (hpmalloc %s; trace format versions 1 and 2)\n", HPMALLOC_VERSION_STRING, HPMALLOC_VERSION_STRING);
    return close_stdout(0);
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(argv[1], commands[i].name)) return close_stdout(commands[i].fn(argc - 1, argv + 1));
  fprintf(stderr, "hpm: unknown command %s\n", argv[1]);
  usage(stderr);
  return 2;
}
