/* SPDX-License-Identifier: MIT */
/* check.c: the one error path, and validators for whole arenas.
 *
 * hp_fatal prints a fixed message (the same words glibc prints, so that
 * tools and people recognise them) and aborts, without allocating.  The
 * validators walk every heap chunk by chunk and every bin, and are called by
 * hpmalloc_check_heap() and by the tests.  */
#include "check.h"

#include <string.h>

#include "arena.h"

void hp_fatal(const char *msg) {
  hp_os_write_err(msg, strlen(msg));
  hp_os_write_err("\n", 1);
  hp_os_abort();
}

static void write_str(const char *s) { hp_os_write_err(s, strlen(s)); }

void hp_assert_fail(const char *expr, const char *file, int line) {
  char num[12], *p = num + sizeof num;
  unsigned v = line > 0 ? (unsigned)line : 0;
  do *--p = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  write_str("hpmalloc: ");
  write_str(file);
  write_str(":");
  hp_os_write_err(p, (size_t)(num + sizeof num - p));
  write_str(": assertion failed: ");
  write_str(expr);
  write_str("\n");
  hp_os_abort();
}

static inline void expect(bool ok, const char *msg) {
  if (HP_UNLIKELY(!ok)) hp_fatal(msg);
}

/* Walk one heap from its first chunk to its end (top or fencepost).
   Returns the number of free (non-top) chunks seen, *bytes their size.  */
static size_t walk_heap(struct arena *ar, struct heap *h, size_t *bytes) {
  char *lo = h->reg.base, *hi = h->reg.base + h->reg.committed;
  struct chunk *c = h->first;
  struct chunk *end = h == ar->heap ? ar->top : h->fence;
  size_t nfree = 0;
  bool prev_free = false;
  expect(prev_inuse(c), "hpmalloc_check_heap(): first chunk without PREV_INUSE");
  while (c != end) {
    expect((char *)c >= lo && (char *)c < hi, "hpmalloc_check_heap(): chunk outside its heap");
    size_t sz = chunksize(c);
    expect(sz >= MINSIZE && (sz & HP_ALIGN_MASK) == 0, "hpmalloc_check_heap(): invalid chunk size");
    expect(!chunk_is_mmapped(c), "hpmalloc_check_heap(): mmapped bit inside a heap");
    expect(prev_inuse(c) == !prev_free, "hpmalloc_check_heap(): PREV_INUSE disagrees with previous chunk");
    struct chunk *n = next_chunk(c);
    expect((char *)n <= hi, "hpmalloc_check_heap(): chunk runs past its heap");
    bool is_free = !prev_inuse(n);
    expect(!(c->size & ARENA_FREE) == !is_free, "hpmalloc_check_heap(): ARENA_FREE disagrees with the next chunk");
    if (is_free) {
      expect(!prev_free, "hpmalloc_check_heap(): two adjacent free chunks");
      expect(n->prev_size == sz, "hpmalloc_check_heap(): footer does not match size");
      nfree++;
      *bytes += sz;
    }
    prev_free = is_free;
    c = n;
  }
  if (h == ar->heap) {
    expect((char *)ar->top + chunksize(ar->top) == hi, "hpmalloc_check_heap(): top does not end the heap");
    expect(prev_inuse(ar->top) == !prev_free, "hpmalloc_check_heap(): top's PREV_INUSE is wrong");
    expect(ar->top->size & ARENA_FREE, "hpmalloc_check_heap(): top without ARENA_FREE");
  } else {
    expect(chunksize(h->fence) == CHUNK_HDR, "hpmalloc_check_heap(): fencepost damaged");
  }
  return nfree;
}

/* Check bins: links, sizes in range, binmap, and count the chunks.  */
static size_t walk_bins(struct arena *ar, size_t *bytes) {
  size_t n = 0;
  for (unsigned i = 1; i < NBINS; i++) {
    struct chunk *b = bin_at(ar, i);
    bool marked = ar->binmap[i >> BINMAP_SHIFT] & (1u << (i & (BITSPERMAP - 1)));
    expect(b->fd == b || i == UNSORTED_BIN || marked, "hpmalloc_check_heap(): non-empty bin not in binmap");
    size_t prev = SIZE_MAX;
    for (struct chunk *c = b->fd; c != b; c = c->fd) {
      size_t sz = chunksize(c);
      expect(c->fd->bk == c && c->bk->fd == c, "hpmalloc_check_heap(): corrupted double-linked list");
      expect(!inuse(c), "hpmalloc_check_heap(): chunk in a bin is in use");
      if (i != UNSORTED_BIN) {
        expect(bin_index(sz) == i, "hpmalloc_check_heap(): chunk in the wrong bin");
        if (i >= NSMALLBINS) expect(sz <= prev, "hpmalloc_check_heap(): large bin out of order");
      }
      prev = sz;
      n++;
      *bytes += sz;
    }
  }
  return n;
}

int check_arena(struct arena *ar) {
  HP_ASSERT(arena_held(ar));
  size_t heap_bytes = 0, bin_bytes = 0, nheap = 0;
  for (struct heap *h = ar->heap; h; h = h->prev) nheap += walk_heap(ar, h, &heap_bytes);
  size_t nbin = walk_bins(ar, &bin_bytes);
  expect(nheap == nbin && heap_bytes == bin_bytes, "hpmalloc_check_heap(): free chunks and bins disagree");
  for (unsigned i = 0; i < NFASTBINS; i++) {
    for (struct chunk *c = ar->fastbins[i]; c; c = reveal_ptr(&c->fd, c->fd)) {
      expect(aligned_ok((uintptr_t)chunk2mem(c)), "hpmalloc_check_heap(): unaligned fastbin chunk");
      expect(fastbin_index(chunksize(c)) == i, "hpmalloc_check_heap(): fastbin chunk of the wrong size");
      expect(inuse(c), "hpmalloc_check_heap(): fastbin chunk marked free");
    }
  }
  bool lk = inbox_lock(ar);
  for (unsigned i = 0; i < ar->inbox.n; i++) {
    const struct chunk *c = ar->inbox.slot[i];
    expect(aligned_ok((uintptr_t)chunk2mem(c)), "hpmalloc_check_heap(): unaligned inbox chunk");
    expect(chunksize(c) >= MINSIZE && chunksize(c) <= FASTBIN_MAX_CHUNK,
           "hpmalloc_check_heap(): inbox chunk of a wrong size");
    expect(arena_for_chunk(c) == ar, "hpmalloc_check_heap(): inbox chunk of another arena");
    expect(inuse(c), "hpmalloc_check_heap(): inbox chunk marked free");
  }
  inbox_unlock(ar, lk);
  return 0;
}
