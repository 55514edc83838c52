/* SPDX-License-Identifier: MIT */
/* inbox.c: an arena's inbox (inbox.h says what it holds and why).
 *
 * Other threads put chunks in (a flush, tcache.c); the arena's threads
 * take them out, into their caches (a refill, tcache.c) or merged
 * (malloc_consolidate, bins.c).  Both hold the inbox's lock only to copy
 * pointers: the chunks' headers are read after, without it.  */
#include "inbox.h"

#include "arena.h"

size_t inbox_put(struct arena *ar, struct chunk *const *v, size_t n) {
  struct inbox *in = &ar->inbox;
  bool lk = inbox_lock(ar);
  size_t k = INBOX_SLOTS - in->n;
  if (k > n) k = n;
  for (size_t i = 0; i < k; i++) in->slot[in->n + i] = v[i];
  __atomic_store_n(&in->n, in->n + (unsigned)k, __ATOMIC_RELAXED);
  HP_ASSERT(inbox_held(ar) && in->n <= INBOX_SLOTS);
  inbox_unlock(ar, lk);
  /* so that malloc_consolidate runs when the arena wants larger memory */
  if (k && !__atomic_load_n(&ar->have_fastchunks, __ATOMIC_RELAXED))
    __atomic_store_n(&ar->have_fastchunks, true, __ATOMIC_RELAXED);
  return k;
}

/* Take up to max chunks out of ar's inbox into v[]; the number taken.  */
static size_t inbox_take(struct arena *ar, struct chunk **v, size_t max) {
  struct inbox *in = &ar->inbox;
  bool lk = inbox_lock(ar);
  size_t n = in->n < max ? in->n : max, rest = in->n - n;
  for (size_t i = 0; i < n; i++) v[i] = in->slot[rest + i];
  __atomic_store_n(&in->n, (unsigned)rest, __ATOMIC_RELAXED);
  HP_ASSERT(inbox_held(ar) && in->n <= INBOX_SLOTS);
  inbox_unlock(ar, lk);
  return n;
}

/* A chunk taken out of the inbox: what the fastbins check of theirs.  */
static void inbox_check(const struct chunk *c) {
  if (!aligned_ok((uintptr_t)chunk2mem(c))) hp_fatal("malloc(): unaligned fastbin chunk detected");
  if (chunksize(c) < MINSIZE || chunksize(c) > FASTBIN_MAX_CHUNK) hp_fatal("malloc(): memory corruption (fast)");
}

size_t inbox_drain(struct arena *ar, inbox_take_fn *take) {
  struct chunk *v[INBOX_TAKE];
  size_t taken = 0;
  for (unsigned k = 0; k < INBOX_SLOTS / INBOX_TAKE && __atomic_load_n(&ar->inbox.n, __ATOMIC_RELAXED); k++) {
    size_t n = inbox_take(ar, v, INBOX_TAKE);
    if (n == 0) break;
    for (size_t i = 0; i < n; i++) inbox_check(v[i]);
    take(ar, v, n);
    taken += n;
  }
  return taken;
}
