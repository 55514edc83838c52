/* tcache.h: the per-thread state -- the thread's cache of free chunks
 * (tcache.c) and the arena it is bound to (arena.c).  The cache takes no
 * lock: only its thread touches it.  Includes: hp_base.h, chunk.h, check.h.  */
#ifndef HP_TCACHE_H
#define HP_TCACHE_H

#include "check.h"
#include "chunk.h"
#include "hp_base.h"

enum { TCACHE_MAX_BINS = 64 };

struct tc_entry {
  struct tc_entry *next; /* mangled (safe-linking) */
  uintptr_t key;         /* hp_tcache_key while in the cache: double-free detection */
};

struct arena;

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
extern uintptr_t hp_tcache_key HP_INTERNAL;  /* random, odd; set once at start-up */

static inline size_t csize2tidx(size_t csz) { return (csz - MINSIZE) / HP_ALIGN; }
static inline size_t tidx2usize(size_t i) { return i * HP_ALIGN + MINSIZE - SIZE_SZ; }

/* e carries the key: a double free (hp_fatal) or a coincidence.  */
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

/* The thread's first allocator call: switch its cache on.  */
HP_INTERNAL void tcache_thread_start(void);
/* Give every cached chunk back to its arena and switch the cache off.  */
HP_INTERNAL void tcache_flush(void);

#endif
