/* SPDX-License-Identifier: MIT */
/* Criterion tests of hpm's command-line parser (tools/hpm/args.c): every
   kind of argument in both spellings, repeated options, `--`, the rest of
   a command line, --help, and the messages of every error, which must
   name the argument and say what it accepts.  MIT licence.  */
#include <criterion/criterion.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "hpm.h"

struct sub {
  int mode;
};

struct opts {
  const char *file, *out, *name;
  int flag, quiet, choice, count, calls;
  uint64_t size;
  char seen[64];
  struct sub sub;
  char **rest;
};

/* ARG_FN: records every value it sees; "bad" is refused with a reason.  */
static int collect(void *field, const char *val, char *err, size_t errlen) {
  struct opts *o = (struct opts *)((char *)field - offsetof(struct opts, seen));
  if (!strcmp(val, "bad")) {
    snprintf(err, errlen, "'bad' is not accepted here");
    return -1;
  }
  size_t l = strlen(o->seen);
  snprintf(o->seen + l, sizeof o->seen - l, "%s%s", l ? "," : "", val);
  o->calls++;
  return 0;
}

static const struct arg_opt sub_args[] = {
  { .name = "--mode", .kind = ARG_CHOICE, .off = offsetof(struct sub, mode), .meta = "slow|fast|auto" },
  { 0 },
};

static const struct arg_opt test_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct opts, file), .required = 1, .doc = "the input" },
  { .name = "OUT", .kind = ARG_STR, .off = offsetof(struct opts, out) },
  { .name = "-o", .kind = ARG_STR, .off = offsetof(struct opts, name), .meta = "NAME" },
  { .name = "--flag", .kind = ARG_FLAG, .off = offsetof(struct opts, flag) },
  { .name = "--quiet", .alias = "-q", .kind = ARG_FLAG, .off = offsetof(struct opts, quiet) },
  { .name = "--pick", .kind = ARG_CHOICE, .off = offsetof(struct opts, choice), .meta = "none|first|full" },
  { .name = "--count", .kind = ARG_INT, .off = offsetof(struct opts, count), .min = 1, .max = 51 },
  { .name = "--size", .kind = ARG_SIZE, .off = offsetof(struct opts, size), .min = 4u << 20, .max = 64ull << 30 },
  { .name = "--add", .kind = ARG_FN, .off = offsetof(struct opts, seen), .meta = "X", .set = collect },
  { .kind = ARG_TABLE, .off = offsetof(struct opts, sub), .sub = sub_args },
  { 0 },
};

static const struct arg_cmd test_cmd = {
  .name = "test",
  .synopsis = "usage: hpm test FILE [OUT] [options]\n",
  .help = "A command for the tests.\n",
  .args = test_args,
};

static const struct arg_opt rest_args[] = {
  { .name = "-o", .kind = ARG_STR, .off = offsetof(struct opts, name), .meta = "FILE", .required = 1,
    .doc = "the trace to write" },
  { .name = "--quiet", .alias = "-q", .kind = ARG_FLAG, .off = offsetof(struct opts, quiet) },
  { .name = "CMD", .kind = ARG_REST, .off = offsetof(struct opts, rest), .meta = "ARGS...", .required = 1 },
  { 0 },
};

static const struct arg_cmd rest_cmd = {
  .name = "rec",
  .synopsis = "usage: hpm rec -o FILE -- CMD ARGS...\n",
  .args = rest_args,
};

static char out_text[4096], err_text[4096];

/* Parse ARGV (NULL-terminated) with CMD into O, capturing what goes to
   stdout and stderr.  Returns args_parse's result.  */
static int run(const struct arg_cmd *cmd, char **argv, struct opts *o) {
  int argc = 0;
  while (argv[argc]) argc++;
  memset(o, 0, sizeof *o);
  fflush(stdout);
  fflush(stderr);
  FILE *fo = tmpfile(), *fe = tmpfile();
  cr_assert(fo && fe);
  int so = dup(1), se = dup(2);
  dup2(fileno(fo), 1);
  dup2(fileno(fe), 2);
  int rc = args_parse(cmd, argc, argv, o);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  size_t n;
  rewind(fo);
  n = fread(out_text, 1, sizeof out_text - 1, fo);
  out_text[n] = 0;
  rewind(fe);
  n = fread(err_text, 1, sizeof err_text - 1, fe);
  err_text[n] = 0;
  fclose(fo);
  fclose(fe);
  return rc;
}

#define ARGV(...) ((char *[]){ "test", __VA_ARGS__, NULL })

Test(args, every_kind_in_both_spellings) {
  struct opts o;
  int rc = run(&test_cmd,
               ARGV("in.hpmt", "--flag", "-q", "--pick", "full", "--count=7", "--size", "2G", "--mode=fast", "-o",
                    "x", "out.txt"),
               &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_str_eq(o.file, "in.hpmt");
  cr_assert_str_eq(o.out, "out.txt");
  cr_assert_str_eq(o.name, "x");
  cr_assert_eq(o.flag, 1);
  cr_assert_eq(o.quiet, 1);
  cr_assert_eq(o.choice, 2);
  cr_assert_eq(o.count, 7);
  cr_assert_eq(o.size, 2ull << 30);
  cr_assert_eq(o.sub.mode, 1);
  cr_assert_str_empty(err_text);
  rc = run(&test_cmd, ARGV("--pick=none", "in", "--count", "51", "--size=4M"), &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_eq(o.choice, 0);
  cr_assert_eq(o.count, 51);
  cr_assert_eq(o.size, 4u << 20);
  cr_assert_null(o.out);
}

Test(args, repeated_options) {
  struct opts o;
  int rc = run(&test_cmd, ARGV("in", "--add", "a", "--count", "3", "--add=b:c", "--count", "4", "--add", "-"), &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_eq(o.calls, 3);
  cr_assert_str_eq(o.seen, "a,b:c,-"); /* a value may start with '-' */
  cr_assert_eq(o.count, 4);             /* the last one counts */
}

Test(args, unknown_option_lists_the_options) {
  struct opts o;
  cr_assert_eq(run(&test_cmd, ARGV("in", "--bogus"), &o), 2);
  cr_assert(strstr(err_text, "hpm test: unknown option --bogus (options: -o, --flag, --quiet, --pick, --count, "
                             "--size, --add, --mode, --help)\n"),
            "%s", err_text);
  cr_assert(strstr(err_text, "usage: hpm test FILE"), "%s", err_text);
  cr_assert_eq(run(&test_cmd, ARGV("in", "--bogus=1"), &o), 2);
  cr_assert(strstr(err_text, "unknown option --bogus ("), "%s", err_text);
}

Test(args, missing_value_says_what_it_takes) {
  struct opts o;
  cr_assert_eq(run(&test_cmd, ARGV("in", "--pick"), &o), 2);
  cr_assert(strstr(err_text, "hpm test: --pick needs a value: none, first or full\n"), "%s", err_text);
  cr_assert_eq(run(&test_cmd, ARGV("in", "-o"), &o), 2);
  cr_assert(strstr(err_text, "-o needs a value: NAME\n"), "%s", err_text);
  cr_assert_eq(run(&test_cmd, ARGV("in", "--count"), &o), 2);
  cr_assert(strstr(err_text, "--count needs a value: an integer from 1 to 51\n"), "%s", err_text);
}

Test(args, bad_values_name_the_valid_ones) {
  struct opts o;
  cr_assert_eq(run(&test_cmd, ARGV("in", "--pick", "half"), &o), 2);
  cr_assert_str_eq(err_text, "hpm test: bad value for --pick: 'half' (expected none, first or full)\n");
  cr_assert_eq(run(&test_cmd, ARGV("in", "--mode=warp"), &o), 2);
  cr_assert_str_eq(err_text, "hpm test: bad value for --mode: 'warp' (expected slow, fast or auto)\n");
  cr_assert_eq(run(&test_cmd, ARGV("in", "--pick="), &o), 2);
  cr_assert(strstr(err_text, "bad value for --pick: ''"), "%s", err_text);
  const char *bad_counts[] = { "0", "52", "-1", "+3", "3x", "", "99999999999999999999" };
  for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; i++) {
    char arg[64];
    snprintf(arg, sizeof arg, "--count=%s", bad_counts[i]);
    cr_assert_eq(run(&test_cmd, ARGV("in", arg), &o), 2, "%s", arg);
    cr_assert(strstr(err_text, "(expected an integer from 1 to 51)"), "%s: %s", arg, err_text);
  }
  cr_assert_eq(run(&test_cmd, ARGV("in", "--size", "1K"), &o), 2);
  cr_assert(strstr(err_text, "bad value for --size: '1K' (expected a size in bytes from 4M to 64G; K, M and G"),
            "%s", err_text);
  cr_assert_eq(run(&test_cmd, ARGV("in", "--size", "65G"), &o), 2);
  cr_assert_eq(run(&test_cmd, ARGV("in", "--size", "1Q"), &o), 2);
  cr_assert_eq(run(&test_cmd, ARGV("in", "--add", "bad"), &o), 2);
  cr_assert_str_eq(err_text, "hpm test: --add: 'bad' is not accepted here\n");
  cr_assert_eq(run(&test_cmd, ARGV("in", "--flag=1"), &o), 2);
  cr_assert(strstr(err_text, "hpm test: --flag takes no value\n"), "%s", err_text);
}

Test(args, missing_and_unexpected_positionals) {
  struct opts o;
  cr_assert_eq(run(&test_cmd, ARGV("--flag"), &o), 2);
  cr_assert(strstr(err_text, "hpm test: missing FILE (the input)\n"), "%s", err_text);
  cr_assert_eq(run(&test_cmd, ARGV("a", "b", "c"), &o), 2);
  cr_assert(strstr(err_text, "hpm test: unexpected argument c\n"), "%s", err_text);
}

Test(args, double_dash_ends_options) {
  struct opts o;
  int rc = run(&test_cmd, ARGV("--flag", "--", "-in-", "--help"), &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_str_eq(o.file, "-in-");
  cr_assert_str_eq(o.out, "--help");
  cr_assert_str_empty(out_text);
}

Test(args, help_prints_the_usage) {
  struct opts o;
  cr_assert_eq(run(&test_cmd, ARGV("in", "--help", "--bogus"), &o), 0);
  cr_assert_str_eq(out_text, "usage: hpm test FILE [OUT] [options]\nA command for the tests.\n");
  cr_assert_str_empty(err_text);
  cr_assert_eq(run(&test_cmd, ARGV("-h"), &o), 0);
  cr_assert_str_eq(out_text, "usage: hpm test FILE [OUT] [options]\nA command for the tests.\n");
}

Test(args, rest_of_the_command_line) {
  struct opts o;
  int rc = run(&rest_cmd, ARGV("-o", "t.hpmt", "--", "ls", "-l", "--help"), &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_str_eq(o.name, "t.hpmt");
  cr_assert_str_eq(o.rest[0], "ls");
  cr_assert_str_eq(o.rest[1], "-l");
  cr_assert_str_eq(o.rest[2], "--help");
  cr_assert_null(o.rest[3]);
  /* Without --, the first argument that is not an option starts it.  */
  rc = run(&rest_cmd, ARGV("-q", "-o", "t", "sh", "-c", "exit 3"), &o);
  cr_assert_eq(rc, ARGS_RUN, "stderr: %s", err_text);
  cr_assert_eq(o.quiet, 1);
  cr_assert_str_eq(o.rest[0], "sh");
  cr_assert_str_eq(o.rest[2], "exit 3");
}

Test(args, missing_required_option_is_named) {
  struct opts o;
  cr_assert_eq(run(&rest_cmd, ARGV("--", "ls"), &o), 2);
  cr_assert(strstr(err_text, "hpm rec: missing -o FILE (the trace to write)\n"), "%s", err_text);
  cr_assert(strstr(err_text, "usage: hpm rec -o FILE -- CMD ARGS...\n"), "%s", err_text);
  cr_assert_eq(run(&rest_cmd, ARGV("-o", "t"), &o), 2);
  cr_assert(strstr(err_text, "hpm rec: missing CMD ARGS...\n"), "%s", err_text);
  cr_assert_eq(run(&rest_cmd, ARGV("-o", "t", "--"), &o), 2);
  cr_assert(strstr(err_text, "missing CMD"), "%s", err_text);
}

Test(args, usage_error_for_later_checks) {
  fflush(stderr);
  FILE *fe = tmpfile();
  int se = dup(2);
  dup2(fileno(fe), 2);
  int rc = args_usage_error(&test_cmd, "at most %d of %s", 3, "these");
  fflush(stderr);
  dup2(se, 2);
  close(se);
  rewind(fe);
  size_t n = fread(err_text, 1, sizeof err_text - 1, fe);
  err_text[n] = 0;
  fclose(fe);
  cr_assert_eq(rc, 2);
  cr_assert_str_eq(err_text, "hpm test: at most 3 of these\nusage: hpm test FILE [OUT] [options]\n");
}

/* A table that nests sub-tables is a programming error: abort, naming it.  */
static const struct arg_opt nested_args[] = {
  { .kind = ARG_TABLE, .sub = test_args },
  { 0 },
};

static const struct arg_cmd nested_cmd = { .name = "nested", .synopsis = "usage: hpm nested\n", .args = nested_args };

Test(args, nested_tables_abort, .signal = SIGABRT) {
  struct opts o;
  args_parse(&nested_cmd, 1, ARGV("x"), &o); /* flattening the table aborts before argv is read */
}

/* An option with an implicit value (`--stacks` is `--stacks=64`): a value
   only after '=', so the next argument stays a positional (or `--`).  */
static const struct arg_opt implicit_args[] = {
  { .name = "--depth", .kind = ARG_INT, .off = offsetof(struct opts, count), .min = 1, .max = 256, .implicit = "64" },
  { .name = "CMD", .kind = ARG_REST, .off = offsetof(struct opts, rest), .required = 1 },
  { 0 },
};

static const struct arg_cmd implicit_cmd = {
  .name = "imp",
  .synopsis = "usage: hpm imp [--depth[=N]] CMD...\n",
  .args = implicit_args,
};

Test(args, implicit_value) {
  struct opts o;
  cr_assert_eq(run(&implicit_cmd, ARGV("--depth", "--", "prog"), &o), ARGS_RUN);
  cr_expect_eq(o.count, 64);
  cr_expect_str_eq(o.rest[0], "prog");
  cr_assert_eq(run(&implicit_cmd, ARGV("--depth=8", "prog", "9"), &o), ARGS_RUN);
  cr_expect_eq(o.count, 8);
  cr_expect_str_eq(o.rest[1], "9");
  cr_assert_eq(run(&implicit_cmd, ARGV("--depth", "12"), &o), ARGS_RUN, "12 is the command, not the depth");
  cr_expect_eq(o.count, 64);
  cr_expect_str_eq(o.rest[0], "12");
  cr_assert_eq(run(&implicit_cmd, ARGV("--depth=0", "prog"), &o), 2);
  cr_expect(strstr(err_text, "bad value for --depth: '0' (expected an integer from 1 to 256)") != NULL, "%s", err_text);
}
