/* SPDX-License-Identifier: MIT */
/* prefault.c: fault a growing heap's next huge pages in ahead of need, in a
 * helper thread, so that the kernel's zeroing of them (most of the time a
 * THP heap's growth costs, and far more on memory the host took back) runs
 * beside the program instead of in it.
 *
 * Off by default (hpmalloc.prefault=0): it creates a thread in a program
 * that may not expect one (the process is no longer single-threaded, so
 * glibc and hpmalloc take their locks from then on), and on a machine with
 * no idle CPU it only moves the work.  region.c commits N huge pages ahead
 * of a growing THP heap's top and queues them here; the helper faults them
 * in with MADV_POPULATE_WRITE.  A request for memory that was released
 * meanwhile fails harmlessly.
 *
 * The helper is started outside any arena lock (region_run_deferred), with
 * every signal blocked, detached, and never exits; a fork child has none
 * until it asks again.  */
#include "prefault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "lock.h"
#include "region.h"

enum { QUEUE = 32, HELPER_STACK = 64 * 1024 };

/* Weak: a static program that starts no thread of its own does not link
   glibc's thread machinery (78 KB of a stripped static binary) for a
   helper that is off by default; there the helper is never started and
   requests are dropped, as when pthread_create fails.  */
extern __typeof__(pthread_create) pthread_create __attribute__((weak));

struct prefault_counters prefault_counters;

/* Guarded by qlock.  */
static struct {
  void *addr;
  size_t len;
} queue[QUEUE];
static unsigned head, tail;
static hp_lock_t qlock;

static int wake;          /* futex word: bumped by every request */
static _Atomic int state; /* 0 no helper, 1 one is wanted, 2 running */

void prefault_request(void *addr, size_t len) {
  hp_lock(&qlock);
  bool full = tail - head == QUEUE;
  if (!full) {
    queue[tail % QUEUE].addr = addr;
    queue[tail % QUEUE].len = len;
    tail++;
  }
  hp_unlock(&qlock);
  if (full) {
    atomic_fetch_add_explicit(&prefault_counters.dropped, 1, memory_order_relaxed);
    return;
  }
  atomic_fetch_add_explicit(&prefault_counters.requests, 1, memory_order_relaxed);
  int none = 0;
  if (atomic_compare_exchange_strong(&state, &none, 1)) region_deferred.pending |= REGION_DEFERRED_PREFAULT;
  __atomic_add_fetch(&wake, 1, __ATOMIC_RELEASE);
  hp_os_futex_wake(&wake, 1);
}

static bool pop(void **addr, size_t *len) {
  hp_lock(&qlock);
  bool any = head != tail;
  if (any) {
    *addr = queue[head % QUEUE].addr;
    *len = queue[head % QUEUE].len;
    head++;
  }
  hp_unlock(&qlock);
  return any;
}

static void *helper(void *arg) {
  (void)arg;
  for (;;) {
    int seen = __atomic_load_n(&wake, __ATOMIC_ACQUIRE);
    void *addr;
    size_t len;
    if (!pop(&addr, &len)) {
      hp_os_futex_wait(&wake, seen);
      continue;
    }
    uint64_t t0 = hp_os_now_ns();
    /* a huge page per call: a commit (mprotect) of the growing heap needs
       the address space's write lock, which a populate holds shared */
    size_t step = region_mode_page() ? region_mode_page() : len;
    for (size_t off = 0; off < len; off += step) {
      size_t n = len - off < step ? len - off : step;
      if (region_populate((char *)addr + off, n))
        atomic_fetch_add_explicit(&prefault_counters.bytes, n, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&prefault_counters.ns, (size_t)(hp_os_now_ns() - t0), memory_order_relaxed);
  }
  return NULL;
}

void prefault_start(void) {
  int wanted = 1;
  if (!pthread_create || !atomic_compare_exchange_strong(&state, &wanted, 2)) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the helper inherits it: no signal lands there */
  pthread_attr_t at;
  pthread_t th;
  bool ok = pthread_attr_init(&at) == 0;
  if (ok) {
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, HELPER_STACK);
    ok = pthread_create(&th, &at, helper, NULL) == 0;
    pthread_attr_destroy(&at);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (ok)
    pthread_setname_np(th, "hpmalloc-prefault");
  else
    atomic_store(&state, 0); /* the queue keeps filling and drops; a later request tries again */
}

void prefault_fork_child(void) {
  hp_lock_init(&qlock);
  head = tail = 0;
  atomic_store(&state, 0);
}
