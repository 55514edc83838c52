/* SPDX-License-Identifier: MIT */
/* Unmapping and protection: the same on every POSIX system (shared by
 * sysdeps/unix/sysv/linux and sysdeps/generic/os).  MIT licence.  */
#include <sys/mman.h>

#include "hp_sys.h"

int hp_os_unmap(void *addr, size_t len) { return munmap(addr, len); }

int hp_os_protect(void *addr, size_t len, enum hp_prot prot) {
  return mprotect(addr, len, prot == HP_PROT_RW ? PROT_READ | PROT_WRITE : PROT_NONE);
}
