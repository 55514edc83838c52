#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Static linking: `gcc -static app.c libhpmalloc.a -lpthread` links without
# glibc's malloc.o, runs, and allocates from hpmalloc; an appliance's
# hpmalloc_default_tunables takes effect and the environment overrides it.
# Usage: static-link.sh BUILD_DIR [summary-file]             MIT licence.
set -u
build=${1:?usage: static-link.sh BUILD_DIR [SUMMARY]}
summary=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
liba=$(cd "$build/lib" && pwd)/libhpmalloc.a
CC=${CC:-gcc}
tmp=$(mktemp -d /tmp/hpmalloc-static.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset GLIBC_TUNABLES LD_PRELOAD MALLOC_MMAP_THRESHOLD_ MALLOC_TOP_PAD_

pass=0; fail=0
ok() { pass=$((pass+1)); echo "PASS $1"; }
ko() { fail=$((fail+1)); echo "FAIL $1"; }

# 1. link
if $CC -std=gnu11 -O1 -I"$top/include" -static -o "$tmp/static-app" "$here/static-app.c" "$liba" -lpthread \
     -Wl,-Map="$tmp/static-app.map" >"$tmp/link.log" 2>&1; then
  ok "gcc -static static-app.c libhpmalloc.a -lpthread links"
else
  ko "static link failed: $(grep -E 'multiple definition|undefined reference|error' "$tmp/link.log" | head -5 | tr '\n' '|')"
  echo "static-link: $pass passed, $fail failed"
  [ -n "$summary" ] && echo "static link: $pass passed, $fail failed" >>"$summary"
  exit 1
fi

# 2. glibc's malloc object was not pulled in
if grep -qE 'libc\.a\(malloc\.o\)' "$tmp/static-app.map"; then
  ko "libc.a(malloc.o) was linked in; pulled by: $(grep -B1 -E 'libc\.a\(malloc\.o\)' "$tmp/static-app.map" | head -4 | tr '\n' '|')"
else
  ok "libc.a(malloc.o) not in the link map"
fi
# glibc-internal malloc symbols (unless hpmalloc's own archive defines one by that name)
own=$(nm --defined-only "$liba" 2>/dev/null | awk 'NF >= 3 { print $3 }' | sort -u)
found=()
for s in _int_malloc _int_free _int_realloc _int_memalign malloc_consolidate sysmalloc systrim tcache_init \
         ptmalloc_init main_arena __malloc_initialized; do
  grep -qx -- "$s" <<<"$own" && continue
  nm "$tmp/static-app" 2>/dev/null | awk '{ print $NF }' | grep -qx -- "$s" && found+=("$s")
done
if [ ${#found[@]} -eq 0 ]; then ok "no glibc malloc internals in the static binary"
else ko "glibc malloc internals in the static binary: ${found[*]}"; fi

# 3. it runs on hpmalloc
if out=$(timeout 60 "$tmp/static-app" 2>&1); then ok "static-app runs: $out"
else ko "static-app failed (status $?): $(echo "$out" | tr '\n' '|')"; fi

# 4. hpmalloc_default_tunables in a static appliance, and the environment wins
if $CC -std=gnu11 -O1 -I"$top/include" -DHPT_DEFAULTS -static -o "$tmp/static-tunables" \
     "$here/static-tunables.c" "$liba" -lpthread >"$tmp/link2.log" 2>&1; then
  t() { # label expect env...
    local label=$1 want=$2; shift 2
    local out
    if out=$(env "$@" timeout 60 "$tmp/static-tunables" "$want" 2>&1); then ok "$label: $out"
    else ko "$label: $(echo "$out" | tr '\n' '|')"; fi
  }
  t "hpmalloc_default_tunables mmap_threshold=4096 applies" mmap
  t "GLIBC_TUNABLES overrides hpmalloc_default_tunables" heap GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576
  t "short form malloc.mmap_threshold overrides too" heap GLIBC_TUNABLES=malloc.mmap_threshold=1048576
  t "MALLOC_MMAP_THRESHOLD_ overrides hpmalloc_default_tunables" heap MALLOC_MMAP_THRESHOLD_=1048576
else
  ko "static link of static-tunables.c failed: $(head -5 "$tmp/link2.log" | tr '\n' '|')"
fi
# the same expectations hold on glibc (checks the test, not hpmalloc)
if $CC -std=gnu11 -O1 -I"$top/include" -o "$tmp/glibc-tunables" "$here/static-tunables.c" >/dev/null 2>&1 &&
   GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096:glibc.malloc.top_pad=0 "$tmp/glibc-tunables" mmap >/dev/null &&
   GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576:glibc.malloc.top_pad=0 "$tmp/glibc-tunables" heap >/dev/null; then
  ok "reference: glibc agrees with the expectations"
else
  ko "reference: glibc disagrees with static-tunables' expectations (test bug)"
fi

echo "static-link: $pass passed, $fail failed"
[ -n "$summary" ] && echo "static link: $pass passed, $fail failed" >>"$summary"
[ $fail -eq 0 ]
