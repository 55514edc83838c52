/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/xunistd.h>: POSIX wrappers that
   terminate the test on error.  Written for hpmalloc; MIT licence.  */
#ifndef HPM_SUPPORT_XUNISTD_H
#define HPM_SUPPORT_XUNISTD_H

#include <sys/cdefs.h>
#include <sys/types.h>
#include <unistd.h>

__BEGIN_DECLS

pid_t xfork (void);
/* waitpid that retries on EINTR and fails the test on error; returns the
   pid.  */
pid_t xwaitpid (pid_t pid, int *status, int flags);
void xpipe (int fds[2]);
void xdup2 (int from, int to);
int xopen (const char *path, int flags, mode_t mode);
void xclose (int fd);
/* Write all LENGTH bytes.  */
void xwrite (int fd, const void *buffer, size_t length);
long int xsysconf (int name);
void *xmmap (void *addr, size_t length, int prot, int flags, int fd);
void xmprotect (void *addr, size_t length, int prot);
void xmunmap (void *addr, size_t length);
void xchdir (const char *path);

__END_DECLS

#endif
