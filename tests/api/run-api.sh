#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the API tests in every way hpmalloc is used:
#   exports    nm -D of libhpmalloc.so lists only the API
#   exports-static  nm -g --defined-only of libhpmalloc.a lists only the
#              API, the same names as the shared library
#   dyn        api-dyn, linked with -lhpmalloc (rpath)
#   static     api-static, linked -static with libhpmalloc.a
#   namesake   a static program defining every internal name of the library
#   preload    api-plain under LD_PRELOAD=libhpmalloc.so, hugetlb 0, 1 and 2
#   glibc      api-plain on glibc's own malloc: a check of the tests themselves
# Usage: run-api.sh BUILD_DIR                              MIT licence.
set -u
build=${1:?usage: run-api.sh BUILD_DIR}
bin=$build/tests/api
so=$(cd "$build/lib" && pwd)/libhpmalloc.so
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/hpmalloc-api.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$build/summary"
TIMEOUT=${HPT_TIMEOUT:-300}

suites_pass=0; suites_fail=0; lines=()

record() { # name rc
  if [ "$2" -eq 0 ]; then suites_pass=$((suites_pass+1)); lines+=("  PASS $1")
  else suites_fail=$((suites_fail+1)); lines+=("  FAIL $1"); fi
}

# run NAME ENV... -- CMD...
run() {
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "--- api: $name"
  local log=$tmp/$name.log
  env "${envs[@]}" timeout -k 10 "$TIMEOUT" "$@" >"$log" 2>&1
  local rc=$?
  # Show failures and the closing line; the full log only when something broke.
  if [ $rc -ne 0 ]; then
    cat "$log"
    [ $rc -eq 124 ] && echo "api: $name timed out after ${TIMEOUT}s"
    echo "api: $name exited with status $rc"
  else
    grep -E '^(not ok|#   FAILED|# )|passed, ' "$log"
  fi
  grep -q ' passed, ' "$log" || { echo "api: $name printed no closing line"; rc=1; }
  record "$name" $rc
  return $rc
}

echo "--- api: exports"
bash "$here/check-exports.sh" "$build/lib/libhpmalloc.so"
record exports $?
echo "--- api: exports-static"
liba=$build/lib/libhpmalloc.a
bash "$here/check-exports.sh" "$liba"
rc=$?
so_syms=$(nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
a_syms=$(nm -g --defined-only "$liba" | awk 'NF == 3 { print $3 }' | sort -u)
if [ "$so_syms" != "$a_syms" ]; then
  echo "api: libhpmalloc.so and libhpmalloc.a export different names:"
  diff <(echo "$so_syms") <(echo "$a_syms") | grep '^[<>]'
  rc=1
fi
record exports-static $rc

run dyn HPT_REQUIRE_HPMALLOC=1 -- "$bin/api-dyn" api-dyn
run static HPT_REQUIRE_HPMALLOC=1 -- "$bin/api-static" api-static
run namesake -- "$bin/namesake"
for mode in 0 1 2; do
  run "preload-hugetlb$mode" HPT_REQUIRE_HPMALLOC=1 LD_PRELOAD="$so" \
    GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode HPT_XML_OUT="$tmp/info$mode.xml" -- "$bin/api-plain" "api-preload-hugetlb$mode"
  # The XML malloc_info wrote must satisfy a real parser too.
  if [ -s "$tmp/info$mode.xml" ]; then
    if python3 - "$tmp/info$mode.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "malloc" and root.get("version") == "1", (root.tag, root.attrib)
assert root.find("heap") is not None, "no <heap>"
EOF
    then record "malloc_info-xml-hugetlb$mode" 0
    else echo "api: malloc_info output of preload-hugetlb$mode rejected by xml.etree"; record "malloc_info-xml-hugetlb$mode" 1
    fi
  else
    echo "api: malloc_info output of preload-hugetlb$mode missing"; record "malloc_info-xml-hugetlb$mode" 1
  fi
done
run glibc-reference -- "$bin/api-plain" api-glibc

# one line for make check's summary: runs of the API test
echo "api-runs: $suites_pass passed, $suites_fail failed" >"$build/summary/api.txt"
echo "=== api runs"
printf '%s\n' "${lines[@]}"
echo "api: $suites_pass passed, $suites_fail failed"
[ $suites_fail -eq 0 ]
