/* SPDX-License-Identifier: MIT */
/* hpm: the command-line parser every command uses.  MIT licence.

   A command declares its arguments in a table, one entry a line, and gets
   them parsed into its options struct:

     struct analyze_opts { const char *file, *svgdir; int json; };
     static const struct arg_opt analyze_args[] = {
       { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct analyze_opts, file), .required = 1 },
       { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct analyze_opts, json) },
       { .name = "--svg", .kind = ARG_STR, .off = offsetof(struct analyze_opts, svgdir), .meta = "DIR" },
       { 0 },
     };

   A name starting with '-' is an option, taken as `--opt value` or
   `--opt=value` (a long option; `-o value` for a short one); any other
   name is a positional argument, filled in table order.  `--help` and `-h`
   print the command's usage; `--` ends the options.  An option given twice
   keeps its last value, except ARG_FN ones, whose function sees every
   occurrence (`--config A --config B`).  Errors name the argument and what
   it accepts, and the exit status is 2.  */
#ifndef HPM_ARGS_H
#define HPM_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum arg_kind {
  ARG_END,    /* ends a table: { 0 } */
  ARG_FLAG,   /* int, set to 1; an option that takes no value */
  ARG_STR,    /* const char *: the value as given */
  ARG_CHOICE, /* int: the index of the value in META, "none|first|full" */
  ARG_INT,    /* int: a decimal integer in [MIN, MAX] (MAX 0: INT_MAX) */
  ARG_SIZE,   /* uint64_t: a size (4096, 64K, 2M, 1G) in [MIN, MAX] (MAX 0: no limit) */
  ARG_FN,     /* SET decides what the value means; sees every occurrence */
  ARG_REST,   /* char **: this positional and every argument after it */
  ARG_TABLE,  /* every entry of SUB, their offsets counted from OFF */
};

struct arg_opt {
  const char *name;  /* "--json", "-o", or a positional's name ("FILE") */
  const char *alias; /* another name ("-q" for "--quiet"), or NULL */
  enum arg_kind kind;
  int required;     /* an error names it when it is missing */
  size_t off;       /* the field in the options struct (offsetof) */
  const char *meta; /* the value's name in messages ("DIR"); ARG_CHOICE: the choices */
  uint64_t min, max;
  /* ARG_FN: store VAL into FIELD (the struct's member at OFF); 0, or -1
     with a reason in ERR ("at most 32 configurations").  */
  int (*set)(void *field, const char *val, char *err, size_t errlen);
  const struct arg_opt *sub; /* ARG_TABLE: a table without ARG_TABLE entries */
  const char *implicit;      /* the value of `--opt` given without `=value` (then the value
                                can only be given as `--opt=value`), or NULL */
  const char *doc;           /* for the message when it is missing, or NULL */
};

struct arg_cmd {
  const char *name;          /* "analyze": messages start "hpm analyze: " */
  const char *synopsis;      /* the "usage: ..." lines; --help and usage errors print it */
  const char *help;          /* the rest of --help */
  void (*help_more)(FILE *); /* prints after HELP (replay: the TLB presets), or NULL */
  const struct arg_opt *args;
};

/* What args_parse returns when the command is to run.  */
#define ARGS_RUN (-1)

/* Parse ARGV[1..ARGC-1] (ARGV[0] is the command's name; ARGV[ARGC] is
   NULL) into OPTS, which holds the defaults.  Returns ARGS_RUN, or the
   status to exit with: 0 after printing the usage (--help) to stdout, 2
   after a one-line error on stderr (plus the synopsis when the command
   line's shape is wrong).  */
int args_parse(const struct arg_cmd *cmd, int argc, char **argv, void *opts);

/* Print "hpm NAME: MESSAGE" and the synopsis on stderr; returns 2.  For
   the checks a command makes after parsing.  */
int args_usage_error(const struct arg_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
