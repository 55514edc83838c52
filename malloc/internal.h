/* internal.h: the structures shared by the files of malloc/ and the
 * functions each file offers the others.  Which lock guards what is said
 * at each field.  */
#ifndef HP_INTERNAL_H
#define HP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>

#include "chunk.h"
#include "hp_sys.h"
#include "tunables.h"

/* ------------------------------------------------------------------ regions (region.c) */

enum hp_region_kind { HP_REGION_BASE = 0, HP_REGION_THP = 1, HP_REGION_HUGETLB = 2 };

/* The kernel, as region.c sees it: a table so tests can fake it.  */
struct hp_kernel_ops {
  void *(*map)(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge_size);
  int (*unmap)(void *addr, size_t len);
  int (*protect)(void *addr, size_t len, enum hp_prot prot);
  int (*advise)(void *addr, size_t len, enum hp_advice adv);
  void *(*remap)(void *old, size_t oldlen, size_t newlen, int may_move);
  int (*resident)(void *addr, size_t len);
};
extern struct hp_kernel_ops hp_kernel HP_INTERNAL;

/* A reserved span of address space, committed from its start upwards.  */
struct region {
  char *base;       /* start (aligned as requested) */
  size_t reserved;  /* bytes of address space held */
  size_t committed; /* bytes from base that are readable and writable */
  size_t page;      /* commit granularity: base page or huge page */
  enum hp_region_kind kind;
  bool guard; /* an inaccessible page of ours sits right below base */
};

HP_INTERNAL int region_reserve(struct region *r, size_t len, size_t align, enum hp_region_kind want);
HP_INTERNAL int region_extend(struct region *r, size_t more);
HP_INTERNAL int region_commit(struct region *r, size_t upto);
HP_INTERNAL void region_decommit(struct region *r, size_t downto);
HP_INTERNAL void region_release(struct region *r);
HP_INTERNAL size_t region_huge_page(enum hp_region_kind kind);
HP_INTERNAL void *region_map_chunk(size_t *len, enum hp_region_kind *kind);
HP_INTERNAL void region_unmap_chunk(void *p, size_t len);
HP_INTERNAL enum hp_region_kind region_kind_for_mode(void);

/* ------------------------------------------------------------------ the arena lock
 * One word: 0 free, 1 taken, 2 taken and someone may sleep on it.  Taken
 * with one compare-and-swap when free; contended, it spins briefly, then
 * sleeps in the kernel (futex) -- the classic three-state mutex.  Cheaper
 * than pthread_mutex_t on the paths every free and malloc miss take.  */
typedef struct {
  int v;
} hp_lock_t;

static inline void hp_lock_init(hp_lock_t *l) { __atomic_store_n(&l->v, 0, __ATOMIC_RELAXED); }
static inline bool hp_lock_try(hp_lock_t *l) {
  int expected = 0;
  return __atomic_compare_exchange_n(&l->v, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
HP_INTERNAL void hp_lock_slow(hp_lock_t *l);
static inline void hp_lock(hp_lock_t *l) {
  if (HP_UNLIKELY(!hp_lock_try(l))) hp_lock_slow(l);
}
static inline void hp_unlock(hp_lock_t *l) {
  if (HP_UNLIKELY(__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)) hp_os_futex_wake(&l->v, 1);
}

/* ------------------------------------------------------------------ heaps and arenas */

/* A heap: one region holding chunks of one arena.  Non-main heaps are
   aligned to heap_max so a chunk finds its heap by masking its address.  */
struct heap {
  struct arena *ar;    /* owner */
  struct heap *prev;   /* older heap of the same arena, or NULL */
  struct region reg;   /* the address space */
  struct chunk *first; /* the heap's first chunk */
  struct chunk *fence; /* when sealed (not the arena's current heap): the fencepost chunk */
};

struct arena {
  hp_lock_t lock;
  /* Everything below is guarded by lock.  */
  struct chunk *fastbins[NFASTBINS]; /* pushed without the lock (atomics), popped with it */
  struct chunk *top;
  struct chunk *last_remainder;
  struct chunk bins[NBINS]; /* bin headers: only fd and bk are used */
  unsigned binmap[BINMAPSIZE];
  bool have_fastchunks; /* set without the lock, cleared with it (atomics) */
  struct heap *heap;    /* current heap (holds top) */
  size_t system_mem;    /* committed bytes in this arena's heaps */
  size_t max_system_mem;
  size_t n_heaps;
  size_t bytes_thp, bytes_hugetlb; /* committed bytes by kind */
  int index;                       /* 0 = main arena */
  /* Guarded by hp_list_lock: */
  struct arena *next;      /* all arenas, a ring starting at the main arena */
  struct arena *next_free; /* arenas with no attached thread */
  size_t attached_threads;
};

/* Allocator-wide parameters, set at init and by mallopt (under the main
   arena lock).  */
struct hp_params {
  size_t top_pad;
  size_t trim_threshold;
  size_t mmap_threshold;
  int n_mmaps_max;
  bool no_dyn_threshold; /* a threshold was set: no dynamic adjustment */
  size_t arena_test;
  size_t arena_max;
  size_t max_fast; /* largest fastbin chunk size (0 disables) */
  int perturb;
  int check_action;
  size_t tcache_max_bytes;
  size_t tcache_bins;
  size_t tcache_count;
  size_t tcache_unsorted_limit;
  int hugetlb_mode;    /* 0, 1, 2 as resolved */
  size_t hugetlb_size; /* hugetlb page size in mode 2 */
  size_t thp_size;     /* PMD size used in mode 1 */
  size_t huge_waste_pct;
  const char *mode_reason; /* why the mode resolved as it did */
  size_t heap_max;         /* size and alignment of non-main heaps (power of two) */
  size_t page;             /* base page size */
  size_t max_request;      /* larger requests fail at once (address space, PTRDIFF_MAX) */
  /* statistics (atomic) */
  _Atomic size_t n_mmaps, max_n_mmaps;
  _Atomic size_t mmapped_mem, max_mmapped_mem;
  _Atomic size_t mmapped_thp, mmapped_hugetlb;
  _Atomic size_t fallbacks_hugetlb, fallbacks_thp;
  _Atomic size_t n_arenas;
};
extern struct hp_params mp HP_INTERNAL;
extern struct hp_sysinfo hp_sysinfo HP_INTERNAL;
extern struct hp_placement hp_placement HP_INTERNAL;
extern struct arena main_arena HP_INTERNAL;
extern pthread_mutex_t hp_list_lock HP_INTERNAL;
extern uintptr_t hp_tcache_key HP_INTERNAL;
extern bool hp_vg HP_INTERNAL; /* running under valgrind */
extern _Atomic int hp_initialized HP_INTERNAL;

static inline struct heap *heap_for_ptr(const void *p) {
  return (struct heap *)((uintptr_t)p & ~(uintptr_t)(mp.heap_max - 1));
}
static inline struct arena *arena_for_chunk(const struct chunk *c) {
  return chunk_main_arena(c) ? &main_arena : heap_for_ptr(c)->ar;
}
static inline struct chunk *bin_at(struct arena *ar, unsigned i) { return &ar->bins[i]; }

/* ------------------------------------------------------------------ per thread (tcache.c) */

enum { TCACHE_MAX_BINS = 64 };

struct tc_entry {
  struct tc_entry *next; /* mangled */
  uintptr_t key;         /* hp_tcache_key while in the cache: double-free detection */
};

struct hp_thread {
  struct tc_entry *entries[TCACHE_MAX_BINS];
  uint16_t counts[TCACHE_MAX_BINS];
  size_t limit;        /* max entries per bin; 0 = tcache off for this thread */
  struct arena *arena; /* arena this thread allocates from */
  int state;           /* HP_THREAD_NEW, _ACTIVE, _DONE */
  bool in_fork;        /* this thread holds every arena lock for fork(): lock nothing */
};
enum { HP_THREAD_NEW = 0, HP_THREAD_ACTIVE = 1, HP_THREAD_DONE = 2 };

extern __thread struct hp_thread hp_self HP_INTERNAL __attribute__((tls_model("initial-exec")));
extern size_t hp_tc_max_request HP_INTERNAL; /* largest request the tcache serves; 0 before init */

/* glibc's flag: true until the process creates its first thread (and
   again in a fork child).  Only the one thread can change it, and never
   inside an allocator call, so a lock skipped on entry is skipped on exit.  */
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): glibc's name
extern char __libc_single_threaded __attribute__((weak));
static inline bool hp_single_threaded(void) { return &__libc_single_threaded && __libc_single_threaded; }

/* No locking while the process has one thread (as glibc); and while a
   thread forks it holds every lock, so a malloc from an atfork handler of
   that thread must not take them again.  */
static inline bool arena_needs_lock(void) { return !hp_single_threaded() && !hp_self.in_fork; }
static inline void arena_lock(struct arena *ar) {
  if (arena_needs_lock()) hp_lock(&ar->lock);
}
static inline void arena_unlock(struct arena *ar) {
  if (arena_needs_lock()) hp_unlock(&ar->lock);
}
/* The same for hot paths: decide once, pass the answer to the unlock.  */
static inline bool arena_lock_if_needed(struct arena *ar) {
  bool lk = arena_needs_lock();
  if (lk) hp_lock(&ar->lock);
  return lk;
}
static inline void arena_unlock_if(struct arena *ar, bool lk) {
  if (lk) hp_unlock(&ar->lock);
}

static inline size_t csize2tidx(size_t csz) { return (csz - MINSIZE) / HP_ALIGN; }
static inline size_t tidx2usize(size_t i) { return i * HP_ALIGN + MINSIZE - SIZE_SZ; }

__attribute__((noreturn, cold)) HP_INTERNAL void hp_fatal(const char *msg);
HP_INTERNAL void tcache_double_free_scan(struct tc_entry *e, size_t tidx);

/* Push in-use chunk c on this thread's cache (the caller checked room).  */
static inline void tcache_put(struct chunk *c, size_t tidx) {
  struct tc_entry *e = (struct tc_entry *)chunk2mem(c);
  e->key = hp_tcache_key;
  e->next = (struct tc_entry *)protect_ptr(&e->next, hp_self.entries[tidx]);
  hp_self.entries[tidx] = e;
  hp_self.counts[tidx]++;
}

/* Pop from a non-empty bin of this thread's cache.  */
static inline void *tcache_get(size_t tidx) {
  struct tc_entry *e = hp_self.entries[tidx];
  if (HP_UNLIKELY(!aligned_ok((uintptr_t)e))) hp_fatal("malloc(): unaligned tcache chunk detected");
  hp_self.entries[tidx] = (struct tc_entry *)reveal_ptr(&e->next, e->next);
  hp_self.counts[tidx]--;
  e->key = 0;
  return e;
}
HP_INTERNAL void tcache_thread_start(void);
HP_INTERNAL void tcache_flush(void);

/* ------------------------------------------------------------------ bins.c */
HP_INTERNAL void *int_malloc(struct arena *ar, size_t bytes);
HP_INTERNAL void int_free(struct arena *ar, struct chunk *c);
HP_INTERNAL void int_free_locked(struct arena *ar, struct chunk *c);
HP_INTERNAL void int_free_no_trim(struct arena *ar, struct chunk *c);
HP_INTERNAL void fastbin_push(struct arena *ar, struct chunk *p);
HP_INTERNAL void malloc_consolidate(struct arena *ar);
HP_INTERNAL void *int_realloc(struct arena *ar, struct chunk *old, size_t oldsize, size_t nb);
HP_INTERNAL void *int_memalign(struct arena *ar, size_t alignment, size_t bytes);
HP_INTERNAL void unlink_chunk(struct arena *ar, struct chunk *c);
HP_INTERNAL void arena_bins_init(struct arena *ar);
HP_INTERNAL void *top_take(struct arena *ar, size_t nb);

/* ------------------------------------------------------------------ top.c */
HP_INTERNAL void *sys_grow(struct arena *ar, size_t nb);
HP_INTERNAL int sys_trim(struct arena *ar, size_t pad);
HP_INTERNAL void heap_release_drained(struct arena *ar, struct chunk *c);
HP_INTERNAL int heap_create_first(struct arena *ar, struct heap **out, size_t extra);
HP_INTERNAL void heap_attach_arena_top(struct arena *ar, struct heap *h, char *first);

/* ------------------------------------------------------------------ mmapped.c */
HP_INTERNAL bool mmap_chunk_wanted(size_t nb);
HP_INTERNAL void *mmap_chunk(size_t nb);
HP_INTERNAL void munmap_chunk(struct chunk *c);
HP_INTERNAL void *mremap_chunk(struct chunk *c, size_t nb);
HP_INTERNAL size_t mmapped_region_size(const struct chunk *c);

/* ------------------------------------------------------------------ arena.c */
HP_INTERNAL struct arena *arena_get(void);
static inline struct arena *arena_of_thread(void) {
  struct arena *ar = hp_self.arena;
  return HP_LIKELY(ar != NULL) ? ar : arena_get();
}
HP_INTERNAL struct arena *arena_retry(const struct arena *ar);
HP_INTERNAL void arena_thread_detach(void);
HP_INTERNAL void arena_thread_register(void);
HP_INTERNAL void arena_init_struct(struct arena *ar, int index);
HP_INTERNAL void arena_fork_setup(void);

/* ------------------------------------------------------------------ init.c */
HP_INTERNAL void hp_init_slow(void);
static inline void hp_ensure_init(void) {
  if (HP_UNLIKELY(atomic_load_explicit(&hp_initialized, memory_order_acquire) != 2)) hp_init_slow();
}
HP_INTERNAL void hp_apply_tunables(const struct hp_tunable_values *tv);
HP_INTERNAL int hp_mallopt(int param, int value);

/* ------------------------------------------------------------------ check.c */
HP_INTERNAL int check_arena(struct arena *ar);
HP_INTERNAL void check_chunk_free(struct arena *ar, struct chunk *c);

/* ------------------------------------------------------------------ stats.c */
struct hp_arena_stats {
  size_t system, inuse, free, fast_count, fast_bytes, ordblks, top;
  size_t thp, hugetlb, heaps;
};
HP_INTERNAL void arena_collect(struct arena *ar, struct hp_arena_stats *st);
struct hpmalloc_stats;
HP_INTERNAL struct mallinfo2 hp_mallinfo2(void);
HP_INTERNAL struct mallinfo hp_mallinfo(void);
HP_INTERNAL void hp_malloc_stats(void);
HP_INTERNAL int hp_malloc_info(int options, FILE *fp);
HP_INTERNAL int hp_stats(struct hpmalloc_stats *out, size_t size);

/* ------------------------------------------------------------------ valgrind
 * Under memcheck, hpmalloc's own code reads and writes its metadata inside
 * blocks the program has freed; error reporting is off while it does, and
 * the program's own accesses are checked as usual.  */
#ifdef HP_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
static inline void vg_enter(void) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_DISABLE_ERROR_REPORTING;
}
static inline void vg_leave(void) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_ENABLE_ERROR_REPORTING;
}
/* A value computed from metadata with reporting off may carry memcheck's
   "undefined" shadow of the blocks around it; what hpmalloc hands to the
   program (pointers, sizes, statistics) is real and defined.  */
static inline void vg_define(void *v, size_t len) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_MAKE_MEM_DEFINED(v, len);
}
#else
static inline void vg_enter(void) {}
static inline void vg_leave(void) {}
static inline void vg_define(void *v, size_t len) {
  (void)v;
  (void)len;
}
#endif

/* ------------------------------------------------------------------ perturb */
static inline void perturb_alloc(void *p, size_t n) {
  if (HP_UNLIKELY(mp.perturb)) __builtin_memset(p, mp.perturb ^ 0xff, n);
}
static inline void perturb_free(void *p, size_t n) {
  if (HP_UNLIKELY(mp.perturb)) __builtin_memset(p, mp.perturb, n);
}

/* ------------------------------------------------------------------ helpers */
static inline size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
static inline size_t align_down(size_t v, size_t a) { return v & ~(a - 1); }
static inline bool is_pow2(size_t v) { return v && !(v & (v - 1)); }

#endif
