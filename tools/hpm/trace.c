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
  return p;
}

unsigned char *hpm_encode_header(unsigned char *p, const struct hpm_header *h) {
  memcpy(p, HPM_MAGIC, 8);
  p[8] = HPM_VERSION;
  p[9] = 0;
  p[10] = 0;
  p[11] = 0;
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
  uint32_t blen = (uint32_t)(q - body);
  hpm_put_u32(p + 12, blen);
  hpm_put_u32(q, hpm_crc32(body, blen));
  return q + 4;
}

void hpm_encode_chunk_header(unsigned char *p, uint32_t thread, uint32_t nevents, uint64_t base_ns, uint64_t base_id,
                             uint32_t len) {
  memcpy(p, HPM_CHUNK_MAGIC, 4); // NOLINT(bugprone-not-null-terminated-result): a 4-byte binary magic, not a string
  hpm_put_u32(p + 4, len);
  hpm_put_u32(p + 8, thread);
  hpm_put_u32(p + 12, nevents);
  hpm_put_u64(p + 16, base_ns);
  hpm_put_u64(p + 24, base_id);
  hpm_put_u32(p + 32, hpm_chunk_crc(p, len));
}

/* --- reading ----------------------------------------------------------------- */
struct cursor {
  const unsigned char *p, *end;
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
  if (b[8] != HPM_VERSION || b[9] != 0) return fail(err, errlen, 8, "unsupported trace version %u", b[8] | b[9] << 8);
  uint32_t blen = hpm_get_u32(b + 12);
  if (blen > HPM_MAX_HDR_BODY || (uint64_t)blen + HPM_FILE_HDR + 4 > len)
    return fail(err, errlen, 12, "header length %u exceeds the file (%zu bytes)", blen, len);
  const unsigned char *body = b + HPM_FILE_HDR;
  if (hpm_get_u32(body + blen) != hpm_crc32(body, blen))
    return fail(err, errlen, HPM_FILE_HDR + blen, "header checksum mismatch");
  struct cursor c = { body, body + blen };
  uint64_t cl;
  h->version = b[8];
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
static int valid_flags(unsigned op) {
  unsigned kind = op & 0x0F;
  int allocates = hpm_kind_allocates(kind), is_realloc = kind == HPM_REALLOC || kind == HPM_REALLOCARRAY;
  return !((op & 0x80) || ((op & HPM_F_IMPLICIT) && (!allocates || (op & HPM_F_FAIL))) ||
           ((op & HPM_F_FAIL) && !allocates) || ((op & HPM_F_OLD_FREED) && !(is_realloc && (op & HPM_F_FAIL))));
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
  if (!valid_flags(op)) return fail(err, errlen, off, "invalid flags 0x%02x for %s", op & 0xF0, hpm_kind_name(e->kind));
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
  return 0;
}

/* Decode the payload of chunk CI (of FILE) into EV (room for its
   nevents).  Returns 0, or -1 with a message in ERR.  */
static int decode_chunk(const unsigned char *file, const struct hpm_chunk_info *ci, struct hpm_event *ev, char *err,
                        size_t errlen) {
  const unsigned char *pl = file + ci->offset + HPM_CHUNK_HDR;
  struct cursor c = { pl, pl + ci->payload_len };
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
  ci->offset = off;
  ci->payload_len = hpm_get_u32(h + 4);
  ci->thread = hpm_get_u32(h + 8);
  ci->nevents = hpm_get_u32(h + 12);
  ci->base_ns = hpm_get_u64(h + 16);
  ci->base_id = hpm_get_u64(h + 24);
  ci->first_event = nev;
  return 0;
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
    if (memcmp(h, HPM_CHUNK_MAGIC, 4) != 0) return fail(err, errlen, off, "bad chunk magic");
    uint32_t plen = hpm_get_u32(h + 4), thread = hpm_get_u32(h + 8), n = hpm_get_u32(h + 12);
    if (plen > HPM_MAX_PAYLOAD) return fail(err, errlen, off + 4, "chunk payload length %u too large", plen);
    if ((uint64_t)plen > len - off - HPM_CHUNK_HDR) break; /* truncated */
    if (thread == 0) return fail(err, errlen, off + 8, "chunk of thread 0");
    if ((uint64_t)n * 2 > plen) return fail(err, errlen, off + 12, "event count %u cannot fit in %u bytes", n, plen);
    if (hpm_get_u32(h + 32) != hpm_chunk_crc(h, plen)) return fail(err, errlen, off, "chunk checksum mismatch");
    if (add_chunk(tr, &cap, h, off, nev, err, errlen)) return -1;
    nev += n;
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
  for (size_t i = 0; i < tr->nchunks; i++)
    if (decode_chunk(b, &tr->chunks[i], tr->ev + tr->chunks[i].first_event, err, errlen)) goto bad;
  tr->nev = nev;
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
  memset(tr, 0, sizeof *tr);
}

int hpm_trace_encode(const struct hpm_trace *tr, unsigned char **out, size_t *outlen) {
  size_t cap = HPM_FILE_HDR + 100 + tr->hdr.cmdline_len + 4;
  for (size_t i = 0; i < tr->nchunks; i++) cap += HPM_CHUNK_HDR + (size_t)tr->chunks[i].nevents * HPM_MAX_EVENT;
  unsigned char *buf = malloc(cap), *p;
  if (!buf) return -1;
  p = hpm_encode_header(buf, &tr->hdr);
  for (size_t i = 0; i < tr->nchunks; i++) {
    const struct hpm_chunk_info *ci = &tr->chunks[i];
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
