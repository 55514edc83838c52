#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check what a library exports -- the dynamic symbol table of libhpmalloc.so,
# or the global definitions of libhpmalloc.a (nm -g --defined-only): every
# function of the malloc API and hpmalloc's extensions is there, and nothing
# else is
# (glibc's internal aliases are tolerated: __libc_*, __malloc_*, and the
# __NAME aliases glibc 2.36's malloc.c defines: __malloc __free __calloc
# __realloc __memalign __valloc __pvalloc __mallinfo __mallinfo2 __mallopt
# __posix_memalign).
# Usage: check-exports.sh path/to/libhpmalloc.so|libhpmalloc.a    MIT licence.
set -u
so=${1:?usage: check-exports.sh LIBHPMALLOC_SO|LIBHPMALLOC_A}
[ -f "$so" ] || { echo "check-exports: $so not found"; exit 1; }

api="malloc free calloc realloc reallocarray memalign posix_memalign aligned_alloc valloc pvalloc
malloc_usable_size mallopt mallinfo mallinfo2 malloc_trim malloc_stats malloc_info free_sized
free_aligned_sized hpmalloc_version hpmalloc_stats hpmalloc_check_heap"

# "ADDR TYPE NAME[@[@]VERSION]"; version-node symbols (type A) are not code.
case $so in
  *.a) syms=$(nm -g --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort -u) ;;
  *) syms=$(nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u) ;;
esac
fail=0
for f in $api; do
  if ! grep -qx -- "$f" <<<"$syms"; then
    echo "check-exports: missing: $f"
    fail=1
  fi
done
extra=()
while read -r s; do
  [ -n "$s" ] || continue
  case " $(echo $api) " in *" $s "*) continue ;; esac
  case "$s" in __libc_* | __malloc_* | hpmalloc_*) continue ;; esac
  case "$s" in __malloc | __free | __calloc | __realloc | __memalign | __valloc | __pvalloc | __mallinfo | \
    __mallinfo2 | __mallopt | __posix_memalign) continue ;; esac
  extra+=("$s")
done <<<"$syms"
if [ ${#extra[@]} -gt 0 ]; then
  echo "check-exports: exported but not part of the API: ${extra[*]}"
  fail=1
fi
n=$(wc -l <<<"$syms")
if [ $fail -eq 0 ]; then
  echo "check-exports: $(basename "$so"): $n exported symbols, all part of the API"
  echo "exports: 1 passed, 0 failed"
else
  echo "exports: 0 passed, 1 failed"
fi
exit $fail
