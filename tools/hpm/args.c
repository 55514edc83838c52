/* SPDX-License-Identifier: MIT */
/* hpm: the command-line parser every command uses (the rules are in
   args.h).  A command's table, sub-tables included, is flattened into one
   list; then each argument is matched against it.  Messages say which argument
   is wrong and what it accepts, because the person reading them has the
   command line in front of them and nothing else.  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MAX 64 /* entries of one command, sub-tables included */
#define SIZE_UNITS "; K, M and G multiply by 1024, 1024^2 and 1024^3"

struct flat_arg {
  const struct arg_opt *a;
  size_t off; /* from the start of the options struct */
  int seen;
};

struct parser {
  const struct arg_cmd *cmd;
  char *opts;
  struct flat_arg args[ARGS_MAX];
  size_t n;
};

static int is_option(const char *name) { return name[0] == '-'; }

/* A programming error in a command's table, not a user's.  */
__attribute__((noreturn)) static void bad_table(const struct parser *ps, const char *what) {
  fprintf(stderr, "hpm %s: its table of arguments %s\n", ps->cmd->name, what);
  abort();
}

/* Append the entry T, at BASE in the options struct, to PS->args.  */
static void add_arg(struct parser *ps, const struct arg_opt *t, size_t base) {
  if (ps->n == ARGS_MAX) bad_table(ps, "is too long");
  ps->args[ps->n++] = (struct flat_arg){ t, base + t->off, 0 };
}

/* PS->args: the entries of the command's table, those of its sub-tables
   in their place.  */
static void flatten(struct parser *ps) {
  for (const struct arg_opt *t = ps->cmd->args; t->kind != ARG_END; t++) {
    if (t->kind != ARG_TABLE) {
      add_arg(ps, t, 0);
      continue;
    }
    for (const struct arg_opt *s = t->sub; s->kind != ARG_END; s++) {
      if (s->kind == ARG_TABLE) bad_table(ps, "nests sub-tables");
      add_arg(ps, s, t->off);
    }
  }
}

static int vfail(const struct arg_cmd *cmd, int synopsis, const char *fmt, va_list ap) {
  fprintf(stderr, "hpm %s: ", cmd->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  if (synopsis) fputs(cmd->synopsis, stderr);
  return 2;
}

static int fail(const struct parser *ps, int synopsis, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const struct parser *ps, int synopsis, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(ps->cmd, synopsis, fmt, ap);
  va_end(ap);
  return rc;
}

int args_usage_error(const struct arg_cmd *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(cmd, 1, fmt, ap);
  va_end(ap);
  return rc;
}

/* The limits of ARG_INT and ARG_SIZE: MAX 0 is no limit but the type's.  */
static uint64_t max_of(const struct arg_opt *a) {
  if (a->max) return a->max;
  return a->kind == ARG_INT ? INT_MAX : UINT64_MAX;
}

/* The index of VAL among CHOICES ("none|first|full"), or -1.  */
static int choice_index(const char *choices, const char *val) {
  size_t vl = strlen(val);
  for (int i = 0;; i++) {
    const char *bar = strchr(choices, '|');
    size_t l = bar ? (size_t)(bar - choices) : strlen(choices);
    if (l == vl && !strncmp(choices, val, l)) return i;
    if (!bar) return -1;
    choices = bar + 1;
  }
}

/* "64G", "4M", "1000": V in the largest unit that divides it.  */
static void size_text(uint64_t v, char *buf, size_t n) {
  static const char *const units[] = { "", "K", "M", "G" };
  int u = 0;
  while (u < 3 && v && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  /* fits: callers pass 32 bytes.  (A "%.*s" here crashed gcc 12's
     printf checker at -O0 --coverage.)  */
  (void)snprintf(buf, n, "%llu%s", (unsigned long long)v, units[u]);
}

/* What A accepts, for messages: "none, first or full", "an integer from 1
   to 51", "DIR".  Messages: truncation is harmless.  */
static void describe(const struct arg_opt *a, char *buf, size_t n) {
  size_t k = 0;
  switch (a->kind) {
  case ARG_CHOICE:
    for (const char *p = a->meta; *p && k + 8 < n; p++) {
      if (*p != '|') {
        buf[k++] = *p;
        continue;
      }
      const char *sep = strchr(p + 1, '|') ? ", " : " or ";
      memcpy(buf + k, sep, strlen(sep));
      k += strlen(sep);
    }
    buf[k] = 0;
    break;
  case ARG_INT:
    (void)snprintf(buf, n, "an integer from %llu to %llu", (unsigned long long)a->min, (unsigned long long)max_of(a));
    break;
  case ARG_SIZE: {
    char lo[32], hi[32];
    const char *noun = a->meta ? a->meta : "a size in bytes";
    size_text(a->min, lo, sizeof lo);
    size_text(max_of(a), hi, sizeof hi);
    if (max_of(a) != UINT64_MAX)
      (void)snprintf(buf, n, "%s from %s to %s%s", noun, lo, hi, SIZE_UNITS);
    else if (a->min)
      (void)snprintf(buf, n, "%s of at least %s%s", noun, lo, SIZE_UNITS);
    else
      (void)snprintf(buf, n, "%s%s", noun, SIZE_UNITS);
    break;
  }
  default: (void)snprintf(buf, n, "%s", a->meta ? a->meta : "a value"); break;
  }
}

/* Store VAL into A's field.  Returns 0, or 2 after a message.  */
static int set_value(const struct parser *ps, const struct flat_arg *f, const char *val) {
  const struct arg_opt *a = f->a;
  void *field = ps->opts + f->off;
  char why[512];
  unsigned long long v;
  uint64_t size;
  switch (a->kind) {
  case ARG_STR: *(const char **)field = val; return 0;
  case ARG_CHOICE: {
    int k = choice_index(a->meta, val);
    if (k < 0) break;
    *(int *)field = k;
    return 0;
  }
  case ARG_INT:
    if (parse_uint(val, a->min, max_of(a), &v)) break;
    *(int *)field = (int)v;
    return 0;
  case ARG_SIZE:
    if (parse_size(val, &size) || size < a->min || size > max_of(a)) break;
    *(uint64_t *)field = size;
    return 0;
  case ARG_FN:
    why[0] = 0;
    if (a->set(field, val, why, sizeof why) == 0) return 0;
    return fail(ps, 0, "%s: %s", a->name, why[0] ? why : "bad value");
  default: break;
  }
  describe(a, why, sizeof why);
  return fail(ps, 0, "bad value for %s: '%s' (expected %s)", a->name, val, why);
}

/* The option named by the first LEN bytes of NAME, or NULL.  */
static struct flat_arg *find_option(struct parser *ps, const char *name, size_t len) {
  for (size_t k = 0; k < ps->n; k++) {
    const struct arg_opt *a = ps->args[k].a;
    if (!is_option(a->name)) continue;
    if ((strlen(a->name) == len && !strncmp(a->name, name, len)) ||
        (a->alias && strlen(a->alias) == len && !strncmp(a->alias, name, len)))
      return &ps->args[k];
  }
  return NULL;
}

static int unknown_option(const struct parser *ps, const char *name, size_t len) {
  char list[512];
  size_t k = 0;
  list[0] = 0;
  for (size_t i = 0; i < ps->n && k < sizeof list; i++)
    if (is_option(ps->args[i].a->name)) {
      int m = snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", ps->args[i].a->name);
      if (m > 0) k += (size_t)m; /* a message: truncation is harmless */
    }
  return fail(ps, 1, "unknown option %.*s (options: %s%s--help)", (int)len, name, list, k ? ", " : "");
}

/* ARGV[*I] is an option: find it, take its value (from "=value" or from
   the next argument, advancing *I).  Returns 0, or 2 after a message.  */
static int take_option(struct parser *ps, int argc, char **argv, int *i) {
  const char *arg = argv[*i], *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  struct flat_arg *f = find_option(ps, arg, len);
  if (!f) return unknown_option(ps, arg, len);
  f->seen = 1;
  if (f->a->kind == ARG_FLAG) {
    if (eq) return fail(ps, 1, "%s takes no value", f->a->name);
    *(int *)(ps->opts + f->off) = 1;
    return 0;
  }
  if (!eq && f->a->implicit) return set_value(ps, f, f->a->implicit);
  const char *val = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
  if (!val) {
    char what[512];
    describe(f->a, what, sizeof what);
    return fail(ps, 1, "%s needs a value: %s", f->a->name, what);
  }
  return set_value(ps, f, val);
}

/* ARGV[I] is the next positional argument; *NEXT: where the search for
   its entry starts.  Returns 0, 1 when it starts the ARG_REST list (the
   parse is over), or 2 after a message.  */
static int take_positional(struct parser *ps, char **argv, int i, size_t *next) {
  while (*next < ps->n && is_option(ps->args[*next].a->name)) (*next)++;
  if (*next == ps->n) return fail(ps, 1, "unexpected argument %s", argv[i]);
  struct flat_arg *f = &ps->args[(*next)++];
  f->seen = 1;
  if (f->a->kind == ARG_REST) {
    *(char ***)(ps->opts + f->off) = &argv[i];
    return 1;
  }
  return set_value(ps, f, argv[i]);
}

static int check_required(const struct parser *ps) {
  for (size_t k = 0; k < ps->n; k++) {
    const struct arg_opt *a = ps->args[k].a;
    if (a->required && !ps->args[k].seen)
      return fail(ps, 1, "missing %s%s%s%s%s%s", a->name, a->meta ? " " : "", a->meta ? a->meta : "",
                  a->doc ? " (" : "", a->doc ? a->doc : "", a->doc ? ")" : "");
  }
  return ARGS_RUN;
}

static int print_help(const struct arg_cmd *cmd) {
  fputs(cmd->synopsis, stdout);
  if (cmd->help) fputs(cmd->help, stdout);
  if (cmd->help_more) cmd->help_more(stdout);
  return 0;
}

int args_parse(const struct arg_cmd *cmd, int argc, char **argv, void *opts) {
  struct parser ps = { .cmd = cmd, .opts = opts };
  size_t next = 0;
  int options = 1; /* 0 after "--" */
  flatten(&ps);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int rc;
    if (options && (!strcmp(arg, "--help") || !strcmp(arg, "-h"))) return print_help(cmd);
    if (options && !strcmp(arg, "--")) {
      options = 0;
      continue;
    }
    if (options && is_option(arg) && arg[1])
      rc = take_option(&ps, argc, argv, &i);
    else
      rc = take_positional(&ps, argv, i, &next);
    if (rc == 1) break;
    if (rc) return rc;
  }
  return check_required(&ps);
}
