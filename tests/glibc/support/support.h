/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/support.h>: helpers used by glibc's
   malloc tests.  Written for hpmalloc; MIT licence.  */
#ifndef HPM_SUPPORT_SUPPORT_H
#define HPM_SUPPORT_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/cdefs.h>
#include <sys/types.h>

__BEGIN_DECLS

/* Redirect standard error to /dev/null (for tests that expect a crash
   message they do not want to see).  */
void ignore_stderr (void);

/* Write MESSAGE to standard output with write(2): usable in signal
   handlers.  */
void write_message (const char *message);

/* Memory shared with forked subprocesses (MAP_SHARED|MAP_ANONYMOUS),
   zero-filled.  Terminates the process on failure.  */
void *support_shared_allocate (size_t size);
void support_shared_free (void *ptr);

/* Allocation wrappers that terminate the test on failure (they call the
   allocator under test).  */
void *xmalloc (size_t n) __attribute__ ((malloc, alloc_size (1)));
void *xcalloc (size_t n, size_t s) __attribute__ ((malloc, alloc_size (1, 2)));
void *xrealloc (void *p, size_t n) __attribute__ ((alloc_size (2)));
void *xposix_memalign (size_t alignment, size_t n);
char *xstrdup (const char *s) __attribute__ ((malloc));
char *xstrndup (const char *s, size_t n) __attribute__ ((malloc));
char *xasprintf (const char *format, ...)
  __attribute__ ((format (printf, 1, 2), malloc));

/* The directory for temporary files (TMPDIR or /tmp), set by the test
   driver.  */
extern const char *test_dir;
void support_set_test_dir (const char *path);

__END_DECLS

#endif
