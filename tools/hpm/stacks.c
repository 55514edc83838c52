/* SPDX-License-Identifier: MIT */
/* hpm analyze --stacks: which code allocated what.  Every object of the
   prepared trace is charged to its allocation's call stack: bytes live at
   the peak of live bytes (the serial order's peak, as replay uses it),
   bytes never freed, allocations and bytes allocated.  Stacks are then
   grouped by call site (the first frame that is not an allocation
   function, by function and file:line) for the top-N tables, each with
   the callers of its heaviest stack; --flame writes every stack, folded,
   and their flame graph.  MIT licence.  */
#include "stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CALLERS 4 /* frames shown under a call site */

static const char *const metric_name[SM_N] = { "peak", "leaked", "count", "bytes" };

/* Allocation functions a call site is never charged to: their callers are.  */
static int is_alloc_fn(const char *f) {
  static const char *const names[] = { "strdup", "strndup", "__strdup", "__strndup", "xmalloc", "xcalloc", "xrealloc" };
  if (!strncmp(f, "operator new", 12)) return 1;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(f, names[i])) return 1;
  return 0;
}

/* The index of address A in the sorted R->addr.  */
static size_t addr_index(const struct stacks_result *r, uint64_t a) {
  size_t lo = 0, hi = r->naddr;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->addr[mid] < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Per stack: R->sv from the objects of P (and R->none).  */
static int charge_objects(const struct hpm_trace *tr, const struct prep *p, struct stacks_result *r) {
  unsigned char *alive = calloc(p->nobj ? p->nobj : 1, 1);
  r->sv = calloc((tr->nstacks ? tr->nstacks : 1) * SV_N, sizeof *r->sv);
  if (!alive || !r->sv) {
    free(alive);
    return -1;
  }
  for (size_t k = 0; p->nops && k <= p->peak_serial; k++) {
    const struct rop *op = &p->ops[p->serial[k]];
    if (op->ref != NONE32) alive[op->ref] = 0;
    if (op->obj != NONE32) alive[op->obj] = 1;
  }
  for (uint32_t o = 0; o < p->nobj; o++) {
    const struct pobj *ob = &p->obj[o];
    const struct hpm_stack *st = hpm_trace_stack(tr, ob->stack);
    uint64_t *v = st ? &r->sv[(size_t)(st - tr->stacks) * SV_N] : r->none;
    if (st && !v[SM_COUNT]) r->used++;
    v[SM_PEAK] += alive[o] ? ob->size : 0;
    v[SV_PEAK_OBJS] += alive[o];
    v[SM_LEAKED] += ob->free_thread == NONE32 ? ob->size : 0;
    v[SV_LEAKED_OBJS] += ob->free_thread == NONE32;
    v[SM_COUNT]++;
    v[SM_BYTES] += ob->size;
  }
  free(alive);
  return 0;
}

/* R->addr: the distinct frames of the stacks used, and their symbols.  */
static int symbolize_frames(const struct hpm_trace *tr, struct stacks_result *r) {
  size_t n = 0;
  for (size_t s = 0; s < tr->nstacks; s++)
    if (r->sv[s * SV_N + SM_COUNT]) n += tr->stacks[s].nframes;
  r->addr = malloc((n ? n : 1) * sizeof *r->addr);
  if (!r->addr) return -1;
  n = 0;
  for (size_t s = 0; s < tr->nstacks; s++)
    if (r->sv[s * SV_N + SM_COUNT])
      for (uint32_t k = 0; k < tr->stacks[s].nframes; k++) r->addr[n++] = tr->frames[tr->stacks[s].first + k];
  qsort(r->addr, n, sizeof *r->addr, cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || r->addr[i] != r->addr[u - 1]) r->addr[u++] = r->addr[i];
  r->naddr = u;
  r->sym = calloc(u ? u : 1, sizeof *r->sym);
  if (!r->sym) return -1;
  progress("symbolizing %zu frames", u);
  int rc = symbolize(tr->maps, r->addr, u, r->sym, &r->nfiles);
  progress_done();
  return rc;
}

/* The site frame of stack S: its first frame outside the allocation functions.  */
static size_t site_frame(const struct hpm_trace *tr, const struct stacks_result *r, size_t s) {
  const struct hpm_stack *st = &tr->stacks[s];
  size_t f = addr_index(r, tr->frames[st->first]);
  for (uint32_t k = 0; k < st->nframes; k++) {
    size_t i = addr_index(r, tr->frames[st->first + k]);
    if (!is_alloc_fn(r->sym[i].func)) return i;
  }
  return f;
}

/* Sites compare by function, file and line.  */
static int same_site(const struct sym *a, const struct sym *b) {
  return !strcmp(a->func, b->func) && a->line == b->line &&
         (a->file && b->file ? !strcmp(a->file, b->file) : !a->file && !b->file && !strcmp(a->obj, b->obj));
}

struct keyed {
  size_t stack, frame;
};

static int cmp_keyed(const void *a, const void *b, void *ctx) {
  const struct sym *sy = ctx;
  const struct sym *x = &sy[((const struct keyed *)a)->frame], *y = &sy[((const struct keyed *)b)->frame];
  int c = strcmp(x->func, y->func);
  if (!c) c = strcmp(x->file ? x->file : x->obj, y->file ? y->file : y->obj);
  if (!c) c = (x->line > y->line) - (x->line < y->line);
  return c;
}

/* R->sites: the stacks used, grouped by site frame.  */
static int group_sites(const struct hpm_trace *tr, struct stacks_result *r) {
  struct keyed *k = malloc((r->used ? r->used : 1) * sizeof *k);
  r->sites = calloc(r->used ? r->used : 1, sizeof *r->sites);
  if (!k || !r->sites) {
    free(k);
    return -1;
  }
  size_t n = 0;
  for (size_t s = 0; s < tr->nstacks; s++)
    if (r->sv[s * SV_N + SM_COUNT]) k[n++] = (struct keyed){ s, site_frame(tr, r, s) };
  qsort_r(k, n, sizeof *k, cmp_keyed, r->sym);
  for (size_t i = 0; i < n; i++) {
    if (!r->nsites || !same_site(&r->sym[r->sites[r->nsites - 1].frame], &r->sym[k[i].frame]))
      r->sites[r->nsites++].frame = k[i].frame;
    struct site *st = &r->sites[r->nsites - 1];
    const uint64_t *v = &r->sv[k[i].stack * SV_N];
    for (int m = 0; m < SV_N; m++) {
      if (m < SM_N && v[m] > 0 && (!st->v[m] || v[m] > r->sv[st->best[m] * SV_N + m])) st->best[m] = k[i].stack;
      st->v[m] += v[m];
    }
  }
  free(k);
  return 0;
}

int stacks_run(const struct hpm_trace *tr, const struct prep *p, struct stacks_result *r) {
  memset(r, 0, sizeof *r);
  if (charge_objects(tr, p, r) || symbolize_frames(tr, r) || group_sites(tr, r)) {
    fprintf(stderr, "hpm analyze: out of memory for the call stacks\n");
    return -1;
  }
  return 0;
}

void stacks_free(struct stacks_result *r) {
  if (r->sym) sym_free(r->sym, r->naddr);
  free(r->sym);
  free(r->addr);
  free(r->sv);
  free(r->sites);
  memset(r, 0, sizeof *r);
}

/* --- reports ------------------------------------------------------------------- */
static const char *const unwinder_name[] = { "none", "frame pointers", "libgcc", "libunwind" };

/* One frame as text: the function, then where it is (file:line, or the
   module and offset; a name the symbol table could not check is the
   module and offset itself), [inlined] for code inlined into its caller.  */
static void print_sym(const struct sym *s) {
  printf("%s", s->func);
  if (s->file)
    printf(" (%s:%u)", s->file, s->line);
  else if (s->checked)
    printf(" (%s+0x%llx)", s->obj, (unsigned long long)s->offset);
  else if (!s->offset)
    printf(" (%s)", s->obj);
  if (s->inlined) printf(" [inlined]");
}

/* The sites in order of metric M, largest first, at most TOP; returns the
   count.  An insertion into the sorted ORDER[0..n), which keeps TOP.  */
static size_t top_sites(const struct stacks_result *r, int m, size_t *order, size_t top) {
  size_t n = 0;
  for (size_t i = 0; i < r->nsites; i++) {
    if (!r->sites[i].v[m]) continue;
    size_t j = n;
    while (j > 0 && r->sites[order[j - 1]].v[m] < r->sites[i].v[m]) {
      if (j < top) order[j] = order[j - 1];
      j--;
    }
    if (j < top) {
      order[j] = i;
      if (n < top) n++;
    }
  }
  return n;
}

static void text_size(uint64_t b, char *buf, size_t n) {
  /* Callers pass 32 bytes: every size fits.  */
  if (b >= (1ull << 30))
    (void)snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
  else if (b >= (1u << 20))
    (void)snprintf(buf, n, "%.1f MiB", (double)b / (1u << 20));
  else if (b >= 1024)
    (void)snprintf(buf, n, "%.1f KiB", (double)b / 1024);
  else
    (void)snprintf(buf, n, "%llu B", (unsigned long long)b);
}

static void text_table(const struct hpm_trace *tr, const struct stacks_result *r, int m, const char *title,
                       uint64_t total, int top) {
  size_t order[100], n = top_sites(r, m, order, (size_t)top);
  printf("\n%s\n", title);
  if (!n) {
    printf("  (none)\n");
    return;
  }
  printf("  %12s %7s %10s  call site\n", m == SM_COUNT ? "allocations" : "bytes", "%",
         m == SM_COUNT ? "bytes" : "objects");
  for (size_t i = 0; i < n; i++) {
    const struct site *s = &r->sites[order[i]];
    char v[32], w[32];
    if (m == SM_COUNT) {
      (void)snprintf(v, sizeof v, "%llu", (unsigned long long)s->v[m]); /* fits */
      text_size(s->v[SM_BYTES], w, sizeof w);
    } else {
      text_size(s->v[m], v, sizeof v);
      (void)snprintf(w, sizeof w, "%llu",
                     (unsigned long long)s->v[m == SM_PEAK ? SV_PEAK_OBJS : SV_LEAKED_OBJS]); /* fits */
    }
    printf("  %12s %6.1f%% %10s  ", v, 100.0 * (double)s->v[m] / (double)(total ? total : 1), w);
    print_sym(&r->sym[s->frame]);
    putchar('\n');
    const struct hpm_stack *st = &tr->stacks[s->best[m]];
    int shown = 0, past = 0;
    for (uint32_t k = 0; k < st->nframes && shown < CALLERS; k++) {
      size_t f = addr_index(r, tr->frames[st->first + k]);
      const struct sym *c = &r->sym[f];
      if (!past) { /* up to and including the site frame, then its callers */
        past = f == s->frame || same_site(&r->sym[f], &r->sym[s->frame]);
        if (!past) continue;
        c = c->caller;
      }
      for (; c && shown < CALLERS; c = c->caller, shown++) {
        printf("  %12s %7s %10s    <- ", "", "", "");
        print_sym(c);
        putchar('\n');
      }
    }
  }
}

void stacks_report_text(const struct hpm_trace *tr, const struct prep *p, const struct stacks_result *r, int top) {
  char title[160], live[32];
  uint64_t tot[SM_N] = { 0 };
  for (size_t i = 0; i < r->nsites; i++)
    for (int m = 0; m < SM_N; m++) tot[m] += r->sites[i].v[m];
  for (int m = 0; m < SM_N; m++) tot[m] += r->none[m];
  printf("\ncall stacks: %zu distinct, %llu frames deep at most (%s); %zu frames in %zu object files, symbols "
         "from libdw\n",
         r->used, (unsigned long long)tr->hdr.stack_depth, unwinder_name[tr->hdr.unwinder < 4 ? tr->hdr.unwinder : 0],
         r->naddr, r->nfiles);
  if (r->none[SM_COUNT]) printf("%llu allocations without a known stack\n", (unsigned long long)r->none[SM_COUNT]);
  if (!tr->maps) printf("(no maps in the trace: frames are raw addresses)\n");
  text_size(p->peak_live, live, sizeof live);
  (void)snprintf(title, sizeof title, "top call sites by bytes live at the peak (%s at %.3f s):", live,
                 (double)p->peak_t / 1e9); /* a title: truncation is harmless */
  text_table(tr, r, SM_PEAK, title, tot[SM_PEAK], top);
  text_size(tot[SM_LEAKED], live, sizeof live);
  (void)snprintf(title, sizeof title, "top call sites by bytes never freed (%s):", live); /* as above */
  text_table(tr, r, SM_LEAKED, title, tot[SM_LEAKED], top);
  (void)snprintf(title, sizeof title,
                 "top call sites by allocations (%llu):", (unsigned long long)tot[SM_COUNT]); /* as above */
  text_table(tr, r, SM_COUNT, title, tot[SM_COUNT], top);
}

/* One frame as a JSON object: function, file, line, object (the
   module's base name), module (its path), address (the return address),
   offset (the call's ELF virtual address in the module), inlined.  */
static void json_sym(const struct sym *s) {
  printf("{\"function\":");
  json_str(stdout, s->func);
  printf(",\"file\":");
  if (s->file)
    json_str(stdout, s->file);
  else
    printf("null");
  printf(",\"line\":%u,\"object\":", s->line);
  json_str(stdout, s->obj);
  printf(",\"module\":");
  json_str(stdout, s->path);
  printf(",\"address\":\"0x%llx\",\"offset\":\"0x%llx\",\"inlined\":%s}", (unsigned long long)s->addr,
         (unsigned long long)s->offset, s->inlined ? "true" : "false");
}

/* The frames of one return address, comma-separated: the inlined ones
   first, then the function they were inlined into.  */
static void json_frames(const struct sym *s) {
  for (const struct sym *c = s; c; c = c->caller) {
    if (c != s) putchar(',');
    json_sym(c);
  }
}

void stacks_report_json(const struct hpm_trace *tr, const struct stacks_result *r, int top) {
  printf(",\"stacks\":{\"distinct\":%zu,\"depth\":%llu,\"unwinder\":\"%s\",\"frames\":%zu,\"object_files\":%zu,"
         "\"without_stack\":%llu",
         r->used, (unsigned long long)tr->hdr.stack_depth, unwinder_name[tr->hdr.unwinder < 4 ? tr->hdr.unwinder : 0],
         r->naddr, r->nfiles, (unsigned long long)r->none[SM_COUNT]);
  for (int m = 0; m < 3; m++) {
    size_t order[100], n = top_sites(r, m, order, (size_t)top);
    printf(",\"top_%s\":[", metric_name[m]);
    for (size_t i = 0; i < n; i++) {
      const struct site *s = &r->sites[order[i]];
      printf("%s{\"site\":", i ? "," : "");
      json_sym(&r->sym[s->frame]);
      printf(",\"peak_bytes\":%llu,\"leaked_bytes\":%llu,\"allocations\":%llu,\"bytes\":%llu,\"stack\":[",
             (unsigned long long)s->v[SM_PEAK], (unsigned long long)s->v[SM_LEAKED], (unsigned long long)s->v[SM_COUNT],
             (unsigned long long)s->v[SM_BYTES]);
      const struct hpm_stack *st = &tr->stacks[s->best[m]];
      for (uint32_t k = 0; k < st->nframes; k++) {
        if (k) putchar(',');
        json_frames(&r->sym[addr_index(r, tr->frames[st->first + k])]);
      }
      printf("]}");
    }
    printf("]");
  }
  printf("}");
}

/* --- flame graph --------------------------------------------------------------- */
/* The folded stacks by METRIC into a malloc'd string (NULL: no memory):
   one line per stack, its frames' functions from the outermost, ';'
   between them (';' in a name becomes ':'), then the value.  */
static char *fold(const struct hpm_trace *tr, const struct stacks_result *r, int metric) {
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  for (size_t s = 0; s < tr->nstacks; s++) {
    uint64_t v = r->sv[s * SV_N + metric];
    if (!v) continue;
    const struct hpm_stack *st = &tr->stacks[s];
    for (uint32_t k = st->nframes; k-- > 0;) {
      const struct sym *chain[64] = { 0 };
      size_t nc = 0;
      for (const struct sym *c = &r->sym[addr_index(r, tr->frames[st->first + k])]; c && nc < 64; c = c->caller)
        chain[nc++] = c;
      while (nc-- > 0) {
        const char *f = chain[nc]->func;
        size_t fl = strlen(f);
        if (len + fl + 32 >= cap) {
          char *bigger = realloc(out, cap = (cap + fl) * 2);
          if (!bigger) {
            free(out);
            return NULL;
          }
          out = bigger;
        }
        for (size_t i = 0; i < fl; i++) {
          out[len] = f[i];
          if (f[i] == ';' || f[i] == '\n') out[len] = ':';
          len++;
        }
        out[len++] = k || nc ? ';' : ' ';
      }
    }
    len += (size_t)snprintf(out + len, cap - len, "%llu\n", (unsigned long long)v); /* room: 32 */
  }
  out[len] = 0;
  return out;
}

int stacks_flame(const char *svg, const char *folded, const struct hpm_trace *tr, const struct stacks_result *r,
                 int metric, const char *title) {
  static const char *const units[SM_N] = { "bytes", "bytes", "allocations", "bytes" };
  char *text = fold(tr, r, metric);
  int rc = 0;
  if (!text) {
    fprintf(stderr, "hpm analyze: out of memory for the flame graph\n");
    return 1;
  }
  FILE *f = fopen(folded, "w");
  if (f) {
    rc = fputs(text, f) < 0;
    rc |= fclose(f) != 0;
  }
  if (!f || rc) {
    fprintf(stderr, "hpm analyze: %s: %s\n", folded, strerror(errno));
    rc = 1;
  }
  if (rc == 0 && flame_svg(svg, text, title, units[metric]) != 0) {
    fprintf(stderr, "hpm analyze: %s: %s\n", svg, strerror(errno));
    rc = 1;
  }
  free(text);
  return rc;
}
