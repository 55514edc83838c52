/* SPDX-License-Identifier: MIT */
/* The POSIX fallback of hp_sys.h, for any system sysdeps has no directory
 * for.  MIT licence.
 *
 * Plain mmap, no huge pages of any kind: HP_MAP_HUGETLB fails with ENOTSUP,
 * only HP_ADV_DONTNEED does anything (through posix_madvise, where the
 * system's POSIX_MADV_DONTNEED discards pages, or not at all: the advice is
 * then accepted and ignored, since the caller only uses it to return
 * memory), remap fails with ENOSYS, the probe reports the base page and
 * nothing else, and the census cannot tell what is on huge pages.  Only POSIX calls, so it builds on Linux too (and is
 * compile-tested there); the feature tests below are on flags, not on the
 * OS.  Contracts are in hp_sys.h.  */
#include "hp_sys.h"
#include "hp_posix.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if !defined MAP_ANONYMOUS && defined MAP_ANON
#define MAP_ANONYMOUS MAP_ANON
#endif

extern char **environ;

/* ---------------------------------------------------------------- mapping */

static inline int os_prot(enum hp_prot prot) { return prot == HP_PROT_RW ? PROT_READ | PROT_WRITE : PROT_NONE; }

static inline int os_map_flags(unsigned flags) {
  int f = MAP_PRIVATE | MAP_ANONYMOUS;

#ifdef MAP_NORESERVE
  if (flags & HP_MAP_NORESERVE) f |= MAP_NORESERVE;
#endif
  if (flags & HP_MAP_FIXED) f |= MAP_FIXED;
  return f;
}

void *hp_os_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge_size) {
  void *p;

  (void)huge_size;
  if (flags & HP_MAP_HUGETLB) {
    errno = ENOTSUP;
    return NULL;
  }
  p = mmap(addr, len, os_prot(prot), os_map_flags(flags), -1, 0);
  if (p == MAP_FAILED) return NULL;
  /* No MAP_FIXED_NOREPLACE in POSIX: the address is a hint, checked.  */
  if ((flags & HP_MAP_FIXED_NOREPLACE) && !(flags & HP_MAP_FIXED) && p != addr) {
    munmap(p, len);
    errno = EEXIST;
    return NULL;
  }
  return p;
}


int hp_os_advise(void *addr, size_t len, enum hp_advice adv) {
  if (adv != HP_ADV_DONTNEED) {
    errno = EINVAL;
    return -1;
  }
#ifdef POSIX_MADV_DONTNEED
  (void)posix_madvise(addr, len, POSIX_MADV_DONTNEED);
#else
  (void)addr;
  (void)len;
#endif
  return 0;
}

void *hp_os_remap(void *old, size_t oldlen, size_t newlen, int may_move) {
  (void)old;
  (void)oldlen;
  (void)newlen;
  (void)may_move;
  errno = ENOSYS;
  return NULL;
}

/* ---------------------------------------------------------------- process facts */

size_t hp_os_page_size(void) {
  long s = sysconf(_SC_PAGESIZE);
  return s > 0 ? (size_t)s : 4096;
}

int hp_os_secure(void) { return getuid() != geteuid() || getgid() != getegid(); }

char *const *hp_os_environ(void) { return environ; }

unsigned hp_os_ncpus(void) {
#ifdef _SC_NPROCESSORS_ONLN
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n > 0) return (unsigned)n;
#endif
  return 1;
}

/* No portable non-blocking entropy call: best effort, as the contract
   allows.  */
void hp_os_random(void *buf, size_t n) { hp_posix_weak_random(buf, n, (uint64_t)getpid()); }

/* ---------------------------------------------------------------- probe */

void hp_sys_probe_root(struct hp_sysinfo *si, const char *root, size_t base_page) {
  (void)root;
  memset(si, 0, sizeof *si);
  si->arch = hp_arch_name();
  si->base_page = base_page != 0 ? base_page : hp_os_page_size();
  si->thp = HP_THP_UNSUPPORTED;
  si->mmu = HP_MMU_UNKNOWN;
}

void hp_sys_probe(struct hp_sysinfo *si) { hp_sys_probe_root(si, "", 0); }

/* ---------------------------------------------------------------- census */

/* No huge pages here, and no portable way to ask: unknown, not 0.  */
enum hp_census hp_os_huge_backed(struct hp_mem_range *r, size_t n) {
  for (size_t i = 0; i < n; i++) r[i].huge = 0;
  return HP_CENSUS_UNKNOWN;
}

int hp_os_resident(void *addr, size_t len) {
  (void)addr;
  (void)len;
  return -1;
}

void hp_os_futex_wait(int *addr, int val) {
  (void)addr;
  (void)val;
  sched_yield();
}

void hp_os_futex_wake(int *addr, int n) {
  (void)addr;
  (void)n;
}
