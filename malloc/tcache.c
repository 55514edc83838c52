/* tcache.c: the per-thread cache.
 *
 * Each thread keeps, in its TLS block, up to tcache_count chunks of each of
 * the 64 smallest chunk sizes (32 .. 1040 bytes), singly linked and mangled.
 * malloc and free of those sizes touch no lock (malloc.c inlines the pop
 * and push).  A cached chunk carries hp_tcache_key so that a second free of
 * it is caught.  At thread exit the cache is given back to the arenas.  */
#include "tcache.h"

#include "arena.h"
#include "bins.h"
#include "params.h"
#include "track.h"

__thread struct hp_thread hp_self __attribute__((tls_model("initial-exec")));
size_t hp_tc_max_request;
uintptr_t hp_tcache_key;

/* e carries the key: either a double free or a coincidence.  Scan the bin.  */
void tcache_double_free_scan(struct tc_entry *e, size_t tidx) {
  size_t n = 0;
  for (struct tc_entry *t = hp_self.entries[tidx]; t; t = (struct tc_entry *)reveal_ptr(&t->next, t->next)) {
    if (n++ == hp_self.counts[tidx]) hp_fatal("free(): too many chunks detected in tcache");
    if (!aligned_ok((uintptr_t)t)) hp_fatal("free(): unaligned chunk detected in tcache 2");
    if (t == e) hp_fatal("free(): double free detected in tcache 2");
  }
}

/* First allocation of a thread: switch its cache on.  */
void tcache_thread_start(void) {
  if (hp_self.state != HP_THREAD_NEW) return;
  hp_self.state = HP_THREAD_ACTIVE;
  hp_self.limit = hp_vg ? 0 : mp.tcache_count;
  arena_thread_register(); /* so the cache is flushed when the thread exits */
}

/* Give every cached chunk back to its arena and switch the cache off.  */
void tcache_flush(void) {
  hp_self.limit = 0;
  for (size_t i = 0; i < TCACHE_MAX_BINS; i++) {
    while (hp_self.entries[i]) {
      struct chunk *c = mem2chunk(tcache_get(i));
      int_free(arena_for_chunk(c), c);
    }
  }
}
