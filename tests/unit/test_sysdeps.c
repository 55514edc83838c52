/* SPDX-License-Identifier: MIT */
/* Unit tests of sysdeps: the probe on fixture trees and on this machine, the
 * text readers, every architecture's placement policy, and the Linux OS
 * primitives live.  MIT licence.
 *
 * Fixtures are fake roots under tests/fixtures/<name>/ (HPMALLOC_TEST_FIXTURES
 * names the directory; without it, it is found next to this file).  All four
 * placement.c files are linked into this test (see mk/50-cross.mk), so each
 * architecture's policy is checked on any host.  */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_sys.h"
#include "hp_placement.h"
#include "../../sysdeps/unix/sysv/linux/hp_linux.h"

#define MiB ((size_t) 1 << 20)
#define GiB ((size_t) 1 << 30)
#define TiB ((uint64_t) 1 << 40)

/* ================================================================ helpers */

static const char *
fixtures_dir (void)
{
  static char dir[1024];
  const char *env = getenv ("HPMALLOC_TEST_FIXTURES");
  const char *slash;

  if (env != NULL && env[0] != '\0')
    return env;
  slash = strrchr (__FILE__, '/');
  if (slash == NULL)
    return "../fixtures";
  snprintf (dir, sizeof dir, "%.*s/../fixtures", (int) (slash - __FILE__), __FILE__);
  return dir;
}

static void
fixture_root (const char *name, char *root, size_t cap)
{
  struct stat st;

  snprintf (root, cap, "%s/%s", fixtures_dir (), name);
  cr_assert (stat (root, &st) == 0 && S_ISDIR (st.st_mode), "fixture %s is missing", root);
}

static void
probe_fixture (const char *name, struct hp_sysinfo *si)
{
  char root[1024];

  fixture_root (name, root, sizeof root);
  hp_sys_probe_root (si, root, 0);
}

/* A scratch root under /tmp, removed by the test's process exit (each
   Criterion test runs in its own process; the tree is small).  */
static void
tmp_root (char *root, size_t cap)
{
  snprintf (root, cap, "/tmp/hpmalloc-sysdeps-XXXXXX");
  cr_assert_not_null (mkdtemp (root));
}

static void
mkdirs (const char *path)
{
  char buf[1024];

  snprintf (buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p != '\0'; p++)
    if (*p == '/')
      {
        *p = '\0';
        mkdir (buf, 0755);
        *p = '/';
      }
  mkdir (buf, 0755);
}

/* Write n bytes to <root><rel>, creating directories.  */
static void
put_bytes (const char *root, const char *rel, const void *data, size_t n)
{
  char path[1024], dir[1024];
  FILE *f;

  snprintf (path, sizeof path, "%s%s", root, rel);
  snprintf (dir, sizeof dir, "%s", path);
  *strrchr (dir, '/') = '\0';
  mkdirs (dir);
  f = fopen (path, "wb");
  cr_assert_not_null (f, "cannot create %s", path);
  cr_assert_eq (fwrite (data, 1, n, f), n);
  fclose (f);
}

static void
put (const char *root, const char *rel, const char *text)
{
  put_bytes (root, rel, text, strlen (text));
}

static void
rm_tree (const char *root)
{
  char cmd[1200];

  snprintf (cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system (cmd) != 0)
    fprintf (stderr, "could not remove %s\n", root);
}

static int
has_size (const struct hp_sysinfo *si, size_t size)
{
  for (unsigned i = 0; i < si->n_hugetlb; i++)
    if (si->hugetlb_sizes[i] == size)
      return 1;
  return 0;
}

static size_t
free_of (const struct hp_sysinfo *si, size_t size)
{
  for (unsigned i = 0; i < si->n_hugetlb; i++)
    if (si->hugetlb_sizes[i] == size)
      return si->hugetlb_free[i];
  return (size_t) -1;
}

static void
assert_sizes_ascending (const struct hp_sysinfo *si)
{
  cr_assert_leq (si->n_hugetlb, HP_MAX_HUGE_SIZES);
  for (unsigned i = 1; i < si->n_hugetlb; i++)
    cr_assert_lt (si->hugetlb_sizes[i - 1], si->hugetlb_sizes[i]);
}

/* ================================================================ probe: fixtures */

Test (probe, x86_64_2m)
{
  struct hp_sysinfo si;

  probe_fixture ("x86_64-2m", &si);
  cr_assert_eq (si.base_page, 4096);
  cr_assert_eq (si.thp, HP_THP_MADVISE);
  cr_assert_eq (si.thp_pmd_size, 2 * MiB);
  cr_assert_eq (si.hugetlb_default, 2 * MiB);
  cr_assert_eq (si.n_hugetlb, 1);
  cr_assert_eq (si.hugetlb_sizes[0], 2 * MiB);
  cr_assert_eq (si.hugetlb_free[0], 60);
  cr_assert_not (has_size (&si, GiB), "no 1 GiB pool in this fixture");
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
  cr_assert_eq (si.seg_1t, 0);
  cr_assert_str_eq (si.arch, hp_arch_name ());
}

Test (probe, x86_64_1g)
{
  struct hp_sysinfo si;

  probe_fixture ("x86_64-1g", &si);
  cr_assert_eq (si.base_page, 4096);
  cr_assert_eq (si.thp, HP_THP_ALWAYS);
  cr_assert_eq (si.thp_pmd_size, 2 * MiB);
  cr_assert_eq (si.hugetlb_default, 2 * MiB);
  cr_assert_eq (si.n_hugetlb, 2);
  cr_assert_eq (si.hugetlb_sizes[0], 2 * MiB);
  cr_assert_eq (si.hugetlb_sizes[1], GiB);
  cr_assert_eq (free_of (&si, 2 * MiB), 500);
  cr_assert_eq (free_of (&si, GiB), 1);
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
}

Test (probe, thp_never)
{
  struct hp_sysinfo si;

  probe_fixture ("thp-never", &si);
  cr_assert_eq (si.thp, HP_THP_NEVER);
  cr_assert_eq (si.thp_pmd_size, 2 * MiB, "the PMD size is still reported");
  cr_assert_eq (si.n_hugetlb, 1);
  cr_assert_eq (si.hugetlb_free[0], 0);
}

Test (probe, no_thp)
{
  struct hp_sysinfo si;

  probe_fixture ("no-thp", &si);
  cr_assert_eq (si.base_page, 4096);
  cr_assert_eq (si.thp, HP_THP_UNSUPPORTED);
  cr_assert_eq (si.thp_pmd_size, 0);
  cr_assert_eq (si.hugetlb_default, 0);
  cr_assert_eq (si.n_hugetlb, 0);
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
}

Test (probe, power9_hash)
{
  struct hp_sysinfo si;

  probe_fixture ("power9-hash", &si);
  cr_assert_eq (si.base_page, 65536);
  cr_assert_eq (si.thp, HP_THP_ALWAYS);
  cr_assert_eq (si.thp_pmd_size, 16 * MiB);
  cr_assert_eq (si.hugetlb_default, 16 * MiB);
  cr_assert_eq (si.n_hugetlb, 2);
  cr_assert_eq (si.hugetlb_sizes[0], 16 * MiB);
  cr_assert_eq (si.hugetlb_sizes[1], 16 * GiB);
  cr_assert_eq (si.hugetlb_free[0], 30);
  cr_assert_eq (si.mmu, HP_MMU_HASH);
  cr_assert_eq (si.seg_1t, 1, "segment sizes list 40");
}

Test (probe, power9_radix)
{
  struct hp_sysinfo si;

  probe_fixture ("power9-radix", &si);
  cr_assert_eq (si.base_page, 65536);
  cr_assert_eq (si.thp, HP_THP_MADVISE);
  cr_assert_eq (si.thp_pmd_size, 2 * MiB);
  cr_assert_eq (si.hugetlb_default, 2 * MiB);
  cr_assert (has_size (&si, 2 * MiB) && has_size (&si, GiB));
  cr_assert_eq (si.mmu, HP_MMU_RADIX);
  cr_assert_eq (si.seg_1t, 0, "radix has no segments");
}

Test (probe, power8_no_mmu_line)
{
  struct hp_sysinfo si;

  probe_fixture ("power8-nommu", &si);
  cr_assert_eq (si.base_page, 65536);
  cr_assert_eq (si.thp_pmd_size, 16 * MiB);
  cr_assert_eq (si.mmu, HP_MMU_HASH, "inferred from the 16 MiB PMD");
  cr_assert_eq (si.seg_1t, 1, "no device tree: POWER8 is assumed to have 1 TiB segments");
}

Test (probe, power_4k_base_pages)
{
  struct hp_sysinfo si;

  probe_fixture ("power-4k", &si);
  cr_assert_eq (si.base_page, 4096);
  cr_assert_eq (si.thp, HP_THP_UNSUPPORTED, "hash with 4 KiB pages has no THP");
  cr_assert_eq (si.thp_pmd_size, 0);
  cr_assert_eq (si.hugetlb_default, 16 * MiB);
  cr_assert_eq (si.n_hugetlb, 2);
  cr_assert_eq (si.hugetlb_free[0], 8);
  cr_assert_eq (si.mmu, HP_MMU_HASH, "inferred from the 16 MiB pool");
  cr_assert_eq (si.seg_1t, 0, "POWER5+ device tree lists 256 MiB segments only");
}

Test (probe, aarch64_4k)
{
  struct hp_sysinfo si;
  static const size_t sizes[] = { 64 << 10, 2 * MiB, 32 * MiB, GiB };

  probe_fixture ("aarch64-4k", &si);
  cr_assert_eq (si.base_page, 4096);
  cr_assert_eq (si.thp, HP_THP_ALWAYS);
  cr_assert_eq (si.thp_pmd_size, 2 * MiB);
  cr_assert_eq (si.hugetlb_default, 2 * MiB);
  cr_assert_eq (si.n_hugetlb, 4);
  for (unsigned i = 0; i < 4; i++)
    cr_assert_eq (si.hugetlb_sizes[i], sizes[i]);
  cr_assert_eq (free_of (&si, 2 * MiB), 128);
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
  cr_assert_eq (si.seg_1t, 0);
}

Test (probe, aarch64_64k)
{
  struct hp_sysinfo si;

  probe_fixture ("aarch64-64k", &si);
  cr_assert_eq (si.base_page, 65536);
  cr_assert_eq (si.thp, HP_THP_MADVISE);
  cr_assert_eq (si.thp_pmd_size, 512 * MiB);
  cr_assert_eq (si.hugetlb_default, 512 * MiB);
  cr_assert_eq (si.n_hugetlb, 3);
  cr_assert_eq (si.hugetlb_sizes[0], 2 * MiB);
  cr_assert_eq (si.hugetlb_sizes[1], 512 * MiB);
  cr_assert_eq (si.hugetlb_sizes[2], 16 * GiB);
  cr_assert_eq (free_of (&si, 512 * MiB), 3);
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
}

Test (probe, every_fixture_is_consistent)
{
  static const char *const names[] = { "x86_64-2m", "x86_64-1g", "thp-never", "no-thp",
                                       "power9-hash", "power9-radix", "power8-nommu",
                                       "power-4k", "aarch64-4k", "aarch64-64k" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    {
      struct hp_sysinfo si;
      probe_fixture (names[i], &si);
      assert_sizes_ascending (&si);
      cr_assert (is_pow2 (si.base_page), "%s", names[i]);
      cr_assert (si.thp_pmd_size == 0 || is_pow2 (si.thp_pmd_size), "%s", names[i]);
      cr_assert (si.thp == HP_THP_UNSUPPORTED || si.thp_pmd_size > si.base_page, "%s", names[i]);
      cr_assert (si.hugetlb_default == 0 || has_size (&si, si.hugetlb_default), "%s", names[i]);
    }
}

Test (probe, explicit_base_page_wins)
{
  char root[1024];
  struct hp_sysinfo si;

  fixture_root ("power9-hash", root, sizeof root);
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.base_page, 4096);
}

Test (probe, test_build_takes_root_from_environment)
{
  char root[1024];
  struct hp_sysinfo si;

  fixture_root ("aarch64-64k", root, sizeof root);
  setenv ("HPMALLOC_TEST_SYSROOT", root, 1);
  hp_sys_probe (&si);
  unsetenv ("HPMALLOC_TEST_SYSROOT");
  cr_assert_eq (si.base_page, 65536);
  cr_assert_eq (si.thp_pmd_size, 512 * MiB);
}

/* ================================================================ probe: this machine */

Test (probe, live)
{
  struct hp_sysinfo si, si2;
  struct stat st;

  hp_sys_probe_root (&si, "", 0);
  cr_assert_eq (si.base_page, (size_t) sysconf (_SC_PAGESIZE));
  if (strcmp (hp_arch_name (), "x86_64") == 0)
    cr_assert_eq (si.base_page, 4096);
  cr_assert (si.thp >= HP_THP_UNSUPPORTED && si.thp <= HP_THP_UNKNOWN, "thp %d", (int) si.thp);
  if (stat ("/sys/kernel/mm/transparent_hugepage/enabled", &st) == 0)
    {
      cr_assert_neq (si.thp, HP_THP_UNSUPPORTED);
      if (strcmp (hp_arch_name (), "x86_64") == 0)
        cr_assert_eq (si.thp_pmd_size, 2 * MiB);
    }
  cr_assert (si.mmu >= HP_MMU_UNKNOWN && si.mmu <= HP_MMU_RADIX);
  assert_sizes_ascending (&si);
  cr_assert (si.hugetlb_default == 0 || has_size (&si, si.hugetlb_default));
  hp_sys_probe (&si2);
  cr_assert_eq (si2.base_page, si.base_page);
  cr_assert_eq (si2.thp, si.thp);
  cr_assert_eq (si2.n_hugetlb, si.n_hugetlb);
}

/* ================================================================ probe: broken trees */

Test (probe, missing_root)
{
  struct hp_sysinfo si;

  hp_sys_probe_root (&si, "/nonexistent/hpmalloc-root", 0);
  cr_assert_eq (si.base_page, hp_os_page_size ());
  /* no /sys at all: nothing is known, the system calls will be asked */
  cr_assert_eq (si.thp, HP_THP_UNKNOWN);
  cr_assert_eq (si.thp_pmd_size, hp_arch_default_pmd (&si), "the architecture's PMD, as a candidate");
  cr_assert_eq (si.hugetlb_unknown, 1);
  cr_assert_eq (si.hugetlb_default, 0);
  cr_assert_eq (si.n_hugetlb, 0);
  cr_assert_eq (si.mmu, HP_MMU_UNKNOWN);
  cr_assert_eq (si.seg_1t, 0);
  cr_assert_not_null (si.arch);
}

Test (probe, root_too_long_for_paths)
{
  char root[700];
  struct hp_sysinfo si;

  memset (root, 'a', sizeof root - 1);
  root[0] = '/';
  root[sizeof root - 1] = '\0';
  hp_sys_probe_root (&si, root, 0);
  cr_assert_eq (si.thp, HP_THP_UNKNOWN, "no file could be read");
  cr_assert_eq (si.n_hugetlb, 0);
  cr_assert_eq (si.hugetlb_unknown, 1);
}

/* /sys/kernel/mm readable but without transparent_hugepage or hugepages:
   a kernel without THP and hugetlbfs, which is known, not unknown.  */
Test (probe, mm_without_thp_is_known)
{
  struct hp_sysinfo si;

  probe_fixture ("no-thp", &si);
  cr_assert_eq (si.thp, HP_THP_UNSUPPORTED);
  cr_assert_eq (si.hugetlb_unknown, 0);
}

/* The enabled file there but unreadable (EACCES, not as root): unknown.
   As root every file is readable, so this runs only for other users.  */
Test (probe, enabled_unreadable_is_unknown)
{
  char root[256];
  struct hp_sysinfo si;

  if (geteuid () == 0)
    cr_skip_test ("root reads a mode-000 file");
  tmp_root (root, sizeof root);
  put (root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  char path[512];
  snprintf (path, sizeof path, "%s/sys/kernel/mm/transparent_hugepage/enabled", root);
  chmod (path, 0);
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.thp, HP_THP_UNKNOWN);
  rm_tree (root);
}

Test (probe, garbage_files)
{
  char root[256], junk[9000];
  struct hp_sysinfo si;

  tmp_root (root, sizeof root);
  put (root, "/hpmalloc-base-page", "banana\n");
  put (root, "/sys/kernel/mm/transparent_hugepage/enabled", "always madvise never\n");
  put (root, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152 bytes\n");
  put (root, "/proc/meminfo", "MemTotal: 1 kB\nHugepagesize:     lots kB\n");
  put (root, "/sys/kernel/mm/hugepages/hugepages-3000kB/free_hugepages", "1\n");
  put (root, "/sys/kernel/mm/hugepages/hugepages-kB/free_hugepages", "1\n");
  put (root, "/sys/kernel/mm/hugepages/hugepages-4096kBx/free_hugepages", "1\n");
  put (root, "/sys/kernel/mm/hugepages/hugepagesX/free_hugepages", "1\n");
  put (root, "/sys/kernel/mm/hugepages/hugepages-99999999999999999999999kB/free_hugepages", "1\n");
  put (root, "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "x\n");
  memset (junk, 'z', sizeof junk);
  junk[10] = '\0';
  junk[20] = ':';
  put_bytes (root, "/proc/cpuinfo", junk, sizeof junk);
  hp_sys_probe_root (&si, root, 0);
  cr_assert_eq (si.base_page, hp_os_page_size ());
  cr_assert_eq (si.thp, HP_THP_UNSUPPORTED);
  cr_assert_eq (si.thp_pmd_size, 0);
  cr_assert_eq (si.hugetlb_default, 0);
  cr_assert_eq (si.n_hugetlb, 1, "only hugepages-2048kB is a pool");
  cr_assert_eq (si.hugetlb_sizes[0], 2 * MiB);
  cr_assert_eq (si.hugetlb_free[0], 0);
  cr_assert_eq (si.mmu, HP_MMU_PAGE_TABLE);
  rm_tree (root);
}

Test (probe, thp_words_that_are_not_modes)
{
  char root[256];
  struct hp_sysinfo si;

  tmp_root (root, sizeof root);
  put (root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [sometimes] never\n");
  put (root, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152\n");
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.thp, HP_THP_UNSUPPORTED);
  cr_assert_eq (si.thp_pmd_size, 0, "no THP, no PMD size");
  rm_tree (root);
}

Test (probe, thp_without_pmd_file_takes_arch_default)
{
  char root[256];
  struct hp_sysinfo si;

  tmp_root (root, sizeof root);
  put (root, "/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.thp, HP_THP_ALWAYS);
  cr_assert_eq (si.thp_pmd_size, hp_arch_default_pmd (&si));
  rm_tree (root);
}

Test (probe, enabled_file_exactly_fills_the_buffer)
{
  char root[256], text[256];

  struct hp_sysinfo si;
  tmp_root (root, sizeof root);
  /* probe.c reads "enabled" into a 256-byte buffer: 255 bytes fill it.  */
  memset (text, ' ', sizeof text);
  memcpy (text, "always [madvise] never", 22);
  put_bytes (root, "/sys/kernel/mm/transparent_hugepage/enabled", text, 255);
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.thp, HP_THP_MADVISE);
  /* And one byte more: truncated, still NUL-terminated, still parsed.  */
  put_bytes (root, "/sys/kernel/mm/transparent_hugepage/enabled", text, 256);
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.thp, HP_THP_MADVISE);
  rm_tree (root);
}

Test (probe, power_segments_file_garbage_falls_back_to_cpu)
{
  char root[256];
  static const unsigned char three[3] = { 0, 0, 0x28 };
  struct hp_sysinfo si;

  tmp_root (root, sizeof root);
  put (root, "/proc/cpuinfo", "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n\n"
                              "timebase\t: 512000000\nMMU\t\t: Hash\n");
  put_bytes (root, "/proc/device-tree/cpus/PowerPC,POWER9@0/ibm,processor-segment-sizes", three, 3);
  hp_sys_probe_root (&si, root, 65536);
  cr_assert_eq (si.mmu, HP_MMU_HASH);
  cr_assert_eq (si.seg_1t, 1, "unreadable property: POWER9 assumed to have 1 TiB segments");
  put (root, "/proc/cpuinfo", "processor\t: 0\ncpu\t\t: PPC970MP, altivec supported\n\n"
                              "MMU\t\t: Hash\n");
  hp_sys_probe_root (&si, root, 65536);
  cr_assert_eq (si.seg_1t, 0, "PPC970 gets no 1 TiB segments");
  rm_tree (root);
}

Test (probe, hugetlb_sizes_beyond_the_table)
{
  char root[256], rel[128];
  struct hp_sysinfo si;

  tmp_root (root, sizeof root);
  for (unsigned i = 0; i < HP_MAX_HUGE_SIZES + 3; i++)
    {
      snprintf (rel, sizeof rel, "/sys/kernel/mm/hugepages/hugepages-%lukB/free_hugepages",
                64ul << (HP_MAX_HUGE_SIZES + 2 - i));
      put (root, rel, "0\n");
    }
  hp_sys_probe_root (&si, root, 4096);
  cr_assert_eq (si.n_hugetlb, HP_MAX_HUGE_SIZES);
  assert_sizes_ascending (&si);
  cr_assert_eq (si.hugetlb_sizes[0], 64 << 10, "the smallest sizes are kept");
  rm_tree (root);
}

/* ================================================================ readers */

Test (readers, file_exactly_filling_the_buffer)
{
  char root[256], path[300];
  struct {
    char buf[16];
    char canary[8];
  } b;

  tmp_root (root, sizeof root);
  snprintf (path, sizeof path, "%s/f", root);
  put (root, "/f", "0123456789abcde");  /* 15 bytes: fills buf with its NUL */
  memset (&b, 'X', sizeof b);
  cr_assert_eq (hp_linux_read_file (path, b.buf, sizeof b.buf), 15);
  cr_assert_str_eq (b.buf, "0123456789abcde");
  put (root, "/f", "0123456789abcdef!");  /* longer: truncated */
  memset (&b, 'X', sizeof b);
  cr_assert_eq (hp_linux_read_file (path, b.buf, sizeof b.buf), 15);
  cr_assert_eq (b.buf[15], '\0');
  cr_assert_eq (memcmp (b.canary, "XXXXXXXX", 8), 0, "wrote past the buffer");
  rm_tree (root);
}

Test (readers, empty_and_missing_files)
{
  char root[256], path[300], buf[8] = "garbage";

  tmp_root (root, sizeof root);
  snprintf (path, sizeof path, "%s/empty", root);
  put (root, "/empty", "");
  cr_assert_eq (hp_linux_read_file (path, buf, sizeof buf), 0);
  cr_assert_eq (buf[0], '\0');
  snprintf (path, sizeof path, "%s/none", root);
  errno = 0;
  cr_assert_eq (hp_linux_read_file (path, buf, sizeof buf), -1);
  cr_assert_eq (errno, ENOENT);
  errno = 0;
  cr_assert_eq (hp_linux_read_file (root, buf, sizeof buf), -1, "a directory is not read");
  cr_assert_eq (errno, EISDIR);
  errno = 0;
  cr_assert_eq (hp_linux_read_file (path, buf, 0), -1);
  cr_assert_eq (errno, EINVAL);
  rm_tree (root);
}

struct collect {
  char lines[16][64];
  int n;
  int stop_at;
};

static int
collect_line (char *line, void *ctx)
{
  struct collect *c = ctx;

  if (c->n < 16)
    snprintf (c->lines[c->n], sizeof c->lines[0], "%s", line);
  c->n++;
  return c->n == c->stop_at;
}

Test (readers, lines_across_reads_and_too_long)
{
  char root[256], path[300], buf[8];
  struct collect c = { .stop_at = -1 };

  tmp_root (root, sizeof root);
  snprintf (path, sizeof path, "%s/l", root);
  put (root, "/l", "a\nbcdef\n\nthis line is too long\nxy: 1\n1234567\nlast");
  cr_assert_eq (hp_linux_read_lines (path, buf, sizeof buf, collect_line, &c), 0);
  cr_assert_eq (c.n, 5);
  cr_assert_str_eq (c.lines[0], "a");
  cr_assert_str_eq (c.lines[1], "bcdef");
  cr_assert_str_eq (c.lines[2], "");
  cr_assert_str_eq (c.lines[3], "xy: 1");
  cr_assert_str_eq (c.lines[4], "last", "1234567 (8 with its newline) does not fit");
  /* a last line without '\n' that does not fit is dropped too */
  struct collect t = { .stop_at = -1 };
  put (root, "/l", "a\nbbbbbbbbbbbb");
  cr_assert_eq (hp_linux_read_lines (path, buf, sizeof buf, collect_line, &t), 0);
  cr_assert_eq (t.n, 1);
  cr_assert_str_eq (t.lines[0], "a");
  rm_tree (root);
}

Test (readers, lines_stop_early_and_missing)
{
  char root[256], path[300], buf[64];
  struct collect c = { .stop_at = 2 };

  tmp_root (root, sizeof root);
  snprintf (path, sizeof path, "%s/l", root);
  put (root, "/l", "one\ntwo\nthree\n");
  cr_assert_eq (hp_linux_read_lines (path, buf, sizeof buf, collect_line, &c), 0);
  cr_assert_eq (c.n, 2);
  snprintf (path, sizeof path, "%s/none", root);
  cr_assert_eq (hp_linux_read_lines (path, buf, sizeof buf, collect_line, &c), -1);
  c.n = 0;
  cr_assert_eq (hp_linux_read_lines (root, buf, sizeof buf, collect_line, &c), -1, "a directory: read error");
  cr_assert_eq (c.n, 0);
  errno = 0;
  cr_assert_eq (hp_linux_read_lines (root, buf, 1, collect_line, &c), -1, "no room for a line");
  cr_assert_eq (errno, EINVAL);
  rm_tree (root);
}

Test (readers, parse_u64)
{
  const char *s = "  42 kB", *big = "18446744073709551616", *max = "18446744073709551615";
  uint64_t v = 0;

  cr_assert_eq (hp_linux_parse_u64 (&s, &v), 0);
  cr_assert_eq (v, 42);
  cr_assert_str_eq (s, " kB");
  cr_assert_eq (hp_linux_parse_u64 (&big, &v), -1, "overflow");
  cr_assert_eq (hp_linux_parse_u64 (&max, &v), 0);
  cr_assert_eq (v, UINT64_MAX);
  s = "kB";
  cr_assert_eq (hp_linux_parse_u64 (&s, &v), -1);
}

Test (readers, thp_modes)
{
  cr_assert_eq (hp_linux_parse_thp ("[always] madvise never\n"), HP_THP_ALWAYS);
  cr_assert_eq (hp_linux_parse_thp ("always [madvise] never\n"), HP_THP_MADVISE);
  cr_assert_eq (hp_linux_parse_thp ("always madvise [never]\n"), HP_THP_NEVER);
  cr_assert_eq (hp_linux_parse_thp ("always madvise never\n"), HP_THP_UNSUPPORTED);
  cr_assert_eq (hp_linux_parse_thp ("always [madvise never\n"), HP_THP_UNSUPPORTED);
  cr_assert_eq (hp_linux_parse_thp ("always inherit [inherit] never"), HP_THP_UNSUPPORTED);
  cr_assert_eq (hp_linux_parse_thp ("[alwaysx]"), HP_THP_UNSUPPORTED);
  cr_assert_eq (hp_linux_parse_thp (""), HP_THP_UNSUPPORTED);
}

Test (readers, cpu_lists)
{
  cr_assert_eq (hp_linux_count_cpulist ("0\n"), 1);
  cr_assert_eq (hp_linux_count_cpulist ("0-1\n"), 2);
  cr_assert_eq (hp_linux_count_cpulist ("0-3,8,10-11\n"), 7);
  cr_assert_eq (hp_linux_count_cpulist ("0-255"), 256);
  cr_assert_eq (hp_linux_count_cpulist (""), 0);
  cr_assert_eq (hp_linux_count_cpulist ("3-1"), 0);
  cr_assert_eq (hp_linux_count_cpulist ("0-3,"), 0);
  cr_assert_eq (hp_linux_count_cpulist ("zero"), 0);
  cr_assert_eq (hp_linux_count_cpulist ("0-"), 0);
  cr_assert_eq (hp_linux_count_cpulist ("1x"), 0);
  cr_assert_eq (hp_linux_count_cpulist ("0-2000000"), 0, "beyond any machine");
}

Test (readers, segment_sizes)
{
  static const unsigned char p9[16] = { 0, 0, 0, 0x1c, 0, 0, 0, 0x28, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff };
  static const unsigned char p5[8] = { 0, 0, 0, 0x1c, 0xff, 0xff, 0xff, 0xff };
  static const unsigned char le[4] = { 0x28, 0, 0, 0 };

  cr_assert_eq (hp_linux_seg_sizes_have_1t (p9, sizeof p9), 1);
  cr_assert_eq (hp_linux_seg_sizes_have_1t (p5, sizeof p5), 0);
  cr_assert_eq (hp_linux_seg_sizes_have_1t (le, sizeof le), 0, "cells are big-endian");
  cr_assert_eq (hp_linux_seg_sizes_have_1t (p9, 7), -1);
  cr_assert_eq (hp_linux_seg_sizes_have_1t (p9, 0), -1);
}

/* ================================================================ placement */

typedef void (*policy_fn) (const struct hp_sysinfo *, struct hp_placement *);

/* Invariants every policy keeps on any input.  */
static void
assert_placement_sane (const struct hp_sysinfo *si, const struct hp_placement *pl)
{
  size_t dl = strnlen (pl->desc, sizeof pl->desc);

  cr_assert_lt (dl, sizeof pl->desc, "desc is NUL-terminated");
  cr_assert_gt (dl, 10);
  cr_assert (is_pow2 (pl->align) && pl->align >= hp_pl_base_page (si), "align %zx", pl->align);
  cr_assert (is_pow2 (pl->huge_align) && pl->huge_align >= pl->align / 1024);
  cr_assert_eq (pl->hint % pl->align, 0);
  cr_assert_eq (pl->huge_hint % pl->huge_align, 0);
  cr_assert (pl->limit == 0 || pl->hint < pl->limit);
  cr_assert (pl->limit == 0 || pl->huge_hint < pl->limit);
}

static void
place (const char *fixture, policy_fn fn, struct hp_sysinfo *si, struct hp_placement *pl)
{
  probe_fixture (fixture, si);
  memset (pl, 0x5a, sizeof *pl);
  fn (si, pl);
  assert_placement_sane (si, pl);
}

/* The heap alignment holds whole PMD pages of the fixture's own arch.  */
static void
assert_fits_pmd (const struct hp_sysinfo *si, const struct hp_placement *pl)
{
  if (si->thp_pmd_size != 0)
    cr_assert_eq (pl->align % si->thp_pmd_size, 0, "align %zx pmd %zx", pl->align, si->thp_pmd_size);
}

Test (placement, x86_64)
{
  static const char *const names[] = { "x86_64-2m", "x86_64-1g", "thp-never", "no-thp" };
  struct hp_sysinfo si;
  struct hp_placement pl;

  for (size_t i = 0; i < 4; i++)
    {
      place (names[i], hp_placement_x86_64, &si, &pl);
      cr_assert_eq (pl.align, GiB, "%s", names[i]);
      cr_assert_eq (pl.hint, 0);
      cr_assert_eq (pl.huge_align, GiB);
      cr_assert_eq (pl.limit, 128 * TiB);
      assert_fits_pmd (&si, &pl);
      cr_assert_str_eq (pl.desc, "x86_64: heap aligned to 1 GiB, hint none, below 128 TiB");
    }
}

Test (placement, powerpc64_hash)
{
  struct hp_sysinfo si;
  struct hp_placement pl;

  place ("power9-hash", hp_placement_powerpc64, &si, &pl);
  cr_assert_geq (pl.hint, TiB, "heap in 1 TiB segments");
  cr_assert_eq (pl.hint % TiB, 0);
  cr_assert_neq (pl.huge_hint / TiB, pl.hint / TiB, "hugetlb in a slice of its own");
  cr_assert_eq (pl.huge_align, TiB, "each hugetlb region starts a slice");
  cr_assert_eq (pl.align, 256 * MiB);
  cr_assert_eq (pl.limit, 128 * TiB);
  assert_fits_pmd (&si, &pl);
  cr_assert (strstr (pl.desc, "hash") && strstr (pl.desc, "1T seg"), "%s", pl.desc);
  cr_assert (strstr (pl.desc, "below 128 TiB") != NULL, "not truncated: %s", pl.desc);

  place ("power8-nommu", hp_placement_powerpc64, &si, &pl);
  cr_assert_geq (pl.hint, TiB);
  cr_assert_neq (pl.huge_hint / TiB, pl.hint / TiB);
}

Test (placement, powerpc64_hash_4k)
{
  struct hp_sysinfo si;
  struct hp_placement pl;

  place ("power-4k", hp_placement_powerpc64, &si, &pl);
  cr_assert_geq (pl.hint, TiB);
  cr_assert_eq (pl.limit, 64 * TiB, "4 KiB kernels end user space at 64 TiB");
  cr_assert (strstr (pl.desc, "256M seg") && strstr (pl.desc, "below 64 TiB"), "%s", pl.desc);
}

Test (placement, powerpc64_radix_like_x86_64)
{
  struct hp_sysinfo si;
  struct hp_placement pl;

  place ("power9-radix", hp_placement_powerpc64, &si, &pl);
  cr_assert_eq (pl.hint, 0);
  cr_assert_eq (pl.align, GiB);
  cr_assert_eq (pl.huge_hint, 0);
  cr_assert_eq (pl.huge_align, GiB);
  cr_assert_eq (pl.limit, 128 * TiB);
  assert_fits_pmd (&si, &pl);
  cr_assert_str_eq (pl.desc, "powerpc64 radix: heap aligned to 1 GiB, hint none, below 128 TiB");
}

Test (placement, aarch64_granules)
{
  struct hp_sysinfo si;
  struct hp_placement pl;

  place ("aarch64-4k", hp_placement_aarch64, &si, &pl);
  cr_assert_eq (pl.align, GiB, "4K granule: PUD");
  cr_assert_eq (pl.hint, 0);
  cr_assert_eq (pl.limit, 256 * TiB);
  assert_fits_pmd (&si, &pl);
  cr_assert_str_eq (pl.desc, "aarch64 4 KiB granule: heap aligned to 1 GiB, hint none, below 256 TiB");

  place ("aarch64-64k", hp_placement_aarch64, &si, &pl);
  cr_assert_eq (pl.align, 512 * MiB, "64K granule: PMD");
  assert_fits_pmd (&si, &pl);
  cr_assert_str_eq (pl.desc, "aarch64 64 KiB granule: heap aligned to 512 MiB, hint none, below 256 TiB");

  memset (&si, 0, sizeof si);
  si.base_page = 16384;
  si.thp_pmd_size = 32 * MiB;
  hp_placement_aarch64 (&si, &pl);
  assert_placement_sane (&si, &pl);
  cr_assert_eq (pl.align, 32 * MiB, "16K granule: PMD");
  cr_assert_eq (pl.limit, 128 * TiB);
}

Test (placement, generic)
{
  struct hp_sysinfo si;
  struct hp_placement pl;

  place ("x86_64-2m", hp_placement_generic, &si, &pl);
  cr_assert_eq (pl.align, 2 * MiB, "the THP PMD when there is one");
  cr_assert_eq (pl.hint, 0);
  cr_assert_eq (pl.limit, 0);
  place ("no-thp", hp_placement_generic, &si, &pl);
  cr_assert_eq (pl.align, 4096);
  cr_assert_str_eq (pl.desc, "generic: heap aligned to 4 KiB, hint none, no limit");
}

Test (placement, every_policy_on_every_fixture)
{
  static const char *const names[] = { "x86_64-2m", "x86_64-1g", "thp-never", "no-thp",
                                       "power9-hash", "power9-radix", "power8-nommu",
                                       "power-4k", "aarch64-4k", "aarch64-64k" };
  static const policy_fn fns[] = { hp_placement_x86_64, hp_placement_powerpc64,
                                   hp_placement_aarch64, hp_placement_generic };
  struct hp_sysinfo si;
  struct hp_placement pl;

  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    for (size_t f = 0; f < 4; f++)
      place (names[i], fns[f], &si, &pl);
  memset (&si, 0, sizeof si);  /* nothing probed at all */
  for (size_t f = 0; f < 4; f++)
    {
      fns[f](&si, &pl);
      assert_placement_sane (&si, &pl);
    }
}

Test (placement, default_pmd)
{
  struct hp_sysinfo si;

  memset (&si, 0, sizeof si);
  si.base_page = 4096;
  si.mmu = HP_MMU_PAGE_TABLE;
  cr_assert_eq (hp_default_pmd_x86_64 (&si), 2 * MiB);
  cr_assert_eq (hp_default_pmd_aarch64 (&si), 2 * MiB);
  cr_assert_eq (hp_default_pmd_generic (&si), 0);
  si.base_page = 16384;
  cr_assert_eq (hp_default_pmd_aarch64 (&si), 32 * MiB);
  si.base_page = 65536;
  cr_assert_eq (hp_default_pmd_aarch64 (&si), 512 * MiB);
  si.mmu = HP_MMU_HASH;
  cr_assert_eq (hp_default_pmd_powerpc64 (&si), 16 * MiB);
  si.base_page = 4096;
  cr_assert_eq (hp_default_pmd_powerpc64 (&si), 0, "no THP on hash with 4 KiB pages");
  si.mmu = HP_MMU_RADIX;
  cr_assert_eq (hp_default_pmd_powerpc64 (&si), 2 * MiB);
}

Test (placement, build_arch_uses_its_policy)
{
  static const struct {
    const char *arch;
    policy_fn fn;
  } map[] = { { "x86_64", hp_placement_x86_64 }, { "powerpc64", hp_placement_powerpc64 },
              { "aarch64", hp_placement_aarch64 }, { "generic", hp_placement_generic } };
  struct hp_sysinfo si;
  struct hp_placement a, b;
  int found = 0;

  hp_sys_probe (&si);
  hp_arch_placement (&si, &a);
  assert_placement_sane (&si, &a);
  for (size_t i = 0; i < 4; i++)
    if (strcmp (map[i].arch, hp_arch_name ()) == 0)
      {
        map[i].fn (&si, &b);
        cr_assert_eq (memcmp (&a, &b, sizeof a), 0);
        found = 1;
      }
  cr_assert (found, "unknown arch name %s", hp_arch_name ());
}

/* ================================================================ OS primitives, live */

static size_t
page (void)
{
  return hp_os_page_size ();
}

Test (os, map_and_unmap)
{
  size_t len = 4 * page ();
  unsigned char *p = hp_os_map (NULL, len, HP_PROT_RW, 0, 0);

  cr_assert_not_null (p);
  cr_assert_eq ((uintptr_t) p % page (), 0);
  for (size_t i = 0; i < len; i += page ())
    cr_assert_eq (p[i], 0, "fresh anonymous memory reads zero");
  memset (p, 0xab, len);
  cr_assert_eq (hp_os_unmap (p, len), 0);
  cr_assert_null (hp_os_map (NULL, 0, HP_PROT_RW, 0, 0), "zero length");
  cr_assert_eq (errno, EINVAL);
}

Test (os, reserve_then_commit)
{
  size_t len = 16 * page ();
  unsigned char *p = hp_os_map (NULL, len, HP_PROT_NONE, HP_MAP_NORESERVE, 0);

  cr_assert_not_null (p);
  cr_assert_eq (hp_os_protect (p, 2 * page (), HP_PROT_RW), 0);
  p[0] = 1;
  p[2 * page () - 1] = 2;
  cr_assert_eq (hp_os_protect (p, 2 * page (), HP_PROT_NONE), 0);
  cr_assert_eq (hp_os_unmap (p, len), 0);
}

Test (os, fixed_noreplace_refuses_an_occupied_range)
{
  size_t len = 4 * page ();
  unsigned char *a = hp_os_map (NULL, len, HP_PROT_RW, 0, 0);
  void *b;

  cr_assert_not_null (a);
  a[0] = 42;
  errno = 0;
  b = hp_os_map (a + page (), 2 * page (), HP_PROT_RW, HP_MAP_FIXED_NOREPLACE, 0);
  cr_assert_null (b, "mapped over an existing mapping");
  cr_assert_eq (errno, EEXIST);
  cr_assert_eq (a[0], 42);
  cr_assert_eq (hp_os_unmap (a, len), 0);
}

Test (os, fixed_noreplace_takes_a_free_range)
{
  size_t len = 8 * page ();
  unsigned char *a = hp_os_map (NULL, len, HP_PROT_NONE, HP_MAP_NORESERVE, 0);
  void *b;

  cr_assert_not_null (a);
  cr_assert_eq (hp_os_unmap (a + 4 * page (), 4 * page ()), 0);
  b = hp_os_map (a + 4 * page (), 4 * page (), HP_PROT_RW, HP_MAP_FIXED_NOREPLACE, 0);
  cr_assert_eq (b, a + 4 * page ());
  cr_assert_eq (hp_os_unmap (a, len), 0);
}

Test (os, fixed_replaces)
{
  size_t len = 4 * page ();
  unsigned char *a = hp_os_map (NULL, len, HP_PROT_RW, 0, 0);
  unsigned char *b;

  cr_assert_not_null (a);
  a[page ()] = 7;
  b = hp_os_map (a + page (), page (), HP_PROT_RW, HP_MAP_FIXED, 0);
  cr_assert_eq (b, a + page ());
  cr_assert_eq (b[0], 0, "a fresh page replaced the old one");
  cr_assert_eq (hp_os_unmap (a, len), 0);
}

static long
nr_hugepages (void)
{
  char buf[64];
  const char *p = buf;
  uint64_t v;

  if (hp_linux_read_file ("/proc/sys/vm/nr_hugepages", buf, sizeof buf) <= 0
      || hp_linux_parse_u64 (&p, &v) != 0)
    return -1;
  return (long) v;
}

Test (os, hugetlb_on_an_empty_pool_fails)
{
  struct hp_sysinfo si;
  long nr = nr_hugepages ();

  if (nr != 0)
    cr_skip_test ("the hugetlb pool is not empty here (nr_hugepages %ld)", nr);
  hp_sys_probe (&si);
  errno = 0;
  cr_assert_null (hp_os_map (NULL, 2 * MiB, HP_PROT_RW, HP_MAP_HUGETLB, 0));
  cr_assert_neq (errno, 0);
  for (unsigned i = 0; i < si.n_hugetlb; i++)
    {
      size_t hs = si.hugetlb_sizes[i];
      if (si.hugetlb_free[i] != 0)
        continue;
      cr_assert_null (hp_os_map (NULL, hs, HP_PROT_RW, HP_MAP_HUGETLB, hs), "size %zu", hs);
    }
}

Test (os, hugetlb_size_must_be_a_power_of_two)
{
  errno = 0;
  cr_assert_null (hp_os_map (NULL, 6 * MiB, HP_PROT_RW, HP_MAP_HUGETLB, 3 * MiB));
  cr_assert_eq (errno, EINVAL);
}

Test (os, advise)
{
  size_t len = 4 * MiB;
  unsigned char *p = hp_os_map (NULL, len, HP_PROT_RW, HP_MAP_NORESERVE, 0);
  struct stat st;
  int r;

  cr_assert_not_null (p);
  if (stat ("/sys/kernel/mm/transparent_hugepage", &st) == 0)
    {
      cr_assert_eq (hp_os_advise (p, len, HP_ADV_HUGEPAGE), 0, "errno %d", errno);
      cr_assert_eq (hp_os_advise (p, len, HP_ADV_NOHUGEPAGE), 0, "errno %d", errno);
    }
  memset (p, 0xcd, 2 * page ());
  cr_assert_eq (hp_os_advise (p, 2 * page (), HP_ADV_DONTNEED), 0);
  cr_assert_eq (p[0], 0, "DONTNEED reads back zero");
  cr_assert_eq (p[2 * page () - 1], 0);
  /* COLLAPSE exists from Linux 6.1; either answer is fine, a crash is not.  */
  r = hp_os_advise (p, len, HP_ADV_COLLAPSE);
  cr_assert (r == 0 || errno == EINVAL || errno == EAGAIN || errno == ENOMEM, "errno %d", errno);
  errno = 0;
  cr_assert_eq (hp_os_advise (p, len, (enum hp_advice) 99), -1);
  cr_assert_eq (errno, EINVAL);
  cr_assert_eq (hp_os_unmap (p, len), 0);
}

Test (os, remap_grows_in_place_or_moves)
{
  size_t pg = page ();
  unsigned char *r = hp_os_map (NULL, 32 * pg, HP_PROT_NONE, HP_MAP_NORESERVE, 0), *b;

  cr_assert_not_null (r);
  /* r[0, 2) is the mapping, r[2, 8) a hole, r[8, 32) a neighbour.  */
  cr_assert_eq (hp_os_protect (r, 2 * pg, HP_PROT_RW), 0);
  cr_assert_eq (hp_os_unmap (r + 2 * pg, 6 * pg), 0);
  r[0] = 11;
  b = hp_os_remap (r, 2 * pg, 8 * pg, 0);
  cr_assert_eq (b, r, "grows in place into the hole");
  b[8 * pg - 1] = 1;
  errno = 0;
  cr_assert_null (hp_os_remap (r, 8 * pg, 16 * pg, 0), "the neighbour blocks it");
  cr_assert_eq (errno, ENOMEM);
  b = hp_os_remap (r, 8 * pg, 16 * pg, 1);
  cr_assert_not_null (b);
  cr_assert_neq (b, r, "moved");
  cr_assert_eq (b[0], 11);
  cr_assert_eq (b[8 * pg - 1], 1);
  cr_assert_eq (hp_os_unmap (b, 16 * pg), 0);
  cr_assert_eq (hp_os_unmap (r + 8 * pg, 24 * pg), 0);
}

Test (os, process_facts)
{
  cpu_set_t set;
  char *const *env = hp_os_environ ();
  int found = 0;

  cr_assert_eq (hp_os_page_size (), (size_t) sysconf (_SC_PAGESIZE));
  cr_assert_eq (hp_os_secure (), 0);
  cr_assert_not_null (env);
  setenv ("HPMALLOC_SYSDEPS_PROBE", "1", 1);
  env = hp_os_environ ();
  for (; *env != NULL; env++)
    found |= strcmp (*env, "HPMALLOC_SYSDEPS_PROBE=1") == 0;
  cr_assert (found, "hp_os_environ sees setenv");
  cr_assert_geq (hp_os_ncpus (), 1);
  if (sched_getaffinity (0, sizeof set, &set) == 0)
    cr_assert_eq (hp_os_ncpus (), (unsigned) CPU_COUNT (&set));
}

Test (os, random)
{
  unsigned char a[64], b[64], zero[64] = { 0 };

  hp_os_random (a, sizeof a);
  hp_os_random (b, sizeof b);
  cr_assert_neq (memcmp (a, b, sizeof a), 0);
  cr_assert_neq (memcmp (a, zero, sizeof a), 0);
  hp_os_random (a, 0);
  hp_os_random (a, 3);
}

Test (os, write_err, .init = cr_redirect_stderr)
{
  hp_os_write_err ("hpmalloc: ", 10);
  hp_os_write_err ("message\n", 8);
  fflush (stderr);
  cr_assert_stderr_eq_str ("hpmalloc: message\n");
}

Test (os, abort_raises_sigabrt, .signal = SIGABRT)
{
  hp_os_abort ();
}

Test (os, abort_when_sigabrt_is_blocked, .signal = SIGABRT)
{
  sigset_t set;

  sigemptyset (&set);
  sigaddset (&set, SIGABRT);
  sigprocmask (SIG_BLOCK, &set, NULL);
  hp_os_abort ();
}

static void
returning_handler (int sig)
{
  (void) sig;
}

Test (os, abort_when_a_handler_returns, .signal = SIGABRT)
{
  signal (SIGABRT, returning_handler);
  hp_os_abort ();
}

/* ================================================================ no allocation */

/* This executable's malloc: counts calls while `counting` is set and hands
   every call to glibc's.  The probe and the OS primitives must not allocate
   (they run before the allocator is ready and under its locks).  */
extern void *__libc_malloc (size_t);
extern void *__libc_calloc (size_t, size_t);
extern void *__libc_realloc (void *, size_t);
extern void __libc_free (void *);
void *malloc (size_t n);
void *calloc (size_t n, size_t m);
void *realloc (void *p, size_t n);
void free (void *p);

static volatile int counting;
static volatile unsigned long allocations;

void *
malloc (size_t n)
{
  allocations += counting;
  return __libc_malloc (n);
}

void *
calloc (size_t n, size_t m)
{
  allocations += counting;
  return __libc_calloc (n, m);
}

void *
realloc (void *p, size_t n)
{
  allocations += counting;
  return __libc_realloc (p, n);
}

void
free (void *p)
{
  __libc_free (p);
}

Test (no_alloc, probe_and_primitives)
{
  static const char *const names[] = { "x86_64-1g", "power9-hash", "power8-nommu", "power-4k",
                                       "aarch64-64k", "no-thp" };
  char roots[6][512];
  struct hp_sysinfo si;
  struct hp_placement pl;
  unsigned char rnd[32];
  void *p;

  for (size_t i = 0; i < 6; i++)
    fixture_root (names[i], roots[i], sizeof roots[i]);
  allocations = 0;
  counting = 1;
  hp_sys_probe (&si);
  hp_arch_placement (&si, &pl);
  for (size_t i = 0; i < 6; i++)
    hp_sys_probe_root (&si, roots[i], 0);
  hp_os_ncpus ();
  hp_os_random (rnd, sizeof rnd);
  p = hp_os_map (NULL, page (), HP_PROT_RW, 0, 0);
  hp_os_advise (p, page (), HP_ADV_DONTNEED);
  p = hp_os_remap (p, page (), 2 * page (), 1);
  hp_os_unmap (p, 2 * page ());
  counting = 0;
  cr_assert_eq (allocations, 0, "sysdeps called malloc %lu times", allocations);
}
