/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/check.h>: failure reporting for
   glibc's malloc tests.  Written for hpmalloc; MIT licence.

   Semantics follow glibc's test harness: FAIL* print "error: FILE:LINE:
   message" on standard output; a recorded failure makes the test exit
   with status 1 even when do_test returns 0, including failures recorded
   in forked subprocesses (the flag lives in a shared mapping).  */
#ifndef HPM_SUPPORT_CHECK_H
#define HPM_SUPPORT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/cdefs.h>

__BEGIN_DECLS

/* Print a failure message and record the failure; continue.  */
#define FAIL(...) support_print_failure_impl (__FILE__, __LINE__, __VA_ARGS__)
/* Print a failure message and return from the current function with 1.  */
#define FAIL_RET(...) \
  return support_print_failure_impl (__FILE__, __LINE__, __VA_ARGS__), 1
/* Print a failure message and exit with STATUS.  */
#define FAIL_EXIT(status, ...) \
  support_exit_failure_impl (status, __FILE__, __LINE__, __VA_ARGS__)
#define FAIL_EXIT1(...) \
  support_exit_failure_impl (1, __FILE__, __LINE__, __VA_ARGS__)
/* The test cannot run here: exit with EXIT_UNSUPPORTED (77).  */
#define FAIL_UNSUPPORTED(...) \
  support_exit_failure_impl (77, __FILE__, __LINE__, __VA_ARGS__)

/* Record a failure (and keep going) when EXPR is false.  */
#define TEST_VERIFY(expr)                                       \
  ({                                                            \
    if (expr)                                                   \
      ;                                                         \
    else                                                        \
      support_test_verify_impl (__FILE__, __LINE__, #expr);     \
  })
/* Exit with status 1 when EXPR is false.  */
#define TEST_VERIFY_EXIT(expr)                                  \
  ({                                                            \
    if (expr)                                                   \
      ;                                                         \
    else                                                        \
      support_test_verify_exit_impl (1, __FILE__, __LINE__, #expr); \
  })

/* Compare two integer expressions of any integer types; record a failure
   when they differ in value (mixed signedness is handled: a negative
   value never equals a positive one).  */
#define TEST_COMPARE(left, right)                                        \
  ({                                                                     \
    __typeof__ (left) hpm__left = (left);                                \
    __typeof__ (right) hpm__right = (right);                             \
    _Static_assert (sizeof (hpm__left) <= sizeof (long long int),       \
                    "left operand of TEST_COMPARE is too wide");         \
    _Static_assert (sizeof (hpm__right) <= sizeof (long long int),      \
                    "right operand of TEST_COMPARE is too wide");        \
    int hpm__lneg = hpm__left < 0 && (__typeof__ (hpm__left)) -1 < 0;    \
    int hpm__rneg = hpm__right < 0 && (__typeof__ (hpm__right)) -1 < 0;  \
    if (hpm__lneg != hpm__rneg                                           \
        || (unsigned long long int) hpm__left                            \
           != (unsigned long long int) hpm__right)                       \
      support_test_compare_failure                                       \
        (__FILE__, __LINE__,                                             \
         #left, (long long int) hpm__left, hpm__lneg,                    \
         (int) sizeof (hpm__left),                                       \
         #right, (long long int) hpm__right, hpm__rneg,                  \
         (int) sizeof (hpm__right));                                     \
  })

/* Compare two byte arrays.  */
#define TEST_COMPARE_BLOB(lstart, llength, rstart, rlength)            \
  support_test_compare_blob (lstart, llength, rstart, rlength,         \
                             __FILE__, __LINE__,                       \
                             #lstart, #llength, #rstart, #rlength)
/* Compare two strings (NULL allowed).  */
#define TEST_COMPARE_STRING(left, right)                               \
  support_test_compare_string (left, right, __FILE__, __LINE__,        \
                               #left, #right)

int support_print_failure_impl (const char *file, int line,
                                const char *format, ...)
  __attribute__ ((nonnull (1), format (printf, 3, 4)));
void support_exit_failure_impl (int exit_status, const char *file, int line,
                                const char *format, ...)
  __attribute__ ((noreturn, nonnull (2), format (printf, 4, 5)));
void support_test_verify_impl (const char *file, int line, const char *expr);
void support_test_verify_exit_impl (int status, const char *file, int line,
                                    const char *expr)
  __attribute__ ((noreturn));
void support_test_compare_failure (const char *file, int line,
                                   const char *left_expr,
                                   long long int left_value,
                                   int left_negative, int left_size,
                                   const char *right_expr,
                                   long long int right_value,
                                   int right_negative, int right_size);
void support_test_compare_blob (const void *left, unsigned long int llength,
                                const void *right, unsigned long int rlength,
                                const char *file, int line,
                                const char *left_exp, const char *left_len_exp,
                                const char *right_exp,
                                const char *right_len_exp);
void support_test_compare_string (const char *left, const char *right,
                                  const char *file, int line,
                                  const char *left_expr,
                                  const char *right_expr);

/* Record a test failure without printing anything.  Works from forked
   subprocesses too.  */
void support_record_failure (void);
/* Forget recorded failures (for tests that expect a failure).  */
void support_record_failure_reset (void);
/* Nonzero when a failure was recorded.  */
int support_record_failure_is_failed (void);
/* Turn STATUS into 1 if a failure was recorded and STATUS is 0; called
   by the test driver on the test's return value.  */
int support_report_failure (int status);

__END_DECLS

#endif
