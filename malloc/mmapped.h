/* mmapped.h: chunks mapped on their own (mmapped.c).  No lock needed: the
 * statistics are atomic.  Includes: hp_base.h, chunk.h.  */
#ifndef HP_MMAPPED_H
#define HP_MMAPPED_H

#include "chunk.h"
#include "hp_base.h"

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

#endif
