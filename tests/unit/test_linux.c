/* Unit tests of the Linux readers (sysdeps/unix/sysv/linux/readers.c):
 * path joining, whole-file and line-by-line reading into the caller's
 * buffer (exact fits, long lines, read errors), and the parsers of /sys
 * text (numbers, THP mode, CPU lists, POWER segment sizes); and the os.c
 * primitives' edges (mincore residency, refused mappings, randomness).  The probe
 * built on them is tested in test_sysdeps.c.  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sysdeps/unix/sysv/linux/hp_linux.h"

static char tmpfile_path[64];

/* A temporary file holding `text`; removed by the test's process end.  */
static const char *file_with(const char *text) {
  strcpy(tmpfile_path, "/tmp/hpm-linux-XXXXXX");
  int fd = mkstemp(tmpfile_path);
  cr_assert_geq(fd, 0);
  size_t n = strlen(text);
  cr_assert_eq(write(fd, text, n), (ssize_t)n);
  close(fd);
  return tmpfile_path;
}

Test(readers, path_join) {
  char out[8];
  cr_assert_eq(hp_linux_path(out, sizeof out, "/ab", "/cd"), 0);
  cr_assert_str_eq(out, "/ab/cd");
  cr_assert_eq(hp_linux_path(out, sizeof out, "/abc", "/def"), -1, "8 bytes with the NUL: one too many");
  cr_assert_eq(hp_linux_path(out, sizeof out, "/ab", "/def"), 0, "exactly the buffer");
  cr_assert_str_eq(out, "/ab/def");
  cr_assert_eq(hp_linux_path(out, 0, "", ""), -1);
}

Test(readers, read_file) {
  char buf[8];
  errno = 0;
  cr_assert_eq(hp_linux_read_file("/nonexistent/x", buf, 0), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_eq(hp_linux_read_file("/nonexistent/x", buf, sizeof buf), -1);
  cr_assert_str_eq(buf, "");
  const char *f = file_with("0123456789");
  cr_assert_eq(hp_linux_read_file(f, buf, sizeof buf), 7, "truncated to the buffer, NUL included");
  cr_assert_str_eq(buf, "0123456");
  unlink(f);
  errno = 0;
  cr_assert_eq(hp_linux_read_file("/tmp", buf, sizeof buf), -1, "a directory cannot be read");
  cr_assert_eq(errno, EISDIR);
}

struct lines {
  char got[8][32];
  int n, stop_after;
};

static int take_line(char *line, void *ctx) {
  struct lines *l = ctx;
  if (l->n < 8) snprintf(l->got[l->n], sizeof l->got[0], "%s", line);
  l->n++;
  return l->stop_after && l->n >= l->stop_after;
}

Test(readers, read_lines) {
  char buf[16];
  struct lines l = { .n = 0 };
  errno = 0;
  cr_assert_eq(hp_linux_read_lines("/tmp", buf, 1, take_line, &l), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_eq(hp_linux_read_lines("/nonexistent/x", buf, sizeof buf, take_line, &l), -1);
  cr_assert_eq(hp_linux_read_lines("/tmp", buf, sizeof buf, take_line, &l), -1, "read error");
  cr_assert_eq(l.n, 0);

  /* a line longer than the buffer is dropped whole; the last line needs no '\n' */
  const char *f = file_with("short\nthis line is far too long for sixteen bytes\nnext\nlast");
  cr_assert_eq(hp_linux_read_lines(f, buf, sizeof buf, take_line, &l), 0);
  cr_assert_eq(l.n, 3);
  cr_assert_str_eq(l.got[0], "short");
  cr_assert_str_eq(l.got[1], "next");
  cr_assert_str_eq(l.got[2], "last");

  /* the callback stops the reading */
  struct lines s = { .n = 0, .stop_after = 1 };
  cr_assert_eq(hp_linux_read_lines(f, buf, sizeof buf, take_line, &s), 0);
  cr_assert_eq(s.n, 1);
  unlink(f);

  /* a long last line without '\n' is dropped too */
  struct lines t = { .n = 0 };
  f = file_with("a\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  cr_assert_eq(hp_linux_read_lines(f, buf, sizeof buf, take_line, &t), 0);
  cr_assert_eq(t.n, 1);
  cr_assert_str_eq(t.got[0], "a");
  unlink(f);
}

Test(readers, parse_u64) {
  const char *s = " \t42 kB";
  uint64_t v = 0;
  cr_assert_eq(hp_linux_parse_u64(&s, &v), 0);
  cr_assert_eq(v, 42);
  cr_assert_str_eq(s, " kB");
  s = "x1";
  cr_assert_eq(hp_linux_parse_u64(&s, &v), -1);
  s = "18446744073709551615";
  cr_assert_eq(hp_linux_parse_u64(&s, &v), 0);
  cr_assert_eq(v, UINT64_MAX);
  s = "18446744073709551616";
  cr_assert_eq(hp_linux_parse_u64(&s, &v), -1, "overflow");
}

Test(readers, parse_thp) {
  cr_assert_eq(hp_linux_parse_thp("[always] madvise never"), HP_THP_ALWAYS);
  cr_assert_eq(hp_linux_parse_thp("always [madvise] never\n"), HP_THP_MADVISE);
  cr_assert_eq(hp_linux_parse_thp("always madvise [never]"), HP_THP_NEVER);
  cr_assert_eq(hp_linux_parse_thp("always madvise never"), HP_THP_UNSUPPORTED);
  cr_assert_eq(hp_linux_parse_thp("[sometimes]"), HP_THP_UNSUPPORTED);
  cr_assert_eq(hp_linux_parse_thp("[always"), HP_THP_UNSUPPORTED);
}

Test(readers, count_cpulist) {
  cr_assert_eq(hp_linux_count_cpulist("0-3,5\n"), 5);
  cr_assert_eq(hp_linux_count_cpulist("7"), 1);
  cr_assert_eq(hp_linux_count_cpulist("3-1"), 0, "descending range");
  cr_assert_eq(hp_linux_count_cpulist("0-"), 0);
  cr_assert_eq(hp_linux_count_cpulist("1x"), 0);
  cr_assert_eq(hp_linux_count_cpulist(""), 0);
  cr_assert_eq(hp_linux_count_cpulist("0-2000000"), 0, "beyond any machine");
}

Test(readers, seg_sizes) {
  const unsigned char with_1t[] = { 0, 0, 0, 28, 0, 0, 0, 40 };
  const unsigned char without[] = { 0, 0, 0, 28 };
  cr_assert_eq(hp_linux_seg_sizes_have_1t(with_1t, sizeof with_1t), 1);
  cr_assert_eq(hp_linux_seg_sizes_have_1t(without, sizeof without), 0);
  cr_assert_eq(hp_linux_seg_sizes_have_1t(without, 0), -1);
  cr_assert_eq(hp_linux_seg_sizes_have_1t(without, 3), -1);
}

/* ================================================================ os.c */

Test(os, resident) {
  size_t pg = hp_os_page_size();
  char *p = hp_os_map(NULL, 2 * pg, HP_PROT_RW, 0, 0);
  cr_assert_not_null(p);
  cr_assert_eq(hp_os_resident(p, 2 * pg), 0, "untouched");
  p[0] = 1;
  cr_assert_eq(hp_os_resident(p, pg), 1);
  cr_assert_eq(hp_os_resident(p, 2 * pg), 0, "the last page is not there yet");
  p[pg] = 1;
  cr_assert_eq(hp_os_resident(p, 2 * pg), 1);
  cr_assert_eq(hp_os_unmap(p, 2 * pg), 0);
  cr_assert_eq(hp_os_resident(p, pg), -1, "not mapped");
}

Test(os, map_errors) {
  errno = 0;
  cr_assert_null(hp_os_map(NULL, 3 << 20, HP_PROT_RW, HP_MAP_HUGETLB, 3 << 20));
  cr_assert_eq(errno, EINVAL, "a hugetlb size that is not a power of two");
  size_t pg = hp_os_page_size();
  char *a = hp_os_map(NULL, pg, HP_PROT_RW, 0, 0);
  cr_assert_not_null(a);
  /* the address is taken: FIXED_NOREPLACE must not map anywhere else */
  errno = 0;
  cr_assert_null(hp_os_map(a, pg, HP_PROT_RW, HP_MAP_FIXED_NOREPLACE, 0));
  cr_assert_eq(errno, EEXIST);
  errno = 0;
  cr_assert_eq(hp_os_advise(a, pg, (enum hp_advice)12345), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_null(hp_os_remap(a, pg, 1ul << 46, 0), "cannot grow in place over the address space");
  hp_os_unmap(a, pg);
}

Test(os, random_and_facts) {
  unsigned char a[64], b[64];
  hp_os_random(a, sizeof a);
  hp_os_random(b, sizeof b);
  cr_assert_neq(memcmp(a, b, sizeof a), 0);
  hp_os_random(a, 0);
  cr_assert_geq(hp_os_ncpus(), 1);
  cr_assert_eq(hp_os_secure(), 0);
  cr_assert_not_null(hp_os_environ());
}
