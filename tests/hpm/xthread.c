/* SPDX-License-Identifier: MIT */
/* Test program for hpm record: known numbers of calls of every malloc API
   function, objects allocated by one thread and freed by another, and
   several ways to end.  MIT licence.
     xthread [N [END]]   END: exit (default), _exit, abort, sigterm, fork, running, sigfork, churn
   The producer allocates N blocks and hands them to the consumer, which
   frees them (N cross-thread frees).  The main thread then makes exactly one
   call of each other API function (see main).  END=running: exit() while a
   second thread that has allocated (and not flushed) is still running.
   END=sigfork (nothing else is done): a child process sends SIGUSR1 and
   SIGUSR2 400 times while main mallocs and frees; the handler forks a
   child that exits at once.
   END=churn (nothing else is done): N threads, one after the other, each
   allocating and freeing; prints the peak RSS (the recorder must reuse
   the buffers of exited threads). (the recorder must
   not deadlock when fork interrupts it, as in glibc's tst-mallocfork2).  */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define QCAP 1024
static void *queue[QCAP];
static unsigned head, tail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long n_objects = 20000;

static void *producer(void *arg)
{
  (void) arg;
  for (long i = 0; i < n_objects; i++) {
    size_t size = 16 + (size_t) (i * 37 % 4000);
    char *p = malloc(size);
    memset(p, (int) i, size);
    pthread_mutex_lock(&mu);
    while (tail - head == QCAP) pthread_cond_wait(&cv, &mu);
    queue[tail++ % QCAP] = p;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static void *consumer(void *arg)
{
  (void) arg;
  for (long i = 0; i < n_objects; i++) {
    pthread_mutex_lock(&mu);
    while (tail == head) pthread_cond_wait(&cv, &mu);
    void *p = queue[head++ % QCAP];
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    free(p);
  }
  return NULL;
}

static volatile int handled;
static void on_usr1(int sig)
{
  (void) sig;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(pid, NULL, 0);
  handled++;
}

/* A single-threaded process forks from two signal handlers, so that one
   interrupts the other's fork (inside the recorder's fork handler), as
   glibc's tst-mallocfork2 does.  The signals come from a child process:
   with a second thread, glibc's own atfork lock would deadlock.  */
static int sigfork(void)
{
  signal(SIGUSR1, on_usr1);
  signal(SIGUSR2, on_usr1);
  pid_t parent = getpid(), sender = fork();
  if (sender == 0) {
    for (int i = 0; i < 400; i++) {
      kill(parent, i % 2 ? SIGUSR2 : SIGUSR1);
      usleep(200);
    }
    _exit(0);
  }
  for (;;) {
    free(malloc(64));
    int st;
    pid_t r = waitpid(sender, &st, WNOHANG);
    if (r == sender) break;
  }
  printf("xthread: %d signals handled\n", handled);
  return 0;
}

static void *churn_worker(void *arg)
{
  (void) arg;
  free(malloc(32));
  return malloc(32);
}

static int churn(long n)
{
  for (long i = 0; i < n; i++) {
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, churn_worker, NULL)) return 1;
    pthread_join(t, &r);
    free(r);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("xthread: %ld threads, max RSS %ld KiB\n", n, ru.ru_maxrss);
  return 0;
}

static volatile int spin_forever = 1;
static void *runner(void *arg)
{
  (void) arg;
  for (int i = 0; i < 1000; i++) free(malloc(100));   /* 2000 events, left in its buffer */
  while (spin_forever) pause();
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc > 1) n_objects = atol(argv[1]);
  const char *end = argc > 2 ? argv[2] : "exit";
  if (!strcmp(end, "sigfork")) return sigfork();
  if (!strcmp(end, "churn")) return churn(n_objects);
  pthread_t a, b;
  pthread_create(&a, NULL, producer, NULL);
  pthread_create(&b, NULL, consumer, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);

  /* One call of each: 2 allocations stay live (x, y) at the end.  */
  void *c = calloc(10, 100);
  void *r = realloc(NULL, 50);
  r = realloc(r, 5000);
  void *ra = reallocarray(NULL, 10, 10);
  void *m = memalign(64, 1000);
  void *pm = NULL;
  if (posix_memalign(&pm, 4096, 3000)) return 1;
  void *al = aligned_alloc(256, 512);
  void *v = valloc(100);
  void *pv = pvalloc(100);
  free(c); free(r); free(ra); free(m); free(pm); free(al); free(v); free(pv);
  free(NULL);
  void *x = malloc(1 << 20), *y = malloc(123);
  printf("xthread: %ld objects %p %p\n", n_objects, x, y);
  fflush(stdout);

  if (!strcmp(end, "_exit")) _exit(0);
  /* exec paths that do not go through execve's PLT entry */
  if (!strcmp(end, "execv")) { char *av[] = { "true", NULL }; execv("/bin/true", av); return 1; }
  if (!strcmp(end, "execl")) { execl("/bin/true", "true", (char *) NULL); return 1; }
  if (!strcmp(end, "execle")) { char *ev[] = { NULL }; execle("/bin/true", "true", (char *) NULL, ev); return 1; }
  if (!strcmp(end, "execlp")) { execlp("true", "true", (char *) NULL); return 1; }
  if (!strcmp(end, "abort")) abort();
  if (!strcmp(end, "sigterm")) { raise(SIGTERM); return 1; }
  if (!strcmp(end, "fork")) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < 500; i++) free(malloc(64));   /* 1000 events in the child */
      free(x);
      exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  }
  if (!strcmp(end, "running")) {
    pthread_t t;
    pthread_create(&t, NULL, runner, NULL);
    usleep(200000);
    exit(0);
  }
  return 0;
}
