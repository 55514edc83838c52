/* SPDX-License-Identifier: MIT */
/* sandbox: run a program under a seccomp filter that makes madvise,
 * mremap and mbind fail with EPERM, as locked-down sandboxes do (some
 * container runtimes, browsers' renderers, systemd's SystemCallFilter=).
 *
 *   sandbox PROG ARGS...
 *
 * The filter is classic BPF through prctl(PR_SET_SECCOMP) (no libseccomp):
 * it checks the architecture the numbers belong to, answers EPERM to the
 * three calls and allows everything else; PR_SET_NO_NEW_PRIVS first, so
 * no privilege is needed.  The filter survives execve, so PROG and every
 * library it loads run under it.  Exit 126 when the filter cannot be
 * installed (the caller skips), 127 when PROG cannot be run.
 * MIT licence.  */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The audit architecture of the numbers in <sys/syscall.h>: a test
   program, so the ladder lives here rather than in sysdeps/.  */
#if defined(__x86_64__) && defined(__ILP32__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64 /* x32: same audit arch, numbers with __X32_SYSCALL_BIT */
#elif defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SANDBOX_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__powerpc64__)
#define SANDBOX_ARCH AUDIT_ARCH_PPC64
#elif defined(__i386__)
#define SANDBOX_ARCH AUDIT_ARCH_I386
#endif

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sandbox PROG ARGS...\n");
    return 2;
  }
  struct sock_filter filter[] = {
#ifdef SANDBOX_ARCH
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* another architecture's numbers: not ours to judge */
#endif
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    DENY(SYS_madvise),
    DENY(SYS_mremap),
#ifdef SYS_mbind
    DENY(SYS_mbind),
#endif
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = { (unsigned short)(sizeof filter / sizeof filter[0]), filter };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "sandbox: cannot install the seccomp filter: %s\n", strerror(errno));
    return 126;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "sandbox: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
