/* SPDX-License-Identifier: MIT */
/* tunables_probe: what the environment did to the allocator.
 *
 * Linked with the test build of the library (internals visible, the API
 * renamed hpt_*): initialises the allocator, which reads GLIBC_TUNABLES,
 * the MALLOC_*_ aliases and HPMALLOC_VERBOSE as the real library does,
 * and prints every parameter the tunables feed, one "name=value" a line,
 * then "secure=" (AT_SECURE) and "seen=" (which of the variables the
 * loader left in the environment).  run.sh compares that with a run
 * without the variables.
 *
 *   tunables_probe                     print
 *   tunables_probe -e ENTRY ... --     re-execute with exactly these envp
 *                                      entries (duplicates and entries
 *                                      without '=' included), then print
 *
 * MIT licence.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "hpt_api.h"
#include "params.h"
#include "region.h"
#include "tunables.h"

extern char **environ;

static const char *const watched[] = { "GLIBC_TUNABLES", "MALLOC_CHECK_", "MALLOC_TOP_PAD_", "MALLOC_PERTURB_",
                                       "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_",
                                       "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "HPMALLOC_VERBOSE" };

static void reexec(int argc, char **argv) {
  char *envp[argc + 1];
  int n = 0, i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) envp[n++] = argv[++i];
  }
  envp[n] = NULL;
  char *args[] = { argv[0], NULL };
  execve("/proc/self/exe", args, envp);
  perror("execve");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-e") == 0) reexec(argc, argv);
  hp_ensure_init();
  void *p = hpt_malloc(100); /* the allocator works with whatever it took */
  if (!p) return 3;
  hpt_free(p);
  printf("top_pad=%zu\n", mp.top_pad);
  printf("trim_threshold=%zu\n", mp.trim_threshold);
  printf("mmap_threshold=%zu\n", mp.mmap_threshold);
  printf("mmap_max=%d\n", mp.n_mmaps_max);
  printf("no_dyn_threshold=%d\n", (int)mp.no_dyn_threshold);
  printf("arena_test=%zu\n", mp.arena_test);
  printf("arena_max=%zu\n", mp.arena_max);
  printf("max_fast=%zu\n", mp.max_fast);
  printf("perturb=%d\n", mp.perturb);
  /* glibc.malloc.check is accepted and ignored: print what was parsed */
  struct hp_tunable_values tv;
  hp_tunables_parse(&tv, NULL, environ, (int)getauxval(AT_SECURE));
  printf("check=%d\n", (int)tv.val[HP_T_CHECK]);
  printf("tcache_bins=%zu\n", mp.tcache_bins);
  printf("tcache_max_bytes=%zu\n", mp.tcache_max_bytes);
  printf("tcache_count=%zu\n", mp.tcache_count);
  printf("tcache_unsorted_limit=%zu\n", mp.tcache_unsorted_limit);
  printf("hugetlb_mode=%d\n", region_get_policy()->mode);
  printf("huge_waste=%zu\n", region_get_policy()->huge_waste_pct);
  printf("heap_max=%zu\n", mp.heap_max);
  printf("secure=%lu\n", getauxval(AT_SECURE));
  printf("seen=");
  for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
    if (getenv(watched[i])) printf("%s,", watched[i]);
  printf("\n");
  return 0;
}
