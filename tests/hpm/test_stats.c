/* SPDX-License-Identifier: MIT */
/* Criterion tests of hpm's statistics and units (tools/hpm/stats.c):
   the Mann-Whitney U test against distributions counted by hand and
   against its normal approximation, the bootstrap interval of a median
   ratio, and the units the reports print.  MIT licence.  */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stats.h"

Test(stats, median_and_minmax) {
  double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 }, lo, hi;
  cr_expect_eq(stats_median(odd, 3), 3);
  cr_expect_eq(stats_median(even, 4), 2.5);
  cr_expect_eq(odd[0], 5, "the input is left as it was");
  cr_expect_eq(stats_median(odd, 0), 0);
  stats_minmax(even, 4, &lo, &hi);
  cr_expect(lo == 1 && hi == 4);
}

/* 3 against 3 values: 20 orderings, U = 0..9 with counts 1 1 2 3 3 3 3 2 1 1.  */
Test(mwu, exact_small_samples) {
  double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 }, c[] = { 1, 3, 5 }, d[] = { 2, 4, 6 };
  cr_expect_float_eq(stats_mwu_less(a, 3, b, 3), 1.0 / 20, 1e-12, "every a below every b: 1 ordering in 20");
  cr_expect_float_eq(stats_mwu_less(b, 3, a, 3), 1.0, 1e-12, "the other way round: no evidence");
  cr_expect_float_eq(stats_mwu_less(c, 3, d, 3), 7.0 / 20, 1e-12, "U = 6: 3 + 2 + 1 + 1 orderings of 20");
  double e[] = { 1, 2, 3, 4, 5 }, f[] = { 6, 7, 8, 9, 10 };
  cr_expect_float_eq(stats_mwu_less(e, 5, f, 5), 1.0 / 252, 1e-12, "5 against 5: C(10,5) = 252");
  cr_expect_float_eq(stats_mwu_less(e, 4, f, 4), 1.0 / 70, 1e-12, "4 against 4: never below 0.01");
  cr_expect_eq(stats_mwu_less(e, 0, f, 5), 1);
}

/* The exact distribution is symmetric and sums to one: P(U >= u) +
   P(U >= nm - u + 1) = 1 for every u, whatever the samples' sizes.  */
Test(mwu, exact_distribution_is_symmetric) {
  double a[40], b[30];
  for (int i = 0; i < 40; i++) a[i] = 2 * i;
  for (int j = 0; j < 30; j++) b[j] = 2 * j + 1 + (j > 15 ? 40 : 0);
  double p1 = stats_mwu_less(a, 40, b, 30), p2 = stats_mwu_less(b, 30, a, 40);
  /* no ties: the two tails overlap in exactly the observed U */
  cr_expect(p1 > 0 && p1 < 1 && p2 > 0 && p2 < 1, "%g %g", p1, p2);
  cr_expect(p1 + p2 > 1 && p1 + p2 < 1.05, "%g + %g", p1, p2);
}

/* Beyond 50 values the normal approximation: at 50 values (no ties) the
   exact answer is close to the approximation computed here; at 51 the
   function uses the approximation and gives about the same.  */
Test(mwu, normal_approximation_agrees) {
  double a[51], b[51];
  for (int i = 0; i < 51; i++) {
    a[i] = i * 1.0;
    b[i] = i * 1.0 + 7.5;
  }
  /* U (pairs a < b) at 50: all but those with a_i > b_j, i.e. i > j + 7.5 */
  double u = 0;
  for (int i = 0; i < 50; i++)
    for (int j = 0; j < 50; j++) u += a[i] < b[j];
  double z = (u - 1250 - 0.5) / sqrt(2500.0 * 101 / 12), normal = 0.5 * erfc(z / sqrt(2.0));
  double exact = stats_mwu_less(a, 50, b, 50), approx51 = stats_mwu_less(a, 51, b, 51);
  cr_expect(exact > 0.001 && exact < 0.05, "exact %g", exact);
  cr_expect(fabs(normal - exact) < 0.1 * exact, "normal %g exact %g", normal, exact);
  cr_expect(fabs(approx51 - exact) < 0.3 * exact, "at 51 %g, exact at 50 %g", approx51, exact);
}

Test(mwu, ties) {
  double same[] = { 7, 7, 7, 7, 7, 7 };
  cr_expect_eq(stats_mwu_less(same, 3, same + 3, 3), 1, "all values tied: no evidence");
  /* a deterministic metric: every run of a is 10, of b 11 */
  double a[] = { 10, 10, 10, 10, 10 }, b[] = { 11, 11, 11, 11, 11 };
  double p = stats_mwu_less(a, 5, b, 5);
  cr_expect(p < 0.01, "separated tied groups: p = %g", p);
  cr_expect(stats_mwu_less(b, 5, a, 5) > 0.99);
}

/* Noise alone: 1000 pairs of samples from one distribution reject at
   1% about 1% of the time (binomial: 10 expected, 0.1% chance of 22+).  */
Test(mwu, level_under_the_null) {
  uint64_t s = 42;
  int rejected = 0;
  for (int k = 0; k < 1000; k++) {
    double a[12], b[12];
    for (int i = 0; i < 24; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      double v = (double)(s >> 11) / 9007199254740992.0;
      v = 1 + v * v * v; /* skewed, like run times */
      if (i < 12)
        a[i] = v;
      else
        b[i - 12] = v;
    }
    if (stats_mwu_less(a, 12, b, 12) < 0.01) rejected++;
  }
  cr_expect(rejected <= 22, "%d of 1000 rejected at 1%%", rejected);
}

/* Two-sided: twice the smaller tail, whichever way the samples differ.  */
Test(mwu, two_sided) {
  double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 }, c[] = { 1, 3, 5 }, d[] = { 2, 4, 6 };
  cr_expect_float_eq(stats_mwu_two_sided(a, 5, b, 5), 2.0 / 252, 1e-12, "a below b");
  cr_expect_float_eq(stats_mwu_two_sided(b, 5, a, 5), 2.0 / 252, 1e-12, "b above a: the same p, not 1");
  cr_expect_float_eq(stats_mwu_two_sided(c, 3, d, 3), 14.0 / 20, 1e-12, "U = 6: twice 7/20");
  cr_expect_float_eq(stats_mwu_two_sided(a, 3, a, 3), 1.0, 1e-12, "the same values: capped at 1");
  cr_expect_eq(stats_mwu_min_runs(0.01), 5, "5 against 5: 2/252 = 0.0079 < 0.01; 4 against 4: 2/70");
  cr_expect_eq(stats_mwu_min_runs(0.05 / 17), 6, "2/924 = 0.0022 < 0.0029; 5: 0.0079");
  cr_expect_eq(stats_mwu_min_runs(0.5), 2, "2/6 < 0.5, 2/2 is not");
}

/* Holm's step-down against hand-worked cases.  */
Test(holm, step_down) {
  int r[5];
  double p1[] = { 0.01, 0.04, 0.03, 0.005 };
  /* sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop */
  cr_expect_eq(stats_holm(p1, 4, 0.05, r), 2);
  cr_expect(r[0] == 1 && r[1] == 0 && r[2] == 0 && r[3] == 1);
  double p2[] = { 0.001, 0.02, 0.04 }; /* 0.001 <= 0.0167, 0.02 <= 0.025, 0.04 <= 0.05: all */
  cr_expect_eq(stats_holm(p2, 3, 0.05, r), 3);
  cr_expect(r[0] && r[1] && r[2]);
  double p3[] = { 0.02, 0.001 }; /* 0.001 <= 0.005, then 0.02 > 0.01: stops although 0.02 < 0.05 */
  cr_expect_eq(stats_holm(p3, 2, 0.01, r), 1);
  cr_expect(r[0] == 0 && r[1] == 1);
  double p4[] = { 0.2, 0.3, 0.9, 0.5, 0.04 }; /* 0.04 > 0.01: nothing, although one is below 0.05 */
  cr_expect_eq(stats_holm(p4, 5, 0.05, r), 0);
  cr_expect(!r[0] && !r[1] && !r[2] && !r[3] && !r[4]);
  cr_expect_eq(stats_holm(p4, 0, 0.05, r), 0);
}

Test(bootstrap, ratio_of_medians) {
  double two[] = { 2, 2, 2, 2 }, one[] = { 1, 1, 1 }, lo, hi;
  stats_ratio_ci(two, 4, one, 3, 0.95, 1000, 1, &lo, &hi);
  cr_expect(lo == 2 && hi == 2, "[%g, %g]", lo, hi);
  double a[] = { 1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98 }, b[] = { 2.0, 2.2, 1.8, 2.1, 1.9, 2.04, 1.96 };
  stats_ratio_ci(b, 7, a, 7, 0.95, 2000, 7, &lo, &hi);
  cr_expect(lo < 2 && hi > 2 && lo > 1.6 && hi < 2.5, "[%g, %g] around 2", lo, hi);
  double lo2, hi2;
  stats_ratio_ci(b, 7, a, 7, 0.95, 2000, 7, &lo2, &hi2);
  cr_expect(lo == lo2 && hi == hi2, "the same seed gives the same interval");
  double zero[] = { 0, 0 };
  stats_ratio_ci(one, 3, zero, 2, 0.95, 100, 1, &lo, &hi);
  cr_expect(isinf(lo) && isinf(hi), "a zero denominator is an infinite ratio");
}

Test(units, bytes_seconds_counts) {
  static const struct {
    void (*fmt)(double, char *, size_t);
    double v;
    const char *want;
  } cases[] = {
    { fmt_bytes, 0, "0 B" },           { fmt_bytes, 512, "512 B" },
    { fmt_bytes, 1536, "1.50 KiB" },   { fmt_bytes, 6356992, "6.06 MiB" },
    { fmt_bytes, 2147483648.0, "2 GiB" }, { fmt_bytes, 1023.9, "1.00 KiB" },
    { fmt_seconds, 0.0265, "26.5 ms" }, { fmt_seconds, 850e-9, "850 ns" },
    { fmt_seconds, 12.3e-6, "12.3 µs" }, { fmt_seconds, 1.234, "1.23 s" },
    { fmt_seconds, 0.99996, "1.00 s" }, { fmt_seconds, 0, "0 s" },
    { fmt_count, 14000, "14 k" },      { fmt_count, 15, "15" },
    { fmt_count, 4.56e6, "4.56 M" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char b[32];
    cases[i].fmt(cases[i].v, b, sizeof b);
    cr_expect_str_eq(b, cases[i].want, "%g", cases[i].v);
  }
}
