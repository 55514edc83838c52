/* SPDX-License-Identifier: MIT */
/* Readers of /proc and /sys text that never allocate.  MIT licence.
 *
 * Contracts are in hp_linux.h.  Every buffer belongs to the caller (a stack
 * array); every string handed on is NUL-terminated, including a file that
 * fills the buffer exactly (glibc 2.36's THP reader forgot that).  */
#include "hp_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int hp_linux_path(char *out, size_t cap, const char *root, const char *rel) {
  size_t a = strlen(root), b = strlen(rel);

  if (cap == 0 || a + b + 1 > cap) return -1;
  memcpy(out, root, a); // NOLINT(bugprone-not-null-terminated-result): the next memcpy copies rel's NUL
  memcpy(out + a, rel, b + 1);
  return 0;
}

/* read(2) until n bytes, end of file or an error other than EINTR.
   Returns the count read, or -1.  */
static inline long read_full(int fd, char *buf, size_t n) {
  size_t got = 0;

  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r > 0)
      got += (size_t)r;
    else if (r == 0)
      break;
    else if (errno != EINTR)
      return -1;
  }
  return (long)got;
}

long hp_linux_read_file(const char *path, char *buf, size_t size) {
  int fd, saved;
  long n;

  if (size == 0) {
    errno = EINVAL;
    return -1;
  }
  buf[0] = '\0';
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  n = read_full(fd, buf, size - 1);
  saved = errno;
  close(fd);
  if (n < 0) {
    errno = saved;
    return -1;
  }
  buf[n] = '\0';
  return n;
}

/* The state of hp_linux_read_lines between two reads.  */
struct line_state {
  char *buf;
  size_t size;
  size_t have;  /* bytes of an unfinished line at buf[0] */
  int skipping; /* inside a line too long for buf: drop it up to its '\n' */
};

/* Hand every complete line in buf[0, have) to fn and keep the unfinished
   tail at buf[0].  Returns non-zero when fn asked to stop.  */
static inline int lines_drain(struct line_state *st, hp_line_fn fn, void *ctx) {
  size_t start = 0;
  char *nl;

  while ((nl = memchr(st->buf + start, '\n', st->have - start)) != NULL) {
    char *line = st->buf + start;
    int skip = st->skipping;
    *nl = '\0';
    st->skipping = 0;
    start = (size_t)(nl - st->buf) + 1;
    if (!skip && fn(line, ctx) != 0) return 1;
  }
  memmove(st->buf, st->buf + start, st->have - start);
  st->have -= start;
  if (st->have == st->size - 1) {
    st->have = 0; /* a line longer than the buffer */
    st->skipping = 1;
  }
  return 0;
}

int hp_linux_read_lines(const char *path, char *buf, size_t size, hp_line_fn fn, void *ctx) {
  struct line_state st = { buf, size, 0, 0 };
  int fd, stop = 0;
  long r = 0;

  if (size < 2) {
    errno = EINVAL;
    return -1;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  while (!stop && (r = read_full(fd, buf + st.have, size - 1 - st.have)) > 0) {
    st.have += (size_t)r;
    stop = lines_drain(&st, fn, ctx);
  }
  close(fd);
  if (r < 0) return -1;
  if (!stop && st.have > 0 && !st.skipping) {
    buf[st.have] = '\0'; /* the last line, without its '\n' */
    fn(buf, ctx);
  }
  return 0;
}

int hp_linux_parse_u64(const char **s, uint64_t *out) {
  const char *p = *s;
  uint64_t v = 0;

  while (*p == ' ' || *p == '\t') p++;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *s = p;
  *out = v;
  return 0;
}

/* Whether text at p starts with word followed by c.  */
static inline int word_then(const char *p, const char *word, char c) {
  size_t n = strlen(word);
  return strncmp(p, word, n) == 0 && p[n] == c;
}

enum hp_thp_mode hp_linux_parse_thp(const char *text) {
  const char *br = strchr(text, '[');

  if (br == NULL) return HP_THP_UNSUPPORTED;
  br++;
  if (word_then(br, "always", ']')) return HP_THP_ALWAYS;
  if (word_then(br, "madvise", ']')) return HP_THP_MADVISE;
  if (word_then(br, "never", ']')) return HP_THP_NEVER;
  return HP_THP_UNSUPPORTED;
}

unsigned hp_linux_count_cpulist(const char *text) {
  const char *p = text;
  uint64_t n = 0, lo, hi;

  for (;;) {
    if (hp_linux_parse_u64(&p, &lo) != 0) return 0;
    hi = lo;
    if (*p == '-' && (p++, hp_linux_parse_u64(&p, &hi) != 0 || hi < lo)) return 0;
    n += hi - lo + 1;
    if (*p != ',') break;
    p++;
  }
  if (*p != '\0' && *p != '\n') return 0;
  return n > 1u << 20 ? 0 : (unsigned)n;
}

int hp_linux_seg_sizes_have_1t(const unsigned char *cells, size_t len) {
  if (len == 0 || len % 4 != 0) return -1;
  for (size_t i = 0; i < len; i += 4) {
    uint32_t shift =
        (uint32_t)cells[i] << 24 | (uint32_t)cells[i + 1] << 16 | (uint32_t)cells[i + 2] << 8 | cells[i + 3];
    if (shift == 40) return 1;
  }
  return 0;
}
