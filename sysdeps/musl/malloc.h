/* SPDX-License-Identifier: MIT */
/* malloc.h over musl's: what glibc's <malloc.h> declares and musl's does
 * not -- struct mallinfo and mallinfo2, the mallopt parameters with
 * glibc's values, and the functions hpmalloc defines on every C library.
 * The musl build puts this directory first on the include path
 * (sysdeps/README.md); the core includes <malloc.h> as on glibc and
 * compiles unchanged.  Also for programs built against musl that call
 * these functions (the musl test suite does).  */
#ifndef HP_MUSL_MALLOC_H
#define HP_MUSL_MALLOC_H

#include_next <malloc.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mallinfo {
  int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};

struct mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};

/* mallopt parameters, numbered as glibc numbers them.  */
#define M_MXFAST 1
#define M_TRIM_THRESHOLD (-1)
#define M_TOP_PAD (-2)
#define M_MMAP_THRESHOLD (-3)
#define M_MMAP_MAX (-4)
#define M_CHECK_ACTION (-5)
#define M_PERTURB (-6)
#define M_ARENA_TEST (-7)
#define M_ARENA_MAX (-8)

struct mallinfo mallinfo(void);
struct mallinfo2 mallinfo2(void);
int mallopt(int param, int value);
int malloc_trim(size_t pad);
void malloc_stats(void);
int malloc_info(int options, FILE *fp);
void *pvalloc(size_t size);

#ifdef __cplusplus
}
#endif

#endif
