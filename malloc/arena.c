/* SPDX-License-Identifier: MIT */
/* arena.c: arenas, which thread uses which, thread exit and fork.
 *
 * The main arena is static; every other arena lives in the first of its
 * heaps, right after the heap header.  A thread is bound to one arena on
 * its first allocation: an arena left free by an exited thread, else a new
 * one while there are fewer than the limit (arena_max, or 8 per CPU once
 * arena_test arenas exist, as glibc), else an existing one chosen round
 * robin, preferring one whose lock is free.
 *
 * fork: the prepare handler takes stdio's list lock first, then the list
 * lock and every arena lock (each with its inbox's lock), so that a
 * thread holding stdio's lock while it waits in malloc cannot deadlock
 * against the forking thread (glibc's own fork takes stdio's lock after
 * the atfork handlers, then its malloc locks: same order).  The child
 * re-initialises the locks and keeps only the forking thread's arena
 * attached.  */
#include "arena.h"

#include <errno.h>
#include <string.h>

#include "bins.h"
#include "prefault.h"
#include "top.h"

struct arena main_arena;
pthread_mutex_t hp_list_lock = PTHREAD_MUTEX_INITIALIZER;

/* Guarded by hp_list_lock.  */
static struct arena *free_list;
static struct arena *next_to_use;
static size_t narenas = 1;
static size_t narenas_limit;

static pthread_key_t thread_key;

/* glibc's stdio list lock and single-thread flag, when present.  */
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): glibc's own name
extern void _IO_list_lock(void) __attribute__((weak));
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): glibc's own name
extern void _IO_list_unlock(void) __attribute__((weak));

/* Contended: spin a little (the holder is usually on the other core and
   about to finish), then sleep until woken.  */
void hp_lock_slow(hp_lock_t *l) {
  for (int i = 0; i < 100; i++) {
    if (__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 && hp_lock_try(l)) return;
  }
  while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0) hp_os_futex_wait(&l->v, 2);
  lock_set_owner(l, true);
}

#if HP_DEBUG
__thread char hp_lock_me __attribute__((tls_model("initial-exec")));
const void *hp_list_owner;
#endif

void arena_init_struct(struct arena *ar, int index) {
  memset(ar, 0, sizeof *ar);
  hp_lock_init(&ar->lock);
  arena_bins_init(ar);
  ar->index = index;
}

/* A new thread arena with its first heap, attached to the caller.  The
   caller counted it in narenas already (idx is its number).  */
static struct arena *arena_new(int idx) {
  struct heap *h;
  struct arena tmp;
  /* heap_create_first needs an arena to account to; account into tmp and
     copy the counters after the real struct is in place */
  arena_init_struct(&tmp, 0);
  if (heap_create_first(&tmp, &h, mp.top_pad) != 0) {
    list_lock();
    narenas--; /* give the slot back */
    list_unlock();
    return NULL;
  }
  struct arena *ar = (struct arena *)((char *)h + sizeof(struct heap));
  ar = (struct arena *)align_up((uintptr_t)ar, _Alignof(struct arena));
  arena_init_struct(ar, idx);
  ar->system_mem = ar->max_system_mem = tmp.system_mem;
  ar->bytes_thp = tmp.bytes_thp;
  ar->bytes_hugetlb = tmp.bytes_hugetlb;
  ar->n_heaps = 1;
  h->ar = ar;
  heap_attach_arena_top(ar, h, (char *)align_up((uintptr_t)(ar + 1), HP_ALIGN));
  ar->attached_threads = 1;
  atomic_fetch_add_explicit(&mp.n_arenas, 1, memory_order_relaxed);
  list_lock();
  /* link into the ring after the main arena */
  ar->next = main_arena.next;
  __atomic_store_n(&main_arena.next, ar, __ATOMIC_RELEASE); /* readers walk the ring unlocked */
  list_unlock();
  return ar;
}

static struct arena *take_free_arena(void) {
  HP_ASSERT(list_held());
  struct arena *ar = free_list;
  if (ar) {
    free_list = ar->next_free;
    ar->next_free = NULL;
    ar->attached_threads++;
  }
  return ar;
}

/* Round robin over existing arenas, preferring an unlocked one.  */
static struct arena *reuse_arena(const struct arena *avoid) {
  HP_ASSERT(list_held());
  if (!next_to_use) next_to_use = &main_arena;
  struct arena *start = next_to_use, *ar = start, *pick = NULL;
  do {
    if (ar != avoid && hp_lock_try(&ar->lock)) {
      hp_unlock(&ar->lock);
      pick = ar;
      break;
    }
    /* The arenas form a ring (arena_new links each one in), so ar->next
       is never NULL; the tools assume it may be because avoid may be.  */
    // cppcheck-suppress nullPointerRedundantCheck
    ar = ar->next;
  } while (ar != start);
  if (!pick) pick = start != avoid ? start : start->next;
  next_to_use = pick->next; // NOLINT(clang-analyzer-core.NullDereference): the ring has no NULL link, see above
  /* an arena on the free list is now in use again */
  for (struct arena **pp = &free_list; *pp; pp = &(*pp)->next_free) {
    if (*pp == pick) {
      *pp = pick->next_free;
      pick->next_free = NULL;
      break;
    }
  }
  pick->attached_threads++;
  return pick;
}

static size_t arena_limit(void) {
  if (narenas_limit) return narenas_limit;
  if (mp.arena_max) return narenas_limit = mp.arena_max;
  if (narenas > mp.arena_test) return narenas_limit = 8 * (size_t)hp_os_ncpus();
  return 0; /* not yet decided: below arena_test, always create */
}

static bool key_ready;

/* Ask for thread_exit to run when the calling thread ends.  */
void arena_thread_register(void) {
  if (key_ready) pthread_setspecific(thread_key, &hp_self);
}

static void set_thread_arena(struct arena *ar) {
  hp_self.arena = ar;
  hp_self.home = arena_home_tag(ar);
  if (ar) tcache_adopt(ar);
}

/* The arena the calling thread allocates from, the first time (later
   calls find it in hp_self: arena_of_thread).  */
struct arena *arena_bind_thread(void) {
  if (HP_LIKELY(hp_self.arena != NULL)) return hp_self.arena;
  if (hp_self.state == HP_THREAD_DONE) return &main_arena;
  list_lock();
  struct arena *ar = take_free_arena();
  size_t limit = ar ? 0 : arena_limit();
  bool create = !ar && (limit == 0 || narenas < limit);
  int idx = create ? (int)narenas++ : 0; /* counted under the lock, so racing threads respect the limit */
  list_unlock();
  if (create) ar = arena_new(idx);
  if (!ar) {
    list_lock();
    ar = reuse_arena(NULL);
    list_unlock();
  }
  set_thread_arena(ar);
  return ar;
}

struct arena *arena_other_or_new(const struct arena *ar) {
  if (ar != &main_arena) return &main_arena;
  list_lock();
  struct arena *other = narenas > 1 ? reuse_arena(&main_arena) : NULL;
  if (other == &main_arena)
    other = NULL;
  else if (other)
    other->attached_threads--; /* a one-off, not a binding */
  size_t limit = other ? 0 : arena_limit();
  bool create = !other && (limit == 0 || narenas < limit); /* arena_max holds here too */
  int idx = create ? (int)narenas++ : 0;
  list_unlock();
  return other ? other : create ? arena_new(idx) : NULL;
}

void arena_thread_detach(void) {
  struct arena *ar = hp_self.arena;
  set_thread_arena(NULL);
  if (!ar) return;
  list_lock();
  if (ar->attached_threads && --ar->attached_threads == 0) {
    ar->next_free = free_list;
    free_list = ar;
  }
  list_unlock();
}

/* pthread key destructor: the thread is exiting.  */
static void thread_exit(void *arg) {
  (void)arg;
  if (!thread_active()) return;
  tcache_thread_end();
  HP_ASSERT(!tcache_on() && hp_self.prev_next == NULL); /* off the list of threads */
  arena_thread_detach();
  hp_self.state = HP_THREAD_DONE;
}

/* ------------------------------------------------------------------ fork */

/* Whether this thread took the locks is in hp_self.in_fork: several
   threads may fork at once, each waiting its turn in _IO_list_lock.  */
static void fork_prepare(void) {
  if (hp_single_threaded() || hp_initialized != 2) return;
  if (_IO_list_lock) _IO_list_lock();
  pthread_mutex_lock(&hp_list_lock);
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    hp_lock(&ar->lock);
    hp_lock(&ar->inbox.lock);
  }
  hp_self.in_fork = true;
}

static void fork_parent(void) {
  if (!hp_self.in_fork) return;
  hp_self.in_fork = false;
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    hp_unlock(&ar->inbox.lock);
    hp_unlock(&ar->lock);
  }
  pthread_mutex_unlock(&hp_list_lock);
  if (_IO_list_unlock) _IO_list_unlock();
}

static void fork_child(void) {
  if (!hp_self.in_fork) return;
  hp_self.in_fork = false;
  free_list = NULL;
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar)) {
    hp_lock_init(&ar->lock);
    hp_lock_init(&ar->inbox.lock);
    ar->attached_threads = ar == hp_self.arena ? 1 : 0;
    if (ar != hp_self.arena && ar != &main_arena) {
      ar->next_free = free_list;
      free_list = ar;
    }
  }
  tcache_fork_child();
  prefault_fork_child();
  pthread_mutex_init(&hp_list_lock, NULL);
  /* glibc's fork reset stdio's list lock in the child already */
}

/* Second phase of initialisation: things that may themselves allocate.  */
void arena_fork_setup(void) {
  key_ready = pthread_key_create(&thread_key, thread_exit) == 0;
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  if (thread_active()) arena_thread_register();
}
