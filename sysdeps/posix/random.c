/* SPDX-License-Identifier: MIT */
/* The best-effort random fallback, shared by every OS layer.  MIT licence.  */
#include <time.h>

#include "hp_posix.h"

static inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void hp_posix_weak_random(void *out, size_t n, uint64_t seed) {
  unsigned char *o = out;
  struct timespec ts = { 0, 0 };
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t s = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  s ^= (uint64_t)(uintptr_t)&ts ^ ((uint64_t)(uintptr_t)out << 17) ^ mix64(seed);
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) s = mix64(s);
    o[i] = (unsigned char)(s >> (8 * (i % 8)));
  }
}
