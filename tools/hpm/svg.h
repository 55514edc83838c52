/* SPDX-License-Identifier: MIT */
/* hpm: SVG charts a person can read: a title, axis titles with their
   units, round ticks (1-2-5 steps in human units: 2 MiB, 20 ms, 5 k), a
   log axis where the values span decades, every value inside the plot,
   and one quantity per axis (several quantities: one panel each).
   MIT licence.  */
#ifndef HPM_SVG_H
#define HPM_SVG_H

#include <stddef.h>

/* What an axis counts; it decides the ticks' steps and labels.  */
enum svg_unit {
  SVG_COUNT,   /* 5, 20, 1 k, 2 M */
  SVG_BYTES,   /* 512 KiB, 2 MiB (steps of 1-2-5 in the largest binary unit) */
  SVG_SECONDS, /* 500 µs, 20 ms, 1 s */
  SVG_PERCENT, /* 0 to 100: "50%" */
  SVG_RATIO,   /* "0.5x", "1x" */
};

/* The texts around a chart.  */
struct svg_text {
  const char *title;    /* the first line, large */
  const char *subtitle; /* a second line (the file, what is compared), or NULL */
  const char *xlabel;   /* the horizontal axis' title, with its unit, or NULL */
};

/* One panel of vertical bars (columns) over the chart's categories.  */
struct svg_vpanel {
  const char *title; /* "objects (log scale)" */
  const char *axis;  /* the vertical axis' title */
  enum svg_unit unit;
  int log;         /* 1: log10 axis (zero values get no bar) */
  const double *v; /* one value per category */
};

/* One panel of horizontal bars, one per configuration.  */
struct svg_hpanel {
  const char *title; /* says which way is better: "... (lower is better)" */
  const char *axis;  /* the horizontal axis' title */
  enum svg_unit unit;
  int log;
  const double *v;       /* one per row */
  const double *lo, *hi; /* an interval around each value (whiskers), or NULL */
  double ref;            /* a reference line (1 for ratios), or a negative number for none */
};

/* Charts; each returns 0, or -1 with errno set when PATH cannot be
   written.  */
/* N categories (LABELS under the bars, from left to right) and NP panels
   stacked, sharing them.  */
int svg_columns(const char *path, const struct svg_text *t, const char *const *labels, int n,
                const struct svg_vpanel *p, int np);
/* N rows (LABELS on the left) and NP panels stacked, sharing them.  */
int svg_hbars(const char *path, const struct svg_text *t, const char *const *labels, int n, const struct svg_hpanel *p,
              int np);
/* One line through N points (X ascending); its peak marked and labelled.
   YLABEL: the vertical axis' title.  */
int svg_line(const char *path, const struct svg_text *t, const char *ylabel, const double *x, enum svg_unit xunit,
             const double *y, enum svg_unit yunit, int n);

/* Do the positive values of V[0..N) span two decades or more (a log axis
   then shows the small ones)?  */
int svg_spans_decades(const double *v, int n);

/* A tick's label: V in UNIT with at most three significant digits and no
   trailing zeros ("2 MiB", "20 ms", "1.5 k", "50%", "0.5x").  */
void svg_tick_label(enum svg_unit unit, double v, char *buf, size_t n);

#endif
