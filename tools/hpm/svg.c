/* hpm: minimal SVG charts (bars, lines), no dependencies.  MIT licence.  */
#include "svg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const colours[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                       "#76b7b2", "#edc948", "#b07aa1", "#ff9da7" };

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

/* Close F, written with unchecked stdio calls: a write error shows in the
   stream's error flag or in fclose.  Returns 0, or -1 with errno set.  */
static int finish(FILE *f) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    if (bad && !errno) errno = EIO;
    return -1;
  }
  return 0;
}

static void head(FILE *f, int w, int h, const char *title) {
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n<title>",
          w, h);
  esc(f, title);
  fprintf(f,
          "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%d\" y=\"18\" text-anchor=\"start\" font-size=\"13\">",
          10);
  esc(f, title);
  fputs("</text>\n", f);
}

int svg_bars(const char *path, const char *title, const char *const *labels, int n, const char *const *series,
             int nseries, const double *v /* n * nseries */, const char *unit) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int group = 14 * nseries + 10, left = 70, top = 30, ph = 260;
  if (group < 80) group = 80;
  int w = left + 120 + (n > 0 ? n : 1) * group, h = top + ph + 120 + 14 * nseries;
  if (w < 640) w = 640;
  double max = 0;
  for (int i = 0; i < n * nseries; i++)
    if (v[i] > max) max = v[i];
  if (max <= 0) max = 1;
  head(f, w, h, title);
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top + ph, w - 10, top + ph);
  for (int k = 0; k <= 4; k++) {
    int y = top + ph - ph * k / 4;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g%s</text>\n", left - 4, y + 4, max * k / 4,
            unit ? unit : "");
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", left, y, w - 10, y);
  }
  for (int i = 0; i < n; i++) {
    int x0 = left + 5 + i * group;
    for (int s = 0; s < nseries; s++) {
      double val = v[i * nseries + s];
      int bh = (int)(ph * (val / max));
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"%d\" fill=\"%s\"><title>%.6g</title></rect>\n",
              x0 + s * 14, top + ph - bh, bh, colours[s % 8], val);
    }
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(45)\">", x0 + 4, top + ph + 12);
    esc(f, labels[i]);
    fputs("</text>\n", f);
  }
  for (int s = 0; s < nseries; s++) {
    int y = top + ph + 105 + 14 * s;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", left, y - 9,
            colours[s % 8], left + 14, y);
    esc(f, series[s]);
    fputs("</text>\n", f);
  }
  fputs("</svg>\n", f);
  return finish(f);
}

int svg_line(const char *path, const char *title, const double *x, const double *y, int n, const char *xunit,
             const char *yunit) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int w = 760, h = 360, left = 80, top = 30, pw = w - left - 50, ph = h - top - 50;
  double xmax = 0, ymax = 0;
  for (int i = 0; i < n; i++) {
    if (x[i] > xmax) xmax = x[i];
    if (y[i] > ymax) ymax = y[i];
  }
  if (xmax <= 0) xmax = 1;
  if (ymax <= 0) ymax = 1;
  head(f, w, h, title);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", left, top, pw,
          ph);
  for (int k = 0; k <= 4; k++) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g%s</text>\n", left - 4, top + ph - ph * k / 4 + 4,
            ymax * k / 4, yunit);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.3g%s</text>\n", left + pw * k / 4, top + ph + 16,
            xmax * k / 4, xunit);
  }
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colours[0]);
  for (int i = 0; i < n; i++) fprintf(f, "%.1f,%.1f ", left + pw * x[i] / xmax, top + ph - ph * y[i] / ymax);
  fputs("\"/>\n</svg>\n", f);
  return finish(f);
}
