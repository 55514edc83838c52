/* SPDX-License-Identifier: MIT */
/* libhpmtrace.so: the recorder.  Preloaded by `hpm record`, it interposes
   the malloc API, calls the allocator the program would have used (found
   with dlsym(RTLD_NEXT)) and appends one event per call to a per-thread
   buffer, written as a checksummed chunk (trace.h) to the process's trace
   file with one write(2) when full, at thread exit, fork, exec, exit, _exit
   and on fatal signals.
   Output: $HPM_TRACE_OUT.<pid> (".<pid>.<k>" after an exec in the same pid).
   Nothing here allocates from the traced program's heap: buffers and the
   address-to-id table are mmap'd; dlsym's own allocations before the real
   functions are known come from a static bump allocator.  MIT licence.  */
#include "trace.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Not declared by glibc 2.36's headers (or only under obsolete names).  */
void free_sized(void *, size_t);
void *memalign(size_t, size_t);
void *pvalloc(size_t);
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* --- the real allocator ------------------------------------------------------ */
static struct {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*reallocarray)(void *, size_t, size_t);
  void (*free)(void *);
  void (*free_sized)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  int (*execve)(const char *, char *const[], char *const[]);
  int (*execvp)(const char *, char *const[]);
  int (*execvpe)(const char *, char *const[], char *const[]);
  int (*sigaction)(int, const struct sigaction *, struct sigaction *);
  __sighandler_t (*signal)(int, __sighandler_t);
} real;

enum { ST_NONE, ST_RESOLVING, ST_READY };
static int g_state;  /* ST_*: real functions usable once ST_READY */
static int g_active; /* recording (an output file is open) */
static int g_sync;   /* after the exit flush: write every event at once */
static int g_fast;   /* owners append without a locked instruction (membarrier works) */
static int g_frozen; /* a flush of every buffer began: owners take the lock from now on */
static int g_fd = -1;
static uint64_t g_start_ns;
static uint64_t g_next_id = 2; /* ids 0 and 1 are the NULL/unknown refs */
static uint32_t g_next_thread = 1;
static pthread_key_t g_key;

static __thread int tls_busy; /* inside the recorder: pass straight through */
static __thread struct tbuf *tls_tb;
static __thread uint64_t tls_id_next, tls_id_end;
static __thread uint32_t tls_parent;
static __thread uint32_t tls_exited; /* thread number after thread_exit ran, else 0 */

/* --- bootstrap bump allocator (dlsym before the real functions are known) --- */
#define BOOT_SIZE ((size_t)256 * 1024)
static unsigned char boot_heap[BOOT_SIZE] __attribute__((aligned(4096)));
static size_t boot_used;

static int is_boot(const void *p) {
  return (const unsigned char *)p >= boot_heap && (const unsigned char *)p < boot_heap + BOOT_SIZE;
}

static void *boot_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  if (align > 4096 || n > BOOT_SIZE) return NULL;
  size_t old = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
  do {
    start = (old + 16 + align - 1) & ~(align - 1);
    end = start + ((n + 15) & ~(size_t)15);
    if (end > BOOT_SIZE) return NULL;
  } while (!__atomic_compare_exchange_n(&boot_used, &old, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  memcpy(boot_heap + start - sizeof(size_t), &n, sizeof n);
  return boot_heap + start;
}

static size_t boot_size(const void *p) {
  size_t n;
  memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
  return n;
}

/* --- spin locks (held for a few instructions, or a write) --------------------- */
static void spin_lock(int *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(l, __ATOMIC_RELAXED)) hpm_cpu_relax();
}
static int spin_trylock(int *l, long tries) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    if (--tries <= 0) return 0;
  return 1;
}
static void spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Event times.  On x86_64 with an invariant TSC, after the first 2 ms,
   times come from rdtsc scaled by a rate measured against CLOCK_MONOTONIC
   over the whole run so far (re-measured at 10x longer baselines: 2 ms,
   20 ms, ... 200 s, at buffer flushes), which is cheaper than the vDSO
   clock.  Elsewhere, and until the rate is known, CLOCK_MONOTONIC.  */
static int g_tsc_ok;
static uint64_t g_tsc0, g_ns0, g_mult, g_next_cal; /* g_mult: ns per tick << 32 */

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
static void tsc_init(void) {
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000007) {
    __cpuid(0x80000007, a, b, c, d);
    g_tsc_ok = (int)((d >> 8) & 1);
  }
  g_ns0 = now_ns();
  g_tsc0 = __rdtsc();
  g_next_cal = 2000000;
}

static void tsc_calibrate(void) {
  uint64_t ns = now_ns(), t = __rdtsc();
  if (!g_tsc_ok || t <= g_tsc0 || ns - g_ns0 < __atomic_load_n(&g_next_cal, __ATOMIC_RELAXED)) return;
  uint64_t m = (uint64_t)(((unsigned __int128)(ns - g_ns0) << 32) / (t - g_tsc0));
  if (m) __atomic_store_n(&g_mult, m, __ATOMIC_RELAXED);
  uint64_t next = (ns - g_ns0) * 10;
  __atomic_store_n(&g_next_cal, next > 200000000000ull ? UINT64_MAX : next, __ATOMIC_RELAXED);
}

static inline uint64_t event_ns(void) {
  uint64_t m = __atomic_load_n(&g_mult, __ATOMIC_RELAXED);
  if (__builtin_expect(m != 0, 1)) return g_ns0 + (uint64_t)(((unsigned __int128)(__rdtsc() - g_tsc0) * m) >> 32);
  tsc_calibrate();
  return now_ns();
}
#else
static void tsc_init(void) {}
static void tsc_calibrate(void) {}
static inline uint64_t event_ns(void) { return now_ns(); }
#endif

static void *map_zero(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* --- address -> object id: a two-level table indexed by the address -----------
   A live object owns the slot of its address (16-byte granularity), so
   insert and remove are plain stores: the allocator itself orders a free
   of an address before its reuse.  Leaves cover 16 MiB of address space and
   are mapped (MAP_NORESERVE) on first use; only touched pages cost memory,
   and slots lie in the same order as the heap, so lookups stay cache- and
   TLB-friendly.  Addresses at or above 2^47 are not tracked (their frees
   are recorded as of unknown objects).  */
#define LEAF_SHIFT 24
#define TOP_ENTRIES (1ull << (47 - LEAF_SHIFT))
#define LEAF_SLOTS (1ull << (LEAF_SHIFT - 4))
static uint64_t **id_top; /* TOP_ENTRIES pointers, mapped at init */

static uint64_t *id_slot(const void *p, int create) {
  uintptr_t a = (uintptr_t)p;
  if (UNLIKELY(a >> 47) || UNLIKELY(!id_top)) return NULL;
  uint64_t **top = &id_top[a >> LEAF_SHIFT];
  uint64_t *leaf = __atomic_load_n(top, __ATOMIC_ACQUIRE);
  if (UNLIKELY(!leaf)) {
    if (!create) return NULL;
    void *m = mmap(NULL, LEAF_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uint64_t *expect = NULL;
    if (__atomic_compare_exchange_n(top, &expect, (uint64_t *)m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      leaf = m;
    else {
      munmap(m, LEAF_SLOTS * sizeof(uint64_t));
      leaf = expect;
    }
  }
  return &leaf[(a >> 4) & (LEAF_SLOTS - 1)];
}

static void idmap_insert(const void *p, uint64_t id) {
  uint64_t *s = id_slot(p, 1);
  if (s) __atomic_store_n(s, id, __ATOMIC_RELAXED);
}

/* Remove P; return its id or HPM_REF_UNKNOWN.  */
static uint64_t idmap_remove(const void *p) {
  uint64_t *s = id_slot(p, 0);
  if (!s) return HPM_REF_UNKNOWN;
  uint64_t id = __atomic_load_n(s, __ATOMIC_RELAXED); /* no locked instruction: */
  if (!id) return HPM_REF_UNKNOWN;                    /* only the object's owner */
  __atomic_store_n(s, 0, __ATOMIC_RELAXED);           /* touches its slot */
  return id;
}

static uint64_t new_id(void) {
  if (tls_id_next == tls_id_end) {
    tls_id_next = __atomic_fetch_add(&g_next_id, 256, __ATOMIC_RELAXED);
    tls_id_end = tls_id_next + 256;
  }
  return tls_id_next++;
}

/* --- per-thread buffers -------------------------------------------------------- */
#define TB_PAYLOAD (64 * 1024)
#define SB_PAYLOAD (32 * 1024) /* new call stacks, written as a stack chunk */
struct tbuf {
  int lock;
  int writing; /* the owner is appending without the lock */
  int orphan;  /* abandoned in a fork child: never written */
  int in_use;  /* owned by a live thread */
  uint32_t thread, nevents;
  uint64_t base_ns, base_id, last_t, last_id;
  unsigned char *p;  /* next byte of the payload */
  struct tbuf *next; /* registry, push-only */
  unsigned char data[HPM_CHUNK_HDR + TB_PAYLOAD];
  uint32_t nstacks;
  unsigned char *sp; /* next byte of the stack payload (NULL: empty) */
  unsigned char sdata[HPM_CHUNK_HDR + SB_PAYLOAD];
};
static struct tbuf *g_tbufs;

static void write_all(const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(g_fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* Write TB's new stacks as one stack chunk; TB is locked (or private).  */
static void flush_stacks_locked(struct tbuf *tb) {
  if (tb->nstacks && g_fd >= 0 && !tb->orphan) {
    int saved = errno;
    uint32_t len = (uint32_t)(tb->sp - tb->sdata - HPM_CHUNK_HDR);
    hpm_encode_other_header(tb->sdata, HPM_STACK_MAGIC, tb->thread, tb->nstacks, len);
    write_all(tb->sdata, HPM_CHUNK_HDR + len);
    errno = saved;
  }
  tb->nstacks = 0;
  tb->sp = tb->sdata + HPM_CHUNK_HDR;
}

/* Write TB's stacks, then its events as one chunk; TB is locked (or private).  */
static void flush_locked(struct tbuf *tb) {
  tsc_calibrate();
  flush_stacks_locked(tb);
  if (tb->nevents && g_fd >= 0 && !tb->orphan) {
    int saved = errno;
    uint32_t len = (uint32_t)(tb->p - tb->data - HPM_CHUNK_HDR);
    hpm_encode_chunk_header(tb->data, tb->thread, tb->nevents, tb->base_ns, tb->base_id, len);
    write_all(tb->data, HPM_CHUNK_HDR + len);
    errno = saved;
  }
  tb->nevents = 0;
  tb->p = tb->data + HPM_CHUNK_HDR;
}

/* A call stack seen for the first time: written to the thread's stack
   buffer before the event that names it.  */
struct sdef {
  uint64_t id;
  const uint64_t *frames;
  uint32_t n;
};

static void record(const struct hpm_event *e);
static void record_def(const struct hpm_event *e, const struct sdef *d);

/* tbuf_acquire -> record -> tbuf_acquire cannot happen: tls_tb is set
   before record() is called, so the recursion is one level deep.  */
static struct tbuf *tbuf_acquire(void) // NOLINT(misc-no-recursion): one level deep, see above
{
  struct tbuf *tb;
  for (tb = __atomic_load_n(&g_tbufs, __ATOMIC_ACQUIRE); tb; tb = tb->next) {
    int zero = 0;
    if (!__atomic_load_n(&tb->in_use, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&tb->in_use, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      break;
  }
  if (!tb) {
    tb = map_zero(sizeof *tb);
    if (!tb) return NULL;
    tb->in_use = 1;
    tb->next = __atomic_load_n(&g_tbufs, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&g_tbufs, &tb->next, tb, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      ;
  }
  spin_lock(&tb->lock);
  tb->thread = __atomic_fetch_add(&g_next_thread, 1, __ATOMIC_RELAXED);
  tb->nevents = 0;
  tb->last_id = 0;
  tb->p = tb->data + HPM_CHUNK_HDR;
  tb->nstacks = 0;
  tb->sp = tb->sdata + HPM_CHUNK_HDR;
  spin_unlock(&tb->lock);
  tls_tb = tb;
  pthread_setspecific(g_key, tb);
  struct hpm_event e = { .kind = HPM_THREAD_START,
                         .t = event_ns() - g_start_ns,
                         .arg = (uint64_t)syscall(SYS_gettid),
                         .arg2 = (uint16_t)tls_parent };
  record(&e);
  return tb;
}

static inline void append(struct tbuf *tb, const struct hpm_event *e, const struct sdef *d) {
  if (UNLIKELY(d != NULL)) {
    if (tb->sp + HPM_MAX_STACK_REC(d->n) > tb->sdata + sizeof tb->sdata) flush_stacks_locked(tb);
    tb->sp = hpm_encode_stack(tb->sp, d->id, d->frames, d->n);
    tb->nstacks++;
  }
  if (tb->p + HPM_MAX_EVENT > tb->data + sizeof tb->data) flush_locked(tb);
  if (tb->nevents == 0) {
    tb->base_ns = tb->last_t = e->t;
    tb->base_id = tb->last_id;
  }
  tb->p = hpm_encode_event(tb->p, e, &tb->last_t, &tb->last_id);
  tb->nevents++;
}

/* Only the owner appends to its buffer; other threads touch it only in
   flush_all (exit, _exit, exec, fatal signals).  The owner's fast path is
   an asymmetric Dekker handshake: it announces `writing` and checks
   `g_frozen` with compiler barriers only; flush_all sets `g_frozen` and
   issues membarrier(), which orders both sides, then waits for `writing`
   to clear.  Without membarrier every append takes the buffer's lock.  */
/* An event of a thread whose buffer was already released at its exit
   (glibc frees thread resources after the key destructors ran): written
   at once as a chunk of its own, under the thread's number.  */
static void record_late(const struct hpm_event *e, const struct sdef *d) {
  if (e->kind == HPM_FREE && e->ref == HPM_REF_NULL) return; /* free(NULL): nothing to replay */
  if (d && g_fd >= 0) {
    unsigned char st[HPM_CHUNK_HDR + HPM_MAX_STACK_REC(HPM_MAX_DEPTH)];
    unsigned char *end = hpm_encode_stack(st + HPM_CHUNK_HDR, d->id, d->frames, d->n);
    uint32_t len = (uint32_t)(end - st - HPM_CHUNK_HDR);
    hpm_encode_other_header(st, HPM_STACK_MAGIC, tls_exited, 1, len);
    write_all(st, HPM_CHUNK_HDR + len);
  }
  unsigned char chunk[HPM_CHUNK_HDR + HPM_MAX_EVENT];
  uint64_t t = e->t, id = 0;
  unsigned char *end = hpm_encode_event(chunk + HPM_CHUNK_HDR, e, &t, &id);
  uint32_t len = (uint32_t)(end - chunk - HPM_CHUNK_HDR);
  hpm_encode_chunk_header(chunk, tls_exited, 1, e->t, 0, len);
  if (g_fd >= 0) write_all(chunk, HPM_CHUNK_HDR + len);
}

static void record(const struct hpm_event *e) // NOLINT(misc-no-recursion): see tbuf_acquire
{
  record_def(e, NULL);
}

static void record_def(const struct hpm_event *e, const struct sdef *d) // NOLINT(misc-no-recursion): see tbuf_acquire
{
  struct tbuf *tb = tls_tb;
  if (UNLIKELY(!tb)) {
    if (tls_exited) {
      record_late(e, d);
      return;
    }
    if (!(tb = tbuf_acquire())) return;
  }
  if (__builtin_expect(g_fast, 1)) {
    __atomic_store_n(&tb->writing, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(!__atomic_load_n(&g_frozen, __ATOMIC_RELAXED), 1)) {
      append(tb, e, d);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      __atomic_store_n(&tb->writing, 0, __ATOMIC_RELEASE);
      return;
    }
    __atomic_store_n(&tb->writing, 0, __ATOMIC_RELEASE);
  }
  spin_lock(&tb->lock);
  append(tb, e, d);
  if (UNLIKELY(__atomic_load_n(&g_sync, __ATOMIC_RELAXED))) flush_locked(tb);
  spin_unlock(&tb->lock);
}

/* --- call stacks (HPM_STACKS=DEPTH) -------------------------------------------
   Each allocating call's stack is unwound (HPM_UNWIND: libunwind's
   unw_backtrace, the default; libgcc's _Unwind_Backtrace; or the frame
   pointer chain), the recorder's own frames dropped, and looked up by a
   128-bit hash of its frames in a lock-free table mapped at init: a stack
   seen for the first time gets the next id and is written, once per
   process, to the thread's stack buffer (a stack chunk).  The unwinders are
   opened with dlopen(RTLD_LOCAL), so that libunwind's _Unwind_* symbols
   never replace libgcc's for the program.  A slot claimed by a thread
   that never finished it (a fork child: that thread is gone) is passed by
   after a bounded wait; the stack then gets a new id, a duplicate that
   readers merge.  The maps (/proc/self/maps) are written for offline
   symbolization when the file is opened, whenever a new stack has a frame
   outside the executable mappings of the last copy (a library loaded
   since: dlopen, glibc's own loading of NSS or iconv modules), and at the
   end of every image (exit, _exit, exec, fatal signals), so a process
   killed by SIGKILL still has the maps its written stacks need.  */
/* libunwind's names for the local unwinder of this architecture.  */
#if defined(__x86_64__)
#define UNW_PREFIX "_ULx86_64_"
#elif defined(__aarch64__)
#define UNW_PREFIX "_ULaarch64_"
#elif defined(__powerpc64__)
#define UNW_PREFIX "_ULppc64_"
#else
#define UNW_PREFIX "_UL_"
#endif
static int g_depth;    /* frames per stack; 0: no stacks */
static int g_unwinder; /* enum hpm_unwinder */
static int (*unw_bt)(void **, int);
static int (*gcc_bt)(int (*)(void *, void *), void *);
static uintptr_t (*gcc_ip)(void *);
static uintptr_t rec_lo, rec_hi; /* the recorder's own code */
static __thread uintptr_t tls_stack_hi;

#define ST_BITS 22 /* 4 M slots of 24 bytes, mapped MAP_NORESERVE: only touched pages cost */
#define ST_PROBES 64
struct sslot {
  uint64_t h1, h2, id; /* h1 0: free; id 0: being filled */
};
static struct sslot *g_stab;
static uint64_t g_next_stack = 1;
static unsigned char *g_maps_buf; /* HPM_CHUNK_HDR + MAPS_MAX */
#define MAPS_MAX ((size_t)8 << 20)
static int g_maps_busy;
/* The executable mappings of the last maps chunk written, sorted (for the
   check of new stacks; a seqlock: odd while being rewritten), and a few
   pages that were outside them even after the maps were read again (code
   in no mapping, a bad frame pointer), so they are read once only.  */
#define KNOWN_MAX 8192
struct xrange {
  uintptr_t lo, hi;
};
static struct xrange *g_known; /* KNOWN_MAX, mapped with the maps buffer */
static unsigned g_nknown, g_known_seq;
#define STRAY_SLOTS 64
static uintptr_t g_stray[STRAY_SLOTS];

/* The linker's name for this object's ELF header.  */
extern const ElfW(Ehdr) __ehdr_start // NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)
    __attribute__((visibility("hidden")));

/* [rec_lo, rec_hi): the executable segments of this library.  */
static void own_range(void) {
  const ElfW(Ehdr) *eh = &__ehdr_start;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
  uintptr_t bias = 0, lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) bias = (uintptr_t)eh - ph[i].p_vaddr;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
      if (bias + ph[i].p_vaddr < lo) lo = bias + ph[i].p_vaddr;
      if (bias + ph[i].p_vaddr + ph[i].p_memsz > hi) hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
    }
  rec_lo = lo;
  rec_hi = hi;
}

static inline int is_own(uintptr_t ip) { return ip >= rec_lo && ip < rec_hi; }

/* Frame pointers: from this frame up the saved-%rbp chain, within this
   thread's stack (its top from pthread_getattr_np, once per thread; the
   recorder is entered, so its allocations pass through).  A function
   built without frame pointers ends the chain or hides its caller.  */
__attribute__((noinline)) static int unwind_fp(uint64_t *out, int max) {
  const uintptr_t *fp = __builtin_frame_address(0);
  uintptr_t lo = (uintptr_t)fp;
  if (!tls_stack_hi) {
    pthread_attr_t a;
    void *addr;
    size_t size;
    tls_stack_hi = 16; /* unknown: no frame passes the test below */
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      if (pthread_attr_getstack(&a, &addr, &size) == 0) tls_stack_hi = (uintptr_t)addr + size;
      pthread_attr_destroy(&a);
    }
  }
  int n = 0;
  while (n < max && (uintptr_t)fp >= lo && (uintptr_t)fp < tls_stack_hi - 16 && !((uintptr_t)fp & 7)) {
    uintptr_t ret = fp[1];
    const uintptr_t *next = (const uintptr_t *)fp[0];
    if (!ret) break;
    if (!is_own(ret)) out[n++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

struct gcc_state {
  uint64_t *out;
  int n, max;
};

static int gcc_frame(void *ctx, void *arg) {
  struct gcc_state *st = arg;
  uintptr_t ip = gcc_ip(ctx);
  if (!ip) return 5; /* _URC_END_OF_STACK */
  if (!is_own(ip)) st->out[st->n++] = ip;
  return st->n < st->max ? 0 : 5;
}

/* The caller's stack into OUT (at most g_depth frames, innermost first,
   the recorder's frames left out); returns the count.  */
static int unwind(uint64_t *out) {
  if (g_unwinder == HPM_UNWIND_LIBUNWIND) {
    void *ips[HPM_MAX_DEPTH + 8];
    int got = unw_bt(ips, g_depth + 8), n = 0;
    for (int i = 0; i < got && n < g_depth; i++)
      if (!is_own((uintptr_t)ips[i])) out[n++] = (uint64_t)(uintptr_t)ips[i];
    return n;
  }
  if (g_unwinder == HPM_UNWIND_LIBGCC) {
    struct gcc_state st = { out, 0, g_depth };
    gcc_bt(gcc_frame, &st);
    return st.n;
  }
  return unwind_fp(out, g_depth);
}

static inline uint64_t mix(uint64_t h, uint64_t v, uint64_t k) {
  h = (h ^ v) * k;
  return h ^ (h >> 31);
}

/* The id of the stack F[0..N), and *IS_NEW when the caller must define it.  */
static uint64_t stack_id(const uint64_t *f, int n, int *is_new) {
  uint64_t h1 = 0x243F6A8885A308D3ull ^ (uint64_t)n, h2 = 0x13198A2E03707344ull + (uint64_t)n;
  for (int i = 0; i < n; i++) {
    h1 = mix(h1, f[i], 0x9E3779B97F4A7C15ull);
    h2 = mix(h2, f[i], 0xC2B2AE3D27D4EB4Full);
  }
  h1 |= 1;
  *is_new = 1;
  struct sslot *tab = __atomic_load_n(&g_stab, __ATOMIC_ACQUIRE);
  for (uint64_t k = 0; tab && k < ST_PROBES; k++) {
    struct sslot *s = &tab[((h1 >> 7) + k) & ((1u << ST_BITS) - 1)];
    uint64_t key = __atomic_load_n(&s->h1, __ATOMIC_ACQUIRE);
    if (!key && __atomic_compare_exchange_n(&s->h1, &key, h1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      uint64_t id = __atomic_fetch_add(&g_next_stack, 1, __ATOMIC_RELAXED);
      s->h2 = h2;
      __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
      return id;
    }
    if (key != h1) continue;
    uint64_t id;
    for (long spins = 100000; !(id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE)) && spins > 0; spins--) hpm_cpu_relax();
    if (!id) break; /* never finished: a new id */
    if (s->h2 == h2) {
      *is_new = 0;
      return id;
    }
  }
  return __atomic_fetch_add(&g_next_stack, 1, __ATOMIC_RELAXED);
}

static void check_frames(const uint64_t *f, int n);

/* E's stack: its id into E, its definition into D when new.  */
static inline const struct sdef *capture(struct hpm_event *e, struct sdef *d, uint64_t *frames) {
  int n = unwind(frames), is_new;
  if (n <= 0) return NULL;
  e->stack = stack_id(frames, n, &is_new);
  if (!is_new) return NULL;
  check_frames(frames, n);
  *d = (struct sdef){ e->stack, frames, (uint32_t)n };
  return d;
}

static void *map_table(void) {
  void *m = mmap(NULL, sizeof(struct sslot) << ST_BITS, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* HPM_STACKS and HPM_UNWIND: the depth and the unwinder, the table.
   Falls back from libunwind to libgcc to frame pointers when a library
   cannot be opened.  */
static void stacks_init(void) {
  const char *d = getenv("HPM_STACKS"), *u = getenv("HPM_UNWIND");
  int depth = 0;
  for (; d && *d >= '0' && *d <= '9' && depth <= HPM_MAX_DEPTH; d++) depth = depth * 10 + (*d - '0');
  if (depth <= 0) return;
  g_depth = depth > HPM_MAX_DEPTH ? HPM_MAX_DEPTH : depth;
  g_unwinder = !u || !strcmp(u, "libunwind") ? HPM_UNWIND_LIBUNWIND
               : !strcmp(u, "libgcc")        ? HPM_UNWIND_LIBGCC
                                             : HPM_UNWIND_FP;
  if (g_unwinder == HPM_UNWIND_LIBUNWIND) {
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    unw_bt = h ? (int (*)(void **, int))dlsym(h, "unw_backtrace") : NULL;
    if (!unw_bt) g_unwinder = HPM_UNWIND_LIBGCC;
    /* Per-thread caches: the global one takes a lock that a fork child
       would inherit held if another thread was unwinding.  */
    int (*policy)(void *, int) = h ? (int (*)(void *, int))dlsym(h, UNW_PREFIX "set_caching_policy") : NULL;
    void **local = h ? (void **)dlsym(h, UNW_PREFIX "local_addr_space") : NULL;
    if (policy && local) (void)policy(*local, 2 /* UNW_CACHE_PER_THREAD */);
  }
  if (g_unwinder == HPM_UNWIND_LIBGCC) {
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    gcc_bt = h ? (int (*)(int (*)(void *, void *), void *))dlsym(h, "_Unwind_Backtrace") : NULL;
    gcc_ip = h ? (uintptr_t(*)(void *))dlsym(h, "_Unwind_GetIP") : NULL;
    if (!gcc_bt || !gcc_ip) g_unwinder = HPM_UNWIND_FP;
  }
  own_range();
  g_stab = map_table();
  void *m = mmap(NULL, HPM_CHUNK_HDR + MAPS_MAX + KNOWN_MAX * sizeof(struct xrange), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  g_maps_buf = m == MAP_FAILED ? NULL : m;
  g_known = m == MAP_FAILED ? NULL : (struct xrange *)(g_maps_buf + HPM_CHUNK_HDR + MAPS_MAX);
}

/* A fork child: the parent's file holds the stacks defined so far, so the
   child starts a table of its own (the same calls define them again).  */
static void stacks_fork_child(void) {
  if (!g_depth) return;
  if (g_stab) munmap(g_stab, sizeof(struct sslot) << ST_BITS);
  g_stab = map_table();
  g_maps_busy = 0;
}

static uintptr_t parse_hex(const char **p, const char *end) {
  uintptr_t v = 0;
  for (; *p < end; (*p)++) {
    char c = **p;
    unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
    if (d > 15) break;
    v = v << 4 | d;
  }
  return v;
}

/* g_known from the maps text T[0..N): the executable mappings, file or
   anonymous (the kernel lists them in address order).  */
static void set_known(const char *t, size_t n) {
  const char *end = t + n;
  unsigned k = 0;
  __atomic_store_n(&g_known_seq, g_known_seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  while (t < end && k < KNOWN_MAX) {
    uintptr_t lo = parse_hex(&t, end), hi = 0;
    if (t < end && *t == '-') {
      t++;
      hi = parse_hex(&t, end);
    }
    if (end - t > 4 && t[0] == ' ' && t[3] == 'x' && lo < hi) g_known[k++] = (struct xrange){ lo, hi };
    while (t < end && *t != '\n') t++;
    t++;
  }
  g_nknown = k;
  __atomic_store_n(&g_known_seq, g_known_seq + 1, __ATOMIC_RELEASE);
}

/* Whether A lies in an executable mapping of the last maps chunk (yes
   when that cannot be told: the table is being rewritten all along).  */
static int known(uintptr_t a) {
  for (int tries = 0; tries < 8; tries++) {
    unsigned seq = __atomic_load_n(&g_known_seq, __ATOMIC_ACQUIRE);
    if (seq & 1) {
      hpm_cpu_relax();
      continue;
    }
    unsigned lo = 0, hi = g_nknown;
    while (lo < hi) {
      unsigned mid = (lo + hi) / 2;
      if (g_known[mid].hi <= a)
        lo = mid + 1;
      else
        hi = mid;
    }
    int in = lo < g_nknown && g_known[lo].lo <= a;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g_known_seq, __ATOMIC_RELAXED) == seq) return in;
  }
  return 1;
}

static int write_maps(void);

/* A new stack's frames F[0..N): when one is outside the executable
   mappings of the last maps chunk, the maps are written again (once: a
   frame still outside them is remembered as a stray page).  */
static void check_frames(const uint64_t *f, int n) {
  if (!g_known) return;
  for (int i = 0, again = 0; i < n; i++) {
    uintptr_t a = (uintptr_t)f[i] - 1, page = a >> 12;
    if (known(a) || __atomic_load_n(&g_stray[page % STRAY_SLOTS], __ATOMIC_RELAXED) == page) continue;
    if (!again) { /* another thread writing the maps: wait for it, then write them again */
      for (long spins = 1000000; write_maps() < 0 && spins > 0; spins--) hpm_cpu_relax();
      again = 1;
      if (known(a)) continue;
    }
    __atomic_store_n(&g_stray[page % STRAY_SLOTS], page, __ATOMIC_RELAXED);
  }
}

/* /proc/self/maps as a maps chunk (async-signal-safe: open, read, write).
   Returns -1 when another thread (or an interrupted one) is writing them,
   else 0.  */
static int write_maps(void) {
  if (!g_depth || !g_maps_buf || g_fd < 0) return 0;
  if (__atomic_exchange_n(&g_maps_busy, 1, __ATOMIC_ACQUIRE)) return -1;
  int saved = errno, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t n = 0;
  if (fd >= 0) {
    for (;;) {
      ssize_t r = read(fd, g_maps_buf + HPM_CHUNK_HDR + n, MAPS_MAX - n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      n += (size_t)r;
      if (n == MAPS_MAX) break;
    }
    close(fd);
  }
  if (n) {
    hpm_encode_other_header(g_maps_buf, HPM_MAPS_MAGIC, 0, 0, (uint32_t)n);
    write_all(g_maps_buf, HPM_CHUNK_HDR + n);
    set_known((const char *)g_maps_buf + HPM_CHUNK_HDR, n);
  }
  errno = saved;
  __atomic_store_n(&g_maps_busy, 0, __ATOMIC_RELEASE);
  return 0;
}

/* The end marker of this image: an event chunk without events, how it
   ended (enum hpm_end) and VALUE (exit status, signal) in its base_id.  */
static void write_end(unsigned how, unsigned value) {
  unsigned char h[HPM_CHUNK_HDR];
  uint32_t thread = tls_tb ? tls_tb->thread : tls_exited ? tls_exited : 1;
  if (g_fd < 0) return;
  hpm_encode_chunk_header(h, thread, 0, event_ns() - g_start_ns, how | (uint64_t)value << 8, 0);
  write_all(h, sizeof h);
}

/* Flush every buffer, then write the maps and the end marker (HOW, VALUE:
   see write_end).  From a signal handler the current thread's buffer is
   skipped if the signal interrupted the recorder while it was appending.  */
static void flush_all(unsigned how, unsigned value) {
  tls_busy++; /* a fork from a signal handler during this must not wait for our locks */
  if (g_fast && !__atomic_exchange_n(&g_frozen, 1, __ATOMIC_SEQ_CST))
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  for (struct tbuf *tb = __atomic_load_n(&g_tbufs, __ATOMIC_ACQUIRE); tb; tb = tb->next) {
    int own = tb == tls_tb;
    if (!spin_trylock(&tb->lock, own ? 1 : 1000000)) continue;
    long spins = own ? 0 : 1000000;
    while (__atomic_load_n(&tb->writing, __ATOMIC_ACQUIRE) && spins-- > 0) hpm_cpu_relax();
    if (!__atomic_load_n(&tb->writing, __ATOMIC_ACQUIRE)) flush_locked(tb);
    spin_unlock(&tb->lock);
  }
  (void)write_maps(); /* busy: an interrupted write of them; the earlier copies stand */
  write_end(how, value);
  tls_busy--;
}

static void enable_fast_path(void) {
  g_fast = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static void thread_exit(void *arg) {
  struct tbuf *tb = arg;
  if (!tb || tb != tls_tb) return;
  tls_busy++;
  struct hpm_event e = { .kind = HPM_THREAD_EXIT, .t = event_ns() - g_start_ns };
  record(&e);
  spin_lock(&tb->lock);
  flush_locked(tb);
  spin_unlock(&tb->lock);
  tls_tb = NULL;
  tls_exited = tb->thread;
  __atomic_store_n(&tb->in_use, 0, __ATOMIC_RELEASE);
  tls_busy--;
}

/* --- output file ------------------------------------------------------------------ */
static size_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  return n;
}

static char *put_dec(char *p, unsigned long v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while (v /= 10);
  while (n) *p++ = tmp[--n];
  return p;
}

static void open_output(void) {
  const char *out = getenv("HPM_TRACE_OUT");
  char path[4096];
  size_t ol;
  if (!out || !*out || (ol = strlen(out)) > sizeof path - 64) return;
  int fd = -1;
  for (unsigned k = 0; k < 100 && fd < 0; k++) {
    char *p = path;
    memcpy(p, out, ol);
    p += ol;
    *p++ = '.';
    p = put_dec(p, (unsigned long)getpid());
    if (k) {
      *p++ = '.';
      p = put_dec(p, k);
    }
    *p = 0;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return;
  }
  if (fd < 0) return;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, 700); /* keep low descriptors free for the program */
  if (hi >= 0) {
    close(fd);
    fd = hi;
  }

  static char cmd[4096], thp[256];
  static unsigned char hdr[HPM_FILE_HDR + 120 + sizeof cmd + 4];
  struct hpm_header h = { 0 };
  size_t cl = read_small("/proc/self/cmdline", cmd, sizeof cmd);
  if (cl && cmd[cl - 1] == 0) cl--;
  size_t tl = read_small("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp - 1);
  thp[tl] = 0;
  h.thp_mode = strstr(thp, "[always]") ? 1 : strstr(thp, "[madvise]") ? 2 : strstr(thp, "[never]") ? 3 : 0;
  h.page_size = (uint64_t)sysconf(_SC_PAGESIZE);
  h.pid = (uint64_t)getpid();
  h.ppid = (uint64_t)getppid();
  h.clock_id = 1;
  h.start_ns = g_start_ns = now_ns();
  if (!g_ns0) tsc_init();
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  h.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
  h.cmdline = cmd;
  h.cmdline_len = cl;
  h.flags = HPM_HDR_F_ENDS;
  if (g_depth) {
    h.version = HPM_VERSION_STACKS;
    h.stack_depth = (uint64_t)g_depth;
    h.unwinder = (uint64_t)g_unwinder;
  }
  g_fd = fd;
  unsigned char *end = hpm_encode_header(hdr, &h);
  write_all(hdr, (size_t)(end - hdr));
  (void)write_maps(); /* the mappings at start: a killed process keeps its symbols */
  __atomic_store_n(&g_active, 1, __ATOMIC_RELEASE);
}

/* --- fork, exit, signals ----------------------------------------------------------- */
/* The recorder holds no lock across a call into the allocator, so fork needs
   only to write this thread's events (the child must not repeat them).  */
/* A fork from a signal handler that interrupted the recorder (tls_busy > 0
   on entry: the thread may hold its buffer's lock or be inside write(2))
   must not touch this thread's buffer.  In the child that buffer is then
   abandoned (it holds the parent's events), the descriptor the interrupted
   write may resume on is pointed at /dev/null, and the thread continues with
   a new buffer.  */
static __thread int tls_fork_nested;

static void fork_prepare(void) {
  tls_fork_nested = tls_busy > 0;
  tls_busy++;
  if (tls_tb && !tls_fork_nested) {
    spin_lock(&tls_tb->lock);
    flush_locked(tls_tb);
    spin_unlock(&tls_tb->lock);
  }
}

static void fork_parent(void) { tls_busy--; }

static void fork_child(void) {
  int nested = tls_fork_nested;
  struct tbuf *own = tls_tb;
  /* Other threads do not exist here: their buffers hold the parent's events.  */
  g_frozen = 0;
  enable_fast_path();
  for (struct tbuf *tb = g_tbufs; tb; tb = tb->next) {
    if (tb == own && nested) {
      tb->orphan = 1;
      continue;
    }
    tb->lock = 0;
    tb->writing = 0;
    tb->nevents = 0;
    tb->p = tb->data + HPM_CHUNK_HDR;
    tb->nstacks = 0;
    tb->sp = tb->sdata + HPM_CHUNK_HDR;
    if (tb != own) tb->in_use = 0;
  }
  stacks_fork_child();
  if (g_fd >= 0) {
    int null = nested ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
    if (null >= 0) {
      dup3(null, g_fd, O_CLOEXEC);
      close(null);
    } else
      close(g_fd);
  }
  g_fd = -1; /* when nested, the old number stays open on /dev/null */
  g_active = 0;
  open_output();
  if (nested) {
    tls_tb = NULL;  /* the next event takes a new buffer (and records thread_start) */
  } else if (own) { /* this thread continues in the child's trace */
    own->last_id = 0;
    struct hpm_event e = { .kind = HPM_THREAD_START,
                           .t = event_ns() - g_start_ns,
                           .arg = (uint64_t)syscall(SYS_gettid) };
    record(&e);
  }
  tls_busy--;
}

static void init(void);

static const int fatal_signals[] = {
  SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGABRT, SIGTERM, SIGINT,  SIGHUP, SIGQUIT,
  SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGTRAP, SIGSYS,
};

static void on_fatal(int sig) {
  int saved = errno;
  flush_all(HPM_END_SIGNAL, (unsigned)sig);
  /* Nothing to do if these fail in a signal handler: the default action
     happens anyway for a synchronous fault when the handler returns.  */
  (void)real.signal(sig, SIG_DFL);
  errno = saved;
  (void)raise(sig); /* synchronous faults: returning re-executes the instruction */
}

static int is_fatal(int sig) {
  for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++)
    if (fatal_signals[i] == sig) return 1;
  return 0;
}

/* The recorder's handler in place of the default action of SIG.  */
static int catch_fatal(int sig, struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_NODEFER;
  return real.sigaction(sig, &sa, old);
}

static void install_signal_handlers(void) {
  for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
    struct sigaction old;
    if (real.sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
      continue;                                /* ignored or handled by the program already */
    (void)catch_fatal(fatal_signals[i], NULL); /* without it, that signal's death loses buffers */
  }
}

/* The handlers above are the recorder's business: a program asking for a
   signal's disposition sees SIG_DFL, as it would without the recorder, so
   it installs its own handler as it would (python3 installs its SIGINT
   handler, the one raising KeyboardInterrupt, only over SIG_DFL).  Its
   handler then replaces the recorder's; when it sets the default action
   again (python3 ignores SIGPIPE, and a script may restore it), the
   recorder's handler takes its place, so that death loses nothing.  */
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!real.sigaction && g_state == ST_NONE) init();
  if (!real.sigaction) {
    errno = ENOSYS;
    return -1;
  }
  int rc = act && g_fd >= 0 && is_fatal(sig) && act->sa_handler == SIG_DFL && !(act->sa_flags & SA_SIGINFO)
               ? catch_fatal(sig, old)
               : real.sigaction(sig, act, old);
  if (rc == 0 && old && !(old->sa_flags & SA_SIGINFO) && old->sa_handler == on_fatal) {
    memset(old, 0, sizeof *old);
    old->sa_handler = SIG_DFL;
    sigemptyset(&old->sa_mask);
  }
  return rc;
}

EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
  if (!real.signal && g_state == ST_NONE) init();
  if (!real.signal) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  if (handler == SIG_DFL && g_fd >= 0 && is_fatal(sig)) {
    struct sigaction old;
    if (catch_fatal(sig, &old) != 0) return SIG_ERR;
    return old.sa_handler == on_fatal ? SIG_DFL : old.sa_handler;
  }
  __sighandler_t prev = real.signal(sig, handler);
  return prev == on_fatal ? SIG_DFL : prev;
}

__attribute__((destructor)) static void at_exit_flush(void) {
  if (!g_active) return;
  __atomic_store_n(&g_sync, 1, __ATOMIC_RELAXED);
  flush_all(HPM_END_EXIT, 0);
}

/* --- initialisation ----------------------------------------------------------------- */
#define RESOLVE(name) (real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name))

static void init(void) {
  int expect = ST_NONE;
  if (!__atomic_compare_exchange_n(&g_state, &expect, ST_RESOLVING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  tls_busy++;
  RESOLVE(malloc);
  RESOLVE(calloc);
  RESOLVE(realloc);
  RESOLVE(reallocarray);
  RESOLVE(free);
  RESOLVE(free_sized);
  RESOLVE(memalign);
  RESOLVE(posix_memalign);
  RESOLVE(aligned_alloc);
  RESOLVE(valloc);
  RESOLVE(pvalloc);
  RESOLVE(pthread_create);
  RESOLVE(execve);
  RESOLVE(execvp);
  RESOLVE(execvpe);
  RESOLVE(sigaction);
  RESOLVE(signal);
  if (!real.malloc || !real.sigaction || !real.signal || !real.free || !real.calloc || !real.realloc) {
    static const char msg[] = "libhpmtrace: cannot find the real malloc\n";
    write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  __atomic_store_n(&g_state, ST_READY, __ATOMIC_RELEASE);
  if (getenv("HPM_TRACE_OUT")) {
    void *top = mmap(NULL, TOP_ENTRIES * sizeof *id_top, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    id_top = top == MAP_FAILED ? NULL : top;
    stacks_init();
    enable_fast_path();
    pthread_key_create(&g_key, thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    install_signal_handlers();
    open_output();
  }
  tls_busy--;
}

__attribute__((constructor)) static void ctor(void) {
  if (g_state == ST_NONE) init();
}

/* True when the call should be recorded; false: pass through (or bootstrap
   if the real functions are not known yet: then *BOOT is set).  */
static inline int enter(int *boot) {
  *boot = 0;
  if (UNLIKELY(__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_READY)) {
    init();
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_READY) {
      *boot = 1;
      return 0;
    }
  }
  if (tls_busy || !__atomic_load_n(&g_active, __ATOMIC_RELAXED)) return 0;
  tls_busy++;
  return 1;
}

static inline void leave(void) { tls_busy--; }

/* E with its call stack; out of line, so that its frames take stack
   space only when stacks are recorded.  */
__attribute__((noinline)) static void record_stack(struct hpm_event *e) {
  uint64_t frames[HPM_MAX_DEPTH];
  struct sdef d;
  record_def(e, capture(e, &d, frames));
}

static void rec_new(unsigned kind, void *p, uint64_t size, uint64_t arg) {
  struct hpm_event e = { .kind = (uint8_t)kind, .size = size, .arg = arg };
  e.t = event_ns() - g_start_ns;
  if (p) {
    e.id = new_id();
    idmap_insert(p, e.id);
  } else
    e.flags = HPM_F_FAIL;
  if (UNLIKELY(g_depth))
    record_stack(&e);
  else
    record(&e);
}

static uint64_t ref_of(void *p) { return p ? idmap_remove(p) : HPM_REF_NULL; }

/* --- the interposed API ------------------------------------------------------------- */
EXPORT void *malloc(size_t n) {
  int boot;
  if (!enter(&boot)) return boot ? boot_alloc(n, 16) : real.malloc(n);
  void *p = real.malloc(n);
  rec_new(HPM_MALLOC, p, n, 0);
  leave();
  return p;
}

EXPORT void *calloc(size_t m, size_t n) {
  int boot;
  if (!enter(&boot)) {
    if (!boot) return real.calloc(m, n);
    size_t t;
    return __builtin_mul_overflow(m, n, &t) ? NULL : boot_alloc(t, 16); /* static: zeroed */
  }
  void *p = real.calloc(m, n);
  rec_new(HPM_CALLOC, p, n, m);
  leave();
  return p;
}

static void *realloc_common(unsigned kind, void *old, size_t m, size_t n) {
  int boot;
  size_t total;
  if (__builtin_mul_overflow(m, n, &total)) total = SIZE_MAX;
  if (old && is_boot(old)) { /* move out of the bootstrap heap */
    void *p = boot_alloc(total, 16);
    if (!p && __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_READY) p = real.malloc(total);
    if (p) memcpy(p, old, boot_size(old) < total ? boot_size(old) : total);
    return p;
  }
  if (!enter(&boot)) {
    if (boot) return old ? NULL : boot_alloc(total, 16);
    return kind == HPM_REALLOC ? real.realloc(old, n) : real.reallocarray(old, m, n);
  }
  uint64_t ref = ref_of(old);
  uint64_t t0 = event_ns();
  void *p = kind == HPM_REALLOC ? real.realloc(old, n) : real.reallocarray(old, m, n);
  struct hpm_event e = { .kind = (uint8_t)kind, .ref = ref, .size = n, .arg = m };
  uint64_t t1 = event_ns();
  e.t = t1 - g_start_ns;
  e.dur = t1 - t0;
  if (p) {
    e.id = new_id();
    idmap_insert(p, e.id);
  } else {
    e.flags = HPM_F_FAIL;
    if (old && total == 0)
      e.flags |= HPM_F_OLD_FREED; /* realloc(p, 0) freed p */
    else if (old && ref > HPM_REF_UNKNOWN)
      idmap_insert(old, ref); /* still live */
  }
  if (UNLIKELY(g_depth))
    record_stack(&e);
  else
    record(&e);
  leave();
  return p;
}

EXPORT void *realloc(void *old, size_t n) { return realloc_common(HPM_REALLOC, old, 1, n); }

EXPORT void *reallocarray(void *old, size_t m, size_t n) {
  if (UNLIKELY(!real.reallocarray && g_state == ST_READY)) {
    size_t t;
    if (__builtin_mul_overflow(m, n, &t)) {
      errno = ENOMEM;
      return NULL;
    }
    return realloc(old, t);
  }
  return realloc_common(HPM_REALLOCARRAY, old, m, n);
}

static void free_common(unsigned kind, void *p, size_t size) {
  int boot;
  if (is_boot(p)) return;
  if (!enter(&boot)) {
    if (boot || !p) return;
    if (kind == HPM_FREE_SIZED && real.free_sized)
      real.free_sized(p, size);
    else
      real.free(p);
    return;
  }
  struct hpm_event e = { .kind = (uint8_t)kind, .ref = ref_of(p), .size = size };
  e.t = event_ns() - g_start_ns;
  record(&e);
  if (kind == HPM_FREE_SIZED && real.free_sized)
    real.free_sized(p, size);
  else
    real.free(p);
  leave();
}

EXPORT void free(void *p) { free_common(HPM_FREE, p, 0); }
EXPORT void free_sized(void *p, size_t n) { free_common(HPM_FREE_SIZED, p, n); }

static void *aligned_common(unsigned kind, size_t align, size_t n) {
  int boot;
  if (!enter(&boot)) {
    if (boot) return boot_alloc(n, align);
    switch (kind) {
    case HPM_MEMALIGN: return real.memalign(align, n);
    case HPM_ALIGNED_ALLOC: return real.aligned_alloc(align, n);
    case HPM_VALLOC: return real.valloc(n);
    default: return real.pvalloc(n);
    }
  }
  void *p;
  switch (kind) {
  case HPM_MEMALIGN: p = real.memalign(align, n); break;
  case HPM_ALIGNED_ALLOC: p = real.aligned_alloc(align, n); break;
  case HPM_VALLOC: p = real.valloc(n); break;
  default: p = real.pvalloc(n); break;
  }
  rec_new(kind, p, n, align);
  leave();
  return p;
}

EXPORT void *memalign(size_t a, size_t n) { return aligned_common(HPM_MEMALIGN, a, n); }
EXPORT void *aligned_alloc(size_t a, size_t n) { return aligned_common(HPM_ALIGNED_ALLOC, a, n); }
EXPORT void *valloc(size_t n) { return aligned_common(HPM_VALLOC, 0, n); }
EXPORT void *pvalloc(size_t n) { return aligned_common(HPM_PVALLOC, 0, n); }

EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  int boot;
  if (!enter(&boot)) {
    if (!boot) return real.posix_memalign(out, a, n);
    void *p = boot_alloc(n, a);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = real.posix_memalign(out, a, n);
  rec_new(HPM_POSIX_MEMALIGN, rc == 0 ? *out : NULL, n, a);
  leave();
  return rc;
}

/* --- threads, exec, _exit ------------------------------------------------------------ */
struct tramp {
  void *(*fn)(void *);
  void *arg;
  uint32_t parent;
};

static void *thread_tramp(void *v) {
  struct tramp t = *(struct tramp *)v;
  tls_busy++;
  real.free(v);
  tls_parent = t.parent;
  if (g_active && !tls_tb) tbuf_acquire();
  tls_busy--;
  return t.fn(t.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (g_state != ST_READY) init();
  if (!real.pthread_create) return EAGAIN;
  if (!g_active) return real.pthread_create(th, attr, fn, arg);
  tls_busy++;
  struct tramp *t = real.malloc(sizeof *t);
  tls_busy--;
  if (!t) return EAGAIN;
  t->fn = fn;
  t->arg = arg;
  t->parent = tls_tb ? tls_tb->thread : 0;
  int rc = real.pthread_create(th, attr, thread_tramp, t);
  if (rc) {
    tls_busy++;
    real.free(t);
    tls_busy--;
  }
  return rc;
}

/* Before an exec the image's buffers would be lost: write them.  */
static void before_exec(void) {
  if (g_active) flush_all(HPM_END_EXEC, 0);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  if (g_state != ST_READY) init();
  before_exec();
  return real.execve(path, argv, envp);
}
EXPORT int execvp(const char *file, char *const argv[]) {
  if (g_state != ST_READY) init();
  before_exec();
  return real.execvp(file, argv);
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  if (g_state != ST_READY) init();
  before_exec();
  return real.execvpe(file, argv, envp);
}

/* execv and the execl family reach the kernel inside libc without going
   through the hooks above: hook them too, or an image that ends by one of
   them would lose what its threads had buffered.  The variadic forms copy
   their arguments into an array mapped for the purpose (any count).  */
EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

/* argv for execl/execle/execlp: arg0, the variadic strings up to NULL;
   *envp gets the pointer after the NULL when want_env.  NULL on failure
   (errno set).  Free with munmap(ret, *len).  */
static char **collect_args(const char *arg0, va_list ap, int want_env, char *const **envp, size_t *len) {
  va_list cp;
  va_copy(cp, ap);
  size_t n = 1;
  while (va_arg(cp, const char *)) n++;
  va_end(cp);
  *len = (n + 1) * sizeof(char *);
  char **argv = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (argv == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  argv[0] = (char *)arg0;
  for (size_t i = 1; i <= n; i++) argv[i] = va_arg(ap, char *); /* the last is the NULL */
  if (want_env) *envp = va_arg(ap, char *const *);
  return argv;
}

/* execl, execle, execlp: the variadic arguments as an array, then execve
   (or execvp when `search`); returns only when the exec failed, with its
   errno.  */
static int exec_list(const char *path, int search, int want_env, const char *arg, va_list ap) {
  size_t len;
  char *const *envp = environ;
  char **argv = collect_args(arg, ap, want_env, &envp, &len);
  if (!argv) return -1;
  int rc = search ? execvp(path, argv) : execve(path, argv, envp);
  int e = errno;
  (void)munmap(argv, len); /* nothing to do if this fails too */
  errno = e;
  return rc;
}

EXPORT int execl(const char *path, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int rc = exec_list(path, 0, 0, arg, ap);
  va_end(ap);
  return rc;
}

EXPORT int execle(const char *path, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int rc = exec_list(path, 0, 1, arg, ap);
  va_end(ap);
  return rc;
}

EXPORT int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int rc = exec_list(file, 1, 0, arg, ap);
  va_end(ap);
  return rc;
}

EXPORT void _exit(int status) {
  if (g_active) flush_all(HPM_END__EXIT, (unsigned)status & 0xff);
  for (;;) syscall(SYS_exit_group, status);
}
EXPORT void _Exit(int status) { _exit(status); }
