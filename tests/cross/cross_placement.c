/* SPDX-License-Identifier: MIT */
/* Cross-architecture test of sysdeps, without Criterion (there is none for
 * the cross targets): run under qemu-user by `make check-cross`.  MIT
 * licence.
 *
 *   cross_placement FIXTURES_DIR
 *
 * Prints what the build resolved on the (emulated) live system, then for
 * each fixture of the build's architecture probes it, applies the build's
 * placement, and reserves a heap region the way region.c does (hint,
 * over-reserve, trim to the alignment) to check where it landed: on
 * powerpc64 with the hash fixture, at or above 1 TiB, and hugetlb-slice
 * reservations in another 1 TiB slice.  qemu-user gives no huge pages, so
 * the live checks expect MAP_HUGETLB to fail (the fallback path) and accept
 * madvise either way.  Ends with "N passed, N failed"; exit status 1 on any
 * failure.  */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_sys.h"

#define TiB ((uint64_t) 1 << 40)

static int passed, failed;

static void
check (int ok, const char *what, const char *detail)
{
  if (ok)
    passed++;
  else
    failed++;
  printf ("  %s - %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? ": " : "", detail ? detail : "");
}

static const char *
thp_name (enum hp_thp_mode m)
{
  static const char *const n[] = { "unsupported", "never", "madvise", "always" };
  return (unsigned) m < 4 ? n[m] : "?";
}

static const char *
mmu_name (enum hp_mmu m)
{
  static const char *const n[] = { "unknown", "page-table", "hash", "radix" };
  return (unsigned) m < 4 ? n[m] : "?";
}

static void
print_sysinfo (const char *label, const struct hp_sysinfo *si, const struct hp_placement *pl)
{
  printf ("%s: arch %s, base page %zu, THP %s pmd %zu, hugetlb default %zu, mmu %s, 1T segments %s\n",
          label, si->arch, si->base_page, thp_name (si->thp), si->thp_pmd_size, si->hugetlb_default,
          mmu_name (si->mmu), si->seg_1t ? "yes" : "no");
  printf ("%s: hugetlb sizes:", label);
  for (unsigned i = 0; i < si->n_hugetlb; i++)
    printf (" %zu (free %zu)", si->hugetlb_sizes[i], si->hugetlb_free[i]);
  printf ("%s\n", si->n_hugetlb ? "" : " none");
  printf ("%s: placement: %s\n", label, pl->desc);
  printf ("%s: hint %#llx align %#zx huge_hint %#llx huge_align %#zx limit %#llx\n", label,
          (unsigned long long) pl->hint, pl->align, (unsigned long long) pl->huge_hint,
          pl->huge_align, (unsigned long long) pl->limit);
}

/* Reserve len bytes aligned to align, trying hint first: over-reserve by
   align, then unmap the head and the tail.  Returns the region or NULL.  */
static void *
reserve_aligned (uintptr_t hint, size_t len, size_t align)
{
  size_t span = len + align;
  uintptr_t p = (uintptr_t) hp_os_map ((void *) hint, span, HP_PROT_NONE, HP_MAP_NORESERVE, 0);
  uintptr_t start;

  if (p == 0)
    return NULL;
  start = (p + align - 1) & ~(uintptr_t) (align - 1);
  if (start > p)
    hp_os_unmap ((void *) p, start - p);
  if (p + span > start + len)
    hp_os_unmap ((void *) (start + len), p + span - (start + len));
  return (void *) start;
}

/* Reserve a heap region (and a hugetlb-slice region when there is a huge
   hint) as placed, commit and touch its first page, and check it.  */
static void
place_and_map (const struct hp_sysinfo *si, const struct hp_placement *pl)
{
  char d[160];
  size_t len = 4 * pl->align < ((size_t) 64 << 20) ? 4 * pl->align : ((size_t) 64 << 20);
  uintptr_t heap = (uintptr_t) reserve_aligned (pl->hint, len, pl->align);

  snprintf (d, sizeof d, "%#llx", (unsigned long long) heap);
  check (heap != 0 && heap % pl->align == 0, "heap reservation aligned", d);
  check (pl->limit == 0 || heap + len <= pl->limit, "heap below the limit", d);
  if (pl->hint != 0)
    check (heap >= pl->hint, "heap at or above the hint", d);
  if (si->mmu == HP_MMU_HASH)
    check (heap >= TiB, "hash: heap at or above 1 TiB", d);
  if (heap != 0 && hp_os_protect ((void *) heap, si->base_page, HP_PROT_RW) == 0)
    {
      *(volatile char *) heap = 1;
      check (1, "heap committed and touched", NULL);
    }
  if (pl->huge_hint != 0)
    {
      uintptr_t h = (uintptr_t) reserve_aligned (pl->huge_hint, len, pl->align);
      snprintf (d, sizeof d, "%#llx", (unsigned long long) h);
      check (h >= pl->huge_hint && h / TiB != heap / TiB, "hugetlb slice apart from the heap", d);
      if (h != 0)
        hp_os_unmap ((void *) h, len);
    }
  if (heap != 0)
    hp_os_unmap ((void *) heap, len);
}

static void
run_fixture (const char *dir, const char *name, enum hp_mmu want_mmu, size_t want_align)
{
  char root[1024], d[64];
  struct hp_sysinfo si;
  struct hp_placement pl;

  snprintf (root, sizeof root, "%s/%s", dir, name);
  hp_sys_probe_root (&si, root, 0);
  hp_arch_placement (&si, &pl);
  printf ("\n");
  print_sysinfo (name, &si, &pl);
  snprintf (d, sizeof d, "mmu %s", mmu_name (si.mmu));
  check (si.mmu == want_mmu, "probe found the fixture's MMU", d);
  snprintf (d, sizeof d, "align %#zx", pl.align);
  check (pl.align == want_align, "placement alignment", d);
  if (want_mmu == HP_MMU_HASH)
    {
      check (pl.hint >= TiB, "hash: hint at or above 1 TiB", NULL);
      check (pl.huge_hint / TiB != pl.hint / TiB, "hash: hugetlb hint in its own slice", NULL);
    }
  place_and_map (&si, &pl);
}

/* The OS primitives on the live (emulated) system.  */
static void
live_primitives (const struct hp_sysinfo *si)
{
  size_t pg = hp_os_page_size ();
  char *a = hp_os_map (NULL, 8 * pg, HP_PROT_RW, 0, 0), *b;
  char d[96];
  int r;

  check (a != NULL, "map", NULL);
  if (a == NULL)
    return;
  a[0] = 5;
  b = hp_os_map (a + pg, pg, HP_PROT_RW, HP_MAP_FIXED_NOREPLACE, 0);
  check (b == NULL && errno == EEXIST && a[0] == 5, "FIXED_NOREPLACE over a mapping refused", NULL);
  if (b != NULL && b != a + pg)
    hp_os_unmap (b, pg);
  b = hp_os_map (NULL, (size_t) 2 << 20, HP_PROT_RW, HP_MAP_HUGETLB, 0);
  snprintf (d, sizeof d, "%s (errno %d)", b ? "mapped" : "refused", b ? 0 : errno);
  check (1, "hugetlb map (qemu: refused, the fallback path)", d);
  if (b != NULL)
    hp_os_unmap (b, (size_t) 2 << 20);
  r = hp_os_advise (a, 8 * pg, HP_ADV_HUGEPAGE);
  snprintf (d, sizeof d, "%s (errno %d)", r == 0 ? "accepted" : "refused", r == 0 ? 0 : errno);
  check (1, "MADV_HUGEPAGE", d);
  check (hp_os_advise (a, pg, HP_ADV_DONTNEED) == 0, "MADV_DONTNEED", NULL);
  b = hp_os_remap (a, 8 * pg, 32 * pg, 1);
  check (b != NULL, "mremap grows (in place or moved)", NULL);
  hp_os_unmap (b ? b : a, b ? 32 * pg : 8 * pg);
  check (hp_os_ncpus () >= 1, "ncpus", NULL);
  check (si->base_page == pg, "probe base page is AT_PAGESZ", NULL);
}

int
main (int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : getenv ("HPMALLOC_TEST_FIXTURES");
  struct hp_sysinfo si;
  struct hp_placement pl;
  const char *arch = hp_arch_name ();

  if (dir == NULL)
    {
      fprintf (stderr, "usage: cross_placement FIXTURES_DIR\n");
      return 2;
    }
  hp_sys_probe (&si);
  hp_arch_placement (&si, &pl);
  print_sysinfo ("live", &si, &pl);
  live_primitives (&si);
  place_and_map (&si, &pl);
  if (strcmp (arch, "powerpc64") == 0)
    {
      run_fixture (dir, "power9-hash", HP_MMU_HASH, (size_t) 256 << 20);
      run_fixture (dir, "power8-nommu", HP_MMU_HASH, (size_t) 256 << 20);
      run_fixture (dir, "power-4k", HP_MMU_HASH, (size_t) 256 << 20);
      run_fixture (dir, "power9-radix", HP_MMU_RADIX, (size_t) 1 << 30);
    }
  else if (strcmp (arch, "aarch64") == 0)
    {
      run_fixture (dir, "aarch64-4k", HP_MMU_PAGE_TABLE, (size_t) 1 << 30);
      run_fixture (dir, "aarch64-64k", HP_MMU_PAGE_TABLE, (size_t) 512 << 20);
    }
  else if (strcmp (arch, "x86_64") == 0)
    {
      run_fixture (dir, "x86_64-1g", HP_MMU_PAGE_TABLE, (size_t) 1 << 30);
      run_fixture (dir, "x86_64-2m", HP_MMU_PAGE_TABLE, (size_t) 1 << 30);
    }
  printf ("\n%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
