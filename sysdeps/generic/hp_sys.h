/* SPDX-License-Identifier: MIT */
/* hp_sys.h: the one interface between hpmalloc's core and the system.
 *
 * The core (malloc/, tunables/) includes only this header for anything that
 * differs by OS or architecture; it contains no #ifdef on either.  Each
 * directory under sysdeps/ implements part of it:
 *   sysdeps/generic/            any POSIX system: no huge pages, no placement
 *   sysdeps/unix/sysv/linux/    OS primitives and the /proc, /sys probe
 *   sysdeps/<arch>/             page sizes and placement for one architecture
 * The GNUmakefile picks the files from `$(CC) -dumpmachine`.
 *
 * No function here may call malloc, directly or through stdio, opendir,
 * getenv, qsort or snprintf (sysdeps/README.md lists what they may call);
 * all of them are safe to call before the allocator is initialised and
 * while an arena lock is held (but the census, which is slow and is called
 * with no lock held).  Within the core only malloc/region.c calls the
 * memory primitives (map, unmap, protect, advise, remap, resident), and
 * only the statistics (malloc/backed.c) call the census.  */
#ifndef HP_SYS_H
#define HP_SYS_H

#include "hp_base.h"

/* Everything declared here is internal to the library: hidden, so calls
   from the core are direct (no GOT) and nothing is exported.  */
#pragma GCC visibility push(hidden)

/* ---------------------------------------------------------------- OS primitives */

enum hp_prot { HP_PROT_NONE = 0, HP_PROT_RW = 1 };

enum hp_map_flags {
  HP_MAP_NORESERVE = 1u << 0,       /* do not reserve swap / hugetlb pages */
  HP_MAP_HUGETLB = 1u << 1,         /* back with hugetlbfs pages of `huge_size` */
  HP_MAP_FIXED = 1u << 2,           /* place exactly at addr, replacing what is there */
  HP_MAP_FIXED_NOREPLACE = 1u << 3, /* place exactly at addr or fail; the caller still
                                       checks the result, since old kernels and
                                       qemu-user treat it as a hint */
  HP_MAP_POPULATE = 1u << 4,        /* prefault (used to make hugetlb failures show now, not as SIGBUS) */
};

/* Map `len` bytes of private anonymous memory.  addr is a hint unless a FIXED
   flag is given.  huge_size is the hugetlb page size when HP_MAP_HUGETLB is set
   (0 = the kernel's default), ignored otherwise.
   Returns the address, or NULL with errno set (ENOMEM, EINVAL, ...).  */
void *hp_os_map(void *addr, size_t len, enum hp_prot prot, unsigned flags, size_t huge_size);

/* Unmap [addr, addr+len).  Returns 0 or -1 with errno.  */
int hp_os_unmap(void *addr, size_t len);

/* Change protection of [addr, addr+len).  Returns 0 or -1 with errno.  */
int hp_os_protect(void *addr, size_t len, enum hp_prot prot);

enum hp_advice {
  HP_ADV_HUGEPAGE,       /* MADV_HUGEPAGE: allow THP */
  HP_ADV_NOHUGEPAGE,     /* MADV_NOHUGEPAGE */
  HP_ADV_DONTNEED,       /* MADV_DONTNEED: drop the pages, range reads back zero */
  HP_ADV_COLLAPSE,       /* MADV_COLLAPSE (Linux 6.1+): collapse into huge pages now */
  HP_ADV_POPULATE_WRITE, /* MADV_POPULATE_WRITE (Linux 5.14+, value 23): fault the range in
                            writable now; fails with ENOMEM/EFAULT instead of SIGBUS when a
                            hugetlb pool cannot back it */
};

/* Advise the kernel on [addr, addr+len).  Returns 0, or -1 with errno
   (EINVAL when the kernel or system does not know the advice).  */
int hp_os_advise(void *addr, size_t len, enum hp_advice adv);

/* Whether every page of [addr, addr+len) is resident (mincore): 1 yes,
   0 no, -1 cannot tell.  Used to confirm that a hugetlb populate really
   happened (emulators such as qemu-user accept MADV_POPULATE_WRITE and do
   nothing, and the first touch would then raise SIGBUS on a dry pool).  */
int hp_os_resident(void *addr, size_t len);

/* Resize a mapping, in place only (may_move == 0) or moving it if needed.
   Returns the (possibly new) address or NULL with errno.  The generic
   implementation always fails with ENOSYS.  */
void *hp_os_remap(void *old, size_t oldlen, size_t newlen, int may_move);

/* Block while *addr == val (Linux: FUTEX_WAIT_PRIVATE); may return early
   or spuriously.  The generic version yields the processor.  */
void hp_os_futex_wait(int *addr, int val);

/* Wake up to n threads blocked in hp_os_futex_wait on addr.  */
void hp_os_futex_wake(int *addr, int n);

/* The base page size the process runs with (AT_PAGESZ).  */
size_t hp_os_page_size(void);

/* Non-zero when the process is setuid/setgid (AT_SECURE): the environment
   must then not configure the allocator.  */
int hp_os_secure(void);

/* The process environment (NULL-terminated), without calling getenv.  */
char *const *hp_os_environ(void);

/* Number of CPUs the process may run on (its affinity mask; else the online
   CPUs), without calling malloc (for the arena limit).  Returns at least 1.  */
unsigned hp_os_ncpus(void);

/* Fill buf with n random bytes, best effort, never blocking and never
   failing (falls back to address and time entropy).  */
void hp_os_random(void *buf, size_t n);

/* Write a message to stderr with write(2): no stdio, no allocation.  Only
   the fatal path (check.c) writes to descriptor 2 unconditionally;
   diagnostics go through malloc/diag.c, which checks it first.  */
void hp_os_write_err(const char *s, size_t n);

/* ---------------------------------------------------------------- diagnostics' output
 * For malloc/diag.c: async-signal-safe system calls only (fstat, open,
 * write, close, getpid, getcwd), no allocation, errno preserved.  */

/* What an open descriptor refers to: its file's device, inode and type
   (the S_IFMT bits of st_mode).  */
struct hp_file_id {
  uint64_t dev, ino;
  unsigned type;
};

/* Fill *id for descriptor fd: 0, or -1 when fd is not open.  */
int hp_os_file_id(int fd, struct hp_file_id *id);

/* Open path for appending (O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, mode 0644
   before the umask): the descriptor, or -1.  */
int hp_os_open_append(const char *path);

/* Write all of s[0..n) to fd (retrying short writes and EINTR); gives up
   silently on any other error.  */
void hp_os_write_fd(int fd, const char *s, size_t n);

/* Close fd.  */
void hp_os_close(int fd);

/* The calling process's id.  */
int hp_os_pid(void);

/* The current directory into buf[n], NUL-terminated: 0, or -1 when it
   does not fit or cannot be read.  */
int hp_os_cwd(char *buf, size_t n);

/* Nanoseconds of CLOCK_MONOTONIC (0 if the clock cannot be read): for the
   statistics' costs of kernel calls.  Allocates nothing.  */
uint64_t hp_os_now_ns(void);

/* Abort the process (SIGABRT), without allocating.  */
_Noreturn void hp_os_abort(void);

/* ---------------------------------------------------------------- census (statistics only) */

/* A range of the process's own address space, and how much of it the
   kernel maps with huge pages.  */
struct hp_mem_range {
  uintptr_t lo, hi; /* in: [lo, hi), base-page aligned, lo <= hi */
  size_t huge;      /* out: bytes of [lo, hi) on huge pages now */
};

/* How hp_os_huge_backed measured (the values of hpmalloc.h's
   HPMALLOC_BACKED_*).  */
enum hp_census {
  HP_CENSUS_UNKNOWN = 0,      /* the system cannot tell: every `huge` is 0 */
  HP_CENSUS_PAGEMAP_SCAN = 1, /* page by page: the PAGEMAP_SCAN ioctl of /proc/self/pagemap (Linux 6.7+) */
  HP_CENSUS_SMAPS = 2,        /* mapping by mapping: /proc/self/smaps; a mapping that crosses the edge
                                 of a range is shared out in proportion to the overlap */
};

/* Measure how many bytes of each of r[0..n) the kernel maps with huge
   pages now: transparent huge pages mapped whole at the PMD level (what
   smaps counts as AnonHugePages) and hugetlbfs pages that are present
   (smaps' Private_Hugetlb and Shared_Hugetlb).  The ranges may come in any
   order and must not overlap; what is not mapped counts 0.  Returns how it
   measured (with n == 0: how it would); on HP_CENSUS_UNKNOWN every
   r[i].huge is 0.  errno is preserved.  It reads the kernel's page tables,
   in time proportional to the ranges (PAGEMAP_SCAN) or to the whole
   address space (smaps), so only the statistics calls use it, with no
   lock of the allocator held.  Never allocates.  */
enum hp_census hp_os_huge_backed(struct hp_mem_range *r, size_t n);

/* ---------------------------------------------------------------- probe */

/* HP_THP_UNKNOWN: the kernel's files cannot be read (/sys not mounted, or
   access denied), so nothing is known; the caller asks the system calls
   (region.c's probes).  HP_THP_UNSUPPORTED: /sys/kernel/mm is there but
   has no transparent_hugepage (a kernel without THP), or its enabled file
   names no mode.  */
enum hp_thp_mode { HP_THP_UNSUPPORTED = 0, HP_THP_NEVER, HP_THP_MADVISE, HP_THP_ALWAYS, HP_THP_UNKNOWN };
enum hp_mmu { HP_MMU_UNKNOWN = 0, HP_MMU_PAGE_TABLE, HP_MMU_HASH, HP_MMU_RADIX };

#define HP_MAX_HUGE_SIZES 8

/* What the machine offers, read once at start-up.  */
struct hp_sysinfo {
  size_t base_page;                        /* base page size */
  enum hp_thp_mode thp;                    /* transparent_hugepage/enabled */
  size_t thp_pmd_size;                     /* transparent_hugepage/hpage_pmd_size; when THP is present
                                              or unknown but that file is not, hp_arch_default_pmd();
                                              0 without THP */
  size_t hugetlb_default;                  /* Hugepagesize from /proc/meminfo, 0 if absent */
  size_t hugetlb_sizes[HP_MAX_HUGE_SIZES]; /* /sys/kernel/mm/hugepages/hugepages-*kB, ascending */
  size_t hugetlb_free[HP_MAX_HUGE_SIZES];  /* free_hugepages of each, in pages */
  unsigned n_hugetlb;
  /* 1: the pools' directory and /sys/kernel/mm cannot be read, so
     n_hugetlb == 0 says nothing (ask MAP_HUGETLB); 0: the list is the kernel's */
  int hugetlb_unknown;
  enum hp_mmu mmu;  /* POWER: hash or radix; others: page table;
                                              unknown when /proc/cpuinfo is unreadable */
  int seg_1t;       /* POWER hash: 1 TiB segments available */
  const char *arch; /* hp_arch_name() of the build: the architecture whose
                                              placement applies, not read from the files */
};

/* Probe the running system.  Production builds read the real /proc and
   /sys; test builds (HP_TEST_BUILD) read under the directory named by
   HPMALLOC_TEST_SYSROOT when that is set.  Never allocates; files are read
   into stack buffers and NUL-terminated; missing or unreadable files leave
   the corresponding fields at their "absent" value.  */
void hp_sys_probe(struct hp_sysinfo *si);

/* Same, reading every file under `root` ("" for the live system) and taking
   base_page from `base_page`.  base_page 0 means: the number in the file
   `<root>/hpmalloc-base-page` when root is not "" and that file exists (a
   fixture cannot supply AT_PAGESZ), else the running process's.  For tests.  */
void hp_sys_probe_root(struct hp_sysinfo *si, const char *root, size_t base_page);

/* ---------------------------------------------------------------- placement */

/* Where heap regions go.  */
struct hp_placement {
  uintptr_t hint;      /* first address to try for heap reservations (0 = kernel's choice) */
  size_t align;        /* alignment of heap reservations: power of two, >= base_page */
  uintptr_t huge_hint; /* first address to try for hugetlb reservations (0 = kernel's choice);
                            on powerpc64 hash a 1 TiB slice of its own (a hash slice holds one
                            page size: reserve hugetlb with MAP_HUGETLB|MAP_NORESERVE, never
                            MAP_FIXED over a base-page reservation) */
  size_t huge_align;   /* alignment of hugetlb reservations; on powerpc64 hash 1 TiB, so each
                            hugetlb region starts a slice */
  uintptr_t limit;     /* do not place above this (0 = no limit) */
  char desc[96];       /* human readable, e.g. "x86_64: 1 GiB aligned, below 128 TiB" */
};

/* Decide placement from what the probe found.  Pure: no system calls.  */
void hp_arch_placement(const struct hp_sysinfo *si, struct hp_placement *pl);

/* The PMD-level huge page size this architecture uses for THP when the probe
   could not read hpage_pmd_size (depends on base page and MMU); 0 = none.
   Pure.  */
size_t hp_arch_default_pmd(const struct hp_sysinfo *si);

/* The architecture the build targets: "x86_64", "powerpc64", "aarch64" or
   "generic".  A static string.  */
const char *hp_arch_name(void);

#pragma GCC visibility pop

#endif
