/* SPDX-License-Identifier: MIT */
/* hpb-run: the benchmark launcher.  MIT licence.
 *
 *   hpb-run [-e VAR=VALUE]... [-i STDIN] [-O STDOUT] [-r RESULT] -- CMD ARGS...
 *
 * Forks, applies the -e settings to the child only (so LD_PRELOAD and
 * GLIBC_TUNABLES reach the program measured, never this launcher), execs
 * CMD, and while it runs samples /proc/PID/smaps_rollup (Rss,
 * AnonHugePages) and /proc/PID/status (HugetlbPages: hugetlbfs memory is
 * not counted in Rss).  Sampling every 20 ms for the first 0.5 s, then
 * every 100 ms, so that a short run is still seen and a long one is not
 * slowed by page-table walks; the child's exit ends a pause at once
 * (SIGCHLD), so the wall time is not rounded to the sampling period.  At
 * the end it writes one line to RESULT (default: stderr):
 *
 *   HPB status=0 wall_s=.. user_s=.. sys_s=.. maxrss_kb=.. rss_kb=..
 *       anonhuge_kb=.. hugetlb_kb=.. samples=..
 *
 * maxrss_kb is the kernel's ru_maxrss; rss_kb, anonhuge_kb and hugetlb_kb
 * are the sample with the largest Rss + HugetlbPages (the peak), so the
 * huge-page coverage is the coverage at the peak.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sum of the fields named in keys[] found in path (kB); -1 if unreadable. */
static int read_fields(const char *path, const char *const keys[], long out[], int n) {
  char buf[8192];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t len = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (len <= 0) return -1;
  buf[len] = 0;
  for (int k = 0; k < n; k++) {
    out[k] = 0;
    size_t kl = strlen(keys[k]);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
      if (strncmp(l, keys[k], kl) == 0 && l[kl] == ':') { out[k] = strtol(l + kl + 1, NULL, 10); break; }
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *in = NULL, *outp = NULL, *res = NULL;
  char *envs[64];
  int nenv = 0, i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) { i++; break; }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "-e") && nenv < 64) envs[nenv++] = argv[++i];
    else if (!strcmp(argv[i], "-i")) in = argv[++i];
    else if (!strcmp(argv[i], "-O")) outp = argv[++i];
    else if (!strcmp(argv[i], "-r")) res = argv[++i];
    else break;
  }
  if (i >= argc) {
    fprintf(stderr, "usage: hpb-run [-e VAR=VALUE]... [-i IN] [-O OUT] [-r RESULT] -- CMD ARGS...\n");
    return 2;
  }
  /* SIGCHLD blocked, so that the sampling pause (sigtimedwait) ends the
     moment the child exits: the wall time is exact, not rounded up to the
     next sample.  The child gets the old mask back before exec.  */
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old_mask);
  double t0 = now();
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    for (int k = 0; k < nenv; k++) {
      char *eq = strchr(envs[k], '=');
      if (!eq) continue;
      *eq = 0;
      if (eq[1]) setenv(envs[k], eq + 1, 1); else unsetenv(envs[k]);
    }
    if (in) { int fd = open(in, O_RDONLY); if (fd < 0 || dup2(fd, 0) < 0) _exit(126); }
    if (outp) { int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644); if (fd < 0 || dup2(fd, 1) < 0) _exit(126); }
    execvp(argv[i], argv + i);
    fprintf(stderr, "hpb-run: %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  char smaps[64], status[64];
  snprintf(smaps, sizeof smaps, "/proc/%d/smaps_rollup", (int)pid);
  snprintf(status, sizeof status, "/proc/%d/status", (int)pid);
  static const char *const rk[] = {"Rss", "AnonHugePages"};
  static const char *const sk[] = {"HugetlbPages"};
  long best_rss = 0, best_ah = 0, best_ht = 0, samples = 0;
  struct rusage ru;
  int st = 0;
  for (;;) {
    pid_t r = wait4(pid, &st, WNOHANG, &ru);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) { perror("wait4"); return 2; }
    long v[2], h[1];
    if (read_fields(smaps, rk, v, 2) == 0 && read_fields(status, sk, h, 1) == 0) {
      samples++;
      if (v[0] + h[0] >= best_rss + best_ht) { best_rss = v[0]; best_ah = v[1]; best_ht = h[0]; }
    }
    struct timespec d = {0, (now() - t0 < 0.5 ? 20 : 100) * 1000000L};
    sigtimedwait(&chld, NULL, &d); /* SIGCHLD, the pause over, or EINTR: wait4 tells */
  }
  double wall = now() - t0;
  FILE *f = res ? fopen(res, "a") : stderr;
  if (!f) { perror(res); return 2; }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  fprintf(f, "HPB status=%d wall_s=%.4f user_s=%.4f sys_s=%.4f maxrss_kb=%ld rss_kb=%ld anonhuge_kb=%ld hugetlb_kb=%ld samples=%ld\n",
          code, wall, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6,
          ru.ru_maxrss, best_rss, best_ah, best_ht, samples);
  if (res) fclose(f);
  return code;
}
