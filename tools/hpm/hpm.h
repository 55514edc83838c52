/* SPDX-License-Identifier: MIT */
/* hpm: shared declarations of the command-line tool: the prepared trace
   (prep.c), the helpers (util.c), the commands and the TLB model.
   MIT licence.  */
#ifndef HPM_H
#define HPM_H

#include <stdint.h>
#include <stdio.h>
#include "trace.h"

#define NONE32 UINT32_MAX

/* One replayable operation.  obj: the object it creates (dense index) or
   NONE32; ref: the object it frees or reallocates, or NONE32.  */
struct rop {
  uint64_t size; /* bytes requested (calloc: nmemb * size, saturated) */
  uint64_t t;    /* trace time, ns */
  uint32_t obj, ref;
  uint32_t align; /* memalign family; 0 otherwise */
  uint32_t dep;   /* thread whose op must run first (the ref's allocator) or NONE32 */
  uint8_t kind;
  uint8_t pad[7];
};

struct pthread_info {
  uint32_t number; /* recorder's thread number */
  uint64_t tid;    /* OS thread id from thread_start, 0 if unknown */
  size_t first_op, nops;
  uint64_t allocs, frees, bytes;
  uint64_t t_first, t_last;
};

struct pobj {
  uint64_t size, t_alloc, t_free;     /* t_free = UINT64_MAX: never freed */
  uint64_t stack;                     /* the allocation's call stack id, 0 if none */
  uint32_t alloc_thread, free_thread; /* dense thread indexes; free: NONE32 */
};

struct prep {
  uint32_t nthreads;
  struct pthread_info *th;
  struct rop *ops;
  size_t nops; /* grouped by thread, program order */
  struct pobj *obj;
  uint32_t nobj;
  size_t *serial;     /* op indexes in a valid serial order (by time) */
  size_t peak_serial; /* position in serial after which live bytes peak */
  uint64_t peak_live, peak_t, end_t, max_size;
  uint64_t events, kind_count[HPM_NKINDS];
  uint64_t unknown_frees, null_frees, double_frees, dup_ids, failed, bad_order;
};

/* Build the replay program from a decoded trace.  Returns 0, or -1 with a
   message (e.g. a cycle in cross-thread ordering) in ERR.  Warnings go to
   stderr prefixed with NAME (none when NAME is NULL).  */
int prep_build(const struct hpm_trace *tr, struct prep *p, const char *name, char *err, size_t errlen);
void prep_free(struct prep *p);

/* Load FILE and, unless P is NULL, prepare it.  Returns 0, or -1 after
   printing "hpm: FILE: byte offset N: ..." (or another reason).  */
int load_trace(const char *file, struct hpm_trace *tr, struct prep *p);

/* ls.c: FILE, or with LARGEST the process of the recording FILE (FILE and
   FILE.<pid>...) with the largest peak, copied into BUF; says on stderr
   which (messages start "hpm CMD: ").  NULL after a message.  */
const char *trace_pick(const char *cmd, const char *file, int largest, char *buf, size_t len);

/* doctor.c: its readers of /sys and /proc text, for the tests.  */
void doctor_parse_choice(const char *text, char *out, size_t n);
long doctor_parse_long(const char *text, long dflt);
int doctor_parse_feature(const char *features, int bit);
int doctor_parse_hypervisor(const char *cpuinfo);
long doctor_parse_meminfo_hugepagesize(const char *meminfo);
int doctor_parse_buddyinfo(const char *text, long order, long page_kb, double *below, double *above);
double doctor_parse_zoneinfo_pcp(const char *zoneinfo, long page_kb);

/* util.c: helpers every command may use.  */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_done(void);
/* Is stderr a terminal (progress draws one line there)?  Otherwise long
   commands write a line of progress now and then instead.  */
int progress_on_terminal(void);
double now_s(void);
int parse_size(const char *s, uint64_t *out);
int parse_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);
const char *self_dir(void);
char *find_allocator(const char *name); /* NULL for glibc; malloc'd path, "" if not installed */
int allocator_found(const char *name);  /* glibc, or find_allocator finds it */
char *find_recorder(void);              /* libhpmtrace.so next to hpm; malloc'd path or NULL */
const char *format_doc_path(void);      /* where FORMAT.md is installed */
void json_str(FILE *f, const char *s);
/* Flat JSON objects as produced by `hpm replay --json`.  */
int json_get_num(const char *json, const char *key, double *out);

/* allocators.c: the allocators hpm knows and the malloc tunables each
   reads (ordered: an entry needing READS_GLIBC is read by READS_GLIBC and
   READS_ALL allocators); --tunables checked against tunables/tunables.c.  */
enum { READS_UNKNOWN = -1, READS_NONE, READS_GLIBC, READS_ALL };
void installed_allocators(char *buf, size_t n);           /* "glibc, hpmalloc, jemalloc" */
int allocator_missing(const char *cmd, const char *name); /* says what is installed; returns 1 */
int allocator_reads(const char *name);                    /* READS_*: glibc, hpmalloc, a lib*.so path */
const char *allocator_reads_text(const char *name);       /* "reads no GLIBC_TUNABLES malloc tunable" */
/* TUN (GLIBC_TUNABLES syntax) split into the entries allocator ALLOC reads
   (EFF) and those it does not (DROPPED); both cut to fit.  */
void tunables_split(const char *alloc, const char *tun, char *eff, size_t effn, char *dropped, size_t dn);
/* 0, or -1 with why in ERR (the first entry hpmalloc would ignore: an
   unknown name with the valid ones, a value not a number, out of range).  */
int tunables_check(const char *s, char *err, size_t errlen);
int tunables_arg(void *field, const char *val, char *err, size_t errlen); /* ARG_FN: a checked const char * */

/* Commands: `hpm NAME ARGS...` runs cmd_NAME(argc, argv) with argv[0] =
   NAME (the table in hpm.c); the result is the exit status.  */
int cmd_record(int argc, char **argv);    /* record.c */
int cmd_replay(int argc, char **argv);    /* replay.c */
int cmd_engine(int argc, char **argv);    /* engine.c: `hpm __engine`, run by replay */
int cmd_compare(int argc, char **argv);   /* compare.c */
int cmd_analyze(int argc, char **argv);   /* analyze.c */
int cmd_tune(int argc, char **argv);      /* tune.c */
int cmd_tlbcost(int argc, char **argv);   /* tlbcost.c */
int cmd_dump(int argc, char **argv);      /* dump.c */
int cmd_reencode(int argc, char **argv);  /* dump.c */
int cmd_ls(int argc, char **argv);        /* ls.c */
int cmd_doctor(int argc, char **argv);    /* doctor.c */
int cmd_tlbdecode(int argc, char **argv); /* tlb.c: `hpm __tlbdecode`, for the tests */
int cmd_tlbsim(int argc, char **argv);    /* tlb.c: `hpm __tlbsim`, for the tests */

/* TLB model (tlb.c).  */
struct tlb_level {
  unsigned entries, ways;
};
struct tlb_geom {
  char name[32];
  struct tlb_level l1_4k, l1_2m, l2;   /* l2: shared 4K/2M STLB */
  unsigned l2_hit_cycles, walk_cycles; /* cost of an L1 miss hitting L2, of a page walk */
  /* 1 GiB pages: an L1 dTLB and an L2 level of their own; 0 entries = none
     (l1_1g none: 1G pages go through the 2M structures, as CPUs without
     1G entries splinter them; l2_1g none: an L1 1G miss looks the 2M
     splinter up in the shared l2).  */
  struct tlb_level l1_1g, l2_1g;
};
int tlb_geom_get(const char *spec, struct tlb_geom *g, char *err, size_t errlen);
/* tlb_geom_get as an ARG_FN setter (args.h): FIELD is a struct tlb_geom.  */
int tlb_geom_arg(void *field, const char *val, char *err, size_t errlen);
void tlb_geom_list(FILE *f);
struct tlb_sim;
struct tlb_sim *tlb_sim_new(const struct tlb_geom *g);
/* PAGE: 0 = 4 KiB, 1 = 2 MiB, 2 = 1 GiB, or a page shift (>= 12: below 21
   is 4K, below 30 is 2M, else 1G).  */
void tlb_sim_access(struct tlb_sim *s, uint64_t addr, int page);
void tlb_sim_counts(const struct tlb_sim *s, uint64_t *accesses, uint64_t *l1_misses, uint64_t *walks);
void tlb_sim_free(struct tlb_sim *s);
double tlbcost_cached_ns(void); /* measured walk cost, or 0 */
/* The walk cost as `hpm tlbcost` measures it, at the working set WS only
   (READS dependent loads on 4 KiB pages, then on THP: ns per load into
   NS[0] and NS[1], -1 where unmappable); 0 if unknown.  For hpm doctor.  */
double tlbcost_walk_ns(uint64_t ws, uint64_t reads, double ns[2]);

#endif
