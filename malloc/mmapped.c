/* SPDX-License-Identifier: MIT */
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
 * otherwise it comes from the arena's heap, which is huge-backed already.
 *
 * The statistics measure what the kernel backs with huge pages, so they
 * must find every mapping.  The heaps are found through the arenas; mapped
 * chunks are in no list, and the chunk layout leaves no room for links.
 * Telling them apart in /proc/self/smaps by their flags cannot work (the
 * program's own anonymous mappings look the same), so a registry keeps
 * their addresses: a table of MM_SLOTS entries in static memory, open
 * addressing, inserted into with one compare-and-swap, removed from with
 * two stores, read without a lock.  Map and unmap pay a hash and a few
 * loads beside their system call; nothing else pays.  An entry goes in
 * after the mapping is made and comes out before it is unmapped, so an
 * address is never in the table twice.  A mapping that finds no free slot
 * within MM_PROBES of its hash is counted instead (mmapped_unregistered),
 * and the statistics say that many chunks went unmeasured.  */
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

/* ------------------------------------------------------------------ the registry */

enum { MM_SLOTS_LOG = 12, MM_SLOTS = 1 << MM_SLOTS_LOG, MM_PROBES = 32 };
enum { MM_EMPTY = 0, MM_GONE = 1 }; /* slot states other than an address: never used, emptied */

struct mm_slot {
  _Atomic uintptr_t base; /* MM_EMPTY, MM_GONE or the mapping's address */
  _Atomic size_t len;     /* the mapping's length | its kind; 0 while the slot is being filled or emptied */
};
static struct mm_slot mm_slots[MM_SLOTS];
static _Atomic size_t mm_unregistered;

static inline size_t mm_hash(uintptr_t base) {
  return (size_t)((((uint64_t)base >> 12) * 0x9e3779b97f4a7c15ull) >> (64 - MM_SLOTS_LOG));
}
static inline struct mm_slot *mm_slot_at(uintptr_t base, size_t i) {
  return &mm_slots[(mm_hash(base) + i) & (MM_SLOTS - 1)];
}

static void registry_add(uintptr_t base, size_t len, enum hp_region_kind kind) {
  for (size_t i = 0; i < MM_PROBES; i++) {
    struct mm_slot *s = mm_slot_at(base, i);
    uintptr_t b = atomic_load_explicit(&s->base, memory_order_relaxed);
    /* acq_rel: ordered after the emptying's len = 0, so a reader that sees
       the new base sees 0 or the new length, never the old one */
    if (b <= MM_GONE &&
        atomic_compare_exchange_strong_explicit(&s->base, &b, base, memory_order_acq_rel, memory_order_relaxed)) {
      atomic_store_explicit(&s->len, len | kind, memory_order_release);
      return;
    }
  }
  atomic_fetch_add_explicit(&mm_unregistered, 1, memory_order_relaxed);
}

/* Slots before an entry's were all in use when it went in, and a slot is
   never empty again once used, so the search may stop at an empty one.  */
static void registry_remove(uintptr_t base) {
  for (size_t i = 0; i < MM_PROBES; i++) {
    struct mm_slot *s = mm_slot_at(base, i);
    uintptr_t b = atomic_load_explicit(&s->base, memory_order_relaxed);
    if (b == base) {
      atomic_store_explicit(&s->len, 0, memory_order_relaxed);
      atomic_store_explicit(&s->base, MM_GONE, memory_order_release);
      return;
    }
    if (b == MM_EMPTY) break;
  }
  atomic_fetch_sub_explicit(&mm_unregistered, 1, memory_order_relaxed);
}

size_t mmapped_ranges(size_t *cursor, struct hp_mem_range *out, bool *hugetlb, size_t cap) {
  size_t n = 0;
  for (; *cursor < MM_SLOTS && n < cap; ++*cursor) {
    struct mm_slot *s = &mm_slots[*cursor];
    uintptr_t b = atomic_load_explicit(&s->base, memory_order_acquire);
    if (b <= MM_GONE) continue;
    size_t lk = atomic_load_explicit(&s->len, memory_order_acquire);
    if (lk == 0 || atomic_load_explicit(&s->base, memory_order_relaxed) != b) continue; /* changing now */
    out[n] = (struct hp_mem_range){ .lo = b, .hi = b + (lk & ~(size_t)KIND_MASK) };
    hugetlb[n] = (enum hp_region_kind)(lk & KIND_MASK) == HP_REGION_HUGETLB;
    n++;
  }
  return n;
}

size_t mmapped_unregistered(void) { return atomic_load_explicit(&mm_unregistered, memory_order_relaxed); }

/* ------------------------------------------------------------------ mapped chunks */

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
  registry_add((uintptr_t)base, len, kind);
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
  registry_remove((uintptr_t)c - mm_offset(c));
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
  char *base = (char *)c - offset;
  registry_remove((uintptr_t)base); /* before: once moved, the old address may be anyone's */
  char *p = region_remap_chunk(base, total, want, kind == HP_REGION_BASE || offset == 0);
  registry_add((uintptr_t)(p ? p : base), p ? want : total, kind);
  if (!p) return NULL;
  struct chunk *nc = (struct chunk *)(p + offset);
  set_head(nc, (want - offset) | IS_MMAPPED);
  stats_sub(total, kind);
  stats_add(want, kind);
  return chunk2mem(nc);
}
