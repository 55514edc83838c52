/* SPDX-License-Identifier: MIT */
/* hpm: the statistics behind replay, compare and tune, and the units
   their reports print.  Pure functions of their arguments: no I/O, no
   global state (the bootstrap takes its seed), so the tests can check
   each against known answers.  MIT licence.

   Why these: run times on a shared machine are skewed and jumpy (a run
   that lost the CPU to another job takes twice as long), so hpm reports
   medians, never means; it decides with a rank test, which a few wild
   runs cannot sway, and gives the uncertainty of a median ratio by
   bootstrap, which assumes no distribution at all.  */
#ifndef HPM_STATS_H
#define HPM_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The median of V[0..N) (N > 0; V is not changed); 0 when N is 0.  */
double stats_median(const double *v, int n);
/* The smallest and the largest of V[0..N) (N > 0).  */
void stats_minmax(const double *v, int n, double *min, double *max);

/* Mann-Whitney U test, one-sided: the probability, if A and B were drawn
   from one distribution, of A's values lying below B's at least as
   often as they do (U counts the pairs with a < b, ties a half).  A
   small value says A tends to be smaller than B.  Exact (the U
   distribution counted) when there are no ties and both samples have at
   most STATS_MWU_EXACT_MAX values; otherwise the normal approximation
   with the tie and continuity corrections.  1 when either is empty.  */
#define STATS_MWU_EXACT_MAX 50
double stats_mwu_less(const double *a, int na, const double *b, int nb);

/* Mann-Whitney U test, two-sided: the probability, if A and B were
   drawn from one distribution, of a difference in either direction at
   least as large as the one seen: twice the smaller one-sided p, at most
   1.  Small says A and B differ; which way, their medians tell.  */
double stats_mwu_two_sided(const double *a, int na, const double *b, int nb);

/* The smallest run count N such that N values against N, all on one
   side, give a two-sided exact Mann-Whitney p below ALPHA: fewer runs
   can never show a difference at that level (2 / C(2N, N) >= ALPHA).  */
int stats_mwu_min_runs(double alpha);

/* Holm-Bonferroni: of the N hypotheses with p-values P[], which are
   rejected at family-wise level ALPHA (REJECT[i] 1 or 0).  The p-values
   in ascending order are compared with ALPHA / N, ALPHA / (N - 1), ...;
   the first that fails stops the rejections.  Returns how many were
   rejected.  */
int stats_holm(const double *p, int n, double alpha, int *reject);

/* The two-sided LEVEL (0.95) percentile-bootstrap confidence interval of
   median(NUM) / median(DEN): RESAMPLES resamples of each sample with
   replacement, drawn from a generator seeded with SEED (the same inputs
   give the same interval).  Samples of up to 512 values; a zero median
   in a resample counts as an infinitely large ratio.  */
void stats_ratio_ci(const double *num, int nn, const double *den, int nd, double level, int resamples, uint64_t seed,
                    double *lo, double *hi);

/* Units for people: "0 B", "512 B", "1.50 KiB", "6.06 MiB", "2.00 GiB"
   (three significant digits).  */
void fmt_bytes(double bytes, char *buf, size_t n);
/* "850 ns", "12.3 µs", "4.56 ms", "1.23 s" (three significant digits).  */
void fmt_seconds(double s, char *buf, size_t n);
/* "950", "12.3 k", "4.56 M", "7.89 G".  */
void fmt_count(double v, char *buf, size_t n);

#endif
