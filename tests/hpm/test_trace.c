/* SPDX-License-Identifier: MIT */
/* Criterion tests of the trace codec (tools/hpm/trace.c): every event kind
   with edge values survives encode -> hpm_trace_read_buffer -> encode byte
   for byte; damaged buffers are refused with the offset; truncation keeps
   whole chunks.  MIT licence.  */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static unsigned char buf[1 << 16];

/* A trace of EV (one chunk per thread run) into buf; returns its length.  */
static size_t build(const struct hpm_event *ev, size_t n)
{
  static char cmd[] = "prog\0arg";
  struct hpm_header h = { .page_size = 4096, .thp_mode = 2, .pid = 77, .ppid = 1, .clock_id = 1,
                          .start_ns = 123456789, .start_realtime_ns = 1700000000000000000ull,
                          .cmdline = cmd, .cmdline_len = sizeof cmd - 1 };
  unsigned char *p = hpm_encode_header(buf, &h);
  size_t i = 0;
  while (i < n) {
    unsigned char *ch = p, *q = p + HPM_CHUNK_HDR;
    uint64_t t = ev[i].t, id = 5, base_t = t;
    uint32_t th = ev[i].thread, k = 0;
    for (; i < n && ev[i].thread == th; i++, k++)
      q = hpm_encode_event(q, &ev[i], &t, &id);
    hpm_encode_chunk_header(ch, th, k, base_t, 5, (uint32_t) (q - ch - HPM_CHUNK_HDR));
    p = q;
  }
  return (size_t) (p - buf);
}

static const struct hpm_event sample[] = {
  { .thread = 1, .t = 10, .kind = HPM_THREAD_START, .arg = 4242, .arg2 = 0 },
  { .thread = 1, .t = 11, .kind = HPM_MALLOC, .size = 0, .id = 6 },
  { .thread = 1, .t = 11, .kind = HPM_MALLOC, .size = UINT64_MAX, .id = 1000000 },
  { .thread = 1, .t = 20, .kind = HPM_CALLOC, .arg = UINT64_MAX, .size = 2, .flags = HPM_F_FAIL },
  { .thread = 1, .t = 30, .kind = HPM_REALLOC, .ref = 6, .size = 100, .dur = 5, .id = 7 },
  { .thread = 1, .t = 40, .kind = HPM_REALLOCARRAY, .ref = HPM_REF_NULL, .arg = 3, .size = 4, .dur = 1, .id = 3 },
  { .thread = 1, .t = 50, .kind = HPM_REALLOC, .ref = 7, .size = 0, .dur = 2, .flags = HPM_F_FAIL | HPM_F_OLD_FREED },
  { .thread = 1, .t = 60, .kind = HPM_MEMALIGN, .arg = 64, .size = 10, .id = 4 },
  { .thread = 1, .t = 70, .kind = HPM_POSIX_MEMALIGN, .arg = 3, .size = 10, .flags = HPM_F_FAIL },
  { .thread = 1, .t = 80, .kind = HPM_ALIGNED_ALLOC, .arg = 1ull << 40, .size = 1ull << 40, .id = UINT64_MAX },
  { .thread = 1, .t = 90, .kind = HPM_VALLOC, .size = 1, .id = 2 },
  { .thread = 1, .t = 1ull << 60, .kind = HPM_PVALLOC, .size = 1, .id = 8 },
  { .thread = 2, .t = 5, .kind = HPM_FREE, .ref = 1000000 },
  { .thread = 2, .t = 6, .kind = HPM_FREE, .ref = HPM_REF_UNKNOWN },
  { .thread = 2, .t = 7, .kind = HPM_FREE, .ref = HPM_REF_NULL },
  { .thread = 2, .t = 8, .kind = HPM_FREE_SIZED, .ref = UINT64_MAX, .size = 77 },
  { .thread = 2, .t = 9, .kind = HPM_THREAD_EXIT },
};
#define NSAMPLE (sizeof sample / sizeof *sample)

Test(trace, crc32c_check_value)
{
  cr_assert_eq(hpm_crc32("123456789", 9), 0xE3069283u);
}

Test(trace, every_kind_round_trips_byte_exact)
{
  size_t len = build(sample, NSAMPLE);
  struct hpm_trace tr;
  char err[256];
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), 0, "%s", err);
  cr_assert_eq(tr.nev, NSAMPLE);
  cr_assert_eq(tr.nchunks, 2);
  cr_assert_str_eq(tr.warning, "");
  cr_assert_eq(tr.hdr.pid, 77);
  cr_assert_eq(tr.hdr.cmdline_len, 8);
  cr_assert(memcmp(tr.hdr.cmdline, "prog\0arg", 8) == 0);
  for (size_t i = 0; i < NSAMPLE; i++) {
    const struct hpm_event *a = &sample[i], *b = &tr.ev[i];
    cr_expect_eq(a->kind, b->kind, "event %zu", i);
    cr_expect_eq(a->t, b->t, "event %zu time", i);
    cr_expect_eq(a->size, b->size, "event %zu size", i);
    cr_expect_eq(a->arg, b->arg, "event %zu arg", i);
    cr_expect_eq(a->ref, b->ref, "event %zu ref", i);
    cr_expect_eq(a->id, b->id, "event %zu id", i);
    cr_expect_eq(a->dur, b->dur, "event %zu dur", i);
    cr_expect_eq(a->flags & (HPM_F_FAIL | HPM_F_OLD_FREED), b->flags & (HPM_F_FAIL | HPM_F_OLD_FREED), "event %zu flags", i);
    cr_expect_eq(a->thread, b->thread);
  }
  unsigned char *out;
  size_t outlen;
  cr_assert_eq(hpm_trace_encode(&tr, &out, &outlen), 0);
  cr_assert_eq(outlen, len);
  cr_assert(memcmp(out, buf, len) == 0);
  free(out);
  hpm_trace_free(&tr);
}

Test(trace, small_malloc_is_compact)
{
  struct hpm_event e = { .thread = 1, .t = 100, .kind = HPM_MALLOC, .size = 32, .id = 6 };
  unsigned char tmp[HPM_MAX_EVENT];
  uint64_t t = 0, id = 5;
  cr_assert_eq(hpm_encode_event(tmp, &e, &t, &id) - tmp, 3);   /* op, dt, size; id implicit */
  struct hpm_event f = { .thread = 1, .t = 100, .kind = HPM_FREE, .ref = 6 };
  cr_assert_eq(hpm_encode_event(tmp, &f, &t, &id) - tmp, 3);   /* op, dt, ref */
}

Test(trace, truncation_keeps_whole_chunks)
{
  size_t len = build(sample, NSAMPLE);
  struct hpm_trace tr;
  char err[256];
  cr_assert_eq(hpm_trace_read_buffer(buf, len - 1, &tr, err, sizeof err), 0, "%s", err);
  cr_assert_eq(tr.nchunks, 1);
  cr_assert_eq(tr.nev, 12);
  cr_assert(tr.truncated);
  cr_assert(strstr(tr.warning, "truncated") && strstr(tr.warning, "byte offset"));
  hpm_trace_free(&tr);
}

Test(trace, every_damaged_byte_is_caught_or_harmless)
{
  size_t len = build(sample, NSAMPLE);
  static unsigned char copy[sizeof buf];
  int refused = 0, accepted_trunc = 0;
  for (size_t pos = 0; pos < len; pos++) {
    memcpy(copy, buf, len);
    copy[pos] ^= 0x5A;
    struct hpm_trace tr;
    char err[256];
    if (hpm_trace_read_buffer(copy, len, &tr, err, sizeof err) == 0) {
      /* Only the header's flags (ignored), or a last chunk's length grown
         past the end of the file (read as truncated, with the warning).  */
      cr_assert(pos == 10 || pos == 11 || tr.truncated, "damage at %zu accepted", pos);
      accepted_trunc += tr.truncated;
      hpm_trace_free(&tr);
    } else {
      refused++;
      cr_assert(strstr(err, "byte offset "), "%s", err);
    }
  }
  /* At most the 4 length bytes of each of the 2 chunks read as truncation.  */
  cr_assert_leq(accepted_trunc, 8);
  cr_assert_geq(refused, (int) len - 2 - 8);
}

Test(trace, hostile_counts_and_lengths)
{
  size_t len = build(sample, 1);
  struct hpm_trace tr;
  char err[256];
  size_t hdr = HPM_FILE_HDR + hpm_get_u32(buf + 12) + 4;   /* the first chunk */
  hpm_put_u32(buf + hdr + 12, 0xFFFFFFFFu);      /* event count */
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), -1);
  cr_assert(strstr(err, "cannot fit"), "%s", err);
  build(sample, 1);
  hpm_put_u32(buf + hdr + 4, HPM_MAX_PAYLOAD + 1);   /* payload length */
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), -1);
  cr_assert(strstr(err, "too large"), "%s", err);
  cr_assert_eq(hpm_trace_read_buffer(buf, 0, &tr, err, sizeof err), -1);
  cr_assert(strstr(err, "byte offset 0: empty"), "%s", err);
}

/* Version 2: a stack chunk, events with the STACK flag (one naming a
   stack defined later in the file), a maps chunk; byte-exact again.  */
Test(trace, stacks_round_trip_byte_exact)
{
  static char cmd[] = "prog";
  struct hpm_header h = { .version = HPM_VERSION_STACKS, .page_size = 4096, .pid = 9, .clock_id = 1,
                          .stack_depth = 32, .unwinder = HPM_UNWIND_LIBUNWIND, .cmdline = cmd, .cmdline_len = 4 };
  static const uint64_t f1[] = { 0x401000, 0x7f0000001000ull }, f2[] = { 0x402000 };
  static const char maps[] = "00400000-00500000 r-xp 00000000 08:01 42 /bin/prog\n";
  struct hpm_event ev[] = {
    { .thread = 1, .t = 1, .kind = HPM_MALLOC, .size = 10, .id = 2, .stack = 1 },
    { .thread = 1, .t = 2, .kind = HPM_CALLOC, .arg = 2, .size = 3, .id = 3, .stack = 2 },
    { .thread = 1, .t = 3, .kind = HPM_MALLOC, .size = 1, .flags = HPM_F_FAIL, .stack = 1 },
    { .thread = 1, .t = 4, .kind = HPM_FREE, .ref = 2 },
  };
  unsigned char *p = hpm_encode_header(buf, &h), *q;
  q = hpm_encode_stack(p + HPM_CHUNK_HDR, 1, f1, 2);
  hpm_encode_other_header(p, HPM_STACK_MAGIC, 1, 1, (uint32_t) (q - p - HPM_CHUNK_HDR));
  p = q;
  uint64_t t = 0, id = 1;
  q = p + HPM_CHUNK_HDR;
  for (int i = 0; i < 4; i++)
    q = hpm_encode_event(q, &ev[i], &t, &id);
  hpm_encode_chunk_header(p, 1, 4, 0, 1, (uint32_t) (q - p - HPM_CHUNK_HDR));
  p = q;
  q = hpm_encode_stack(p + HPM_CHUNK_HDR, 2, f2, 1);
  hpm_encode_other_header(p, HPM_STACK_MAGIC, 1, 1, (uint32_t) (q - p - HPM_CHUNK_HDR));
  p = q;
  memcpy(p + HPM_CHUNK_HDR, maps, sizeof maps - 1);
  hpm_encode_other_header(p, HPM_MAPS_MAGIC, 0, 0, sizeof maps - 1);
  size_t len = (size_t) (p + HPM_CHUNK_HDR + sizeof maps - 1 - buf);

  struct hpm_trace tr;
  char err[256];
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), 0, "%s", err);
  cr_assert_eq(tr.hdr.version, 2);
  cr_assert_eq(tr.hdr.stack_depth, 32);
  cr_assert_eq(tr.hdr.unwinder, HPM_UNWIND_LIBUNWIND);
  cr_assert_eq(tr.nev, 4);
  cr_assert_eq(tr.nchunks, 4);
  cr_assert_eq(tr.nstacks, 2);
  cr_assert_eq(tr.ev[0].stack, 1);
  cr_assert_eq(tr.ev[1].stack, 2);
  cr_assert_eq(tr.ev[2].stack, 1, "a failed allocation keeps its stack");
  cr_assert_eq(tr.ev[3].stack, 0);
  const struct hpm_stack *s1 = hpm_trace_stack(&tr, 1), *s2 = hpm_trace_stack(&tr, 2);
  cr_assert(s1 && s2);
  cr_assert_eq(s1->nframes, 2);
  cr_assert_eq(tr.frames[s1->first + 1], 0x7f0000001000ull);
  cr_assert_eq(tr.frames[s2->first], 0x402000);
  cr_assert_null(hpm_trace_stack(&tr, 3));
  cr_assert_null(hpm_trace_stack(&tr, 0));
  cr_assert_str_eq(tr.maps, maps);
  unsigned char *out;
  size_t outlen;
  cr_assert_eq(hpm_trace_encode(&tr, &out, &outlen), 0);
  cr_assert_eq(outlen, len);
  cr_assert(memcmp(out, buf, len) == 0, "re-encoding differs");
  free(out);
  hpm_trace_free(&tr);

  /* The same bytes as version 1: the stack chunk is an unknown magic.  */
  buf[8] = 1;
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), -1);
}

Test(trace, stack_flag_only_in_version_2)
{
  struct hpm_event e = { .thread = 1, .t = 1, .kind = HPM_MALLOC, .size = 1, .id = 6, .stack = 7 };
  size_t len = build(&e, 1); /* a version 1 header */
  struct hpm_trace tr;
  char err[256];
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), -1);
  cr_assert(strstr(err, "invalid flags 0x90") != NULL, "%s", err);
}

Test(trace, end_marker_and_flags_round_trip_in_version_1)
{
  static char cmd[] = "prog";
  struct hpm_header h = { .flags = HPM_HDR_F_ENDS, .page_size = 4096, .pid = 9, .clock_id = 1, .cmdline = cmd,
                          .cmdline_len = 4 };
  struct hpm_event ev = { .thread = 1, .t = 1, .kind = HPM_MALLOC, .size = 10, .id = 2 };
  unsigned char *p = hpm_encode_header(buf, &h), *q = p + HPM_CHUNK_HDR;
  uint64_t t = 0, id = 1;
  q = hpm_encode_event(q, &ev, &t, &id);
  hpm_encode_chunk_header(p, 1, 1, 0, 1, (uint32_t) (q - p - HPM_CHUNK_HDR));
  p = q;
  /* The end marker: killed by signal 13 at 500 ns.  */
  hpm_encode_chunk_header(p, 1, 0, 500, HPM_END_SIGNAL | 13u << 8, 0);
  size_t len = (size_t) (p + HPM_CHUNK_HDR - buf);

  struct hpm_trace tr;
  char err[256];
  cr_assert_eq(hpm_trace_read_buffer(buf, len, &tr, err, sizeof err), 0, "%s", err);
  cr_assert_eq(tr.hdr.version, 1, "end markers need no new version");
  cr_assert_eq(tr.hdr.flags, HPM_HDR_F_ENDS);
  cr_assert_eq(tr.nev, 1);
  cr_assert_eq(tr.nchunks, 2);
  cr_assert_eq(tr.chunks[1].nevents, 0);
  cr_assert_eq(HPM_END_REASON(tr.chunks[1].base_id), HPM_END_SIGNAL);
  cr_assert_eq(HPM_END_VALUE(tr.chunks[1].base_id), 13);
  cr_assert_eq(tr.chunks[1].base_ns, 500);
  unsigned char *out;
  size_t outlen;
  cr_assert_eq(hpm_trace_encode(&tr, &out, &outlen), 0);
  cr_assert_eq(outlen, len);
  cr_assert(memcmp(out, buf, len) == 0, "re-encoding differs (flags or the empty chunk lost)");
  free(out);
  hpm_trace_free(&tr);
}
