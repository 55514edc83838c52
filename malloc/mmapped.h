/* SPDX-License-Identifier: MIT */
/* mmapped.h: chunks mapped on their own (mmapped.c).  No lock needed: the
 * statistics are atomic and the registry of mappings is lock-free.
 * Includes: hp_base.h, hp_sys.h, chunk.h.  */
#ifndef HP_MMAPPED_H
#define HP_MMAPPED_H

#include "chunk.h"
#include "hp_base.h"
#include "hp_sys.h"

/* Should a request of chunk size nb get a mapping of its own?  */
HP_INTERNAL bool mmap_chunk_wanted(size_t nb);
/* Map a chunk of at least nb bytes: the user pointer, or NULL with errno
   ENOMEM.  */
HP_INTERNAL void *mmap_chunk(size_t nb);
HP_INTERNAL void munmap_chunk(struct chunk *c);
/* Resize a mapped chunk to hold nb bytes: the user pointer, or NULL (the
   chunk is unchanged).  */
HP_INTERNAL void *mremap_chunk(struct chunk *c, size_t nb);
/* The length of the mapping that holds c.  */
HP_INTERNAL size_t mmapped_region_size(const struct chunk *c);

/* The mappings of the chunks mapped on their own, for the statistics: up
   to cap of them from registry slot *cursor on (start at 0), as ranges,
   and whether each is on hugetlbfs pages; *cursor moves past them.
   Returns how many (0: no more).  Without a lock: a chunk mapped or
   unmapped meanwhile may be missed or seen.  */
HP_INTERNAL size_t mmapped_ranges(size_t *cursor, struct hp_mem_range *out, bool *hugetlb, size_t cap);
/* How many chunks are mapped that the registry had no room for (their
   mappings are not in mmapped_ranges).  */
HP_INTERNAL size_t mmapped_unregistered(void);

#endif
