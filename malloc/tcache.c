/* SPDX-License-Identifier: MIT */
/* tcache.c: the per-thread cache (tcache.h says what it holds).
 *
 * The fast paths (malloc.c) pop and push without a lock.  Everything here
 * is the slow path, run when a bin is empty on malloc or full on free:
 *
 *   refill    first the arena's inbox, if anything is there: the small
 *             chunks other threads freed, each into the bin of its size
 *             (no arena lock; a refill it serves ends there); else one
 *             arena lock serves the request and fills the bin: the
 *             arena's fastbin, small bin and unsorted exact fits first
 *             (bins.c stashes them), chunks carved off the larger chunk it
 *             splits (one that holds a batch of the class, when the arena
 *             has one, rather than the best fit), then, for a small bin
 *             whose request came off top, chunks carved off top (a large
 *             class carved off top would leave holes in the heap when its
 *             chunks go back: measured on the realloc workload);
 *   overflow  the bin gives its most recent half back, grouped by arena:
 *             one lock per arena per batch, so chunks another thread
 *             allocated (larson, producer/consumer) cost one lock per batch,
 *             not one per free; another arena's small chunks go to its
 *             inbox (inbox.h), or, when that is full, are parked
 *             unmerged in its fastbins (unless glibc.malloc.mxfast is 0,
 *             which switches fastbins off), where its owner's refill takes
 *             them back by the batch; the thread's own arena's small
 *             ones are parked the same way while the arena's record says
 *             parked chunks get reused, else merged at once (flush_should_park),
 *             a run of neighbours at a time (struct merge_run);
 *   grow      a bin that missed or overflowed doubles its cap (from 0 to
 *             TC_FIRST_CAP, or fewer of a large class) while the caps of
 *             the thread add up to at most hpmalloc.tcache_bytes;
 *   gc        every TC_GC_EVENTS misses and overflows, each bin gives back
 *             three quarters of the chunks it never dipped into since the
 *             last pass (its low-water mark) and lowers its cap as much;
 *             a bin nobody uses drains to nothing; the foreign list goes
 *             home whole;
 *   exit      the last thread of an arena leaves its bins to the arena,
 *             for the next thread bound there ("left caches", below),
 *             unless merging them would free a long run; else they go
 *             back merged.
 * With glibc.malloc.tcache_count set, caps are that count, fixed, and there
 * is no growth and no gc: glibc's tcache.
 *
 * Every live thread's state is on a list (guarded by hp_list_lock) so the
 * statistics can count cached chunks as free.  */
#include "tcache.h"

#include <errno.h>

#include "arena.h"
#include "bins.h"
#include "params.h"
#include "top.h"
#include "track.h"

enum {
  TC_FIRST_CAP = 8,       /* a bin's cap the first time it is used... */
  TC_FIRST_BYTES = 16384, /* ...or what fits in this many bytes, if fewer */
  TC_CAP_MAX = 8192,      /* no bin holds more, whatever the budget */
  TC_FIXED_MAX = UINT16_MAX,
};

__thread struct hp_thread hp_self __attribute__((tls_model("initial-exec")));
size_t hp_tc_max_request;
uintptr_t hp_tcache_key;

/* Guarded by hp_list_lock.  */
static struct hp_thread *threads;

size_t tc_bin_size(size_t tidx) {
  if (tidx < TC_SMALL_BINS) return MINSIZE + tidx * HP_ALIGN;
  size_t j = tidx - TC_SMALL_BINS;
  size_t lg = TC_LARGE_MIN_LOG + (j >> TC_LARGE_SHIFT);
  return ((size_t)1 << lg) + ((j & (((size_t)1 << TC_LARGE_SHIFT) - 1)) + 1) * ((size_t)1 << (lg - TC_LARGE_SHIFT));
}

static size_t bins_in_use(void) { return mp.tcache_bins + mp.tcache_large_bins; }

/* Is e on the safe-linked list from head, which holds `count` entries?
   A list longer than that, or an entry out of alignment, is fatal.  */
static bool on_list(const struct tc_entry *e, struct tc_entry *head, size_t count) {
  size_t n = 0;
  for (struct tc_entry *t = head; t; t = (struct tc_entry *)reveal_ptr(&t->next, t->next)) {
    if (n++ == count) hp_fatal("free(): too many chunks detected in tcache");
    if (!aligned_ok((uintptr_t)t)) hp_fatal("free(): unaligned chunk detected in tcache 2");
    if (t == e) return true;
  }
  return false;
}

static bool left_holds(const struct tc_entry *e, size_t tidx);

/* e carries the key: either a block freed already or a coincidence.  Scan
   the bin, the foreign list and the cache a thread left e's arena;
   found, it is fatal with `msg`.  */
void tcache_fatal_if_cached(const struct tc_entry *e, size_t tidx, const char *msg) {
  if (on_list(e, hp_self.bins[tidx].head, hp_self.bins[tidx].count) ||
      on_list(e, hp_self.foreign, hp_self.foreign_count) || left_holds(e, tidx))
    hp_fatal(msg);
}

/* ------------------------------------------------------------------ caps */

void tcache_configure(void) {
  size_t tmax = mp.tcache_max_bytes;
  size_t small = tmax > tidx2usize(TC_SMALL_BINS - 1) ? TC_SMALL_BINS : csize2tidx(request2size(tmax)) + 1;
  size_t large = 0;
  while (large < TC_LARGE_BINS && tc_bin_size(TC_SMALL_BINS + large) - SIZE_SZ <= tmax) large++;
  mp.tcache_bins = small;
  mp.tcache_small_span = small * HP_ALIGN;
  mp.tcache_large_bins = small == TC_SMALL_BINS ? large : 0;
  /* the largest request the bins in use really take (glibc rounds the same way) */
  mp.tcache_max_bytes = tc_bin_size(mp.tcache_bins + mp.tcache_large_bins - 1) - SIZE_SZ;
  if (mp.tcache_fixed && mp.tcache_count > TC_FIXED_MAX) mp.tcache_count = TC_FIXED_MAX;
}

/* Give every bin in use its starting cap: tcache_count when fixed, else
   nothing until the bin is used.  */
static void caps_start(void) {
  uint16_t cap = mp.tcache_fixed ? (uint16_t)mp.tcache_count : 0;
  for (size_t i = 0; i < bins_in_use(); i++) hp_self.bins[i].cap = cap;
  hp_self.cap_bytes = 0;
  hp_self.events = 0;
}

static void caps_off(void) {
  for (size_t i = 0; i < TC_BINS; i++) hp_self.bins[i].cap = 0;
  hp_self.cap_bytes = 0;
}

/* Chunks of `size` bytes the budget still lets the caps add.  */
static size_t budget_room(size_t size) {
  return mp.tcache_bytes > hp_self.cap_bytes ? (mp.tcache_bytes - hp_self.cap_bytes) / size : 0;
}

/* A bin's first cap: TC_FIRST_CAP chunks, or fewer of a large class, so
   that one use of a 32 KiB class does not take a quarter of the budget.  */
static size_t first_cap(size_t size) {
  size_t n = TC_FIRST_BYTES / size;
  return n < 1 ? 1 : n > TC_FIRST_CAP ? TC_FIRST_CAP : n;
}

/* Raise bin tidx's cap towards `want`, as far as the budget has room.  */
static void raise_cap(size_t tidx, size_t want) {
  struct tc_bin *b = &hp_self.bins[tidx];
  size_t size = tc_bin_size(tidx), room = budget_room(size);
  if (want > b->cap + room) want = b->cap + room;
  if (want <= b->cap) return;
  hp_self.cap_bytes += (want - b->cap) * size;
  b->cap = (uint16_t)want;
}

/* Bin tidx missed or overflowed: double its cap, within the budget (when
   it is spent, the next gc pass shares it again).  */
/* Do the caps add up to cap_bytes, within the budget?  (Adapting caps
   only: fixed caps count no bytes.)  For HP_ASSERT: a loop over the bins.  */
static bool caps_add_up(void) {
  if (mp.tcache_fixed) return true;
  size_t sum = 0;
  for (size_t i = 0; i < TC_BINS; i++) sum += hp_self.bins[i].cap * tc_bin_size(i);
  return sum == hp_self.cap_bytes && (sum <= mp.tcache_bytes || !tcache_on());
}

static void grow_cap(size_t tidx) {
  if (mp.tcache_fixed) return;
  struct tc_bin *b = &hp_self.bins[tidx];
  size_t want = b->cap ? 2 * (size_t)b->cap : first_cap(tc_bin_size(tidx));
  if (b->events < UINT16_MAX) b->events++;
  raise_cap(tidx, want > TC_CAP_MAX ? TC_CAP_MAX : want);
  HP_ASSERT(caps_add_up());
}

static void shrink_cap(size_t tidx, size_t by) {
  struct tc_bin *b = &hp_self.bins[tidx];
  if (by > b->cap) by = b->cap;
  b->cap = (uint16_t)(b->cap - by);
  hp_self.cap_bytes -= by * tc_bin_size(tidx);
}

/* ------------------------------------------------------------------ giving chunks back */

/* Take the k most recent chunks off bin tidx and append them, unmangled
   and without their key, to the list ending at *tail.  */
static struct tc_entry **detach(size_t tidx, size_t k, struct tc_entry **tail) {
  while (k-- && hp_self.bins[tidx].head) {
    struct tc_entry *e = tcache_get(tidx);
    e->next = NULL;
    *tail = e;
    tail = &e->next;
  }
  return tail;
}

/* Does a flush into ar, the thread's own arena, park its small chunks on
   the fastbins (else merge them)?  Parked, they cost a push now and a pop
   when a refill of their size takes them back; but when the arena merges
   them later instead (malloc_consolidate, once larger memory is wanted),
   that pass runs over chunks gone cold.  So park while consolidation has
   merged at most half as many fastbin chunks as flushes parked, else
   merge at the flush, while the chunks are warm -- and still park one
   flush in TC_PROBE_EVERY, so the record follows a program whose phases
   change.  Measured (malloc/README.md): parked, the chunks python3
   drops when it frees large structures went through malloc_consolidate
   (about 7% of its CPU time); merged at the flush instead, freeing 10 M
   blocks of 100 bytes before exit took 25% longer than parking them,
   which nothing then merges.  */
static bool flush_should_park(struct arena *ar) {
  HP_ASSERT(arena_held(ar)); /* its record is the arena's */
  if (ar->flush_parked >= TC_PARK_WINDOW) {
    ar->flush_parked /= 2;
    ar->fast_merged /= 2;
  }
  return ++ar->flushes % TC_PROBE_EVERY == 0 || ar->fast_merged <= ar->flush_parked / 2;
}

/* A run of in-use chunks of one arena that follow one another in memory,
   which a flush frees as one chunk: the arena merges it, and checks its
   neighbours, once instead of once per chunk.  A chunk joins when it lies
   right after the run or right before it and the PREV_INUSE bits agree
   that the chunks in between are in use; anything else ends the run.  A
   bin's list holds its chunks in the order they were
   freed, and a program that frees together what it allocated together
   frees neighbours one after the other: on bench/workloads/pyalloc.py half
   the chunks a flush merges come right after a neighbour in the list.  */
struct merge_run {
  struct chunk *lo;
  size_t len;
};

/* A chunk inside a run: its header says what merging one chunk at a time
   leaves there, free and after a free chunk, so that a second free of it
   or of the chunk before it is caught ("double free or corruption
   (!prev)").  */
static void mark_inside_run(struct chunk *c) { c->size = (c->size | ARENA_FREE) & ~(size_t)PREV_INUSE; }

static void merge_run_end(struct arena *ar, struct merge_run *r) {
  if (!r->lo) return;
  if (r->len != chunksize(r->lo)) set_head_size(r->lo, r->len);
  free_chunk(ar, r->lo, FREE_LOCKED | FREE_NO_PARK);
  r->lo = NULL;
}

static void merge_run_add(struct arena *ar, struct merge_run *r, struct chunk *c) {
  size_t size = chunksize(c);
  if (r->lo && c == chunk_at(r->lo, r->len) && prev_inuse(c)) {
    mark_inside_run(c);
    r->len += size;
    return;
  }
  if (r->lo && chunk_at(c, size) == r->lo && prev_inuse(r->lo)) {
    mark_inside_run(r->lo);
    r->lo = c;
    r->len += size;
    return;
  }
  merge_run_end(ar, r);
  r->lo = c;
  r->len = size;
}

/* Chunks a flush parks on an arena's fastbins: a chain per fastbin, each
   pushed with one atomic operation, so a list of mixed sizes (the foreign
   list) costs one per size, not one per chunk.  */
struct fastbin_chains {
  struct fast_chain chain[NFASTBINS];
  uint64_t used; /* bit i: chain[i] holds chunks */
  size_t n;
};
_Static_assert(NFASTBINS <= 64, "a bit per fastbin");

static void fastbin_chains_add(struct arena *ar, struct fastbin_chains *fc, struct chunk *c) {
  unsigned i = fastbin_index(chunksize(c));
  if (i >= NFASTBINS) hp_fatal("invalid fastbin entry (free)"); /* a size the flush's caller let by */
  if (!(fc->used & (UINT64_C(1) << i))) {
    fc->chain[i].first = NULL;
    fc->used |= UINT64_C(1) << i;
  }
  fastbin_chain_add(ar, &fc->chain[i], c);
  fc->n++;
}

static void fastbin_chains_push(struct arena *ar, struct fastbin_chains *fc) {
  for (uint64_t u = fc->used; u; u &= u - 1) fastbin_chain_push(ar, &fc->chain[__builtin_ctzll(u)]);
  fc->used = 0;
}

/* Another arena's small chunks a flush sends to that arena's inbox
   (inbox.h), gathered so the inbox's lock is taken once per batch; what
   the inbox has no room for is parked.  */
struct inbox_batch {
  struct chunk *v[TC_FOREIGN_BATCH];
  size_t n;
};

static void inbox_batch_send(struct arena *ar, struct inbox_batch *b, struct fastbin_chains *fc) {
  size_t k = inbox_put(ar, b->v, b->n);
  for (size_t i = k; i < b->n; i++) fastbin_chains_add(ar, fc, b->v[i]);
  b->n = 0;
}

static void inbox_batch_add(struct arena *ar, struct inbox_batch *b, struct fastbin_chains *fc, struct chunk *c) {
  b->v[b->n++] = c;
  if (b->n == TC_FOREIGN_BATCH) inbox_batch_send(ar, b, fc);
}

/* Send every chunk of ar on *list (taking them off it) home to ar.  With
   `as_free` (a thread that exits, malloc_trim, the gc) each is freed as
   free() would.  Else (a flush) another arena's small chunks go to its
   inbox, or are parked unmerged in its fastbins when the inbox is full,
   where its owner's next refill takes them back by the batch, so a
   cross-thread free stays cheap for both threads; neither takes the
   arena's lock (the inbox has its own, a fastbin push is atomic), so a
   flush of them alone leaves the owner's lock alone.  The thread's own
   arena's small ones are parked or merged at once as flush_should_park says.  */
static void send_to_arena(struct arena *ar, struct tc_entry **list, bool as_free) {
  bool own = ar == hp_self.arena, lk = false, locked = own || as_free || !mp.max_fast;
  if (locked) lk = arena_lock(ar);
  /* the largest chunk that goes on a fastbin unmerged; the rest are
     freed as free() would (`as_free`) or merged */
  size_t park_max = as_free || !mp.max_fast ? 0 : !own ? FASTBIN_MAX_CHUNK : flush_should_park(ar) ? mp.max_fast : 0;
  /* runs, unless perturb bytes are to overwrite the headers inside */
  bool runs = !as_free && !mp.perturb;
  struct merge_run run = { NULL, 0 };
  struct fastbin_chains chains;
  chains.used = 0;
  chains.n = 0;
  struct inbox_batch batch;
  batch.n = 0;
  vg_enter();
  for (struct tc_entry **pp = list; *pp;) {
    struct tc_entry *e = *pp;
    struct chunk *c = mem2chunk(e);
    if (arena_for_chunk(c) != ar) {
      pp = &e->next;
      continue;
    }
    *pp = e->next;
    if (chunksize(c) <= park_max) {
      if (own)
        fastbin_chains_add(ar, &chains, c);
      else
        inbox_batch_add(ar, &batch, &chains, c);
      continue;
    }
    if (!locked) {
      lk = arena_lock(ar);
      locked = true;
    }
    if (runs)
      merge_run_add(ar, &run, c);
    else if (as_free)
      free_chunk(ar, c, FREE_LOCKED);
    else
      free_chunk(ar, c, FREE_LOCKED | FREE_NO_PARK);
  }
  merge_run_end(ar, &run);
  if (batch.n) inbox_batch_send(ar, &batch, &chains);
  fastbin_chains_push(ar, &chains);
  vg_leave();
  if (own) ar->flush_parked += chains.n;
  arena_unlock(ar, lk);
}

/* Send every chunk on the list home to its arena: one arena at a time,
   the first arena on the list first (send_to_arena).  */
static void send_home(struct tc_entry *list, bool as_free) {
  while (list) send_to_arena(arena_for_chunk(mem2chunk(list)), &list, as_free);
}

static void flush_bin(size_t tidx, size_t k) {
  struct tc_entry *list = NULL;
  detach(tidx, k, &list);
  send_home(list, false);
}

/* Take the foreign list off the thread and append it, unmangled and
   without the key, to the list ending at *tail.  */
static struct tc_entry **detach_foreign(struct tc_entry **tail) {
  size_t n = 0, bytes = 0;
  for (struct tc_entry *e = hp_self.foreign, *next; e; e = next) {
    if (!aligned_ok((uintptr_t)e)) hp_fatal("malloc(): unaligned tcache chunk detected");
    if (n++ == hp_self.foreign_count) hp_fatal("free(): too many chunks detected in tcache");
    next = (struct tc_entry *)reveal_ptr(&e->next, e->next);
    e->key = 0;
    e->next = NULL;
    *tail = e;
    tail = &e->next;
    if (HP_DEBUG) bytes += chunksize(mem2chunk(e));
  }
  /* the counts are the list's */
  HP_ASSERT(n == hp_self.foreign_count && bytes == hp_self.foreign_bytes);
  hp_self.foreign = NULL;
  hp_self.foreign_count = 0;
  hp_self.foreign_bytes = 0;
  return tail;
}

static void flush_all(void) {
  struct tc_entry *list = NULL, **tail = detach_foreign(&list);
  for (size_t i = 0; i < TC_BINS; i++) tail = detach(i, hp_self.bins[i].count, tail);
  send_home(list, true);
}

/* Each bin that neither missed nor overflowed lately gives back three
   quarters of what it did not use since the last pass, and its cap comes
   down as much.  A busy bin keeps its chunks: its low-water mark over a
   pass says little when the pass is short against its traffic.  */
static struct tc_entry **give_back_idle(struct tc_entry **tail) {
  for (size_t i = 0; i < bins_in_use(); i++) {
    struct tc_bin *b = &hp_self.bins[i];
    HP_ASSERT(b->low <= b->count); /* the least it held since the last pass */
    size_t idle = b->events ? 0 : b->low, k = idle - idle / 4;
    if (k) {
      tail = detach(i, k, tail);
      shrink_cap(i, k);
    }
    b->low = b->count;
  }
  return tail;
}

/* floor(sqrt(v)), by Newton's method from a power of two at or above
   the root: a handful of divisions.  */
static uint64_t isqrt(uint64_t v) {
  if (v < 2) return v;
  uint64_t x = UINT64_C(1) << ((65 - (unsigned)__builtin_clzll(v)) / 2), y = (x + v / x) / 2;
  while (y < x) {
    x = y;
    y = (x + v / x) / 2;
  }
  return x;
}

/* Lower bin tidx's cap to `cap`, giving back what it holds beyond.  */
static struct tc_entry **lower_cap(size_t tidx, size_t cap, struct tc_entry **tail) {
  struct tc_bin *b = &hp_self.bins[tidx];
  if (b->count > cap) tail = detach(tidx, b->count - cap, tail);
  shrink_cap(tidx, b->cap - cap);
  return tail;
}

/* Once the budget is spent, doubling has given each bin the cap its first
   misses asked for, and a few large classes can hold most of the budget.
   So share what the idle bins leave among the busy ones as their traffic
   says.  A bin of cap C that serves r operations misses or overflows
   about r / C times, and one more chunk of its s bytes saves about r / C^2
   of those: the caps that save the most for a budget B are
   C = B sqrt(r / s) / sum(sqrt(r s)), with r estimated as the bin's
   events times its cap.  Each pass moves a cap half way there, lowering
   caps before it raises any, so the budget holds throughout.  What a
   lowered bin gives back is appended to the list ending at *tail.  */
static void rebalance(struct tc_entry **tail) {
  size_t avail = mp.tcache_bytes, n = bins_in_use();
  uint64_t w[TC_BINS], total = 0;
  for (size_t i = 0; i < n; i++) {
    const struct tc_bin *b = &hp_self.bins[i];
    size_t held = b->cap * tc_bin_size(i);
    w[i] = b->events ? isqrt((uint64_t)b->events * (b->cap ? b->cap : 1) * tc_bin_size(i)) : 0;
    total += w[i];
    if (!w[i]) avail -= held < avail ? held : avail;
  }
  uint16_t next[TC_BINS];
  for (size_t i = 0; i < n; i++) {
    struct tc_bin *b = &hp_self.bins[i];
    b->events /= 2;
    next[i] = b->cap;
    if (!w[i]) continue;
    size_t want = (size_t)((unsigned __int128)avail * w[i] / ((unsigned __int128)total * tc_bin_size(i)));
    want = want < 1 ? 1 : want > TC_CAP_MAX ? TC_CAP_MAX : want;
    next[i] = (uint16_t)((b->cap + want + 1) / 2);
    if (next[i] < b->cap) tail = lower_cap(i, next[i], tail);
  }
  for (size_t i = 0; i < n; i++) raise_cap(i, next[i]);
}

/* A pass of the cache's gc: the foreign list goes home, idle bins give
   back, and a spent budget is shared again.  */
static void gc(void) {
  hp_self.events = 0;
  /* the foreign list goes home too: a thread that stopped freeing other
     threads' blocks holds none of them for long */
  struct tc_entry *list = NULL, **tail = detach_foreign(&list);
  if (!mp.tcache_fixed) {
    tail = give_back_idle(tail);
    if (budget_room(1) < mp.tcache_bytes / 8) /* spent, or nearly */
      rebalance(tail);
    else
      for (size_t i = 0; i < bins_in_use(); i++) hp_self.bins[i].events /= 2;
  }
  HP_ASSERT(caps_add_up());
  send_home(list, true);
}

static void slow_event(void) {
  if (++hp_self.events >= TC_GC_EVENTS) gc();
}

/* ------------------------------------------------------------------ the slow paths */

/* n chunks v[] taken out of the inbox of ar, the thread's arena
   (inbox_drain): each into the bin of its size while the bin has room;
   the rest parked on ar's fastbins, or merged under its lock once
   mallopt switched fastbins off (M_MXFAST 0) since they were sent.  */
static void cache_inbox_batch(struct arena *ar, struct chunk **v, size_t n) {
  size_t rest = 0;
  for (size_t i = 0; i < n; i++) {
    struct chunk *c = v[i];
    size_t tidx = tcache_bin_of(chunksize(c));
    struct tc_entry *e = (struct tc_entry *)chunk2mem(c);
    if (tidx == TC_BINS || !tcache_room(tidx)) {
      v[rest++] = c;
      continue;
    }
    /* a chunk that went home twice: freed twice */
    if (HP_UNLIKELY(e->key == hp_tcache_key))
      tcache_fatal_if_cached(e, tidx, "free(): double free detected in tcache 2");
    tcache_push(&hp_self.bins[tidx], e);
  }
  if (!rest) return;
  struct fastbin_chains chains;
  chains.used = 0;
  chains.n = 0;
  bool park_rest = mp.max_fast != 0, lk = !park_rest && arena_lock(ar);
  for (size_t i = 0; i < rest; i++) {
    if (park_rest)
      fastbin_chains_add(ar, &chains, v[i]);
    else
      free_chunk(ar, v[i], FREE_LOCKED | FREE_NO_PARK);
  }
  fastbin_chains_push(ar, &chains);
  arena_unlock(ar, lk);
}

void *tcache_refill(size_t tidx, size_t nb) {
  grow_cap(tidx);
  struct arena *ar = arena_of_thread(); /* binding the thread may fill its bins (tcache_adopt) */
  inbox_drain(ar, cache_inbox_batch);
  if (hp_self.bins[tidx].head) {
    region_run_deferred(); /* a drain with fastbins off merges, and may trim */
    slow_event();
    return tcache_get(tidx);
  }
  bool lk = arena_lock(ar);
  void *p = int_malloc(ar, nb - SIZE_SZ, !mp.tcache_fixed);
  /* only when p itself came off top: no free chunk could serve it, so top
     is where the next misses would go anyway (carving top while free
     chunks wait in the bins grew a python3 heap by 18%) */
  if (p && !mp.tcache_fixed && tidx < TC_SMALL_BINS && !chunk_is_mmapped(mem2chunk(p)) &&
      chunk_at(mem2chunk(p), nb) == ar->top)
    top_fill_bin(ar, tidx, nb);
  arena_unlock(ar, lk);
  if (!p) p = malloc_elsewhere(ar, 0, nb - SIZE_SZ);
  region_run_deferred();
  slow_event();
  if (!p) errno = ENOMEM;
  return p;
}

/* The checks glibc's free makes of a chunk's next neighbour in the arena,
   in its order, made off the inline path before a chunk is cached: a chunk
   its arena holds free (an earlier free went there) says so in the next
   chunk's header, and an overflow shows in that header's size.  So a block
   of a large class is checked at its free as it would be in the arena.
   Without the arena's lock only these hold still: the next chunk's
   PREV_INUSE speaks of c, which only its owner changes, and its size is
   always some chunk's size; the chunk before c may be merging with its
   own neighbour meanwhile, so its prev_size is checked when c reaches the
   arena (glibc's "corrupted size vs. prev_size while consolidating").  */
void tcache_check_neighbours(const struct chunk *c) {
  const struct chunk *next = next_chunk(c);
  if (HP_UNLIKELY(!prev_inuse(next))) hp_fatal("double free or corruption (!prev)");
  if (HP_UNLIKELY(next->size <= CHUNK_HDR || chunksize(next) >= arena_for_chunk(c)->system_mem))
    hp_fatal("free(): invalid next size (normal)");
}

/* Free c into its arena, as glibc does when a bin is full.  */
static void free_to_arena(struct chunk *c) {
  if (chunksize(c) <= mp.max_fast)
    fastbin_push(arena_for_chunk(c), c); /* no lock */
  else
    free_chunk(arena_for_chunk(c), c, 0);
}

void tcache_overflow(struct chunk *c, size_t tidx) {
  struct tc_bin *b = &hp_self.bins[tidx];
  if (mp.tcache_fixed || !tcache_on()) {
    free_to_arena(c);
    return;
  }
  tcache_check_neighbours(c);
  grow_cap(tidx);
  if (b->count >= b->cap) flush_bin(tidx, b->count - b->cap / 2);
  if (b->count < b->cap)
    tcache_put(c, tidx);
  else
    free_to_arena(c); /* the budget left this bin no room */
  slow_event();
}

/* Chunk c is of another arena than the thread's (tcache.h, "Whose
   chunks"): checked as a cached chunk is, it joins the foreign list, and
   a full list goes home.  */
void tcache_put_foreign(struct chunk *c) {
  tcache_check_neighbours(c);
  struct tc_entry *e = (struct tc_entry *)chunk2mem(c);
  e->key = hp_tcache_key;
  e->next = (struct tc_entry *)protect_ptr(&e->next, hp_self.foreign);
  hp_self.foreign = e;
  hp_self.foreign_bytes += chunksize(c);
  if (++hp_self.foreign_count < TC_FOREIGN_BATCH && hp_self.foreign_bytes < TC_FOREIGN_BYTES) return;
  struct tc_entry *list = NULL;
  detach_foreign(&list);
  send_home(list, false);
  slow_event();
}

/* ------------------------------------------------------------------ left caches */

/* A thread that exits as the last one bound to its arena leaves its bins
   to the arena as they are (struct tc_left), and the next thread bound to
   the arena, whose bins are empty then, takes them whole.  A flush at the
   exit merged every cached chunk, and the next thread's first misses
   carved the same memory again, a bin at a time: where threads come and
   go (larson) that cost 6% of the CPU time; malloc/README.md, "Left
   caches".  Only one cache waits per arena: a second thread that ends
   while one waits flushes as before, and so does a cache whose chunks
   border more free memory than the trim threshold (cache_borders_free),
   which merging them would let the arena give back.  The chunks
   stay in use in the arena's eyes, keyed, so a second free of one is
   caught (tcache_fatal_if_cached looks here too); the statistics count
   them free, and malloc_trim gives them back.  All of it under
   hp_list_lock, which binding and thread exit take anyway.  */

static bool bins_empty(void) {
  for (size_t i = 0; i < TC_BINS; i++)
    if (hp_self.bins[i].count) return false;
  return true;
}

static bool left_holds(const struct tc_entry *e, size_t tidx) {
  struct arena *ar = arena_for_chunk(mem2chunk(e));
  list_lock();
  bool held = ar->left.held && on_list(e, ar->left.bins[tidx].head, ar->left.bins[tidx].count);
  list_unlock();
  return held;
}

/* The free run merging cached chunk c of ar would make: c and its free
   neighbours.  Top's own size does not count: top trims without c.  */
static size_t free_run_at(const struct arena *ar, const struct chunk *c) {
  const struct chunk *next = next_chunk(c);
  size_t run = chunksize(c);
  if (next != ar->top && (next->size & ARENA_FREE)) run += chunksize(next);
  if (!prev_inuse(c)) run += c->prev_size;
  return run;
}

/* Would merging the cached chunks of ar give memory back: would it make
   a free run longer than the trim threshold, or do most of them border
   free memory?  Either says the thread freed what it built before it
   ended, and a left cache would keep that memory from merging: on `small
   thread`, whose threads free their blocks and end while the other runs
   on, 88% of the chunks bordered free memory at the exits, peak RSS was
   8.7-9.0 MB with the cache left against 8.3-8.5 MB flushed; on larson
   at most 17% do (their neighbours are the next thread's blocks).  The
   bins are walked a step of each at a time, so that the cache misses of
   the lists overlap instead of following one another: on larson the
   walk's share of the CPU time samples went from 2.3% to 1.2% (the run's
   CPU time moved less than its spread).  */
static bool cache_borders_free(struct arena *ar) {
  struct tc_entry *cur[TC_BINS];
  size_t remaining[TC_BINS], live = 0, longest = 0, seen = 0, bordering = 0;
  for (size_t i = 0; i < TC_BINS; i++)
    if (hp_self.bins[i].head && hp_self.bins[i].count) {
      cur[live] = hp_self.bins[i].head;
      remaining[live++] = hp_self.bins[i].count;
    }
  bool lk = arena_lock(ar);
  while (live && longest <= mp.trim_threshold) {
    for (size_t k = 0; k < live;) {
      struct tc_entry *e = cur[k];
      struct chunk *c = mem2chunk(e);
      bool ok = aligned_ok((uintptr_t)e), more = ok && --remaining[k] != 0;
      if (ok && arena_for_chunk(c) == ar) {
        size_t run = free_run_at(ar, c);
        if (run > longest) longest = run;
        seen++;
        bordering += run > chunksize(c);
      }
      if (more) e = (struct tc_entry *)reveal_ptr(&e->next, e->next);
      if (!more || !e) {
        cur[k] = cur[--live];
        remaining[k] = remaining[live];
        continue;
      }
      cur[k++] = e;
    }
  }
  arena_unlock(ar, lk);
  return longest > mp.trim_threshold || 2 * bordering > seen;
}

/* May the thread's cache be left to arena ar: the cache is on, the
   thread is the arena's last and no cache waits there yet?  Asked
   unlocked before the border walk, as a hint, and again under
   hp_list_lock by leave_cache, which decides.  */
static bool may_leave(const struct arena *ar) {
  return ar && tcache_on() && __atomic_load_n(&ar->attached_threads, __ATOMIC_RELAXED) == 1 &&
         !__atomic_load_n(&ar->left.held, __ATOMIC_RELAXED);
}

/* Leave the thread's bins to its arena, if it may and merging the cache
   would give nothing back (with hp_list_lock); its bins are empty then.  */
static void leave_cache(bool borders_free) {
  struct arena *ar = hp_self.arena;
  HP_ASSERT(list_held());
  if (borders_free || !may_leave(ar)) return;
  struct tc_left *l = &ar->left;
  for (size_t i = 0; i < TC_BINS; i++) {
    l->bins[i] = hp_self.bins[i];
    hp_self.bins[i].head = NULL;
    hp_self.bins[i].count = 0;
  }
  l->cap_bytes = hp_self.cap_bytes;
  HP_ASSERT(bins_empty());
  __atomic_store_n(&l->held, true, __ATOMIC_RELAXED); /* read unlocked as a hint (tcache_adopt) */
}

/* Move the cache left to ar, if one is, into the thread's bins (empty):
   the chunks, and with `caps` the caps too.  */
static bool take_left(struct arena *ar, bool caps) {
  if (!__atomic_load_n(&ar->left.held, __ATOMIC_RELAXED)) return false;
  list_lock();
  struct tc_left *l = &ar->left;
  bool took = l->held;
  if (took) {
    for (size_t i = 0; i < TC_BINS; i++) {
      if (caps) {
        hp_self.bins[i] = l->bins[i];
        continue;
      }
      hp_self.bins[i].head = l->bins[i].head;
      hp_self.bins[i].count = l->bins[i].count;
    }
    if (caps) hp_self.cap_bytes = l->cap_bytes;
    HP_ASSERT(!caps || caps_add_up());
    __atomic_store_n(&l->held, false, __ATOMIC_RELAXED);
  }
  list_unlock();
  return took;
}

void tcache_adopt(struct arena *ar) {
  if (tcache_on() && bins_empty()) take_left(ar, true);
}

/* Give every left cache back to its arena, through the calling thread's
   bins, empty then, keeping the caller's caps (malloc_trim).  */
static void reclaim_left(void) {
  for (struct arena *ar = &main_arena; ar; ar = arena_next(ar))
    if (take_left(ar, false)) flush_all();
}

/* ------------------------------------------------------------------ threads */

/* First allocation of a thread: switch its cache on and list it.  */
void tcache_thread_start(void) {
  if (hp_self.state != HP_THREAD_NEW) return;
  hp_self.home = arena_home_tag(hp_self.arena);
  bool on = !hp_vg && !(mp.tcache_fixed && mp.tcache_count == 0) && bins_in_use() > 0;
  hp_self.state = on ? HP_THREAD_CACHING : HP_THREAD_UNCACHED;
  if (on)
    caps_start();
  else
    caps_off();
  list_lock();
  hp_self.next_thread = threads;
  if (threads) threads->prev_next = &hp_self.next_thread;
  hp_self.prev_next = &threads;
  threads = &hp_self;
  list_unlock();
  arena_thread_register(); /* so the cache is flushed when the thread exits */
}

void tcache_switch_off(void) {
  if (hp_self.state == HP_THREAD_CACHING) hp_self.state = HP_THREAD_UNCACHED;
  caps_off();
  flush_all();
}

void tcache_reset(void) {
  flush_all();
  reclaim_left();
  if (tcache_on()) caps_start();
}

/* The thread is exiting (arena.c's key destructor): give the cache back
   and leave the list.  */
void tcache_thread_end(void) {
  struct tc_entry *list = NULL;
  detach_foreign(&list);
  send_home(list, true);
  /* the walk only where the cache may be left (leave_cache decides, locked) */
  bool borders_free = may_leave(hp_self.arena) && cache_borders_free(hp_self.arena);
  list_lock();
  leave_cache(borders_free);
  list_unlock();
  tcache_switch_off(); /* whatever the arena was not left */
  list_lock();
  if (hp_self.prev_next) *hp_self.prev_next = hp_self.next_thread;
  if (hp_self.next_thread) hp_self.next_thread->prev_next = hp_self.prev_next;
  hp_self.prev_next = NULL;
  hp_self.next_thread = NULL;
  list_unlock();
}

/* In a fork child only the forking thread is left (the caller holds every
   lock): its state is the whole list.  */
void tcache_fork_child(void) {
  threads = thread_active() ? &hp_self : NULL;
  hp_self.next_thread = NULL;
  hp_self.prev_next = threads ? &threads : NULL;
}

/* Add the chunks and bytes of bins (another thread's: a snapshot).  */
static void add_bins(const struct tc_bin *bins, size_t *n, size_t *b) {
  for (size_t i = 0; i < TC_BINS; i++) {
    size_t c = __atomic_load_n(&bins[i].count, __ATOMIC_RELAXED);
    *n += c;
    *b += c * tc_bin_size(i);
  }
}

void tcache_totals(size_t *count, size_t *bytes) {
  size_t n = 0, b = 0;
  list_lock();
  for (const struct hp_thread *t = threads; t; t = t->next_thread) {
    add_bins(t->bins, &n, &b);
    n += __atomic_load_n(&t->foreign_count, __ATOMIC_RELAXED);
    b += __atomic_load_n(&t->foreign_bytes, __ATOMIC_RELAXED);
  }
  for (const struct arena *ar = &main_arena; ar; ar = arena_next(ar))
    if (ar->left.held) add_bins(ar->left.bins, &n, &b);
  list_unlock();
  *count = n;
  *bytes = b;
}
