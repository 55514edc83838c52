/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's <support/xthread.h>: pthread wrappers that
   terminate the test on error.  Written for hpmalloc; MIT licence.  */
#ifndef HPM_SUPPORT_XTHREAD_H
#define HPM_SUPPORT_XTHREAD_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/cdefs.h>

__BEGIN_DECLS

/* Terminate the test with a message naming FUNCTION when ERRNUM != 0.  */
void xpthread_check_return (const char *function, int errnum);

void xpthread_barrier_init (pthread_barrier_t *barrier,
                            pthread_barrierattr_t *attr, unsigned int count);
void xpthread_barrier_destroy (pthread_barrier_t *barrier);
/* Returns true for the one thread that gets PTHREAD_BARRIER_SERIAL_THREAD. */
int xpthread_barrier_wait (pthread_barrier_t *barrier);
void xpthread_barrierattr_init (pthread_barrierattr_t *attr);
void xpthread_barrierattr_destroy (pthread_barrierattr_t *attr);
void xpthread_barrierattr_setpshared (pthread_barrierattr_t *attr,
                                      int pshared);

void xpthread_mutex_init (pthread_mutex_t *m, const pthread_mutexattr_t *a);
void xpthread_mutex_destroy (pthread_mutex_t *m);
void xpthread_mutex_lock (pthread_mutex_t *m);
void xpthread_mutex_unlock (pthread_mutex_t *m);
void xpthread_cond_wait (pthread_cond_t *c, pthread_mutex_t *m);
void xpthread_cond_signal (pthread_cond_t *c);
void xpthread_cond_broadcast (pthread_cond_t *c);

void xpthread_attr_init (pthread_attr_t *attr);
void xpthread_attr_destroy (pthread_attr_t *attr);
void xpthread_attr_setdetachstate (pthread_attr_t *attr, int state);
void xpthread_attr_setstacksize (pthread_attr_t *attr, size_t size);
/* Give ATTR a small stack (glibc's tests start many threads).  */
void support_set_small_thread_stack_size (pthread_attr_t *attr);

pthread_t xpthread_create (pthread_attr_t *attr,
                           void *(*thread_func) (void *), void *closure);
/* Return the thread's result.  */
void *xpthread_join (pthread_t thr);
void xpthread_detach (pthread_t thr);
void xpthread_cancel (pthread_t thr);
void xpthread_kill (pthread_t thr, int signo);
void xpthread_sigmask (int how, const sigset_t *set, sigset_t *oldset);
void xpthread_once (pthread_once_t *guard, void (*func) (void));

__END_DECLS

#endif
