/* SPDX-License-Identifier: MIT */
/* stats.h: mallinfo, mallinfo2, malloc_stats, malloc_info and
 * hpmalloc_stats (stats.c).  Each takes the arena locks one at a time
 * itself.  Includes: hp_base.h.  */
#ifndef HP_STATS_H
#define HP_STATS_H

#include <malloc.h>
#include <stdio.h>

#include "hp_base.h"

struct arena;
struct hpmalloc_stats;

/* One arena's figures, gathered under its lock.  */
struct hp_arena_stats {
  size_t system, inuse, free, fast_count, fast_bytes, ordblks, top;
  size_t thp, hugetlb, heaps;
};
HP_INTERNAL void arena_collect(struct arena *ar, struct hp_arena_stats *st);

HP_INTERNAL struct mallinfo2 hp_mallinfo2(void);
HP_INTERNAL struct mallinfo hp_mallinfo(void);
HP_INTERNAL void hp_malloc_stats(void);
HP_INTERNAL int hp_malloc_info(int options, FILE *fp);
HP_INTERNAL int hp_stats(struct hpmalloc_stats *out, size_t size);
/* The report hpmalloc.stats=1 prints at exit, where diag.c sends
   diagnostics (nowhere, when it has no destination); takes no lock while
   it prints.  hp_stats_report_fd: the same report written to fd.  */
HP_INTERNAL void hp_stats_report(void);
HP_INTERNAL void hp_stats_report_fd(int fd);

#endif
