/* hpm: minimal SVG charts.  MIT licence.  */
#ifndef HPM_SVG_H
#define HPM_SVG_H

/* Grouped bars: V holds N groups of NSERIES values.  Returns 0 or -1.  */
int svg_bars(const char *path, const char *title, const char *const *labels, int n, const char *const *series,
             int nseries, const double *v, const char *unit);
/* One line through N points.  */
int svg_line(const char *path, const char *title, const double *x, const double *y, int n, const char *xunit,
             const char *yunit);

#endif
