/* SPDX-License-Identifier: MIT */
/* stride: the seeds' stride microbenchmarks under one memory backing.
 * MIT licence.  Linux only: it maps memory with the kernel's huge-page
 * controls directly and does not use hpmalloc.
 *
 *   stride seq BACKING [-m MB] [-x MAXSPAN] [-t MS]
 *       Nick Craig-Wood's 2.6.0-era test: an array of MB megabytes (16) of
 *       sequential uint32 numbers, summed with spans 1, 2, 4, ... MAXSPAN
 *       (4096) elements.  Each pass reads every element once, in span
 *       order: for s in 0..span-1, for i = s; i < n; i += span.  Passes
 *       repeat until MS milliseconds (100) have gone by; one untimed pass
 *       per span first.  One line per span.
 *
 *   stride seg BACKING [-r REGION] [-s STRIDE] [-t MS]
 *       The segment-stress stride (Anton Blanchard's POWER measurement):
 *       one cache line every STRIDE bytes (256M+4K) across a REGION (4G)
 *       of MAP_NORESERVE address space, so only the touched pages become
 *       resident: about REGION / STRIDE of them.  The lines are swept over
 *       and over for MS milliseconds (300) twice: mode=sum, independent
 *       loads summed (the CPU overlaps them: a throughput), then
 *       mode=chase, each load giving the address of the next (a latency).
 *       Two lines.
 *
 *   Either test with -n maps nothing and prints the hugetlb pages it would
 *   need: "hugetlb_pages=N".
 *
 *   BACKING   base     plain mmap, MADV_NOHUGEPAGE
 *             thp      mmap aligned to the PMD size, MADV_HUGEPAGE before
 *                      the first touch
 *             hugetlb  MAP_HUGETLB, default huge page size (the pool must
 *                      hold the touched pages: a pool that runs dry is
 *                      reported as error=pool-dry, exit status 3)
 *   Sizes take K, M, G, T suffixes and sums: 256M+4K.
 *
 * Output: key=value pairs, one line per measurement, for example
 *   test=seq backing=thp mb=16 span=64 stride_bytes=256 ns=6.3 passes=16
 *     sum=8796090925056 ok=1 fill_ns_per_kb=210.0 huge_kb=16384 rss_kb=16384
 * ns is nanoseconds per element (seq) or per access (seg); ok=1 says the
 * sum matched the expected value (the loops did their work); huge_kb is
 * what /proc/self/smaps says backs the mapping with huge pages
 * (AnonHugePages, or the Hugetlb fields), huge_pct that as a percentage of
 * the huge-page-sized blocks the run touched (100 for thp and hugetlb, 0
 * for base when the backing is what it says).  Exit status: 0 done, 1 a
 * checksum was wrong, 2 usage, 3 the backing could not be had.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif

enum backing { BACK_BASE, BACK_THP, BACK_HUGETLB };
static const char *const backing_names[] = { "base", "thp", "hugetlb" };

/* A compiler barrier: memory may have changed, so calls that read it are
   not merged or hoisted out of the timing loops. */
static inline void clobber (const void *p)
{
  __asm__ volatile ("" : : "r" (p) : "memory");
}

static double now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

static void die_usage (const char *msg)
{
  if (msg)
    fprintf (stderr, "stride: %s\n", msg);
  fprintf (stderr,
           "usage: stride seq base|thp|hugetlb [-m MB] [-x MAXSPAN] [-t MS]\n"
           "       stride seg base|thp|hugetlb [-r REGION] [-s STRIDE] [-t MS]\n"
           "       add -n to print the hugetlb pages a run needs\n");
  exit (2);
}

/* "256M+4K" -> bytes; 0 on a syntax error. */
static uint64_t parse_size (const char *s)
{
  uint64_t total = 0;
  while (*s)
    {
      char *end;
      errno = 0;
      unsigned long long v = strtoull (s, &end, 10);
      if (end == s || errno)
        return 0;
      uint64_t mult = 1;
      switch (*end)
        {
        case 'k': case 'K': mult = 1ull << 10; end++; break;
        case 'm': case 'M': mult = 1ull << 20; end++; break;
        case 'g': case 'G': mult = 1ull << 30; end++; break;
        case 't': case 'T': mult = 1ull << 40; end++; break;
        default: break;
        }
      total += (uint64_t) v * mult;
      if (*end == '+')
        end++;
      else if (*end)
        return 0;
      s = end;
    }
  return total;
}

static uint64_t read_sys_u64 (const char *path, uint64_t dflt)
{
  FILE *f = fopen (path, "r");
  unsigned long long v;
  if (!f)
    return dflt;
  if (fscanf (f, "%llu", &v) != 1)
    v = dflt;
  fclose (f);
  return v;
}

/* The default hugetlb page size, from /proc/meminfo ("Hugepagesize:"). */
static uint64_t hugetlb_page_size (void)
{
  FILE *f = fopen ("/proc/meminfo", "r");
  char line[256];
  unsigned long long kb = 2048;
  if (f)
    {
      while (fgets (line, sizeof line, f))
        if (sscanf (line, "Hugepagesize: %llu kB", &kb) == 1)
          break;
      fclose (f);
    }
  return (uint64_t) kb << 10;
}

static uint64_t round_up (uint64_t v, uint64_t a)
{
  return (v + a - 1) / a * a;
}

/* Maps LEN bytes with backing B (LEN is rounded up to the page size the
   backing uses); NULL with a message on failure. */
static void *map_backing (enum backing b, uint64_t *len, int noreserve)
{
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0);
  void *p;
  if (b == BACK_HUGETLB)
    {
      *len = round_up (*len, hugetlb_page_size ());
      p = mmap (NULL, *len, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB, -1, 0);
      if (p == MAP_FAILED)
        {
          fprintf (stderr, "stride: mmap(MAP_HUGETLB, %" PRIu64 "): %s\n",
                   *len, strerror (errno));
          return NULL;
        }
      return p;
    }
  if (b == BACK_BASE)
    {
      p = mmap (NULL, *len, PROT_READ | PROT_WRITE, flags, -1, 0);
      if (p == MAP_FAILED)
        {
          perror ("stride: mmap");
          return NULL;
        }
      if (madvise (p, *len, MADV_NOHUGEPAGE) != 0)
        perror ("stride: madvise(MADV_NOHUGEPAGE)");
      return p;
    }
  /* THP: over-reserve by one PMD, keep the aligned middle, advise it. */
  uint64_t pmd = read_sys_u64 ("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
                               2u << 20);
  *len = round_up (*len, pmd);
  char *raw = mmap (NULL, *len + pmd, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED)
    {
      perror ("stride: mmap");
      return NULL;
    }
  char *aligned = (char *) round_up ((uintptr_t) raw, pmd);
  if (aligned > raw)
    munmap (raw, (size_t) (aligned - raw));
  if (raw + pmd > aligned)
    munmap (aligned + *len, (size_t) (raw + pmd - aligned));
  if (madvise (aligned, *len, MADV_HUGEPAGE) != 0)
    perror ("stride: madvise(MADV_HUGEPAGE)");
  return aligned;
}

/* Sums the fields of /proc/self/smaps that cover [P, P+LEN): resident kB and
   kB on huge pages (AnonHugePages + Shared_Hugetlb + Private_Hugetlb). */
static void smaps_usage (const void *p, uint64_t len, uint64_t *rss_kb,
                         uint64_t *huge_kb)
{
  FILE *f = fopen ("/proc/self/smaps", "r");
  char line[512];
  int in = 0;
  uintptr_t lo = (uintptr_t) p, hi = lo + len;
  *rss_kb = *huge_kb = 0;
  if (!f)
    return;
  while (fgets (line, sizeof line, f))
    {
      unsigned long long a, b, kb;
      char name[64];
      if (sscanf (line, "%llx-%llx ", &a, &b) == 2 && strchr (line, '-') < strchr (line, ' '))
        {
          in = a < hi && b > lo;
          continue;
        }
      if (!in || sscanf (line, "%63[^:]: %llu kB", name, &kb) != 2)
        continue;
      if (strcmp (name, "Rss") == 0)
        *rss_kb += kb;
      else if (strcmp (name, "AnonHugePages") == 0
               || strcmp (name, "Shared_Hugetlb") == 0
               || strcmp (name, "Private_Hugetlb") == 0)
        *huge_kb += kb;
    }
  fclose (f);
}

/* HUGE_KB as a percentage of BLOCKS huge-page-sized blocks (the ones the
   run touched): 100 when every touched block is a huge page.  (Rss does
   not count hugetlb pages, so it cannot be the reference.) */
static double huge_pct (uint64_t huge_kb, uint64_t blocks)
{
  uint64_t hsz_kb = hugetlb_page_size () >> 10;
  return blocks ? 100.0 * (double) huge_kb / (double) (blocks * hsz_kb) : 0;
}

/* A hugetlb pool that runs dry under MAP_NORESERVE raises SIGBUS at the
   first touch of a page; turn that into a report instead of a crash. */
static sigjmp_buf touch_env;

static void on_sigbus (int sig)
{
  (void) sig;
  siglongjmp (touch_env, 1);
}

static void pool_dry (const char *test, enum backing b)
{
  printf ("test=%s backing=%s error=pool-dry\n", test, backing_names[b]);
  fprintf (stderr, "stride: SIGBUS while touching: the hugetlb pool ran dry\n");
  exit (3);
}

/* ---- seq: Nick Craig-Wood's spans ------------------------------------- */

static __attribute__ ((noinline)) uint64_t
sum_span (const uint32_t *a, size_t n, size_t span)
{
  uint64_t s = 0;
  for (size_t j = 0; j < span; j++)
    for (size_t i = j; i < n; i += span)
      s += a[i];
  return s;
}

static int run_seq (enum backing b, uint64_t mb, uint64_t maxspan, double min_ns)
{
  uint64_t bytes = mb << 20;
  uint64_t len = bytes;
  size_t n = bytes / sizeof (uint32_t);
  uint32_t *a = map_backing (b, &len, 0);
  if (!a)
    {
      printf ("test=seq backing=%s error=map\n", backing_names[b]);
      return 3;
    }
  signal (SIGBUS, on_sigbus);
  if (sigsetjmp (touch_env, 1))
    pool_dry ("seq", b);
  double t0 = now_ns ();
  for (size_t i = 0; i < n; i++)
    a[i] = (uint32_t) i;
  double fill = now_ns () - t0;
  signal (SIGBUS, SIG_DFL);

  uint64_t rss_kb, huge_kb;
  smaps_usage (a, len, &rss_kb, &huge_kb);
  uint64_t expect = (uint64_t) n * (n - 1) / 2;
  int bad = 0;
  for (uint64_t span = 1; span <= maxspan; span *= 2)
    {
      clobber (a);
      uint64_t s = sum_span (a, n, span);     /* warm-up, untimed */
      uint64_t passes = 0;
      double t, start = now_ns ();
      do
        {
          clobber (a);
          s = sum_span (a, n, span);
          bad |= s != expect;
          passes++;
        }
      while ((t = now_ns () - start) < min_ns);
      printf ("test=seq backing=%s mb=%" PRIu64 " span=%" PRIu64
              " stride_bytes=%" PRIu64 " ns=%.4f passes=%" PRIu64
              " sum=%" PRIu64 " ok=%d fill_ns_per_kb=%.1f huge_kb=%" PRIu64
              " rss_kb=%" PRIu64 " huge_pct=%.0f\n",
              backing_names[b], mb, span, span * (uint64_t) sizeof (uint32_t),
              t / ((double) passes * (double) n), passes, s, s == expect,
              fill / (double) (bytes >> 10), huge_kb, rss_kb,
              huge_pct (huge_kb, (bytes + hugetlb_page_size () - 1) / hugetlb_page_size ()));
    }
  munmap (a, len);
  return bad ? 1 : 0;
}

/* ---- seg: one line every STRIDE bytes --------------------------------- */

/* Slot k (at offset k * STRIDE) holds two words in one cache line: k, and
   the offset of slot k + 1 (wrapping to 0) for the chase. */

static __attribute__ ((noinline)) uint64_t
sweep_sum (const char *p, uint64_t npages, uint64_t stride)
{
  uint64_t s = 0;
  for (uint64_t k = 0; k < npages; k++)
    s += *(const uint64_t *) (p + k * stride);
  return s;
}

/* Follows NPAGES links from slot 0; returns the sum of the offsets visited,
   so the chase cannot be skipped. */
static __attribute__ ((noinline)) uint64_t
sweep_chase (const char *p, uint64_t npages)
{
  uint64_t off = 0, s = 0;
  for (uint64_t k = 0; k < npages; k++)
    {
      off = *(const uint64_t *) (p + off + sizeof (uint64_t));
      s += off;
    }
  return s;
}

static uint64_t sweep (const char *p, uint64_t npages, uint64_t stride, int chase)
{
  clobber (p);
  return chase ? sweep_chase (p, npages) : sweep_sum (p, npages, stride);
}

/* Distinct huge pages of size HSZ that the slots touch (the pool a hugetlb
   run needs). */
static uint64_t seg_huge_pages (uint64_t npages, uint64_t stride, uint64_t hsz)
{
  uint64_t count = 0, last = UINT64_MAX;
  for (uint64_t k = 0; k < npages; k++)
    {
      uint64_t h = k * stride / hsz;
      count += h != last;
      last = h;
    }
  return count;
}

static int run_seg (enum backing b, uint64_t region, uint64_t stride,
                    double min_ns, int plan)
{
  const uint64_t slot = 2 * sizeof (uint64_t);
  if (stride < slot || stride > region || stride % sizeof (uint64_t))
    die_usage ("the stride must be a multiple of 8, at least 16, at most the region");
  uint64_t npages = (region - slot) / stride + 1;
  if (plan)
    {
      printf ("test=seg pages=%" PRIu64 " hugetlb_pages=%" PRIu64 "\n", npages,
              seg_huge_pages (npages, stride, hugetlb_page_size ()));
      return 0;
    }
  uint64_t len = region;
  char *p = map_backing (b, &len, 1);
  if (!p)
    {
      printf ("test=seg backing=%s error=map\n", backing_names[b]);
      return 3;
    }
  signal (SIGBUS, on_sigbus);
  if (sigsetjmp (touch_env, 1))
    pool_dry ("seg", b);
  double t0 = now_ns ();
  for (uint64_t k = 0; k < npages; k++)
    {
      uint64_t *w = (uint64_t *) (p + k * stride);
      w[0] = k;
      w[1] = (k + 1) % npages * stride;
    }
  double fault = now_ns () - t0;
  signal (SIGBUS, SIG_DFL);

  uint64_t rss_kb, huge_kb;
  smaps_usage (p, len, &rss_kb, &huge_kb);
  uint64_t batch = npages >= 65536 ? 1 : 65536 / npages;
  int bad = 0;
  for (int chase = 0; chase <= 1; chase++)
    {
      /* One sweep sums 0 + 1 + ... + npages-1, times STRIDE for the chase
         (it adds offsets). */
      uint64_t per_sweep = npages * (npages - 1) / 2 * (chase ? stride : 1);
      uint64_t sweeps = 0, s = 0;
      for (uint64_t i = 0; i < batch; i++)     /* warm-up, untimed */
        s += sweep (p, npages, stride, chase);
      s = 0;
      double t, start = now_ns ();
      do
        {
          for (uint64_t i = 0; i < batch; i++)
            s += sweep (p, npages, stride, chase);
          sweeps += batch;
        }
      while ((t = now_ns () - start) < min_ns);
      int ok = s == per_sweep * sweeps;
      bad |= !ok;
      printf ("test=seg backing=%s mode=%s region=%" PRIu64 " stride=%" PRIu64
              " pages=%" PRIu64 " ns=%.4f sweeps=%" PRIu64 " sum=%" PRIu64
              " ok=%d fault_us_per_page=%.2f huge_kb=%" PRIu64 " rss_kb=%" PRIu64
              " huge_pct=%.0f\n",
              backing_names[b], chase ? "chase" : "sum", region, stride, npages,
              t / ((double) sweeps * (double) npages), sweeps, s, ok,
              fault / 1e3 / (double) npages, huge_kb, rss_kb,
              huge_pct (huge_kb, seg_huge_pages (npages, stride, hugetlb_page_size ())));
    }
  munmap (p, len);
  return bad;
}

int main (int argc, char **argv)
{
  if (argc < 3)
    die_usage (NULL);
  const char *test = argv[1];
  enum backing b;
  if (strcmp (argv[2], "base") == 0)
    b = BACK_BASE;
  else if (strcmp (argv[2], "thp") == 0)
    b = BACK_THP;
  else if (strcmp (argv[2], "hugetlb") == 0)
    b = BACK_HUGETLB;
  else
    die_usage ("the backing is base, thp or hugetlb");
  int is_seq = strcmp (test, "seq") == 0;
  if (!is_seq && strcmp (test, "seg") != 0)
    die_usage ("the test is seq or seg");

  uint64_t mb = 16, maxspan = 4096;
  uint64_t region = 4ull << 30, stride = (256ull << 20) + (4u << 10);
  double ms = is_seq ? 100 : 300;
  int plan = 0, c;
  optind = 3;
  while ((c = getopt (argc, argv, "m:x:r:s:t:n")) != -1)
    switch (c)
      {
      case 'm': mb = strtoull (optarg, NULL, 10); break;
      case 'x': maxspan = strtoull (optarg, NULL, 10); break;
      case 'r': region = parse_size (optarg); break;
      case 's': stride = parse_size (optarg); break;
      case 'n': plan = 1; break;
      case 't': ms = strtod (optarg, NULL); break;
      default: die_usage (NULL);
      }
  if (optind != argc || mb == 0 || maxspan == 0 || region == 0 || stride == 0
      || !(ms > 0))
    die_usage ("bad option value");
  setvbuf (stdout, NULL, _IOLBF, 0);
  if (is_seq && plan)
    {
      uint64_t hsz = hugetlb_page_size ();
      printf ("test=seq hugetlb_pages=%" PRIu64 "\n", ((mb << 20) + hsz - 1) / hsz);
      return 0;
    }
  return is_seq ? run_seq (b, mb, maxspan, ms * 1e6)
                : run_seg (b, region, stride, ms * 1e6, plan);
}
