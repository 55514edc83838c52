/* SPDX-License-Identifier: MIT */
/* hpm: SVG charts (svg.h), no dependencies.  A chart is a column of
   panels; each panel has one scale, whose ticks are round numbers in the
   unit a person would use, and whose range holds every value.  Text is
   estimated at 6.6 px a character (12 px sans-serif), which is what the
   layout reserves room by.  MIT licence.  */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHAR_W 6.6   /* width of a character of 12 px sans-serif, roughly */
#define MAX_TICKS 16 /* of one axis */

static const char *const colours[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                       "#76b7b2", "#edc948", "#b07aa1", "#ff9da7" };

/* ======================================================================== scales */
struct scale {
  double lo, hi; /* the axis' ends (log: their logarithms) */
  int log;
  enum svg_unit unit;
  double ticks[MAX_TICKS]; /* values (not logarithms) */
  int nticks;
};

/* The 1-2-5 step nearest above RAW.  */
static double nice_step(double raw) {
  double mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* What a linear axis' ticks are multiples of before 1-2-5: bytes in the
   largest binary unit MAX reaches (so 2 MiB steps, not 2.1 MB ones).  */
static double unit_base(enum svg_unit u, double max) {
  double b = 1;
  if (u == SVG_BYTES)
    while (b * 1024 <= max && b < 0x1p50) b *= 1024;
  return b;
}

static void linear_scale(struct scale *s, double min, double max) {
  double base = unit_base(s->unit, max), lo = min / base, hi = max / base;
  if (hi <= lo) hi = lo + 1;
  double step = nice_step((hi - lo) / 6);
  lo = floor(lo / step + 1e-9) * step;
  hi = ceil(hi / step - 1e-9) * step;
  int n = (int)floor((hi - lo) / step + 0.5) + 1;
  s->nticks = n < MAX_TICKS ? n : MAX_TICKS;
  for (int k = 0; k < s->nticks; k++) {
    double v = lo + k * step;
    s->ticks[k] = (fabs(v) < step / 1e6 ? 0 : v) * base;
  }
  s->lo = lo * base;
  s->hi = s->ticks[s->nticks - 1];
}

/* Decades (bytes: steps of 32x, 1 KiB, 32 KiB, 1 MiB ...) from below
   MIN (> 0) to above MAX.  */
static void log_scale(struct scale *s, double min, double max) {
  double f = s->unit == SVG_BYTES ? 32 : 10, lf = log(f);
  double a = floor(log(min) / lf + 1e-9), b = ceil(log(max) / lf - 1e-9);
  if (b <= a) b = a + 1;
  int every = (int)((b - a) / 10) + 1; /* at most about 10 ticks */
  int n = (int)((b - a) / every) + 1;
  if (a + (n - 1) * every < b) n++; /* the last tick at or above MAX */
  s->nticks = n < MAX_TICKS ? n : MAX_TICKS;
  for (int k = 0; k < s->nticks; k++) s->ticks[k] = pow(f, a + k * every);
  s->lo = a * lf;
  s->hi = log(s->ticks[s->nticks - 1]);
}

/* A scale for values V[0..N) (and LO/HI intervals, may be NULL) and the
   value EXTRA (a reference line; negative: none).  Linear axes start at 0
   (bars must); log axes at the decade below the smallest positive value.  */
static void make_scale(struct scale *s, enum svg_unit u, int log_axis, const double *v, const double *lo,
                       const double *hi, int n, double extra) {
  double max = extra > 0 ? extra : 0, minpos = extra > 0 ? extra : HUGE_VAL;
  for (int i = 0; i < n; i++) {
    const double *sets[3] = { v, lo, hi };
    for (int k = 0; k < 3; k++) {
      if (!sets[k] || !isfinite(sets[k][i])) continue;
      if (sets[k][i] > max) max = sets[k][i];
      if (sets[k][i] > 0 && sets[k][i] < minpos) minpos = sets[k][i];
    }
  }
  s->unit = u;
  if (u == SVG_PERCENT && max <= 100) max = 100; /* a share: the whole scale */
  s->log = log_axis && minpos < HUGE_VAL;
  if (s->log)
    log_scale(s, minpos, max);
  else
    linear_scale(s, 0, max > 0 ? max : 1);
}

/* Where V falls on S, from 0 (lo) to 1 (hi); clamped.  */
static double scale_pos(const struct scale *s, double v) {
  double x;
  if (s->log)
    x = v > 0 ? (log(v) - s->lo) / (s->hi - s->lo) : 0;
  else
    x = (v - s->lo) / (s->hi - s->lo);
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

int svg_spans_decades(const double *v, int n) {
  double min = HUGE_VAL, max = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > 0) {
      if (v[i] < min) min = v[i];
      if (v[i] > max) max = v[i];
    }
  return max > 0 && max / min >= 100;
}

/* V in UNIT, in the unit that MAG (> 0) calls for (V itself for a label
   of its own; an axis' largest tick for all of its labels, so that one
   axis speaks one unit: 0.5 MiB, 1 MiB, not 512 KiB, 1 MiB).  */
static void label_in(enum svg_unit unit, double v, double mag, char *buf, size_t n) {
  static const char *const bytes[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
  static const char *const counts[] = { "", " k", " M", " G", " T" };
  static const char *const secs[] = { " ns", " µs", " ms", " s" };
  double scale = 1;
  int k = 0;
  mag = fabs(mag);
  /* Labels: truncation is harmless.  */
  switch (unit) {
  case SVG_PERCENT: (void)snprintf(buf, n, "%.3g%%", v); return;
  case SVG_RATIO: (void)snprintf(buf, n, "%.3gx", v); return;
  case SVG_BYTES:
    for (; mag >= 1024 * scale && k < 5; k++) scale *= 1024;
    (void)snprintf(buf, n, v == 0 ? "0" : "%.3g %s", v / scale, bytes[k]);
    return;
  case SVG_SECONDS:
    scale = 1e-9;
    for (; mag >= 1000 * scale && k < 3; k++) scale *= 1000;
    (void)snprintf(buf, n, v == 0 ? "0" : "%.3g%s", v / scale, secs[k]);
    return;
  default:
    for (; mag >= 1000 * scale && k < 4; k++) scale *= 1000;
    (void)snprintf(buf, n, "%.3g%s", v / scale, counts[k]);
    return;
  }
}

void svg_tick_label(enum svg_unit unit, double v, char *buf, size_t n) { label_in(unit, v, v, buf, n); }

/* Tick K of S: a log axis labels each in its own unit, a linear one all
   in the unit of its largest.  */
static void tick_label(const struct scale *s, int k, char *buf, size_t n) {
  label_in(s->unit, s->ticks[k], s->log ? s->ticks[k] : s->ticks[s->nticks - 1], buf, n);
}

/* ======================================================================== writing */
static void esc(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else
      fputc(*s, f);
  }
}

/* Text at (X, Y); ANCHOR start, middle or end; WEIGHT bold or normal;
   SIZE in px; ROTATE degrees about (X, Y).  */
static void text(FILE *f, double x, double y, const char *anchor, int size, const char *weight, int rotate,
                 const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\" font-weight=\"%s\"", x, y, anchor, size,
          weight);
  if (rotate) fprintf(f, " transform=\"rotate(%d %.1f %.1f)\"", rotate, x, y);
  fputc('>', f);
  esc(f, s);
  fputs("</text>\n", f);
}

static void line(FILE *f, double x1, double y1, double x2, double y2, const char *style) {
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2, y2, style);
}

/* Close F, written with unchecked stdio calls: a write error shows in the
   stream's error flag or in fclose.  Returns 0, or -1 with errno set.  */
static int finish(FILE *f) {
  fputs("</svg>\n", f);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    if (bad && !errno) errno = EIO;
    return -1;
  }
  return 0;
}

/* Open PATH and write the header, the white background, the title and
   the subtitle.  Returns the stream or NULL.  */
static FILE *start(const char *path, int w, int h, const struct svg_text *t) {
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"12\">\n<title>",
          w, h, w, h);
  esc(f, t->title);
  fprintf(f, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
  text(f, 12, 24, "start", 16, "bold", 0, t->title);
  if (t->subtitle) text(f, 12, 44, "start", 12, "normal", 0, t->subtitle);
  return f;
}

#define TOP(t) ((t)->subtitle ? 64 : 44) /* where the first panel starts */

/* The ticks, grid lines and labels of a vertical scale S on the plot
   X0..X1, Y1 (bottom) .. Y0 (top).  */
static void y_axis(FILE *f, const struct scale *s, double x0, double x1, double y0, double y1) {
  for (int k = 0; k < s->nticks; k++) {
    double y = y1 - (y1 - y0) * scale_pos(s, s->ticks[k]);
    char lab[32];
    tick_label(s, k, lab, sizeof lab);
    line(f, x0, y, x1, y, "stroke=\"#e3e3e3\"");
    line(f, x0 - 4, y, x0, y, "stroke=\"#333\"");
    text(f, x0 - 7, y + 4, "end", 11, "normal", 0, lab);
  }
  line(f, x0, y0, x0, y1, "stroke=\"#333\"");
}

/* The same for a horizontal scale on X0..X1 below the plot at Y (the
   bottom); the grid goes up to YTOP.  */
static void x_axis(FILE *f, const struct scale *s, double x0, double x1, double ytop, double y) {
  for (int k = 0; k < s->nticks; k++) {
    double x = x0 + (x1 - x0) * scale_pos(s, s->ticks[k]);
    char lab[32];
    tick_label(s, k, lab, sizeof lab);
    line(f, x, ytop, x, y, "stroke=\"#e3e3e3\"");
    line(f, x, y, x, y + 4, "stroke=\"#333\"");
    text(f, x, y + 17, "middle", 11, "normal", 0, lab);
  }
  line(f, x0, y, x1, y, "stroke=\"#333\"");
}

/* ======================================================================== columns */
#define COL_W 34       /* one category */
#define COL_PLOT_H 190 /* one panel's plot */

int svg_columns(const char *path, const struct svg_text *t, const char *const *labels, int n,
                const struct svg_vpanel *p, int np) {
  int maxlab = 0;
  for (int i = 0; i < n; i++)
    if ((int)strlen(labels[i]) > maxlab) maxlab = (int)strlen(labels[i]);
  double left = 96, plot_w = COL_W * (n > 0 ? n : 1), lab_h = maxlab * CHAR_W * 0.72 + 16;
  double panel_h = 34 + COL_PLOT_H + 14, top = TOP(t);
  int w = (int)(left + plot_w + 30), h = (int)(top + np * panel_h + lab_h + 34);
  if (w < 520) w = 520;
  FILE *f = start(path, w, h, t);
  if (!f) return -1;
  for (int k = 0; k < np; k++) {
    struct scale s;
    double y0 = top + k * panel_h + 34, y1 = y0 + COL_PLOT_H;
    make_scale(&s, p[k].unit, p[k].log, p[k].v, NULL, NULL, n, -1);
    fputs("<g class=\"panel\">\n", f);
    text(f, left, y0 - 12, "start", 13, "bold", 0, p[k].title);
    y_axis(f, &s, left, left + plot_w, y0, y1);
    text(f, 22, (y0 + y1) / 2, "middle", 12, "normal", -90, p[k].axis);
    for (int i = 0; i < n; i++) {
      double v = p[k].v[i], top_y = y1 - COL_PLOT_H * scale_pos(&s, v);
      char lab[32];
      if (v <= 0) continue;
      if (top_y > y1 - 3) top_y = y1 - 3; /* the smallest value on a log axis: a sliver, not nothing */
      svg_tick_label(p[k].unit, v, lab, sizeof lab);
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"><title>", left + i * COL_W + 4,
              top_y, COL_W - 8, y1 - top_y, colours[k % 8]);
      esc(f, labels[i]);
      fprintf(f, ": %s</title></rect>\n", lab);
    }
    line(f, left, y1, left + plot_w, y1, "stroke=\"#333\"");
    fputs("</g>\n", f);
  }
  double yl = top + np * panel_h - 6;
  for (int i = 0; i < n; i++) { /* under the last panel, slanted to fit */
    double x = left + i * COL_W + COL_W / 2.0;
    line(f, x, yl - 8, x, yl - 4, "stroke=\"#333\"");
    text(f, x + 4, yl + 8, "end", 11, "normal", -45, labels[i]);
  }
  if (t->xlabel) text(f, left + plot_w / 2, h - 12, "middle", 12, "normal", 0, t->xlabel);
  return finish(f);
}

/* ======================================================================== horizontal bars */
#define ROW_H 24

/* VALUE (and its interval) as the text after a bar.  */
static void bar_text(const struct svg_hpanel *p, int i, char *buf, size_t n) {
  char v[32], a[32], b[32];
  svg_tick_label(p->unit, p->v[i], v, sizeof v);
  if (!p->lo || !p->hi || !isfinite(p->lo[i]) || !isfinite(p->hi[i]) || p->lo[i] == p->hi[i]) {
    (void)snprintf(buf, n, "%s", v); /* fits: callers pass 128 bytes */
    return;
  }
  svg_tick_label(p->unit, p->lo[i], a, sizeof a);
  svg_tick_label(p->unit, p->hi[i], b, sizeof b);
  (void)snprintf(buf, n, "%s [%s-%s]", v, a, b); /* fits */
}

/* Panel P's rows from Y0, labels left of X0, bars up to X1.  Returns the
   panel's height.  */
static double hpanel(FILE *f, const struct svg_hpanel *p, const char *const *labels, int n, double x0, double x1,
                     double y0) {
  struct scale s;
  double rows_top = y0 + 28, bottom = rows_top + n * ROW_H;
  make_scale(&s, p->unit, p->log, p->v, p->lo, p->hi, n, p->ref);
  fputs("<g class=\"panel\">\n", f);
  text(f, 12, y0 + 14, "start", 13, "bold", 0, p->title);
  x_axis(f, &s, x0, x1, rows_top, bottom);
  text(f, (x0 + x1) / 2, bottom + 34, "middle", 12, "normal", 0, p->axis);
  for (int i = 0; i < n; i++) {
    double y = rows_top + i * ROW_H, xv = x0 + (x1 - x0) * scale_pos(&s, p->v[i]);
    char lab[128];
    text(f, x0 - 8, y + 16, "end", 12, "normal", 0, labels[i]);
    if (xv > x0)
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>\n", x0, y + 5, xv - x0,
              colours[i % 8]);
    bar_text(p, i, lab, sizeof lab);
    double xt = xv;
    if (p->lo && p->hi && isfinite(p->lo[i]) && isfinite(p->hi[i])) {
      double a = x0 + (x1 - x0) * scale_pos(&s, p->lo[i]), b = x0 + (x1 - x0) * scale_pos(&s, p->hi[i]);
      line(f, a, y + 12, b, y + 12, "stroke=\"#222\" stroke-width=\"1.5\"");
      line(f, a, y + 7, a, y + 17, "stroke=\"#222\" stroke-width=\"1.5\"");
      line(f, b, y + 7, b, y + 17, "stroke=\"#222\" stroke-width=\"1.5\"");
      if (b > xt) xt = b;
    }
    text(f, xt + 6, y + 16, "start", 11, "normal", 0, lab);
  }
  if (p->ref > 0) {
    double xr = x0 + (x1 - x0) * scale_pos(&s, p->ref);
    line(f, xr, rows_top - 4, xr, bottom, "stroke=\"#222\" stroke-dasharray=\"4 3\"");
  }
  fputs("</g>\n", f);
  return bottom + 34 + 24 - y0;
}

int svg_hbars(const char *path, const struct svg_text *t, const char *const *labels, int n, const struct svg_hpanel *p,
              int np) {
  int maxlab = 0;
  for (int i = 0; i < n; i++)
    if ((int)strlen(labels[i]) > maxlab) maxlab = (int)strlen(labels[i]);
  double x0 = 20 + maxlab * CHAR_W, x1 = x0 + 430;
  int w = (int)(x1 + 190), h = (int)(TOP(t) + np * (28 + n * ROW_H + 58) + 10);
  FILE *f = start(path, w, h, t);
  if (!f) return -1;
  double y = TOP(t);
  for (int k = 0; k < np; k++) y += hpanel(f, &p[k], labels, n, x0, x1, y);
  return finish(f);
}

/* ======================================================================== lines */
int svg_line(const char *path, const struct svg_text *t, const char *ylabel, const double *x, enum svg_unit xunit,
             const double *y, enum svg_unit yunit, int n) {
  int w = 820, h = 460, ipeak = 0;
  double left = 96, right = w - 30, top = TOP(t) + 16, bottom = h - 62;
  for (int i = 1; i < n; i++)
    if (y[i] > y[ipeak]) ipeak = i;
  double ymax = n ? y[ipeak] * 1.12 : 1, xmax = n ? x[n - 1] : 1; /* room above the peak for its label */
  struct scale sx, sy;
  make_scale(&sx, xunit, 0, &xmax, NULL, NULL, 1, -1);
  make_scale(&sy, yunit, 0, &ymax, NULL, NULL, 1, -1);
  FILE *f = start(path, w, h, t);
  if (!f) return -1;
  y_axis(f, &sy, left, right, top, bottom);
  x_axis(f, &sx, left, right, top, bottom);
  text(f, 22, (top + bottom) / 2, "middle", 12, "normal", -90, ylabel);
  if (t->xlabel) text(f, (left + right) / 2, h - 14, "middle", 12, "normal", 0, t->xlabel);
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", colours[0]);
  for (int i = 0; i < n; i++)
    fprintf(f, "%.1f,%.1f ", left + (right - left) * scale_pos(&sx, x[i]),
            bottom - (bottom - top) * scale_pos(&sy, y[i]));
  fputs("\"/>\n", f);
  if (n) {
    double px = left + (right - left) * scale_pos(&sx, x[ipeak]),
           py = bottom - (bottom - top) * scale_pos(&sy, y[ipeak]);
    char a[32], b[32], lab[96];
    svg_tick_label(yunit, y[ipeak], a, sizeof a);
    svg_tick_label(xunit, x[ipeak], b, sizeof b);
    (void)snprintf(lab, sizeof lab, "peak %s at %s", a, b); /* fits */
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", px, py, colours[3]);
    text(f, px > (left + right) / 2 ? px - 8 : px + 8, py - 8, px > (left + right) / 2 ? "end" : "start", 12, "bold", 0,
         lab);
  }
  return finish(f);
}
