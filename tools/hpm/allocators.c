/* SPDX-License-Identifier: MIT */
/* hpm: the allocators it knows (which are installed, from which Debian
   package the others come), which malloc tunables each reads, and the
   check of --tunables against the library's own table.

   hpm does not link the allocator, but it compiles in tunables/tunables.c
   (a leaf: no allocation, no system call, no other file of the library),
   so a name or a range hpm accepts is one hpmalloc applies, from one
   table.  MIT licence.  */
#include "hpm.h"
#include "tunables.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The allocators hpm knows by name; PACKAGE: Debian's, for a message.  */
static const struct {
  const char *name, *package;
  int reads; /* READS_* */
} known[] = {
  { "glibc", NULL, READS_GLIBC },
  { "hpmalloc", NULL, READS_ALL },
  { "jemalloc", "libjemalloc2", READS_NONE },
  { "mimalloc", "libmimalloc2.0", READS_NONE },
  { "tcmalloc", "libtcmalloc-minimal4", READS_NONE },
};
#define NKNOWN (sizeof known / sizeof *known)

void installed_allocators(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < NKNOWN; i++)
    if (allocator_found(known[i].name)) {
      int m = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", known[i].name);
      if (m < 0 || (size_t)m >= n - k) return; /* a message: cut is fine */
      k += (size_t)m;
    }
}

int allocator_missing(const char *cmd, const char *name) {
  char list[128];
  installed_allocators(list, sizeof list);
  for (size_t i = 0; i < NKNOWN; i++) {
    if (strcmp(name, known[i].name) != 0) continue;
    if (known[i].package)
      fprintf(stderr, "hpm %s: allocator %s is not installed (Debian: apt-get install %s); installed: %s\n", cmd, name,
              known[i].package, list);
    else
      fprintf(stderr,
              "hpm %s: allocator %s: libhpmalloc.so not found next to hpm (build it with make, or set HPM_HPMALLOC "
              "to its path); installed: %s\n",
              cmd, name, list);
    return 1;
  }
  fprintf(stderr,
          "hpm %s: allocator %s not found: not a name hpm knows nor a readable file; installed: %s; or give "
          "the path of a shared library\n",
          cmd, name, list);
  return 1;
}

int allocator_reads(const char *name) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  for (size_t i = 0; i < NKNOWN; i++) {
    size_t l = strlen(known[i].name);
    if (!strcmp(name, known[i].name) || (!strncmp(base, "lib", 3) && !strncmp(base + 3, known[i].name, l)))
      return known[i].reads;
  }
  return READS_UNKNOWN;
}

/* What an allocator must read to see the entry NAME (READS_* are
   ordered): READS_GLIBC for glibc.malloc.*, READS_ALL for hpmalloc's own
   spellings (malloc.*, hpmalloc.*), READS_NONE for the rest (glibc.cpu.*
   ...: the dynamic loader's, seen under any allocator).  */
static int entry_needs(const char *name, size_t len) {
  if (len >= 13 && !strncmp(name, "glibc.malloc.", 13)) return READS_GLIBC;
  if ((len >= 7 && !strncmp(name, "malloc.", 7)) || (len >= 9 && !strncmp(name, "hpmalloc.", 9))) return READS_ALL;
  return READS_NONE;
}

/* Append S[0..LEN) to the ':'-separated list BUF (N bytes); cut to fit.  */
static void append_entry(char *buf, size_t n, const char *s, size_t len) {
  size_t k = strlen(buf);
  if (k && k + 1 < n) buf[k++] = ':';
  if (len > n - 1 - k) len = n - 1 - k;
  memcpy(buf + k, s, len);
  buf[k + len] = 0;
}

void tunables_split(const char *alloc, const char *tun, char *eff, size_t effn, char *dropped, size_t dn) {
  int reads = allocator_reads(alloc);
  eff[0] = dropped[0] = 0;
  for (const char *p = tun; *p;) {
    size_t len = strcspn(p, ":"), nlen = strcspn(p, "=:");
    int need = entry_needs(p, nlen);
    int kept = reads == READS_UNKNOWN || need <= reads;
    if (len) append_entry(kept ? eff : dropped, kept ? effn : dn, p, len);
    p += len + (p[len] == ':');
  }
}

const char *allocator_reads_text(const char *alloc) {
  switch (allocator_reads(alloc)) {
  case READS_NONE: return "reads no GLIBC_TUNABLES malloc tunable";
  case READS_GLIBC: return "reads glibc.malloc.* only (malloc.* and hpmalloc.* are hpmalloc's)";
  default: return "reads them all";
  }
}

/* ======================================================================== --tunables */
/* The first issue the checker reports, described.  */
struct first_issue {
  char text[400];
  int n, unknown;
};

static void keep_first(void *ctx, const struct hp_tunable_issue *is) {
  struct first_issue *f = ctx;
  if (f->n++) return;
  hp_tunable_describe(is, f->text, sizeof f->text);
  f->unknown = is->problem == HP_TP_UNKNOWN;
}

/* "glibc.malloc.NAME (or malloc.NAME) for NAME in check, top_pad, ...;
   hpmalloc.NAME for NAME in ...", from the table, into BUF.  */
static void valid_names(char *buf, size_t n) {
  static const struct {
    const char *prefix, *intro;
  } ns[] = {
    { "glibc.malloc.", "glibc.malloc.NAME (or malloc.NAME) with NAME one of " },
    { "hpmalloc.", "; hpmalloc.NAME with NAME one of " },
  };
  size_t k = 0;
  buf[0] = 0;
  for (size_t s = 0; s < 2; s++) {
    size_t pl = strlen(ns[s].prefix);
    int first = 1;
    for (int id = 0; id < HP_T_COUNT; id++) {
      const char *name = hp_tunable_table[id].name;
      if (strncmp(name, ns[s].prefix, pl) != 0) continue;
      int m = snprintf(buf + k, n - k, "%s%s", first ? ns[s].intro : ", ", name + pl);
      if (m < 0 || (size_t)m >= n - k) return; /* a message: cut is fine */
      k += (size_t)m;
      first = 0;
    }
  }
}

/* The hugetlb page sizes this machine offers (/sys/kernel/mm/hugepages),
   into SZ (at most MAX), ascending; returns how many.  */
static int offered_sizes(uint64_t *sz, int max) {
  DIR *d = opendir("/sys/kernel/mm/hugepages");
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) && n < max;) {
    static const char pre[] = "hugepages-";
    if (strncmp(e->d_name, pre, sizeof pre - 1) != 0) continue;
    char *end;
    errno = 0;
    unsigned long long kb = strtoull(e->d_name + sizeof pre - 1, &end, 10);
    if (errno || !kb || strcmp(end, "kB") != 0 || kb > (UINT64_MAX >> 10)) continue;
    int i = n++;
    for (; i > 0 && sz[i - 1] > kb << 10; i--) sz[i] = sz[i - 1];
    sz[i] = kb << 10;
  }
  (void)closedir(d); /* read only: nothing to lose */
  return n;
}

/* The values the table's ranges let through but the library ignores on
   this machine: glibc.malloc.hugetlb takes 0, 1, 2 or a hugetlb page size
   the kernel offers (another is ignored: mode 0); hpmalloc.hugetlb_size 0
   or such a size (another: the default size).  Returns 0, or -1 with the
   message in ERR.  The string passed hp_tunables_check_string.  */
static int check_hugetlb_values(const char *s, char *err, size_t errlen) {
  uint64_t sz[8];
  int n = -1;
  for (const char *p = s; *p;) {
    size_t len = strcspn(p, ":"), eq = strcspn(p, "=");
    if (eq < len) {
      const char *name = p;
      size_t nl = eq;
      if (nl > 6 && !strncmp(name, "glibc.", 6)) name += 6, nl -= 6;
      int is_mode = nl == 14 && !strncmp(name, "malloc.hugetlb", 14);
      int is_size = nl == 21 && !strncmp(name, "hpmalloc.hugetlb_size", 21);
      unsigned long long v = strtoull(p + eq + 1, NULL, 0);
      if ((is_mode && v > 2) || (is_size && v)) {
        if (n < 0) n = offered_sizes(sz, 8);
        int ok = 0;
        char list[200] = "";
        for (int i = 0; i < n; i++) {
          ok |= sz[i] == v;
          size_t l = strlen(list);
          (void)snprintf(list + l, sizeof list - l, "%s%llu", i ? ", " : "", (unsigned long long)sz[i]); /* fits */
        }
        if (!ok) {
          /* a message: truncation is harmless */
          (void)snprintf(
              err, errlen, "%.*s: out of range (%s%s%s)", (int)(len < 200 ? len : 200), p,
              is_mode ? "0 off, 1 THP, 2 hugetlbfs, or " : "0 the default, or ",
              n ? "a hugetlb page size this machine offers: " : "a hugetlb page size; this machine offers none", list);
          return -1;
        }
      }
    }
    p += len + (p[len] == ':');
  }
  return 0;
}

int tunables_check(const char *s, char *err, size_t errlen) {
  struct first_issue f = { .n = 0 };
  if (!hp_tunables_check_string(s, keep_first, &f)) return check_hugetlb_values(s, err, errlen);
  char names[700];
  valid_names(names, sizeof names);
  /* Messages: truncation is harmless.  */
  if (f.unknown)
    (void)snprintf(err, errlen, "%s; valid: %s; `man hpmalloc` gives their ranges", f.text, names);
  else
    (void)snprintf(err, errlen, "%s", f.text);
  return -1;
}

int tunables_arg(void *field, const char *val, char *err, size_t errlen) {
  if (tunables_check(val, err, errlen)) return -1;
  *(const char **)field = val;
  return 0;
}
