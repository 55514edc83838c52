#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What linking hpmalloc adds to a static program: a hello-world that
# mallocs, linked -static with and without libhpmalloc.a, stripped, for
# glibc (gcc) and musl (musl-gcc, if present).  Prints a Markdown table
# of the stripped file sizes and the text/data/bss of each (size -A's
# totals).  Builds the libraries first (make, make musl).
# Usage: bench/static-size.sh [BUILD]                        MIT licence.
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d /tmp/hpmalloc-size.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/hello.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  char *p = malloc(64 + (size_t)argc);
  if (!p) return 1;
  strcpy(p, "hello");
  puts(p);
  free(p);
  (void)argv;
  return 0;
}
C
make --no-print-directory -s BUILD="$build" "$build/lib/libhpmalloc.a" >/dev/null
libs="glibc:gcc:$build/lib/libhpmalloc.a"
if command -v musl-gcc >/dev/null; then
  make --no-print-directory -s BUILD="$build" musl >/dev/null
  libs="$libs musl:musl-gcc:$build/musl/lib/libhpmalloc.a"
fi
sizes() { # file -> "bytes text data bss"
  local f=$1
  echo "$(stat -c %s "$f") $(size -B "$f" | awk 'NR == 2 { print $1, $2, $3 }')"
}
echo "| C library | program | stripped bytes | text | data | bss |"
echo "|---|---|---:|---:|---:|---:|"
for l in $libs; do
  IFS=: read -r name cc liba <<<"$l"
  $cc -O2 -static -o "$tmp/plain-$name" "$tmp/hello.c"
  $cc -O2 -static -o "$tmp/hp-$name" "$tmp/hello.c" "$liba" -lpthread
  strip "$tmp/plain-$name" "$tmp/hp-$name"
  read -r pb pt pd pz <<<"$(sizes "$tmp/plain-$name")"
  read -r hb ht hd hz <<<"$(sizes "$tmp/hp-$name")"
  echo "| $name | hello, $name's malloc | $pb | $pt | $pd | $pz |"
  echo "| $name | hello + libhpmalloc.a | $hb | $ht | $hd | $hz |"
  echo "| $name | **added by hpmalloc** | **$((hb - pb))** | $((ht - pt)) | $((hd - pd)) | $((hz - pz)) |"
done
