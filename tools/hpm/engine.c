/* SPDX-License-Identifier: MIT */
/* hpm __engine: the replay engine, run by the driver (replay.c) in a child
   process with the allocator under test preloaded.  It maps the image,
   replays it with real threads (a free of another thread's object waits
   for its allocation), touches the memory, takes the kernel's
   measurements and a snapshot at the peak, runs the TLB model and prints
   one JSON line.  It allocates nothing from the allocator under test
   except the replayed objects: its tables are mmap'd and touched before
   the baseline, standard output writes from a static buffer, and the
   replay threads are created (glibc allocates their TLS vectors) before
   the baseline too.  The first traced thread runs on the engine's main
   thread, as it ran on the program's: a single-threaded program's heap
   stays in the main arena.  MIT licence.  */
#include "replay.h"

#include "../../include/hpmalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define HUGE_SHIFT 21
#define OBJ_FREED ((void *)2)
#define OBJ_NULL ((void *)1)

struct vma {
  uint64_t start, end, rss_kb, huge_kb, kps_kb;
  int live;
}; /* kps_kb: KernelPageSize */
#define MAX_VMAS 65536
#define MAX_HUGE_REGIONS (1u << 20)

static struct {
  const struct img_hdr *h;
  const struct img_thread *th;
  const struct rop *ops;
  const uint64_t *serial;
  void *volatile *objs;
  uint32_t *lat;
  uint64_t *addr;
  int touch;
  volatile int go;
  uint64_t failures;
  /* peak snapshot */
  int snap_done;
  uint64_t rss_at_peak_kb, anon_huge_kb, heap_rss_kb, heap_huge_kb, live_on_huge, live_total;
  struct vma *vmas;
  size_t nvmas;
  uint64_t *huge;
  size_t nhuge;    /* sorted 2 MiB region numbers backed by huge pages, << 1 | on a 1 GiB page */
  size_t nhuge_1g; /* how many of them are on 1 GiB pages */
  int pagemap_ok;
} E;

static char linebuf[1 << 16];

/* LINE starts with NAME, then a decimal number (blanks before it):
   *V = the number, returns 1; else 0.  Kernel-written text.  */
static int kb_field(const char *line, const char *name, unsigned long long *v) {
  size_t l = strlen(name);
  if (strncmp(line, name, l) != 0) return 0;
  const char *p = line + l;
  char *end;
  while (*p == ' ' || *p == '\t') p++;
  if (*p < '0' || *p > '9') return 0;
  errno = 0;
  *v = strtoull(p, &end, 10);
  return end != p && errno == 0;
}

/* "START-END " of a smaps mapping line, hexadecimal: returns 1.  */
static int vma_range(const char *line, unsigned long long *a, unsigned long long *b) {
  char *end;
  errno = 0;
  *a = strtoull(line, &end, 16);
  if (end == line || *end != '-') return 0;
  const char *p = end + 1;
  *b = strtoull(p, &end, 16);
  return end != p && *end == ' ' && errno == 0;
}

/* Read /proc/self/status field (kB).  */
static uint64_t status_kb(const char *field) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, linebuf, sizeof linebuf - 1);
  close(fd);
  if (n <= 0) return 0;
  linebuf[n] = 0;
  char *p = strstr(linebuf, field);
  unsigned long long v;
  return p && kb_field(p, field, &v) ? v : 0;
}

/* Parse /proc/self/smaps into E.vmas without allocating.  */
static void read_smaps(void) {
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  E.nvmas = 0;
  E.anon_huge_kb = 0;
  if (fd < 0) return;
  size_t have = 0;
  struct vma *cur = NULL;
  for (;;) {
    ssize_t r = read(fd, linebuf + have, sizeof linebuf - 1 - have);
    if (r <= 0) break;
    have += (size_t)r;
    linebuf[have] = 0;
    char *line = linebuf, *nl;
    while ((nl = memchr(line, '\n', have - (size_t)(line - linebuf)))) {
      *nl = 0;
      unsigned long long a, b;
      char *dash = strchr(line, '-');
      if (dash && dash < nl && ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) &&
          vma_range(line, &a, &b)) {
        if (E.nvmas < MAX_VMAS) {
          cur = &E.vmas[E.nvmas++];
          *cur = (struct vma){ a, b, 0, 0, 0, 0 };
        } else
          cur = NULL;
      } else if (cur) {
        unsigned long long v;
        if (kb_field(line, "Rss:", &v))
          cur->rss_kb = v;
        else if (kb_field(line, "KernelPageSize:", &v))
          cur->kps_kb = v;
        else if (kb_field(line, "AnonHugePages:", &v)) {
          cur->huge_kb += v;
          E.anon_huge_kb += v;
        } else if (kb_field(line, "Private_Hugetlb:", &v) || kb_field(line, "Shared_Hugetlb:", &v)) {
          cur->huge_kb += v;
          cur->rss_kb += v;
          E.anon_huge_kb += v;
        }
      }
      line = nl + 1;
    }
    size_t rest = have - (size_t)(line - linebuf);
    memmove(linebuf, line, rest);
    have = rest;
    if (have == sizeof linebuf - 1) have = 0; /* absurd line: drop */
  }
  close(fd);
}

static struct vma *vma_of(uint64_t a) {
  size_t lo = 0, hi = E.nvmas;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (a < E.vmas[m].start)
      hi = m;
    else if (a >= E.vmas[m].end)
      lo = m + 1;
    else
      return &E.vmas[m];
  }
  return NULL;
}

/* The page size backing A at the peak, as tlb_sim_access takes it: 0 (4 KiB),
   1 (2 MiB) or 2 (1 GiB hugetlb).  */
static int region_huge(uint64_t a) {
  uint64_t r = a >> HUGE_SHIFT;
  size_t lo = 0, hi = E.nhuge;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (E.huge[m] >> 1 == r) return E.huge[m] & 1 ? 2 : 1;
    if (E.huge[m] >> 1 < r)
      lo = m + 1;
    else
      hi = m;
  }
  return 0;
}

/* Is the page at ADDR backed by a huge page (pagemap + kpageflags)?  -1:
   cannot tell (not root).  */
static int page_is_huge(int pm, int kf, uint64_t addr) {
  uint64_t ent, flags;
  if (pread(pm, &ent, 8, (off_t)(addr / 4096 * 8)) != 8) return -1;
  if (!(ent >> 63 & 1)) return 0; /* not present */
  uint64_t pfn = ent & ((1ull << 55) - 1);
  if (!pfn) return -1; /* PFNs hidden: not root */
  if (pread(kf, &flags, 8, (off_t)(pfn * 8)) != 8) return -1;
  return (flags >> 22 & 1) || (flags >> 17 & 1); /* THP or HUGE (hugetlb) */
}

static void snapshot(void) {
  E.rss_at_peak_kb = status_kb("VmRSS:");
  read_smaps();
  uint64_t n = E.h->nobj;
  for (uint64_t o = 0; o < n; o++) {
    void *p = E.objs[o];
    if ((uintptr_t)p <= 2) continue;
    struct vma *v = vma_of((uint64_t)(uintptr_t)p);
    if (v) v->live = 1;
  }
  int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
  E.pagemap_ok = pm >= 0 && kf >= 0;
  E.nhuge = 0;
  E.nhuge_1g = 0;
  for (size_t i = 0; i < E.nvmas; i++) {
    struct vma *v = &E.vmas[i];
    if (!v->live) continue;
    E.heap_rss_kb += v->rss_kb;
    E.heap_huge_kb += v->huge_kb;
    for (uint64_t r = v->start >> HUGE_SHIFT; r <= (v->end - 1) >> HUGE_SHIFT && E.nhuge < MAX_HUGE_REGIONS; r++) {
      uint64_t a = r << HUGE_SHIFT;
      if (a < v->start) a = v->start;
      int huge = -1;
      if (E.pagemap_ok) {
        huge = page_is_huge(pm, kf, a);
        if (huge == 0 && a + (1u << 20) < v->end) huge = page_is_huge(pm, kf, a + (1u << 20));
      }
      if (huge < 0) {
        E.pagemap_ok = 0;
        huge = v->rss_kb && v->huge_kb * 10 >= v->rss_kb * 9;
      }
      /* A hugetlb mapping of 1 GiB pages (smaps KernelPageSize: 1048576 kB).  */
      if (huge && (!E.nhuge || E.huge[E.nhuge - 1] >> 1 != r)) {
        E.huge[E.nhuge++] = r << 1 | (v->kps_kb == 1048576);
        E.nhuge_1g += v->kps_kb == 1048576;
      }
    }
  }
  if (pm >= 0) close(pm);
  if (kf >= 0) close(kf);
}

/* The API as the allocator under test provides it.  A function it lacks
   would fall through to glibc, whose block then reaches the other
   allocator's free: such functions are emulated with posix_memalign.  */
static struct {
  void *(*memalign)(size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  char emulated[128];
} A;

static void *emu_memalign(size_t a, size_t n) {
  void *p;
  return posix_memalign(&p, a < sizeof(void *) ? sizeof(void *) : a, n) ? NULL : p;
}
static void *emu_valloc(size_t n) { return emu_memalign((size_t)sysconf(_SC_PAGESIZE), n); }
static void *emu_pvalloc(size_t n) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (n > SIZE_MAX - ps) return NULL;
  return emu_memalign(ps, (n + ps - 1) & ~(ps - 1));
}

static void resolve_api(void) {
  Dl_info mi, fi;
  void *m = dlsym(RTLD_DEFAULT, "malloc");
  int have = m && dladdr(m, &mi);
  static const char *const names[4] = { "memalign", "aligned_alloc", "valloc", "pvalloc" };
  void *emu[4] = { (void *)emu_memalign, (void *)emu_memalign, (void *)emu_valloc, (void *)emu_pvalloc };
  void **slot[4] = { (void **)&A.memalign, (void **)&A.aligned_alloc, (void **)&A.valloc, (void **)&A.pvalloc };
  for (int i = 0; i < 4; i++) {
    void *f = dlsym(RTLD_DEFAULT, names[i]);
    if (f && have && dladdr(f, &fi) && fi.dli_fbase == mi.dli_fbase)
      *slot[i] = f;
    else {
      *slot[i] = emu[i];
      size_t l = strlen(A.emulated);
      /* fits: A.emulated holds all four names */
      (void)snprintf(A.emulated + l, sizeof A.emulated - l, "%s%s", l ? "," : "", names[i]);
    }
  }
}

static inline uint64_t ns_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void touch_block(void *p, uint64_t size) {
  if (!p || size == 0 || E.touch == TOUCH_NONE) return;
  volatile unsigned char *c = p;
  if (E.touch == TOUCH_FIRST) {
    c[0] = 1;
    return;
  }
  for (uint64_t off = 0; off < size; off += 4096) c[off] = 1;
  c[size - 1] = 1;
}

static void *wait_obj(uint32_t ref) {
  void *p;
  unsigned spins = 0;
  while (!(p = __atomic_load_n(&E.objs[ref], __ATOMIC_ACQUIRE))) {
    if (++spins > 64)
      sched_yield();
    else
      hpm_cpu_relax();
  }
  return p;
}

/* Not a leak: P is published in E.objs (an atomic store the analyzers do
   not follow) and freed by a later op of the trace, or deliberately left
   live at exit, as the traced program left it.  */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
static void run_op(uint64_t i) {
  const struct rop *op = &E.ops[i];
  void *old = NULL, *p = NULL;
  if (op->ref != NONE32) {
    old = op->dep != NONE32 ? wait_obj(op->ref) : E.objs[op->ref];
    if ((uintptr_t)old <= 2) old = NULL;
  }
  uint64_t t0 = ns_now();
  switch (op->kind) {
  case HPM_MALLOC: p = malloc(op->size); break;
  case HPM_CALLOC: p = calloc(1, op->size); break;
  case HPM_REALLOC:
  case HPM_REALLOCARRAY: p = realloc(old, op->size); break;
  case HPM_FREE:
  case HPM_FREE_SIZED: free(old); break;
  case HPM_MEMALIGN: p = A.memalign(op->align, op->size); break;
  case HPM_POSIX_MEMALIGN:
    if (posix_memalign(&p, op->align, op->size)) p = NULL;
    break;
  case HPM_ALIGNED_ALLOC: p = A.aligned_alloc(op->align, op->size); break;
  case HPM_VALLOC: p = A.valloc(op->size); break;
  case HPM_PVALLOC: p = A.pvalloc(op->size); break;
  default: break; /* no-op */
  }
  uint64_t dt = ns_now() - t0;
  E.lat[i] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
  if (op->ref != NONE32) __atomic_store_n(&E.objs[op->ref], OBJ_FREED, __ATOMIC_RELAXED);
  if (op->obj != NONE32) {
    if (!p) __atomic_fetch_add(&E.failures, 1, __ATOMIC_RELAXED);
    touch_block(p, op->size);
    __atomic_store_n(&E.objs[op->obj], p ? p : OBJ_NULL, __ATOMIC_RELEASE);
    E.addr[i] = (uint64_t)(uintptr_t)p;
  } else
    E.addr[i] = (uint64_t)(uintptr_t)old; // NOLINT(clang-analyzer-unix.Malloc): p is kept in E.objs, see above
  if (i == E.h->peak_op && !__atomic_exchange_n(&E.snap_done, 1, __ATOMIC_ACQ_REL)) snapshot();
}
#pragma GCC diagnostic pop

static void *thread_main(void *arg) {
  const struct img_thread *t = arg;
  for (unsigned spins = 0; !__atomic_load_n(&E.go, __ATOMIC_ACQUIRE);)
    if (++spins > 64)
      sched_yield();
    else
      hpm_cpu_relax();
  for (uint64_t k = 0; k < t->nops; k++) run_op(t->first_op + k);
  return NULL;
}

static void *map_touch(size_t n) {
  if (!n) n = 1;
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "hpm engine: mmap %zu: %s\n", n, strerror(errno));
    exit(1);
  }
  return p;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Model: the addresses each thread touched, in its order.  */
static void model_stream(struct tlb_sim *s4, struct tlb_sim *sa, const uint64_t *idx, uint64_t n, int indirect,
                         uint64_t first) {
  for (uint64_t k = 0; k < n; k++) {
    uint64_t i = indirect ? idx[k] : first + k;
    const struct rop *op = &E.ops[i];
    uint64_t a = E.addr[i];
    if (!a) continue;
    uint64_t span = op->obj != NONE32 && E.touch == TOUCH_FULL ? op->size : 1;
    for (uint64_t off = 0; off < span; off += 4096) {
      tlb_sim_access(s4, a + off, 0);
      tlb_sim_access(sa, a + off, region_huge(a + off));
    }
  }
}

/* ======================================================================== hpm __engine */
struct engine_opts {
  int fd, touch, serial; /* the image; TOUCH_*; 1: one thread, in serial order */
  double walk_ns;        /* cost of a page walk, 0: unknown */
};

static int set_walk_ns(void *field, const char *val, char *err, size_t errlen) {
  char *end;
  double v = strtod(val, &end);
  if (end == val || *end || !(v >= 0)) {
    (void)snprintf(err, errlen, "expected nanoseconds, 0 or more"); /* fits */
    return -1;
  }
  *(double *)field = v;
  return 0;
}

static const struct arg_opt engine_args[] = {
  { .name = "FD", .kind = ARG_INT, .off = offsetof(struct engine_opts, fd), .required = 1 },
  { .name = "TOUCH", .kind = ARG_INT, .off = offsetof(struct engine_opts, touch), .max = TOUCH_FULL, .required = 1 },
  { .name = "SERIAL", .kind = ARG_INT, .off = offsetof(struct engine_opts, serial), .max = 1, .required = 1 },
  { .name = "WALK_NS",
    .kind = ARG_FN,
    .off = offsetof(struct engine_opts, walk_ns),
    .set = set_walk_ns,
    .required = 1 },
  { 0 },
};

static const struct arg_cmd engine_cmd = {
  .name = "__engine",
  .synopsis = "usage: hpm __engine FD TOUCH SERIAL WALK_NS\n",
  .help = "The replay engine that `hpm replay` runs under the allocator: replays the\n"
          "image in FD (TOUCH 0 none, 1 first, 2 full; SERIAL 1: one thread) and prints\n"
          "the measurements as one JSON line.\n",
  .args = engine_args,
};

/* What the engine measured, besides what E holds.  */
struct engine_result {
  uint64_t base_rss, hwm;                     /* VmRSS before the replay, VmHWM after it (KiB) */
  double wall, cpu, p50, p99, mean, clock_ns; /* per op; clock_ns: what one reading of the clock costs */
  long minflt;
  uint64_t acc, l1m4, w4, l1ma, wa; /* TLB model: accesses; L1 misses and walks, 4 KiB and actual pages */
  /* hpmalloc's own counters (hpmalloc_stats), when the allocator is hpmalloc */
  int have_hp, hp_mode;
  uint64_t hp_arenas, hp_fallbacks_hugetlb, hp_fallbacks_thp, hp_page_size, hp_bytes_thp, hp_bytes_hugetlb;
};

/* The allocator's own account, where it gives one: hpmalloc_stats (the
   fields before the *_backed ones, which would walk the page tables) says
   how many arenas the replay made and whether huge pages came from a
   fallback (a hugetlb mapping that failed and was replaced by THP or base
   pages).  */
static void allocator_stats(struct engine_result *r) {
  int (*get)(struct hpmalloc_stats *, size_t) =
      (int (*)(struct hpmalloc_stats *, size_t))(uintptr_t)dlsym(RTLD_DEFAULT, "hpmalloc_stats");
  struct hpmalloc_stats st;
  memset(&st, 0, sizeof st);
  if (!get || get(&st, offsetof(struct hpmalloc_stats, bytes_heap_thp_backed)) != 0) return;
  r->have_hp = 1;
  r->hp_mode = st.hugetlb_mode;
  r->hp_arenas = st.n_arenas;
  r->hp_fallbacks_hugetlb = st.fallbacks_hugetlb;
  r->hp_fallbacks_thp = st.fallbacks_thp;
  r->hp_page_size = st.huge_page_size;
  r->hp_bytes_thp = st.bytes_thp;
  r->hp_bytes_hugetlb = st.bytes_hugetlb;
}

/* Map the image in FD into E.  Returns 0, or 1 after a message.  */
static int engine_map(int fd) {
  off_t size = lseek(fd, 0, SEEK_END);
  if (size < (off_t)sizeof(struct img_hdr)) {
    fprintf(stderr, "hpm engine: bad image\n");
    return 1;
  }
  const unsigned char *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (m == MAP_FAILED) {
    perror("hpm engine: mmap");
    return 1;
  }
  (void)close(fd); /* read-only, and mapped */
  E.h = (const struct img_hdr *)m;
  if (memcmp(E.h->magic, IMG_MAGIC, 8) != 0 || E.h->total != (uint64_t)size) {
    fprintf(stderr, "hpm engine: bad image\n");
    return 1;
  }
  E.th = (const struct img_thread *)(m + E.h->off_threads);
  E.ops = (const struct rop *)(m + E.h->off_ops);
  E.serial = (const uint64_t *)(m + E.h->off_serial);
  return 0;
}

/* The engine's own tables, mapped and touched now so that the baseline
   includes them; the thread handles (NTH) are returned.  */
static pthread_t *engine_tables(uint32_t nth) {
  resolve_api();
  E.objs = map_touch((E.h->nobj + 1) * sizeof(void *));
  E.lat = map_touch(E.h->nops * sizeof *E.lat);
  E.addr = map_touch(E.h->nops * sizeof *E.addr);
  E.vmas = map_touch(MAX_VMAS * sizeof *E.vmas);
  E.huge = map_touch(MAX_HUGE_REGIONS * sizeof *E.huge);
  memset(linebuf, 0, sizeof linebuf);
  return map_touch(nth * sizeof(pthread_t));
}

/* Create the replay threads for traced threads 1..NTH-1 (traced thread 0
   runs on this thread); they wait for E.go.  Done before the baseline:
   pthread_create allocates (glibc's TLS vector) from the allocator under
   test.  */
static void engine_threads(int serial, uint32_t nth, pthread_t *tids) {
  if (serial) return;
  for (uint32_t t = 1; t < nth; t++)
    if (pthread_create(&tids[t], NULL, thread_main, (void *)&E.th[t])) {
      fprintf(stderr, "hpm engine: cannot create thread %u\n", t);
      _exit(1);
    }
}

/* Run every op: traced thread 0 on this thread and the others on the
   threads engine_threads made, or (SERIAL) this thread in the prepared
   serial order.  Measures time, faults and memory into R.  */
static void engine_replay(int serial, uint32_t nth, pthread_t *tids, struct engine_result *r) {
  struct rusage r0, r1;
  r->base_rss = status_kb("VmRSS:");
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now_s();
  __atomic_store_n(&E.go, 1, __ATOMIC_RELEASE);
  if (serial)
    for (uint64_t k = 0; k < E.h->nops; k++) run_op(E.serial[k]);
  else {
    if (nth) thread_main((void *)&E.th[0]);
    for (uint32_t t = 1; t < nth; t++) pthread_join(tids[t], NULL);
  }
  r->wall = now_s() - t0;
  getrusage(RUSAGE_SELF, &r1);
  r->hwm = status_kb("VmHWM:");
  r->minflt = r1.ru_minflt - r0.ru_minflt;
  r->cpu =
      (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6 +
      (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
}

/* Live bytes on huge pages at the peak (E.live_on_huge of E.live_total):
   objects live then are those whose creating op ran before the peak in
   serial order (approximation in faithful mode: the snapshot's pointers).  */
static void live_at_peak(void) {
  if (!E.snap_done) return;
  uint64_t *osz = map_touch((E.h->nobj + 1) * sizeof *osz);
  for (uint64_t k = 0; k < E.h->nops; k++) {
    uint64_t i = E.serial[k];
    const struct rop *op = &E.ops[i];
    if (op->ref != NONE32) osz[op->ref] = 0;
    if (op->obj != NONE32) osz[op->obj] = E.addr[i] ? i + 1 : 0; /* creating op + 1 */
    if (i == E.h->peak_op) break;
  }
  for (uint64_t o = 0; o < E.h->nobj; o++) {
    if (!osz[o]) continue;
    uint64_t i = osz[o] - 1, sz = E.ops[i].size;
    E.live_total += sz;
    if (region_huge(E.addr[i])) E.live_on_huge += sz;
  }
}

/* TLB model: one TLB per replay thread, summed.  */
static void tlb_model(int serial, uint32_t nth, struct engine_result *r) {
  for (uint32_t t = 0; t < nth; t++) {
    struct tlb_sim *s4 = tlb_sim_new(&E.h->geom), *sa = tlb_sim_new(&E.h->geom);
    if (!s4 || !sa) break;
    if (serial)
      model_stream(s4, sa, E.serial, E.h->nops, 1, 0);
    else
      model_stream(s4, sa, NULL, E.th[t].nops, 0, E.th[t].first_op);
    uint64_t a, l, w;
    tlb_sim_counts(s4, &a, &l, &w);
    r->acc += a;
    r->l1m4 += l;
    r->w4 += w;
    tlb_sim_counts(sa, &a, &l, &w);
    r->l1ma += l;
    r->wa += w;
    tlb_sim_free(s4);
    tlb_sim_free(sa);
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* What one reading of the clock adds to a measured op: the median of 255
   back-to-back readings' differences.  */
static double clock_cost_ns(void) {
  uint64_t d[255];
  for (int i = 0; i < 255; i++) {
    uint64_t t0 = ns_now();
    d[i] = ns_now() - t0;
  }
  qsort(d, 255, sizeof *d, cmp_u64);
  return (double)d[127];
}

/* Latency: percentiles (sorts E.lat) as measured, each op between two
   readings of the clock; the mean over all ops less the clock's own cost,
   which is fine-grained where one op's reading is not (ops of 20 ns
   measure as the clock's step).  */
static void latency(struct engine_result *r) {
  uint64_t nops = E.h->nops;
  double sum = 0;
  for (uint64_t i = 0; i < nops; i++) sum += E.lat[i];
  r->clock_ns = clock_cost_ns();
  r->mean = nops && sum / (double)nops > r->clock_ns ? sum / (double)nops - r->clock_ns : 0;
  qsort(E.lat, nops, sizeof *E.lat, cmp_u32);
  r->p50 = nops ? E.lat[nops / 2] : 0;
  r->p99 = nops ? E.lat[nops * 99 / 100] : 0;
}

static void engine_report(const struct engine_opts *o, const struct engine_result *r) {
  const struct tlb_geom *g = &E.h->geom;
  double cyc4 = (double)r->w4 * g->walk_cycles + (double)(r->l1m4 - r->w4) * g->l2_hit_cycles;
  double cyca = (double)r->wa * g->walk_cycles + (double)(r->l1ma - r->wa) * g->l2_hit_cycles;
  double walk_ns = o->walk_ns;
  const char *alloc = getenv("HPM_ENGINE_ALLOCATOR"), *tun = getenv("GLIBC_TUNABLES");
  printf("{\"allocator\":");
  json_str(stdout, alloc ? alloc : "glibc");
  printf(",\"tunables\":");
  json_str(stdout, tun ? tun : "");
  printf(",\"emulated\":");
  json_str(stdout, A.emulated);
  printf(",\"threads\":%u,\"mode\":\"%s\",\"touch\":\"%s\",\"ops\":%llu,\"wall_s\":%.6f,\"cpu_s\":%.6f,"
         "\"ns_p50\":%.0f,\"ns_p99\":%.0f,\"ns_mean\":%.1f,\"clock_ns\":%.0f,\"minor_faults\":%ld,\"baseline_rss_kb\":%"
         "llu,\"peak_rss_kb\":%llu,"
         "\"rss_at_peak_kb\":%llu,\"peak_live_bytes\":%llu,\"heap_rss_kb\":%llu,\"heap_huge_kb\":%llu,"
         "\"hugepage_coverage\":%.4f,\"live_bytes_on_huge\":%.4f,\"hugepage_source\":\"%s\",\"anon_huge_kb\":%llu,"
         "\"hugepage_regions_1g\":%llu,\"tlb_model\":\"%s\",\"tlb_accesses\":%llu,\"tlb_l1_misses_4k\":%llu,\"tlb_"
         "misses_4k\":%llu,"
         "\"tlb_l1_misses\":%llu,\"tlb_misses\":%llu,\"tlb_cycles_4k\":%.0f,\"tlb_cycles\":%.0f,"
         "\"tlb_walk_ns\":%.2f,\"tlb_est_ns_4k\":%.0f,\"tlb_est_ns\":%.0f,\"tlb_est_ns_saved\":%.0f,\"alloc_failures\":"
         "%llu,\"main_thread_ops\":%llu",
         E.h->nthreads, o->serial ? "serial" : "faithful",
         E.touch == TOUCH_NONE    ? "none"
         : E.touch == TOUCH_FIRST ? "first"
                                  : "full",
         (unsigned long long)E.h->nops, r->wall, r->cpu, r->p50, r->p99, r->mean, r->clock_ns, r->minflt,
         (unsigned long long)r->base_rss, (unsigned long long)(r->hwm > r->base_rss ? r->hwm - r->base_rss : 0),
         (unsigned long long)(E.rss_at_peak_kb > r->base_rss ? E.rss_at_peak_kb - r->base_rss : 0),
         (unsigned long long)E.h->peak_live, (unsigned long long)E.heap_rss_kb, (unsigned long long)E.heap_huge_kb,
         E.heap_rss_kb ? (double)E.heap_huge_kb / (double)E.heap_rss_kb : 0.0,
         E.live_total ? (double)E.live_on_huge / (double)E.live_total : 0.0, E.pagemap_ok ? "pagemap" : "smaps",
         (unsigned long long)E.anon_huge_kb, (unsigned long long)E.nhuge_1g, g->name, (unsigned long long)r->acc,
         (unsigned long long)r->l1m4, (unsigned long long)r->w4, (unsigned long long)r->l1ma, (unsigned long long)r->wa,
         cyc4, cyca, walk_ns, walk_ns * (double)r->w4, walk_ns * (double)r->wa,
         walk_ns * (double)(r->w4 > r->wa ? r->w4 - r->wa : 0), (unsigned long long)E.failures,
         (unsigned long long)(o->serial       ? E.h->nops
                              : E.h->nthreads ? E.th[0].nops
                                              : 0));
  if (r->have_hp)
    printf(",\"hpmalloc\":{\"mode\":%d,\"huge_page_size\":%llu,\"arenas\":%llu,\"bytes_thp\":%llu,"
           "\"bytes_hugetlb\":%llu,\"fallbacks_hugetlb\":%llu,\"fallbacks_thp\":%llu}",
           r->hp_mode, (unsigned long long)r->hp_page_size, (unsigned long long)r->hp_arenas,
           (unsigned long long)r->hp_bytes_thp, (unsigned long long)r->hp_bytes_hugetlb,
           (unsigned long long)r->hp_fallbacks_hugetlb, (unsigned long long)r->hp_fallbacks_thp);
  printf("}\n");
}

/* libgcov's, in a `make coverage` build only (weak: NULL otherwise).  */
extern void __gcov_dump(void) __attribute__((weak)); // NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)

int cmd_engine(int argc, char **argv) {
  static char outbuf[1 << 14];
  struct engine_opts o = { 0 };
  struct engine_result r = { 0 };
  (void)setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf); /* stdio would malloc its buffer in the heap under test */
  int rc = args_parse(&engine_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  E.touch = o.touch;
  if (engine_map(o.fd)) return 1;
  uint32_t nth = o.serial ? 1 : E.h->nthreads;
  pthread_t *tids = engine_tables(nth);
  engine_threads(o.serial, nth, tids);
  engine_replay(o.serial, nth, tids, &r);
  allocator_stats(&r);
  live_at_peak();
  latency(&r);
  tlb_model(o.serial, nth, &r);
  engine_report(&o, &r);
  /* A short report is a failed replay (replay_run's caller parses it).  */
  if (fflush(stdout) != 0 || ferror(stdout)) _exit(1);
  if (__gcov_dump) __gcov_dump(); /* make coverage: _exit skips the counters' write */
  _exit(0);                       /* no teardown of the replayed heap */
}
