/* hpm replay: the driver (prepares the trace, writes it as an image into a
   memfd, runs `hpm __engine` with the allocator preloaded and the tunables
   set) and the engine (real threads, cross-thread frees ordered after their
   allocation, memory touched, measurements from the kernel, the TLB model).
   The engine allocates nothing from the allocator under test except the
   replayed objects: its tables are mmap'd and touched before the baseline.
   MIT licence.  */
#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>
#include <dlfcn.h>

#define IMG_MAGIC "HPMIMG01"
#define MAX_THREADS 4096
#define HUGE_SHIFT 21

struct img_hdr {
  char magic[8];
  uint32_t nthreads, nobj;
  uint64_t nops, peak_op, peak_live;
  struct tlb_geom geom;
  uint64_t off_threads, off_ops, off_serial, total;
};
struct img_thread {
  uint64_t first_op, nops;
};

/* ======================================================================== driver */
static const char usage[] =
    "usage: hpm replay FILE [--allocator hpmalloc|glibc|jemalloc|mimalloc|tcmalloc|PATH.so]\n"
    "                       [--tunables STR] [--threads faithful|serial] [--touch none|first|full]\n"
    "                       [--tlb PRESET|cpuid|custom:...] [--max-memory SIZE] [--json]\n"
    "Replays the trace in a child process with the allocator preloaded and\n"
    "GLIBC_TUNABLES=STR: one real thread per traced thread (faithful, default) or\n"
    "all operations in one thread in time order (serial); a free of another\n"
    "thread's object waits for its allocation.  --touch: write nothing, the first\n"
    "byte of each block (first, default) or one byte per 4 KiB page (full).\n"
    "Reports wall and CPU time, ns per operation (p50/p99), minor faults, peak RSS\n"
    "(growth over the replayer's own baseline), the ideal RSS (peak live bytes),\n"
    "huge-page coverage at the peak (smaps; per 2 MiB from pagemap and kpageflags\n"
    "as root) and a TLB model's misses and cycles with 4 KiB pages everywhere vs\n"
    "the page sizes that backed each address.  --json prints one object (keys\n"
    "include wall_s, cpu_s, ns_p50, ns_p99, minor_faults, peak_rss_kb,\n"
    "peak_live_bytes, hugepage_coverage, tlb_misses, tlb_misses_4k, ops).\n"
    "--tlb: auto (default: CPUID leaf 0x18 or 0x80000005/6/19, else skylake),\n"
    "cpuid, a preset, or custom:l1=ENTRIES/WAYS,l1h=E/W,l2=E/W,hit=CYCLES,walk=CYCLES\n"
    "[,l1g=E/W,l2g=E/W] (1 GiB levels; 0/0: none, 1 GiB pages then use the 2M ones).\n"
    "With a `hpm tlbcost` result the modelled walks saved are also given in ns.\n"
    "TLB presets:\n";

uint64_t replay_default_max_mem(void) {
  long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || ps <= 0) return 1ull << 32;
  return (uint64_t)pages * (uint64_t)ps / 10 * 8;
}

int replay_load(const char *file, const struct replay_opts *o, uint64_t max_mem) {
  struct hpm_trace tr;
  struct prep p;
  if (load_trace(file, &tr, &p, 0)) return -1;
  hpm_trace_free(&tr);
  if (replay_check_limits(&p, file, max_mem)) {
    prep_free(&p);
    return -1;
  }
  int fd = replay_image(&p, o);
  prep_free(&p);
  return fd;
}

int replay_check_limits(const struct prep *p, const char *file, uint64_t max_mem) {
  if (p->max_size > max_mem) {
    fprintf(stderr, "hpm: %s: an allocation of %llu bytes exceeds the replay limit of %llu bytes (--max-memory)\n",
            file, (unsigned long long)p->max_size, (unsigned long long)max_mem);
    return -1;
  }
  if (p->peak_live > max_mem) {
    fprintf(stderr, "hpm: %s: %llu live bytes at the peak exceed the replay limit of %llu bytes (--max-memory)\n", file,
            (unsigned long long)p->peak_live, (unsigned long long)max_mem);
    return -1;
  }
  return 0;
}

int replay_image(const struct prep *p, const struct replay_opts *o) {
  if (p->nthreads > MAX_THREADS && !o->serial) {
    fprintf(stderr, "hpm: %u threads: faithful replay is limited to %d; use --threads serial\n", p->nthreads,
            MAX_THREADS);
    return -1;
  }
  struct img_hdr h = {
    .nthreads = p->nthreads, .nobj = p->nobj, .nops = p->nops, .peak_live = p->peak_live, .geom = o->geom
  };
  memcpy(h.magic, IMG_MAGIC, 8);
  h.peak_op = p->nops ? p->serial[p->peak_serial] : UINT64_MAX;
  h.off_threads = sizeof h;
  h.off_ops = h.off_threads + (uint64_t)p->nthreads * sizeof(struct img_thread);
  h.off_ops = (h.off_ops + 63) & ~63ull;
  h.off_serial = h.off_ops + p->nops * sizeof(struct rop);
  h.total = h.off_serial + p->nops * sizeof(uint64_t);
  int fd = memfd_create("hpm-replay", 0);
  if (fd < 0 || ftruncate(fd, (off_t)h.total) != 0) {
    perror("hpm: memfd");
    if (fd >= 0) close(fd);
    return -1;
  }
  unsigned char *m = mmap(NULL, h.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    perror("hpm: mmap");
    close(fd);
    return -1;
  }
  memcpy(m, &h, sizeof h);
  struct img_thread *th = (struct img_thread *)(m + h.off_threads);
  for (uint32_t t = 0; t < p->nthreads; t++) th[t] = (struct img_thread){ p->th[t].first_op, p->th[t].nops };
  memcpy(m + h.off_ops, p->ops, p->nops * sizeof(struct rop));
  uint64_t *ser = (uint64_t *)(m + h.off_serial);
  for (size_t i = 0; i < p->nops; i++) ser[i] = p->serial[i];
  munmap(m, h.total);
  return fd;
}

int replay_run(int fd, const struct replay_opts *o, char *out, size_t outlen) {
  char *lib = find_allocator(o->allocator);
  if (lib && !*lib) {
    fprintf(stderr, "hpm: allocator %s not found\n", o->allocator);
    free(lib);
    return -1;
  }
  int pfd[2];
  if (pipe(pfd) != 0) {
    perror("hpm: pipe");
    free(lib);
    return -1;
  }
  char fdarg[16], touch[4], serial[4], walk[32], exe[64];
  /* All fit: an int, two small enums, a cost below 10000 ns (tlbcost_cached_ns).  */
  (void)snprintf(fdarg, sizeof fdarg, "%d", fd);
  (void)snprintf(touch, sizeof touch, "%d", o->touch);
  (void)snprintf(serial, sizeof serial, "%d", o->serial);
  (void)snprintf(walk, sizeof walk, "%.3f", o->walk_ns);
  (void)snprintf(exe, sizeof exe, "/proc/self/exe");
  pid_t pid = fork();
  if (pid < 0) {
    perror("hpm: fork");
    free(lib);
    return -1;
  }
  if (pid == 0) {
    (void)close(pfd[0]); /* the parent's end */
    int bad = dup2(pfd[1], 1) < 0;
    (void)close(pfd[1]); /* now standard output */
    bad |= (lib ? setenv("LD_PRELOAD", lib, 1) : unsetenv("LD_PRELOAD")) != 0;
    if (o->tunables) bad |= (*o->tunables ? setenv("GLIBC_TUNABLES", o->tunables, 1) : unsetenv("GLIBC_TUNABLES")) != 0;
    bad |= setenv("HPM_ENGINE_ALLOCATOR", o->allocator ? o->allocator : "glibc", 1) != 0;
    if (bad) {
      fprintf(stderr, "hpm: replay setup: %s\n", strerror(errno));
      _exit(127);
    }
    execl(exe, "hpm", "__engine", fdarg, touch, serial, walk, (char *)NULL);
    fprintf(stderr, "hpm: %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  close(pfd[1]);
  size_t n = 0;
  for (;;) {
    ssize_t r = read(pfd[0], out + n, outlen - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n == outlen - 1) break;
  }
  out[n] = 0;
  close(pfd[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  free(lib);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    if (WIFSIGNALED(st))
      fprintf(stderr, "hpm: replay under %s%s%s was killed by signal %d (%s)\n", o->allocator ? o->allocator : "glibc",
              o->tunables ? " " : "", o->tunables ? o->tunables : "", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
      fprintf(stderr, "hpm: replay under %s failed (exit %d)\n", o->allocator ? o->allocator : "glibc",
              WEXITSTATUS(st));
    return -1;
  }
  return 0;
}

/* Options shared by replay, compare and tune.  Returns 1 if ARG was one
   (*USED: how many argv entries), 0 if not, -1 on a bad value.  */
int replay_parse_common(const char *arg, const char *val, struct replay_opts *o, int *used) {
  *used = 2;
  if (!strcmp(arg, "--threads")) {
    if (!val || (strcmp(val, "faithful") != 0 && strcmp(val, "serial") != 0)) return -1;
    o->serial = !strcmp(val, "serial");
    return 1;
  }
  if (!strcmp(arg, "--touch")) {
    if (!val) return -1;
    if (!strcmp(val, "none"))
      o->touch = TOUCH_NONE;
    else if (!strcmp(val, "first"))
      o->touch = TOUCH_FIRST;
    else if (!strcmp(val, "full"))
      o->touch = TOUCH_FULL;
    else
      return -1;
    return 1;
  }
  if (!strcmp(arg, "--tlb")) {
    char err[256];
    if (!val || tlb_geom_get(val, &o->geom, err, sizeof err)) {
      fprintf(stderr, "hpm: %s\n", val ? err : "--tlb needs a value");
      return -1;
    }
    return 1;
  }
  return 0;
}

static void print_text(const char *json) {
  static const struct {
    const char *key, *label, *fmt;
    double scale;
  } rows[] = {
    { "ops", "operations", "%.0f", 1 },
    { "wall_s", "wall time (s)", "%.4f", 1 },
    { "cpu_s", "CPU time (s)", "%.4f", 1 },
    { "ns_p50", "ns per op, p50", "%.0f", 1 },
    { "ns_p99", "ns per op, p99", "%.0f", 1 },
    { "minor_faults", "minor faults", "%.0f", 1 },
    { "peak_rss_kb", "peak RSS growth (KiB)", "%.0f", 1 },
    { "peak_live_bytes", "ideal RSS: peak live (KiB)", "%.0f", 1.0 / 1024 },
    { "rss_at_peak_kb", "RSS at the peak (KiB)", "%.0f", 1 },
    { "hugepage_coverage", "huge-page coverage at peak", "%.3f", 1 },
    { "live_bytes_on_huge", "live bytes on huge pages", "%.3f", 1 },
    { "tlb_accesses", "TLB model: accesses", "%.0f", 1 },
    { "tlb_misses_4k", "TLB model: walks, all 4 KiB", "%.0f", 1 },
    { "tlb_misses", "TLB model: walks, actual pages", "%.0f", 1 },
    { "tlb_cycles_4k", "TLB model: cycles, all 4 KiB", "%.0f", 1 },
    { "tlb_cycles", "TLB model: cycles, actual", "%.0f", 1 },
    { "tlb_est_ns_4k", "TLB model: walk ns, all 4 KiB", "%.0f", 1 },
    { "tlb_est_ns", "TLB model: walk ns, actual", "%.0f", 1 },
    { "tlb_est_ns_saved", "TLB model: ns saved (tlbcost)", "%.0f", 1 },
    { "alloc_failures", "failed allocations", "%.0f", 1 },
  };
  double walk = 0;
  json_get_num(json, "tlb_walk_ns", &walk);
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    double v;
    if (!strncmp(rows[i].key, "tlb_est_ns", 10) && walk <= 0) continue; /* no `hpm tlbcost` result */
    if (json_get_num(json, rows[i].key, &v) == 0) {
      printf("%-32s ", rows[i].label);
      printf(rows[i].fmt, v * rows[i].scale);
      putchar('\n');
    }
  }
}

int cmd_replay(int argc, char **argv) {
  struct replay_opts o = { .allocator = "glibc", .touch = TOUCH_FIRST };
  const char *file = NULL;
  int json = 0;
  uint64_t max_mem = replay_default_max_mem();
  tlb_geom_get("auto", &o.geom, NULL, 0);
  for (int i = 1; i < argc; i++) {
    int used, r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      tlb_geom_list(stdout);
      return 0;
    }
    if ((r = replay_parse_common(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &o, &used)) != 0) {
      if (r < 0) {
        fprintf(stderr, "hpm replay: bad value for %s\n", argv[i]);
        return 2;
      }
      i += used - 1;
    } else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--allocator") && i + 1 < argc)
      o.allocator = argv[++i];
    else if (!strcmp(argv[i], "--tunables") && i + 1 < argc)
      o.tunables = argv[++i];
    else if (!strcmp(argv[i], "--max-memory") && i + 1 < argc) {
      if (parse_size(argv[++i], &max_mem)) {
        fprintf(stderr, "hpm replay: bad --max-memory\n");
        return 2;
      }
    } else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "hpm replay: bad argument %s\n%s", argv[i], usage);
      return 2;
    }
  }
  if (!file) {
    fputs(usage, stderr);
    return 2;
  }
  o.walk_ns = tlbcost_cached_ns();
  int fd = replay_load(file, &o, max_mem);
  if (fd < 0) return 1;
  static char out[65536];
  progress("replaying %s under %s", file, o.allocator);
  int rc = replay_run(fd, &o, out, sizeof out);
  progress_done();
  close(fd);
  if (rc) return 1;
  if (json)
    fputs(out, stdout);
  else {
    printf("replay of %s under %s%s%s (%s threads, touch %s, TLB model %s)\n", file, o.allocator,
           o.tunables ? ", GLIBC_TUNABLES=" : "", o.tunables ? o.tunables : "", o.serial ? "serial" : "faithful",
           o.touch == TOUCH_NONE    ? "none"
           : o.touch == TOUCH_FIRST ? "first"
                                    : "full",
           o.geom.name);
    print_text(out);
  }
  return 0;
}

/* ======================================================================== engine */
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

/* Is the 2 MiB region at BASE backed by a huge page (pagemap + kpageflags)?
   -1: cannot tell (not root).  */
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
  while (!__atomic_load_n(&E.go, __ATOMIC_ACQUIRE)) hpm_cpu_relax();
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

int cmd_engine(int argc, char **argv) {
  if (argc != 5) return 2;
  /* Arguments from replay_run: FD TOUCH SERIAL WALK_NS.  */
  unsigned long long a_fd, a_touch, a_serial;
  char *end;
  double walk_ns = strtod(argv[4], &end);
  if (parse_uint(argv[1], 0, INT_MAX, &a_fd) || parse_uint(argv[2], TOUCH_NONE, TOUCH_FULL, &a_touch) ||
      parse_uint(argv[3], 0, 1, &a_serial) || end == argv[4] || *end || !(walk_ns >= 0)) {
    fprintf(stderr, "hpm engine: bad arguments\n");
    return 2;
  }
  int fd = (int)a_fd, serial = (int)a_serial;
  E.touch = (int)a_touch;
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
  uint64_t nops = E.h->nops;
  resolve_api();
  E.objs = map_touch((E.h->nobj + 1) * sizeof(void *));
  E.lat = map_touch(nops * sizeof *E.lat);
  E.addr = map_touch(nops * sizeof *E.addr);
  E.vmas = map_touch(MAX_VMAS * sizeof *E.vmas);
  E.huge = map_touch(MAX_HUGE_REGIONS * sizeof *E.huge);
  memset(linebuf, 0, sizeof linebuf);
  uint32_t nth = serial ? 1 : E.h->nthreads;
  pthread_t *tids = map_touch(nth * sizeof *tids);
  struct img_thread one = { 0, nops };
  /* Serial mode: one thread runs the ops in the prepared serial order.  */
  uint64_t base_rss = status_kb("VmRSS:");
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now_s();
  if (serial) {
    __atomic_store_n(&E.go, 1, __ATOMIC_RELEASE);
    for (uint64_t k = 0; k < nops; k++) run_op(E.serial[k]);
  } else {
    for (uint32_t t = 0; t < nth; t++)
      if (pthread_create(&tids[t], NULL, thread_main, (void *)&E.th[t])) {
        fprintf(stderr, "hpm engine: cannot create thread %u\n", t);
        _exit(1);
      }
    __atomic_store_n(&E.go, 1, __ATOMIC_RELEASE);
    for (uint32_t t = 0; t < nth; t++) pthread_join(tids[t], NULL);
  }
  double wall = now_s() - t0;
  getrusage(RUSAGE_SELF, &r1);
  uint64_t hwm = status_kb("VmHWM:");
  (void)one;
  /* Live bytes on huge pages at the peak: objects live then are those whose
     creating op ran before the peak in serial order (approximation in
     faithful mode: the snapshot's pointers).  */
  if (E.snap_done) {
    uint64_t *osz = map_touch((E.h->nobj + 1) * sizeof *osz);
    for (uint64_t k = 0; k < nops; k++) {
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
  /* Latency percentiles.  */
  qsort(E.lat, nops, sizeof *E.lat, cmp_u32);
  double p50 = nops ? E.lat[nops / 2] : 0, p99 = nops ? E.lat[nops * 99 / 100] : 0;
  /* TLB model: one TLB per replay thread, summed.  */
  uint64_t acc = 0, l1m4 = 0, w4 = 0, l1ma = 0, wa = 0;
  for (uint32_t t = 0; t < nth; t++) {
    struct tlb_sim *s4 = tlb_sim_new(&E.h->geom), *sa = tlb_sim_new(&E.h->geom);
    if (!s4 || !sa) break;
    if (serial)
      model_stream(s4, sa, E.serial, nops, 1, 0);
    else
      model_stream(s4, sa, NULL, E.th[t].nops, 0, E.th[t].first_op);
    uint64_t a, l, w;
    tlb_sim_counts(s4, &a, &l, &w);
    acc += a;
    l1m4 += l;
    w4 += w;
    tlb_sim_counts(sa, &a, &l, &w);
    l1ma += l;
    wa += w;
    tlb_sim_free(s4);
    tlb_sim_free(sa);
  }
  const struct tlb_geom *g = &E.h->geom;
  double cyc4 = (double)w4 * g->walk_cycles + (double)(l1m4 - w4) * g->l2_hit_cycles;
  double cyca = (double)wa * g->walk_cycles + (double)(l1ma - wa) * g->l2_hit_cycles;
  double cpu =
      (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6 +
      (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
  const char *alloc = getenv("HPM_ENGINE_ALLOCATOR"), *tun = getenv("GLIBC_TUNABLES");
  printf("{\"allocator\":");
  json_str(stdout, alloc ? alloc : "glibc");
  printf(",\"tunables\":");
  json_str(stdout, tun ? tun : "");
  printf(",\"emulated\":");
  json_str(stdout, A.emulated);
  printf(",\"threads\":%u,\"mode\":\"%s\",\"touch\":\"%s\",\"ops\":%llu,\"wall_s\":%.6f,\"cpu_s\":%.6f,"
         "\"ns_p50\":%.0f,\"ns_p99\":%.0f,\"minor_faults\":%ld,\"baseline_rss_kb\":%llu,\"peak_rss_kb\":%llu,"
         "\"rss_at_peak_kb\":%llu,\"peak_live_bytes\":%llu,\"heap_rss_kb\":%llu,\"heap_huge_kb\":%llu,"
         "\"hugepage_coverage\":%.4f,\"live_bytes_on_huge\":%.4f,\"hugepage_source\":\"%s\",\"anon_huge_kb\":%llu,"
         "\"hugepage_regions_1g\":%llu,\"tlb_model\":\"%s\",\"tlb_accesses\":%llu,\"tlb_l1_misses_4k\":%llu,\"tlb_"
         "misses_4k\":%llu,"
         "\"tlb_l1_misses\":%llu,\"tlb_misses\":%llu,\"tlb_cycles_4k\":%.0f,\"tlb_cycles\":%.0f,"
         "\"tlb_walk_ns\":%.2f,\"tlb_est_ns_4k\":%.0f,\"tlb_est_ns\":%.0f,\"tlb_est_ns_saved\":%.0f,\"alloc_failures\":"
         "%llu}\n",
         E.h->nthreads, serial ? "serial" : "faithful",
         E.touch == TOUCH_NONE    ? "none"
         : E.touch == TOUCH_FIRST ? "first"
                                  : "full",
         (unsigned long long)nops, wall, cpu, p50, p99, r1.ru_minflt - r0.ru_minflt, (unsigned long long)base_rss,
         (unsigned long long)(hwm > base_rss ? hwm - base_rss : 0),
         (unsigned long long)(E.rss_at_peak_kb > base_rss ? E.rss_at_peak_kb - base_rss : 0),
         (unsigned long long)E.h->peak_live, (unsigned long long)E.heap_rss_kb, (unsigned long long)E.heap_huge_kb,
         E.heap_rss_kb ? (double)E.heap_huge_kb / (double)E.heap_rss_kb : 0.0,
         E.live_total ? (double)E.live_on_huge / (double)E.live_total : 0.0, E.pagemap_ok ? "pagemap" : "smaps",
         (unsigned long long)E.anon_huge_kb, (unsigned long long)E.nhuge_1g, g->name, (unsigned long long)acc,
         (unsigned long long)l1m4, (unsigned long long)w4, (unsigned long long)l1ma, (unsigned long long)wa, cyc4, cyca,
         walk_ns, walk_ns * (double)w4, walk_ns * (double)wa, walk_ns * (double)(w4 > wa ? w4 - wa : 0),
         (unsigned long long)E.failures);
  /* A short report is a failed replay (replay_run's caller parses it).  */
  if (fflush(stdout) != 0 || ferror(stdout)) _exit(1);
  _exit(0); /* no teardown of the replayed heap */
}
