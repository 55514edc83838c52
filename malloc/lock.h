/* lock.h: the arena lock, and whether the process has threads at all.
 *
 * The lock is one word: 0 free, 1 taken, 2 taken and someone may sleep on
 * it.  Taken with one compare-and-swap when free; contended, it spins
 * briefly, then sleeps in the kernel (futex) -- the classic three-state
 * mutex.  Cheaper than pthread_mutex_t on the paths every free and malloc
 * miss take.  Includes: hp_base.h, hp_sys.h.  */
#ifndef HP_LOCK_H
#define HP_LOCK_H

#include "hp_base.h"
#include "hp_sys.h"

typedef struct {
  int v;
} hp_lock_t;

static inline void hp_lock_init(hp_lock_t *l) { __atomic_store_n(&l->v, 0, __ATOMIC_RELAXED); }
static inline bool hp_lock_try(hp_lock_t *l) {
  int expected = 0;
  return __atomic_compare_exchange_n(&l->v, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
/* Contended: spin, then sleep (arena.c).  */
HP_INTERNAL void hp_lock_slow(hp_lock_t *l);
static inline void hp_lock(hp_lock_t *l) {
  if (HP_UNLIKELY(!hp_lock_try(l))) hp_lock_slow(l);
}
static inline void hp_unlock(hp_lock_t *l) {
  if (HP_UNLIKELY(__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)) hp_os_futex_wake(&l->v, 1);
}

/* glibc's flag: true until the process creates its first thread (and
   again in a fork child).  Only the one thread can change it, and never
   inside an allocator call, so a lock skipped on entry is skipped on exit.  */
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): glibc's name
extern char __libc_single_threaded __attribute__((weak));
static inline bool hp_single_threaded(void) { return &__libc_single_threaded && __libc_single_threaded; }

#endif
