/* SPDX-License-Identifier: MIT */
/* hpm analyze --stacks and --flame: call sites by live bytes at the peak,
   bytes never freed and allocations (stacks.c), the symbols of their
   frames (symbolize.c) and the flame graph (flame.c).  MIT licence.  */
#ifndef HPM_STACKS_H
#define HPM_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "hpm.h"

/* One frame's symbol: FUNC always (a name, or OBJECT+0xOFFSET where no
   symbol's extent holds the address), FILE and LINE where debug
   information says (else NULL, 0), OBJ and PATH the object, ADDR the
   return address in the traced process, OFFSET the ELF virtual address of
   the call instruction (ADDR - 1) in OBJ (0: no object).  CHECKED: FUNC
   is a symbol whose extent holds OFFSET (or a function DWARF says was
   inlined there).  A return address in inlined code has a chain of
   frames: the innermost (INLINED set) first, CALLER the function its
   code was inlined into, the last one the function the symbol table
   names.  */
struct sym {
  char *func, *file;
  unsigned line;
  int checked, inlined;
  const char *obj, *path; /* the object's base name and path (from the maps) */
  uint64_t addr, offset;
  struct sym *caller;
};

/* Symbols for the N return addresses ADDR, placed with the maps text
   MAPS (NULL: none), into OUT.  *NFILES: object files libdw read.
   Returns 0, or -1 when out of memory.  Release with sym_free.  */
int symbolize(const char *maps, const uint64_t *addr, size_t n, struct sym *out, size_t *nfiles);
void sym_free(struct sym *s, size_t n);

/* What a stack or call site is weighed by (SM_*), and the object counts
   kept beside (SV_*).  */
enum stack_metric { SM_PEAK, SM_LEAKED, SM_COUNT, SM_BYTES, SM_N, SV_PEAK_OBJS = SM_N, SV_LEAKED_OBJS, SV_N };

/* A call site: the first frame of a stack that is not an allocation
   function (operator new, strdup, ...), by function and line.  */
struct site {
  size_t frame;      /* its symbol: index into stacks_result.sym */
  uint64_t v[SV_N];  /* bytes live at the peak, never freed, allocations, bytes allocated, objects */
  size_t best[SM_N]; /* per metric, the stack (index into the trace's stacks) weighing most */
};

struct stacks_result {
  uint64_t *sv;        /* per stack of the trace, SV_N values */
  uint64_t none[SV_N]; /* objects without a (known) stack */
  size_t used;         /* stacks with at least one allocation */
  uint64_t *addr;      /* the distinct frame addresses, sorted */
  struct sym *sym;     /* their symbols */
  size_t naddr, nfiles;
  struct site *sites;
  size_t nsites;
};

int stacks_run(const struct hpm_trace *tr, const struct prep *p, struct stacks_result *r);
void stacks_report_text(const struct hpm_trace *tr, const struct prep *p, const struct stacks_result *r, int top);
void stacks_report_json(const struct hpm_trace *tr, const struct stacks_result *r, int top);
/* The folded stacks (FOLDED) and their flame graph (SVG) by METRIC.
   Returns 0, or 1 after a message.  */
int stacks_flame(const char *svg, const char *folded, const struct hpm_trace *tr, const struct stacks_result *r,
                 int metric, const char *title);
void stacks_free(struct stacks_result *r);
/* flame.c: an SVG flame graph of folded stacks ("a;b;c 123" lines) in
   FOLDED (NUL-terminated), values in UNIT.  Returns 0, or -1 (errno).  */
int flame_svg(const char *path, const char *folded, const char *title, const char *unit);

#endif
