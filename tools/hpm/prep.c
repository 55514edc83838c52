/* SPDX-License-Identifier: MIT */
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

/* M's tables, whole, partly made (idmap_init failed) or never made.  */
static void idmap_free(struct idmap *m) {
  free(m->key);
  free(m->val);
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
  if (!name) return;
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

/* --- build ---------------------------------------------------------------------------
   prep_build runs these passes in order; each states what it needs from
   the ones before it.  */

/* The state of the first passes over the events.  */
struct builder {
  const struct hpm_trace *tr;
  size_t *idx;       /* event indexes, grouped by thread, in file order within one */
  struct idmap ids;  /* object id -> dense object index */
  uint32_t nthreads; /* distinct thread numbers */
};

static int oom(const struct hpm_trace *tr, char *err, size_t errlen) {
  (void)snprintf(err, errlen, "out of memory preparing %zu events", tr->nev); /* a message: truncation is harmless */
  return -1;
}

/* Pass 1, tables: sorts the event indexes by thread into B->idx, counts
   the threads and the objects (successful allocations), and allocates
   P->th, P->ops and P->obj and the id map for them.  Returns 0, or -1
   with a message in ERR.  */
static int prep_tables(struct builder *b, struct prep *p, char *err, size_t errlen) {
  const struct hpm_trace *tr = b->tr;
  size_t n = tr->nev, nalloc = 0;
  b->idx = malloc((n ? n : 1) * sizeof *b->idx);
  if (!b->idx) return oom(tr, err, errlen);
  for (size_t i = 0; i < n; i++) b->idx[i] = i;
  qsort_r(b->idx, n, sizeof *b->idx, cmp_by_thread, tr->ev);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || tr->ev[b->idx[i]].thread != tr->ev[b->idx[i - 1]].thread) b->nthreads++;
  for (size_t i = 0; i < n; i++)
    if (tr->ev[i].id) nalloc++;
  if (nalloc >= NONE32) {
    (void)snprintf(err, errlen, "too many objects (%zu)", nalloc); /* a message: truncation is harmless */
    return -1;
  }
  p->events = n;
  p->th = calloc(b->nthreads ? b->nthreads : 1, sizeof *p->th);
  p->ops = malloc((n ? n : 1) * sizeof *p->ops);
  p->obj = calloc(nalloc ? nalloc : 1, sizeof *p->obj);
  if (!p->th || !p->ops || !p->obj || idmap_init(&b->ids, nalloc)) return oom(tr, err, errlen);
  return 0;
}

/* Pass 2, objects: numbers the threads densely (P->th[].number) and every
   object in thread order, before any operation is built, so that a free
   may name an object another thread allocates later in the file.  A
   reused id is counted (P->dup_ids) and names its first object.  */
static void number_objects(struct builder *b, struct prep *p) {
  uint32_t t = NONE32;
  for (size_t k = 0; k < b->tr->nev; k++) {
    const struct hpm_event *e = &b->tr->ev[b->idx[k]];
    if (t == NONE32 || e->thread != p->th[t].number) {
      t = t == NONE32 ? 0 : t + 1;
      p->th[t].number = e->thread;
    }
    if (!e->id) continue;
    size_t s = idmap_slot(&b->ids, e->id);
    if (b->ids.key[s]) {
      p->dup_ids++;
      continue;
    }
    b->ids.key[s] = e->id;
    b->ids.val[s] = p->nobj;
    struct pobj *ob = &p->obj[p->nobj++];
    ob->size = req_size(e);
    ob->t_alloc = e->t;
    ob->t_free = UINT64_MAX;
    ob->stack = e->stack;
    ob->alloc_thread = t;
    ob->free_thread = NONE32;
  }
}

/* The object that E (an event of thread T) frees or reallocates: sets
   OP->ref, and OP->dep when another thread allocated it, and records the
   free in P->obj.  Counts frees of NULL, of unknown objects and double
   frees.  Returns 0, or -1 when E leaves nothing to replay.  */
static int resolve_ref(struct prep *p, const struct idmap *ids, const struct hpm_event *e, uint32_t t, struct rop *op) {
  int is_realloc = e->kind == HPM_REALLOC || e->kind == HPM_REALLOCARRAY;
  if (e->kind != HPM_FREE && e->kind != HPM_FREE_SIZED && !is_realloc) return 0;
  if (e->ref == HPM_REF_NULL) {
    if (is_realloc) return 0;
    p->null_frees++;
    return -1;
  }
  if (e->ref == HPM_REF_UNKNOWN) {
    p->unknown_frees++;
    return is_realloc ? 0 : -1;
  }
  if ((e->flags & HPM_F_FAIL) && !(e->flags & HPM_F_OLD_FREED)) return -1; /* failed realloc: the old object stays */
  size_t s = idmap_slot(ids, e->ref);
  if (!ids->key[s]) {
    p->unknown_frees++; /* allocated before the trace (or a bad id) */
    return is_realloc ? 0 : -1;
  }
  uint32_t o = ids->val[s];
  if (p->obj[o].free_thread != NONE32) {
    p->double_frees++;
    return is_realloc ? 0 : -1;
  }
  p->obj[o].free_thread = t;
  p->obj[o].t_free = is_realloc ? e->t - e->dur : e->t;
  op->ref = o;
  if (p->obj[o].alloc_thread != t) op->dep = p->obj[o].alloc_thread;
  return 0;
}

/* The operation replaying E, an allocating or freeing event of thread T;
   *NEXT_OBJ is the next object (of pass 2's numbering) to be created.
   Returns 0, or -1 when nothing of E is replayed.  */
static int event_op(struct builder *b, struct prep *p, const struct hpm_event *e, uint32_t t, uint32_t *next_obj,
                    struct rop *op) {
  *op = (struct rop){ .kind = e->kind, .t = e->t, .obj = NONE32, .ref = NONE32, .dep = NONE32 };
  if (e->flags & HPM_F_FAIL) p->failed++;
  if (resolve_ref(p, &b->ids, e, t, op)) return -1;
  if (e->flags & HPM_F_FAIL) {
    if (op->ref == NONE32) return -1;
    op->kind = HPM_FREE; /* realloc(p, 0) that freed p */
  }
  if (e->id) {
    size_t s = idmap_slot(&b->ids, e->id);
    if (b->ids.val[s] == *next_obj && *next_obj < p->nobj) {
      op->obj = (*next_obj)++;
      op->size = p->obj[op->obj].size;
    } else if (op->ref == NONE32)
      return -1; /* a reused id: not replayed */
    else
      op->kind = HPM_FREE;
  }
  if (e->kind >= HPM_MEMALIGN && e->kind <= HPM_ALIGNED_ALLOC)
    op->align = e->arg > UINT32_MAX ? UINT32_MAX : (uint32_t)e->arg;
  return 0;
}

/* Pass 3, operations: P->ops grouped by thread in program order, with
   each thread's first op, count, times, tid and totals, and the counts by
   kind.  Needs pass 2's objects.  */
static void build_ops(struct builder *b, struct prep *p) {
  uint32_t t = NONE32, next_obj = 0;
  for (size_t k = 0; k < b->tr->nev; k++) {
    const struct hpm_event *e = &b->tr->ev[b->idx[k]];
    if (t == NONE32 || e->thread != p->th[t].number) {
      t = t == NONE32 ? 0 : t + 1;
      p->th[t].first_op = p->nops;
      p->th[t].t_first = e->t;
    }
    struct pthread_info *ti = &p->th[t];
    struct rop op;
    ti->t_last = e->t;
    p->kind_count[e->kind]++;
    if (e->kind == HPM_THREAD_START && !ti->tid) ti->tid = e->arg;
    if (e->kind == HPM_THREAD_START || e->kind == HPM_THREAD_EXIT) continue;
    if (event_op(b, p, e, t, &next_obj, &op)) continue;
    if (op.obj != NONE32) {
      if (op.size > p->max_size) p->max_size = op.size;
      ti->allocs++;
      ti->bytes += op.size > UINT64_MAX - ti->bytes ? 0 : op.size;
    }
    if (op.ref != NONE32) ti->frees++;
    p->ops[p->nops++] = op;
    ti->nops++;
  }
  p->nthreads = b->nthreads;
}

/* Scratch state of the serial scheduler.  */
struct sched {
  size_t *pos;      /* per thread: its ops already placed */
  uint32_t *waiter; /* per object: the thread parked until it exists, or NONE32 */
  uint8_t *done;    /* per object: created */
  struct heap h;    /* threads ready to run, by the time of their next op */
};

static void sched_free(struct sched *sc) {
  free(sc->pos);
  free(sc->waiter);
  free(sc->done);
  free(sc->h.a);
}

static int sched_init(struct sched *sc, const struct prep *p) {
  size_t nth = p->nthreads ? p->nthreads : 1, nobj = p->nobj ? p->nobj : 1;
  sc->pos = calloc(nth, sizeof *sc->pos);
  sc->waiter = malloc(nobj * sizeof *sc->waiter);
  sc->done = calloc(nobj, 1);
  sc->h = (struct heap){ malloc(nth * sizeof(uint32_t)), 0, p, sc->pos };
  if (!sc->pos || !sc->waiter || !sc->done || !sc->h.a) return -1;
  memset(sc->waiter, 0xFF, nobj * sizeof *sc->waiter);
  return 0;
}

/* Place ops into P->serial by time, each after the op that creates the
   object it frees; a thread whose next op waits for an object not yet
   created parks on that object.  A free that precedes its allocation in
   the same thread (impossible in a real trace) is dropped and counted
   (P->bad_order).  Returns how many ops were placed: fewer than P->nops
   when the rest wait on each other (a cycle).  */
static size_t schedule(struct prep *p, struct sched *sc) {
  size_t ns = 0;
  for (uint32_t i = 0; i < p->nthreads; i++)
    if (p->th[i].nops) heap_push(&sc->h, i);
  while (sc->h.n) {
    uint32_t th = heap_pop(&sc->h);
    struct rop *op = &p->ops[p->th[th].first_op + sc->pos[th]];
    if (op->ref != NONE32 && !sc->done[op->ref]) {
      if (op->dep != NONE32) {
        sc->waiter[op->ref] = th;
        continue;
      }
      p->bad_order++;
      op->ref = NONE32;
      if (op->obj == NONE32) op->kind = HPM_THREAD_EXIT; /* a no-op */
    }
    p->serial[ns++] = (size_t)(op - p->ops);
    if (op->obj != NONE32) {
      sc->done[op->obj] = 1;
      if (sc->waiter[op->obj] != NONE32) {
        heap_push(&sc->h, sc->waiter[op->obj]);
        sc->waiter[op->obj] = NONE32;
      }
    }
    if (++sc->pos[th] < p->th[th].nops) heap_push(&sc->h, th);
  }
  return ns;
}

/* The error for a schedule that placed NS of P's ops: names one stuck
   thread and the object it waits for.  Messages: truncation is harmless.  */
static int cycle_error(const struct prep *p, const size_t *pos, size_t ns, char *err, size_t errlen) {
  uint32_t th = 0;
  while (th < p->nthreads && pos[th] == p->th[th].nops) th++;
  const struct rop *op = th < p->nthreads ? &p->ops[p->th[th].first_op + pos[th]] : NULL;
  if (op && op->ref < p->nobj)
    (void)snprintf(err, errlen,
                   "cycle in cross-thread ordering: %zu of %zu operations cannot run "
                   "(thread %u waits for object %u of thread %u, which waits too)",
                   p->nops - ns, p->nops, p->th[th].number, op->ref, p->th[p->obj[op->ref].alloc_thread].number);
  else
    (void)snprintf(err, errlen, "cycle in cross-thread ordering: %zu of %zu operations cannot run", p->nops - ns,
                   p->nops);
  return -1;
}

/* Pass 4, serial order and cycle detection: fills P->serial (see
   schedule).  Needs pass 3's ops.  Returns 0, or -1 with a message in ERR
   (out of memory, or a cycle in cross-thread ordering).  */
static int serial_order(const struct hpm_trace *tr, struct prep *p, char *err, size_t errlen) {
  struct sched sc = { 0 };
  int rc = 0;
  p->serial = malloc((p->nops ? p->nops : 1) * sizeof *p->serial);
  if (!p->serial || sched_init(&sc, p))
    rc = oom(tr, err, errlen);
  else {
    size_t ns = schedule(p, &sc);
    if (ns != p->nops) rc = cycle_error(p, sc.pos, ns, err, errlen);
  }
  sched_free(&sc);
  return rc;
}

/* Pass 5, peak: live bytes along the serial order; their maximum
   (P->peak_live), where it is reached (P->peak_serial, P->peak_t) and the
   last op's time (P->end_t).  Needs pass 4's order.  */
static void find_peak(struct prep *p) {
  uint64_t live = 0;
  for (size_t k = 0; k < p->nops; k++) {
    const struct rop *op = &p->ops[p->serial[k]];
    if (op->ref != NONE32) live -= p->obj[op->ref].size > live ? live : p->obj[op->ref].size;
    if (op->obj != NONE32) {
      uint64_t s = p->obj[op->obj].size;
      live = s > UINT64_MAX - live ? UINT64_MAX : live + s;
      if (live > p->peak_live) {
        p->peak_live = live;
        p->peak_serial = k;
        p->peak_t = op->t;
      }
    }
    if (op->t > p->end_t) p->end_t = op->t;
  }
}

/* What the passes ignored, one warning a kind.  */
static void warn_ignored(const struct prep *p, const char *name) {
  if (p->unknown_frees)
    warn(name, "%llu frees of objects the trace never allocated (ignored)", (unsigned long long)p->unknown_frees);
  if (p->double_frees) warn(name, "%llu double frees (ignored)", (unsigned long long)p->double_frees);
  if (p->dup_ids) warn(name, "%llu object ids reused", (unsigned long long)p->dup_ids);
  if (p->bad_order)
    warn(name, "%llu frees before their allocation in the same thread (ignored)", (unsigned long long)p->bad_order);
}

int prep_build(const struct hpm_trace *tr, struct prep *p, const char *name, char *err, size_t errlen) {
  struct builder b = { .tr = tr };
  memset(p, 0, sizeof *p);
  int rc = prep_tables(&b, p, err, errlen);
  if (rc == 0) {
    number_objects(&b, p);
    build_ops(&b, p);
  }
  free(b.idx);
  idmap_free(&b.ids);
  if (rc == 0) rc = serial_order(tr, p, err, errlen);
  if (rc) {
    prep_free(p);
    return -1;
  }
  find_peak(p);
  warn_ignored(p, name);
  return 0;
}

void prep_free(struct prep *p) {
  free(p->th);
  free(p->ops);
  free(p->obj);
  free(p->serial);
  memset(p, 0, sizeof *p);
}

int load_trace(const char *file, struct hpm_trace *tr, struct prep *p) {
  char err[512];
  progress("reading %s", file);
  if (hpm_trace_read_file(file, tr, err, sizeof err)) {
    progress_done();
    fprintf(stderr, "hpm: %s\n", err);
    return -1;
  }
  if (tr->warning[0]) fprintf(stderr, "hpm: warning: %s\n", tr->warning);
  if (p && prep_build(tr, p, file, err, sizeof err)) {
    progress_done();
    fprintf(stderr, "hpm: %s: %s\n", file, err);
    hpm_trace_free(tr);
    return -1;
  }
  progress_done();
  return 0;
}
