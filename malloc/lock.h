/* SPDX-License-Identifier: MIT */
/* lock.h: the arena lock, and whether the process has threads at all.
 *
 * The lock is one word: 0 free, 1 taken, 2 taken and someone may sleep on
 * it.  Taken with one compare-and-swap when free; contended, it spins
 * briefly, then sleeps in the kernel (futex) -- the classic three-state
 * mutex.  Cheaper than pthread_mutex_t on the paths every free and malloc
 * miss take.  In the debug build (HP_DEBUG) a lock also records which
 * thread holds it, so that code can assert that it holds a lock
 * (hp_lock_held) and an unlock by another thread is caught; the release
 * build has the word alone.  Includes: hp_base.h, hp_sys.h, check.h.  */
#ifndef HP_LOCK_H
#define HP_LOCK_H

#include "check.h"
#include "hp_base.h"
#include "hp_sys.h"

typedef struct {
  int v;
#if HP_DEBUG
  const void *owner; /* &hp_lock_me of the thread that holds it, else NULL */
#endif
} hp_lock_t;

/* A byte per thread whose address names the thread to the debug build's
   lock records (arena.c).  */
extern __thread char hp_lock_me HP_INTERNAL __attribute__((tls_model("initial-exec")));

static inline void lock_set_owner(hp_lock_t *l, bool mine) {
#if HP_DEBUG
  __atomic_store_n(&l->owner, mine ? (const void *)&hp_lock_me : NULL, __ATOMIC_RELAXED);
#else
  (void)l;
  (void)mine;
#endif
}
/* Does the calling thread hold l?  Always true in the release build,
   which does not know: only for HP_ASSERT.  */
static inline bool hp_lock_held(const hp_lock_t *l) {
#if HP_DEBUG
  return __atomic_load_n(&l->v, __ATOMIC_RELAXED) != 0 && __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == &hp_lock_me;
#else
  (void)l;
  return true;
#endif
}

static inline void hp_lock_init(hp_lock_t *l) {
  __atomic_store_n(&l->v, 0, __ATOMIC_RELAXED);
  lock_set_owner(l, false);
}
static inline bool hp_lock_try(hp_lock_t *l) {
  int expected = 0;
  bool took = __atomic_compare_exchange_n(&l->v, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
  if (took) lock_set_owner(l, true);
  return took;
}
/* Contended: spin, then sleep (arena.c).  */
HP_INTERNAL void hp_lock_slow(hp_lock_t *l);
static inline void hp_lock(hp_lock_t *l) {
  if (HP_UNLIKELY(!hp_lock_try(l))) hp_lock_slow(l);
}
static inline void hp_unlock(hp_lock_t *l) {
  HP_ASSERT(hp_lock_held(l));
  lock_set_owner(l, false);
  if (HP_UNLIKELY(__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)) hp_os_futex_wake(&l->v, 1);
}

/* glibc's flag: true until the process creates its first thread (and
   again in a fork child).  Only the one thread can change it, and never
   inside an allocator call, so a lock skipped on entry is skipped on exit.  */
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): glibc's name
extern char __libc_single_threaded __attribute__((weak));
static inline bool hp_single_threaded(void) { return &__libc_single_threaded && __libc_single_threaded; }

#endif
