#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# All integration suites, each run even when an earlier one failed:
#   programs   python3, perl, sort, xz, gcc under LD_PRELOAD, hugetlb 0/1/2
#   stress     tests/integration/stress.c under LD_PRELOAD, hugetlb 0/1/2
#   static     static link, no glibc malloc.o, hpmalloc_default_tunables
#   valgrind   memcheck over hpmalloc: zero errors; leak and overflow found
# Usage: run-integration.sh BUILD_DIR [suite...]              MIT licence.
set -u
build=${1:?usage: run-integration.sh BUILD_DIR [programs|stress|static|valgrind]...}
shift
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(programs stress static valgrind)
here=$(cd "$(dirname "$0")" && pwd)
so=$(cd "$build/lib" && pwd)/libhpmalloc.so
mkdir -p "$build/summary"
summary=$build/summary/integration.txt
: >"$summary"
STRESS_SECS=${HPT_STRESS_SECS:-3}

pass=0; fail=0; lines=()
record() { if [ "$2" -eq 0 ]; then pass=$((pass+1)); lines+=("  PASS $1"); else fail=$((fail+1)); lines+=("  FAIL $1"); fi; }

for s in "${suites[@]}"; do
  echo "--- integration: $s"
  case $s in
    programs) bash "$here/real-programs.sh" "$so" "$summary"; record programs $? ;;
    stress)
      sp=0; sf=0
      for mode in 0 1 2; do
        seed=$(( $(date +%s) + mode ))
        echo "stress: hugetlb=$mode (reproduce: LD_PRELOAD=$so GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode $build/tests/integration/stress $STRESS_SECS 8 $seed)"
        HPT_REQUIRE_HPMALLOC=1 LD_PRELOAD=$so GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode \
          timeout -k 10 $((STRESS_SECS * 10 + 120)) "$build/tests/integration/stress" "$STRESS_SECS" 8 "$seed"
        rc=$?
        [ $rc -eq 124 ] && echo "stress: hugetlb=$mode timed out (hang?)"
        if [ $rc -eq 0 ]; then sp=$((sp+1)); else sf=$((sf+1)); echo "stress: hugetlb=$mode FAILED (status $rc)"; fi
      done
      echo "stress (8 threads, hugetlb 0/1/2): $sp passed, $sf failed" >>"$summary"
      record stress $sf ;;
    static) bash "$here/static-link.sh" "$build" "$summary"; record static $? ;;
    valgrind) bash "$here/valgrind.sh" "$build" "$summary"; record valgrind $? ;;
    *) echo "unknown suite $s"; record "$s" 1 ;;
  esac
done
echo "=== integration suites"
printf '%s\n' "${lines[@]}"
echo "integration: $pass passed, $fail failed"
[ $fail -eq 0 ]
