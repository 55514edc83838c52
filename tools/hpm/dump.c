/* SPDX-License-Identifier: MIT */
/* hpm dump and hpm reencode: a trace as text, event by event, and a trace
   decoded and encoded again (the format's round-trip check).  MIT licence.  */
#include "args.h"
#include "hpm.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct dump_opts {
  const char *file, *out; /* out: reencode only */
};

static const struct arg_opt dump_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct dump_opts, file), .required = 1, .doc = "the trace" },
  { 0 },
};

static const struct arg_cmd dump_cmd = {
  .name = "dump",
  .synopsis = "usage: hpm dump FILE\n",
  .help = "Prints the trace's header, a line naming the columns, then one line per event\n"
          "in time order (the recorder's clock; events of the same time in file order).\n",
  .args = dump_args,
};

static const struct arg_opt reencode_args[] = {
  { .name = "FILE", .kind = ARG_STR, .off = offsetof(struct dump_opts, file), .required = 1, .doc = "the trace" },
  { .name = "OUT", .kind = ARG_STR, .off = offsetof(struct dump_opts, out), .required = 1, .doc = "the file to write" },
  { 0 },
};

static const struct arg_cmd reencode_cmd = {
  .name = "reencode",
  .synopsis = "usage: hpm reencode FILE OUT\n",
  .help = "Decodes FILE and encodes it again into OUT; for a file written by\n"
          "the recorder OUT is byte-identical.\n",
  .args = reencode_args,
};

/* Events in time order; the same time: file order (qsort is not stable).  */
static const struct hpm_trace *sort_tr;
static int by_time(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  uint64_t ti = sort_tr->ev[i].t, tj = sort_tr->ev[j].t;
  return ti != tj ? (ti < tj ? -1 : 1) : (i > j) - (i < j);
}

/* The header, the columns' names, the events in time order (the file
   holds them chunk by chunk, a chunk one thread's events in program
   order: threads are not interleaved there).  Returns 0, or 1 when out
   of memory.  */
static int dump_report(const struct hpm_trace *tr) {
  const struct hpm_header *h = &tr->hdr;
  size_t *order = malloc((tr->nev ? tr->nev : 1) * sizeof *order);
  if (!order) {
    fprintf(stderr, "hpm dump: out of memory sorting %zu events\n", tr->nev);
    return 1;
  }
  for (size_t k = 0; k < tr->nev; k++) order[k] = k;
  sort_tr = tr;
  qsort(order, tr->nev, sizeof *order, by_time);
  printf("version %u page_size %llu thp %llu pid %llu ppid %llu clock %llu chunks %zu events %zu\ncmdline:", h->version,
         (unsigned long long)h->page_size, (unsigned long long)h->thp_mode, (unsigned long long)h->pid,
         (unsigned long long)h->ppid, (unsigned long long)h->clock_id, tr->nchunks, tr->nev);
  for (size_t k = 0; k < h->cmdline_len; k++) putchar(h->cmdline[k] ? h->cmdline[k] : ' ');
  putchar('\n');
  printf("# events in time order (ties in file order): thread time_ns kind [FAIL] [OLD_FREED] size= arg= id= ref= "
         "dur=\n");
  for (size_t k = 0; k < tr->nev; k++) {
    const struct hpm_event *e = &tr->ev[order[k]];
    printf("%u %llu %s%s%s size=%llu arg=%llu id=%llu ref=%llu dur=%llu\n", e->thread, (unsigned long long)e->t,
           hpm_kind_name(e->kind), e->flags & HPM_F_FAIL ? " FAIL" : "", e->flags & HPM_F_OLD_FREED ? " OLD_FREED" : "",
           (unsigned long long)e->size, (unsigned long long)e->arg, (unsigned long long)e->id,
           (unsigned long long)e->ref, (unsigned long long)e->dur);
  }
  free(order);
  return 0;
}

int cmd_dump(int argc, char **argv) {
  struct dump_opts o = { 0 };
  struct hpm_trace tr;
  int rc = args_parse(&dump_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  if (load_trace(o.file, &tr, NULL)) return 1;
  rc = dump_report(&tr);
  hpm_trace_free(&tr);
  return rc;
}

/* Encode TR into the file OUT.  Returns 0, or 1 after a message.  */
static int reencode_write(const struct hpm_trace *tr, const char *out) {
  unsigned char *buf;
  size_t len;
  if (hpm_trace_encode(tr, &buf, &len)) {
    fprintf(stderr, "hpm reencode: out of memory encoding %zu events\n", tr->nev);
    return 1;
  }
  int rc = 1;
  FILE *f = fopen(out, "wb");
  if (f) {
    int ok = fwrite(buf, 1, len, f) == len && !ferror(f);
    if (fclose(f) == 0 && ok) rc = 0;
  }
  if (rc) fprintf(stderr, "hpm reencode: %s: %s\n", out, strerror(errno));
  free(buf);
  return rc;
}

int cmd_reencode(int argc, char **argv) {
  struct dump_opts o = { 0 };
  struct hpm_trace tr;
  int rc = args_parse(&reencode_cmd, argc, argv, &o);
  if (rc != ARGS_RUN) return rc;
  if (load_trace(o.file, &tr, NULL)) return 1;
  rc = reencode_write(&tr, o.out);
  hpm_trace_free(&tr);
  return rc;
}
