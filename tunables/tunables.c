/* tunables.c: the tunables table and the GLIBC_TUNABLES / MALLOC_*_ parser.
 *
 * SPDX-License-Identifier: MIT
 *
 * This runs before the allocator exists, possibly from the first malloc call
 * of a process, so it calls nothing that may allocate or read the locale:
 * no getenv, no strtoul, no stdio.  It calls no function itself; the
 * compiler may turn a scan loop into strlen, which is fine.  Every string is
 * read through an explicit length or up to its NUL, never past it, and
 * never written.
 *
 * Semantics (glibc 2.36's elf/dl-tunables.c, except where noted):
 *   - GLIBC_TUNABLES is "name=value" entries separated by ':'.  A name runs
 *     to the first '=' or ':'; an entry that reaches ':' before '=' is
 *     skipped, one that reaches the end of the string ends the parse.  The
 *     value runs to the next ':' (it may contain '=').
 *   - Numbers follow _dl_strtoul: optional blanks (' ', '\t'), optional
 *     sign ('-' negates modulo 2^64, so MALLOC_TRIM_THRESHOLD_=-1 means
 *     SIZE_MAX), "0x"/"0X" hex, leading '0' octal, otherwise decimal.
 *     Stricter than 2.36 (which used the longest numeric prefix): the whole
 *     value must be one number with at least one digit, so "12x", "" and
 *     "0x" are ignored, and a value that overflows 64 bits is ignored.
 *   - A value outside [min, max] of its row is ignored, never clipped;
 *     INT_32 rows compare signed, SIZE_T rows unsigned (as glibc).
 *   - Unknown names are ignored.  Later entries win over earlier ones.
 *   - Env aliases (MALLOC_TOP_PAD_=...): the first valid occurrence of a
 *     variable counts (glibc marks the tunable initialised and skips later
 *     ones).  GLIBC_TUNABLES entries win over aliases wherever they appear
 *     in envp; several GLIBC_TUNABLES variables are applied in envp order.
 *   - AT_SECURE: every malloc tunable is SXID_IGNORE or SXID_ERASE in glibc,
 *     so the whole environment is ignored; the built-in string still applies.
 *
 * Extension: "malloc.NAME" is accepted for "glibc.malloc.NAME".  */

#include "tunables.h"
#include "hp_base.h"

#define HP_U64_MAX UINT64_MAX
#define HP_SZ_MAX ((uint64_t)SIZE_MAX)
#define HP_I32_MAX ((uint64_t)INT32_MAX)

_Static_assert(HP_T_COUNT <= 32, "set_mask has 32 bits");

/* Values are glibc 2.36's on 64-bit targets:
   top_pad, trim_threshold, mmap_threshold default: 128 KiB (DEFAULT_TOP_PAD
     in sysdeps/generic/malloc-machine.h, DEFAULT_*_THRESHOLD in malloc.c);
   mmap_threshold: no maximum (glibc 2.36's do_set_mmap_threshold takes
     any size; only the dynamic threshold stops at 32 MiB);
   mmap_max: INT_32 with minval 0, so 0..INT32_MAX, default 65536;
   arena_max, arena_test: minval 1; arena_max default 0 = automatic,
     arena_test default NARENAS_FROM_NCORES (1) = 8;
   tcache_max: glibc 2.36 takes up to MAX_TCACHE_SIZE = tidx2usize (63) =
     1032 bytes (and 2.42 up to 4 MiB); hpmalloc caches up to its largest
     class, 32768-byte chunks (malloc/tcache.h: TC_MAX_CHUNK - 8), which is
     also its default;
   tcache_count: MAX_TCACHE_COUNT = UINT16_MAX, default TCACHE_FILL_COUNT 7
     (when it is not set, hpmalloc's caps adapt: malloc/tcache.c);
   mxfast: MAX_FAST_SIZE = 80 * 8 / 4 = 160, default 64 * 8 / 4 = 128;
   hugetlb: 0 off, 1 THP madvise, 2 hugetlbfs default size, else a size.  */
const struct hp_tunable_desc hp_tunable_table[HP_T_COUNT] = {
  [HP_T_CHECK] = { "glibc.malloc.check", "MALLOC_CHECK_", HP_TT_INT32, 0, 3, 0 },
  [HP_T_TOP_PAD] = { "glibc.malloc.top_pad", "MALLOC_TOP_PAD_", HP_TT_SIZE, 0, HP_SZ_MAX, 128 * HP_KIB },
  [HP_T_PERTURB] = { "glibc.malloc.perturb", "MALLOC_PERTURB_", HP_TT_INT32, 0, 0xff, 0 },
  [HP_T_MMAP_THRESHOLD] = { "glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_", HP_TT_SIZE, 0, HP_SZ_MAX,
                            128 * HP_KIB },
  [HP_T_TRIM_THRESHOLD] = { "glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_", HP_TT_SIZE, 0, HP_SZ_MAX,
                            128 * HP_KIB },
  [HP_T_MMAP_MAX] = { "glibc.malloc.mmap_max", "MALLOC_MMAP_MAX_", HP_TT_INT32, 0, HP_I32_MAX, 65536 },
  [HP_T_ARENA_MAX] = { "glibc.malloc.arena_max", "MALLOC_ARENA_MAX", HP_TT_SIZE, 1, HP_SZ_MAX, 0 },
  [HP_T_ARENA_TEST] = { "glibc.malloc.arena_test", "MALLOC_ARENA_TEST", HP_TT_SIZE, 1, HP_SZ_MAX, 8 },
  [HP_T_TCACHE_MAX] = { "glibc.malloc.tcache_max", NULL, HP_TT_SIZE, 0, 32760, 32760 },
  [HP_T_TCACHE_COUNT] = { "glibc.malloc.tcache_count", NULL, HP_TT_SIZE, 0, 65535, 7 },
  [HP_T_TCACHE_UNSORTED_LIMIT] = { "glibc.malloc.tcache_unsorted_limit", NULL, HP_TT_SIZE, 0, HP_SZ_MAX, 0 },
  [HP_T_MXFAST] = { "glibc.malloc.mxfast", NULL, HP_TT_SIZE, 0, 160, 128 },
  [HP_T_HUGETLB] = { "glibc.malloc.hugetlb", NULL, HP_TT_SIZE, 0, HP_SZ_MAX, 0 },
  [HP_T_HUGETLB_SIZE] = { "hpmalloc.hugetlb_size", NULL, HP_TT_SIZE, 0, HP_SZ_MAX, 0 },
  [HP_T_HUGE_WASTE] = { "hpmalloc.huge_waste", NULL, HP_TT_INT32, 0, 100, 12 },
  [HP_T_VERBOSE] = { "hpmalloc.verbose", "HPMALLOC_VERBOSE", HP_TT_INT32, 0, 1, 0 },
  /* 1 MiB: see malloc/tcache.c and bench/results/malloc-instructions.md for the measurement behind it */
  [HP_T_TCACHE_BYTES] = { "hpmalloc.tcache_bytes", NULL, HP_TT_SIZE, 0, HP_SZ_MAX, HP_MIB },
  /* off: see malloc/prefault.c and bench/README.md for the measurement */
  [HP_T_PREFAULT] = { "hpmalloc.prefault", NULL, HP_TT_SIZE, 0, 1024, 0 },
  [HP_T_STATS] = { "hpmalloc.stats", "HPMALLOC_STATS", HP_TT_INT32, 0, 1, 0 },
  /* a file name of 1 to 4095 bytes (PATH_MAX with its NUL) */
  [HP_T_STATS_FILE] = { "hpmalloc.stats_file", "HPMALLOC_STATS", HP_TT_PATH, 1, 4095, 0 },
};

static const char glibc_prefix[] = "glibc.";
static const char short_prefix[] = "malloc.";
static const char tunables_env[] = "GLIBC_TUNABLES";

/* ------------------------------------------------------------ strings */

/* Does s[0..len) equal the NUL-terminated z exactly?  Reads at most len
   bytes of s and never past z's NUL.  */
static inline int hp_str_eq(const char *z, const char *s, size_t len) {
  size_t i = 0;
  for (; i < len; i++)
    if (z[i] == '\0' || z[i] != s[i]) return 0;
  return z[i] == '\0';
}

/* Does s[0..len) start with the NUL-terminated prefix z?  */
static inline int hp_has_prefix(const char *s, size_t len, const char *z) {
  size_t i = 0;
  for (; z[i] != '\0'; i++)
    if (i >= len || s[i] != z[i]) return 0;
  return 1;
}

/* Length of the run of s before the first NUL or `stop` (pass '\0' for
   none).  */
static inline size_t hp_span_to(const char *s, char stop) {
  size_t n = 0;
  while (s[n] != '\0' && s[n] != stop) n++;
  return n;
}

/* ------------------------------------------------------------ numbers */

static inline int hp_digit_value(char c, unsigned base) {
  int d = -1;
  if (c >= '0' && c <= '9')
    d = c - '0';
  else if (c >= 'a' && c <= 'f')
    d = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F')
    d = c - 'A' + 10;
  return d >= 0 && (unsigned)d < base ? d : -1;
}

/* Pick the base from s[*i..len) and step over a "0x" prefix.  The caller
   has checked that s[*i] is a decimal digit.  */
static inline unsigned hp_number_base(const char *s, size_t len, size_t *i) {
  if (s[*i] != '0') return 10;
  if (*i + 1 < len && (s[*i + 1] == 'x' || s[*i + 1] == 'X')) {
    *i += 2;
    return 16;
  }
  return 8;
}

/* Parse all of s[0..len) as one number with _dl_strtoul's syntax.
   Returns 1 and stores *out on success; 0 if the text is empty, has no
   digits, has anything after the number, or overflows 64 bits.  */
static int hp_parse_number(const char *s, size_t len, uint64_t *out) {
  size_t i = 0;
  int negative = 0;
  while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
  if (i < len && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  if (i >= len || s[i] < '0' || s[i] > '9') return 0;
  unsigned base = hp_number_base(s, len, &i);
  if (i >= len) return 0; /* "0x" with no digits */
  uint64_t r = 0;
  for (; i < len; i++) {
    int d = hp_digit_value(s[i], base);
    if (d < 0 || r > (HP_U64_MAX - (unsigned)d) / base) return 0; /* junk after the number, or overflow */
    r = r * base + (unsigned)d;
  }
  *out = negative ? (uint64_t)0 - r : r;
  return 1;
}

/* ------------------------------------------------------------ table */

static inline int hp_in_range(const struct hp_tunable_desc *d, uint64_t v) {
  if (d->type == HP_TT_INT32) return (int64_t)v >= (int64_t)d->min && (int64_t)v <= (int64_t)d->max;
  return v >= d->min && v <= d->max;
}

/* A path row's value: its length in range, and from an alias (ALIAS
   non-zero) a '/' in it.  */
static int hp_path_problem(const struct hp_tunable_desc *d, const char *v, size_t len, int alias, uint64_t *n) {
  int slash = 0;
  for (size_t i = 0; i < len; i++) slash |= v[i] == '/';
  *n = len;
  if (alias && !slash) return HP_TP_MALFORMED;
  return len >= d->min && len <= d->max ? -1 : HP_TP_RANGE;
}

/* Parse value text for tunable `id` into *n (a path row: its length).
   ALIAS: the text is an env alias's value.  Returns -1 if it is valid,
   else why it is ignored (HP_TP_MALFORMED, HP_TP_RANGE).  */
static int hp_value_problem(int id, const char *v, size_t len, int alias, uint64_t *n) {
  const struct hp_tunable_desc *d = &hp_tunable_table[id];
  if (d->type == HP_TT_PATH) return hp_path_problem(d, v, len, alias, n);
  if (!hp_parse_number(v, len, n)) return HP_TP_MALFORMED;
  return hp_in_range(d, *n) ? -1 : HP_TP_RANGE;
}

static void hp_store(struct hp_tunable_values *out, int id, uint64_t n, const char *v) {
  out->val[id] = n;
  if (hp_tunable_table[id].type == HP_TT_PATH) out->text[id] = v;
  out->set_mask |= (uint32_t)1 << id;
}

/* Parse an alias's value text for tunable `id` and store it if valid.
   Returns 1 if the value was taken, 0 if it was ignored.  */
static int hp_set_from_alias(struct hp_tunable_values *out, int id, const char *v, size_t len) {
  uint64_t n;
  if (hp_value_problem(id, v, len, 1, &n) >= 0) return 0;
  hp_store(out, id, n, v);
  return 1;
}

int hp_tunable_lookup(const char *name, size_t len) {
  if (name == NULL) return -1;
  int short_form = hp_has_prefix(name, len, short_prefix);
  for (int id = 0; id < HP_T_COUNT; id++) {
    const char *full = hp_tunable_table[id].name;
    if (hp_str_eq(full, name, len)) return id;
    if (short_form && hp_has_prefix(full, sizeof glibc_prefix - 1, glibc_prefix) &&
        hp_str_eq(full + sizeof glibc_prefix - 1, name, len))
      return id;
  }
  return -1;
}

/* ------------------------------------------------------------ GLIBC_TUNABLES */

/* The namespaces of glibc's own tunables other than glibc.malloc (2.36 to
   2.42): entries there are glibc's business, neither applied nor
   reported.  */
static const char *const glibc_other[] = { "glibc.cpu.", "glibc.elision.", "glibc.gmon.",
                                           "glibc.mem.", "glibc.pthread.", "glibc.rtld." };

static int hp_glibc_other(const char *s, size_t len) {
  for (size_t i = 0; i < sizeof glibc_other / sizeof glibc_other[0]; i++)
    if (hp_has_prefix(s, len, glibc_other[i])) return 1;
  return 0;
}

/* Levenshtein distance of a[0..la) and the NUL-terminated b, or 99 when
   either is longer than 63 bytes.  */
static int hp_edits(const char *a, size_t la, const char *b) {
  int row[64];
  size_t lb = hp_span_to(b, '\0');
  if (la > 63 || lb > 63) return 99;
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb];
}

/* The row nearest the unknown name s[0..len): compared with each full
   name, with the short form when s starts "malloc.", and with the last
   part ("hugetlb") when s has no '.'.  -1 when none is within 2 edits.  */
static int hp_suggest(const char *s, size_t len) {
  int best = -1, best_d = 3, dotted = 0;
  for (size_t i = 0; i < len; i++) dotted |= s[i] == '.';
  for (int id = 0; id < HP_T_COUNT; id++) {
    const char *full = hp_tunable_table[id].name, *last = full;
    for (const char *p = full; *p != '\0'; p++)
      if (*p == '.') last = p + 1;
    int d = hp_edits(s, len, full);
    if (hp_has_prefix(s, len, short_prefix) && hp_has_prefix(full, sizeof glibc_prefix - 1, glibc_prefix)) {
      int ds = hp_edits(s, len, full + sizeof glibc_prefix - 1);
      if (ds < d) d = ds;
    }
    if (!dotted) {
      int dl = hp_edits(s, len, last);
      if (dl < d) d = dl;
    }
    if (d < best_d) {
      best_d = d;
      best = id;
    }
  }
  return best;
}

/* One "name=value" entry: name s[0..nlen), value v[0..vlen) (v NULL: no
   '=').  Applied to OUT when it is valid and OUT is given; otherwise
   reported to REPORT when it is given.  Returns 1 if it was ignored.  */
static int hp_entry(struct hp_tunable_values *out, const char *s, size_t nlen, const char *v, size_t vlen,
                    hp_tunable_report_fn *report, void *ctx) {
  int id = hp_tunable_lookup(s, nlen);
  struct hp_tunable_issue is = { HP_TP_UNKNOWN, 0, s, v ? (size_t)(v + vlen - s) : nlen, id, -1 };
  uint64_t n;
  if (v == NULL)
    is.problem = HP_TP_NO_VALUE;
  else if (id < 0 && hp_glibc_other(s, nlen))
    return 0;
  else if (id < 0)
    is.suggest = hp_suggest(s, nlen);
  else {
    int why = hp_value_problem(id, v, vlen, 0, &n);
    if (why < 0) {
      if (out != NULL) hp_store(out, id, n, v);
      return 0;
    }
    is.problem = (enum hp_tunable_problem)why;
  }
  if (report != NULL) report(ctx, &is);
  return 1;
}

/* Walk s entry by entry with glibc's rules (tunables.h), each through
   hp_entry.  Returns how many entries were ignored.  */
static int hp_walk_string(struct hp_tunable_values *out, const char *s, hp_tunable_report_fn *report, void *ctx) {
  int ignored = 0;
  if (s == NULL) return 0;
  for (;;) {
    size_t nlen = 0;
    while (s[nlen] != '\0' && s[nlen] != '=' && s[nlen] != ':') nlen++;
    if (s[nlen] != '=') { /* a name with no value: skipped; at the end it ends the parse */
      if (nlen > 0) ignored += hp_entry(out, s, nlen, NULL, 0, report, ctx);
      if (s[nlen] == '\0') return ignored;
      s += nlen + 1;
      continue;
    }
    const char *v = s + nlen + 1;
    size_t vlen = hp_span_to(v, ':');
    ignored += hp_entry(out, s, nlen, v, vlen, report, ctx);
    if (v[vlen] == '\0') return ignored;
    s = v + vlen + 1;
  }
}

void hp_tunables_apply_string(struct hp_tunable_values *out, const char *s) {
  if (out != NULL) hp_walk_string(out, s, NULL, NULL);
}

int hp_tunables_check_string(const char *s, hp_tunable_report_fn *report, void *ctx) {
  return hp_walk_string(NULL, s, report, ctx);
}

/* ------------------------------------------------------------ environment */

/* Split "NAME=value": *nlen is the length of NAME.  Returns the value, or
   NULL if the entry has no '='.  */
static inline const char *hp_env_split(const char *e, size_t *nlen) {
  size_t n = hp_span_to(e, '=');
  *nlen = n;
  return e[n] == '=' ? e + n + 1 : NULL;
}

/* The first row from `from` on whose alias is e[0..nlen), or -1.  */
static inline int hp_alias_lookup(const char *e, size_t nlen, int from) {
  for (int id = from; id < HP_T_COUNT; id++) {
    const char *a = hp_tunable_table[id].env_alias;
    if (a != NULL && hp_str_eq(a, e, nlen)) return id;
  }
  return -1;
}

/* An alias's value goes to the first of its rows that takes it.  */
static void hp_apply_aliases(struct hp_tunable_values *out, char *const *envp) {
  uint32_t seen = 0; /* aliases already taken from envp, by their first row */
  for (; *envp != NULL; envp++) {
    size_t nlen;
    const char *v = hp_env_split(*envp, &nlen);
    int first = v != NULL ? hp_alias_lookup(*envp, nlen, 0) : -1;
    if (first < 0 || (seen & ((uint32_t)1 << first)) != 0) continue;
    for (int id = first; id >= 0; id = hp_alias_lookup(*envp, nlen, id + 1)) {
      if (hp_set_from_alias(out, id, v, hp_span_to(v, '\0'))) {
        seen |= (uint32_t)1 << first;
        break;
      }
    }
  }
}

static void hp_apply_tunables_env(struct hp_tunable_values *out, char *const *envp) {
  for (; *envp != NULL; envp++) {
    size_t nlen;
    const char *v = hp_env_split(*envp, &nlen);
    if (v != NULL && hp_str_eq(tunables_env, *envp, nlen)) hp_tunables_apply_string(out, v);
  }
}

int hp_tunables_check_env(char *const *envp, hp_tunable_report_fn *report, void *ctx) {
  int ignored = 0;
  for (; envp != NULL && *envp != NULL; envp++) {
    size_t nlen;
    const char *v = hp_env_split(*envp, &nlen);
    if (v == NULL) continue;
    if (hp_str_eq(tunables_env, *envp, nlen)) {
      ignored += hp_tunables_check_string(v, report, ctx);
      continue;
    }
    int id = hp_alias_lookup(*envp, nlen, 0);
    uint64_t n;
    size_t vlen = hp_span_to(v, '\0');
    int why = id >= 0 ? hp_value_problem(id, v, vlen, 1, &n) : -1;
    for (int o = id; why >= 0 && (o = hp_alias_lookup(*envp, nlen, o + 1)) >= 0;)
      if (hp_value_problem(o, v, vlen, 1, &n) < 0) why = -1; /* another row of the alias takes it */
    if (why < 0) continue;
    struct hp_tunable_issue is = { (enum hp_tunable_problem)why, 1, *envp, nlen + 1 + vlen, id, -1 };
    if (report != NULL) report(ctx, &is);
    ignored++;
  }
  return ignored;
}

/* ------------------------------------------------------------ describing an issue */

struct hp_out {
  char *buf;
  size_t n, len; /* capacity (> 0), bytes written */
};

static void hp_put(struct hp_out *o, const char *s, size_t len) {
  for (size_t i = 0; i < len && o->len + 1 < o->n; i++) o->buf[o->len++] = s[i];
  o->buf[o->len] = '\0';
}

static void hp_puts(struct hp_out *o, const char *s) { hp_put(o, s, hp_span_to(s, '\0')); }

/* V in decimal; INT32 rows' values as signed numbers.  */
static void hp_put_num(struct hp_out *o, uint64_t v, int as_signed) {
  char d[24];
  size_t k = sizeof d;
  int negative = as_signed && (int64_t)v < 0;
  uint64_t u = negative ? (uint64_t)0 - v : v;
  do {
    d[--k] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (negative) d[--k] = '-';
  hp_put(o, d + k, sizeof d - k);
}

static void hp_put_range(struct hp_out *o, const struct hp_tunable_desc *d) {
  int sig = d->type == HP_TT_INT32;
  if (!sig && d->max == HP_SZ_MAX) {
    hp_puts(o, "at least ");
    hp_put_num(o, d->min, 0);
    return;
  }
  hp_put_num(o, d->min, sig);
  hp_puts(o, " to ");
  hp_put_num(o, d->max, sig);
}

size_t hp_tunable_describe(const struct hp_tunable_issue *is, char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  struct hp_out o = { buf, n, 0 };
  buf[0] = '\0';
  hp_put(&o, is->text, is->len);
  switch (is->problem) {
  case HP_TP_UNKNOWN:
    hp_puts(&o, ": unknown tunable");
    if (is->suggest >= 0) {
      hp_puts(&o, " (did you mean ");
      hp_puts(&o, hp_tunable_table[is->suggest].name);
      hp_puts(&o, "?)");
    }
    break;
  case HP_TP_NO_VALUE: hp_puts(&o, ": no value (expected NAME=VALUE)"); break;
  case HP_TP_MALFORMED:
    if (hp_tunable_table[is->id].type == HP_TT_PATH) {
      hp_puts(&o, ": not a file name (one given here needs a '/')");
      break;
    }
    hp_puts(&o, ": not a number (decimal, 0x hex or 0 octal)");
    if (is->alias && hp_alias_lookup(is->text, hp_span_to(is->text, '='), is->id + 1) >= 0)
      hp_puts(&o, ", nor a file name with a '/'");
    break;
  case HP_TP_RANGE:
    if (hp_tunable_table[is->id].type == HP_TT_PATH) {
      hp_puts(&o, ": a file name must have 1 to ");
      hp_put_num(&o, hp_tunable_table[is->id].max, 0);
      hp_puts(&o, " bytes");
      break;
    }
    hp_puts(&o, ": out of range (");
    hp_put_range(&o, &hp_tunable_table[is->id]);
    hp_puts(&o, ")");
    break;
  }
  return o.len;
}

void hp_tunables_parse(struct hp_tunable_values *out, const char *builtin, char *const *envp, int secure) {
  if (out == NULL) return;
  for (int id = 0; id < HP_T_COUNT; id++) {
    out->val[id] = hp_tunable_table[id].def;
    out->text[id] = NULL;
  }
  out->set_mask = 0;
  hp_tunables_apply_string(out, builtin);
  if (secure || envp == NULL) return;
  hp_apply_aliases(out, envp);
  hp_apply_tunables_env(out, envp);
}
