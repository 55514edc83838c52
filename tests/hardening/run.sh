#!/usr/bin/env bash
# check-hardening: see tests/hardening/README.md.  Each check prints
# PASS, FAIL or SKIP (with the reason) and the summary goes to
# $BUILD/summary/hardening.txt.
set -u
BUILD=${BUILD:-build}
lib=$PWD/$BUILD/lib/libhpmalloc.so
bin=$PWD/$BUILD/tests/hardening
pass=0; fail=0; skip=0
ok()   { echo "PASS  $*"; pass=$((pass+1)); }
bad()  { echo "FAIL  $*"; fail=$((fail+1)); }
skp()  { echo "SKIP  $*"; skip=$((skip+1)); }

# run NAME CMD...: PASS when CMD exits 0; its output is shown on failure.
run() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then ok "$name: $(tail -n 1 <<<"$out")"
  else bad "$name"; sed 's/^/      /' <<<"$out"; fi
}

# --- misuse: glibc's messages, checked on glibc itself first ------------
for t in "" -t; do
  where=${t:+, in a second thread}
  run "misuse on glibc$where (validates the expected messages)" "$bin/misuse" $t
  for m in 0 1 2; do
    run "misuse, hpmalloc preloaded, hugetlb=$m$where" \
      env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m LD_PRELOAD="$lib" "$bin/misuse" $t
  done
  run "misuse, hpmalloc linked statically$where" "$bin/misuse-static" $t
done

mkdir -p "$BUILD/summary"
echo "hardening: $pass passed, $fail failed, $skip skipped" | tee "$BUILD/summary/hardening.txt"
[ "$fail" -eq 0 ]
