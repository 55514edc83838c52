/* SPDX-License-Identifier: MIT */
/* hpm trace format: encoding helpers shared by the recorder and the tools,
   and the reader.  The format is specified in tools/hpm/FORMAT.md.
   MIT licence.  */
#ifndef HPM_TRACE_H
#define HPM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define HPM_MAGIC "HPMTRACE"
#define HPM_CHUNK_MAGIC "HPMC"
#define HPM_STACK_MAGIC "HPMS" /* a chunk of call stacks (version 2) */
#define HPM_MAPS_MAGIC "HPMM"  /* a chunk of /proc/self/maps text (version 2) */
#define HPM_VERSION 1          /* a trace without call stacks */
#define HPM_VERSION_STACKS 2   /* with call stacks: stack and maps chunks, the STACK flag */
#define HPM_FILE_HDR 16        /* magic, version, flags, body length */
#define HPM_HDR_F_ENDS 1       /* header flag: the recorder ends each process image with an end marker */
#define HPM_CHUNK_HDR 36       /* see FORMAT.md */
#define HPM_MAX_HDR_BODY (1u << 20)
#define HPM_MAX_PAYLOAD (16u << 20)

/* Event kinds: the low four bits of an event's first byte.  */
enum hpm_kind {
  HPM_MALLOC = 0,
  HPM_CALLOC,
  HPM_REALLOC,
  HPM_REALLOCARRAY,
  HPM_FREE,
  HPM_FREE_SIZED,
  HPM_MEMALIGN,
  HPM_POSIX_MEMALIGN,
  HPM_ALIGNED_ALLOC,
  HPM_VALLOC,
  HPM_PVALLOC,
  HPM_THREAD_START,
  HPM_THREAD_EXIT,
  HPM_NKINDS
};

/* Flag bits (the high four bits of the first byte).  */
#define HPM_F_IMPLICIT 0x10  /* new id = previous id + 1 (not stored) */
#define HPM_F_FAIL 0x20      /* the call returned NULL / an error */
#define HPM_F_OLD_FREED 0x40 /* realloc returned NULL but freed its argument */
#define HPM_F_STACK 0x80     /* (version 2) a varint stack id follows the event */
#define HPM_F_MASK 0xF0

/* Call stacks: at most HPM_MAX_DEPTH frames recorded, HPM_MAX_FRAMES read.  */
#define HPM_MAX_DEPTH 256
#define HPM_MAX_FRAMES 1024
/* How the recorder unwound (the header's unwinder field).  */
enum hpm_unwinder { HPM_UNWIND_NONE, HPM_UNWIND_FP, HPM_UNWIND_LIBGCC, HPM_UNWIND_LIBUNWIND };

/* How a process image ended: an end marker (an event chunk without
   events) holds one of these in the low 8 bits of its base_id, the exit
   status or signal number above them.  */
enum hpm_end { HPM_END_NONE, HPM_END_EXIT, HPM_END__EXIT, HPM_END_EXEC, HPM_END_SIGNAL };
#define HPM_END_REASON(base_id) ((unsigned)((base_id)&0xff))
#define HPM_END_VALUE(base_id) ((unsigned)((base_id) >> 8))

/* Object references in free/realloc: 0 = NULL, 1 = not seen by the recorder.  */
#define HPM_REF_NULL 0
#define HPM_REF_UNKNOWN 1

/* One decoded event.  Times are nanoseconds since the header's start_ns.  */
struct hpm_event {
  uint64_t t;      /* time of the event (for realloc: when it returned) */
  uint64_t id;     /* new object's id, 0 if none */
  uint64_t ref;    /* freed/reallocated object id; HPM_REF_NULL/UNKNOWN */
  uint64_t size;   /* size (calloc, reallocarray: element size) */
  uint64_t arg;    /* calloc/reallocarray nmemb; alignment; thread start: OS tid */
  uint64_t dur;    /* realloc/reallocarray: ns from the call to its return */
  uint64_t stack;  /* allocating kinds: the call stack's id (version 2), 0 if none */
  uint32_t thread; /* recorder's thread number (1-based) */
  uint16_t arg2;   /* thread start: parent thread number (0 if none) */
  uint8_t kind;
  uint8_t flags;
};

struct hpm_header {
  uint32_t version;
  uint32_t flags; /* HPM_HDR_F_* */
  uint64_t page_size;
  uint64_t thp_mode; /* 0 unknown, 1 always, 2 madvise, 3 never */
  uint64_t pid, ppid;
  uint64_t clock_id;          /* 1 = CLOCK_MONOTONIC */
  uint64_t start_ns;          /* start on clock_id */
  uint64_t start_realtime_ns; /* start on CLOCK_REALTIME */
  uint64_t stack_depth;       /* version 2: frames asked for per stack */
  uint64_t unwinder;          /* version 2: enum hpm_unwinder */
  char *cmdline;              /* arguments separated by NULs, plus a final NUL (owned) */
  size_t cmdline_len;         /* length as stored in the file (without the final NUL) */
  size_t size;                /* bytes of the whole file header */
};

enum hpm_chunk_kind { HPM_CHUNK_EVENTS, HPM_CHUNK_STACKS, HPM_CHUNK_MAPS };

struct hpm_chunk_info {
  uint64_t offset; /* file offset of the chunk header */
  uint64_t base_ns, base_id;
  uint32_t thread, nevents, payload_len; /* nevents: 0 in stack and maps chunks */
  size_t first_event;                    /* index into hpm_trace.ev */
  uint8_t kind;                          /* enum hpm_chunk_kind */
  uint32_t nitems;                       /* stack chunk: its stacks */
  size_t first_item;                     /* stack chunk: index into hpm_trace.stacks; maps: offset into maps */
};

/* One call stack: frames[first .. first + nframes) of its trace, the
   innermost (the caller of the malloc function) first; return addresses.  */
struct hpm_stack {
  uint64_t id;
  size_t first;
  uint32_t nframes;
};

struct hpm_trace {
  struct hpm_header hdr;
  struct hpm_event *ev;
  size_t nev;
  struct hpm_chunk_info *chunks;
  size_t nchunks;
  int truncated;            /* 1: a partial chunk at the end was dropped */
  uint64_t truncated_at;    /* its offset */
  char warning[256];        /* non-fatal problem, "" if none */
  struct hpm_stack *stacks; /* in file order */
  size_t nstacks;
  uint64_t *frames;
  size_t nframes;
  size_t *stack_by_id; /* indexes into stacks, sorted by id */
  char *maps;          /* the maps chunks' text, in file order, NUL-terminated; NULL if none */
  size_t maps_len;
};

/* The stack with ID in TR, or NULL (0, or never defined: its chunk was lost).  */
const struct hpm_stack *hpm_trace_stack(const struct hpm_trace *tr, uint64_t id);

/* Read a whole trace from memory.  Returns 0 on success (perhaps with
   trace->warning set, e.g. for a truncated file), -1 on unusable input with
   a one-line message naming the byte offset in ERR.  Never reads outside
   [BUF, BUF+LEN); allocation is bounded by a small multiple of LEN.  On
   success release with hpm_trace_free.  This is the fuzzing entry point.  */
int hpm_trace_read_buffer(const void *buf, size_t len, struct hpm_trace *trace, char *err, size_t errlen);
/* The same for a file (mapped read-only); messages name PATH.  */
int hpm_trace_read_file(const char *path, struct hpm_trace *trace, char *err, size_t errlen);
void hpm_trace_free(struct hpm_trace *trace);

/* Re-encode a decoded trace (same header, same chunk boundaries) into a
   malloc'd buffer; byte-identical to a file written by the recorder.  */
int hpm_trace_encode(const struct hpm_trace *trace, unsigned char **out, size_t *outlen);

/* Low-level helpers shared with the recorder (no allocation, async-signal-safe).  */
uint32_t hpm_crc32(const void *p, size_t n);
/* A chunk's checksum: CRC-32C of its first 32 header bytes, then the payload.  */
uint32_t hpm_chunk_crc(const unsigned char *chunk, uint32_t payload_len);
static inline unsigned char *hpm_put_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}
/* The sign as an all-ones or all-zeros mask without shifting a signed value
   (implementation-defined for a negative one).  */
static inline uint64_t hpm_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); }
static inline int64_t hpm_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
static inline void hpm_put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void hpm_put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t hpm_get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline uint64_t hpm_get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Encode one event into P (at most HPM_MAX_EVENT bytes), given the chunk's
   running state (previous time and previous id).  Shared by the recorder and
   the re-encoder, so both produce the same bytes.  */
#define HPM_MAX_EVENT 80
unsigned char *hpm_encode_event(unsigned char *p, const struct hpm_event *e, uint64_t *last_t, uint64_t *last_id);
/* Write a file header for H into P (room for HPM_FILE_HDR + 120 + cmdline_len
   + 4 bytes); returns the end.  */
unsigned char *hpm_encode_header(unsigned char *p, const struct hpm_header *h);
/* Fill a chunk header at P for a payload of LEN bytes that follows it.  */
void hpm_encode_chunk_header(unsigned char *p, uint32_t thread, uint32_t nevents, uint64_t base_ns, uint64_t base_id,
                             uint32_t len);
/* The same for a stack chunk (N stacks) or a maps chunk (N 0, THREAD 0):
   MAGIC is HPM_STACK_MAGIC or HPM_MAPS_MAGIC.  */
void hpm_encode_other_header(unsigned char *p, const char *magic, uint32_t thread, uint32_t n, uint32_t len);
/* One stack of a stack chunk's payload into P (at most HPM_MAX_STACK_REC(N)
   bytes): id, N, the frames.  */
#define HPM_MAX_STACK_REC(n) (20 + 10 * (size_t)(n))
unsigned char *hpm_encode_stack(unsigned char *p, uint64_t id, const uint64_t *frames, uint32_t n);

const char *hpm_kind_name(unsigned kind);
static inline void hpm_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}
static inline int hpm_kind_allocates(unsigned k) {
  return k != HPM_FREE && k != HPM_FREE_SIZED && k < HPM_THREAD_START;
}

#endif
