/* Unit tests for tunables/tunables.c (Criterion).
 * SPDX-License-Identifier: MIT
 *
 * Needs only the symbols of tunables.c.  Standalone build:
 *   gcc -std=gnu11 -D_GNU_SOURCE -DHP_TEST_BUILD=1 -Wall -Wextra -Itunables \
 *     tests/unit/test_tunables.c tunables/tunables.c -lcriterion -o /tmp/tt  */

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tunables.h"

static const uint64_t KiB = 1024;
static const uint64_t MiB = 1024 * 1024;

static uint32_t
bit (int id)
{
  return (uint32_t) 1 << id;
}

/* Parse `s` as the only GLIBC_TUNABLES of an otherwise empty environment.  */
static struct hp_tunable_values
parse_gt (const char *s)
{
  struct hp_tunable_values v;
  hp_tunables_parse (&v, NULL, NULL, 0);
  hp_tunables_apply_string (&v, s);
  return v;
}

static struct hp_tunable_values
parse_env (const char *builtin, char **envp, int secure)
{
  struct hp_tunable_values v;
  memset (&v, 0xa5, sizeof v);
  hp_tunables_parse (&v, builtin, envp, secure);
  return v;
}

static void
expect_defaults_except (const struct hp_tunable_values *v, uint32_t mask)
{
  for (int id = 0; id < HP_T_COUNT; id++)
    if (!(mask & bit (id)))
      cr_expect_eq (v->val[id], hp_tunable_table[id].def, "%s changed",
                    hp_tunable_table[id].name);
  cr_expect_eq (v->set_mask, mask, "set_mask %#x, expected %#x",
                (unsigned) v->set_mask, (unsigned) mask);
}

/* ------------------------------------------------------------ table */

Test (tunables, defaults_match_glibc_64bit)
{
  struct hp_tunable_values v = parse_env (NULL, NULL, 0);
  expect_defaults_except (&v, 0);
  cr_expect_eq (v.val[HP_T_CHECK], 0);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 128 * KiB);
  cr_expect_eq (v.val[HP_T_PERTURB], 0);
  cr_expect_eq (v.val[HP_T_MMAP_THRESHOLD], 128 * KiB);
  cr_expect_eq (v.val[HP_T_TRIM_THRESHOLD], 128 * KiB);
  cr_expect_eq (v.val[HP_T_MMAP_MAX], 65536);
  cr_expect_eq (v.val[HP_T_ARENA_MAX], 0);
  cr_expect_eq (v.val[HP_T_ARENA_TEST], 8);
  /* glibc 2.36's is 1032; hpmalloc caches up to its largest class */
  cr_expect_eq (v.val[HP_T_TCACHE_MAX], 32760);
  cr_expect_eq (v.val[HP_T_TCACHE_COUNT], 7);
  cr_expect_eq (v.val[HP_T_TCACHE_UNSORTED_LIMIT], 0);
  cr_expect_eq (v.val[HP_T_MXFAST], 128);
  cr_expect_eq (v.val[HP_T_HUGETLB], 0);
  cr_expect_eq (v.val[HP_T_HUGETLB_SIZE], 0);
  cr_expect_eq (v.val[HP_T_HUGE_WASTE], 12);
  cr_expect_eq (v.val[HP_T_VERBOSE], 0);
  cr_expect_eq (v.val[HP_T_TCACHE_BYTES], MiB);
  cr_expect_eq (v.val[HP_T_STATS], 0);
}

Test (tunables, table_ranges)
{
  cr_expect_eq (hp_tunable_table[HP_T_CHECK].max, 3);
  cr_expect_eq (hp_tunable_table[HP_T_PERTURB].max, 0xff);
  cr_expect_eq (hp_tunable_table[HP_T_MMAP_THRESHOLD].max, (uint64_t) SIZE_MAX);
  cr_expect_eq (hp_tunable_table[HP_T_MMAP_MAX].max, INT32_MAX);
  cr_expect_eq (hp_tunable_table[HP_T_ARENA_MAX].min, 1);
  cr_expect_eq (hp_tunable_table[HP_T_ARENA_TEST].min, 1);
  cr_expect_eq (hp_tunable_table[HP_T_TCACHE_MAX].max, 32760);
  cr_expect_eq (hp_tunable_table[HP_T_TCACHE_COUNT].max, 65535);
  cr_expect_eq (hp_tunable_table[HP_T_MXFAST].max, 160);
  cr_expect_eq (hp_tunable_table[HP_T_HUGE_WASTE].max, 100);
  cr_expect_eq (hp_tunable_table[HP_T_VERBOSE].max, 1);
  cr_expect_eq (hp_tunable_table[HP_T_STATS].max, 1);
  for (int id = 0; id < HP_T_COUNT; id++)
    {
      const struct hp_tunable_desc *d = &hp_tunable_table[id];
      cr_assert_not_null (d->name, "row %d has no name", id);
      cr_expect_leq (d->min, d->max, "%s", d->name);
      /* arena_max's default 0 means "automatic" and cannot be set; a
         path row's min and max bound the name's length, its default 0
         is no name.  */
      if (id != HP_T_ARENA_MAX && d->type != HP_TT_PATH)
        cr_expect (d->def >= d->min && d->def <= d->max, "%s", d->name);
      cr_expect (strncmp (d->name, "glibc.malloc.", 13) == 0
                 || strncmp (d->name, "hpmalloc.", 9) == 0, "%s", d->name);
      for (int j = 0; j < id; j++)
        cr_expect_str_neq (d->name, hp_tunable_table[j].name);
    }
}

/* ------------------------------------------------------------ lookup */

Test (tunables, lookup_full_and_short_names)
{
  for (int id = 0; id < HP_T_COUNT; id++)
    {
      const char *n = hp_tunable_table[id].name;
      cr_expect_eq (hp_tunable_lookup (n, strlen (n)), id, "%s", n);
      if (strncmp (n, "glibc.", 6) == 0)
        cr_expect_eq (hp_tunable_lookup (n + 6, strlen (n + 6)), id, "%s", n);
    }
  cr_expect_eq (hp_tunable_lookup ("malloc.top_pad=5", 14), HP_T_TOP_PAD);
  cr_expect_eq (hp_tunable_lookup ("hpmalloc.verbose", 16), HP_T_VERBOSE);
}

Test (tunables, lookup_rejects_near_misses)
{
  static const char *const bad[] = {
    "", "glibc.", "malloc.", "glibc.malloc.", "glibc.malloc.top_pa",
    "glibc.malloc.top_pad_", "malloc.top_padx", "MALLOC.top_pad",
    "Glibc.malloc.check", "glibc.malloc.hugetlb_size", "malloc.hugetlb_size",
    "hpmalloc.top_pad", "glibc.hpmalloc.verbose", "malloc.verbose",
    "hpmalloc.", "verbose", "top_pad", "glibc.rtld.nns", "glibc.malloc.nope",
    "MALLOC_TOP_PAD_", "GLIBC_TUNABLES",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_expect_eq (hp_tunable_lookup (bad[i], strlen (bad[i])), -1, "%s",
                  bad[i]);
  cr_expect_eq (hp_tunable_lookup (NULL, 0), -1);
  /* len bounds the name; the rest of the buffer is not part of it.  */
  cr_expect_eq (hp_tunable_lookup ("malloc.check", 11), -1);
  cr_expect_eq (hp_tunable_lookup ("malloc.check", 0), -1);
}

/* ------------------------------------------------------------ aliases */

Test (tunables, every_alias_sets_its_tunable)
{
  int n = 0;
  for (int id = 0; id < HP_T_COUNT; id++)
    {
      const struct hp_tunable_desc *d = &hp_tunable_table[id];
      if (d->env_alias == NULL || d->type == HP_TT_PATH)
        continue; /* a path row: stats_file_from_alias_or_tunable */
      uint64_t want = d->def != d->max ? d->max : d->min;
      char buf[96];
      snprintf (buf, sizeof buf, "%s=%llu", d->env_alias,
                (unsigned long long) want);
      char *env[] = { "PATH=/bin", buf, NULL };
      struct hp_tunable_values v = parse_env (NULL, env, 0);
      cr_expect_eq (v.val[id], want, "%s", buf);
      expect_defaults_except (&v, bit (id));
      n++;
    }
  cr_expect_eq (n, 10, "MALLOC_{CHECK,TOP_PAD,PERTURB,MMAP_THRESHOLD,"
                "TRIM_THRESHOLD,MMAP_MAX}_, MALLOC_ARENA_{MAX,TEST}, "
                "HPMALLOC_VERBOSE, HPMALLOC_STATS");
}

/* HPMALLOC_STATS is the flag when its value is a number, the file when
   it has a '/', ignored otherwise; hpmalloc.stats_file takes any name.  */
Test (tunables, stats_file_from_alias_or_tunable)
{
  char *flag[] = { "HPMALLOC_STATS=1", NULL };
  struct hp_tunable_values v = parse_env (NULL, flag, 0);
  cr_expect_eq (v.val[HP_T_STATS], 1);
  expect_defaults_except (&v, bit (HP_T_STATS));

  char *file[] = { "HPMALLOC_STATS=/tmp/r.%p", NULL };
  v = parse_env (NULL, file, 0);
  cr_expect_eq (v.val[HP_T_STATS_FILE], 9);
  cr_expect (v.text[HP_T_STATS_FILE] == file[0] + 15);
  cr_expect_eq (v.val[HP_T_STATS], 0);
  expect_defaults_except (&v, bit (HP_T_STATS_FILE));

  char *neither[] = { "HPMALLOC_STATS=yes", "HPMALLOC_STATS=2", NULL };
  v = parse_env (NULL, neither, 0);
  expect_defaults_except (&v, 0);

  /* the first valid occurrence of the variable counts, whichever row took it */
  char *twice[] = { "HPMALLOC_STATS=./a", "HPMALLOC_STATS=1", NULL };
  v = parse_env (NULL, twice, 0);
  expect_defaults_except (&v, bit (HP_T_STATS_FILE));

  v = parse_gt ("hpmalloc.stats_file=report:glibc.malloc.mxfast=0");
  cr_expect_eq (v.val[HP_T_STATS_FILE], 6);
  cr_expect (strncmp (v.text[HP_T_STATS_FILE], "report:", 7) == 0);
  expect_defaults_except (&v, bit (HP_T_STATS_FILE) | bit (HP_T_MXFAST));

  v = parse_gt ("hpmalloc.stats_file=");
  expect_defaults_except (&v, 0);
  char *secure[] = { "HPMALLOC_STATS=/tmp/x", "GLIBC_TUNABLES=hpmalloc.stats_file=/tmp/y", NULL };
  v = parse_env (NULL, secure, 1);
  expect_defaults_except (&v, 0);
  cr_expect_null (v.text[HP_T_STATS_FILE]);
}

Test (tunables, alias_names_exact)
{
  char *env[] = { "MALLOC_TOP_PAD_X=1", "MALLOC_TOP_PAD=2", "malloc_top_pad_=3",
                  "MALLOC_TOP_PAD_", "XMALLOC_TOP_PAD_=4",
                  "MALLOC_ARENA_MAX_=5", NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  expect_defaults_except (&v, 0);
}

Test (tunables, alias_values)
{
  char *env[] = { "MALLOC_PERTURB_=0xA5", "MALLOC_MMAP_MAX_=010",
                  "MALLOC_TRIM_THRESHOLD_=-1", "MALLOC_CHECK_=",
                  "MALLOC_ARENA_MAX=4x", NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  cr_expect_eq (v.val[HP_T_PERTURB], 0xa5);
  cr_expect_eq (v.val[HP_T_MMAP_MAX], 8);
  cr_expect_eq (v.val[HP_T_TRIM_THRESHOLD], (uint64_t) SIZE_MAX);
  expect_defaults_except (&v, bit (HP_T_PERTURB) | bit (HP_T_MMAP_MAX)
                          | bit (HP_T_TRIM_THRESHOLD));
}

Test (tunables, alias_first_valid_occurrence_wins)
{
  char *env[] = { "MALLOC_TOP_PAD_=junk", "MALLOC_TOP_PAD_=5",
                  "MALLOC_TOP_PAD_=6", "MALLOC_CHECK_=9", "MALLOC_CHECK_=2",
                  NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 5);
  cr_expect_eq (v.val[HP_T_CHECK], 2);
}

/* ------------------------------------------------------------ names */

Test (tunables, both_name_forms)
{
  struct hp_tunable_values v = parse_gt ("glibc.malloc.mxfast=64");
  cr_expect_eq (v.val[HP_T_MXFAST], 64);
  expect_defaults_except (&v, bit (HP_T_MXFAST));
  v = parse_gt ("malloc.mxfast=32");
  cr_expect_eq (v.val[HP_T_MXFAST], 32);
  expect_defaults_except (&v, bit (HP_T_MXFAST));
  v = parse_gt ("glibc.malloc.hugetlb=1:malloc.tcache_count=0:"
                "hpmalloc.huge_waste=50:hpmalloc.hugetlb_size=0x40000000:"
                "hpmalloc.verbose=1");
  cr_expect_eq (v.val[HP_T_HUGETLB], 1);
  cr_expect_eq (v.val[HP_T_TCACHE_COUNT], 0);
  cr_expect_eq (v.val[HP_T_HUGE_WASTE], 50);
  cr_expect_eq (v.val[HP_T_HUGETLB_SIZE], 1024 * 1024 * KiB);
  cr_expect_eq (v.val[HP_T_VERBOSE], 1);
  expect_defaults_except (&v, bit (HP_T_HUGETLB) | bit (HP_T_TCACHE_COUNT)
                          | bit (HP_T_HUGE_WASTE) | bit (HP_T_HUGETLB_SIZE)
                          | bit (HP_T_VERBOSE));
}

Test (tunables, unknown_names_ignored)
{
  struct hp_tunable_values v
    = parse_gt ("glibc.malloc.nope=1:glibc.rtld.nns=2:hpmalloc.top_pad=3:"
                "malloc.hugetlb_size=4:glibc.hpmalloc.verbose=1:"
                "GLIBC.MALLOC.CHECK=1:malloc.mxfast=3");
  cr_expect_eq (v.val[HP_T_MXFAST], 3);
  expect_defaults_except (&v, bit (HP_T_MXFAST));
}

/* ------------------------------------------------------------ precedence */

Test (tunables, builtin_then_alias_then_glibc_tunables)
{
  const char *builtin = "malloc.top_pad=1:malloc.check=1:malloc.perturb=1";
  char *env[] = { "MALLOC_TOP_PAD_=2", "MALLOC_CHECK_=2",
                  "GLIBC_TUNABLES=malloc.top_pad=3", NULL };
  struct hp_tunable_values v = parse_env (builtin, env, 0);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 3);
  cr_expect_eq (v.val[HP_T_CHECK], 2);
  cr_expect_eq (v.val[HP_T_PERTURB], 1);
  expect_defaults_except (&v, bit (HP_T_TOP_PAD) | bit (HP_T_CHECK)
                          | bit (HP_T_PERTURB));
}

Test (tunables, glibc_tunables_wins_wherever_it_is_in_envp)
{
  char *env[] = { "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096",
                  "MALLOC_MMAP_THRESHOLD_=8192", NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  cr_expect_eq (v.val[HP_T_MMAP_THRESHOLD], 4096);
}

Test (tunables, invalid_glibc_tunables_keeps_alias)
{
  char *env[] = { "MALLOC_TOP_PAD_=2",
                  "GLIBC_TUNABLES=malloc.top_pad=zz:malloc.check=7",
                  "MALLOC_CHECK_=1", NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 2);
  cr_expect_eq (v.val[HP_T_CHECK], 1);
}

Test (tunables, later_entry_wins)
{
  struct hp_tunable_values v
    = parse_gt ("malloc.top_pad=1:glibc.malloc.top_pad=2:malloc.top_pad=3");
  cr_expect_eq (v.val[HP_T_TOP_PAD], 3);
  v = parse_gt ("malloc.check=2:malloc.check=9");
  cr_expect_eq (v.val[HP_T_CHECK], 2, "an ignored later entry keeps the "
                "earlier value");
  char *env[] = { "GLIBC_TUNABLES=malloc.mxfast=1:malloc.check=1",
                  "GLIBC_TUNABLES=malloc.mxfast=2", NULL };
  v = parse_env (NULL, env, 0);
  cr_expect_eq (v.val[HP_T_MXFAST], 2);
  cr_expect_eq (v.val[HP_T_CHECK], 1);
}

Test (tunables, secure_ignores_environment)
{
  char *env[] = { "MALLOC_TOP_PAD_=2", "MALLOC_CHECK_=3", "HPMALLOC_VERBOSE=1",
                  "GLIBC_TUNABLES=malloc.hugetlb=1:malloc.mxfast=0", NULL };
  struct hp_tunable_values v = parse_env ("malloc.arena_max=2", env, 1);
  cr_expect_eq (v.val[HP_T_ARENA_MAX], 2, "builtin applies when secure");
  expect_defaults_except (&v, bit (HP_T_ARENA_MAX));
  v = parse_env ("malloc.arena_max=2", env, 0);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 2);
  cr_expect_eq (v.val[HP_T_HUGETLB], 1);
}

Test (tunables, envp_entries_without_value_or_wrong_name)
{
  char *env[] = { "GLIBC_TUNABLES", "GLIBC_TUNABLESX=malloc.mxfast=1",
                  "XGLIBC_TUNABLES=malloc.mxfast=2", "glibc_tunables=malloc.mxfast=3",
                  "=GLIBC_TUNABLES=malloc.mxfast=4", "", NULL };
  struct hp_tunable_values v = parse_env (NULL, env, 0);
  expect_defaults_except (&v, 0);
}

/* ------------------------------------------------------------ ranges */

struct range_case { const char *s; int id; int taken; uint64_t want; };

Test (tunables, out_of_range_ignored_not_clipped)
{
  static const struct range_case c[] = {
    { "malloc.check=3", HP_T_CHECK, 1, 3 },
    { "malloc.check=4", HP_T_CHECK, 0, 0 },
    { "malloc.check=-1", HP_T_CHECK, 0, 0 },
    { "malloc.perturb=255", HP_T_PERTURB, 1, 255 },
    { "malloc.perturb=256", HP_T_PERTURB, 0, 0 },
    { "malloc.mmap_threshold=0x2000000", HP_T_MMAP_THRESHOLD, 1, 0x2000000 },
    { "malloc.mmap_threshold=0x2000001", HP_T_MMAP_THRESHOLD, 1, 0x2000001 },
    { "malloc.mmap_threshold=-1", HP_T_MMAP_THRESHOLD, 1, (uint64_t) SIZE_MAX },
    { "malloc.mmap_max=2147483647", HP_T_MMAP_MAX, 1, 2147483647 },
    { "malloc.mmap_max=2147483648", HP_T_MMAP_MAX, 0, 0 },
    { "malloc.mmap_max=-1", HP_T_MMAP_MAX, 0, 0 },
    { "malloc.mmap_max=0", HP_T_MMAP_MAX, 1, 0 },
    { "malloc.arena_max=0", HP_T_ARENA_MAX, 0, 0 },
    { "malloc.arena_max=1", HP_T_ARENA_MAX, 1, 1 },
    { "malloc.arena_test=0", HP_T_ARENA_TEST, 0, 0 },
    { "malloc.tcache_max=32761", HP_T_TCACHE_MAX, 0, 0 },
    { "malloc.tcache_max=0", HP_T_TCACHE_MAX, 1, 0 },
    { "malloc.tcache_count=65535", HP_T_TCACHE_COUNT, 1, 65535 },
    { "malloc.tcache_count=65536", HP_T_TCACHE_COUNT, 0, 0 },
    { "malloc.mxfast=160", HP_T_MXFAST, 1, 160 },
    { "malloc.mxfast=161", HP_T_MXFAST, 0, 0 },
    { "malloc.hugetlb=2", HP_T_HUGETLB, 1, 2 },
    { "malloc.hugetlb=0x200000", HP_T_HUGETLB, 1, 0x200000 },
    { "hpmalloc.huge_waste=100", HP_T_HUGE_WASTE, 1, 100 },
    { "hpmalloc.huge_waste=101", HP_T_HUGE_WASTE, 0, 0 },
    { "hpmalloc.verbose=2", HP_T_VERBOSE, 0, 0 },
    { "malloc.top_pad=-1", HP_T_TOP_PAD, 1, UINT64_MAX },
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      struct hp_tunable_values v = parse_gt (c[i].s);
      uint64_t want = c[i].taken ? c[i].want : hp_tunable_table[c[i].id].def;
      cr_expect_eq (v.val[c[i].id], want, "%s", c[i].s);
      expect_defaults_except (&v, c[i].taken ? bit (c[i].id) : 0);
    }
}

/* ------------------------------------------------------------ numbers */

Test (tunables, number_syntax)
{
  static const struct range_case c[] = {
    { "malloc.top_pad=0x1F", HP_T_TOP_PAD, 1, 31 },
    { "malloc.top_pad=0X1f", HP_T_TOP_PAD, 1, 31 },
    { "malloc.top_pad=010", HP_T_TOP_PAD, 1, 8 },
    { "malloc.top_pad=0", HP_T_TOP_PAD, 1, 0 },
    { "malloc.top_pad=00", HP_T_TOP_PAD, 1, 0 },
    { "malloc.top_pad=+7", HP_T_TOP_PAD, 1, 7 },
    { "malloc.top_pad= \t12", HP_T_TOP_PAD, 1, 12 },
    { "malloc.top_pad=-0", HP_T_TOP_PAD, 1, 0 },
    { "malloc.top_pad=-2", HP_T_TOP_PAD, 1, UINT64_MAX - 1 },
    { "malloc.top_pad=18446744073709551615", HP_T_TOP_PAD, 1, UINT64_MAX },
    { "malloc.top_pad=0xffffffffffffffff", HP_T_TOP_PAD, 1, UINT64_MAX },
    { "malloc.top_pad=01777777777777777777777", HP_T_TOP_PAD, 1, UINT64_MAX },
    { "malloc.top_pad=18446744073709551616", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=0x10000000000000000", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=02000000000000000000000", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=99999999999999999999999", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=12x", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=12 ", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=0x", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=0xg", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=08", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=-", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=+-1", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=x12", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=1=2", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=1e3", HP_T_TOP_PAD, 0, 0 },
    { "malloc.top_pad=1.5", HP_T_TOP_PAD, 0, 0 },
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      struct hp_tunable_values v = parse_gt (c[i].s);
      uint64_t want = c[i].taken ? c[i].want : hp_tunable_table[c[i].id].def;
      cr_expect_eq (v.val[c[i].id], want, "%s", c[i].s);
      cr_expect_eq (v.set_mask, c[i].taken ? bit (c[i].id) : 0, "%s", c[i].s);
    }
}

/* ------------------------------------------------------------ malformed */

/* Each string has something malformed next to "malloc.mxfast=32", which
   must still apply while the malformed part changes nothing.  */
Test (tunables, malformed_entries_skipped_others_apply)
{
  static const char *const c[] = {
    "malloc.top_pad:malloc.mxfast=32",
    "malloc.mxfast=32:malloc.top_pad",
    "=5:malloc.mxfast=32",
    "malloc.mxfast=32:=5",
    "malloc.top_pad=12x:malloc.mxfast=32",
    "malloc.top_pad=:malloc.mxfast=32",
    "::malloc.mxfast=32::",
    "malloc.mxfast=32:",
    ":=:=::malloc.mxfast=32:=",
    "malloc.top_pad==1:malloc.mxfast=32",
    "malloc.check=1=:malloc.mxfast=32",
    "malloc.mxfast=32:malloc.check",
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      struct hp_tunable_values v = parse_gt (c[i]);
      cr_expect_eq (v.val[HP_T_MXFAST], 32, "%s", c[i]);
      expect_defaults_except (&v, bit (HP_T_MXFAST));
    }
}

Test (tunables, malformed_alone_changes_nothing)
{
  static const char *const c[] = {
    "", ":", "::", "=", "=5", "malloc.top_pad", "malloc.top_pad=",
    "malloc.top_pad=12x", "malloc.check:5", "glibc.malloc.check 1",
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      struct hp_tunable_values v = parse_gt (c[i]);
      expect_defaults_except (&v, 0);
    }
  struct hp_tunable_values v = parse_gt (NULL);
  expect_defaults_except (&v, 0);
  hp_tunables_apply_string (NULL, "malloc.check=1");
  hp_tunables_parse (NULL, "malloc.check=1", NULL, 0);
  cr_expect_eq (hp_tunable_table[HP_T_CHECK].def, 0);
}

static char *
repeat (char c, size_t n, const char *prefix, const char *suffix)
{
  size_t p = strlen (prefix), s = strlen (suffix);
  char *b = malloc (p + n + s + 1);
  cr_assert_not_null (b);
  memcpy (b, prefix, p);
  memset (b + p, c, n);
  memcpy (b + p + n, suffix, s + 1);
  return b;
}

Test (tunables, very_long_values_and_names)
{
  char *s = repeat ('1', 10000, "malloc.top_pad=", ":malloc.mxfast=32");
  struct hp_tunable_values v = parse_gt (s);
  cr_expect_eq (v.val[HP_T_MXFAST], 32);
  expect_defaults_except (&v, bit (HP_T_MXFAST));
  free (s);

  /* 10000 leading zeros are still an octal number, not an overflow.  */
  s = repeat ('0', 10000, "malloc.top_pad=", "17:malloc.mxfast=32");
  v = parse_gt (s);
  cr_expect_eq (v.val[HP_T_TOP_PAD], 15);
  cr_expect_eq (v.set_mask, bit (HP_T_TOP_PAD) | bit (HP_T_MXFAST));
  free (s);

  s = repeat ('n', 10000, "malloc.", "=1:malloc.mxfast=32");
  v = parse_gt (s);
  expect_defaults_except (&v, bit (HP_T_MXFAST));
  free (s);

  s = repeat (':', 10000, "malloc.check=1", "malloc.mxfast=32");
  v = parse_gt (s);
  cr_expect_eq (v.set_mask, bit (HP_T_CHECK) | bit (HP_T_MXFAST));
  free (s);

  char *env[] = { repeat ('9', 10000, "MALLOC_ARENA_MAX=", ""), NULL };
  v = parse_env (NULL, env, 0);
  expect_defaults_except (&v, 0);
  free (env[0]);
}

Test (tunables, many_entries_last_wins)
{
  size_t n = 2000, unit = strlen ("malloc.mxfast=1:");
  char *s = malloc (n * unit + 32);
  cr_assert_not_null (s);
  for (size_t i = 0; i < n; i++)
    memcpy (s + i * unit, "malloc.mxfast=1:", unit);
  strcpy (s + n * unit, "malloc.mxfast=2");
  struct hp_tunable_values v = parse_gt (s);
  cr_expect_eq (v.val[HP_T_MXFAST], 2);
  free (s);
}

/* ------------------------------------------------------------ page boundary */

/* Two pages, the second PROT_NONE; returns a pointer such that `len` bytes
   from it end exactly at the boundary.  The first page is left read-only,
   so a write into the string would fault too.  */
static char *
at_page_end (const char *bytes, size_t len, char **base)
{
  long pg = sysconf (_SC_PAGESIZE);
  char *m = mmap (NULL, 2 * (size_t) pg, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq (m, MAP_FAILED);
  cr_assert_eq (mprotect (m + pg, (size_t) pg, PROT_NONE), 0);
  char *p = m + pg - len;
  memcpy (p, bytes, len);
  cr_assert_eq (mprotect (m, (size_t) pg, PROT_READ), 0);
  *base = m;
  return p;
}

static void
unmap2 (char *base)
{
  munmap (base, 2 * (size_t) sysconf (_SC_PAGESIZE));
}

Test (tunables, string_ending_at_page_boundary)
{
  static const char *const c[] = {
    "malloc.mxfast=64", "malloc.mxfast", "malloc.mxfast=", "malloc.mxfast=0x",
    "malloc.mxfast=6x", "malloc.mxfast=64:", "malloc.mxfast=64:malloc.check",
    "malloc.", "m", "", ":", "=", "malloc.mxfast=-", "malloc.mxfast= ",
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      char *base;
      const char *p = at_page_end (c[i], strlen (c[i]) + 1, &base);
      struct hp_tunable_values v = parse_gt (p);
      int ok = strncmp (c[i], "malloc.mxfast=64", 16) == 0;
      cr_expect_eq (v.val[HP_T_MXFAST], ok ? 64 : 128, "%s", c[i]);
      unmap2 (base);
    }
}

Test (tunables, env_ending_at_page_boundary)
{
  static const char *const c[] = {
    "MALLOC_MXFAST_=1", "MALLOC_CHECK_=2", "MALLOC_CHECK_", "MALLOC_CHECK_=",
    "GLIBC_TUNABLES=malloc.check=2", "GLIBC_TUNABLES", "GLIBC_TUNABLES=",
    "GLIBC_TUNABLES=malloc.check", "HPMALLOC_VERBOSE=1",
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      char *base;
      char *p = at_page_end (c[i], strlen (c[i]) + 1, &base);
      char *env[] = { p, NULL };
      struct hp_tunable_values v = parse_env (NULL, env, 0);
      int checks = strstr (c[i], "check=2") || strstr (c[i], "CHECK_=2");
      cr_expect_eq (v.val[HP_T_CHECK], checks ? 2 : 0, "%s", c[i]);
      cr_expect_eq (v.val[HP_T_VERBOSE], i == 8 ? 1 : 0, "%s", c[i]);
      unmap2 (base);
    }
}

Test (tunables, lookup_name_without_nul_at_page_boundary)
{
  static const char *const c[] = {
    "malloc.mxfast", "glibc.malloc.mxfast", "malloc.mxfa", "malloc.",
    "malloc", "glibc.", "hpmalloc.verbose", "glibc.malloc.mxfast_",
  };
  static const int want[] = {
    HP_T_MXFAST, HP_T_MXFAST, -1, -1, -1, -1, HP_T_VERBOSE, -1,
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      char *base;
      size_t len = strlen (c[i]);
      const char *p = at_page_end (c[i], len, &base);   /* no NUL */
      cr_expect_eq (hp_tunable_lookup (p, len), want[i], "%s", c[i]);
      unmap2 (base);
    }
}

/* ------------------------------------------------------------ checking */

/* Collects what hp_tunables_check_* report, described, one per line.  */
struct issues
{
  int n;
  char text[1024];
  struct hp_tunable_issue last;
};

static void
collect (void *ctx, const struct hp_tunable_issue *is)
{
  struct issues *c = ctx;
  size_t l = strlen (c->text);
  if (l + 2 < sizeof c->text)
    {
      size_t k = hp_tunable_describe (is, c->text + l, sizeof c->text - l - 1);
      c->text[l + k] = '\n';
      c->text[l + k + 1] = '\0';
    }
  c->last = *is;
  c->n++;
}

static struct issues
check_gt (const char *s)
{
  struct issues c = { 0 };
  int n = hp_tunables_check_string (s, collect, &c);
  cr_expect_eq (n, c.n, "%s: returned %d, reported %d", s, n, c.n);
  return c;
}

Test (check, each_ignored_entry_named_with_its_reason)
{
  static const struct { const char *in, *out; } c[] = {
    { "glibc.malloc.hugtlb=1",
      "glibc.malloc.hugtlb=1: unknown tunable (did you mean glibc.malloc.hugetlb?)\n" },
    { "malloc.tcache_cont=3",
      "malloc.tcache_cont=3: unknown tunable (did you mean glibc.malloc.tcache_count?)\n" },
    { "hugetlb=1", "hugetlb=1: unknown tunable (did you mean glibc.malloc.hugetlb?)\n" },
    { "hpmalloc.verbos=1", "hpmalloc.verbos=1: unknown tunable (did you mean hpmalloc.verbose?)\n" },
    { "glibc.maloc.top_pad=1",
      "glibc.maloc.top_pad=1: unknown tunable (did you mean glibc.malloc.top_pad?)\n" },
    { "garbage=1", "garbage=1: unknown tunable\n" },
    { "glibc.malloc.perturb=300", "glibc.malloc.perturb=300: out of range (0 to 255)\n" },
    { "glibc.malloc.check=-1", "glibc.malloc.check=-1: out of range (0 to 3)\n" },
    { "malloc.arena_max=0", "malloc.arena_max=0: out of range (at least 1)\n" },
    { "malloc.top_pad=12x", "malloc.top_pad=12x: not a number (decimal, 0x hex or 0 octal)\n" },
    { "malloc.top_pad=", "malloc.top_pad=: not a number (decimal, 0x hex or 0 octal)\n" },
    { "malloc.check", "malloc.check: no value (expected NAME=VALUE)\n" },
    { "malloc.check:malloc.mxfast=1", "malloc.check: no value (expected NAME=VALUE)\n" },
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    {
      struct issues got = check_gt (c[i].in);
      cr_expect_str_eq (got.text, c[i].out, "%s", c[i].in);
      cr_expect_eq (got.n, 1, "%s", c[i].in);
    }
}

Test (check, what_applies_is_not_reported)
{
  static const char *const ok[] = {
    "", ":", "::", "glibc.malloc.hugetlb=1", "malloc.mxfast=0:hpmalloc.verbose=1",
    "glibc.malloc.trim_threshold=-1", "glibc.malloc.hugetlb=0x200000",
    /* glibc's other namespaces are glibc's to check */
    "glibc.cpu.hwcaps=-AVX2_Usable:glibc.pthread.rseq=0:glibc.rtld.nns=2:glibc.mem.tagging=1",
    "glibc.elision.enable=1:glibc.gmon.minarcs=50",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    {
      struct issues got = check_gt (ok[i]);
      cr_expect_eq (got.n, 0, "%s: %s", ok[i], got.text);
    }
  cr_expect_eq (hp_tunables_check_string (NULL, collect, NULL), 0);
}

/* The checker and the parser agree: an entry is reported exactly when the
   parser leaves the values as they were.  */
Test (check, agrees_with_the_parser)
{
  static const char *const entries[] = {
    "malloc.mxfast=64", "malloc.mxfast=161", "malloc.mxfast=6x", "malloc.mxfast",
    "malloc.mxfst=64", "glibc.malloc.perturb=255", "glibc.malloc.perturb=256",
    "hpmalloc.huge_waste=100", "hpmalloc.huge_waste=101", "malloc.check=3",
    "glibc.rtld.nns=4", "malloc.arena_max=1", "malloc.arena_max=0",
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    {
      struct hp_tunable_values v = parse_gt (entries[i]);
      struct issues got = check_gt (entries[i]);
      cr_expect_eq (got.n, v.set_mask == 0 && strncmp (entries[i], "glibc.rtld", 10) != 0,
                    "%s: set_mask %#x, %d reported", entries[i], (unsigned) v.set_mask, got.n);
    }
  struct issues many = check_gt ("a=1:malloc.check=9:malloc.mxfast=1:b:hpmalloc.verbose=2");
  cr_expect_eq (many.n, 4, "%s", many.text);
}

Test (check, environment)
{
  char *env[] = { "PATH=/bin", "MALLOC_ARENA_MAX=abc", "MALLOC_TOP_PAD_=4096",
                  "GLIBC_TUNABLES=glibc.malloc.hugtlb=1:malloc.check=1",
                  "MALLOC_PERTURB_=256", "HPMALLOC_VERBOSE=1", "MALLOC_NOPE_=1",
                  "GLIBC_TUNABLES=malloc.mxfast=999", NULL };
  struct issues c = { 0 };
  cr_expect_eq (hp_tunables_check_env (env, collect, &c), 4);
  cr_expect_str_eq (c.text,
                    "MALLOC_ARENA_MAX=abc: not a number (decimal, 0x hex or 0 octal)\n"
                    "glibc.malloc.hugtlb=1: unknown tunable (did you mean glibc.malloc.hugetlb?)\n"
                    "MALLOC_PERTURB_=256: out of range (0 to 255)\n"
                    "malloc.mxfast=999: out of range (0 to 160)\n");
  cr_expect_eq (c.last.alias, 0);
  cr_expect_eq (hp_tunables_check_env (NULL, collect, &c), 0);
}

Test (check, stats_file)
{
  char *env[] = { "HPMALLOC_STATS=1", "HPMALLOC_STATS=/tmp/r", "HPMALLOC_STATS=yes",
                  "GLIBC_TUNABLES=hpmalloc.stats_file=:hpmalloc.stats_file=r.%p", NULL };
  struct issues c = { 0 };
  cr_expect_eq (hp_tunables_check_env (env, collect, &c), 2);
  cr_expect_str_eq (c.text,
                    "HPMALLOC_STATS=yes: not a number (decimal, 0x hex or 0 octal), nor a file name with a '/'\n"
                    "hpmalloc.stats_file=: a file name must have 1 to 4095 bytes\n");
}

Test (check, describe_cuts_to_fit)
{
  struct hp_tunable_issue is = { HP_TP_RANGE, 0, "glibc.malloc.perturb=300", 24, HP_T_PERTURB, -1 };
  char buf[16];
  size_t n = hp_tunable_describe (&is, buf, sizeof buf);
  cr_expect_eq (n, 15);
  cr_expect_str_eq (buf, "glibc.malloc.pe");
  cr_expect_eq (hp_tunable_describe (&is, buf, 0), 0);
}
