/* SPDX-License-Identifier: MIT */
/* hpmalloc's shim of glibc's pthread wrappers (support/xpthread_*.c).
   Written for hpmalloc; MIT licence.  */
#include <support/xthread.h>
#include <support/check.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
xpthread_check_return (const char *function, int errnum)
{
  if (errnum != 0)
    {
      printf ("error: %s: %s\n", function, strerror (errnum));
      support_record_failure ();
      fflush (stdout);
      exit (1);
    }
}

void
xpthread_barrier_init (pthread_barrier_t *b, pthread_barrierattr_t *a,
                       unsigned int count)
{
  xpthread_check_return ("pthread_barrier_init",
                         pthread_barrier_init (b, a, count));
}

void
xpthread_barrier_destroy (pthread_barrier_t *b)
{
  xpthread_check_return ("pthread_barrier_destroy",
                         pthread_barrier_destroy (b));
}

int
xpthread_barrier_wait (pthread_barrier_t *b)
{
  int ret = pthread_barrier_wait (b);
  if (ret != 0 && ret != PTHREAD_BARRIER_SERIAL_THREAD)
    xpthread_check_return ("pthread_barrier_wait", ret);
  return ret == PTHREAD_BARRIER_SERIAL_THREAD;
}

void
xpthread_barrierattr_init (pthread_barrierattr_t *a)
{
  xpthread_check_return ("pthread_barrierattr_init",
                         pthread_barrierattr_init (a));
}

void
xpthread_barrierattr_destroy (pthread_barrierattr_t *a)
{
  xpthread_check_return ("pthread_barrierattr_destroy",
                         pthread_barrierattr_destroy (a));
}

void
xpthread_barrierattr_setpshared (pthread_barrierattr_t *a, int pshared)
{
  xpthread_check_return ("pthread_barrierattr_setpshared",
                         pthread_barrierattr_setpshared (a, pshared));
}

void
xpthread_mutex_init (pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
  xpthread_check_return ("pthread_mutex_init", pthread_mutex_init (m, a));
}

void
xpthread_mutex_destroy (pthread_mutex_t *m)
{
  xpthread_check_return ("pthread_mutex_destroy", pthread_mutex_destroy (m));
}

void
xpthread_mutex_lock (pthread_mutex_t *m)
{
  xpthread_check_return ("pthread_mutex_lock", pthread_mutex_lock (m));
}

void
xpthread_mutex_unlock (pthread_mutex_t *m)
{
  xpthread_check_return ("pthread_mutex_unlock", pthread_mutex_unlock (m));
}

void
xpthread_cond_wait (pthread_cond_t *c, pthread_mutex_t *m)
{
  xpthread_check_return ("pthread_cond_wait", pthread_cond_wait (c, m));
}

void
xpthread_cond_signal (pthread_cond_t *c)
{
  xpthread_check_return ("pthread_cond_signal", pthread_cond_signal (c));
}

void
xpthread_cond_broadcast (pthread_cond_t *c)
{
  xpthread_check_return ("pthread_cond_broadcast",
                         pthread_cond_broadcast (c));
}

void
xpthread_attr_init (pthread_attr_t *a)
{
  xpthread_check_return ("pthread_attr_init", pthread_attr_init (a));
}

void
xpthread_attr_destroy (pthread_attr_t *a)
{
  xpthread_check_return ("pthread_attr_destroy", pthread_attr_destroy (a));
}

void
xpthread_attr_setdetachstate (pthread_attr_t *a, int state)
{
  xpthread_check_return ("pthread_attr_setdetachstate",
                         pthread_attr_setdetachstate (a, state));
}

void
xpthread_attr_setstacksize (pthread_attr_t *a, size_t size)
{
  xpthread_check_return ("pthread_attr_setstacksize",
                         pthread_attr_setstacksize (a, size));
}

void
support_set_small_thread_stack_size (pthread_attr_t *a)
{
  /* 128 KiB: enough for printf and the tests' frames, and far below the
     default 8 MiB.  */
  size_t size = 128 * 1024;
  if (size < (size_t) PTHREAD_STACK_MIN)
    size = PTHREAD_STACK_MIN;
  xpthread_attr_setstacksize (a, size);
}

pthread_t
xpthread_create (pthread_attr_t *attr, void *(*func) (void *), void *closure)
{
  pthread_t thr;
  xpthread_check_return ("pthread_create",
                         pthread_create (&thr, attr, func, closure));
  return thr;
}

void *
xpthread_join (pthread_t thr)
{
  void *result;
  xpthread_check_return ("pthread_join", pthread_join (thr, &result));
  return result;
}

void
xpthread_detach (pthread_t thr)
{
  xpthread_check_return ("pthread_detach", pthread_detach (thr));
}

void
xpthread_cancel (pthread_t thr)
{
  xpthread_check_return ("pthread_cancel", pthread_cancel (thr));
}

void
xpthread_kill (pthread_t thr, int signo)
{
  xpthread_check_return ("pthread_kill", pthread_kill (thr, signo));
}

void
xpthread_sigmask (int how, const sigset_t *set, sigset_t *oldset)
{
  xpthread_check_return ("pthread_sigmask",
                         pthread_sigmask (how, set, oldset));
}

void
xpthread_once (pthread_once_t *guard, void (*func) (void))
{
  xpthread_check_return ("pthread_once", pthread_once (guard, func));
}
