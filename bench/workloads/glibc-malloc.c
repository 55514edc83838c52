/* SPDX-License-Identifier: MIT */
/* glibc-malloc: a preload that sends the malloc API to glibc's own malloc.
 * MIT licence.
 *
 * For programs linked with another allocator: Debian's redis-server links
 * libjemalloc, so without a preload the "glibc" contenders of run-bench.py
 * would measure jemalloc.  Preloaded, these definitions come before
 * jemalloc's in symbol lookup, every call goes to glibc's malloc, and
 * GLIBC_TUNABLES (glibc.malloc.hugetlb) reach it.  The cost is one extra
 * call per operation.
 *
 * glibc exports its allocator under __libc_* names; malloc_usable_size has
 * no such name, so it is looked up through a handle of libc.so.6.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
void *valloc(size_t n) { return __libc_valloc(n); }
void *pvalloc(size_t n) { return __libc_pvalloc(n); }

/* glibc 2.36's aligned_alloc is its memalign.  */
void *aligned_alloc(size_t align, size_t n) { return __libc_memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
  if (align == 0 || align % sizeof(void *) != 0 || (align & (align - 1)) != 0) return EINVAL;
  int saved = errno;
  void *p = __libc_memalign(align, n);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

static size_t (*libc_usable_size)(void *);

size_t malloc_usable_size(void *p) {
  if (!libc_usable_size) {
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *f = libc ? dlsym(libc, "malloc_usable_size") : NULL; /* searches libc first */
    if (!f) {
      static const char msg[] = "glibc-malloc: glibc's malloc_usable_size not found\n";
      (void)!write(2, msg, sizeof msg - 1);
      abort();
    }
    *(void **)&libc_usable_size = f;
  }
  return libc_usable_size(p);
}
