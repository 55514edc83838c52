/* SPDX-License-Identifier: MIT */
/* touch: first touch of fresh anonymous memory, written for this project.
 * MIT licence.
 *
 *   touch MIB [thp|base]
 *
 * Maps MIB MiB of anonymous memory aligned to 2 MiB, advises it
 * (MADV_HUGEPAGE for thp, the default; MADV_NOHUGEPAGE for base, so that
 * every fault is a 4 KiB one), writes one byte in every 4 KiB page, reads
 * its own AnonHugePages from /proc/self/smaps_rollup, prints
 *
 *   touch mib=.. pages=thp|base touch_s=.. ms_per_2m=.. head_ms_per_2m=..
 *         anonhuge_mib=..
 *
 * and unmaps.  ms_per_2m is the whole touch per 2 MiB, head_ms_per_2m the
 * same over the first 64 MiB only (where a cold state that left some warm
 * pages shows).
 *
 * The cost of a first touch is the kernel's page fault and page clearing,
 * and in a VM whose balloon reports free memory to the host, the host's
 * fault as well when the page had been reported (bench/README.md, "The
 * memory state").  `make bench-firsttouch` measures it with this program,
 * and `make bench` primes the warm state with it: it touches the footprint
 * of the next run and gives it back on exit, so that the run's faults find
 * pages that were freed a moment ago.  */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

#define HUGE (2UL << 20)
#define BASE 4096UL
#define HEAD (64UL << 20) /* head_ms_per_2m: the first 64 MiB, where leftovers of another state show */

static long anonhuge_kib(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  char line[256];
  long kb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "AnonHugePages: %ld", &kb) == 1) break;
  fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
  int thp = argc < 3 || strcmp(argv[2], "base") != 0;
  if (!mib || (argc > 2 && strcmp(argv[2], "thp") && strcmp(argv[2], "base"))) {
    fprintf(stderr, "usage: touch MIB [thp|base]\n");
    return 2;
  }
  size_t len = mib << 20;
  /* one huge page more than asked, so that an aligned range of len fits */
  char *raw = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
  if (madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) perror("madvise");
  size_t head = len < HEAD ? len : HEAD;
  double t0 = now(), th = t0;
  for (size_t off = 0; off < len; off += BASE) {
    p[off] = 1;
    if (off + BASE == head) th = now();
  }
  double t1 = now();
  long ah = anonhuge_kib();
  printf("touch mib=%zu pages=%s touch_s=%.4f ms_per_2m=%.3f head_ms_per_2m=%.3f anonhuge_mib=%ld\n", mib,
         thp ? "thp" : "base", t1 - t0, (t1 - t0) * 1e3 / ((double)len / HUGE), (th - t0) * 1e3 / ((double)head / HUGE),
         ah < 0 ? -1 : ah / 1024);
  munmap(raw, len + HUGE);
  return 0;
}
