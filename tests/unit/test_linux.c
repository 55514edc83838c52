/* SPDX-License-Identifier: MIT */
/* Unit tests of the Linux readers' path joining
 * (sysdeps/unix/sysv/linux/readers.c) and of the os.c primitives' edges
 * (mincore residency, refused mappings, randomness).  The readers' file
 * and line reading and the parsers of /sys text are tested in
 * test_sysdeps.c, beside the probe built on them.  MIT licence.  */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sysdeps/unix/sysv/linux/hp_linux.h"

Test(readers, path_join) {
  char out[8];
  cr_assert_eq(hp_linux_path(out, sizeof out, "/ab", "/cd"), 0);
  cr_assert_str_eq(out, "/ab/cd");
  cr_assert_eq(hp_linux_path(out, sizeof out, "/abc", "/def"), -1, "8 bytes with the NUL: one too many");
  cr_assert_eq(hp_linux_path(out, sizeof out, "/ab", "/def"), 0, "exactly the buffer");
  cr_assert_str_eq(out, "/ab/def");
  cr_assert_eq(hp_linux_path(out, 0, "", ""), -1);
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
