/* SPDX-License-Identifier: MIT */
/* limits: hpmalloc at the edge of what the kernel gives (issue 6).
 *
 *   limits as       RLIMIT_AS set 256 MiB above the process's size, then
 *                   small, medium and large blocks and two threads until
 *                   every size class fails: each failure is NULL with
 *                   ENOMEM, every byte written is still there, the heap
 *                   validates; after freeing everything, small blocks and
 *                   a block of half the remaining headroom succeed.
 *   limits tight    RLIMIT_AS set 16 MiB above the process's size before
 *                   its first malloc: the main heap cannot have its usual
 *                   64 MiB (or 1 GiB aligned) reservation and must still
 *                   start; then the same checks.
 *   limits pool     run with glibc.malloc.hugetlb=2 and a small hugetlb
 *                   pool (run.sh sizes it): heaps, large blocks and two
 *                   threads allocate well past the pool; the pool runs dry
 *                   mid-run, the fallbacks are counted, every byte is
 *                   still there, the heap validates, hpmalloc_stats' hugetlb
 *                   bytes equal the kernel's count for the process
 *                   (Private_Hugetlb), at the peak and after freeing.  (What
 *                   stays after freeing is reported, not bounded: a hugetlb
 *                   heap keeps the pages of free chunks below a live block,
 *                   here glibc's thread descriptors, since a page given
 *                   back could not be faulted in again from a dry pool.)
 *
 * Linked with -lhpmalloc (hpmalloc_check_heap, hpmalloc_stats).  Prints
 * one line of results; exit 0 on success, 1 on a failed check (with the
 * reason), 77 when the check cannot run here.  MIT licence.  */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hpmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAILED: ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  exit(1);
}

/* A "Key:   value kB" field of a /proc file, read without allocating
   (usable before the first malloc).  -1 when absent.  */
static long proc_field(const char *path, const char *key) {
  char buf[8192];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  size_t kl = strlen(key);
  for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (strncmp(l, key, kl) != 0) continue;
    long v = 0;
    for (char *p = l + kl; *p && *p != '\n'; p++)
      if (*p >= '0' && *p <= '9') v = v * 10 + (*p - '0');
    return v;
  }
  return -1;
}

static size_t vm_size(void) { return (size_t)proc_field("/proc/self/status", "VmSize:") * KiB; }

static void set_as_limit(size_t bytes) {
  struct rlimit rl = { bytes, bytes };
  if (setrlimit(RLIMIT_AS, &rl) != 0) fail("setrlimit(RLIMIT_AS): %s", strerror(errno));
}

/* ---------------------------------------------------------------- blocks */

struct blk {
  unsigned char *p;
  size_t n;
  unsigned char tag;
};

enum { MAX_BLKS = 200000 };
static struct blk *blks;
static size_t nblks, nfailed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Write the first and last KiB and one byte per 4 KiB page (so the
   memory is really committed), check the same bytes later.  */
static void touch(unsigned char *p, size_t n, unsigned char tag) {
  size_t edge = n < KiB ? n : KiB;
  memset(p, tag, edge);
  memset(p + n - edge, tag, edge);
  for (size_t off = 0; off < n; off += 4096) p[off] = tag;
}

static void check_blk(const struct blk *b) {
  size_t edge = b->n < KiB ? b->n : KiB;
  for (size_t i = 0; i < edge; i++)
    if (b->p[i] != b->tag || b->p[b->n - 1 - i] != b->tag) fail("block %p of %zu bytes lost its contents", (void *)b->p, b->n);
  for (size_t off = 0; off < b->n; off += 4096)
    if (b->p[off] != b->tag) fail("block %p of %zu bytes: byte %zu changed", (void *)b->p, b->n, off);
}

/* One allocation: true when it succeeded.  */
static bool alloc(size_t n) {
  errno = 0;
  unsigned char *p = malloc(n);
  int e = errno;
  if (!p) {
    if (e != ENOMEM) fail("malloc(%zu) returned NULL with errno %d (%s), not ENOMEM", n, e, strerror(e));
    pthread_mutex_lock(&lock);
    nfailed++;
    pthread_mutex_unlock(&lock);
    return false;
  }
  pthread_mutex_lock(&lock);
  if (nblks == MAX_BLKS) fail("too many blocks");
  struct blk *b = &blks[nblks++];
  b->p = p;
  b->n = n;
  b->tag = (unsigned char)(nblks * 13 + 5);
  touch(p, n, b->tag);
  pthread_mutex_unlock(&lock);
  return true;
}

static void check_all(void) {
  for (size_t i = 0; i < nblks; i++) check_blk(&blks[i]);
  if (hpmalloc_check_heap() != 0) fail("hpmalloc_check_heap");
}

static void free_all(void) {
  for (size_t i = 0; i < nblks; i++) {
    check_blk(&blks[i]);
    free(blks[i].p);
  }
  nblks = 0;
  malloc_trim(0);
}

/* Allocate blocks of `size` until `misses` in a row fail (or `cap` bytes).  */
static size_t fill(size_t size, int misses, size_t cap) {
  size_t got = 0;
  for (int miss = 0; miss < misses && got < cap;) {
    if (alloc(size)) {
      got += size;
      miss = 0;
    } else {
      miss++;
    }
  }
  return got;
}

struct thread_arg {
  size_t size, cap;
  size_t got;
};

static void *filler(void *arg) {
  struct thread_arg *t = arg;
  t->got = fill(t->size, 3, t->cap);
  return NULL;
}

/* Two threads filling too (each gets an arena of its own while it can).  */
static size_t fill_threads(size_t size, size_t cap) {
  pthread_t th[2];
  struct thread_arg ta[2] = { { size, cap, 0 }, { size, cap, 0 } };
  int started = 0;
  for (int i = 0; i < 2; i++)
    if (pthread_create(&th[started], NULL, filler, &ta[i]) == 0) started++;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  return ta[0].got + ta[1].got;
}

/* ---------------------------------------------------------------- RLIMIT_AS */

static int under_limit(size_t headroom, const char *name) {
  size_t limit = vm_size() + headroom;
  set_as_limit(limit);
  blks = calloc(MAX_BLKS, sizeof *blks); /* the first malloc, under the limit */
  if (!blks) fail("%s: the first allocation failed under a limit %zu MiB above the process", name, headroom >> 20);
  /* threads first, while there is room for their stacks and arenas */
  size_t in_threads = fill_threads(64 * KiB, headroom / 8);
  size_t large = fill(8 * MiB, 3, SIZE_MAX);
  size_t medium = fill(256 * KiB, 3, SIZE_MAX);
  size_t small = fill(100, 3, 64 * MiB);
  if (nfailed == 0) fail("%s: no allocation failed under RLIMIT_AS", name);
  check_all();
  size_t held = 0;
  for (size_t i = 0; i < nblks; i++) held += blks[i].n;
  size_t nb = nblks;
  free_all();
  /* everything works again */
  for (int i = 0; i < 1000; i++)
    if (!alloc(16 + (size_t)i % 2000)) fail("%s: small allocation %d failed after freeing everything", name, i);
  size_t vs = vm_size();
  size_t room = vs < limit ? (limit - vs) / 2 : 0;
  if (room >= MiB && !alloc(room))
    fail("%s: %zu MiB failed after freeing everything (VmSize %zu MiB, limit %zu MiB)", name, room >> 20, vs >> 20,
         limit >> 20);
  check_all();
  free_all();
  struct hpmalloc_stats st;
  hpmalloc_stats(&st, sizeof st);
  printf("%s: RLIMIT_AS %zu MiB above the process: %zu blocks (%zu MiB: large %zu, medium %zu, threads %zu, small "
         "%zu MiB) before %zu allocations failed with ENOMEM; heap valid; afterwards 1000 small blocks and %zu MiB "
         "succeeded (mode %d, %zu arenas)\n",
         name, headroom >> 20, nb, held >> 20, large >> 20, medium >> 20, in_threads >> 20, small >> 20, nfailed,
         room >> 20, st.hugetlb_mode, st.n_arenas);
  return 0;
}

/* ---------------------------------------------------------------- hugetlb pool */

static long pool_free(void) { return proc_field("/proc/meminfo", "HugePages_Free:"); }

/* hugetlb bytes this process has, by the kernel's count (other processes'
   use of the pool does not show here).  */
static size_t my_hugetlb(void) {
  long kb = proc_field("/proc/self/smaps_rollup", "Private_Hugetlb:");
  return kb < 0 ? 0 : (size_t)kb * KiB;
}

static int pool(void) {
  struct hpmalloc_stats st;
  /* the block list is not the allocator's: every heap can drain */
  blks = mmap(NULL, MAX_BLKS * sizeof *blks, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (blks == MAP_FAILED) fail("mmap");
  hpmalloc_stats(&st, sizeof st);
  if (st.hugetlb_mode != 2) {
    printf("SKIP: hugetlb mode %d, not 2 (no hugetlb page size offered here?)\n", st.hugetlb_mode);
    return 77;
  }
  if (proc_field("/proc/self/smaps_rollup", "Private_Hugetlb:") < 0) {
    printf("SKIP: /proc/self/smaps_rollup has no Private_Hugetlb (kernel older than 4.14)\n");
    return 77;
  }
  size_t hsz = st.huge_page_size;
  long f0 = pool_free();
  if (f0 < 4) {
    printf("SKIP: only %ld free hugetlb pages\n", f0);
    return 77;
  }
  size_t pool_bytes = (size_t)f0 * hsz;
  /* past the pool three times over: heap blocks, large blocks, threads */
  size_t heap = fill(200 * KiB, 1, pool_bytes);
  size_t large = fill(4 * MiB, 1, pool_bytes);
  size_t threads = fill_threads(100 * KiB, pool_bytes / 2);
  long f_peak = pool_free();
  if (nfailed) fail("%zu allocations failed: the fallbacks to THP / base pages should have served them", nfailed);
  check_all();
  hpmalloc_stats(&st, sizeof st);
  size_t peak = st.bytes_hugetlb, kpeak = my_hugetlb();
  if (kpeak == 0) {
    printf("SKIP: no hugetlb page was had at all (%ld were free at the start: another process took them?)\n", f0);
    return 77;
  }
  if (kpeak != peak) fail("hugetlb: the kernel counts %zu KiB in this process, hpmalloc_stats %zu KiB", kpeak >> 10, peak >> 10);
  if (st.fallbacks_hugetlb == 0) fail("%zu MiB allocated with a %zu MiB pool, but no fallback was counted", (heap + large + threads) >> 20, pool_bytes >> 20);
  free_all();
  /* more work after the pool ran dry: still served */
  if (!alloc(1000) || !alloc(8 * MiB)) fail("an allocation failed after freeing everything");
  check_all();
  free_all();
  hpmalloc_stats(&st, sizeof st);
  size_t after = st.bytes_hugetlb, kafter = my_hugetlb();
  if (kafter != after) fail("after freeing: the kernel counts %zu KiB of hugetlb pages, hpmalloc_stats %zu KiB", kafter >> 10, after >> 10);
  if (after > peak) fail("after freeing everything hpmalloc holds %zu MiB of hugetlb pages, %zu at the peak", after >> 20, peak >> 20);
  printf("pool: %ld free hugetlb pages (%zu MiB); %zu MiB allocated (heap %zu, large %zu, threads %zu MiB), none "
         "failed; %zu MiB on hugetlb pages at the peak (the kernel agrees), %ld pages left in the pool, %zu fallbacks "
         "counted; every byte intact, heap valid; after freeing everything %zu KiB of hugetlb pages held (the "
         "kernel agrees)\n",
         f0, pool_bytes >> 20, (heap + large + threads) >> 20, heap >> 20, large >> 20, threads >> 20, peak >> 20,
         f_peak, st.fallbacks_hugetlb, after >> 10);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 2 && strcmp(argv[1], "as") == 0) return under_limit(256 * MiB, "as");
  if (argc == 2 && strcmp(argv[1], "tight") == 0) return under_limit(16 * MiB, "tight");
  if (argc == 2 && strcmp(argv[1], "pool") == 0) return pool();
  fprintf(stderr, "usage: limits as|tight|pool\n");
  return 2;
}
