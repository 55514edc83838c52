/* SPDX-License-Identifier: MIT */
/* hpm replay: the driver.  It prepares the trace, writes it as an image
   into a memfd and runs `hpm __engine` (engine.c) with the allocator
   preloaded and the tunables set, then reports what the engine measured.
   compare and tune run replays through it too.  MIT licence.  */
#include "compare.h"
#include "stats.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 4096 /* of a faithful replay */

const struct arg_opt replay_common_args[] = {
  { .name = "--threads", .kind = ARG_CHOICE, .off = offsetof(struct replay_opts, serial), .meta = "faithful|serial" },
  { .name = "--touch", .kind = ARG_CHOICE, .off = offsetof(struct replay_opts, touch), .meta = "none|first|full" },
  { .name = "--tlb",
    .kind = ARG_FN,
    .off = offsetof(struct replay_opts, geom),
    .meta = "PRESET|cpuid|custom:...",
    .set = tlb_geom_arg },
  { 0 },
};

struct replay_cmd_opts {
  const char *file;
  int json, largest;
  uint64_t max_mem;
  struct run_policy policy;
  struct replay_opts ro;
};

static const struct arg_opt replay_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct replay_cmd_opts, file), .required = 1, .doc = "the trace" },
  { .name = "--allocator", .kind = ARG_STR, .off = offsetof(struct replay_cmd_opts, ro.allocator), .meta = "NAME" },
  { .name = "--tunables",
    .kind = ARG_FN,
    .off = offsetof(struct replay_cmd_opts, ro.tunables),
    .meta = "STR",
    .set = tunables_arg },
  { .name = "--max-memory", .kind = ARG_SIZE, .off = offsetof(struct replay_cmd_opts, max_mem) },
  { .name = "--json", .kind = ARG_FLAG, .off = offsetof(struct replay_cmd_opts, json) },
  { .kind = ARG_TABLE, .off = offsetof(struct replay_cmd_opts, policy), .sub = measure_args },
  { .name = "--largest", .kind = ARG_FLAG, .off = offsetof(struct replay_cmd_opts, largest) },
  { .kind = ARG_TABLE, .off = offsetof(struct replay_cmd_opts, ro), .sub = replay_common_args },
  { 0 },
};

static const struct arg_cmd replay_cmd = {
  .name = "replay",
  .synopsis = "usage: hpm replay FILE [--allocator hpmalloc|glibc|jemalloc|mimalloc|tcmalloc|PATH.so]\n"
              "                       [--tunables STR] [--threads faithful|serial] [--touch none|first|full]\n"
              "                       [--tlb PRESET|cpuid|custom:...] [--reps N] [--min-time SECONDS]\n"
              "                       [--max-memory SIZE] [--json] [--largest]\n",
  .help = "Replays the trace in a child process with the allocator preloaded and\n"
          "GLIBC_TUNABLES=STR (checked against hpmalloc's table; set only if the\n"
          "allocator reads it): one real thread per traced thread (faithful, default) or\n"
          "all operations in one thread in time order (serial); a free of another\n"
          "thread's object waits for its allocation.  --touch: write nothing, the first\n"
          "byte of each block (first, default) or one byte per 4 KiB page (full).\n"
          "Repeats the replay at least N times (--reps, default 1) and until the runs\n"
          "total SECONDS of replay (--min-time, default 0.5; at most 200 runs); wall and\n"
          "CPU time are given as median [min-max], the rest from the median run.\n"
          "Reports wall and CPU time, ns per operation (mean, p99), minor faults, peak RSS\n"
          "(growth over the replayer's own baseline), the ideal RSS (peak live bytes),\n"
          "huge-page coverage at the peak (smaps; per 2 MiB from pagemap and kpageflags\n"
          "as root) and a TLB model's misses and cycles with 4 KiB pages everywhere vs\n"
          "the page sizes that backed each address.  --json prints one object (keys\n"
          "include wall_s, cpu_s, ns_mean, ns_p99, minor_faults, peak_rss_kb,\n"
          "peak_live_bytes, hugepage_coverage, tlb_misses, tlb_misses_4k, ops, runs,\n"
          "wall_s_median, wall_s_min, wall_s_max, cpu_s_median, cpu_s_min, cpu_s_max).\n"
          "--tlb: auto (default: CPUID leaf 0x18 or 0x80000005/6/19, else skylake),\n"
          "cpuid, a preset, or custom:l1=ENTRIES/WAYS,l1h=E/W,l2=E/W,hit=CYCLES,walk=CYCLES\n"
          "[,l1g=E/W,l2g=E/W] (1 GiB levels; 0/0: none, 1 GiB pages then use the 2M ones).\n"
          "With a `hpm tlbcost` result the modelled walks saved are also given in ns.\n"
          "--largest: FILE names a recording (hpm ls); replay its process with the largest peak.\n"
          "TLB presets:\n",
  .help_more = tlb_geom_list,
  .args = replay_args,
};

/* ======================================================================== loading */
uint64_t replay_default_max_mem(void) {
  long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || ps <= 0) return 1ull << 32;
  return (uint64_t)pages * (uint64_t)ps / 10 * 8;
}

/* Check the trace fits in MAX_MEM: its largest allocation, its peak.  */
static int check_limits(const struct prep *p, const char *file, uint64_t max_mem) {
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

/* Write P as a replay image into a memfd; returns the fd or -1.  */
static int write_image(const struct prep *p, const struct replay_opts *o) {
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

int replay_load(const char *file, const struct replay_opts *o, uint64_t max_mem) {
  struct hpm_trace tr;
  struct prep p;
  if (load_trace(file, &tr, &p)) return -1;
  hpm_trace_free(&tr);
  if (check_limits(&p, file, max_mem)) {
    prep_free(&p);
    return -1;
  }
  int fd = write_image(&p, o);
  prep_free(&p);
  return fd;
}

/* ======================================================================== running */
/* In the child of replay_run: standard output to OUT_FD, the allocator LIB
   (NULL: none) preloaded, the tunables set, then `hpm __engine`.  */
__attribute__((noreturn)) static void exec_engine(int fd, const struct replay_opts *o, const char *lib, int out_fd) {
  char fdarg[16], touch[4], serial[4], walk[32];
  /* All fit: an int, two small enums, a cost below 10000 ns (tlbcost_cached_ns).  */
  (void)snprintf(fdarg, sizeof fdarg, "%d", fd);
  (void)snprintf(touch, sizeof touch, "%d", o->touch);
  (void)snprintf(serial, sizeof serial, "%d", o->serial);
  (void)snprintf(walk, sizeof walk, "%.3f", o->walk_ns);
  int bad = dup2(out_fd, 1) < 0;
  (void)close(out_fd); /* now standard output */
  bad |= (lib ? setenv("LD_PRELOAD", lib, 1) : unsetenv("LD_PRELOAD")) != 0;
  if (o->tunables) bad |= (*o->tunables ? setenv("GLIBC_TUNABLES", o->tunables, 1) : unsetenv("GLIBC_TUNABLES")) != 0;
  bad |= setenv("HPM_ENGINE_ALLOCATOR", o->allocator ? o->allocator : "glibc", 1) != 0;
  if (bad) {
    fprintf(stderr, "hpm: replay setup: %s\n", strerror(errno));
    _exit(127);
  }
  execl("/proc/self/exe", "hpm", "__engine", fdarg, touch, serial, walk, (char *)NULL);
  fprintf(stderr, "hpm: /proc/self/exe: %s\n", strerror(errno));
  _exit(127);
}

/* Read FD to its end (or until OUT is full) into OUT, NUL-terminated.  */
static void read_all(int fd, char *out, size_t outlen) {
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, out + n, outlen - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n == outlen - 1) break;
  }
  out[n] = 0;
}

/* Wait for the engine PID; 0 if it succeeded, else -1 after a message
   (none for an engine that Ctrl-C ended while hpm catches it).  */
static int wait_engine(pid_t pid, const struct replay_opts *o) {
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGINT && sigint_caught()) return -1;
  if (WIFSIGNALED(st))
    fprintf(stderr, "hpm: replay under %s%s%s was killed by signal %d (%s)\n", o->allocator ? o->allocator : "glibc",
            o->tunables ? " " : "", o->tunables ? o->tunables : "", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else
    fprintf(stderr, "hpm: replay under %s failed (exit %d)\n", o->allocator ? o->allocator : "glibc", WEXITSTATUS(st));
  return -1;
}

uint32_t replay_image_busy_threads(int fd) {
  struct img_hdr h;
  uint32_t busy = 0;
  if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, IMG_MAGIC, 8) != 0) return 0;
  for (uint32_t t = 0; t < h.nthreads; t++) {
    struct img_thread th;
    if (pread(fd, &th, sizeof th, (off_t)(h.off_threads + t * sizeof th)) != (ssize_t)sizeof th) return 0;
    busy += th.nops > 0;
  }
  return busy;
}

int replay_run(int fd, const struct replay_opts *o, char *out, size_t outlen) {
  char *lib = find_allocator(o->allocator);
  int pfd[2], rc = -1;
  if (lib && !*lib)
    fprintf(stderr, "hpm: allocator %s not found\n", o->allocator);
  else if (pipe(pfd) != 0)
    perror("hpm: pipe");
  else {
    pid_t pid = fork();
    if (pid == 0) {
      (void)close(pfd[0]); /* the parent's end */
      exec_engine(fd, o, lib, pfd[1]);
    }
    close(pfd[1]);
    if (pid < 0)
      perror("hpm: fork");
    else {
      read_all(pfd[0], out, outlen);
      rc = wait_engine(pid, o);
    }
    close(pfd[0]);
  }
  free(lib);
  return rc;
}

/* ======================================================================== hpm replay */
/* The options, checked; ARGS_RUN or the exit status.  */
static int replay_parse(int argc, char **argv, struct replay_cmd_opts *o) {
  *o = (struct replay_cmd_opts){ .max_mem = replay_default_max_mem(),
                                 .policy = { .reps = 1, .min_time = DEFAULT_MIN_TIME },
                                 .ro = { .allocator = "glibc", .touch = TOUCH_FIRST } };
  tlb_geom_get("auto", &o->ro.geom, NULL, 0);
  int rc = args_parse(&replay_cmd, argc, argv, o);
  if (rc != ARGS_RUN) return rc;
  if (!allocator_found(o->ro.allocator)) return allocator_missing("replay", o->ro.allocator);
  if (strlen(o->ro.allocator) >= sizeof((struct config *)NULL)->alloc)
    return args_usage_error(&replay_cmd, "--allocator %s: name too long", o->ro.allocator);
  o->ro.walk_ns = tlbcost_cached_ns();
  return ARGS_RUN;
}

/* The run whose wall time is the median (the lower of the middle two).  */
static int median_run(const struct config *c) {
  int best = 0;
  for (int r = 0; r < c->runs; r++) {
    int below = 0, same = 0;
    for (int q = 0; q < c->runs; q++) {
      below += c->v[q][M_WALL] < c->v[r][M_WALL];
      same += c->v[q][M_WALL] == c->v[r][M_WALL];
    }
    if (below <= (c->runs - 1) / 2 && below + same > (c->runs - 1) / 2) best = r;
  }
  return best;
}

enum unit { U_COUNT, U_NS, U_KIB, U_BYTES, U_FRACTION };

static void print_text(const char *json) {
  static const struct {
    const char *key, *label;
    enum unit unit;
  } rows[] = {
    { "ns_mean", "time per op, mean", U_NS },
    { "ns_p99", "time per op, p99 (clock incl.)", U_NS },
    { "clock_ns", "the clock's own cost", U_NS },
    { "minor_faults", "minor faults", U_COUNT },
    { "peak_rss_kb", "peak RSS growth", U_KIB },
    { "peak_live_bytes", "ideal RSS: peak live bytes", U_BYTES },
    { "rss_at_peak_kb", "RSS at the peak", U_KIB },
    { "hugepage_coverage", "huge-page coverage at peak", U_FRACTION },
    { "live_bytes_on_huge", "live bytes on huge pages", U_FRACTION },
    { "tlb_accesses", "TLB model: accesses", U_COUNT },
    { "tlb_misses_4k", "TLB model: walks, all 4 KiB", U_COUNT },
    { "tlb_misses", "TLB model: walks, actual pages", U_COUNT },
    { "tlb_cycles_4k", "TLB model: cycles, all 4 KiB", U_COUNT },
    { "tlb_cycles", "TLB model: cycles, actual", U_COUNT },
    { "tlb_est_ns_4k", "TLB model: walk time, all 4 KiB", U_NS },
    { "tlb_est_ns", "TLB model: walk time, actual", U_NS },
    { "tlb_est_ns_saved", "TLB model: time saved (tlbcost)", U_NS },
    { "alloc_failures", "failed allocations", U_COUNT },
  };
  double walk = 0;
  json_get_num(json, "tlb_walk_ns", &walk);
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    double v;
    char buf[32];
    if (!strncmp(rows[i].key, "tlb_est_ns", 10) && walk <= 0) continue; /* no `hpm tlbcost` result */
    if (json_get_num(json, rows[i].key, &v)) continue;
    switch (rows[i].unit) {
    case U_NS: fmt_seconds(v * 1e-9, buf, sizeof buf); break;
    case U_KIB: fmt_bytes(v * 1024, buf, sizeof buf); break;
    case U_BYTES: fmt_bytes(v, buf, sizeof buf); break;
    case U_FRACTION: (void)snprintf(buf, sizeof buf, "%.1f%%", v * 100); break; /* fits */
    default: (void)snprintf(buf, sizeof buf, "%.0f", v); break;                 /* fits */
    }
    printf("%-32s %s\n", rows[i].label, buf);
  }
}

static void report_text(const struct replay_cmd_opts *o, const struct config *c, const char *json, int partial) {
  const struct replay_opts *r = &o->ro;
  char buf[128];
  double ops = 0;
  printf("replay of %s under %s%s%s (%s threads, touch %s, TLB model %s)\n", o->file, c->alloc,
         c->tun[0] ? ", GLIBC_TUNABLES=" : "", c->tun, r->serial ? "serial" : "faithful",
         r->touch == TOUCH_NONE    ? "none"
         : r->touch == TOUCH_FIRST ? "first"
                                   : "full",
         r->geom.name);
  if (c->dropped[0]) printf("tunables not applied: %s (%s %s)\n", c->dropped, c->alloc, allocator_reads_text(c->alloc));
  printf("%d run%s (at least %d and %.2g s of replay)%s; times: median [min-max]; the rest: the median run\n", c->runs,
         c->runs == 1 ? "" : "s", o->policy.reps, o->policy.min_time,
         partial ? "; PARTIAL: interrupted, the runs finished so far" : "");
  json_get_num(json, "ops", &ops);
  printf("%-32s %.0f\n", "operations", ops);
  fmt_spread(c, M_WALL, buf, sizeof buf);
  printf("%-32s %s\n", "wall time", buf);
  fmt_spread(c, M_CPU, buf, sizeof buf);
  printf("%-32s %s\n", "CPU time", buf);
  print_text(json);
  double fh = 0, ft = 0;
  if (!json_get_num(json, "fallbacks_hugetlb", &fh) && !json_get_num(json, "fallbacks_thp", &ft) && (fh > 0 || ft > 0))
    printf("note: the huge-page coverage above is not all of the pages asked for: %.0f hugetlb mapping%s failed\n"
           "and fell back to THP or base pages; %.0f MADV_HUGEPAGE refusal%s left base pages (hpmalloc_stats)\n",
           fh, fh == 1 ? "" : "s", ft, ft == 1 ? "" : "s");
}

/* The median run's JSON with the summary of every run appended.  */
static void report_json(const struct replay_cmd_opts *o, const struct config *c, const char *json, int partial) {
  size_t len = strlen(json);
  while (len && json[len - 1] == '\n') len--;
  if (len && json[len - 1] == '}') len--; /* the object's own brace: a nested object's stays */
  printf("%.*s,\"runs\":%d,\"reps\":%d,\"min_time_s\":%.6g,\"partial\":%s,\"not_applied\":", (int)len, json, c->runs,
         o->policy.reps, o->policy.min_time, partial ? "true" : "false");
  json_str(stdout, c->dropped);
  for (int k = 0; k < 2; k++) {
    enum metric m = k ? M_CPU : M_WALL;
    double vals[MAX_RUNS], lo, hi;
    config_values(c, m, vals);
    stats_minmax(vals, c->runs, &lo, &hi);
    printf(",\"%s_median\":%.6f,\"%s_min\":%.6f,\"%s_max\":%.6f,\"%s_all\":[", metric_names[m], c->med[m],
           metric_names[m], lo, metric_names[m], hi, metric_names[m]);
    for (int r = 0; r < c->runs; r++) printf("%s%.6f", r ? "," : "", vals[r]);
    printf("]");
  }
  printf("}\n");
}

static char *runs_json[MAX_RUNS]; /* the engine's JSON of each run */

static void keep_json(int run, const char *json) { runs_json[run] = strdup(json); }

int cmd_replay(int argc, char **argv) {
  static struct config c;
  struct replay_cmd_opts o;
  static char picked[4096];
  int rc = replay_parse(argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  if (!(o.file = trace_pick("replay", o.file, o.largest, picked, sizeof picked))) return 1;
  int fd = replay_load(o.file, &o.ro, o.max_mem);
  if (fd < 0) return 1;
  config_init(&c, o.ro.allocator, o.ro.tunables ? o.ro.tunables : "");
  c.inherit = !o.ro.tunables;
  c.on_run = keep_json;
  struct config *one = &c;
  catch_sigint();
  rc = measure(fd, &o.ro, &one, 1, &o.policy, "replay");
  close(fd);
  if (rc == 1 || (rc && !c.runs)) {
    if (rc == RUN_INTERRUPTED) fprintf(stderr, "hpm replay: interrupted before a run finished\n");
    return rc;
  }
  const char *json = runs_json[median_run(&c)];
  if (!json) {
    fprintf(stderr, "hpm replay: out of memory\n");
    return 1;
  }
  if (o.json)
    report_json(&o, &c, json, rc == RUN_INTERRUPTED);
  else
    report_text(&o, &c, json, rc == RUN_INTERRUPTED);
  for (int r = 0; r < c.runs; r++) free(runs_json[r]);
  return rc;
}
