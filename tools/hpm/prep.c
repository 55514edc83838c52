/* From a decoded trace to a replayable program: operations grouped by
   thread, objects numbered densely, cross-thread dependencies, a serial
   order by time that respects them, and the peak of live bytes.  Hostile
   input (unknown or double frees, reused ids, cycles) is diagnosed here so
   that replay never waits forever.  MIT licence.  */
#include "hpm.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* --- id -> dense index hash map ------------------------------------------------ */
struct idmap {
  uint64_t *key;
  uint32_t *val;
  size_t cap;
};

static int idmap_init(struct idmap *m, size_t n) {
  m->cap = 16;
  while (m->cap < n * 2) m->cap *= 2;
  m->key = calloc(m->cap, sizeof *m->key);
  m->val = malloc(m->cap * sizeof *m->val);
  return m->key && m->val ? 0 : -1;
}

static inline size_t idmap_slot(const struct idmap *m, uint64_t k) {
  size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
  while (m->key[i] && m->key[i] != k) i = (i + 1) & (m->cap - 1);
  return i;
}

/* Leaves M empty: prep_build's error path frees it again.  */
static void idmap_free(struct idmap *m) {
  free(m->key);
  free(m->val);
  m->key = NULL;
  m->val = NULL;
  m->cap = 0;
}

/* --- helpers ---------------------------------------------------------------------- */
static int cmp_by_thread(const void *a, const void *b, void *ev) {
  const struct hpm_event *e = ev;
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (e[x].thread != e[y].thread) return e[x].thread < e[y].thread ? -1 : 1;
  return x < y ? -1 : x > y;
}

static uint64_t req_size(const struct hpm_event *e) {
  uint64_t t;
  if (e->kind == HPM_CALLOC || e->kind == HPM_REALLOCARRAY)
    return __builtin_mul_overflow(e->arg, e->size, &t) ? UINT64_MAX : t;
  return e->size;
}

static void warn(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const char *name, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hpm: %s: warning: ", name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* Binary heap of threads keyed by the time of their next op.  */
struct heap {
  uint32_t *a;
  size_t n;
  const struct prep *p;
  const size_t *pos;
};

static uint64_t hkey(const struct heap *h, uint32_t th) { return h->p->ops[h->p->th[th].first_op + h->pos[th]].t; }

static int hless(const struct heap *h, uint32_t a, uint32_t b) {
  uint64_t ka = hkey(h, a), kb = hkey(h, b);
  return ka != kb ? ka < kb : a < b;
}

static void heap_push(struct heap *h, uint32_t th) {
  size_t i = h->n++;
  h->a[i] = th;
  while (i && hless(h, h->a[i], h->a[(i - 1) / 2])) {
    uint32_t t = h->a[i];
    h->a[i] = h->a[(i - 1) / 2];
    h->a[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static uint32_t heap_pop(struct heap *h) {
  uint32_t top = h->a[0];
  h->a[0] = h->a[--h->n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && hless(h, h->a[l], h->a[m])) m = l;
    if (r < h->n && hless(h, h->a[r], h->a[m])) m = r;
    if (m == i) break;
    uint32_t t = h->a[i];
    h->a[i] = h->a[m];
    h->a[m] = t;
    i = m;
  }
  return top;
}

/* --- build --------------------------------------------------------------------------- */
int prep_build(const struct hpm_trace *tr, struct prep *p, const char *name, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  size_t n = tr->nev;
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  struct idmap ids = { 0 };
  if (!idx) goto oom;
  for (size_t i = 0; i < n; i++) idx[i] = i;
  qsort_r(idx, n, sizeof *idx, cmp_by_thread, tr->ev);

  /* Threads.  */
  uint32_t nth = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || tr->ev[idx[i]].thread != tr->ev[idx[i - 1]].thread) nth++;
  p->th = calloc(nth ? nth : 1, sizeof *p->th);
  p->ops = malloc((n ? n : 1) * sizeof *p->ops);
  if (!p->th || !p->ops) goto oom;

  /* Objects: every successful allocation.  */
  size_t nalloc = 0;
  for (size_t i = 0; i < n; i++)
    if (tr->ev[i].id) nalloc++;
  if (nalloc >= NONE32) {
    (void)snprintf(err, errlen, "too many objects (%zu)", nalloc); /* a message: truncation is harmless */
    goto fail;
  }
  if (idmap_init(&ids, nalloc)) goto oom;
  p->obj = calloc(nalloc ? nalloc : 1, sizeof *p->obj);
  if (!p->obj) goto oom;

  p->events = n;
  /* Pass 1: every object (so that a free may name an object that another
     thread allocates later in the file), threads numbered densely.  */
  uint32_t t = NONE32;
  for (size_t k = 0; k < n; k++) {
    const struct hpm_event *e = &tr->ev[idx[k]];
    if (t == NONE32 || e->thread != p->th[t].number) {
      t = t == NONE32 ? 0 : t + 1;
      p->th[t].number = e->thread;
    }
    if (!e->id) continue;
    size_t s = idmap_slot(&ids, e->id);
    if (ids.key[s]) {
      p->dup_ids++;
      continue;
    } /* reused id: refs name the first object */
    ids.key[s] = e->id;
    ids.val[s] = p->nobj;
    struct pobj *ob = &p->obj[p->nobj++];
    ob->size = req_size(e);
    ob->t_alloc = e->t;
    ob->t_free = UINT64_MAX;
    ob->alloc_thread = t;
    ob->free_thread = NONE32;
  }
  /* Pass 2: the operations.  */
  uint32_t next_obj = 0, nobj_unique = p->nobj;
  t = NONE32;
  for (size_t k = 0; k < n; k++) {
    const struct hpm_event *e = &tr->ev[idx[k]];
    if (t == NONE32 || e->thread != p->th[t].number) {
      t = t == NONE32 ? 0 : t + 1;
      p->th[t].first_op = p->nops;
      p->th[t].t_first = e->t;
    }
    struct pthread_info *ti = &p->th[t];
    ti->t_last = e->t;
    p->kind_count[e->kind]++;
    if (e->kind == HPM_THREAD_START) {
      if (!ti->tid) ti->tid = e->arg;
      continue;
    }
    if (e->kind == HPM_THREAD_EXIT) continue;
    struct rop op = { .kind = e->kind, .t = e->t, .obj = NONE32, .ref = NONE32, .dep = NONE32 };
    int is_realloc = e->kind == HPM_REALLOC || e->kind == HPM_REALLOCARRAY;
    if (e->flags & HPM_F_FAIL) p->failed++;
    /* The object freed or moved.  */
    if (e->kind == HPM_FREE || e->kind == HPM_FREE_SIZED || is_realloc) {
      if (e->ref == HPM_REF_NULL) {
        if (!is_realloc) {
          p->null_frees++;
          continue;
        }
      } else if (e->ref == HPM_REF_UNKNOWN) {
        p->unknown_frees++;
        if (!is_realloc) continue;
      } else if ((e->flags & HPM_F_FAIL) && !(e->flags & HPM_F_OLD_FREED)) {
        continue; /* failed realloc: the old object stays; nothing to replay */
      } else {
        size_t s = idmap_slot(&ids, e->ref);
        if (!ids.key[s]) {
          p->unknown_frees++; /* allocated before the trace (or a bad id) */
          if (!is_realloc) continue;
        } else {
          uint32_t o = ids.val[s];
          if (p->obj[o].free_thread != NONE32) {
            p->double_frees++;
            if (!is_realloc) continue;
          } else {
            p->obj[o].free_thread = t;
            p->obj[o].t_free = is_realloc ? e->t - e->dur : e->t;
            op.ref = o;
            if (p->obj[o].alloc_thread != t) op.dep = p->obj[o].alloc_thread;
          }
        }
      }
    }
    if (e->flags & HPM_F_FAIL) {
      if (op.ref == NONE32) continue;
      op.kind = HPM_FREE; /* realloc(p, 0) that freed p */
    }
    if (e->id) {
      size_t s = idmap_slot(&ids, e->id);
      if (ids.val[s] == next_obj && next_obj < nobj_unique) {
        op.obj = next_obj++;
        op.size = p->obj[op.obj].size;
        if (op.size > p->max_size) p->max_size = op.size;
        ti->allocs++;
        ti->bytes += op.size > UINT64_MAX - ti->bytes ? 0 : op.size;
      } else if (op.ref == NONE32)
        continue; /* a reused id: not replayed */
      else
        op.kind = HPM_FREE;
    }
    if (e->kind >= HPM_MEMALIGN && e->kind <= HPM_ALIGNED_ALLOC)
      op.align = e->arg > UINT32_MAX ? UINT32_MAX : (uint32_t)e->arg;
    if (op.ref != NONE32) ti->frees++;
    p->ops[p->nops++] = op;
    ti->nops++;
  }
  p->nthreads = nth;
  free(idx);
  idx = NULL;
  idmap_free(&ids);

  /* Serial order by time respecting dependencies; a thread whose next op
     waits for an object not yet allocated parks on that object.  */
  p->serial = malloc((p->nops ? p->nops : 1) * sizeof *p->serial);
  size_t *pos = calloc(nth ? nth : 1, sizeof *pos);
  uint32_t *waiter = malloc((p->nobj ? p->nobj : 1) * sizeof *waiter);
  uint8_t *done = calloc(p->nobj ? p->nobj : 1, 1);
  struct heap h = { malloc((nth ? nth : 1) * sizeof(uint32_t)), 0, p, pos };
  if (!p->serial || !pos || !waiter || !done || !h.a) {
    free(pos);
    free(waiter);
    free(done);
    free(h.a);
    goto oom;
  }
  memset(waiter, 0xFF, (p->nobj ? p->nobj : 1) * sizeof *waiter);
  for (uint32_t i = 0; i < nth; i++)
    if (p->th[i].nops) heap_push(&h, i);
  size_t ns = 0;
  uint64_t live = 0;
  while (h.n) {
    uint32_t th = heap_pop(&h);
    struct rop *op = &p->ops[p->th[th].first_op + pos[th]];
    if (op->ref != NONE32 && !done[op->ref]) {
      if (op->dep == NONE32) {
        /* Same thread frees before allocating: impossible in a real trace.  */
        p->bad_order++;
        op->ref = NONE32;
        if (op->obj == NONE32) op->kind = HPM_THREAD_EXIT; /* a no-op */
      } else {
        waiter[op->ref] = th;
        continue;
      }
    }
    p->serial[ns++] = (size_t)(op - p->ops);
    if (op->ref != NONE32) live -= p->obj[op->ref].size > live ? live : p->obj[op->ref].size;
    if (op->obj != NONE32) {
      uint64_t s = p->obj[op->obj].size;
      live = s > UINT64_MAX - live ? UINT64_MAX : live + s;
      if (live > p->peak_live) {
        p->peak_live = live;
        p->peak_serial = ns - 1;
        p->peak_t = op->t;
      }
      done[op->obj] = 1;
      if (waiter[op->obj] != NONE32) {
        heap_push(&h, waiter[op->obj]);
        waiter[op->obj] = NONE32;
      }
    }
    if (op->t > p->end_t) p->end_t = op->t;
    if (++pos[th] < p->th[th].nops) heap_push(&h, th);
  }
  free(waiter);
  free(done);
  free(h.a);
  if (ns != p->nops) {
    /* Find one stuck thread to name.  */
    uint32_t th = 0;
    while (th < nth && pos[th] == p->th[th].nops) th++;
    const struct rop *op = th < nth ? &p->ops[p->th[th].first_op + pos[th]] : NULL;
    /* A message: truncation is harmless.  */
    if (op && op->ref < p->nobj)
      (void)snprintf(err, errlen,
                     "cycle in cross-thread ordering: %zu of %zu operations cannot run "
                     "(thread %u waits for object %u of thread %u, which waits too)",
                     p->nops - ns, p->nops, p->th[th].number, op->ref, p->th[p->obj[op->ref].alloc_thread].number);
    else
      (void)snprintf(err, errlen, "cycle in cross-thread ordering: %zu of %zu operations cannot run", p->nops - ns,
                     p->nops);
    free(pos);
    prep_free(p);
    return -1;
  }
  free(pos);
  if (p->unknown_frees)
    warn(name, "%llu frees of objects the trace never allocated (ignored)", (unsigned long long)p->unknown_frees);
  if (p->double_frees) warn(name, "%llu double frees (ignored)", (unsigned long long)p->double_frees);
  if (p->dup_ids) warn(name, "%llu object ids reused", (unsigned long long)p->dup_ids);
  if (p->bad_order)
    warn(name, "%llu frees before their allocation in the same thread (ignored)", (unsigned long long)p->bad_order);
  return 0;
oom:
  (void)snprintf(err, errlen, "out of memory preparing %zu events", n); /* a message: truncation is harmless */
fail:
  free(idx);
  idmap_free(&ids);
  prep_free(p);
  return -1;
}

void prep_free(struct prep *p) {
  free(p->th);
  free(p->ops);
  free(p->obj);
  free(p->serial);
  memset(p, 0, sizeof *p);
}

int load_trace(const char *file, struct hpm_trace *tr, struct prep *p, int quiet) {
  char err[512];
  progress("reading %s", file);
  if (hpm_trace_read_file(file, tr, err, sizeof err)) {
    progress_done();
    fprintf(stderr, "hpm: %s\n", err);
    return -1;
  }
  if (tr->warning[0] && !quiet) fprintf(stderr, "hpm: warning: %s\n", tr->warning);
  if (p && prep_build(tr, p, file, err, sizeof err)) {
    progress_done();
    fprintf(stderr, "hpm: %s: %s\n", file, err);
    hpm_trace_free(tr);
    return -1;
  }
  progress_done();
  return 0;
}
