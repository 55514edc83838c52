/* SPDX-License-Identifier: MIT */
/* API smoke test for cross builds, without Criterion: run under qemu-user
 * with libhpmalloc.so preloaded by `make check-cross`.  MIT licence.
 *
 *   cross_smoke [--expect-hpmalloc]
 *
 * malloc, calloc, realloc, free, memalign, posix_memalign, aligned_alloc,
 * valloc and malloc_usable_size over many sizes, from the main thread and
 * from two more, with every byte written and checked.  With
 * --expect-hpmalloc it also checks that hpmalloc is the allocator in use
 * (its extension symbols resolve) and prints its counters, so a run under
 * GLIBC_TUNABLES=glibc.malloc.hugetlb=1 or 2 shows the fallback qemu forces
 * (no huge pages there).  Ends with "N passed, N failed".  */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpmalloc.h"

static int passed, failed;

static void
check (int ok, const char *what, size_t arg)
{
  if (ok)
    {
      __atomic_fetch_add (&passed, 1, __ATOMIC_RELAXED);  /* threads check too */
      return;
    }
  __atomic_fetch_add (&failed, 1, __ATOMIC_RELAXED);
  printf ("  FAIL - %s (%zu)\n", what, arg);
}

static unsigned char
pattern (size_t seed, size_t i)
{
  return (unsigned char) (seed * 131 + i * 7 + 1);
}

static void
fill (unsigned char *p, size_t n, size_t seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = pattern (seed, i);
}

static int
verify (const unsigned char *p, size_t n, size_t seed)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern (seed, i))
      return 0;
  return 1;
}

/* Sizes from 0 to 4 MiB: every small size, then powers of two from 512
   and their neighbours (the bin, mmap-threshold and huge-page edges).  */
static size_t
nth_size (unsigned i)
{
  if (i < 300)
    return i;
  i -= 300;
  if (i >= 3 * 14)
    return 0;
  return ((size_t) 512 << (i / 3)) + (i % 3) - 1;
}

#define N_SIZES (300 + 3 * 14)

static void
malloc_free_sizes (void)
{
  static unsigned char *blocks[N_SIZES];

  for (unsigned i = 0; i < N_SIZES; i++)
    {
      size_t n = nth_size (i);
      blocks[i] = malloc (n);
      check (blocks[i] != NULL, "malloc", n);
      check (((uintptr_t) blocks[i] & 15) == 0, "malloc alignment 16", n);
      check (blocks[i] == NULL || malloc_usable_size (blocks[i]) >= n, "usable size", n);
      if (blocks[i] != NULL)
        fill (blocks[i], n, i);
    }
  for (unsigned i = 0; i < N_SIZES; i += 2)
    {
      check (verify (blocks[i], nth_size (i), i), "contents kept", nth_size (i));
      free (blocks[i]);
    }
  for (unsigned i = 1; i < N_SIZES; i += 2)
    {
      check (verify (blocks[i], nth_size (i), i), "contents kept", nth_size (i));
      free (blocks[i]);
    }
}

static void
calloc_and_realloc (void)
{
  unsigned char *p = NULL;
  size_t old = 0;
  volatile size_t half_max = SIZE_MAX / 2, near_max = SIZE_MAX - 64;

  for (size_t n = 1; n <= ((size_t) 4 << 20); n = n * 3 + 1)
    {
      unsigned char *z = calloc (n, 1);
      size_t zeros = 0;
      check (z != NULL, "calloc", n);
      for (size_t i = 0; z != NULL && i < n; i++)
        zeros += z[i] == 0;
      check (zeros == n, "calloc zeroes", n);
      free (z);

      p = realloc (p, n);
      check (p != NULL, "realloc grow", n);
      check (p != NULL && verify (p, old, 7), "realloc keeps contents", n);
      if (p != NULL)
        fill (p, n, 7);
      old = n;
    }
  p = realloc (p, 100);
  check (p != NULL && verify (p, 100, 7), "realloc shrink", 100);
  errno = 0;
  check (calloc (half_max, 4) == NULL && errno == ENOMEM, "calloc overflow ENOMEM", 0);
  errno = 0;
  check (malloc (near_max) == NULL && errno == ENOMEM, "huge malloc ENOMEM", 0);
  free (p);
}

static void
aligned (void)
{
  long pg = sysconf (_SC_PAGESIZE);

  for (size_t al = 8; al <= ((size_t) 2 << 20); al *= 4)
    for (size_t n = 1; n <= ((size_t) 1 << 20); n = n * 7 + 3)
      {
        void *a = memalign (al, n), *b = NULL, *c = aligned_alloc (al, (n + al - 1) / al * al);
        int r = posix_memalign (&b, al < sizeof (void *) ? sizeof (void *) : al, n);
        check (a != NULL && (uintptr_t) a % al == 0, "memalign", al);
        check (r == 0 && b != NULL && (uintptr_t) b % al == 0, "posix_memalign", al);
        check (c != NULL && (uintptr_t) c % al == 0, "aligned_alloc", al);
        if (a != NULL)
          fill (a, n, al);
        check (a == NULL || verify (a, n, al), "memalign contents", n);
        free (a);
        free (b);
        free (c);
      }
  {
    void *v = valloc (100), *b = NULL;
    check (v != NULL && (uintptr_t) v % (uintptr_t) pg == 0, "valloc", (size_t) pg);
    free (v);
    check (posix_memalign (&b, 24, 10) == EINVAL, "posix_memalign EINVAL", 24);
  }
}

static void *
thread_main (void *arg)
{
  size_t seed = (size_t) (uintptr_t) arg;
  unsigned char *keep[64] = { 0 };

  for (unsigned round = 0; round < 2000; round++)
    {
      unsigned k = round % 64;
      size_t n = (round * 37 + seed) % 5000 + 1;
      if (keep[k] != NULL)
        {
          size_t m = ((round - 64) * 37 + seed) % 5000 + 1;
          check (verify (keep[k], m, seed + round - 64), "thread contents", m);
          free (keep[k]);
        }
      keep[k] = malloc (n);
      check (keep[k] != NULL, "thread malloc", n);
      if (keep[k] != NULL)
        fill (keep[k], n, seed + round);
    }
  for (unsigned k = 0; k < 64; k++)
    free (keep[k]);
  return NULL;
}

static void
threads (void)
{
  pthread_t t[2];

  for (uintptr_t i = 0; i < 2; i++)
    check (pthread_create (&t[i], NULL, thread_main, (void *) (i * 1000 + 1)) == 0, "pthread_create", i);
  for (int i = 0; i < 2; i++)
    pthread_join (t[i], NULL);
}

static void
report_allocator (int expect)
{
  const char *(*version) (void) = (const char *(*) (void)) dlsym (RTLD_DEFAULT, "hpmalloc_version");
  int (*stats) (struct hpmalloc_stats *, size_t)
      = (int (*) (struct hpmalloc_stats *, size_t)) dlsym (RTLD_DEFAULT, "hpmalloc_stats");
  struct hpmalloc_stats st;

  if (expect)
    check (version != NULL && stats != NULL, "hpmalloc is the allocator in use", 0);
  if (version != NULL)
    printf ("allocator: hpmalloc %s\n", version ());
  else
    printf ("allocator: not hpmalloc\n");
  if (stats != NULL && stats (&st, sizeof st) == 0)
    printf ("hpmalloc: mode %d, huge page %zu, mapped %zu, thp %zu, hugetlb %zu, "
            "fallbacks hugetlb %zu thp %zu, arenas %zu\n",
            st.hugetlb_mode, st.huge_page_size, st.bytes_mapped, st.bytes_thp, st.bytes_hugetlb,
            st.fallbacks_hugetlb, st.fallbacks_thp, st.n_arenas);
}

int
main (int argc, char **argv)
{
  int expect = argc > 1 && strcmp (argv[1], "--expect-hpmalloc") == 0;

  malloc_free_sizes ();
  calloc_and_realloc ();
  aligned ();
  threads ();
  report_allocator (expect);
  printf ("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
