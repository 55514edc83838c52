/* SPDX-License-Identifier: MIT */
/* Checks that the allocator under test is hpmalloc: hpmalloc_version is
   visible, and the malloc and free the program calls come from the object
   that defines it.  The glibc-test runner runs this once per run, under
   the same LD_PRELOAD and tunables as the tests.  MIT licence.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
object_of (void *addr)
{
  Dl_info info;
  if (addr == NULL || dladdr (addr, &info) == 0 || info.dli_fname == NULL)
    return "?";
  return info.dli_fname;
}

int
main (void)
{
  void *version = dlsym (RTLD_DEFAULT, "hpmalloc_version");
  if (version == NULL)
    {
      printf ("hpmalloc_version not found: the preload is not effective\n");
      return 1;
    }
  const char *lib = object_of (version);
  const char *names[] = { "malloc", "free", "calloc", "realloc",
                          "posix_memalign", "malloc_usable_size" };
  int ok = 1;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    {
      const char *from = object_of (dlsym (RTLD_DEFAULT, names[i]));
      if (strcmp (from, lib) != 0)
        {
          printf ("%s comes from %s, not from %s\n", names[i], from, lib);
          ok = 0;
        }
    }
  void *p = malloc (100);
  free (p);
  if (ok)
    printf ("hpmalloc %s from %s\n",
            ((const char *(*) (void)) version) (), lib);
  return ok ? 0 : 1;
}
