/* SPDX-License-Identifier: MIT */
/* top.c: the top chunk.  Serving from it (top_take, inline in top.h; a
 * refill carving it into a cache bin), growing it (committing more of the
 * current heap, extending the heap in place, or starting a new heap), and
 * trimming it (decommitting whole pages at its end, releasing heaps that
 * became empty).
 * The only caller of the region layer for heaps.
 *
 * Heaps: every arena's chunks live in heaps, each a region that starts with
 * a struct heap.  Non-main heaps are heap_max bytes, aligned to heap_max, so
 * heap_for_ptr() finds them by masking.  The main arena's heaps may be
 * larger and grow in place.  A heap that is no longer the arena's current
 * one is sealed by a fencepost at its end (a 16-byte in-use chunk followed
 * by a size-0 header), so no chunk ever coalesces across heaps.
 * All functions here run with the arena's lock held.  */
#include "top.h"

#include <errno.h>
#include <string.h>

#include "bins.h"
#include "mmapped.h"

/* The main arena's first reservation; each later one (made when the heap
   cannot be extended in place) is twice the one before, so a growing heap
   takes few reservations while a small program holds little address space
   (RLIMIT_AS counts reservations).  */
static const size_t MAIN_HEAP_RESERVE = (size_t)64 << 20;
static const size_t MAIN_HEAP_MAX_RESERVE = (size_t)64 << 30;
static const size_t MAIN_HEAP_MIN = (size_t)1 << 20;

static inline char *heap_end(const struct heap *h) { return h->reg.base + h->reg.committed; }

static void account(struct arena *ar, const struct region *r, ptrdiff_t delta) {
  ar->system_mem += (size_t)delta;
  if (ar->system_mem > ar->max_system_mem) ar->max_system_mem = ar->system_mem;
  if (r->kind == HP_REGION_THP)
    ar->bytes_thp += (size_t)delta;
  else if (r->kind == HP_REGION_HUGETLB)
    ar->bytes_hugetlb += (size_t)delta;
}

/* Where chunks start in a heap whose header area is `hdr` bytes.  */
static char *first_chunk_addr(struct heap *h, size_t hdr) {
  /* mem = chunk + 16 must be 16-aligned; so the chunk is 16-aligned too.  */
  return (char *)align_up((uintptr_t)h + hdr, HP_ALIGN);
}

/* Reserve a main-arena heap of at least `min` bytes.  Three tries, so a
   process at its address-space limit fails fast: the doubled size at the
   placement's alignment; the same, aligned only to the page kind; then
   just `min`.  */
static int reserve_main(struct arena *ar, struct region *reg, size_t min, enum hp_region_kind kind) {
  size_t len = MAIN_HEAP_RESERVE;
  if (ar->heap && ar->heap->reg.reserved < MAIN_HEAP_MAX_RESERVE) len = 2 * ar->heap->reg.reserved;
  while (len < min) len <<= 1;
  size_t page_align = region_huge_page(kind);
  size_t align = kind == HP_REGION_BASE ? mp.page : hp_placement.align;
  if (region_reserve(reg, len, align, kind) == 0) return 0;
  if (align > page_align && region_reserve(reg, len, page_align, kind) == 0) return 0;
  size_t small = align_up(min < MAIN_HEAP_MIN ? MAIN_HEAP_MIN : min, page_align);
  return small < len ? region_reserve(reg, small, page_align, kind) : -1;
}

/* Reserve and commit a new heap able to hold `need` bytes of chunks after
   a header of `hdr` bytes.  Returns the heap (its fields set, no chunks
   yet) or NULL.  */
/* Recurses once after a failed hugetlb commit: the region layer then backs
   off, so the next call asks for THP or base pages.  */
// NOLINTNEXTLINE(misc-no-recursion): bounded, see above
static struct heap *heap_new(struct arena *ar, size_t hdr, size_t need, bool main) {
  struct region reg;
  size_t overhead = align_up(hdr, HP_ALIGN) + MINSIZE;
  if (need > SIZE_MAX / 2) {
    errno = ENOMEM;
    return NULL;
  }
  enum hp_region_kind kind = region_kind_for_mode();
  if (main) {
    if (reserve_main(ar, &reg, need + overhead, kind) != 0) return NULL;
  } else {
    if (need + overhead > mp.heap_max) {
      errno = ENOMEM;
      return NULL;
    }
    if (region_reserve(&reg, mp.heap_max, mp.heap_max, kind) != 0) return NULL;
  }
  /* only an arena's first heap starts lazily (region.c, commit_unit()): one that
     replaces a full heap will grow */
  if (ar->heap) reg.lazy = false;
  if (region_commit(&reg, overhead + need) != 0 && region_commit(&reg, overhead) != 0) {
    /* a dry hugetlb pool shows here: the region layer counted it and backs
       off; try again with what it offers now (THP or base pages) */
    enum hp_region_kind failed = reg.kind;
    region_release(&reg);
    if (failed != HP_REGION_HUGETLB) return NULL;
    return heap_new(ar, hdr, need, main);
  }
  struct heap *h = (struct heap *)reg.base;
  h->ar = ar;
  h->prev = NULL;
  h->reg = reg;
  h->fence = NULL;
  h->first = NULL;
  h->extend_cap = 0;
  account(ar, &h->reg, (ptrdiff_t)reg.committed);
  ar->n_heaps++;
  return h;
}

/* Make the free space of heap h, starting at `first`, the arena's top.  */
void heap_attach_arena_top(struct arena *ar, struct heap *h, char *first) {
  struct chunk *t = (struct chunk *)first;
  h->first = t;
  set_free_head(t, (size_t)(heap_end(h) - first) | PREV_INUSE);
  ar->top = t;
  ar->heap = h;
}

/* The main arena's first heap, or a thread arena's (the arena struct lives
   right after the heap header: *out gets the heap, the caller places the
   arena).  `extra` is room wanted beyond the headers.  */
int heap_create_first(struct arena *ar, struct heap **out, size_t extra) {
  bool main = ar == &main_arena;
  size_t hdr = sizeof(struct heap) + (main ? 0 : sizeof(struct arena));
  struct heap *h = heap_new(ar, hdr, extra, main);
  if (!h) return -1;
  *out = h;
  return 0;
}

/* Seal heap h, which is no longer the arena's current heap: put a
   fencepost at its end and free what was its top chunk, t.  */
static void heap_seal(struct arena *ar, struct heap *h, struct chunk *t) {
  HP_ASSERT(arena_held(ar) && h != ar->heap);
  size_t tsize = chunksize(t);
  size_t keep = tsize - MINSIZE; /* tsize >= MINSIZE always */
  struct chunk *fence = chunk_at(t, keep);
  set_head(fence, CHUNK_HDR | PREV_INUSE);
  set_head(chunk_at(fence, CHUNK_HDR), PREV_INUSE); /* size 0 */
  h->fence = fence;
  if (keep >= MINSIZE) {
    set_head(t, keep | (t->size & PREV_INUSE) | arena_flag(ar));
    free_chunk(ar, t, FREE_LOCKED | FREE_NO_TRIM);
  } else {
    /* too small to free: t itself becomes the fencepost */
    set_head(t, CHUNK_HDR | (t->size & PREV_INUSE));
    set_head(chunk_at(t, CHUNK_HDR), PREV_INUSE); /* size 0 */
    h->fence = t;
  }
}

/* Start a new heap for ar that can hold nb more bytes; seal the old one.  */
static int grow_new_heap(struct arena *ar, size_t nb) {
  struct heap *old = ar->heap;
  bool main = ar == &main_arena;
  struct heap *h = heap_new(ar, sizeof(struct heap), nb + MINSIZE + mp.top_pad, main);
  if (!h) h = heap_new(ar, sizeof(struct heap), nb + MINSIZE, main);
  if (!h) return -1;
  struct chunk *old_top = ar->top;
  h->prev = old;
  heap_attach_arena_top(ar, h, first_chunk_addr(h, sizeof(struct heap)));
  if (old) heap_seal(ar, old, old_top);
  return 0;
}

/* The heap grows again after free trimmed it: the pages trimmed come
   back with a fault each, and the trim saved nothing.  So each time,
   while the thresholds are glibc's dynamic ones (no M_TRIM_THRESHOLD,
   M_TOP_PAD, M_MMAP_THRESHOLD or M_MMAP_MAX set), free keeps more of top
   in this arena: first trim_threshold more, then twice as much each
   time, up to TRIM_KEEP_MAX or trim_threshold -- as glibc raises its
   trim threshold when large blocks come and go (to 64 MiB; this keeps
   at most 4 MiB an arena idle).  malloc_trim still gives back everything
   beyond its pad.  Measured on `small thread 1.5` (two threads whose
   heaps rise and fall by a few hundred KiB): 33 madvise and 94 mprotect
   calls instead of 918 and 1137, system time 0.01 s against 0.05 s; a
   cap of 1 MiB did as well there.  */
static const size_t TRIM_KEEP_MAX = (size_t)4 << 20;
static void trim_undone(struct arena *ar) {
  if (!ar->trimmed) return;
  ar->trimmed = false;
  if (mp.no_dyn_threshold) return;
  size_t max = TRIM_KEEP_MAX > mp.trim_threshold ? TRIM_KEEP_MAX : mp.trim_threshold;
  if (ar->trim_keep >= max) return;
  ar->trim_keep = ar->trim_keep ? 2 * ar->trim_keep : mp.trim_threshold;
  if (ar->trim_keep > max) ar->trim_keep = max;
}

/* Grow the current heap so that top holds at least nb + MINSIZE bytes.  */
static int grow_in_place(struct arena *ar, size_t nb) {
  struct heap *h = ar->heap;
  char *top = (char *)ar->top;
  size_t used = (size_t)(top - h->reg.base);
  size_t want = used + nb + MINSIZE;
  if (want < used) return -1;
  size_t padded = want + mp.top_pad;
  if (padded < want) padded = want;
  /* a thread heap never grows past heap_max: heap_for_ptr masks with it */
  if (ar != &main_arena && want > mp.heap_max) return -1;
  if (want > h->reg.reserved) {
    if (ar != &main_arena) return -1;
    size_t need = want - h->reg.reserved, more = padded - h->reg.reserved;
    if (more < h->reg.reserved) more = h->reg.reserved; /* double the reservation... */
    /* ...but no larger than what has a chance to fit: without the bound, a
       heap that met another mapping tried the doubling again at every
       growth (115 failed mmaps on the way to 2 GB) */
    if (h->extend_cap && more > h->extend_cap) more = h->extend_cap > need ? h->extend_cap : need;
    if (region_extend(&h->reg, more) != 0) {
      if (more == need) return -1;
      h->extend_cap = more / 2;
      if (region_extend(&h->reg, need) != 0) return -1;
    }
  }
  if (padded > h->reg.reserved) padded = h->reg.reserved;
  if (ar != &main_arena && padded > mp.heap_max) padded = mp.heap_max;
  size_t before = h->reg.committed;
  if (region_commit_ahead(&h->reg, padded) != 0) region_commit(&h->reg, want);
  if (h->reg.committed != before) {
    trim_undone(ar);
    account(ar, &h->reg, (ptrdiff_t)(h->reg.committed - before));
    set_free_head(ar->top, (size_t)(heap_end(h) - top) | (ar->top->size & PREV_INUSE));
  }
  return h->reg.committed >= want ? 0 : -1;
}

/* First heap of the main arena, made on first use.  */
static int main_first_heap(struct arena *ar, size_t nb) {
  struct heap *h;
  if (heap_create_first(ar, &h, nb + MINSIZE + mp.top_pad) != 0 && heap_create_first(ar, &h, nb + MINSIZE) != 0)
    return -1;
  heap_attach_arena_top(ar, h, first_chunk_addr(h, sizeof(struct heap)));
  return 0;
}

void top_fill_bin(struct arena *ar, size_t tidx, size_t nb) {
  HP_ASSERT(arena_held(ar) && tc_bin_size(tidx) == nb);
  const struct tc_bin *b = &hp_self.bins[tidx];
  size_t n = top_room(ar, nb), room = b->cap > b->count ? b->cap - b->count : 0;
  if (n > room) n = room;
  if (!n) return;
  size_t head = nb | PREV_INUSE | arena_flag(ar);
  struct chunk *c = top_cut(ar, n * nb);
  for (size_t i = 0; i < n; i++, c = chunk_at(c, nb)) {
    set_head(c, head);
    tcache_put(c, tidx);
  }
  HP_ASSERT(b->count <= b->cap);
}

/* The top chunk cannot serve nb: get memory from the system.  Returns
   memory for the request (possibly a chunk mapped on its own), or NULL
   with errno ENOMEM.  */
void *sys_grow(struct arena *ar, size_t nb) {
  HP_ASSERT(arena_held(ar));
  if (mmap_chunk_wanted(nb)) {
    void *p = mmap_chunk(nb);
    if (p) return p;
  }
  int ok;
  if (!ar->heap)
    ok = ar == &main_arena ? main_first_heap(ar, nb) : -1;
  else
    ok = grow_in_place(ar, nb);
  if (ok != 0) ok = grow_new_heap(ar, nb);
  void *m = ok == 0 ? top_take(ar, nb) : NULL;
  if (m) return m;
  /* last resort: map it on its own even below the threshold */
  if (mp.n_mmaps < (size_t)mp.n_mmaps_max) {
    void *p = mmap_chunk(nb);
    if (p) return p;
  }
  errno = ENOMEM;
  return NULL;
}

/* Drop the current heap when it holds nothing but top and the previous
   heap can still grow top by `pad` bytes (its free tail and the space it
   has not committed), returning to the previous heap, whose free tail
   becomes top again: glibc's heap_trim.  */
static bool release_current_if_empty(struct arena *ar, size_t pad) {
  HP_ASSERT(arena_held(ar));
  struct heap *h = ar->heap, *prev = h->prev;
  if (!prev) return false;
  if (ar->top != h->first) return false;
  struct chunk *fence = prev->fence, *t = fence;
  size_t tail = prev_inuse(fence) ? 0 : fence->prev_size;
  if (tail + (prev->reg.reserved - prev->reg.committed) < pad) return false;
  if (tail) {
    t = prev_chunk(fence);
    unlink_chunk(ar, t);
  }
  account(ar, &h->reg, -(ptrdiff_t)h->reg.committed);
  ar->n_heaps--;
  struct region reg = h->reg; /* h lives inside the region */
  region_release(&reg);
  prev->fence = NULL;
  ar->heap = prev;
  ar->top = t;
  set_free_head(t, (size_t)(heap_end(prev) - (char *)t) | (t->size & PREV_INUSE));
  if (ar->last_remainder == t) ar->last_remainder = NULL;
  return true;
}

/* The sealed heap holding chunk c, and (in *newer) the heap whose prev it
   is; NULL when c is in the current heap.  */
static struct heap *sealed_heap_of(struct arena *ar, const struct chunk *c, struct heap **newer) {
  struct heap *n = ar->heap;
  for (struct heap *h = n->prev; h; n = h, h = h->prev) {
    if ((const char *)c >= h->reg.base && (const char *)c < heap_end(h)) {
      *newer = n;
      return h;
    }
  }
  return NULL;
}

/* Free chunk c (in a bin) may span a whole sealed heap: the program freed
   everything that heap held.  Give the heap back to the system.  */
void heap_release_drained(struct arena *ar, struct chunk *c) {
  HP_ASSERT(arena_held(ar) && (c->size & ARENA_FREE));
  struct heap *newer;
  struct heap *h = sealed_heap_of(ar, c, &newer);
  if (!h || c != h->first || next_chunk(c) != h->fence) return;
  if (h->prev == NULL && ar != &main_arena) return; /* holds the arena itself */
  unlink_chunk(ar, c);
  if (ar->last_remainder == c) ar->last_remainder = NULL;
  newer->prev = h->prev;
  account(ar, &h->reg, -(ptrdiff_t)h->reg.committed);
  ar->n_heaps--;
  struct region reg = h->reg; /* h lives inside the region */
  region_release(&reg);
}

bool heap_release_empty(struct arena *ar, size_t pad) {
  bool released = false;
  while (ar->heap && release_current_if_empty(ar, pad)) released = true;
  return released;
}

/* Release memory at the end of top beyond `pad` bytes, and heaps that are
   wholly free.  Returns 1 when something was released.  */
int sys_trim(struct arena *ar, size_t pad) {
  HP_ASSERT(arena_held(ar));
  if (!ar->heap) return 0;
  int released = heap_release_empty(ar, pad);
  struct heap *h = ar->heap;
  char *top = (char *)ar->top;
  size_t keep = (size_t)(top - h->reg.base) + MINSIZE;
  if (pad > SIZE_MAX - keep) return released;
  keep += pad;
  size_t before = h->reg.committed;
  if (keep >= before) return released;
  region_decommit(&h->reg, keep);
  if (h->reg.committed == before) return released;
  account(ar, &h->reg, -(ptrdiff_t)(before - h->reg.committed));
  set_free_head(ar->top, (size_t)(heap_end(h) - top) | (ar->top->size & PREV_INUSE));
  return 1;
}

/* Give back the whole pages inside the free chunks of heap h (up to `end`,
   its top or fencepost), keeping each chunk's header and links.  */
static int discard_free_chunks(struct heap *h, const struct chunk *end) {
  int released = 0;
  for (struct chunk *c = h->first; c != end; c = next_chunk(c)) {
    struct chunk *n = next_chunk(c);
    if (!prev_inuse(n) && region_discard(&h->reg, (uintptr_t)c + sizeof(struct chunk), (uintptr_t)n)) released = 1;
  }
  return released;
}

int arena_trim(struct arena *ar, size_t pad) {
  HP_ASSERT(arena_held(ar));
  malloc_consolidate(ar);
  int released = sys_trim(ar, pad);
  for (struct heap *h = ar->heap; h; h = h->prev)
    released |= discard_free_chunks(h, h == ar->heap ? ar->top : h->fence);
  return released;
}

void arena_hugify(struct arena *ar) {
  HP_ASSERT(arena_held(ar));
  for (struct heap *h = ar->heap; h; h = h->prev)
    if (region_hugify(&h->reg)) ar->bytes_thp += h->reg.committed;
}
