/* fuzz/api.c: libFuzzer harness driving the allocator's API against a
 * shadow model.
 *
 * SPDX-License-Identifier: MIT
 *
 * Links the test build of the library (compiled with clang,
 * -DHP_TEST_BUILD: the API is named hpt_malloc, ...), so libFuzzer and the
 * sanitizers keep the system's malloc.  The input is a program: each op
 * byte picks malloc, calloc, realloc, reallocarray, memalign,
 * aligned_alloc, posix_memalign, valloc, pvalloc, free, free_sized,
 * free_aligned_sized, malloc_trim, mallopt or mallinfo2 on one of
 * NSLOTS slots.  The shadow model keeps each live block's requested size,
 * usable size, alignment and a tag; every block is filled over its whole
 * usable size with a pattern derived from its tag.  Checked after each op:
 *   - results: NULL only where glibc's semantics allow it (impossible
 *     sizes, overflowing products; errno ENOMEM/EINVAL), usable size at
 *     least the requested size, alignment as requested, calloc zeroes,
 *     realloc keeps the first min(old, new) requested bytes;
 *   - no two live blocks overlap (over their usable sizes);
 *   - the block touched still holds its pattern, and every live block's
 *     first and last bytes do (all of each block at the end of the input);
 *   - the heap validator (check_arena on every arena, and
 *     hpmalloc_check_heap) passes; mallinfo2's totals add up.
 * Everything is freed at the end of each input and mallopt's parameters
 * restored, so inputs do not depend on each other.  */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmalloc.h"
#include "hpt_api.h"
#include "arena.h"
#include "check.h"
#include "region.h"

#define NSLOTS 32
#define EDGE 64 /* bytes checked at each end of every live block after each op */

struct slot {
  unsigned char *p;
  size_t req;    /* requested bytes */
  size_t usable; /* malloc_usable_size at allocation */
  size_t align;  /* alignment asked for (0: the default) */
  unsigned tag;
};

static struct slot slots[NSLOTS];
static unsigned next_tag;
static unsigned char pat[512];

struct input {
  const uint8_t *p, *end;
};

static unsigned get8(struct input *in) { return in->p < in->end ? *in->p++ : 0; }
static size_t get16(struct input *in) { return get8(in) | (size_t)get8(in) << 8; }
static size_t get24(struct input *in) { return get16(in) | (size_t)get8(in) << 16; }

static void fail(const char *what, const struct slot *s) {
  fprintf(stderr, "api fuzz: %s (block %p req %zu usable %zu align %zu tag %u)\n", what, s ? (void *)s->p : NULL,
          s ? s->req : 0, s ? s->usable : 0, s ? s->align : 0, s ? s->tag : 0);
  abort();
}

/* A size: mostly small, sometimes up to 64 KiB, rarely up to 2 MiB, and
   now and then one no allocator can satisfy.  */
static size_t get_size(struct input *in) {
  unsigned k = get8(in);
  if (k < 150) return get8(in);
  if (k < 215) return get16(in);
  if (k < 245) return get24(in) & 0x1fffff;
  static const size_t hopeless[] = { SIZE_MAX, SIZE_MAX - 15, SIZE_MAX / 2, (size_t)PTRDIFF_MAX,
                                     (size_t)PTRDIFF_MAX + 1, (size_t)1 << 62 };
  if (k < 248) return hopeless[get8(in) % (sizeof hopeless / sizeof hopeless[0])];
  return 0;
}

/* Sizes at or above 2^47 may fail (ENOMEM): the address space ends
   there; the harness itself never asks for more than 64 MiB otherwise.  */
static int impossible(size_t n) { return n >= ((size_t)1 << 47); }

/* ---------------------------------------------------------------- patterns */

static void fill(unsigned char *p, size_t off, size_t n, unsigned tag) {
  size_t i = 0;
  while (i < n) {
    size_t k = (tag + off + i) & 255, m = n - i < 256 ? n - i : 256;
    memcpy(p + off + i, pat + k, m);
    i += m;
  }
}

static int holds(const unsigned char *p, size_t off, size_t n, unsigned tag) {
  size_t i = 0;
  while (i < n) {
    size_t k = (tag + off + i) & 255, m = n - i < 256 ? n - i : 256;
    if (memcmp(p + off + i, pat + k, m) != 0) return 0;
    i += m;
  }
  return 1;
}

static void check_edges(const struct slot *s) {
  size_t n = s->usable < 2 * EDGE ? s->usable : EDGE;
  if (!holds(s->p, 0, n, s->tag)) fail("block's start was overwritten", s);
  if (s->usable > n && !holds(s->p, s->usable - EDGE, EDGE, s->tag)) fail("block's end was overwritten", s);
}

static void check_all_contents(void) {
  for (int i = 0; i < NSLOTS; i++)
    if (slots[i].p && !holds(slots[i].p, 0, slots[i].usable, slots[i].tag)) fail("block was overwritten", &slots[i]);
}

/* ---------------------------------------------------------------- the model */

static void check_heap(void) {
  for (struct arena *ar = &main_arena;; ar = ar->next) {
    bool lk = arena_lock(ar);
    if (check_arena(ar) != 0) fail("check_arena", NULL);
    arena_unlock(ar, lk);
    if (ar->next == &main_arena) break;
  }
  if (hpmalloc_check_heap() != 0) fail("hpmalloc_check_heap", NULL);
}

/* A new block p for slot s: check it, record it, fill it.  `keep` bytes at
   its start are already the old contents (realloc); `zero` says calloc.  */
static void adopt(struct slot *s, void *p, size_t req, size_t align, size_t keep, int zero) {
  unsigned char *b = p;
  size_t usable = hpt_malloc_usable_size(p);
  struct slot probe = { b, req, usable, align, s->tag };
  if (usable < req) fail("usable size below the request", &probe);
  size_t a = align > 16 ? align : 16;
  if ((uintptr_t)b & (a - 1)) fail("misaligned block", &probe);
  if (zero)
    for (size_t i = 0; i < req; i++)
      if (b[i]) fail("calloc block not zeroed", &probe);
  if (keep && !holds(b, 0, keep, s->tag)) fail("realloc lost contents", &probe);
  for (int i = 0; i < NSLOTS; i++) {
    const struct slot *o = &slots[i];
    if (o == s || !o->p) continue;
    if (b < o->p + o->usable && o->p < b + usable) fail("blocks overlap", &probe);
  }
  s->p = b;
  s->req = req;
  s->usable = usable;
  s->align = align;
  fill(b, keep, usable - keep, s->tag);
}

static void release(struct slot *s, int how) {
  if (!s->p) return;
  if (!holds(s->p, 0, s->usable, s->tag)) fail("block overwritten before free", s);
  if (how == 1) hpt_free_sized(s->p, s->req);
  else if (how == 2) hpt_free_aligned_sized(s->p, s->align, s->req);
  else hpt_free(s->p);
  s->p = NULL;
}

static void expect_null(void *p, int err, size_t n, const char *what) {
  struct slot probe = { p, n, 0, 0, 0 };
  if (p) fail(what, &probe);
  if (errno != err) fail("wrong errno", &probe);
}

/* The alignment memalign gives for a request of `a`: the next power of
   two, at least 16.  */
static size_t effective_align(size_t a) {
  if (a <= 16) return 16;
  size_t r = 16;
  while (r < a) r <<= 1;
  return r;
}

static void op_alloc(struct slot *s, struct input *in, unsigned kind) {
  release(s, 0);
  s->tag = next_tag++ * 7 + 1;
  size_t n = get_size(in);
  errno = 0;
  switch (kind) {
  case 0: {
    void *p = hpt_malloc(n);
    if (impossible(n)) expect_null(p, ENOMEM, n, "malloc of an impossible size");
    else if (!p) fail("malloc failed", NULL);
    else adopt(s, p, n, 0, 0, 0);
    break;
  }
  case 1: {
    /* the second factor either overflows the product or is 1..16 */
    unsigned f = get8(in);
    size_t m = f % 5 == 0 ? (n > 1 ? SIZE_MAX / n + 1 + (f >> 3) : SIZE_MAX) : f % 16 + 1, prod;
    void *p = hpt_calloc(n, m);
    if (__builtin_mul_overflow(n, m, &prod) || impossible(prod)) expect_null(p, ENOMEM, n, "calloc overflow");
    else if (!p) fail("calloc failed", NULL);
    else adopt(s, p, prod, 0, 0, 1);
    break;
  }
  case 2: { /* memalign / aligned_alloc, any alignment (rounded up to a power of two) */
    unsigned k = get8(in);
    size_t a = k & 0x80 ? (size_t)1 << (k % 21) : (size_t)(k & 0x7f) * 8 + 1;
    void *p = k & 1 ? hpt_memalign(a, n) : hpt_aligned_alloc(a, n);
    if (impossible(n)) expect_null(p, ENOMEM, n, "memalign of an impossible size");
    else if (!p) fail("memalign failed", NULL);
    else adopt(s, p, n, effective_align(a), 0, 0);
    break;
  }
  case 3: { /* posix_memalign, valid and invalid alignments */
    unsigned k = get8(in);
    size_t a = k & 0x80 ? (size_t)1 << (k % 21) : (size_t)(k & 0x7f);
    void *p = (void *)0x1;
    int r = hpt_posix_memalign(&p, a, n);
    int valid = a >= sizeof(void *) && (a & (a - 1)) == 0;
    if (!valid) {
      if (r != EINVAL || p != (void *)0x1) fail("posix_memalign took a bad alignment", NULL);
    } else if (impossible(n)) {
      if (r != ENOMEM || p != (void *)0x1) fail("posix_memalign of an impossible size", NULL);
    } else if (r != 0) {
      fail("posix_memalign failed", NULL);
    } else {
      adopt(s, p, n, a, 0, 0);
    }
    break;
  }
  case 4: { /* valloc, pvalloc */
    size_t pg = mp.page;
    int pv = get8(in) & 1;
    void *p = pv ? hpt_pvalloc(n) : hpt_valloc(n);
    if (impossible(n)) expect_null(p, ENOMEM, n, "valloc of an impossible size");
    else if (!p) fail("valloc failed", NULL);
    else adopt(s, p, n, pg, 0, 0);
    break;
  }
  }
}

static void op_realloc(struct slot *s, struct input *in, int array) {
  size_t n = get_size(in), m = 1, bytes = n;
  if (array) {
    unsigned f = get8(in);
    m = f % 7 == 0 ? (n > 1 ? SIZE_MAX / n + 1 : SIZE_MAX) : f % 4 + 1;
    if (__builtin_mul_overflow(n, m, &bytes)) bytes = SIZE_MAX;
  }
  if (s->p && !holds(s->p, 0, s->usable, s->tag)) fail("block overwritten before realloc", s);
  errno = 0;
  void *q = array ? hpt_reallocarray(s->p, n, m) : hpt_realloc(s->p, n);
  if (impossible(bytes)) {
    expect_null(q, ENOMEM, bytes, "realloc to an impossible size");
    return; /* the old block stays */
  }
  if (bytes == 0 && s->p) {
    /* glibc: realloc (p, 0) frees p and returns NULL */
    if (q) fail("realloc (p, 0) returned a block", s);
    s->p = NULL;
    return;
  }
  if (!q) fail("realloc failed", s);
  size_t keep = s->p ? (s->req < bytes ? s->req : bytes) : 0;
  /* the pattern follows the offset in the block, so the tag is kept */
  if (!s->p) s->tag = next_tag++ * 7 + 1;
  s->p = NULL;
  adopt(s, q, bytes, 0, keep, 0);
}

/* ---------------------------------------------------------------- mallopt */

static struct hp_params saved;
static int saved_mode;
static int saved_ok;

static void op_mallopt(struct input *in) {
  static const int params[] = { M_MXFAST,       M_TRIM_THRESHOLD, M_TOP_PAD,          M_MMAP_THRESHOLD,
                                M_MMAP_MAX,     M_PERTURB,        HPMALLOC_M_HUGETLB, M_ARENA_TEST };
  int param = params[get8(in) % (sizeof params / sizeof params[0])];
  int value;
  unsigned k = get8(in);
  if (param == HPMALLOC_M_HUGETLB) value = (int)(k % 2); /* 0 or THP: mode 2 needs a pool */
  else if (param == M_PERTURB) value = (int)k;
  else if (param == M_MXFAST) value = k < 250 ? (int)k : -1;
  else value = (int)(get24(in) << (k % 8));
  int r = hpt_mallopt(param, value);
  int want = param == M_MXFAST ? value >= 0 && value <= 160 : 1;
  if (param != HPMALLOC_M_HUGETLB && r != want) fail("mallopt's result", NULL);
}

static void restore_params(void) {
  hpt_mallopt(M_MXFAST, 128);
  if (region_get_policy()->mode != saved_mode) hpt_mallopt(HPMALLOC_M_HUGETLB, saved_mode);
  bool lk = arena_lock(&main_arena);
  mp.top_pad = saved.top_pad;
  mp.trim_threshold = saved.trim_threshold;
  mp.mmap_threshold = saved.mmap_threshold;
  mp.n_mmaps_max = saved.n_mmaps_max;
  mp.no_dyn_threshold = saved.no_dyn_threshold;
  mp.perturb = saved.perturb;
  mp.arena_test = saved.arena_test;
  mp.max_fast = saved.max_fast;
  arena_unlock(&main_arena, lk);
}

static void op_mallinfo(void) {
  struct mallinfo2 mi = hpt_mallinfo2();
  if (mi.uordblks + mi.fordblks != mi.arena) fail("mallinfo2: uordblks + fordblks != arena", NULL);
  struct hpmalloc_stats st;
  if (hpmalloc_stats(&st, sizeof st) != 0) fail("hpmalloc_stats", NULL);
  size_t live = 0;
  for (int i = 0; i < NSLOTS; i++)
    if (slots[i].p) live += slots[i].usable;
  if (st.bytes_in_use < live) fail("hpmalloc_stats: bytes_in_use below the live blocks", NULL);
}

/* ---------------------------------------------------------------- driver */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  for (int i = 0; i < 512; i++) pat[i] = (unsigned char)((i & 255) * 167 + 13);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!saved_ok) {
    hp_ensure_init();
    saved = mp;
    saved_mode = region_get_policy()->mode;
    saved_ok = 1;
  }
  struct input in = { data, data + size };
  while (in.p < in.end) {
    unsigned op = get8(&in);
    struct slot *s = &slots[get8(&in) % NSLOTS];
    switch (op % 16) {
    case 0: case 1: case 2: op_alloc(s, &in, 0); break;
    case 3: op_alloc(s, &in, 1); break;
    case 4: op_alloc(s, &in, 2); break;
    case 5: op_alloc(s, &in, 3); break;
    case 6: op_alloc(s, &in, 4); break;
    case 7: case 8: op_realloc(s, &in, 0); break;
    case 9: op_realloc(s, &in, 1); break;
    case 10: release(s, 0); break;
    case 11: release(s, s->align ? 2 : 1); break;
    case 12: if (hpt_malloc_trim(get16(&in)) < 0) fail("malloc_trim", NULL); break;
    case 13: op_mallopt(&in); break;
    case 14: op_mallinfo(); break;
    case 15: if (s->p) check_all_contents(); break;
    }
    for (int i = 0; i < NSLOTS; i++)
      if (slots[i].p) check_edges(&slots[i]);
    check_heap();
  }
  check_all_contents();
  for (int i = 0; i < NSLOTS; i++) release(&slots[i], 0);
  restore_params();
  check_heap();
  return 0;
}
