#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcheck with hpmalloc's own code executing.
#
# By default memcheck replaces the malloc functions of libc.so AND of any
# other object exporting them (libhpmalloc.so, or a static executable), so
# hpmalloc would not run at all.  --soname-synonyms=somalloc=nouserintercepts
# (any soname that does not exist) restricts the replacement to libc.so and
# libstdc++; calls then bind to libhpmalloc.so as usual, and memcheck sees
# hpmalloc's blocks only through its client requests (VALGRIND_MALLOCLIKE_BLOCK
# and friends).
#
#   1. vg-uses-hpm: hpmalloc's counters move under memcheck with the option
#      (and, for the record, whether they move without it); with hugetlb=1,
#      the census of huge pages in hpmalloc_stats hands back defined
#      figures (zero errors);
#   2. the API test (api-dyn) under memcheck: zero errors.  Not api-static:
#      in a static executable memcheck cannot replace glibc's string
#      functions (their vectorised over-reads are reported) and glibc puts
#      the initial TLS block in brk memory that memcheck sees as undefined,
#      so errors appear that are not hpmalloc's;
#   3. vg-leak: "definitely lost: 12,345 bytes in 1 blocks";
#   4. vg-overflow: "Invalid write of size 1" and "Invalid read of size 1".
# Usage: valgrind.sh BUILD_DIR [summary-file]                MIT licence.
set -u
build=${1:?usage: valgrind.sh BUILD_DIR [SUMMARY]}
summary=${2:-}
bin=$build/tests/integration
api=$build/tests/api
tmp=$(mktemp -d /tmp/hpmalloc-vg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset GLIBC_TUNABLES LD_PRELOAD
VG_OPTS=(--tool=memcheck --soname-synonyms=somalloc=nouserintercepts --error-exitcode=99)
TMO=${HPT_VG_TIMEOUT:-900}

pass=0; fail=0
ok() { pass=$((pass+1)); echo "PASS $1"; }
ko() { fail=$((fail+1)); echo "FAIL $1"; }
command -v valgrind >/dev/null || { echo "valgrind: not installed"; echo "valgrind: 0 passed, 1 failed"; exit 1; }

# 1. hpmalloc runs under memcheck
if out=$(timeout "$TMO" valgrind -q "${VG_OPTS[@]}" --leak-check=no "$bin/vg-uses-hpm" 2>&1); then
  ok "hpmalloc executes under memcheck with somalloc=nouserintercepts ($(echo "$out" | grep vg-uses-hpm))"
else
  ko "hpmalloc under memcheck with somalloc=nouserintercepts: $(echo "$out" | tail -5 | tr '\n' '|')"
fi
if out=$(GLIBC_TUNABLES=glibc.malloc.hugetlb=1 timeout "$TMO" valgrind -q "${VG_OPTS[@]}" --leak-check=no \
    "$bin/vg-uses-hpm" census 2>&1); then
  ok "the census of huge pages under memcheck, hugetlb=1: no error ($(echo "$out" | grep vg-uses-hpm))"
else
  ko "the census of huge pages under memcheck, hugetlb=1: $(echo "$out" | head -8 | tr '\n' '|')"
fi
timeout "$TMO" valgrind -q --tool=memcheck --leak-check=no "$bin/vg-uses-hpm" >"$tmp/noopt.log" 2>&1
echo "note: without --soname-synonyms: $(grep vg-uses-hpm "$tmp/noopt.log" || tail -1 "$tmp/noopt.log")"

# 2. the API test, zero errors
for b in api-dyn; do
  log=$tmp/$b.log
  HPT_REQUIRE_HPMALLOC=1 HPT_VALGRIND=1 timeout "$TMO" valgrind "${VG_OPTS[@]}" --leak-check=no \
    --log-file="$log.vg" "$api/$b" "$b-memcheck" >"$log" 2>&1
  rc=$?
  errs=$(grep -E 'ERROR SUMMARY: [0-9]+ errors' "$log.vg" | tail -1)
  if [ $rc -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$log.vg"; then
    ok "$b under memcheck: $(grep ' passed, ' "$log"), $errs"
  else
    ko "$b under memcheck: exit $rc, $errs"
    grep -E '^(not ok|#   FAILED)|passed, ' "$log" | head -20
    grep -A12 -E '^==[0-9]+== (Invalid|Conditional|Use of|Syscall|Source and|Mismatched|Argument)' "$log.vg" | head -60
  fi
done

# 3. a leak is found
timeout "$TMO" valgrind "${VG_OPTS[@]}" --leak-check=full --errors-for-leak-kinds=definite \
  "$bin/vg-leak" >"$tmp/leak.log" 2>&1
rc=$?
if grep -q 'definitely lost: 12,345 bytes in 1 blocks' "$tmp/leak.log" && [ $rc -eq 99 ]; then
  ok "memcheck reports the deliberate leak (definitely lost: 12,345 bytes in 1 blocks)"
else
  ko "deliberate leak not reported (exit $rc): $(grep -E 'definitely|indirectly|possibly|still reachable|ERROR SUMMARY' "$tmp/leak.log" | tr '\n' '|')"
fi
if grep -q 'still reachable: 777 bytes in 1 blocks' "$tmp/leak.log"; then
  ok "memcheck sees the reachable block (still reachable: 777 bytes in 1 blocks)"
else
  ko "reachable 777-byte block not accounted: $(grep -E 'reachable|in use at exit' "$tmp/leak.log" | tr '\n' '|')"
fi

# 4. overflow and use after free are found
timeout "$TMO" valgrind "${VG_OPTS[@]}" --leak-check=no "$bin/vg-overflow" >"$tmp/ovf.log" 2>&1
rc=$?
if grep -q 'Invalid write of size 1' "$tmp/ovf.log"; then
  ok "memcheck reports the write one past a 24-byte block"
else
  ko "write past a 24-byte block not reported (exit $rc): $(grep -E '^==[0-9]+== [A-Z]' "$tmp/ovf.log" | head -8 | tr '\n' '|')"
fi
if grep -q 'Invalid read of size 1' "$tmp/ovf.log"; then
  ok "memcheck reports the read after free"
else
  ko "read after free not reported (exit $rc): $(grep -E '^==[0-9]+== [A-Z]' "$tmp/ovf.log" | head -8 | tr '\n' '|')"
fi
if grep -q 'vg-overflow: done' "$tmp/ovf.log" && [ $rc -eq 99 ]; then ok "vg-overflow ran to the end, exit 99"
else ko "vg-overflow: exit $rc"; fi

echo "valgrind: $pass passed, $fail failed"
[ -n "$summary" ] && echo "valgrind (memcheck over hpmalloc): $pass passed, $fail failed" >>"$summary"
[ $fail -eq 0 ]
