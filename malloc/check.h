/* SPDX-License-Identifier: MIT */
/* check.h: the one error path, the debug build's assertions and the
 * validators (check.c).  Includes: hp_base.h.  */
#ifndef HP_CHECK_H
#define HP_CHECK_H

#include "hp_base.h"

struct arena;

/* Print msg (a fixed string: glibc's words where glibc has them) and a
   newline on stderr, then abort.  Allocates nothing; safe under any lock.  */
__attribute__((noreturn, cold)) HP_INTERNAL void hp_fatal(const char *msg);

/* The debug build (make debug: -DHP_DEBUG=1) checks the invariants the
   code states with HP_ASSERT: that the caller holds the lock a function
   needs, that chunks and bins are as the code expects, that the cache's
   counts hold.  The expression is compiled in every build, so it cannot
   rot, and folded away where HP_DEBUG is 0: release builds run the same
   instructions as without it.  A failure goes the way hp_fatal goes
   (fixed text, no allocation), naming the file, line and expression.
   Cheap checks against corruption stay on in every build (hp_fatal with
   glibc's message), not here.  A macro, not an inline function: it takes
   the expression's text and place.  */
#ifndef HP_DEBUG
#define HP_DEBUG 0
#endif
__attribute__((noreturn, cold)) HP_INTERNAL void hp_assert_fail(const char *expr, const char *file, int line);
#define HP_ASSERT(e)                                                           \
  do {                                                                         \
    if (HP_DEBUG && HP_UNLIKELY(!(e))) hp_assert_fail(#e, __FILE__, __LINE__); \
  } while (0)

/* Walk every heap and bin of ar (its lock held): hp_fatal on the first
   inconsistency, else 0.  */
HP_INTERNAL int check_arena(struct arena *ar);

#endif
