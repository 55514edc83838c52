/* SPDX-License-Identifier: MIT */
/* hpm: small helpers (progress line, sizes, paths, JSON).  MIT licence.  */
#include "hpm.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int hpm_verbose_progress = -1; /* -1: not known yet */
static int progress_shown;

/* A progress line on stderr, only when stderr is a terminal.  */
void progress(const char *fmt, ...) {
  if (hpm_verbose_progress < 0) hpm_verbose_progress = isatty(2);
  if (!hpm_verbose_progress) return;
  va_list ap;
  fputs("\r\033[K", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  (void)fflush(stderr); /* unbuffered; a progress line is best effort */
  progress_shown = 1;
}

int progress_on_terminal(void) {
  if (hpm_verbose_progress < 0) hpm_verbose_progress = isatty(2);
  return hpm_verbose_progress;
}

void progress_done(void) {
  if (progress_shown) {
    fputs("\r\033[K", stderr);
    (void)fflush(stderr);
    progress_shown = 0;
  } /* best effort */
}

double now_s(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail: CLOCK_MONOTONIC exists on Linux */
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "4096", "64K", "2M", "1G" (binary).  */
int parse_size(const char *s, uint64_t *out) {
  char *end;
  if (!s || !*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 0);
  int sh = 0;
  switch (*end) {
  case 'k':
  case 'K':
    sh = 10;
    end++;
    break;
  case 'm':
  case 'M':
    sh = 20;
    end++;
    break;
  case 'g':
  case 'G':
    sh = 30;
    end++;
    break;
  default: break;
  }
  if (*end || (sh && v > (UINT64_MAX >> sh))) return -1;
  *out = (uint64_t)v << sh;
  return 0;
}

/* A decimal integer in [MIN, MAX]: digits only (no sign, no blanks, no
   junk after them), no overflow.  */
int parse_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out) {
  if (!s || *s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

const char *self_dir(void) {
  static char dir[PATH_MAX];
  if (!dir[0]) {
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) {
      dir[0] = '.';
      dir[1] = 0;
      return dir;
    }
    dir[n] = 0;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
  }
  return dir;
}

/* Where `make install` put hpm's files, relative to hpm's own directory
   (mk/55-hpm.mk passes them; these defaults are its PREFIX layout).  */
#ifndef HPM_LIBDIR_REL
#define HPM_LIBDIR_REL "../lib"
#endif
#ifndef HPM_RECORDER_REL
#define HPM_RECORDER_REL "hpmalloc/libhpmtrace.so"
#endif
#ifndef HPM_SONAME
#define HPM_SONAME "libhpmalloc.so.0"
#endif
#ifndef HPM_DOCDIR_REL
#define HPM_DOCDIR_REL "../share/doc/hpmalloc"
#endif

/* The first readable one of ../lib/BUILT next to hpm (the build tree:
   build/bin/hpm, build/lib/) and INSTALLED under the library directory
   relative to hpm (an installed tree, wherever DESTDIR put it); a
   malloc'd absolute path, or NULL.  */
static char *own_file(const char *built, const char *installed) {
  const char *const rel[2][2] = { { "../lib", built }, { HPM_LIBDIR_REL, installed } };
  for (int i = 0; i < 2; i++) {
    char buf[PATH_MAX + 64];
    int n = snprintf(buf, sizeof buf, "%s/%s/%s", self_dir(), rel[i][0], rel[i][1]);
    if (n > 0 && (size_t)n < sizeof buf && access(buf, R_OK) == 0) return realpath(buf, NULL);
  }
  return NULL;
}

char *find_recorder(void) { return own_file("libhpmtrace.so", HPM_RECORDER_REL); }

const char *format_doc_path(void) {
  static char path[PATH_MAX];
  char buf[PATH_MAX + 64];
  int n = snprintf(buf, sizeof buf, "%s/" HPM_DOCDIR_REL "/FORMAT.md", self_dir());
  if (n > 0 && (size_t)n < sizeof buf && realpath(buf, path)) return path;
  return "tools/hpm/FORMAT.md in hpmalloc's source tree";
}

/* Allocator names: glibc (NULL: no preload), hpmalloc, jemalloc, mimalloc,
   tcmalloc, or a path to a .so.  */
char *find_allocator(const char *name) {
  static const char *const known[][4] = {
    { "jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", NULL },
    { "mimalloc", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "/usr/lib/libmimalloc.so.2", NULL },
    { "tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "/usr/lib/libtcmalloc_minimal.so.4", NULL },
  };
  if (!name || !strcmp(name, "glibc")) return NULL;
  if (!strcmp(name, "hpmalloc")) {
    const char *env = getenv("HPM_HPMALLOC");
    if (env && access(env, R_OK) == 0) return strdup(env);
    char *own = own_file("libhpmalloc.so", HPM_SONAME);
    return own ? own : strdup("");
  }
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (!strcmp(name, known[i][0])) {
      for (int k = 1; known[i][k]; k++)
        if (access(known[i][k], R_OK) == 0) return strdup(known[i][k]);
      return strdup("");
    }
  if (access(name, R_OK) == 0) return realpath(name, NULL);
  return strdup("");
}

int allocator_found(const char *name) {
  char *p = find_allocator(name);
  int found = !p || *p;
  free(p);
  return found;
}

void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

int json_get_num(const char *json, const char *key, double *out) {
  char pat[128];
  int n = snprintf(pat, sizeof pat, "\"%s\":", key);
  if (n < 0 || (size_t)n >= sizeof pat) return -1;
  const char *p = strstr(json, pat);
  if (!p) return -1;
  p += strlen(pat);
  while (*p == ' ') p++;
  char *end;
  double v = strtod(p, &end);
  if (end == p) return -1;
  *out = v;
  return 0;
}
