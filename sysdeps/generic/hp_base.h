/* SPDX-License-Identifier: MIT */
/* hp_base.h: the bottom layer every other header of hpmalloc may include
 * (malloc/, tunables/ and sysdeps/ alike): compiler macros, power-of-two
 * and alignment helpers, size constants.  It includes nothing of the
 * project's and declares no function that has a body elsewhere.  MIT
 * licence.  */
#ifndef HP_BASE_H
#define HP_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HP_LIKELY(x) __builtin_expect(!!(x), 1)
#define HP_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Visible to the other files of the library, never exported.  */
#define HP_INTERNAL __attribute__((visibility("hidden")))

#define HP_KIB ((uint64_t)1 << 10)
#define HP_MIB ((uint64_t)1 << 20)
#define HP_GIB ((uint64_t)1 << 30)
#define HP_TIB ((uint64_t)1 << 40)

static inline bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* v rounded up or down to a multiple of a, a power of two.  align_up wraps
   to a small value when v is within a of SIZE_MAX: callers that take sizes
   from the program check for that.  */
static inline size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
static inline size_t align_down(size_t v, size_t a) { return v & ~(a - 1); }

#endif
