/* SPDX-License-Identifier: MIT */
/* hpm: medians, the Mann-Whitney U test, bootstrap intervals and units
   for people (the contracts are in stats.h).  MIT licence.  */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOOT_MAX 512 /* values per sample the bootstrap takes */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of the sorted S[0..N).  */
static double median_sorted(const double *s, int n) { return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; }

double stats_median(const double *v, int n) {
  if (n <= 0) return 0;
  double *s = malloc((size_t)n * sizeof *s);
  if (!s) return v[0]; /* out of memory: a value, not a crash */
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double m = median_sorted(s, n);
  free(s);
  return m;
}

void stats_minmax(const double *v, int n, double *min, double *max) {
  *min = n > 0 ? v[0] : 0;
  *max = *min;
  for (int i = 1; i < n; i++) {
    if (v[i] < *min) *min = v[i];
    if (v[i] > *max) *max = v[i];
  }
}

/* ======================================================================== Mann-Whitney U */
struct ranked {
  double v;
  int in_a;
};

static int cmp_ranked(const void *a, const void *b) {
  return cmp_double(&((const struct ranked *)a)->v, &((const struct ranked *)b)->v);
}

/* P(U >= U_OBS) when A and B (sizes NA, NB, no ties) are one
   distribution: the coefficients of the Gaussian binomial
   [NA+NB choose NA]_q count the orderings giving each U.  It is built as
   the product over i = 1..NA of (1 - q^(NB+i)) / (1 - q^i), computed as
   power series cut at degree NA*NB (exact there, since every factor is a
   power series); after each i the partial product is again a Gaussian
   binomial, so the counts stay non-negative.  */
static double mwu_exact_upper(int na, int nb, double u_obs) {
  int deg = na * nb;
  double *c = calloc((size_t)deg + 1, sizeof *c);
  if (!c) return -1;
  c[0] = 1;
  for (int i = 1; i <= na; i++) {
    for (int u = deg; u >= nb + i; u--) c[u] -= c[u - nb - i]; /* times (1 - q^(nb+i)) */
    for (int u = i; u <= deg; u++) c[u] += c[u - i];           /* divided by (1 - q^i) */
  }
  double tail = 0, total = 0;
  for (int u = 0; u <= deg; u++) {
    total += c[u];
    if (u >= u_obs - 1e-9) tail += c[u];
  }
  free(c);
  return total > 0 ? tail / total : 1;
}

double stats_mwu_less(const double *a, int na, const double *b, int nb) {
  if (na <= 0 || nb <= 0) return 1;
  int n = na + nb;
  struct ranked *r = malloc((size_t)n * sizeof *r);
  if (!r) return 1; /* out of memory: no evidence either way */
  for (int i = 0; i < na; i++) r[i] = (struct ranked){ a[i], 1 };
  for (int j = 0; j < nb; j++) r[na + j] = (struct ranked){ b[j], 0 };
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  /* Mid-ranks (1-based) of tied runs; the rank sum of A; the ties' term.  */
  double rank_a = 0, ties = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && r[j + 1].v == r[i].v) j++;
    double mid = (i + j) / 2.0 + 1, t = j - i + 1;
    for (int k = i; k <= j; k++)
      if (r[k].in_a) rank_a += mid;
    ties += t * t * t - t;
    i = j + 1;
  }
  free(r);
  /* U of A's values above B's; those below are the rest of the pairs.  */
  double pairs = (double)na * nb, u_greater = rank_a - (double)na * (na + 1) / 2, u_less = pairs - u_greater;
  if (ties == 0 && na <= STATS_MWU_EXACT_MAX && nb <= STATS_MWU_EXACT_MAX) {
    double p = mwu_exact_upper(na, nb, u_less);
    if (p >= 0) return p;
  }
  double var = pairs / 12 * ((n + 1) - ties / ((double)n * (n - 1)));
  if (var <= 0) return 1; /* every value the same */
  double z = (u_less - pairs / 2 - 0.5) / sqrt(var);
  return 0.5 * erfc(z / sqrt(2.0));
}

double stats_mwu_two_sided(const double *a, int na, const double *b, int nb) {
  double lo = stats_mwu_less(a, na, b, nb), hi = stats_mwu_less(b, nb, a, na), p = 2 * (lo < hi ? lo : hi);
  return p < 1 ? p : 1;
}

int stats_mwu_min_runs(double alpha) {
  double c = 2; /* C(2n, n), n = 1 */
  for (int n = 1; n < 1000; n++) {
    if (2 / c < alpha) return n;
    c = c * (2 * n + 1) * (2 * n + 2) / ((double)(n + 1) * (n + 1)); /* C(2n+2, n+1) */
  }
  return 1000;
}

int stats_holm(const double *p, int n, double alpha, int *reject) {
  int done = 0;
  for (int i = 0; i < n; i++) reject[i] = 0;
  /* Selection by the smallest p not yet rejected: N is small (tune's
     changes), so N^2 is nothing, and no allocation can fail.  */
  for (int step = 0; step < n; step++) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (!reject[i] && (best < 0 || p[i] < p[best])) best = i;
    if (!(p[best] <= alpha / (n - step))) break;
    reject[best] = 1;
    done++;
  }
  return done;
}

/* ======================================================================== bootstrap */
/* splitmix64: a small, good generator; the state is the caller's.  */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The median of N values drawn with replacement from V, into scratch S.  */
static double resampled_median(const double *v, int n, double *s, uint64_t *rng) {
  for (int i = 0; i < n; i++) s[i] = v[next_random(rng) % (uint64_t)n];
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return median_sorted(s, n);
}

void stats_ratio_ci(const double *num, int nn, const double *den, int nd, double level, int resamples, uint64_t seed,
                    double *lo, double *hi) {
  double sn[BOOT_MAX], sd[BOOT_MAX];
  if (nn > BOOT_MAX) nn = BOOT_MAX;
  if (nd > BOOT_MAX) nd = BOOT_MAX;
  double *ratio = nn > 0 && nd > 0 && resamples > 0 ? malloc((size_t)resamples * sizeof *ratio) : NULL;
  if (!ratio) {
    *lo = 0;
    *hi = HUGE_VAL;
    return;
  }
  uint64_t rng = seed;
  for (int k = 0; k < resamples; k++) {
    double mn = resampled_median(num, nn, sn, &rng), md = resampled_median(den, nd, sd, &rng);
    ratio[k] = md > 0 ? mn / md : HUGE_VAL;
  }
  qsort(ratio, (size_t)resamples, sizeof *ratio, cmp_double);
  double tail = (1 - level) / 2;
  int ilo = (int)floor(tail * resamples), ihi = (int)ceil((1 - tail) * resamples) - 1;
  if (ihi >= resamples) ihi = resamples - 1;
  if (ihi < ilo) ihi = ilo;
  *lo = ratio[ilo];
  *hi = ratio[ihi];
  free(ratio);
}

/* ======================================================================== units */
/* V (>= 0) in UNIT with three significant digits: "6.06 MiB", "512 B".  */
static void three_digits(double v, const char *unit, char *buf, size_t n) {
  const char *sep = *unit ? " " : "";
  /* Messages and tables: truncation is harmless.  */
  if (v >= 99.95 || fabs(v - round(v)) <= 1e-9 * v)
    (void)snprintf(buf, n, "%.0f%s%s", v, sep, unit);
  else if (v >= 9.995)
    (void)snprintf(buf, n, "%.1f%s%s", v, sep, unit);
  else
    (void)snprintf(buf, n, "%.2f%s%s", v, sep, unit);
}

void fmt_bytes(double bytes, char *buf, size_t n) {
  static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
  int u = 0;
  double v = bytes < 0 ? 0 : bytes;
  while (v >= 1023.5 && u < 5) {
    v /= 1024;
    u++;
  }
  three_digits(v, unit[u], buf, n);
}

void fmt_seconds(double s, char *buf, size_t n) {
  if (s < 0) s = 0;
  if (s == 0)
    (void)snprintf(buf, n, "0 s");
  else if (s < 999.5e-9)
    three_digits(s * 1e9, "ns", buf, n);
  else if (s < 999.5e-6)
    three_digits(s * 1e6, "µs", buf, n);
  else if (s < 0.9995)
    three_digits(s * 1e3, "ms", buf, n);
  else
    three_digits(s, "s", buf, n);
}

void fmt_count(double v, char *buf, size_t n) {
  static const char *const unit[] = { "", "k", "M", "G", "T" };
  int u = 0;
  if (v < 0) v = 0;
  while (v >= 999.5 && u < 4) {
    v /= 1000;
    u++;
  }
  three_digits(v, unit[u], buf, n);
}
