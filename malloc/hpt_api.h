/* SPDX-License-Identifier: MIT */
/* hpt_api.h: the public API as the test build names it (hpt_malloc, ...),
 * for unit tests that drive the allocator beside the system's malloc.  */
#ifndef HP_HPT_API_H
#define HP_HPT_API_H

#include <malloc.h>
#include <stddef.h>
#include <stdio.h>

void *hpt_malloc(size_t n);
void hpt_free(void *p);
void hpt_free_sized(void *p, size_t size);
void hpt_free_aligned_sized(void *p, size_t alignment, size_t size);
void *hpt_calloc(size_t n, size_t size);
void *hpt_realloc(void *p, size_t n);
void *hpt_reallocarray(void *p, size_t n, size_t size);
void *hpt_memalign(size_t alignment, size_t n);
void *hpt_aligned_alloc(size_t alignment, size_t n);
int hpt_posix_memalign(void **out, size_t alignment, size_t n);
void *hpt_valloc(size_t n);
void *hpt_pvalloc(size_t n);
size_t hpt_malloc_usable_size(void *p);
int hpt_mallopt(int param, int value);
int hpt_malloc_trim(size_t pad);
struct mallinfo2 hpt_mallinfo2(void);
struct mallinfo hpt_mallinfo(void);
void hpt_malloc_stats(void);
int hpt_malloc_info(int options, FILE *fp);

#endif
