/* SPDX-License-Identifier: MIT */
/* hpmalloc public extensions.  MIT licence.
 *
 * Everything else hpmalloc exports is the glibc malloc API (<malloc.h>,
 * <stdlib.h>).  These are the only additional symbols.  */
#ifndef HPMALLOC_H
#define HPMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HPMALLOC_VERSION_STRING "0.2.0"

/* The library's version, e.g. "0.1.0".  */
const char *hpmalloc_version(void);

/* A snapshot of the allocator's counters.  All byte counts are bytes of
   address space the allocator holds, except where stated.  */
struct hpmalloc_stats {
  size_t version;           /* sizeof (struct hpmalloc_stats), set by the call */
  size_t bytes_in_use;      /* bytes handed to the program and not yet freed (chunk sizes) */
  size_t bytes_mapped;      /* bytes committed by the allocator: heaps plus mmapped chunks */
  size_t bytes_heap;        /* committed bytes in arena heaps */
  size_t bytes_mmapped;     /* bytes in chunks mapped directly */
  size_t bytes_free;        /* committed heap bytes sitting in bins or top */
  size_t bytes_thp;         /* committed bytes in regions advised MADV_HUGEPAGE (advised: see bytes_*_thp_backed) */
  size_t bytes_hugetlb;     /* committed bytes in hugetlbfs mappings */
  size_t fallbacks_hugetlb; /* times a hugetlb mapping failed and a weaker kind was used */
  size_t fallbacks_thp;     /* times MADV_HUGEPAGE was refused and base pages were used */
  size_t n_arenas;          /* arenas created (main arena included) */
  size_t n_heaps;           /* heap regions currently mapped */
  size_t n_mmapped;         /* chunks currently mapped directly */
  int hugetlb_mode;         /* mode in force: 0, 1 (THP) or 2 (hugetlbfs) */
  size_t huge_page_size;    /* huge page size in use (0 in mode 0) */
  /* since 0.2.0 (a caller built with 0.1.0 passes the smaller size and gets the fields above) */
  size_t bytes_cached;      /* bytes in the threads' caches: free, counted in bytes_free, not in bytes_in_use */
  size_t n_cached;          /* chunks in the threads' caches */
  size_t commits;           /* heap commits: mprotect calls, or hugetlb pages populated in a batch */
  size_t commit_ns;         /* time spent in them */
  size_t collapses;         /* first huge pages of heaps collapsed (MADV_COLLAPSE), outside any lock */
  size_t collapse_failures; /* of those, refused by the kernel (khugepaged may do it later) */
  size_t collapse_ns;       /* time spent in them */
  size_t prefault_bytes;    /* bytes the prefault helper faulted in ahead of need (hpmalloc.prefault) */
  size_t prefault_ns;       /* time it spent */
  /* Huge pages as asked for, by kind of region, and as the
     kernel backs them now.  The *_backed fields are measured by the call
     from the kernel's page tables (how: backed_source), which takes time
     in proportion to the memory held (PAGEMAP_SCAN) or to the process's
     mappings (smaps); a caller passing a struct without them does not pay
     for it.  */
  size_t bytes_heap_thp;               /* committed heap bytes in regions advised MADV_HUGEPAGE */
  size_t bytes_heap_hugetlb;           /* committed heap bytes in hugetlbfs mappings */
  size_t bytes_mmapped_thp;            /* bytes of directly mapped chunks advised MADV_HUGEPAGE */
  size_t bytes_mmapped_hugetlb;        /* bytes of directly mapped chunks in hugetlbfs mappings */
  size_t bytes_heap_thp_backed;        /* committed heap bytes the kernel maps with transparent huge pages now */
  size_t bytes_heap_hugetlb_backed;    /* committed heap bytes on hugetlbfs pages present now */
  size_t bytes_mmapped_thp_backed;     /* the same for directly mapped chunks */
  size_t bytes_mmapped_hugetlb_backed; /* the same for directly mapped chunks */
  size_t n_mmapped_unmeasured;         /* mapped chunks left out of those two: beyond the ~4096 the registry holds */
  int backed_source;                   /* how the *_backed fields were measured: HPMALLOC_BACKED_* */
};

/* backed_source: how hpmalloc_stats measured what is on huge pages.  */
#define HPMALLOC_BACKED_UNKNOWN 0      /* it could not (no /proc): the *_backed fields are 0 */
#define HPMALLOC_BACKED_PAGEMAP_SCAN 1 /* page by page, PAGEMAP_SCAN on /proc/self/pagemap (Linux 6.7+) */
#define HPMALLOC_BACKED_SMAPS 2        /* mapping by mapping, /proc/self/smaps (older kernels) */

/* Fill *st (of size `size`, normally sizeof *st) with a consistent snapshot;
   st->version says how many bytes were filled (a struct from an older
   header gets the fields it has).  Returns 0, or -1 with errno EINVAL when
   st is NULL or size is smaller than 0.1.0's struct.  */
int hpmalloc_stats(struct hpmalloc_stats *st, size_t size);

/* Walk every arena and check every chunk's boundary tags, bins and counters.
   Returns 0 when the heap is consistent; on corruption prints a fixed
   message and aborts, as the allocator's other integrity checks do.  */
int hpmalloc_check_heap(void);

/* mallopt parameter: switch glibc.malloc.hugetlb at run time (0, 1, 2 or a
   hugetlb page size).  Memory mapped afterwards follows the new mode; when
   switching to THP, the heaps already in use are advised and what they
   hold is collapsed into huge pages (MADV_COLLAPSE, Linux 6.1+, best
   effort).  mallopt returns 1 on success, 0 for a value it cannot take.
   (glibc's mallopt ignores the parameter and returns 1.)  */
#define HPMALLOC_M_HUGETLB (-201)

/* Appliances that link hpmalloc statically and cannot set the environment
   define this symbol in their program, in GLIBC_TUNABLES syntax:

     const char hpmalloc_default_tunables[] = "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2";

   The values are applied first; GLIBC_TUNABLES and MALLOC_*_ from the
   environment still win.  */
extern const char hpmalloc_default_tunables[] __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
