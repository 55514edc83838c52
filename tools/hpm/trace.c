/* SPDX-License-Identifier: MIT */
/* hpm trace format: encoder and reader (spec: tools/hpm/FORMAT.md).
   The encoding helpers are used by the recorder too: they allocate nothing
   and are async-signal-safe.  MIT licence.  */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ---------------------
   With SSE4.2 the crc32 instruction does 8 bytes at a time; otherwise a table.  */
static uint32_t crc_table[256];
static volatile int crc_ready;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
  __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_soft(uint32_t c, const unsigned char *b, size_t n) {
  if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) crc_init(); /* idempotent: racing threads write the same table */
  while (n--) c = crc_table[(c ^ *b++) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *b, size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
  }
  c = (uint32_t)c64;
  for (; n; n--) c = __builtin_ia32_crc32qi(c, *b++);
  return c;
}

static int have_sse42(void) {
  static int v = -1;
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  }
  return v;
}
#endif

static uint32_t crc_update(uint32_t c, const void *p, size_t n) {
#if defined(__x86_64__)
  if (have_sse42()) return crc_hw(c, p, n);
#endif
  return crc_soft(c, p, n);
}

uint32_t hpm_crc32(const void *p, size_t n) { return ~crc_update(0xFFFFFFFFu, p, n); }

uint32_t hpm_chunk_crc(const unsigned char *chunk, uint32_t payload_len) {
  uint32_t c = crc_update(0xFFFFFFFFu, chunk, 32);
  return ~crc_update(c, chunk + HPM_CHUNK_HDR, payload_len);
}

static const char *const kind_names[HPM_NKINDS] = {
  "malloc",         "calloc",        "realloc", "reallocarray", "free",         "free_sized",  "memalign",
  "posix_memalign", "aligned_alloc", "valloc",  "pvalloc",      "thread_start", "thread_exit",
};

const char *hpm_kind_name(unsigned kind) { return kind < HPM_NKINDS ? kind_names[kind] : "?"; }

/* --- encoding ---------------------------------------------------------------- */
static unsigned char *put_ref(unsigned char *p, uint64_t ref, uint64_t last_id) {
  if (ref <= HPM_REF_UNKNOWN) return hpm_put_varint(p, ref);
  return hpm_put_varint(p, hpm_zigzag((int64_t)(ref - last_id)) + 2);
}

unsigned char *hpm_encode_event(unsigned char *p, const struct hpm_event *e, uint64_t *last_t, uint64_t *last_id) {
  unsigned kind = e->kind;
  unsigned flags = e->flags & (HPM_F_FAIL | HPM_F_OLD_FREED);
  int has_id = hpm_kind_allocates(kind) && !(flags & HPM_F_FAIL);
  if (has_id && e->id == *last_id + 1) flags |= HPM_F_IMPLICIT;
  if (e->stack && hpm_kind_allocates(kind)) flags |= HPM_F_STACK;
  unsigned char *op = p++;
  *op = (unsigned char)(kind | flags);
  uint64_t dt = e->t >= *last_t ? e->t - *last_t : 0;
  p = hpm_put_varint(p, dt);
  *last_t += dt;
  switch (kind) {
  case HPM_MALLOC:
  case HPM_VALLOC:
  case HPM_PVALLOC: p = hpm_put_varint(p, e->size); break;
  case HPM_CALLOC:
    p = hpm_put_varint(p, e->arg);
    p = hpm_put_varint(p, e->size);
    break;
  case HPM_REALLOC:
    p = put_ref(p, e->ref, *last_id);
    p = hpm_put_varint(p, e->size);
    p = hpm_put_varint(p, e->dur);
    break;
  case HPM_REALLOCARRAY:
    p = put_ref(p, e->ref, *last_id);
    p = hpm_put_varint(p, e->arg);
    p = hpm_put_varint(p, e->size);
    p = hpm_put_varint(p, e->dur);
    break;
  case HPM_FREE: p = put_ref(p, e->ref, *last_id); break;
  case HPM_FREE_SIZED:
    p = put_ref(p, e->ref, *last_id);
    p = hpm_put_varint(p, e->size);
    break;
  case HPM_MEMALIGN:
  case HPM_POSIX_MEMALIGN:
  case HPM_ALIGNED_ALLOC:
    p = hpm_put_varint(p, e->arg);
    p = hpm_put_varint(p, e->size);
    break;
  case HPM_THREAD_START:
    p = hpm_put_varint(p, e->arg);
    p = hpm_put_varint(p, e->arg2);
    break;
  default: break;
  }
  if (has_id) {
    if (!(flags & HPM_F_IMPLICIT)) p = hpm_put_varint(p, hpm_zigzag((int64_t)(e->id - (*last_id + 1))));
    *last_id = e->id;
  }
  if (flags & HPM_F_STACK) p = hpm_put_varint(p, e->stack);
  return p;
}

unsigned char *hpm_encode_stack(unsigned char *p, uint64_t id, const uint64_t *frames, uint32_t n) {
  uint64_t prev = 0;
  p = hpm_put_varint(p, id);
  p = hpm_put_varint(p, n);
  for (uint32_t i = 0; i < n; i++) {
    p = hpm_put_varint(p, hpm_zigzag((int64_t)(frames[i] - prev)));
    prev = frames[i];
  }
  return p;
}

unsigned char *hpm_encode_header(unsigned char *p, const struct hpm_header *h) {
  memcpy(p, HPM_MAGIC, 8);
  p[8] = (unsigned char)(h->version ? h->version : HPM_VERSION);
  p[9] = 0;
  p[10] = (unsigned char)h->flags;
  p[11] = (unsigned char)(h->flags >> 8);
  unsigned char *body = p + HPM_FILE_HDR, *q = body;
  q = hpm_put_varint(q, h->page_size);
  q = hpm_put_varint(q, h->thp_mode);
  q = hpm_put_varint(q, h->pid);
  q = hpm_put_varint(q, h->ppid);
  q = hpm_put_varint(q, h->clock_id);
  q = hpm_put_varint(q, h->start_ns);
  q = hpm_put_varint(q, h->start_realtime_ns);
  q = hpm_put_varint(q, h->cmdline_len);
  memcpy(q, h->cmdline, h->cmdline_len);
  q += h->cmdline_len;
  if (h->version == HPM_VERSION_STACKS) {
    q = hpm_put_varint(q, h->stack_depth);
    q = hpm_put_varint(q, h->unwinder);
  }
  uint32_t blen = (uint32_t)(q - body);
  hpm_put_u32(p + 12, blen);
  hpm_put_u32(q, hpm_crc32(body, blen));
  return q + 4;
}

static void chunk_header(unsigned char *p, const char *magic, uint32_t thread, uint32_t nevents, uint64_t base_ns,
                         uint64_t base_id, uint32_t len) {
  memcpy(p, magic, 4); // NOLINT(bugprone-not-null-terminated-result): a 4-byte binary magic, not a string
  hpm_put_u32(p + 4, len);
  hpm_put_u32(p + 8, thread);
  hpm_put_u32(p + 12, nevents);
  hpm_put_u64(p + 16, base_ns);
  hpm_put_u64(p + 24, base_id);
  hpm_put_u32(p + 32, hpm_chunk_crc(p, len));
}

void hpm_encode_chunk_header(unsigned char *p, uint32_t thread, uint32_t nevents, uint64_t base_ns, uint64_t base_id,
                             uint32_t len) {
  chunk_header(p, HPM_CHUNK_MAGIC, thread, nevents, base_ns, base_id, len);
}

void hpm_encode_other_header(unsigned char *p, const char *magic, uint32_t thread, uint32_t n, uint32_t len) {
  chunk_header(p, magic, thread, n, 0, 0, len);
}

/* --- reading ----------------------------------------------------------------- */
struct cursor {
  const unsigned char *p, *end;
  int stacks; /* version 2: the STACK flag is allowed */
};

static int get_varint(struct cursor *c, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (c->p >= c->end) return -1;
    unsigned char b = *c->p++;
    if (shift == 63 && b > 1) return -1; /* more than 64 bits */
    r |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

static int fail(char *err, size_t errlen, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, uint64_t off, const char *fmt, ...) {
  if (err && errlen) {
    int n = snprintf(err, errlen, "byte offset %llu: ", (unsigned long long)off);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen)
      (void)vsnprintf(err + n, errlen - (size_t)n, fmt, ap); /* a message: truncation is harmless */
    va_end(ap);
  }
  return -1;
}

static int read_header(const unsigned char *b, size_t len, struct hpm_header *h, char *err, size_t errlen) {
  if (len == 0) return fail(err, errlen, 0, "empty file");
  if (len < HPM_FILE_HDR || memcmp(b, HPM_MAGIC, 8) != 0) return fail(err, errlen, 0, "not an hpm trace (bad magic)");
  if ((b[8] != HPM_VERSION && b[8] != HPM_VERSION_STACKS) || b[9] != 0)
    return fail(err, errlen, 8, "unsupported trace version %u", b[8] | b[9] << 8);
  uint32_t blen = hpm_get_u32(b + 12);
  if (blen > HPM_MAX_HDR_BODY || (uint64_t)blen + HPM_FILE_HDR + 4 > len)
    return fail(err, errlen, 12, "header length %u exceeds the file (%zu bytes)", blen, len);
  const unsigned char *body = b + HPM_FILE_HDR;
  if (hpm_get_u32(body + blen) != hpm_crc32(body, blen))
    return fail(err, errlen, HPM_FILE_HDR + blen, "header checksum mismatch");
  struct cursor c = { body, body + blen, 0 };
  uint64_t cl;
  h->version = b[8];
  h->flags = (uint32_t)(b[10] | b[11] << 8);
  if (get_varint(&c, &h->page_size) || get_varint(&c, &h->thp_mode) || get_varint(&c, &h->pid) ||
      get_varint(&c, &h->ppid) || get_varint(&c, &h->clock_id) || get_varint(&c, &h->start_ns) ||
      get_varint(&c, &h->start_realtime_ns) || get_varint(&c, &cl))
    return fail(err, errlen, (uint64_t)(c.p - b), "malformed header field");
  if (cl > (uint64_t)(c.end - c.p))
    return fail(err, errlen, (uint64_t)(c.p - b), "command line length %llu exceeds the header",
                (unsigned long long)cl);
  h->cmdline = malloc(cl + 1);
  if (!h->cmdline) return fail(err, errlen, (uint64_t)(c.p - b), "out of memory");
  memcpy(h->cmdline, c.p, cl);
  h->cmdline[cl] = 0;
  h->cmdline_len = cl;
  c.p += cl;
  if (h->version == HPM_VERSION_STACKS && (get_varint(&c, &h->stack_depth) || get_varint(&c, &h->unwinder))) {
    free(h->cmdline);
    h->cmdline = NULL;
    return fail(err, errlen, (uint64_t)(c.p - b), "malformed stack fields in the header");
  }
  h->size = HPM_FILE_HDR + blen + 4;
  return 0;
}

static int get_ref(struct cursor *c, uint64_t last_id, uint64_t *ref) {
  uint64_t v;
  if (get_varint(c, &v)) return -1;
  *ref = v <= HPM_REF_UNKNOWN ? v : last_id + (uint64_t)hpm_unzigzag(v - 2);
  return 0;
}

/* The fields of E that follow its time, by E->kind, from C; LAST_ID: the
   chunk's previous id, against which references are coded.  Returns 0, or
   nonzero when the payload ends inside them or a number is overlong.  */
static int decode_fields(struct cursor *c, uint64_t last_id, struct hpm_event *e) {
  switch (e->kind) {
  case HPM_MALLOC:
  case HPM_VALLOC:
  case HPM_PVALLOC: return get_varint(c, &e->size);
  case HPM_CALLOC: return get_varint(c, &e->arg) || get_varint(c, &e->size);
  case HPM_REALLOC: return get_ref(c, last_id, &e->ref) || get_varint(c, &e->size) || get_varint(c, &e->dur);
  case HPM_REALLOCARRAY:
    return get_ref(c, last_id, &e->ref) || get_varint(c, &e->arg) || get_varint(c, &e->size) || get_varint(c, &e->dur);
  case HPM_FREE: return get_ref(c, last_id, &e->ref);
  case HPM_FREE_SIZED: return get_ref(c, last_id, &e->ref) || get_varint(c, &e->size);
  case HPM_MEMALIGN:
  case HPM_POSIX_MEMALIGN:
  case HPM_ALIGNED_ALLOC: return get_varint(c, &e->arg) || get_varint(c, &e->size);
  case HPM_THREAD_START: {
    uint64_t parent = 0;
    if (get_varint(c, &e->arg) || get_varint(c, &parent)) return -1;
    e->arg2 = (uint16_t)(parent > 0xFFFF ? 0xFFFF : parent);
    return 0;
  }
  default: return 0;
  }
}

/* Are the flag bits of OP (an event's first byte) valid for its kind?  */
static int valid_flags(unsigned op, int stacks) {
  unsigned kind = op & 0x0F;
  int allocates = hpm_kind_allocates(kind), is_realloc = kind == HPM_REALLOC || kind == HPM_REALLOCARRAY;
  return !(((op & HPM_F_STACK) && !(stacks && allocates)) ||
           ((op & HPM_F_IMPLICIT) && (!allocates || (op & HPM_F_FAIL))) || ((op & HPM_F_FAIL) && !allocates) ||
           ((op & HPM_F_OLD_FREED) && !(is_realloc && (op & HPM_F_FAIL))));
}

/* One event of chunk CI (of FILE) from C into E; *T and *LAST_ID: the
   chunk's running time and id, advanced.  Returns 0, or -1 with a message
   naming the event's offset in ERR.  */
static int decode_event(const unsigned char *file, const struct hpm_chunk_info *ci, struct cursor *c, uint64_t *t,
                        uint64_t *last_id, struct hpm_event *e, char *err, size_t errlen) {
  uint64_t off = (uint64_t)(c->p - file), dt;
  memset(e, 0, sizeof *e);
  unsigned op = *c->p++;
  e->kind = op & 0x0F;
  e->flags = op & 0xF0;
  e->thread = ci->thread;
  if (e->kind >= HPM_NKINDS) return fail(err, errlen, off, "unknown event kind %u", e->kind);
  if (!valid_flags(op, c->stacks))
    return fail(err, errlen, off, "invalid flags 0x%02x for %s", op & 0xF0, hpm_kind_name(e->kind));
  if (get_varint(c, &dt) || dt > (UINT64_MAX >> 2) - *t) return fail(err, errlen, off, "bad time delta");
  *t += dt;
  e->t = *t;
  if (decode_fields(c, *last_id, e))
    return fail(err, errlen, off, "truncated or overlong %s event", hpm_kind_name(e->kind));
  if ((e->kind == HPM_REALLOC || e->kind == HPM_REALLOCARRAY) && e->dur > e->t)
    return fail(err, errlen, off, "realloc duration exceeds its time");
  if (hpm_kind_allocates(e->kind) && !(op & HPM_F_FAIL)) {
    uint64_t id = *last_id + 1, d;
    if (!(op & HPM_F_IMPLICIT)) {
      if (get_varint(c, &d)) return fail(err, errlen, off, "truncated object id");
      id += (uint64_t)hpm_unzigzag(d);
    }
    if (id <= HPM_REF_UNKNOWN) return fail(err, errlen, off, "invalid object id %llu", (unsigned long long)id);
    e->id = id;
    *last_id = id;
  }
  if ((op & HPM_F_STACK) && (get_varint(c, &e->stack) || e->stack == 0))
    return fail(err, errlen, off, "truncated or zero stack id");
  return 0;
}

/* Decode the payload of chunk CI (of FILE) into EV (room for its
   nevents).  Returns 0, or -1 with a message in ERR.  */
static int decode_chunk(const unsigned char *file, const struct hpm_chunk_info *ci, int stacks, struct hpm_event *ev,
                        char *err, size_t errlen) {
  const unsigned char *pl = file + ci->offset + HPM_CHUNK_HDR;
  struct cursor c = { pl, pl + ci->payload_len, stacks };
  uint64_t t = ci->base_ns, last_id = ci->base_id;
  if (t > (UINT64_MAX >> 2))
    return fail(err, errlen, ci->offset, "chunk base time %llu past 2^62 ns", (unsigned long long)t);
  for (uint32_t i = 0; i < ci->nevents; i++) {
    if (c.p >= c.end)
      return fail(err, errlen, (uint64_t)(c.p - file), "chunk ends after %u of %u events", i, ci->nevents);
    if (decode_event(file, ci, &c, &t, &last_id, &ev[i], err, errlen)) return -1;
  }
  if (c.p != c.end)
    return fail(err, errlen, (uint64_t)(c.p - file), "%zu stray bytes after the chunk's %u events",
                (size_t)(c.end - c.p), ci->nevents);
  return 0;
}

/* Append the chunk whose header is H, at file offset OFF, to TR->chunks
   (*CAP entries allocated); its events will start at index NEV.  Returns
   0, or -1 with a message in ERR.  */
static int add_chunk(struct hpm_trace *tr, size_t *cap, const unsigned char *h, uint64_t off, size_t nev, char *err,
                     size_t errlen) {
  if (tr->nchunks == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    void *nc = realloc(tr->chunks, ncap * sizeof *tr->chunks);
    if (!nc) return fail(err, errlen, off, "out of memory");
    tr->chunks = nc;
    *cap = ncap;
  }
  struct hpm_chunk_info *ci = &tr->chunks[tr->nchunks++];
  memset(ci, 0, sizeof *ci);
  ci->offset = off;
  ci->payload_len = hpm_get_u32(h + 4);
  ci->thread = hpm_get_u32(h + 8);
  ci->nevents = hpm_get_u32(h + 12);
  ci->base_ns = hpm_get_u64(h + 16);
  ci->base_id = hpm_get_u64(h + 24);
  ci->first_event = nev;
  ci->kind = !memcmp(h, HPM_STACK_MAGIC, 4)  ? HPM_CHUNK_STACKS
             : !memcmp(h, HPM_MAPS_MAGIC, 4) ? HPM_CHUNK_MAPS
                                             : HPM_CHUNK_EVENTS;
  if (ci->kind != HPM_CHUNK_EVENTS) {
    ci->nitems = ci->nevents;
    ci->nevents = 0;
  }
  return 0;
}

/* The kind of chunk whose magic is at H (version 2 has three), or -1.  */
static int chunk_kind(const unsigned char *h, const struct hpm_header *hdr) {
  if (!memcmp(h, HPM_CHUNK_MAGIC, 4)) return HPM_CHUNK_EVENTS;
  if (hdr->version != HPM_VERSION_STACKS) return -1;
  if (!memcmp(h, HPM_STACK_MAGIC, 4)) return HPM_CHUNK_STACKS;
  if (!memcmp(h, HPM_MAPS_MAGIC, 4)) return HPM_CHUNK_MAPS;
  return -1;
}

/* Pass 1 of the reader: the chunk headers of the LEN bytes at B after the
   file header, checked (magic, lengths, thread, checksum), into
   TR->chunks; a partial chunk at the end marks TR truncated.  Returns the
   number of events, or -1 with a message in ERR.  */
static int64_t scan_chunks(const unsigned char *b, size_t len, struct hpm_trace *tr, char *err, size_t errlen) {
  size_t cap = 0, nev = 0;
  uint64_t off = tr->hdr.size;
  while (off < len) {
    const unsigned char *h = b + off;
    if (len - off < HPM_CHUNK_HDR) break; /* truncated */
    int kind = chunk_kind(h, &tr->hdr);
    if (kind < 0) return fail(err, errlen, off, "bad chunk magic");
    uint32_t plen = hpm_get_u32(h + 4), thread = hpm_get_u32(h + 8), n = hpm_get_u32(h + 12);
    if (plen > HPM_MAX_PAYLOAD) return fail(err, errlen, off + 4, "chunk payload length %u too large", plen);
    if ((uint64_t)plen > len - off - HPM_CHUNK_HDR) break; /* truncated */
    if (thread == 0 && kind != HPM_CHUNK_MAPS) return fail(err, errlen, off + 8, "chunk of thread 0");
    if (thread != 0 && kind == HPM_CHUNK_MAPS) return fail(err, errlen, off + 8, "maps chunk of thread %u", thread);
    if ((uint64_t)n * 2 > plen) return fail(err, errlen, off + 12, "event count %u cannot fit in %u bytes", n, plen);
    if (kind == HPM_CHUNK_MAPS && n) return fail(err, errlen, off + 12, "maps chunk with a count of %u", n);
    if (kind != HPM_CHUNK_EVENTS && (hpm_get_u64(h + 16) || hpm_get_u64(h + 24)))
      return fail(err, errlen, off + 16, "stack or maps chunk with a base time or id");
    if (hpm_get_u32(h + 32) != hpm_chunk_crc(h, plen)) return fail(err, errlen, off, "chunk checksum mismatch");
    if (add_chunk(tr, &cap, h, off, nev, err, errlen)) return -1;
    if (kind == HPM_CHUNK_EVENTS) nev += n;
    off += HPM_CHUNK_HDR + (uint64_t)plen;
  }
  if (off < len) {
    tr->truncated = 1;
    tr->truncated_at = off;
    (void)snprintf(tr->warning, sizeof tr->warning, /* a message: truncation is harmless */
                   "byte offset %llu: truncated trace: %llu trailing bytes of a partial chunk ignored",
                   (unsigned long long)off, (unsigned long long)(len - off));
  }
  return (int64_t)nev;
}

/* The stacks of chunk CI (of FILE) appended to TR->stacks and TR->frames
   (room made by the caller: at most as many frames as payload bytes).
   Returns 0, or -1 with a message in ERR.  */
static int decode_stacks(const unsigned char *file, struct hpm_chunk_info *ci, struct hpm_trace *tr, char *err,
                         size_t errlen) {
  const unsigned char *pl = file + ci->offset + HPM_CHUNK_HDR;
  struct cursor c = { pl, pl + ci->payload_len, 1 };
  ci->first_item = tr->nstacks;
  for (uint32_t i = 0; i < ci->nitems; i++) {
    uint64_t off = (uint64_t)(c.p - file), id, n, prev = 0, d;
    if (get_varint(&c, &id) || get_varint(&c, &n)) return fail(err, errlen, off, "truncated stack");
    if (id == 0 || n == 0 || n > HPM_MAX_FRAMES || n > (uint64_t)(c.end - c.p))
      return fail(err, errlen, off, "bad stack (id %llu, %llu frames)", (unsigned long long)id, (unsigned long long)n);
    struct hpm_stack *st = &tr->stacks[tr->nstacks++];
    st->id = id;
    st->first = tr->nframes;
    st->nframes = (uint32_t)n;
    for (uint64_t k = 0; k < n; k++) {
      if (get_varint(&c, &d)) return fail(err, errlen, off, "truncated frame of stack %llu", (unsigned long long)id);
      prev += (uint64_t)hpm_unzigzag(d);
      tr->frames[tr->nframes++] = prev;
    }
  }
  if (c.p != c.end)
    return fail(err, errlen, (uint64_t)(c.p - file), "%zu stray bytes after the chunk's %u stacks",
                (size_t)(c.end - c.p), ci->nitems);
  return 0;
}

static int cmp_stack_id(const void *a, const void *b, void *ctx) {
  const struct hpm_stack *s = ctx;
  uint64_t x = s[*(const size_t *)a].id, y = s[*(const size_t *)b].id;
  if (x != y) return x < y ? -1 : 1;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1; /* the first definition first */
}

const struct hpm_stack *hpm_trace_stack(const struct hpm_trace *tr, uint64_t id) {
  size_t lo = 0, hi = tr->nstacks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tr->stacks[tr->stack_by_id[mid]].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return id && lo < tr->nstacks && tr->stacks[tr->stack_by_id[lo]].id == id ? &tr->stacks[tr->stack_by_id[lo]] : NULL;
}

/* Pass 3: the stack and maps chunks into TR's tables.  Allocation is
   bounded by the payloads' lengths.  Returns 0, or -1 with a message.  */
static int read_stacks(const unsigned char *b, struct hpm_trace *tr, char *err, size_t errlen) {
  size_t nst = 0, bytes = 0, text = 0;
  for (size_t i = 0; i < tr->nchunks; i++) {
    const struct hpm_chunk_info *ci = &tr->chunks[i];
    if (ci->kind == HPM_CHUNK_STACKS) {
      nst += ci->nitems;
      bytes += ci->payload_len;
    } else if (ci->kind == HPM_CHUNK_MAPS)
      text += ci->payload_len;
  }
  if (nst == 0 && text == 0) return 0;
  tr->stacks = malloc((nst ? nst : 1) * sizeof *tr->stacks);
  tr->stack_by_id = malloc((nst ? nst : 1) * sizeof *tr->stack_by_id);
  tr->frames = malloc((bytes ? bytes : 1) * sizeof *tr->frames);
  tr->maps = malloc(text + 1);
  if (!tr->stacks || !tr->stack_by_id || !tr->frames || !tr->maps)
    return fail(err, errlen, tr->hdr.size, "out of memory for %zu stacks", nst);
  for (size_t i = 0; i < tr->nchunks; i++) {
    struct hpm_chunk_info *ci = &tr->chunks[i];
    if (ci->kind == HPM_CHUNK_STACKS && decode_stacks(b, ci, tr, err, errlen)) return -1;
    if (ci->kind == HPM_CHUNK_MAPS) {
      ci->first_item = tr->maps_len;
      memcpy(tr->maps + tr->maps_len, b + ci->offset + HPM_CHUNK_HDR, ci->payload_len);
      tr->maps_len += ci->payload_len;
    }
  }
  tr->maps[tr->maps_len] = 0;
  for (size_t i = 0; i < tr->nstacks; i++) tr->stack_by_id[i] = i;
  qsort_r(tr->stack_by_id, tr->nstacks, sizeof *tr->stack_by_id, cmp_stack_id, tr->stacks);
  return 0;
}

int hpm_trace_read_buffer(const void *buf, size_t len, struct hpm_trace *tr, char *err, size_t errlen) {
  const unsigned char *b = buf;
  memset(tr, 0, sizeof *tr);
  if (err && errlen) err[0] = 0;
  if (read_header(b, len, &tr->hdr, err, errlen)) return -1;
  int64_t n = scan_chunks(b, len, tr, err, errlen);
  if (n < 0) goto bad;
  /* Pass 2: events.  nev <= len / 2, so this allocation is bounded.  */
  size_t nev = (size_t)n;
  tr->ev = malloc((nev ? nev : 1) * sizeof *tr->ev);
  if (!tr->ev) {
    fail(err, errlen, tr->truncated ? tr->truncated_at : len, "out of memory for %zu events", nev);
    goto bad;
  }
  int stacks = tr->hdr.version == HPM_VERSION_STACKS;
  for (size_t i = 0; i < tr->nchunks; i++)
    if (tr->chunks[i].kind == HPM_CHUNK_EVENTS &&
        decode_chunk(b, &tr->chunks[i], stacks, tr->ev + tr->chunks[i].first_event, err, errlen))
      goto bad;
  tr->nev = nev;
  if (read_stacks(b, tr, err, errlen)) goto bad;
  return 0;
bad:
  hpm_trace_free(tr);
  return -1;
}

int hpm_trace_read_file(const char *path, struct hpm_trace *tr, char *err, size_t errlen) {
  char msg[300];
  memset(tr, 0, sizeof *tr);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    /* Messages here: truncation is harmless.  */
    (void)snprintf(err, errlen, "%s: %s", path, strerror(errno));
    if (fd >= 0) (void)close(fd); /* opened for reading */
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    (void)snprintf(err, errlen, "%s: not a regular file", path);
    (void)close(fd);
    return -1;
  }
  size_t len = (size_t)st.st_size;
  const void *m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : "";
  (void)close(fd); /* the mapping stays */
  if (m == MAP_FAILED) {
    (void)snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
    return -1;
  }
  int rc = hpm_trace_read_buffer(m, len, tr, msg, sizeof msg);
  if (len) munmap((void *)m, len);
  if (rc)
    (void)snprintf(err, errlen, "%s: %s", path, msg);
  else if (tr->warning[0]) {
    char w[sizeof tr->warning];
    memcpy(w, tr->warning, sizeof w);
    int n = snprintf(tr->warning, sizeof tr->warning, "%.200s: ", path);
    if (n > 0 && (size_t)n < sizeof tr->warning)
      (void)snprintf(tr->warning + n, sizeof tr->warning - (size_t)n, "%s", w);
  }
  return rc;
}

void hpm_trace_free(struct hpm_trace *tr) {
  free(tr->hdr.cmdline);
  free(tr->ev);
  free(tr->chunks);
  free(tr->stacks);
  free(tr->stack_by_id);
  free(tr->frames);
  free(tr->maps);
  memset(tr, 0, sizeof *tr);
}

/* Chunk CI of TR (a stack or maps chunk) encoded at P; returns the end.  */
static unsigned char *encode_other(const struct hpm_trace *tr, const struct hpm_chunk_info *ci, unsigned char *p) {
  unsigned char *q = p + HPM_CHUNK_HDR;
  if (ci->kind == HPM_CHUNK_MAPS) {
    memcpy(q, tr->maps + ci->first_item, ci->payload_len);
    q += ci->payload_len;
  } else
    for (size_t k = 0; k < ci->nitems; k++) {
      const struct hpm_stack *st = &tr->stacks[ci->first_item + k];
      q = hpm_encode_stack(q, st->id, tr->frames + st->first, st->nframes);
    }
  hpm_encode_other_header(p, ci->kind == HPM_CHUNK_MAPS ? HPM_MAPS_MAGIC : HPM_STACK_MAGIC, ci->thread, ci->nitems,
                          (uint32_t)(q - p - HPM_CHUNK_HDR));
  return q;
}

int hpm_trace_encode(const struct hpm_trace *tr, unsigned char **out, size_t *outlen) {
  size_t cap = HPM_FILE_HDR + 120 + tr->hdr.cmdline_len + 4;
  for (size_t i = 0; i < tr->nchunks; i++)
    cap += HPM_CHUNK_HDR + (size_t)tr->chunks[i].nevents * HPM_MAX_EVENT + tr->chunks[i].payload_len;
  unsigned char *buf = malloc(cap), *p;
  if (!buf) return -1;
  p = hpm_encode_header(buf, &tr->hdr);
  for (size_t i = 0; i < tr->nchunks; i++) {
    const struct hpm_chunk_info *ci = &tr->chunks[i];
    if (ci->kind != HPM_CHUNK_EVENTS) {
      p = encode_other(tr, ci, p);
      continue;
    }
    unsigned char *h = p, *q = p + HPM_CHUNK_HDR;
    uint64_t t = ci->base_ns, id = ci->base_id;
    for (uint32_t k = 0; k < ci->nevents; k++) q = hpm_encode_event(q, &tr->ev[ci->first_event + k], &t, &id);
    hpm_encode_chunk_header(h, ci->thread, ci->nevents, ci->base_ns, ci->base_id, (uint32_t)(q - h - HPM_CHUNK_HDR));
    p = q;
  }
  *out = buf;
  *outlen = (size_t)(p - buf);
  return 0;
}
