/* SPDX-License-Identifier: MIT */
/* Linux OS primitives: mmap, munmap, mprotect, madvise, mremap and the few
 * facts about the process the core needs.  MIT licence.
 *
 * Contracts are in hp_sys.h.  Nothing here allocates: no stdio, no opendir,
 * no getenv; files are read into stack buffers.  */
#include "hp_linux.h"
#include "hp_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Flags and advice that older headers lack; the values are the kernel's
   (the same on every Linux architecture).  */
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_MASK
#define MAP_HUGE_MASK 0x3f
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* ---------------------------------------------------------------- mapping */

static inline int os_prot(enum hp_prot prot) { return prot == HP_PROT_RW ? PROT_READ | PROT_WRITE : PROT_NONE; }

static inline unsigned os_log2(size_t x) {
  unsigned n = 0;
  while (x > 1) {
    x >>= 1;
    n++;
  }
  return n;
}

/* The MAP_HUGETLB flags for pages of huge_size (0 = the default size).
   Returns 0 with *out set, or the errno value when the size cannot be
   encoded (EINVAL) or these headers have no hugetlb (ENOTSUP).  */
static inline int os_hugetlb_flags(size_t huge_size, int *out) {
#ifdef MAP_HUGETLB
  unsigned shift = os_log2(huge_size);

  if (huge_size != 0 && ((huge_size & (huge_size - 1)) != 0 || shift > MAP_HUGE_MASK)) return EINVAL;
  *out = MAP_HUGETLB | (huge_size != 0 ? (int)(shift << MAP_HUGE_SHIFT) : 0);
  return 0;
#else
  (void)huge_size;
  *out = 0;
  return ENOTSUP;
#endif
}

/* mmap flags for hp_map_flags, without the FIXED ones.  */
static inline int os_map_flags(unsigned flags) {
  int f = MAP_PRIVATE | MAP_ANONYMOUS;

  if (flags & HP_MAP_NORESERVE) f |= MAP_NORESERVE;
  if (flags & HP_MAP_POPULATE) f |= MAP_POPULATE;
  if (flags & HP_MAP_FIXED) f |= MAP_FIXED;
#ifdef MAP_FIXED_NOREPLACE
  else if (flags & HP_MAP_FIXED_NOREPLACE)
    f |= MAP_FIXED_NOREPLACE;
#endif
  return f;
}

void *hp_os_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge_size) {
  int f = os_map_flags(flags);
  int huge = 0, err;
  void *p;

  if ((flags & HP_MAP_HUGETLB) && (err = os_hugetlb_flags(huge_size, &huge)) != 0) {
    errno = err;
    return NULL;
  }
  p = mmap(addr, len, os_prot(prot), f | huge, -1, 0);
  if (p == MAP_FAILED) return NULL;
  /* MAP_FIXED_NOREPLACE is a hint to kernels before 4.17 and to qemu-user:
     a mapping anywhere else is not what the caller asked for.  */
  if ((flags & HP_MAP_FIXED_NOREPLACE) && !(flags & HP_MAP_FIXED) && p != addr) {
    munmap(p, len);
    errno = EEXIST;
    return NULL;
  }
  return p;
}


/* The madvise value of adv, or -1 when these headers do not know it.  */
static inline int os_advice(enum hp_advice adv) {
  switch (adv) {
#ifdef MADV_HUGEPAGE
  case HP_ADV_HUGEPAGE: return MADV_HUGEPAGE;
  case HP_ADV_NOHUGEPAGE: return MADV_NOHUGEPAGE;
#endif
  case HP_ADV_DONTNEED: return MADV_DONTNEED;
  case HP_ADV_COLLAPSE: return MADV_COLLAPSE;
  case HP_ADV_POPULATE_WRITE: return MADV_POPULATE_WRITE;
  default: return -1;
  }
}

int hp_os_advise(void *addr, size_t len, enum hp_advice adv) {
  int a = os_advice(adv);

  if (a < 0) {
    errno = EINVAL;
    return -1;
  }
  return madvise(addr, len, a);
}

void *hp_os_remap(void *old, size_t oldlen, size_t newlen, int may_move) {
  void *p = mremap(old, oldlen, newlen, may_move ? MREMAP_MAYMOVE : 0);
  return p == MAP_FAILED ? NULL : p;
}

/* ---------------------------------------------------------------- process facts */

size_t hp_os_page_size(void) {
  unsigned long p = getauxval(AT_PAGESZ);

  if (p == 0 || (p & (p - 1)) != 0) {
    long s = sysconf(_SC_PAGESIZE);
    p = s > 0 ? (unsigned long)s : 4096;
  }
  return p;
}

int hp_os_secure(void) { return getauxval(AT_SECURE) != 0; }

char *const *hp_os_environ(void) { return environ; }

/* Count the CPUs in the affinity mask, in a stack buffer large enough for
   8192 CPUs.  Returns 0 when the call fails.  */
static inline unsigned os_affinity_cpus(void) {
  unsigned long mask[8192 / (8 * sizeof(unsigned long))];
  int n;

  if (sched_getaffinity(0, sizeof mask, (cpu_set_t *)mask) != 0) return 0;
  n = CPU_COUNT_S(sizeof mask, (cpu_set_t *)mask);
  return n > 0 ? (unsigned)n : 0;
}

static inline unsigned os_online_cpus(void) {
  char buf[512];

  if (hp_linux_read_file("/sys/devices/system/cpu/online", buf, sizeof buf) < 0) return 0;
  return hp_linux_count_cpulist(buf);
}

unsigned hp_os_ncpus(void) {
  unsigned n = os_affinity_cpus();

  if (n == 0) n = os_online_cpus();
  return n > 0 ? n : 1;
}

/* ---------------------------------------------------------------- randomness */

/* What getrandom could not fill: mixed from the kernel's 16 AT_RANDOM bytes
   (also the stack protector's seed, so only ever mixed, never copied out),
   the clock and addresses.  */
static void os_weak_random(unsigned char *out, size_t n) {
  const void *at = (const void *)getauxval(AT_RANDOM);
  uint64_t seed[2] = { 0, 0 };
  if (at != NULL) memcpy(seed, at, sizeof seed);
  hp_posix_weak_random(out, n, seed[0] ^ (seed[1] << 1));
}

void hp_os_random(void *buf, size_t n) {
  unsigned char *p = buf;
  size_t got = 0;

  while (got < n) {
    ssize_t r = getrandom(p + got, n - got, GRND_NONBLOCK);
    if (r > 0)
      got += (size_t)r;
    else if (r < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  if (got < n) os_weak_random(p + got, n - got);
}

/* ---------------------------------------------------------------- errors */

int hp_os_resident(void *addr, size_t len) {
  /* one status byte per base page; look at the first and the last page,
     enough for a single huge page (all or nothing) */
  unsigned char vec[1];
  size_t page = hp_os_page_size();
  if (mincore(addr, page, vec) != 0) return -1;
  if (!(vec[0] & 1)) return 0;
  if (len > page && mincore((char *)addr + len - page, page, vec) != 0) return -1;
  return len <= page || (vec[0] & 1);
}

void hp_os_futex_wait(int *addr, int val) {
  int saved = errno;
  syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
  errno = saved;
}

void hp_os_futex_wake(int *addr, int n) {
  int saved = errno;
  syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
  errno = saved;
}
