/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's test-support library: failure recording,
   checks, allocation wrappers, shared memory, stderr.  Written for
   hpmalloc; MIT licence.  */
#include <support/check.h>
#include <support/support.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* --- failure recording -----------------------------------------------
   One flag in a MAP_SHARED page, mapped before main (and so before the
   driver forks), so a failure recorded in any subprocess reaches the
   supervising process.  */
static volatile unsigned int *failure_flag;
static unsigned int failure_flag_fallback;

__attribute__ ((constructor)) static void
failure_flag_init (void)
{
  void *p = mmap (NULL, sizeof (unsigned int), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    {
      printf ("warning: cannot map the shared failure flag: %m\n");
      p = &failure_flag_fallback;
    }
  failure_flag = p;
}

void
support_record_failure (void)
{
  if (failure_flag == NULL)
    failure_flag_init ();
  __atomic_store_n (failure_flag, 1, __ATOMIC_RELAXED);
}

void
support_record_failure_reset (void)
{
  if (failure_flag != NULL)
    __atomic_store_n (failure_flag, 0, __ATOMIC_RELAXED);
}

int
support_record_failure_is_failed (void)
{
  return failure_flag != NULL && __atomic_load_n (failure_flag,
                                                  __ATOMIC_RELAXED) != 0;
}

int
support_report_failure (int status)
{
  if (support_record_failure_is_failed ())
    {
      if (status == 0 || status == 77)
        {
          printf ("error: a failure was recorded (the test returned %d)\n",
                  status);
          return 1;
        }
    }
  return status;
}

/* --- check.h ----------------------------------------------------------- */
static void
print_failure_v (const char *file, int line, const char *format, va_list ap)
{
  int saved = errno;
  printf ("error: %s:%d: ", file, line);
  errno = saved;                /* for %m in FORMAT */
  vprintf (format, ap);
  putchar ('\n');
}

int
support_print_failure_impl (const char *file, int line,
                            const char *format, ...)
{
  support_record_failure ();
  va_list ap;
  va_start (ap, format);
  print_failure_v (file, line, format, ap);
  va_end (ap);
  return 1;
}

void
support_exit_failure_impl (int status, const char *file, int line,
                           const char *format, ...)
{
  if (status != 0 && status != 77)
    support_record_failure ();
  va_list ap;
  va_start (ap, format);
  print_failure_v (file, line, format, ap);
  va_end (ap);
  fflush (stdout);
  exit (status);
}

void
support_test_verify_impl (const char *file, int line, const char *expr)
{
  int saved = errno;
  support_record_failure ();
  printf ("error: %s:%d: not true: %s\n", file, line, expr);
  errno = saved;
}

void
support_test_verify_exit_impl (int status, const char *file, int line,
                               const char *expr)
{
  support_test_verify_impl (file, line, expr);
  fflush (stdout);
  exit (status);
}

static void
print_value (const char *expr, long long int value, int negative, int size)
{
  unsigned long long int u = (unsigned long long int) value;
  if (size < (int) sizeof (u))
    u &= (1ULL << (size * 8)) - 1;
  if (negative)
    printf ("  value: %lld (0x%llx); from: %s\n", value, u, expr);
  else
    printf ("  value: %llu (0x%llx); from: %s\n", u, u, expr);
}

void
support_test_compare_failure (const char *file, int line,
                              const char *left_expr, long long int left_value,
                              int left_negative, int left_size,
                              const char *right_expr,
                              long long int right_value, int right_negative,
                              int right_size)
{
  int saved = errno;
  support_record_failure ();
  if (left_size != right_size)
    printf ("error: %s:%d: comparison of %d-byte and %d-byte values failed\n",
            file, line, left_size, right_size);
  else
    printf ("error: %s:%d: %d-byte value comparison failed\n",
            file, line, left_size);
  print_value (left_expr, left_value, left_negative, left_size);
  print_value (right_expr, right_value, right_negative, right_size);
  errno = saved;
}

void
support_test_compare_blob (const void *left, unsigned long int llength,
                           const void *right, unsigned long int rlength,
                           const char *file, int line,
                           const char *left_exp, const char *left_len_exp,
                           const char *right_exp, const char *right_len_exp)
{
  if (llength == rlength
      && (llength == 0 || memcmp (left, right, llength) == 0))
    return;
  support_record_failure ();
  printf ("error: %s:%d: blob comparison failed\n", file, line);
  printf ("  left: %s (length %s = %lu)\n", left_exp, left_len_exp, llength);
  printf ("  right: %s (length %s = %lu)\n", right_exp, right_len_exp,
          rlength);
}

void
support_test_compare_string (const char *left, const char *right,
                             const char *file, int line,
                             const char *left_expr, const char *right_expr)
{
  if (left == NULL && right == NULL)
    return;
  if (left != NULL && right != NULL && strcmp (left, right) == 0)
    return;
  support_record_failure ();
  printf ("error: %s:%d: string comparison failed\n", file, line);
  printf ("  left: %s%s%s; from: %s\n", left ? "\"" : "",
          left ? left : "(null)", left ? "\"" : "", left_expr);
  printf ("  right: %s%s%s; from: %s\n", right ? "\"" : "",
          right ? right : "(null)", right ? "\"" : "", right_expr);
}

/* --- allocation wrappers ---------------------------------------------- */
static void __attribute__ ((noreturn))
oom (const char *function, size_t size)
{
  printf ("error: %s: allocation of %zu bytes failed: %m\n", function, size);
  support_record_failure ();
  exit (1);
}

void *
xmalloc (size_t n)
{
  void *p = malloc (n);
  if (p == NULL)
    oom ("malloc", n);
  return p;
}

void *
xcalloc (size_t n, size_t s)
{
  void *p = calloc (n, s);
  if (p == NULL)
    oom ("calloc", n * s);
  return p;
}

void *
xrealloc (void *old, size_t n)
{
  void *p = realloc (old, n);
  if (p == NULL && n != 0)
    oom ("realloc", n);
  return p;
}

void *
xposix_memalign (size_t alignment, size_t n)
{
  void *p = NULL;
  int ret = posix_memalign (&p, alignment, n);
  if (ret != 0)
    {
      errno = ret;
      oom ("posix_memalign", n);
    }
  return p;
}

char *
xstrdup (const char *s)
{
  char *p = strdup (s);
  if (p == NULL)
    oom ("strdup", strlen (s) + 1);
  return p;
}

char *
xstrndup (const char *s, size_t n)
{
  char *p = strndup (s, n);
  if (p == NULL)
    oom ("strndup", n + 1);
  return p;
}

char *
xasprintf (const char *format, ...)
{
  va_list ap;
  char *result;
  va_start (ap, format);
  if (vasprintf (&result, format, ap) < 0)
    oom ("asprintf", 0);
  va_end (ap);
  return result;
}

/* --- misc ---------------------------------------------------------------- */
void
ignore_stderr (void)
{
  int fd = open ("/dev/null", O_WRONLY);
  if (fd < 0)
    printf ("warning: cannot open /dev/null: %m\n");
  else
    {
      dup2 (fd, STDERR_FILENO);
      close (fd);
    }
}

void
write_message (const char *message)
{
  int saved = errno;
  size_t len = strlen (message);
  while (len > 0)
    {
      ssize_t n = write (STDOUT_FILENO, message, len);
      if (n <= 0)
        {
          if (n < 0 && errno == EINTR)
            continue;
          break;
        }
      message += n;
      len -= n;
    }
  errno = saved;
}

/* A shared block remembers its mapping length in a header.  */
struct shared_header
{
  size_t length;
  max_align_t align;
};

void *
support_shared_allocate (size_t size)
{
  size_t length = sizeof (struct shared_header) + size;
  if (length < size)
    oom ("support_shared_allocate", size);
  void *p = mmap (NULL, length, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    oom ("support_shared_allocate", size);
  struct shared_header *h = p;
  h->length = length;
  return h + 1;
}

void
support_shared_free (void *ptr)
{
  struct shared_header *h = (struct shared_header *) ptr - 1;
  if (munmap (h, h->length) != 0)
    FAIL_EXIT1 ("munmap of a shared block: %m");
}
