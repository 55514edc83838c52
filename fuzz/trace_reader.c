/* fuzz/trace_reader.c: libFuzzer harness for the hpm trace reader.
 *
 * SPDX-License-Identifier: MIT
 *
 * Written against the reader's interface in tools/hpm/trace.h (branch hpm,
 * commit a8d0105), which names hpm_trace_read_buffer its fuzzing entry
 * point:
 *   int  hpm_trace_read_buffer(const void *buf, size_t len, struct hpm_trace *,
 *                              char *err, size_t errlen);
 *   int  hpm_trace_encode(const struct hpm_trace *, unsigned char **out, size_t *outlen);
 *   void hpm_trace_free(struct hpm_trace *);
 * mk/87-fuzz.mk builds it (with tools/hpm/trace.c alone) once
 * tools/hpm/trace.h is in the tree.
 *
 * The input is a trace file's bytes, copied into an allocation of exactly
 * that size so AddressSanitizer sees a read past the end.  Checked:
 *   - the reader either fails with a message, or succeeds with a
 *     consistent result (events of known kinds, chunk event ranges inside
 *     the event array and in order, cmdline NUL-terminated);
 *   - its allocation stays bounded by a small multiple of the input
 *     (events <= len / 2, as the interface promises);
 *   - round trip: what it read re-encodes, the encoding reads back to the
 *     same header, chunks and events with no truncation, and encoding that
 *     again gives the same bytes.  */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static void fail(const char *what) {
  fprintf(stderr, "trace_reader fuzz: %s\n", what);
  abort();
}

static void check_consistent(const struct hpm_trace *t, size_t len) {
  if (t->nev > len / 2 + 1) fail("more events than the input can hold");
  if (t->hdr.cmdline && t->hdr.cmdline[t->hdr.cmdline_len] != '\0') fail("cmdline not NUL-terminated");
  if (memchr(t->warning, '\0', sizeof t->warning) == NULL) fail("warning not NUL-terminated");
  size_t next = 0;
  for (size_t i = 0; i < t->nchunks; i++) {
    const struct hpm_chunk_info *c = &t->chunks[i];
    if (c->first_event != next || c->first_event + c->nevents > t->nev) fail("chunk's events out of range");
    /* FORMAT.md: a maps chunk is of thread 0, every other chunk of a thread >= 1 */
    if ((c->thread == 0) != (c->kind == HPM_CHUNK_MAPS)) fail("chunk of the wrong thread accepted");
    next += c->nevents;
  }
  if (next != t->nev) fail("chunks do not cover the events");
  for (size_t i = 0; i < t->nev; i++) {
    if (t->ev[i].kind >= HPM_NKINDS) fail("event of an unknown kind");
    if (t->ev[i].flags & ~HPM_F_MASK) fail("event with unknown flags");
  }
}

static void same_trace(const struct hpm_trace *a, const struct hpm_trace *b) {
  const struct hpm_header *x = &a->hdr, *y = &b->hdr;
  if (x->version != y->version || x->page_size != y->page_size || x->thp_mode != y->thp_mode ||
      x->pid != y->pid || x->ppid != y->ppid || x->clock_id != y->clock_id || x->start_ns != y->start_ns ||
      x->start_realtime_ns != y->start_realtime_ns || x->cmdline_len != y->cmdline_len)
    fail("round trip changed the header");
  if (x->cmdline_len && memcmp(x->cmdline, y->cmdline, x->cmdline_len) != 0) fail("round trip changed the cmdline");
  if (a->nchunks != b->nchunks || a->nev != b->nev) fail("round trip changed the chunk or event count");
  for (size_t i = 0; i < a->nchunks; i++) {
    const struct hpm_chunk_info *c = &a->chunks[i], *d = &b->chunks[i];
    if (c->thread != d->thread || c->nevents != d->nevents || c->base_ns != d->base_ns || c->base_id != d->base_id)
      fail("round trip changed a chunk");
  }
  for (size_t i = 0; i < a->nev; i++) {
    const struct hpm_event *e = &a->ev[i], *f = &b->ev[i];
    if (e->t != f->t || e->id != f->id || e->ref != f->ref || e->size != f->size || e->arg != f->arg ||
        e->dur != f->dur || e->thread != f->thread || e->arg2 != f->arg2 || e->kind != f->kind || e->flags != f->flags)
      fail("round trip changed an event");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  struct hpm_trace t, u;
  char err[256];
  memset(err, 0x55, sizeof err);
  if (hpm_trace_read_buffer(buf, size, &t, err, sizeof err) != 0) {
    if (memchr(err, '\0', sizeof err) == NULL || err[0] == '\0') fail("failure without a message");
    free(buf);
    return 0;
  }
  check_consistent(&t, size);

  unsigned char *enc = NULL, *enc2 = NULL;
  size_t elen = 0, elen2 = 0;
  if (hpm_trace_encode(&t, &enc, &elen) != 0) fail("a trace that was read does not encode");
  /* read the encoding from an exact-size copy too */
  if (hpm_trace_read_buffer(enc, elen, &u, err, sizeof err) != 0) {
    fprintf(stderr, "re-read: %s\n", err);
    fail("the re-encoded trace does not read back");
  }
  if (u.truncated) fail("the re-encoded trace reads as truncated");
  check_consistent(&u, elen);
  same_trace(&t, &u);
  if (hpm_trace_encode(&u, &enc2, &elen2) != 0) fail("second encode failed");
  if (elen != elen2 || memcmp(enc, enc2, elen) != 0) fail("encoding is not canonical");
  free(enc);
  free(enc2);
  hpm_trace_free(&u);
  hpm_trace_free(&t);
  free(buf);
  return 0;
}
