/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/xsignal.h>.  Written for hpmalloc;
   MIT licence.  */
#ifndef HPM_SUPPORT_XSIGNAL_H
#define HPM_SUPPORT_XSIGNAL_H

#include <signal.h>
#include <sys/cdefs.h>

__BEGIN_DECLS

void xraise (int sig);
sighandler_t xsignal (int sig, sighandler_t handler);
void xsigaction (int sig, const struct sigaction *newact,
                 struct sigaction *oldact);
void xsigemptyset (sigset_t *set);
void xsigaddset (sigset_t *set, int sig);
void xsigprocmask (int how, const sigset_t *set, sigset_t *oldset);
/* Declared here as in glibc; defined with the thread wrappers.  */
void xpthread_sigmask (int how, const sigset_t *set, sigset_t *oldset);

__END_DECLS

#endif
