/* SPDX-License-Identifier: MIT */
/* track.h: running under valgrind's memcheck (and the other heap tools).
 *
 * Under memcheck, hpmalloc's own code reads and writes its metadata inside
 * blocks the program has freed; error reporting is off while it does, and
 * the program's own accesses are checked as usual.  Without the valgrind
 * headers every helper is empty.  Includes: hp_base.h.  */
#ifndef HP_TRACK_H
#define HP_TRACK_H

#include "hp_base.h"

extern bool hp_vg HP_INTERNAL; /* running under a heap-tracking valgrind tool; set once at init */

#ifdef HP_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
static inline void vg_enter(void) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_DISABLE_ERROR_REPORTING;
}
static inline void vg_leave(void) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_ENABLE_ERROR_REPORTING;
}
/* A value computed from metadata with reporting off may carry memcheck's
   "undefined" shadow of the blocks around it; what hpmalloc hands to the
   program (pointers, sizes, statistics) is real and defined.  */
static inline void vg_define(void *v, size_t len) {
  if (HP_UNLIKELY(hp_vg)) VALGRIND_MAKE_MEM_DEFINED(v, len);
}
#else
static inline void vg_enter(void) {}
static inline void vg_leave(void) {}
static inline void vg_define(void *v, size_t len) {
  (void)v;
  (void)len;
}
#endif

#endif
