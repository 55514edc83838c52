/* SPDX-License-Identifier: MIT */
/* The Linux probe: what the machine offers, from /sys and /proc.  MIT
 * licence.
 *
 * Read once at start-up, before the allocator works, so nothing here may
 * allocate: no stdio, no opendir (it mallocs its DIR), no getenv.  Files go
 * into stack buffers through readers.c; directories are listed with
 * getdents64 into a stack buffer.  Every path is taken under a root prefix
 * ("" for the live system) so the unit tests can point the probe at fixture
 * trees; only a test build takes that root from the environment.
 *
 * What is read, and what a missing or unparsable file leaves:
 *   sys/kernel/mm/transparent_hugepage/enabled     thp = HP_THP_UNSUPPORTED
 *                                 when sys/kernel/mm is there (the kernel has
 *                                 no THP), HP_THP_UNKNOWN when it is not or
 *                                 the file cannot be read (no /sys mounted,
 *                                 access denied: an initramfs, a chroot)
 *   sys/kernel/mm/transparent_hugepage/hpage_pmd_size
 *                                 hp_arch_default_pmd() if THP is present or
 *                                 unknown
 *   proc/meminfo (Hugepagesize:)                   hugetlb_default = 0
 *   sys/kernel/mm/hugepages/hugepages-<N>kB/free_hugepages
 *                                 no such size / free = 0; the directory
 *                                 unreadable and sys/kernel/mm too:
 *                                 hugetlb_unknown = 1
 *   proc/cpuinfo (POWER: "cpu", "MMU")             mmu inferred, see probe_mmu
 *   proc/device-tree/cpus/<any>/ibm,processor-segment-sizes
 *                                 seg_1t inferred, see probe_seg_1t
 *   hpmalloc-base-page (fixtures only, root != "") base_page from AT_PAGESZ
 */
#include "hp_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROBE_PATH_MAX 512
#define MM_DIR "/sys/kernel/mm"
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"
#define POOLS_DIR "/sys/kernel/mm/hugepages"
#define CPUS_DT_DIR "/proc/device-tree/cpus"

static const uint64_t MiB = (uint64_t)1 << 20;

/* ---------------------------------------------------------------- small readers */

/* Join up to four path parts (NULL ends the list early).  Returns 0, or -1
   when the result does not fit in out[PROBE_PATH_MAX].  */
static int path_join(char *out, const char *a, const char *b, const char *c, const char *d) {
  const char *parts[4] = { a, b, c, d };
  size_t n = 0;

  for (int i = 0; i < 4 && parts[i] != NULL; i++) {
    size_t len = strlen(parts[i]);
    if (n + len + 1 > PROBE_PATH_MAX) return -1;
    memcpy(out + n, parts[i], len);
    n += len;
  }
  out[n] = '\0';
  return 0;
}


/* Read a file holding one decimal number (and a newline).  Returns 0 with
   *out set, or -1 when missing or not just a number.  */
static int read_u64_file(const char *path, uint64_t *out) {
  char buf[64];
  const char *p = buf;

  if (hp_linux_read_file(path, buf, sizeof buf) <= 0 || hp_linux_parse_u64(&p, out) != 0) return -1;
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  return *p == '\0' ? 0 : -1;
}

/* Called with each entry name of a directory but "." and "..".  Return
   non-zero to stop.  */
typedef int (*entry_fn)(const char *name, void *ctx);

/* The kernel's getdents64 record; glibc's struct dirent64 has a fixed-size
   d_name, so the layout is declared here.  */
struct raw_dirent64 {
  /* Unused here but part of the kernel's layout (cppcheck: unusedStructMember).  */
  uint64_t d_ino; // cppcheck-suppress unusedStructMember
  int64_t d_off;  // cppcheck-suppress unusedStructMember
  unsigned short d_reclen;
  unsigned char d_type; // cppcheck-suppress unusedStructMember
  char d_name[];
};

/* Call fn for the entries of one getdents64 batch.  Returns non-zero when
   fn asked to stop.  */
static int entries_batch(const char *buf, long n, entry_fn fn, void *ctx) {
  for (long off = 0; off < n;) {
    const struct raw_dirent64 *d = (const struct raw_dirent64 *)(const void *)(buf + off);
    int dot = d->d_name[0] == '.' && (d->d_name[1] == '\0' || (d->d_name[1] == '.' && d->d_name[2] == '\0'));
    if (d->d_reclen == 0) return 1;
    if (!dot && fn(d->d_name, ctx) != 0) return 1;
    off += d->d_reclen;
  }
  return 0;
}

/* List a directory without opendir.  Returns 0, or -1 when it cannot be
   opened.  */
static int for_each_entry(const char *path, entry_fn fn, void *ctx) {
  union {
    uint64_t align; // cppcheck-suppress unusedStructMember ; there to align b for the records
    char b[2048];
  } buf;
  long n;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  if (fd < 0) return -1;
  while ((n = syscall(SYS_getdents64, fd, buf.b, sizeof buf.b)) > 0)
    if (entries_batch(buf.b, n, fn, ctx) != 0) break;
  close(fd);
  return 0;
}

/* ---------------------------------------------------------------- base page, THP */

static size_t probe_base_page(const char *root, size_t base_page) {
  char path[PROBE_PATH_MAX];
  uint64_t v;

  if (base_page != 0) return base_page;
  if (root[0] != '\0' && path_join(path, root, "/hpmalloc-base-page", NULL, NULL) == 0 &&
      read_u64_file(path, &v) == 0 && is_pow2(v) && v >= 1024)
    return (size_t)v;
  return hp_os_page_size();
}

/* Can <root>/sys/kernel/mm be opened?  When it cannot, /sys is not
   mounted (or hidden), and a file missing under it says nothing about the
   kernel.  */
static int mm_dir_readable(const char *root) {
  char path[PROBE_PATH_MAX];
  int fd;

  if (path_join(path, root, MM_DIR, NULL, NULL) != 0) return 0;
  fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

/* thp and the raw hpage_pmd_size (0 when missing or not a power of two above
   the base page).  An enabled file that is missing where /sys/kernel/mm is
   readable means a kernel without THP; one that cannot be read otherwise
   means nothing is known.  */
static void probe_thp(const char *root, struct hp_sysinfo *si) {
  char path[PROBE_PATH_MAX], buf[256];
  uint64_t v;

  si->thp = HP_THP_UNSUPPORTED;
  si->thp_pmd_size = 0;
  bool named = path_join(path, root, THP_DIR, "/enabled", NULL) == 0;
  if (named && hp_linux_read_file(path, buf, sizeof buf) > 0)
    si->thp = hp_linux_parse_thp(buf);
  else if (!named || errno != ENOENT || !mm_dir_readable(root))
    si->thp = HP_THP_UNKNOWN;
  if (path_join(path, root, THP_DIR, "/hpage_pmd_size", NULL) == 0 && read_u64_file(path, &v) == 0 && is_pow2(v) &&
      v > si->base_page)
    si->thp_pmd_size = (size_t)v;
}

/* ---------------------------------------------------------------- hugetlb */

static int meminfo_line(char *line, void *ctx) {
  static const char key[] = "Hugepagesize:";
  const char *p = line + sizeof key - 1;
  uint64_t kb;

  if (strncmp(line, key, sizeof key - 1) != 0) return 0;
  if (hp_linux_parse_u64(&p, &kb) == 0 && strcmp(p, " kB") == 0 && kb <= (SIZE_MAX >> 10) && is_pow2(kb))
    *(size_t *)ctx = (size_t)(kb << 10);
  return 1;
}

static void probe_meminfo(const char *root, struct hp_sysinfo *si) {
  char path[PROBE_PATH_MAX];

  si->hugetlb_default = 0;
  if (path_join(path, root, "/proc/meminfo", NULL, NULL) == 0) {
    char buf[1024];
    hp_linux_read_lines(path, buf, sizeof buf, meminfo_line, &si->hugetlb_default);
  }
}

/* The page size a "hugepages-<N>kB" directory name stands for, or 0.  */
static size_t pool_size(const char *name) {
  static const char prefix[] = "hugepages-";
  const char *p = name + sizeof prefix - 1;
  uint64_t kb;

  if (strncmp(name, prefix, sizeof prefix - 1) != 0 || hp_linux_parse_u64(&p, &kb) != 0 || strcmp(p, "kB") != 0 ||
      !is_pow2(kb) || kb > (SIZE_MAX >> 10))
    return 0;
  return (size_t)(kb << 10);
}

/* Insert a pool, keeping sizes ascending; past HP_MAX_HUGE_SIZES the
   largest are dropped.  */
static void pool_insert(struct hp_sysinfo *si, size_t size, size_t free_pages) {
  unsigned i = si->n_hugetlb;

  if (i == HP_MAX_HUGE_SIZES) {
    if (size > si->hugetlb_sizes[i - 1]) return;
    i--;
  } else
    si->n_hugetlb++;
  for (; i > 0 && si->hugetlb_sizes[i - 1] > size; i--) {
    si->hugetlb_sizes[i] = si->hugetlb_sizes[i - 1];
    si->hugetlb_free[i] = si->hugetlb_free[i - 1];
  }
  si->hugetlb_sizes[i] = size;
  si->hugetlb_free[i] = free_pages;
}

struct pools_scan {
  const char *dir; /* "<root>/sys/kernel/mm/hugepages" */
  struct hp_sysinfo *si;
};

static int pool_entry(const char *name, void *ctx) {
  struct pools_scan *ps = ctx;
  char path[PROBE_PATH_MAX];
  size_t size = pool_size(name);
  uint64_t free_pages = 0;

  if (size == 0) return 0;
  if (path_join(path, ps->dir, "/", name, "/free_hugepages") == 0 && read_u64_file(path, &free_pages) != 0)
    free_pages = 0;
  pool_insert(ps->si, size, (size_t)free_pages);
  return 0;
}

static void probe_pools(const char *root, struct hp_sysinfo *si) {
  char dir[PROBE_PATH_MAX];
  struct pools_scan ps = { dir, si };

  si->n_hugetlb = 0;
  si->hugetlb_unknown = 0;
  if (path_join(dir, root, POOLS_DIR, NULL, NULL) != 0 || for_each_entry(dir, pool_entry, &ps) != 0)
    si->hugetlb_unknown = !mm_dir_readable(root);
}

static int has_pool(const struct hp_sysinfo *si, size_t size) {
  for (unsigned i = 0; i < si->n_hugetlb; i++)
    if (si->hugetlb_sizes[i] == size) return 1;
  return 0;
}

/* ---------------------------------------------------------------- cpuinfo: MMU */

struct cpuinfo_scan {
  int readable;    /* the file was read */
  int power;       /* a POWER or PowerPC CPU ("cpu : POWER9 ...") */
  int power_gen;   /* the n of "POWERn", 0 when not given */
  enum hp_mmu mmu; /* from the "MMU" line, HP_MMU_UNKNOWN without one */
};

/* Split "key<blanks>: value" in place.  Returns the value, or NULL when the
   line has no colon; *key_len is the key's length without its blanks.  */
static const char *cpuinfo_split(char *line, size_t *key_len) {
  char *colon = strchr(line, ':');
  size_t n;

  if (colon == NULL) return NULL;
  for (n = (size_t)(colon - line); n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'); n--)
    ;
  *key_len = n;
  for (colon++; *colon == ' ' || *colon == '\t'; colon++)
    ;
  return colon;
}

static void cpuinfo_cpu(struct cpuinfo_scan *c, const char *value) {
  const char *p = strstr(value, "POWER");
  uint64_t gen;

  if (p != NULL) {
    c->power = 1;
    p += 5;
    if (hp_linux_parse_u64(&p, &gen) == 0 && gen < 1000) c->power_gen = (int)gen;
  } else if (strncmp(value, "PPC", 3) == 0)
    c->power = 1;
}

/* One line of /proc/cpuinfo.  A POWER kernel prints the MMU line once,
   after every processor's block; other CPUs have no such line, so the scan
   stops at the end of the first block when that block is not a POWER's.  */
static int cpuinfo_line(char *line, void *ctx) {
  struct cpuinfo_scan *c = ctx;
  size_t klen = 0;
  const char *value;

  if (line[0] == '\0') return !c->power;
  value = cpuinfo_split(line, &klen);
  if (value == NULL) return 0;
  if (klen == 3 && strncmp(line, "MMU", 3) == 0) {
    if (strncmp(value, "Hash", 4) == 0)
      c->mmu = HP_MMU_HASH;
    else if (strncmp(value, "Radix", 5) == 0)
      c->mmu = HP_MMU_RADIX;
    return 1;
  }
  if (klen == 3 && strncmp(line, "cpu", 3) == 0) cpuinfo_cpu(c, value);
  return 0;
}

static void probe_cpuinfo(const char *root, struct cpuinfo_scan *c) {
  char path[PROBE_PATH_MAX], buf[4096];

  memset(c, 0, sizeof *c);
  c->readable = path_join(path, root, "/proc/cpuinfo", NULL, NULL) == 0 &&
                hp_linux_read_lines(path, buf, sizeof buf, cpuinfo_line, c) == 0;
}

/* The MMU kind.  The "MMU" line decides when there is one (Linux 4.13+ on
   POWER).  Without it: 16 MiB huge pages (a 16 MiB THP PMD or a
   hugepages-16384kB pool) exist only on a hash MMU; a POWER CPU without them
   is radix when its PMD maps 2 MiB, else hash (kernels that old had no
   radix).  Any other readable cpuinfo is a page-table MMU; an unreadable
   one leaves it unknown.  */
static enum hp_mmu probe_mmu(const struct hp_sysinfo *si, const struct cpuinfo_scan *c) {
  if (c->mmu != HP_MMU_UNKNOWN) return c->mmu;
  if (si->thp_pmd_size == 16 * MiB || has_pool(si, 16 * MiB)) return HP_MMU_HASH;
  if (c->power) return si->thp_pmd_size == 2 * MiB ? HP_MMU_RADIX : HP_MMU_HASH;
  return c->readable ? HP_MMU_PAGE_TABLE : HP_MMU_UNKNOWN;
}

/* ---------------------------------------------------------------- segments */

struct seg_scan {
  const char *dir; /* "<root>/proc/device-tree/cpus" */
  int found;       /* -1 until a cpu node's property was read, then 0 or 1 */
};

static int seg_entry(const char *name, void *ctx) {
  struct seg_scan *ss = ctx;
  char path[PROBE_PATH_MAX], buf[129];
  long n;

  if (path_join(path, ss->dir, "/", name, "/ibm,processor-segment-sizes") != 0) return 0;
  n = hp_linux_read_file(path, buf, sizeof buf);
  if (n <= 0) return 0;
  ss->found = hp_linux_seg_sizes_have_1t((const unsigned char *)buf, (size_t)n);
  return ss->found >= 0;
}

/* 1 TiB segments, on a hash MMU only.  The device tree's
   ibm,processor-segment-sizes of the first CPU node that has one decides
   (the kernel reads the same property).  When no node has it (a container
   hiding /proc/device-tree, qemu), assume 1 TiB segments on POWER7 and
   later, which all have them; earlier CPUs and unnamed ones get none.  */
static int probe_seg_1t(const char *root, const struct hp_sysinfo *si, const struct cpuinfo_scan *c) {
  char dir[PROBE_PATH_MAX];
  struct seg_scan ss = { dir, -1 };

  if (si->mmu != HP_MMU_HASH) return 0;
  if (path_join(dir, root, CPUS_DT_DIR, NULL, NULL) == 0) for_each_entry(dir, seg_entry, &ss);
  if (ss.found >= 0) return ss.found;
  return c->power_gen >= 7;
}

/* ---------------------------------------------------------------- entry points */

void hp_sys_probe_root(struct hp_sysinfo *si, const char *root, size_t base_page) {
  struct cpuinfo_scan cpu;

  memset(si, 0, sizeof *si);
  if (root == NULL) root = "";
  si->arch = hp_arch_name();
  si->base_page = probe_base_page(root, base_page);
  probe_thp(root, si);
  probe_meminfo(root, si);
  probe_pools(root, si);
  probe_cpuinfo(root, &cpu);
  si->mmu = probe_mmu(si, &cpu);
  si->seg_1t = probe_seg_1t(root, si, &cpu);
  if (si->thp == HP_THP_UNSUPPORTED)
    si->thp_pmd_size = 0;
  else if (si->thp_pmd_size == 0)
    si->thp_pmd_size = hp_arch_default_pmd(si);
}

/* The fixture root a test build was pointed at, else "" (the live
   system).  A production build never reads paths from the environment.  */
static const char *probe_root(void) {
#if defined HP_TEST_BUILD && HP_TEST_BUILD
  static const char key[] = "HPMALLOC_TEST_SYSROOT=";
  char *const *env = hp_os_environ();

  for (; env != NULL && *env != NULL; env++)
    if (strncmp(*env, key, sizeof key - 1) == 0) return *env + sizeof key - 1;
#endif
  return "";
}

void hp_sys_probe(struct hp_sysinfo *si) { hp_sys_probe_root(si, probe_root(), 0); }
