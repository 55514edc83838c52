#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-soak: tests/hardening/soak.c in hugetlb modes 1 and 2, SOAK_SECONDS
# each (default 60).  SOAK_HUGEPAGES=N (root): give mode 2 a pool of N free
# huge pages (beyond any others hold), restored afterwards; by default mode 2
# uses whatever pool the machine has (none: every heap falls back to THP).
# SOAK_TUNABLES: more GLIBC_TUNABLES entries for both modes, e.g.
# hpmalloc.hugetlb_size=1073741824 (1 GiB pages, usually a dry pool).
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) bin=$BUILD/tests/hardening/soak ;; *) bin=$PWD/$BUILD/tests/hardening/soak ;; esac
secs=${SOAK_SECONDS:-60}
pages=${SOAK_HUGEPAGES:-0}
nr=/proc/sys/vm/nr_hugepages
rc=0
for m in 1 2; do
  if [ "$m" = 2 ] && [ "$pages" -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || [ ! -w "$nr" ]; then
      echo "check-soak: SOAK_HUGEPAGES needs root; mode 2 runs with the pool as it is"
    else
      old=$(cat "$nr")
      trap 'echo "$old" > "$nr"' EXIT
      others=$(( $(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo) - $(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo) ))
      echo $(( others + pages )) > "$nr"
    fi
  fi
  echo "--- soak, glibc.malloc.hugetlb=$m, ${secs} s ($(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo) free hugetlb pages)"
  SOAK_SECONDS=$secs GLIBC_TUNABLES=glibc.malloc.hugetlb=$m${SOAK_TUNABLES:+:$SOAK_TUNABLES} timeout $(( ${secs%.*} * 3 + 120 )) "$bin" || rc=1
  if [ -n "${old:-}" ]; then echo "$old" > "$nr"; trap - EXIT; unset old; fi
done
[ "$rc" = 0 ] && echo "check-soak: passed" || echo "check-soak: FAILED"
exit $rc
