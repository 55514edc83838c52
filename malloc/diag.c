/* SPDX-License-Identifier: MIT */
/* diag.c: where hpmalloc's diagnostics go.
 *
 * A diagnostic must never land where the program did not ask for it.
 * Descriptor 2 at exit is not necessarily stderr: a program that closed
 * its stderr and opened a data file finds that file on descriptor 2, and
 * a report written there would corrupt its data.  So the file descriptor
 * 2 refers to is recorded when the process starts (a constructor, or the
 * allocator's start-up if that comes first) by device, inode and type,
 * and each batch of lines checks it again with fstat: when descriptor 2
 * is closed or now refers to something else, nothing is written.  A
 * program that redirects its own stderr later loses the diagnostics; the
 * user can name a file instead (hpmalloc.stats_file, HPMALLOC_STATS=FILE),
 * opened for each batch with O_APPEND, so that reports of several
 * processes, or of a process and its forks, interleave whole.
 *
 * The fatal messages (check.c, hp_fatal) do not come here: as glibc's,
 * they go to descriptor 2 whatever it is, right before abort().
 *
 * Everything here is async-signal-safe (fstat, open, write, close,
 * getpid) and allocates nothing: the report at exit and the notes on
 * refused system calls may run under an arena's lock.  */
#include "diag.h"

#include <stdatomic.h>
#include <string.h>

bool diag_verbose;

enum { DIAG_PATH_MAX = 4096 };

/* Set before any other thread runs (the constructor, diag_setup), read
   only afterwards.  */
static struct {
  bool recorded;    /* stderr_id was taken */
  bool have_stderr; /* descriptor 2 was open then */
  struct hp_file_id stderr_id;
  char file[DIAG_PATH_MAX]; /* the file's name as given ("%p" unexpanded), "" for stderr */
} where;

static void record_stderr(void) {
  if (where.recorded) return;
  where.have_stderr = hp_os_file_id(2, &where.stderr_id) == 0;
  where.recorded = true;
}

/* Descriptor 2 as the process found it, before main and before the
   program could close it; the allocator's start-up records it instead
   when some constructor allocated first.  */
__attribute__((constructor)) static void diag_record_stderr(void) { record_stderr(); }

void diag_setup(bool verbose, const char *file, size_t len) {
  record_stderr();
  diag_verbose = verbose;
  where.file[0] = '\0';
  if (file == NULL || len == 0 || len >= DIAG_PATH_MAX) return;
  size_t at = 0;
  if (file[0] != '/' && hp_os_cwd(where.file, DIAG_PATH_MAX) == 0) {
    at = strlen(where.file);
    if (at + 1 + len >= DIAG_PATH_MAX)
      at = 0; /* too long with the directory: taken as given */
    else if (where.file[at - 1] != '/')
      where.file[at++] = '/';
  }
  memcpy(where.file + at, file, len);
  where.file[at + len] = '\0';
}

/* v in decimal into out (at least 10 bytes); returns the length.  */
static size_t put_decimal(char *out, unsigned v) {
  char d[10];
  size_t n = 0;
  do d[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  for (size_t i = 0; i < n; i++) out[i] = d[n - 1 - i];
  return n;
}

/* The file's name with "%p" replaced by the pid and "%%" by '%', into
   out[DIAG_PATH_MAX]: false when it does not fit.  */
static bool expand_name(char *out) {
  char pid[10];
  size_t np = put_decimal(pid, (unsigned)hp_os_pid()), k = 0;
  for (const char *s = where.file; *s != '\0'; s++) {
    const char *piece = s;
    size_t n = 1;
    if (s[0] == '%' && s[1] == 'p') {
      piece = pid;
      n = np;
      s++;
    } else if (s[0] == '%' && s[1] == '%') {
      s++;
    }
    if (k + n >= DIAG_PATH_MAX) return false;
    memcpy(out + k, piece, n);
    k += n;
  }
  out[k] = '\0';
  return true;
}

/* Is descriptor 2 still the file it was at start-up?  */
static bool stderr_unchanged(void) {
  struct hp_file_id now;
  if (!where.have_stderr || hp_os_file_id(2, &now) != 0) return false;
  return now.dev == where.stderr_id.dev && now.ino == where.stderr_id.ino && now.type == where.stderr_id.type;
}

bool diag_open(struct diag_out *o) {
  o->fd = -1;
  o->opened = false;
  if (where.file[0] != '\0') {
    char name[DIAG_PATH_MAX];
    if (expand_name(name)) o->fd = hp_os_open_append(name);
    o->opened = o->fd >= 0;
  } else if (stderr_unchanged()) {
    o->fd = 2;
  }
  return o->fd >= 0;
}

void diag_put(const struct diag_out *o, const char *s, size_t n) {
  if (o->fd >= 0) hp_os_write_fd(o->fd, s, n);
}

void diag_close(struct diag_out *o) {
  if (o->opened) hp_os_close(o->fd);
  o->fd = -1;
  o->opened = false;
}

void diag_line(const char *s, size_t n) {
  struct diag_out o;
  if (!diag_open(&o)) return;
  diag_put(&o, s, n);
  diag_close(&o);
}

/* ------------------------------------------------------------------ refused system calls */

static _Atomic unsigned refused_seen; /* bit (1u << enum diag_refusal): reported */

static const char *const refusal_text[DIAG_REFUSALS] = {
  [DIAG_REFUSED_HUGEPAGE] = "madvise(MADV_HUGEPAGE) refused (%s): memory it was asked for stays on base pages",
  [DIAG_REFUSED_DONTNEED] = "madvise(MADV_DONTNEED) refused (%s): memory is given back by mapping fresh pages over "
                            "it, else kept and still counted",
  [DIAG_REFUSED_POPULATE] = "madvise(MADV_POPULATE_WRITE) refused (%s): hugetlb pages cannot be committed safely, "
                            "THP or base pages are used instead",
  [DIAG_REFUSED_COLLAPSE] = "madvise(MADV_COLLAPSE) refused (%s): huge pages filled piecemeal are left to khugepaged",
  [DIAG_REFUSED_REMAP] = "mremap refused (%s): a large block that realloc cannot grow in place is copied",
};

static const char *errno_name(int err) {
  switch (err) {
  case EPERM: return "EPERM";
  case EACCES: return "EACCES";
  case ENOSYS: return "ENOSYS";
  case EINVAL: return "EINVAL";
  default: return "error";
  }
}

void diag_refused_slow(enum diag_refusal what, int err) {
  unsigned bit = 1u << what;
  if (atomic_fetch_or_explicit(&refused_seen, bit, memory_order_relaxed) & bit) return;
  /* "hpmalloc: " + the text with its one %s replaced by the errno's name
     (names are short: the line keeps room for one); no snprintf here */
  char line[256];
  size_t k = 0;
  for (const char *h = "hpmalloc: "; *h != '\0'; h++) line[k++] = *h;
  for (const char *t = refusal_text[what]; *t != '\0' && k + 16 < sizeof line; t++) {
    if (t[0] == '%' && t[1] == 's') {
      for (const char *n = errno_name(err); *n != '\0'; n++) line[k++] = *n;
      t++;
    } else {
      line[k++] = *t;
    }
  }
  line[k++] = '\n';
  diag_line(line, k);
}
