/* SPDX-License-Identifier: MIT */
/* An SVG flame graph of folded stacks ("main;parse;strdup 4096" lines, the
   outermost frame first): the stacks merged into a tree, each frame a box
   as wide as its share of the total, callers below callees, siblings in
   name order, hover text (<title>) with the value and share.  Boxes
   narrower than a tenth of a pixel are left out with their callees.
   Plain SVG, no script: any viewer renders it.  MIT licence.  */
#include "stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FW 1200    /* image width */
#define FH 16      /* frame height */
#define TOP 44     /* title band */
#define PAD 10     /* left, right and bottom margins */
#define CHAR_W 6.6 /* of an 11 px monospace font */

struct fnode {
  const char *name; /* into the folded text */
  size_t len;
  uint64_t v;
  size_t child, next; /* first child, next sibling; 0: none (node 0 is the root) */
};

struct ftree {
  struct fnode *n;
  size_t count, cap;
  int depth; /* of the deepest frame */
};

/* The child of P named NAME[0..LEN), made if missing; 0 when out of memory.  */
static size_t child_of(struct ftree *t, size_t p, const char *name, size_t len) {
  size_t c;
  for (c = t->n[p].child; c; c = t->n[c].next)
    if (t->n[c].len == len && !memcmp(t->n[c].name, name, len)) return c;
  if (t->count == t->cap) {
    struct fnode *bigger = realloc(t->n, (t->cap *= 2) * sizeof *bigger);
    if (!bigger) return 0;
    t->n = bigger;
  }
  c = t->count++;
  t->n[c] = (struct fnode){ name, len, 0, 0, t->n[p].child };
  t->n[p].child = c;
  return c;
}

/* The tree of FOLDED into T.  Returns 0, or -1 when out of memory.  */
static int build(struct ftree *t, const char *folded) {
  t->cap = 1024;
  t->n = malloc(t->cap * sizeof *t->n);
  if (!t->n) return -1;
  t->count = 1;
  t->n[0] = (struct fnode){ "all", 3, 0, 0, 0 };
  for (const char *line = folded; *line;) {
    const char *eol = strchr(line, '\n'), *sp;
    if (!eol) eol = line + strlen(line);
    for (sp = eol; sp > line && sp[-1] != ' '; sp--)
      ;
    uint64_t v = sp > line ? strtoull(sp, NULL, 10) : 0;
    size_t node = 0;
    int d = 0;
    t->n[0].v += v;
    for (const char *f = line; sp > line && f < sp - 1;) {
      const char *semi = memchr(f, ';', (size_t)(sp - 1 - f));
      const char *end = semi ? semi : sp - 1;
      if (!(node = child_of(t, node, f, (size_t)(end - f)))) return -1;
      t->n[node].v += v;
      if (++d > t->depth) t->depth = d;
      f = end + 1;
    }
    line = *eol ? eol + 1 : eol;
  }
  return 0;
}

static void xml_text(FILE *f, const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) switch (s[i]) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)s[i] >= 0x20) fputc(s[i], f);
    }
}

/* A warm colour from the name, the same for the same function everywhere.  */
static void colour(const char *name, size_t len, int rgb[3]) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 16777619u;
  rgb[0] = 205 + (int)(h % 50);
  rgb[1] = 60 + (int)((h >> 8) % 170);
  rgb[2] = (int)((h >> 16) % 55);
}

static int cmp_node(const void *a, const void *b, void *ctx) {
  const struct fnode *n = ctx, *x = &n[*(const size_t *)a], *y = &n[*(const size_t *)b];
  size_t l = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->name, y->name, l);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

struct draw {
  FILE *f;
  const struct ftree *t;
  double scale; /* pixels per unit */
  int height;
  uint64_t total;
  const char *unit;
};

/* Node I at depth D, its left edge at X, then its callees above it.  */
static void draw(const struct draw *dr, size_t i, int d, double x) // NOLINT(misc-no-recursion): bounded by the depth
{
  const struct fnode *n = &dr->t->n[i];
  double w = (double)n->v * dr->scale;
  if (w < 0.1) return;
  int rgb[3], y = dr->height - PAD - (d + 1) * FH;
  colour(n->name, n->len, rgb);
  fprintf(dr->f, "<g><title>");
  xml_text(dr->f, n->name, n->len);
  fprintf(dr->f,
          " (%llu %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" "
          "fill=\"rgb(%d,%d,%d)\"/>",
          (unsigned long long)n->v, dr->unit, 100.0 * (double)n->v / (double)dr->total, x, y, w, FH - 1, rgb[0], rgb[1],
          rgb[2]);
  size_t fit = w > 3 * CHAR_W ? (size_t)((w - 6) / CHAR_W) : 0;
  if (fit >= 3) {
    fprintf(dr->f, "<text x=\"%.1f\" y=\"%d\">", x + 3, y + 11);
    xml_text(dr->f, n->name, n->len <= fit ? n->len : fit - 2);
    if (n->len > fit) fputs("..", dr->f);
    fputs("</text>", dr->f);
  }
  fputs("</g>\n", dr->f);
  size_t nc = 0, *kids;
  for (size_t c = n->child; c; c = dr->t->n[c].next) nc++;
  if (!nc || !(kids = malloc(nc * sizeof *kids))) return;
  nc = 0;
  for (size_t c = n->child; c; c = dr->t->n[c].next) kids[nc++] = c;
  qsort_r(kids, nc, sizeof *kids, cmp_node, dr->t->n);
  for (size_t k = 0; k < nc; k++) {
    draw(dr, kids[k], d + 1, x);
    x += (double)dr->t->n[kids[k]].v * dr->scale;
  }
  free(kids);
}

int flame_svg(const char *path, const char *folded, const char *title, const char *unit) {
  struct ftree t = { 0 };
  if (build(&t, folded)) {
    free(t.n);
    errno = ENOMEM;
    return -1;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    free(t.n);
    return -1;
  }
  int height = TOP + (t.depth + 1) * FH + PAD;
  struct draw dr = { f, &t, t.n[0].v ? (double)(FW - 2 * PAD) / (double)t.n[0].v : 0, height, t.n[0].v, unit };
  fprintf(f,
          "<?xml version=\"1.0\" standalone=\"no\"?>\n"
          "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "xmlns=\"http://www.w3.org/2000/svg\">\n"
          "<style>text{font-family:monospace;font-size:11px;fill:#000}.t{font-size:16px;font-family:sans-serif}"
          ".s{font-size:12px;font-family:sans-serif;fill:#555}</style>\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n<text class=\"t\" x=\"%d\" y=\"22\">",
          FW, height, FW, height, PAD);
  xml_text(f, title, strlen(title));
  fprintf(f,
          "</text>\n<text class=\"s\" x=\"%d\" y=\"38\">%llu %s in all; callers below callees, width by share"
          "</text>\n",
          PAD, (unsigned long long)t.n[0].v, unit);
  if (t.n[0].v) draw(&dr, 0, 0, PAD);
  fputs("</svg>\n", f);
  int rc = ferror(f) ? -1 : 0;
  if (fclose(f) != 0) rc = -1;
  free(t.n);
  return rc;
}
