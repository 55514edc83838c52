#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-musl: programs linked `musl-gcc -static` with the musl build of
# libhpmalloc.a (tests/musl/README.md).  Each check prints PASS, FAIL or
# SKIP; the summary goes to $BUILD/summary/musl.txt.       MIT licence.
set -u
BUILD=${BUILD:-build}
MUSL_BUILD=${MUSL_BUILD:-$BUILD/musl}
bin=$MUSL_BUILD/tests
liba=$MUSL_BUILD/lib/libhpmalloc.a
here=$(cd "$(dirname "$0")" && pwd)
unset GLIBC_TUNABLES LD_PRELOAD MALLOC_MMAP_THRESHOLD_ MALLOC_TOP_PAD_ HPMALLOC_STATS HPMALLOC_VERBOSE
pass=0; fail=0; skip=0
ok()   { echo "PASS  $*"; pass=$((pass+1)); }
bad()  { echo "FAIL  $*"; fail=$((fail+1)); }

# run NAME WANT CMD...: PASS when CMD exits 0 and its last line contains WANT.
run() {
  local name=$1 want=$2; shift 2
  local out
  if out=$(timeout 300 "$@" 2>&1) && [[ "$(tail -n 1 <<<"$out")" == *"$want"* ]]; then ok "$name: $(tail -n 1 <<<"$out")"
  else bad "$name (wanted '$want')"; sed 's/^/      /' <<<"$out" | tail -40; fi
}

# The library: the public surface only, and no C library's malloc beside it.
if bash "$here/../api/check-exports.sh" "$liba" >/dev/null; then ok "musl libhpmalloc.a exports only the API"
else bad "musl libhpmalloc.a: $(bash "$here/../api/check-exports.sh" "$liba" | head -3 | tr '\n' ' ')"; fi
musl_malloc=$(nm "$bin/libc-own" | awk '{ print $NF }' | grep -xE '__libc_malloc_impl|__malloc_context|__simple_malloc|__malloc_donate|__malloc_alloc_meta|__expand_heap' | tr '\n' ' ')
if [ -z "$musl_malloc" ]; then ok "no musl malloc (mallocng, lite_malloc) in the static programs"
else bad "musl's own malloc linked in beside hpmalloc: $musl_malloc"; fi

run "musl's own allocations (public and __libc_* names)" ", 0 failed" "$bin/libc-own"

for m in 0 1 2; do
  run "API, hugetlb=$m" ", 0 failed" env HPT_REQUIRE_HPMALLOC=1 GLIBC_TUNABLES=glibc.malloc.hugetlb=$m "$bin/api/api-static" api-musl-hugetlb$m
done

glibc_tcache=glibc.malloc.tcache_count=7:glibc.malloc.tcache_max=1032
for t in "" -t; do
  where=${t:+, in a second thread}
  for m in 0 1 2; do
    run "misuse, glibc's tcache, hugetlb=$m$where" "allocator hpmalloc" \
      env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m:$glibc_tcache "$bin/hardening/misuse-static" $t
    run "misuse, own cache, hugetlb=$m$where" "allocator hpmalloc" \
      env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m "$bin/hardening/misuse-static" -a $t
  done
done
for m in 0 1 2; do
  for c in as tight; do
    run "RLIMIT_AS ($c), hugetlb=$m" "heap valid" env GLIBC_TUNABLES=glibc.malloc.hugetlb=$m "$bin/hardening/limits" $c
  done
done

# GLIBC_TUNABLES and MALLOC_*_ as on glibc: hpmalloc reads them itself.
run "hpmalloc_default_tunables mmap_threshold=4096 applies" ": ok" "$bin/static-tunables" mmap
run "GLIBC_TUNABLES overrides it" ": ok" env GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576 "$bin/static-tunables" heap
run "short form malloc.mmap_threshold too" ": ok" env GLIBC_TUNABLES=malloc.mmap_threshold=1048576 "$bin/static-tunables" heap
run "MALLOC_MMAP_THRESHOLD_ too" ": ok" env MALLOC_MMAP_THRESHOLD_=1048576 "$bin/static-tunables" heap

echo "--- huge-page coverage (tests/hugepages/run.sh, the programs linked)"
hout=$(BUILD=$MUSL_BUILD HPT_LINKED=1 bash "$here/../hugepages/run.sh" 2>&1); hrc=$?
echo "$hout" | sed 's/^/  /'
hsum=$(tail -n 1 <<<"$hout")
if [ $hrc -eq 0 ]; then ok "huge-page coverage: $hsum"; else bad "huge-page coverage: $hsum"; fi
skip=$(sed -n 's/.* \([0-9]*\) skipped.*/\1/p' <<<"$hsum")

mkdir -p "$BUILD/summary"
echo "musl: $pass passed, $fail failed, ${skip:-0} skipped (huge-page checks)" | tee "$BUILD/summary/musl.txt"
[ "$fail" -eq 0 ]
