/* SPDX-License-Identifier: MIT */
/* hp_linux.h: helpers shared by the Linux sysdeps files (os.c, probe.c, census.c),
 * exposed for the unit tests.  MIT licence.  Not part of the core's
 * interface: only sysdeps/unix/sysv/linux/ and tests include it.
 *
 * None of these allocates: files are read with open/read into the caller's
 * buffer, directories with getdents64 into a stack buffer.  */
#ifndef HP_LINUX_H
#define HP_LINUX_H

#include "hp_sys.h"

/* Build "<root><rel>" in out[cap].  root may be "" (the live system); rel
   starts with '/'.  Returns 0, or -1 when it does not fit.  */
int hp_linux_path(char *out, size_t cap, const char *root, const char *rel);

/* Read at most size - 1 bytes of the file at path into buf (size >= 1) and
   NUL-terminate them: buf[return] == '\0' always holds on success.  A file
   longer than that is truncated.  Returns the byte count, or -1 with errno
   when the file cannot be opened or read.  */
long hp_linux_read_file(const char *path, char *buf, size_t size);

/* Called with each line of a file, '\n' replaced by '\0'.  Return non-zero
   to stop reading.  */
typedef int (*hp_line_fn)(char *line, void *ctx);

/* Call fn for each line of the file at path, reading through buf[size]
   (size >= 2).  A line that does not fit in size - 1 bytes is skipped whole.
   Returns 0 when the file was read (to its end or until fn stopped), -1
   when it could not be opened or read.  */
int hp_linux_read_lines(const char *path, char *buf, size_t size, hp_line_fn fn, void *ctx);

/* Parse a decimal number at *s (leading blanks skipped), advance *s past it.
   Returns 0, or -1 when there is no digit or it overflows.  */
int hp_linux_parse_u64(const char **s, uint64_t *out);

/* The mode named in brackets in transparent_hugepage/enabled text
   ("always [madvise] never"); HP_THP_UNSUPPORTED for anything else.  */
enum hp_thp_mode hp_linux_parse_thp(const char *text);

/* The number of CPUs in a kernel CPU list ("0-3,8,10-11\n"); 0 when the text
   is not one.  */
unsigned hp_linux_count_cpulist(const char *text);

/* Whether ibm,processor-segment-sizes (big-endian 32-bit cells, each a
   segment size shift; 0xffffffff = unused) lists 40, a 1 TiB segment.
   Returns 1 or 0, or -1 when len is not a non-zero multiple of 4.  */
int hp_linux_seg_sizes_have_1t(const unsigned char *cells, size_t len);

/* ---------------------------------------------------------------- census.c */

/* One entry of PAGEMAP_SCAN's output (the kernel's struct page_region):
   the pages [start, end) have the categories asked for.  */
struct hp_page_region {
  uint64_t start, end, categories;
};

/* The bytes of v[0..n) that lie inside [lo, hi).  */
uint64_t hp_linux_regions_bytes(const struct hp_page_region *v, size_t n, uint64_t lo, uint64_t hi);

/* Measure r[0..n) with the PAGEMAP_SCAN ioctl on fd, an open
   /proc/self/pagemap: each r[i].huge gets the bytes of present pages the
   kernel calls huge (PMD-mapped THP, hugetlb).  0, or -1 with errno
   (ENOTTY or EINVAL: this kernel has no PAGEMAP_SCAN, before Linux 6.7).  */
int hp_linux_scan_huge(int fd, struct hp_mem_range *r, size_t n);

/* The smaps parser: lines of /proc/<pid>/smaps in, for each range the
   huge-page bytes of the mappings it overlaps (AnonHugePages,
   Private_Hugetlb, Shared_Hugetlb) out, a mapping that crosses a range's
   edge shared in proportion to the overlap.  A header line too long for
   the line buffer (a file mapping's long path: never the allocator's
   anonymous memory) leaves its mapping unseen: its fields are dropped,
   which "Size:" not matching the header, or "VmFlags:" (the last field of
   each mapping) ending the previous one, makes sure of.  */
struct hp_smaps {
  struct hp_mem_range *r;
  size_t n;
  uint64_t lo, hi; /* the mapping whose fields come now; lo == hi: none */
};
/* Start a parse for r[0..n): their `huge` become 0.  */
void hp_linux_smaps_start(struct hp_smaps *sm, struct hp_mem_range *r, size_t n);
/* An hp_line_fn taking one line of smaps (ctx: the struct hp_smaps).
   Returns 0: read on.  */
int hp_linux_smaps_line(char *line, void *ctx);
/* Read the smaps file at path for r[0..n): 0, or -1 with errno when it
   cannot be read.  */
int hp_linux_smaps_huge(const char *path, struct hp_mem_range *r, size_t n);

#endif
