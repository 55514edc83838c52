/* SPDX-License-Identifier: MIT */
/* arena.h: heaps and arenas, which thread uses which, and the arena lock
 * discipline (arena.c).  Includes: hp_base.h, chunk.h, inbox.h, lock.h,
 * params.h, region.h, tcache.h.
 *
 * Locks: each arena's lock guards everything in it; hp_list_lock guards
 * the list of arenas and the free list.  Lock order: stdio's list lock,
 * then hp_list_lock, then arenas in ring order (only fork takes more than
 * one arena lock).  */
#ifndef HP_ARENA_H
#define HP_ARENA_H

#include <pthread.h>

#include "chunk.h"
#include "hp_base.h"
#include "inbox.h"
#include "lock.h"
#include "params.h"
#include "region.h"
#include "tcache.h"

/* A heap: one region holding chunks of one arena.  Non-main heaps are
   aligned to heap_max so a chunk finds its heap by masking its address.  */
struct heap {
  struct arena *ar;    /* owner */
  struct heap *prev;   /* older heap of the same arena, or NULL */
  struct region reg;   /* the address space */
  struct chunk *first; /* the heap's first chunk */
  struct chunk *fence; /* when sealed (not the arena's current heap): the fencepost chunk */
  size_t extend_cap;   /* main heap: the most an extension in place tries, halved each time a
                          larger one did not fit (the space above is taken); 0: no bound */
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
  /* What became of the small chunks the cache's flushes parked on this
     arena's fastbins, for the flush's choice between parking and merging
     (tcache.c): chunks parked, fastbin chunks malloc_consolidate merged,
     flushes seen.  */
  size_t flush_parked, fast_merged;
  unsigned flushes;
  /* Top kept beyond top_pad when free trims (top.c, trim_keep), and
     whether the heap was trimmed since it last grew.  */
  size_t trim_keep;
  bool trimmed;
  struct inbox inbox; /* guarded by inbox.lock (inbox.h) */
  /* Guarded by hp_list_lock: */
  struct tc_left left;     /* the cache its last thread left (tcache.h) */
  struct arena *next;      /* all arenas, a ring starting at the main arena (see arena_next) */
  struct arena *next_free; /* arenas with no attached thread */
  size_t attached_threads;
};

extern struct arena main_arena HP_INTERNAL;
extern pthread_mutex_t hp_list_lock HP_INTERNAL;
#if HP_DEBUG
/* The debug build's record of hp_list_lock's holder (lock.h, hp_lock_me).  */
extern const void *hp_list_owner HP_INTERNAL;
#endif
/* Take and release hp_list_lock, except in a fork handler of the forking
   thread, which holds it already.  */
static inline void list_lock(void) {
  if (hp_self.in_fork) return;
  pthread_mutex_lock(&hp_list_lock);
#if HP_DEBUG
  __atomic_store_n(&hp_list_owner, (const void *)&hp_lock_me, __ATOMIC_RELAXED);
#endif
}
static inline void list_unlock(void) {
  if (hp_self.in_fork) return;
#if HP_DEBUG
  HP_ASSERT(hp_list_owner == &hp_lock_me);
  __atomic_store_n(&hp_list_owner, NULL, __ATOMIC_RELAXED);
#endif
  pthread_mutex_unlock(&hp_list_lock);
}
/* Does the calling thread hold hp_list_lock (or every lock, forking)?
   Always true in the release build: only for HP_ASSERT.  */
static inline bool list_held(void) {
#if HP_DEBUG
  return hp_self.in_fork || __atomic_load_n(&hp_list_owner, __ATOMIC_RELAXED) == &hp_lock_me;
#else
  return true;
#endif
}

/* The arenas form a ring that starts at the main arena.  A new arena is
   linked in right after the main arena, with a release store, once it is
   wholly set up, and no arena is ever unlinked; so a walk with acquire
   loads needs no lock and sees only initialised arenas (it may miss one
   created meanwhile).  Walk them as
     for (struct arena *ar = &main_arena; ar; ar = arena_next(ar))  */
static inline struct arena *arena_next(const struct arena *ar) {
  struct arena *n = __atomic_load_n(&ar->next, __ATOMIC_ACQUIRE);
  return n == &main_arena ? NULL : n;
}

static inline struct heap *heap_for_ptr(const void *p) {
  return (struct heap *)((uintptr_t)p & ~(uintptr_t)(mp.heap_max - 1));
}
static inline struct arena *arena_for_chunk(const struct chunk *c) {
  return chunk_main_arena(c) ? &main_arena : heap_for_ptr(c)->ar;
}
static inline struct chunk *bin_at(struct arena *ar, unsigned i) { return &ar->bins[i]; }
/* What identifies ar's chunks to free's fast path: 0 for the main arena
   (its chunks' headers say so), the arena's address for another (found
   from the chunk's heap), 1 for none (a thread not bound yet).  */
static inline uintptr_t arena_home_tag(const struct arena *ar) {
  return ar == NULL ? 1 : ar == &main_arena ? 0 : (uintptr_t)ar;
}
static inline size_t arena_flag(const struct arena *ar) { return ar == &main_arena ? 0 : NON_MAIN_ARENA; }

/* The one way to take an arena's lock, and its inbox's.  No locking
   while the process has one thread (as glibc); and while a thread forks
   it holds every lock, so a malloc from an atfork handler of that thread
   must not take them again (hp_self.in_fork).  The lock call says
   whether it took the lock, and the unlock is given that answer:
     bool lk = arena_lock(ar);
     ...
     arena_unlock(ar, lk);  */
static inline bool arena_needs_lock(void) { return !hp_single_threaded() && !hp_self.in_fork; }
static inline bool arena_lock(struct arena *ar) {
  bool lk = arena_needs_lock();
  if (lk) hp_lock(&ar->lock);
  return lk;
}
static inline void arena_unlock(struct arena *ar, bool lk) {
  if (lk) hp_unlock(&ar->lock);
}
static inline bool inbox_lock(struct arena *ar) {
  bool lk = arena_needs_lock();
  if (lk) hp_lock(&ar->inbox.lock);
  return lk;
}
static inline void inbox_unlock(struct arena *ar, bool lk) {
  if (lk) hp_unlock(&ar->inbox.lock);
}
/* May the calling thread use what ar's lock guards: does it hold the
   lock, or need none?  Only for HP_ASSERT ("the caller holds the arena's
   lock"): the release build cannot tell, and says yes.  */
static inline bool arena_held(const struct arena *ar) { return !arena_needs_lock() || hp_lock_held(&ar->lock); }
static inline bool inbox_held(const struct arena *ar) { return !arena_needs_lock() || hp_lock_held(&ar->inbox.lock); }

/* The calling thread's arena, bound on its first call.  */
HP_INTERNAL struct arena *arena_bind_thread(void);
static inline struct arena *arena_of_thread(void) {
  struct arena *ar = hp_self.arena;
  return HP_LIKELY(ar != NULL) ? ar : arena_bind_thread();
}
/* ar could not serve a request: another arena to try once, without
   binding the thread to it -- the main arena for a thread arena; for the
   main arena, another existing arena, else a new one while the arena
   limit allows; NULL when there is none.  */
HP_INTERNAL struct arena *arena_other_or_new(const struct arena *ar);
HP_INTERNAL void arena_thread_detach(void);
HP_INTERNAL void arena_thread_register(void);
HP_INTERNAL void arena_init_struct(struct arena *ar, int index);
/* Start-up phase 2: fork handlers and the thread-exit key.  */
HP_INTERNAL void arena_fork_setup(void);

#endif
