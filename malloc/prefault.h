/* SPDX-License-Identifier: MIT */
/* prefault.h: faulting a growing heap's next huge pages in ahead of need,
 * off the allocating thread (prefault.c).  Off unless hpmalloc.prefault
 * says how many huge pages ahead.  Includes: hp_base.h.  */
#ifndef HP_PREFAULT_H
#define HP_PREFAULT_H

#include "hp_base.h"

/* Queue [addr, addr+len), committed memory of a heap, to be faulted in by
   the helper thread.  Takes no lock that allocates or sleeps; safe under an
   arena lock.  Drops the request when the queue is full.  When the helper
   is not running yet, asks region_run_deferred to start it.  */
HP_INTERNAL void prefault_request(void *addr, size_t len);

/* Start the helper thread if a request wants it.  No arena lock may be
   held (pthread_create may allocate).  */
HP_INTERNAL void prefault_start(void);

/* In a fork child: no helper, no queue (the parent's stays the parent's).  */
HP_INTERNAL void prefault_fork_child(void);

/* Statistics (atomics, relaxed): requests queued, dropped (queue full),
   bytes faulted in by the helper and the time it spent.  */
struct prefault_counters {
  _Atomic size_t requests, dropped, bytes, ns;
};
extern struct prefault_counters prefault_counters HP_INTERNAL;

#endif
