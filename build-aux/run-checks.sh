#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each check target in turn (all of them, even after a failure), then
# print one summary line per suite and a closing "N passed, N failed" line.
# Exit status: 0 only when every suite passed.
set -u
MAKE=${MAKE:-make}
pass=0; fail=0; results=()
for t in "$@"; do
  echo "=== $t"
  start=$(date +%s)
  if $MAKE --no-print-directory "$t"; then
    pass=$((pass+1)); results+=("PASS  $t ($(( $(date +%s) - start ))s)")
  else
    fail=$((fail+1)); results+=("FAIL  $t ($(( $(date +%s) - start ))s)")
  fi
done
echo
echo "=== summary of make check"
for r in "${results[@]}"; do echo "$r"; done
for f in "${BUILD:-build}"/summary/*.txt; do [ -f "$f" ] && cat "$f"; done
echo "suites: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
