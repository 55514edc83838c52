/* hpm analyze: operation counts, size and lifetime histograms, live bytes
   over time, per-thread counts and the allocating x freeing thread matrix;
   text, JSON and SVG.  MIT licence.  */
#include "hpm.h"
#include "svg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NSIZE 41      /* size buckets: 0, then [2^(k-1), 2^k) for k = 1..39, then >= 2^39 */
#define NLIFE 12      /* lifetime buckets, see life_label */
#define NTIME 200     /* live-bytes samples */
#define MATRIX_MAX 16 /* threads shown in the matrix */

static const char usage[] = "usage: hpm analyze FILE [--json] [--svg DIR]\n"
                            "Describes a trace: operation counts, size histogram (by count and by bytes),\n"
                            "lifetime histogram, live bytes over time, the peak and when it happened,\n"
                            "per-thread counts and the matrix of allocating vs freeing thread.\n"
                            "  --json      one JSON object (keys: events, threads, peak_live_bytes,\n"
                            "              peak_time_s, ops, size_histogram, lifetime_histogram,\n"
                            "              live_bytes_over_time, per_thread, free_matrix, ...)\n"
                            "  --svg DIR   write live_bytes.svg, sizes.svg and lifetimes.svg into DIR\n";

static int size_bucket(uint64_t s) {
  if (s == 0) return 0;
  int b = 64 - __builtin_clzll(s); /* s in [2^(b-1), 2^b) */
  return b > NSIZE - 1 ? NSIZE - 1 : b;
}

static void size_label(int b, char *buf, size_t n) {
  static const char *u[] = { "", "K", "M", "G", "T" };
  /* Callers pass 32 bytes: every label fits.  */
  if (b == 0) {
    (void)snprintf(buf, n, "0");
    return;
  }
  uint64_t lo = 1ull << (b - 1);
  int k = 0;
  while (lo >= 1024 && lo % 1024 == 0 && k < 4) {
    lo /= 1024;
    k++;
  }
  (void)snprintf(buf, n, "%s%llu%s", b == NSIZE - 1 ? ">=" : "", (unsigned long long)lo, u[k]);
}

static const uint64_t life_edges[NLIFE - 1] = {
  100,       1000,          10000,          100000,          1000000,        10000000,
  100000000, 1000000000ull, 10000000000ull, 100000000000ull, UINT64_MAX - 1,
};
static const char *const life_label[NLIFE] = {
  "<100ns", "<1us", "<10us", "<100us", "<1ms", "<10ms", "<100ms", "<1s", "<10s", "<100s", ">=100s", "never freed",
};

static int life_bucket(uint64_t ns, int freed) {
  if (!freed) return NLIFE - 1;
  for (int i = 0; i < NLIFE - 1; i++)
    if (ns < life_edges[i]) return i;
  return NLIFE - 2;
}

int cmd_analyze(int argc, char **argv) {
  const char *file = NULL, *svgdir = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
      svgdir = argv[++i];
    else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "hpm analyze: bad argument %s\n%s", argv[i], usage);
      return 2;
    }
  }
  if (!file) {
    fputs(usage, stderr);
    return 2;
  }
  struct hpm_trace tr;
  struct prep p;
  if (load_trace(file, &tr, &p, 0)) return 1;

  uint64_t sc[NSIZE] = { 0 }, sb[NSIZE] = { 0 }, lc[NLIFE] = { 0 };
  for (uint32_t o = 0; o < p.nobj; o++) {
    const struct pobj *ob = &p.obj[o];
    int b = size_bucket(ob->size);
    sc[b]++;
    sb[b] += ob->size > UINT64_MAX - sb[b] ? 0 : ob->size;
    int freed = ob->free_thread != NONE32;
    lc[life_bucket(freed && ob->t_free > ob->t_alloc ? ob->t_free - ob->t_alloc : 0, freed)]++;
  }
  /* Live bytes over time along the serial order; max per time bin.  */
  double tx[NTIME], ty[NTIME];
  uint64_t span = p.end_t ? p.end_t : 1, live = 0;
  for (int k = 0; k < NTIME; k++) {
    tx[k] = (double)span * (k + 1) / NTIME / 1e9;
    ty[k] = -1;
  }
  for (size_t s = 0; s < p.nops; s++) {
    const struct rop *op = &p.ops[p.serial[s]];
    if (op->ref != NONE32) live -= p.obj[op->ref].size > live ? live : p.obj[op->ref].size;
    if (op->obj != NONE32) live = p.obj[op->obj].size > UINT64_MAX - live ? UINT64_MAX : live + p.obj[op->obj].size;
    int k = (int)((double)op->t / (double)span * NTIME);
    if (k >= NTIME) k = NTIME - 1;
    if (k < 0) k = 0;
    if ((double)live > ty[k]) ty[k] = (double)live;
  }
  for (int k = 0; k < NTIME; k++) /* empty bins carry the previous value */
    if (ty[k] < 0) ty[k] = k ? ty[k - 1] : 0;
  /* Matrix of allocating (rows) vs freeing (columns) thread.  */
  uint32_t mt = p.nthreads < MATRIX_MAX ? p.nthreads : MATRIX_MAX;
  uint64_t *mx = calloc((size_t)mt * mt + 1, sizeof *mx);
  uint64_t cross = 0;
  for (uint32_t o = 0; o < p.nobj; o++) {
    const struct pobj *ob = &p.obj[o];
    if (ob->free_thread == NONE32) continue;
    if (ob->free_thread != ob->alloc_thread) cross++;
    /* cppcheck-suppress knownConditionTrueFalse ; wrong: mt is p.nthreads (capped), not 0 */
    if (mx && ob->alloc_thread < mt && ob->free_thread < mt) mx[ob->alloc_thread * mt + ob->free_thread]++;
  }
  uint64_t total_bytes = 0, never = lc[NLIFE - 1];
  for (int b = 0; b < NSIZE; b++) total_bytes += sb[b];
  char lab[32];

  if (json) {
    printf("{\"file\":");
    json_str(stdout, file);
    printf(",\"command\":\"");
    for (size_t k = 0; k < tr.hdr.cmdline_len; k++) {
      char c = tr.hdr.cmdline[k];
      if (!c) c = ' ';
      if (c == '"' || c == '\\') putchar('\\');
      if ((unsigned char)c >= 0x20) putchar(c);
    }
    printf("\",\"pid\":%llu,\"events\":%zu,\"chunks\":%zu,\"threads\":%u,\"objects\":%u,"
           "\"duration_s\":%.6f,\"peak_live_bytes\":%llu,\"peak_time_s\":%.6f,"
           "\"total_bytes_allocated\":%llu,\"cross_thread_frees\":%llu,\"never_freed\":%llu,"
           "\"unknown_frees\":%llu,\"double_frees\":%llu,\"failed_calls\":%llu,\"truncated\":%s,\"ops\":{",
           (unsigned long long)tr.hdr.pid, tr.nev, tr.nchunks, p.nthreads, p.nobj, (double)p.end_t / 1e9,
           (unsigned long long)p.peak_live, (double)p.peak_t / 1e9, (unsigned long long)total_bytes,
           (unsigned long long)cross, (unsigned long long)never, (unsigned long long)p.unknown_frees,
           (unsigned long long)p.double_frees, (unsigned long long)p.failed, tr.truncated ? "true" : "false");
    for (int k = 0; k < HPM_NKINDS; k++)
      printf("%s\"%s\":%llu", k ? "," : "", hpm_kind_name((unsigned)k), (unsigned long long)p.kind_count[k]);
    printf("},\"size_histogram\":[");
    int first = 1;
    for (int b = 0; b < NSIZE; b++) {
      if (!sc[b]) continue;
      size_label(b, lab, sizeof lab);
      printf("%s{\"min\":%llu,\"label\":\"%s\",\"count\":%llu,\"bytes\":%llu}", first ? "" : ",",
             b ? 1ull << (b - 1) : 0ull, lab, (unsigned long long)sc[b], (unsigned long long)sb[b]);
      first = 0;
    }
    printf("],\"lifetime_histogram\":[");
    for (int b = 0; b < NLIFE; b++)
      printf("%s{\"label\":\"%s\",\"count\":%llu}", b ? "," : "", life_label[b], (unsigned long long)lc[b]);
    printf("],\"live_bytes_over_time\":[");
    for (int k = 0; k < NTIME; k++) printf("%s[%.6f,%.0f]", k ? "," : "", tx[k], ty[k]);
    printf("],\"per_thread\":[");
    for (uint32_t t = 0; t < p.nthreads; t++)
      printf("%s{\"thread\":%u,\"tid\":%llu,\"ops\":%zu,\"allocs\":%llu,\"frees\":%llu,\"bytes\":%llu}", t ? "," : "",
             p.th[t].number, (unsigned long long)p.th[t].tid, p.th[t].nops, (unsigned long long)p.th[t].allocs,
             (unsigned long long)p.th[t].frees, (unsigned long long)p.th[t].bytes);
    printf("],\"free_matrix\":{\"threads\":[");
    for (uint32_t t = 0; t < mt; t++) printf("%s%u", t ? "," : "", p.th[t].number);
    printf("],\"rows_allocating_cols_freeing\":[");
    for (uint32_t a = 0; a < mt; a++) {
      printf("%s[", a ? "," : "");
      for (uint32_t f = 0; f < mt; f++) printf("%s%llu", f ? "," : "", mx ? (unsigned long long)mx[a * mt + f] : 0ull);
      printf("]");
    }
    printf("]}}\n");
  } else {
    printf("trace %s: pid %llu, command: ", file, (unsigned long long)tr.hdr.pid);
    for (size_t k = 0; k < tr.hdr.cmdline_len; k++) putchar(tr.hdr.cmdline[k] ? tr.hdr.cmdline[k] : ' ');
    printf("\n%zu events in %zu chunks, %u threads, %u objects, %.3f s traced%s\n", tr.nev, tr.nchunks, p.nthreads,
           p.nobj, (double)p.end_t / 1e9, tr.truncated ? " (truncated)" : "");
    printf("peak live bytes: %llu at %.3f s; total allocated %llu bytes; %llu never freed; %llu cross-thread frees\n",
           (unsigned long long)p.peak_live, (double)p.peak_t / 1e9, (unsigned long long)total_bytes,
           (unsigned long long)never, (unsigned long long)cross);
    printf("\noperations:\n");
    for (int k = 0; k < HPM_NKINDS; k++)
      if (p.kind_count[k]) printf("  %-15s %12llu\n", hpm_kind_name((unsigned)k), (unsigned long long)p.kind_count[k]);
    if (p.failed) printf("  (failed calls   %12llu)\n", (unsigned long long)p.failed);
    printf("\nsize histogram   %12s %7s %16s %7s\n", "count", "%", "bytes", "%");
    for (int b = 0; b < NSIZE; b++) {
      if (!sc[b]) continue;
      size_label(b, lab, sizeof lab);
      printf("  %-14s %12llu %6.2f%% %16llu %6.2f%%\n", lab, (unsigned long long)sc[b],
             100.0 * (double)sc[b] / (p.nobj ? p.nobj : 1), (unsigned long long)sb[b],
             100.0 * (double)sb[b] / (double)(total_bytes ? total_bytes : 1));
    }
    printf("\nlifetime histogram\n");
    for (int b = 0; b < NLIFE; b++)
      if (lc[b]) printf("  %-14s %12llu\n", life_label[b], (unsigned long long)lc[b]);
    printf("\nlive bytes over time (max per tenth of the run)\n");
    for (int d = 0; d < 10; d++) {
      double m = 0;
      for (int k = d * NTIME / 10; k < (d + 1) * NTIME / 10; k++)
        if (ty[k] > m) m = ty[k];
      printf("  %8.3f s %14.0f ", tx[(d + 1) * NTIME / 10 - 1], m);
      int bar = p.peak_live ? (int)(40.0 * m / (double)p.peak_live) : 0;
      for (int k = 0; k < bar; k++) putchar('#');
      putchar('\n');
    }
    printf("\nper thread:  %8s %10s %12s %12s %14s\n", "thread", "tid", "allocs", "frees", "bytes");
    for (uint32_t t = 0; t < p.nthreads; t++)
      printf("             %8u %10llu %12llu %12llu %14llu\n", p.th[t].number, (unsigned long long)p.th[t].tid,
             (unsigned long long)p.th[t].allocs, (unsigned long long)p.th[t].frees, (unsigned long long)p.th[t].bytes);
    if (mt > 1 && mx) {
      printf("\nfrees: allocating thread (rows) x freeing thread (columns)%s\n        ",
             p.nthreads > mt ? " (first 16 threads)" : "");
      for (uint32_t f = 0; f < mt; f++) printf(" %9u", p.th[f].number);
      putchar('\n');
      for (uint32_t a = 0; a < mt; a++) {
        printf("  %5u ", p.th[a].number);
        for (uint32_t f = 0; f < mt; f++) printf(" %9llu", (unsigned long long)mx[a * mt + f]);
        putchar('\n');
      }
    }
  }
  int rc = 0;
  if (svgdir) {
    char path[4096];
    if (strlen(svgdir) > sizeof path - 32) {
      fprintf(stderr, "hpm analyze: --svg %s: path too long\n", svgdir);
      free(mx);
      prep_free(&p);
      hpm_trace_free(&tr);
      return 1;
    }
    (void)mkdir(svgdir, 0755); /* may exist already; a real problem shows when the files are written */
    const char *lbl[NSIZE];
    char lbuf[NSIZE][32];
    double v[NSIZE * 2];
    int n = 0;
    double tc = p.nobj ? p.nobj : 1, tb = total_bytes ? (double)total_bytes : 1;
    for (int b = 0; b < NSIZE; b++) {
      if (!sc[b]) continue;
      size_label(b, lbuf[n], sizeof lbuf[n]);
      lbl[n] = lbuf[n];
      v[(size_t)2 * n] = 100.0 * (double)sc[b] / tc;
      v[(size_t)2 * n + 1] = 100.0 * (double)sb[b] / tb;
      n++;
    }
    const char *ser[2] = { "% of objects", "% of bytes" };
    (void)snprintf(path, sizeof path, "%s/sizes.svg", svgdir); /* fits: length checked above */
    rc |= svg_bars(path, "Request sizes", lbl, n, ser, 2, v, "%");
    double lv[NLIFE];
    for (int b = 0; b < NLIFE; b++) lv[b] = (double)lc[b];
    const char *ser1[1] = { "objects" };
    (void)snprintf(path, sizeof path, "%s/lifetimes.svg", svgdir); /* fits: length checked above */
    rc |= svg_bars(path, "Object lifetimes", (const char *const *)life_label, NLIFE, ser1, 1, lv, "");
    double mb[NTIME];
    for (int k = 0; k < NTIME; k++) mb[k] = ty[k] / 1048576.0;
    (void)snprintf(path, sizeof path, "%s/live_bytes.svg", svgdir); /* fits: length checked above */
    rc |= svg_line(path, "Live bytes over time", tx, mb, NTIME, "s", "MiB");
    if (rc) fprintf(stderr, "hpm analyze: %s: %s\n", svgdir, strerror(errno));
  }
  free(mx);
  prep_free(&p);
  hpm_trace_free(&tr);
  return rc ? 1 : 0;
}
