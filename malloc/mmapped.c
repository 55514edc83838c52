/* mmapped.c: chunks above the mmap threshold, each mapped on its own.
 *
 * Layout: the mapping starts `offset` bytes before the chunk (offset > 0
 * only for aligned requests); the chunk's size runs to the mapping's end,
 * so offset + chunksize is the mapping length.  prev_size holds the offset
 * (a multiple of 16) with the region kind in its low bits.
 *
 * glibc's dynamic threshold is kept: freeing a mapped chunk larger than the
 * threshold (up to 32 MiB) raises the threshold to its size, unless the
 * program set a threshold itself.  In huge-page modes a request is mapped
 * only when rounding it to whole huge pages wastes little (hpmalloc.huge_waste);
 * otherwise it comes from the arena's heap, which is huge-backed already.  */
#include "mmapped.h"

#include <errno.h>
#include <string.h>

#include "check.h"
#include "params.h"
#include "region.h"

enum { KIND_MASK = 0x3 };
static const size_t DYN_THRESHOLD_MAX = (size_t)32 << 20;

static inline size_t mm_offset(const struct chunk *c) { return c->prev_size & ~(size_t)HP_ALIGN_MASK; }
static inline enum hp_region_kind mm_kind(const struct chunk *c) {
  return (enum hp_region_kind)(c->prev_size & KIND_MASK);
}

size_t mmapped_region_size(const struct chunk *c) { return mm_offset(c) + chunksize(c); }

bool mmap_chunk_wanted(size_t nb) {
  if (nb < mp.mmap_threshold) return false;
  if (atomic_load_explicit(&mp.n_mmaps, memory_order_relaxed) >= (size_t)mp.n_mmaps_max) return false;
  return region_rounding_ok(nb + SIZE_SZ);
}

static void stats_add(size_t len, enum hp_region_kind kind) {
  size_t n = atomic_fetch_add_explicit(&mp.n_mmaps, 1, memory_order_relaxed) + 1;
  size_t m = atomic_fetch_add_explicit(&mp.mmapped_mem, len, memory_order_relaxed) + len;
  size_t cur = atomic_load_explicit(&mp.max_n_mmaps, memory_order_relaxed);
  while (n > cur && !atomic_compare_exchange_weak(&mp.max_n_mmaps, &cur, n)) {}
  cur = atomic_load_explicit(&mp.max_mmapped_mem, memory_order_relaxed);
  while (m > cur && !atomic_compare_exchange_weak(&mp.max_mmapped_mem, &cur, m)) {}
  if (kind == HP_REGION_THP) atomic_fetch_add_explicit(&mp.mmapped_thp, len, memory_order_relaxed);
  if (kind == HP_REGION_HUGETLB) atomic_fetch_add_explicit(&mp.mmapped_hugetlb, len, memory_order_relaxed);
}

static void stats_sub(size_t len, enum hp_region_kind kind) {
  atomic_fetch_sub_explicit(&mp.n_mmaps, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&mp.mmapped_mem, len, memory_order_relaxed);
  if (kind == HP_REGION_THP) atomic_fetch_sub_explicit(&mp.mmapped_thp, len, memory_order_relaxed);
  if (kind == HP_REGION_HUGETLB) atomic_fetch_sub_explicit(&mp.mmapped_hugetlb, len, memory_order_relaxed);
}

/* Map a chunk of at least nb bytes (offset 0: int_memalign moves the
   chunk start inside the mapping when it needs an alignment).  Returns the
   user pointer or NULL (errno ENOMEM).  */
void *mmap_chunk(size_t nb) {
  size_t len = nb + SIZE_SZ;
  // cppcheck-suppress knownConditionTrueFalse ; not always false: the addition wraps for nb near SIZE_MAX
  if (len < nb) {
    errno = ENOMEM;
    return NULL;
  }
  enum hp_region_kind kind;
  char *base = region_map_chunk(&len, &kind);
  if (!base) return NULL;
  struct chunk *c = (struct chunk *)base;
  c->prev_size = kind;
  set_head(c, len | IS_MMAPPED);
  stats_add(len, kind);
  return chunk2mem(c);
}

static void check_mapped(const struct chunk *c) {
  uintptr_t base = (uintptr_t)c - mm_offset(c);
  size_t total = mmapped_region_size(c);
  if (((base | total) & (mp.page - 1)) != 0 || total < chunksize(c)) hp_fatal("munmap_chunk(): invalid pointer");
}

void munmap_chunk(struct chunk *c) {
  check_mapped(c);
  size_t size = chunksize(c), total = mmapped_region_size(c);
  enum hp_region_kind kind = mm_kind(c);
  if (!mp.no_dyn_threshold && size > mp.mmap_threshold && size <= DYN_THRESHOLD_MAX) {
    mp.mmap_threshold = size;
    mp.trim_threshold = 2 * size;
  }
  stats_sub(total, kind);
  region_unmap_chunk((char *)c - mm_offset(c), total);
}

/* Resize a mapped chunk to hold nb bytes, in place or by moving the
   mapping.  Returns the user pointer, or NULL (the chunk is unchanged).  */
void *mremap_chunk(struct chunk *c, size_t nb) {
  check_mapped(c);
  size_t offset = mm_offset(c), total = mmapped_region_size(c);
  enum hp_region_kind kind = mm_kind(c);
  size_t page = region_huge_page(kind);
  size_t want = align_up(offset + nb + SIZE_SZ, page);
  if (want < nb) return NULL;
  if (want == total) return chunk2mem(c);
  char *p = region_remap_chunk((char *)c - offset, total, want, kind == HP_REGION_BASE || offset == 0);
  if (!p) return NULL;
  struct chunk *nc = (struct chunk *)(p + offset);
  set_head(nc, (want - offset) | IS_MMAPPED);
  stats_sub(total, kind);
  stats_add(want, kind);
  return chunk2mem(nc);
}
