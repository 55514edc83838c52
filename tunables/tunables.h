/* SPDX-License-Identifier: MIT */
/* tunables: every malloc tunable hpmalloc understands, declared once.
 *
 * Contract: parsing never allocates, never calls getenv or any function that
 * may call malloc, never reads past a NUL, and ignores (skips) malformed or
 * out-of-range entries so that the program still runs.  */
#ifndef HP_TUNABLES_H
#define HP_TUNABLES_H

#include <stddef.h>
#include <stdint.h>

enum hp_tunable_id {
  HP_T_CHECK,                 /* glibc.malloc.check            MALLOC_CHECK_ */
  HP_T_TOP_PAD,               /* glibc.malloc.top_pad          MALLOC_TOP_PAD_ */
  HP_T_PERTURB,               /* glibc.malloc.perturb          MALLOC_PERTURB_ */
  HP_T_MMAP_THRESHOLD,        /* glibc.malloc.mmap_threshold   MALLOC_MMAP_THRESHOLD_ */
  HP_T_TRIM_THRESHOLD,        /* glibc.malloc.trim_threshold   MALLOC_TRIM_THRESHOLD_ */
  HP_T_MMAP_MAX,              /* glibc.malloc.mmap_max         MALLOC_MMAP_MAX_ */
  HP_T_ARENA_MAX,             /* glibc.malloc.arena_max        MALLOC_ARENA_MAX */
  HP_T_ARENA_TEST,            /* glibc.malloc.arena_test       MALLOC_ARENA_TEST */
  HP_T_TCACHE_MAX,            /* glibc.malloc.tcache_max */
  HP_T_TCACHE_COUNT,          /* glibc.malloc.tcache_count */
  HP_T_TCACHE_UNSORTED_LIMIT, /* glibc.malloc.tcache_unsorted_limit */
  HP_T_MXFAST,                /* glibc.malloc.mxfast */
  HP_T_HUGETLB,               /* glibc.malloc.hugetlb: 0, 1, 2, or a page size in bytes */
  /* hpmalloc's own (namespace hpmalloc.):  */
  HP_T_HUGETLB_SIZE, /* hpmalloc.hugetlb_size: hugetlb page size in bytes for mode 2 (0 = default) */
  HP_T_HUGE_WASTE, /* hpmalloc.huge_waste: max percent of a large request, or of a heap's first THP page, wasted by rounding to huge pages */
  HP_T_VERBOSE,    /* hpmalloc.verbose  HPMALLOC_VERBOSE: 1 = print the resolved mode at start-up */
  HP_T_TCACHE_BYTES, /* hpmalloc.tcache_bytes: bytes one thread's cache may hold (its caps' sum) */
  HP_T_PREFAULT,     /* hpmalloc.prefault: huge pages a growing THP heap faults in ahead, off-thread */
  HP_T_STATS,        /* hpmalloc.stats  HPMALLOC_STATS: 1 = print the statistics at exit */
  HP_T_STATS_FILE,   /* hpmalloc.stats_file  HPMALLOC_STATS (a value with a '/'): where diagnostics go */
  HP_T_COUNT
};

/* HP_TT_PATH: a file name, taken as text (min and max bound its length);
   given through an env alias it must contain a '/', so that the alias can
   also carry a number for another row (HPMALLOC_STATS=1 is the flag,
   HPMALLOC_STATS=./report the file).  */
enum hp_tunable_type { HP_TT_INT32, HP_TT_SIZE, HP_TT_PATH };

/* One row of the table.  */
struct hp_tunable_desc {
  const char *name;      /* full name, e.g. "glibc.malloc.top_pad" or "hpmalloc.verbose" */
  const char *env_alias; /* e.g. "MALLOC_TOP_PAD_", or NULL; two rows may share one (the first
                            whose type takes the value gets it) */
  enum hp_tunable_type type;
  uint64_t min, max; /* inclusive range; a value outside it is ignored */
  uint64_t def;      /* default when not set */
};

extern const struct hp_tunable_desc hp_tunable_table[HP_T_COUNT];

/* Values after parsing.  set_mask bit (1u << id) says the value was given
   (by the built-in defaults string, GLIBC_TUNABLES or an env alias).  A
   HP_TT_PATH row's text is text[id], val[id] bytes long and not
   NUL-terminated (it points into the string it was parsed from, which a
   GLIBC_TUNABLES entry ends with ':'); NULL when not given.  */
struct hp_tunable_values {
  uint64_t val[HP_T_COUNT];
  const char *text[HP_T_COUNT];
  uint32_t set_mask;
};

/* Fill *out with defaults, then apply, in this order (later wins):
     1. `builtin` (GLIBC_TUNABLES syntax, may be NULL): defaults from code;
     2. env aliases (MALLOC_TOP_PAD_=...) found in envp;
     3. GLIBC_TUNABLES found in envp (glibc gives tunables precedence over aliases).
   envp is a NULL-terminated array of "NAME=value" strings (may be NULL).
   When `secure` is non-zero (AT_SECURE: setuid/setgid), the environment is
   ignored entirely, as glibc ignores malloc tunables there; `builtin` still
   applies.
   Names are accepted as "glibc.malloc.NAME" and the short "malloc.NAME";
   hpmalloc's own as "hpmalloc.NAME".  Numbers are decimal, 0x hex or 0 octal,
   as glibc's tunables parser takes them (strtoul-like, whole value must parse).  */
void hp_tunables_parse(struct hp_tunable_values *out, const char *builtin, char *const *envp, int secure);

/* Parse one GLIBC_TUNABLES-syntax string into *out (which must be
   initialised), marking what it sets.  Exposed for tests.  */
void hp_tunables_apply_string(struct hp_tunable_values *out, const char *s);

/* Look up a tunable by full or short name (not NUL-terminated: name, len).
   Returns its id or -1.  */
int hp_tunable_lookup(const char *name, size_t len);

/* ---- checking: what the parser would ignore, and why ----
   The parser stays silent, as glibc's is; these walk the same input and
   name each entry it would skip, for `hpmalloc.verbose` and for hpm.
   They allocate nothing and call only the REPORT function given.  */
enum hp_tunable_problem {
  HP_TP_UNKNOWN,   /* no such malloc tunable (glibc's other namespaces, glibc.cpu.* ..., are not checked) */
  HP_TP_NO_VALUE,  /* a name without "=value" */
  HP_TP_MALFORMED, /* the value is not one number (a path row: an alias's value without a '/') */
  HP_TP_RANGE,     /* a number outside the row's [min, max] (a path row: empty or too long) */
};

struct hp_tunable_issue {
  enum hp_tunable_problem problem;
  int alias;        /* 1: an environment alias (MALLOC_TOP_PAD_=...), 0: a GLIBC_TUNABLES-syntax entry */
  const char *text; /* the entry, "name=value", not NUL-terminated */
  size_t len;       /* of text */
  int id;           /* the row (MALFORMED, RANGE), else -1 */
  int suggest;      /* UNKNOWN: the row whose name is at most 2 edits away, else -1 */
};

typedef void hp_tunable_report_fn(void *ctx, const struct hp_tunable_issue *issue);

/* Walk S (GLIBC_TUNABLES syntax, may be NULL) as hp_tunables_apply_string
   applies it, calling REPORT(CTX, issue) for each entry it ignores.
   Returns how many it ignores.  */
int hp_tunables_check_string(const char *s, hp_tunable_report_fn *report, void *ctx);

/* The same for an environment: every GLIBC_TUNABLES variable's entries
   and every alias whose value is ignored (a bad number or out of range).
   Returns how many.  */
int hp_tunables_check_env(char *const *envp, hp_tunable_report_fn *report, void *ctx);

/* "glibc.malloc.perturb=300: out of range (0 to 255)", "garbage=1:
   unknown tunable", "...: unknown tunable (did you mean
   glibc.malloc.hugetlb?)": ISSUE in words, into BUF (N bytes, always
   NUL-terminated, cut to fit).  Returns the length written.  */
size_t hp_tunable_describe(const struct hp_tunable_issue *issue, char *buf, size_t n);

#endif
