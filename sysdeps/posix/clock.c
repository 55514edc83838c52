/* SPDX-License-Identifier: MIT */
/* The monotonic clock: the same on every POSIX system.  MIT licence.  */
#include <time.h>

#include "hp_sys.h"

uint64_t hp_os_now_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
