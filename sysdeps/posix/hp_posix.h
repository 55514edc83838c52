/* SPDX-License-Identifier: MIT */
/* hp_posix.h: helpers shared by the OS layers of sysdeps/ (not part of the
 * core's interface).  MIT licence.  */
#ifndef HP_POSIX_H
#define HP_POSIX_H

#include <stddef.h>
#include <stdint.h>

/* Fill out[0..n) with bytes mixed from `seed`, the clock and addresses that
   ASLR moves: the best-effort fallback when the system has no entropy call
   that cannot block.  */
void hp_posix_weak_random(void *out, size_t n, uint64_t seed);

#endif
