/* SPDX-License-Identifier: MIT */
/* tcache.h: the per-thread state -- the thread's cache of free chunks
 * (tcache.c) and the arena it is bound to (arena.c).  The cache takes no
 * lock: only its thread touches its bins.  Includes: hp_base.h, chunk.h,
 * check.h, params.h.
 *
 * Size classes.  Bins 0..63 hold one chunk size each, 32 .. 1040 bytes
 * (glibc's tcache bins).  Bins 64.. hold the large classes: eight per
 * doubling of the chunk size above 1024 (1152, 1280, ... 2048, 2304, ...
 * up to TC_MAX_CHUNK); a request in that range is rounded up to its class,
 * so every chunk in a large bin has the class's size too (at most 12.5%
 * more than asked).  A bin is a LIFO list through the chunks themselves,
 * safe-linked, each entry carrying hp_tcache_key so a second free of it is
 * caught, as in glibc.
 *
 * A bin is used when glibc.malloc.tcache_max (default: all of them) lets
 * the cache take its size: mp.tcache_bins small ones, mp.tcache_large_bins
 * large ones.
 *
 * Capacity.  Each bin may hold up to `cap` chunks.  With
 * glibc.malloc.tcache_count set, every cap is that number, fixed, as in
 * glibc.  Otherwise caps adapt (tcache.c): a bin that misses on malloc or
 * overflows on free doubles its cap, within the thread's byte budget
 * (hpmalloc.tcache_bytes, counted over the caps, so the fast paths count
 * nothing); every TC_GC_EVENTS slow-path events a pass gives back three
 * quarters of what stayed unused in each idle bin since the last pass (its
 * low-water mark) and lowers its cap as much, and once the budget is spent
 * it shares the budget again among the busy bins by their traffic and
 * size (tcache.c, rebalance).  Refills and flushes move many chunks per
 * arena lock.
 *
 * Whose chunks.  The bins take only chunks of the thread's own arena
 * (hp_self.home says which: arena_home_tag).  A block another thread
 * allocated goes on the thread's foreign list instead -- safe-linked and
 * keyed as a bin is, so a second free of it is caught at the call -- and
 * the list goes home by the batch (TC_FOREIGN_BATCH chunks or
 * TC_FOREIGN_BYTES, one lock per arena): the small chunks into the
 * arena's inbox (inbox.h), which the next refill of a thread of that
 * arena empties into its bins.  So a thread reuses only memory
 * its own arena handed out, and two threads' blocks do not end up side by
 * side in one cache line: on larson, where each thread inherits the
 * other's blocks every round, caching them cost a quarter more CPU time
 * than sending them home (malloc/README.md, "Whose chunks").  */
#ifndef HP_TCACHE_H
#define HP_TCACHE_H

#include "check.h"
#include "chunk.h"
#include "hp_base.h"
#include "params.h"

enum {
  TC_SMALL_BINS = 64,                                                      /* exact sizes, 32 .. 1040 */
  TC_SMALL_MAX_CHUNK = MINSIZE + (TC_SMALL_BINS - 1) * HP_ALIGN,           /* 1040, FASTBIN_MAX_CHUNK */
  TC_LARGE_SHIFT = 3,                                                      /* 2^3 classes per doubling */
  TC_LARGE_MIN_LOG = 10,                                                   /* the first large doubling: (1024, 2048] */
  TC_LARGE_MAX_LOG = 15,                                                   /* the last one ends at 2^15 */
  TC_MAX_CHUNK = 1 << TC_LARGE_MAX_LOG,                                    /* 32768 */
  TC_LARGE_BINS = (TC_LARGE_MAX_LOG - TC_LARGE_MIN_LOG) << TC_LARGE_SHIFT, /* 40 */
  TC_BINS = TC_SMALL_BINS + TC_LARGE_BINS,
  TC_GC_EVENTS = 256,         /* slow-path events between two passes of the cache's gc */
  TC_PROBE_EVERY = 8,         /* an arena whose flushes merge still parks one flush in this many */
  TC_PARK_WINDOW = 1 << 22,   /* chunks an arena's flushes parked after which its record halves */
  TC_FOREIGN_BATCH = 64,      /* the foreign list goes home at this many chunks... */
  TC_FOREIGN_BYTES = 1 << 16, /* ...or this many bytes */
};

struct tc_entry {
  struct tc_entry *next; /* mangled (safe-linking) */
  uintptr_t key;         /* hp_tcache_key while in the cache: double-free detection */
};

struct tc_bin {
  struct tc_entry *head;
  uint16_t count;  /* chunks in the bin */
  uint16_t cap;    /* the most it may hold now; 0 while the cache is off */
  uint16_t low;    /* the least it held since the last gc pass */
  uint16_t events; /* its misses and overflows, halved at each gc pass */
};

struct arena;

/* The cache a thread left its arena when it exited (tcache.c, "Left
   caches"): its bins as they were, for the next thread bound to the
   arena to take whole.  In struct arena; guarded by hp_list_lock.  */
struct tc_left {
  struct tc_bin bins[TC_BINS];
  size_t cap_bytes; /* the leaving thread's: the caps come with the bins */
  bool held;
};

/* A thread's state: hp_self.state, changed only by the thread itself.
     NEW       no allocator call yet (0, what TLS starts with): no cache,
               not on the list of threads;
     CACHING   on the list, the cache on;
     UNCACHED  on the list, the cache off: under valgrind, with
               tcache_count=0 or no bin in use, or switched off;
     DONE      its key destructor ran: off the list, no cache; a later
               call (another destructor's) allocates from the main arena.
   Transitions:
     NEW -> CACHING or UNCACHED   its first call (tcache_thread_start);
     CACHING -> UNCACHED          tcache_switch_off (its exit; tests);
     CACHING, UNCACHED -> DONE    its exit (arena.c, thread_exit), after
                                  tcache_thread_end left the list.
   Apart from it, one flag: in_fork, set by fork_prepare once the thread
   holds every lock and cleared by fork_parent and fork_child (arena.c);
   while it is set the thread takes no lock, since it holds them all.  */
enum hp_thread_state { HP_THREAD_NEW = 0, HP_THREAD_CACHING, HP_THREAD_UNCACHED, HP_THREAD_DONE };

struct hp_thread {
  struct tc_bin bins[TC_BINS];
  uint8_t state;            /* enum hp_thread_state: read by free's inline path */
  unsigned events;          /* slow-path events (misses, overflows) since the last gc pass */
  size_t cap_bytes;         /* sum over the bins of cap * class size: what the caps let the cache hold */
  struct arena *arena;      /* arena this thread allocates from */
  uintptr_t home;           /* arena_home_tag(arena): the chunks the bins take (tcache.h) */
  struct tc_entry *foreign; /* other arenas' chunks on their way home, safe-linked, with the key */
  size_t foreign_count;     /* chunks on that list */
  size_t foreign_bytes;     /* and their bytes */
  bool in_fork;             /* this thread holds every lock for fork(): it takes none (above) */
  /* Guarded by hp_list_lock: the list of every thread's state, for the statistics.  */
  struct hp_thread *next_thread, **prev_next;
};

extern __thread struct hp_thread hp_self HP_INTERNAL __attribute__((tls_model("initial-exec")));
extern size_t hp_tc_max_request HP_INTERNAL; /* largest request the small bins serve; 0 before init */
extern uintptr_t hp_tcache_key HP_INTERNAL;  /* random, odd; set once at start-up */

/* Is the thread's cache on?  Has the thread made its first call and not
   exited yet?  */
static inline bool tcache_on(void) { return hp_self.state == HP_THREAD_CACHING; }
static inline bool thread_active(void) {
  return hp_self.state == HP_THREAD_CACHING || hp_self.state == HP_THREAD_UNCACHED;
}

/* The small bin of a chunk size (and the usable size of a small bin).  */
static inline size_t csize2tidx(size_t csz) { return (csz - MINSIZE) / HP_ALIGN; }
/* The small bin of chunk size csz: bins lie HP_ALIGN bytes apart, as
   classes do, so csz - MINSIZE is the bin's byte offset (free's inline
   path saves the shift there and back).  */
_Static_assert(sizeof(struct tc_bin) == HP_ALIGN, "a small bin per HP_ALIGN bytes of chunk size");
static inline struct tc_bin *tcache_small_bin(size_t csz) {
  return (struct tc_bin *)((char *)hp_self.bins + (csz - MINSIZE));
}
static inline size_t tidx2usize(size_t i) { return i * HP_ALIGN + MINSIZE - SIZE_SZ; }

/* The large class of a chunk size in (TC_SMALL_MAX_CHUNK, TC_MAX_CHUNK]:
   its bin, and the class's chunk size (csz rounded up).  */
static inline size_t tc_large_bin(size_t csz) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(csz - 1)); /* csz in (2^lg, 2^(lg+1)] */
  size_t step = (size_t)1 << (lg - TC_LARGE_SHIFT);
  return TC_SMALL_BINS + ((size_t)(lg - TC_LARGE_MIN_LOG) << TC_LARGE_SHIFT) + ((csz - 1 - ((size_t)1 << lg)) / step);
}
static inline size_t tc_large_size(size_t csz) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(csz - 1));
  return align_up(csz, (size_t)1 << (lg - TC_LARGE_SHIFT));
}
/* The chunk size of any bin.  */
HP_INTERNAL size_t tc_bin_size(size_t tidx);

/* The bin in use that serves requests of chunk size *nb, rounding *nb up
   to a large class; TC_BINS (and *nb as it was) when no bin does.  */
static inline size_t tcache_class(size_t *nb) {
  if (*nb <= TC_SMALL_MAX_CHUNK) {
    size_t t = csize2tidx(*nb);
    return t < mp.tcache_bins ? t : TC_BINS;
  }
  if (*nb > TC_MAX_CHUNK || mp.tcache_large_bins == 0) return TC_BINS;
  size_t t = tc_large_bin(*nb);
  if (t >= TC_SMALL_BINS + mp.tcache_large_bins) return TC_BINS;
  *nb = tc_large_size(*nb);
  return t;
}

/* The bin in use that takes a free chunk of exactly csz bytes, or TC_BINS.  */
static inline size_t tcache_bin_of(size_t csz) {
  size_t nb = csz, t = tcache_class(&nb);
  return nb == csz ? t : TC_BINS;
}

/* e carries the key: a block freed already, found in bin tidx (hp_fatal
   with msg), or a coincidence.  */
HP_INTERNAL void tcache_fatal_if_cached(const struct tc_entry *e, size_t tidx, const char *msg);
HP_INTERNAL void tcache_put_foreign(struct chunk *c);

/* Push in-use chunk e on bin b (the caller checked room).  */
static inline void tcache_push(struct tc_bin *b, struct tc_entry *e) {
  HP_ASSERT(b->count < b->cap);
  e->key = hp_tcache_key;
  e->next = (struct tc_entry *)protect_ptr(&e->next, b->head);
  b->head = e;
  b->count++;
}
/* Push in-use chunk c on bin tidx (the caller checked room).  */
static inline void tcache_put(struct chunk *c, size_t tidx) {
  tcache_push(&hp_self.bins[tidx], (struct tc_entry *)chunk2mem(c));
}

/* Pop from non-empty bin tidx.  */
static inline void *tcache_get(size_t tidx) {
  struct tc_bin *b = &hp_self.bins[tidx];
  struct tc_entry *e = b->head;
  HP_ASSERT(e != NULL && b->count > 0);
  if (HP_UNLIKELY(!aligned_ok((uintptr_t)e))) hp_fatal("malloc(): unaligned tcache chunk detected");
  b->head = (struct tc_entry *)reveal_ptr(&e->next, e->next);
  uint16_t n = --b->count;
  if (HP_UNLIKELY(n < b->low)) b->low = n;
  e->key = 0;
  return e;
}

/* May a refill still put a chunk in bin tidx?  */
static inline bool tcache_room(size_t tidx) { return hp_self.bins[tidx].count < hp_self.bins[tidx].cap; }

/* The thread's first allocator call: switch its cache on.  */
HP_INTERNAL void tcache_thread_start(void);
/* Give every cached chunk back to its arena and switch the cache off (a
   thread that exits).  */
HP_INTERNAL void tcache_switch_off(void);
/* Give every cached chunk back, and every left cache, and start again
   with the initial caps (malloc_trim).  */
HP_INTERNAL void tcache_reset(void);
/* The thread is exiting: leave the cache to the arena or flush it, and
   leave the list of threads.  */
HP_INTERNAL void tcache_thread_end(void);
/* The thread was bound to arena ar: take the cache a thread left there,
   if the thread's own bins are empty.  */
HP_INTERNAL void tcache_adopt(struct arena *ar);
/* In a fork child (every lock held): the forking thread is the only one.  */
HP_INTERNAL void tcache_fork_child(void);

/* The slow paths.  Both run without any lock held.  */
/* malloc of chunk size nb (its bin tidx, empty) missed: serve it from the
   thread's arena, filling the bin on the way.  NULL (errno ENOMEM) when
   no arena can.  */
HP_INTERNAL void *tcache_refill(size_t tidx, size_t nb);
/* free of chunk c: its bin tidx is full.  */
HP_INTERNAL void tcache_overflow(struct chunk *c, size_t tidx);
/* Before a chunk is cached off the inline path: what glibc's free checks
   of its neighbours (hp_fatal with glibc's message on corruption).  */
HP_INTERNAL void tcache_check_neighbours(const struct chunk *c);

/* Every live thread's cache and every left cache, for the statistics:
   chunks and bytes.  */
HP_INTERNAL void tcache_totals(size_t *count, size_t *bytes);

/* Set from the tunables at start-up (init.c): whether caps are fixed, the
   initial cap and the byte budget.  */
HP_INTERNAL void tcache_configure(void);

#endif
