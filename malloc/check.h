/* check.h: the one error path and the validators (check.c).
 * Includes: hp_base.h.  */
#ifndef HP_CHECK_H
#define HP_CHECK_H

#include "hp_base.h"

struct arena;

/* Print msg (a fixed string: glibc's words where glibc has them) and a
   newline on stderr, then abort.  Allocates nothing; safe under any lock.  */
__attribute__((noreturn, cold)) HP_INTERNAL void hp_fatal(const char *msg);

/* Walk every heap and bin of ar (its lock held): hp_fatal on the first
   inconsistency, else 0.  */
HP_INTERNAL int check_arena(struct arena *ar);

#endif
