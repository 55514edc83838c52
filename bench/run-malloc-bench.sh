#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Malloc microbenchmarks, glibc vs hpmalloc (LD_PRELOAD), interleaved.
#   bench/run-malloc-bench.sh [BUILD_DIR]      (make bench runs it)
# Env: REPS (5), SMALL_N (50000000 mallocs), CHURN_OPS (10000000 per thread),
#      CALLGRIND_N (1000000; 0 skips callgrind), HUGETLB (unset: default mode).
# Prints, per benchmark, the median wall time of each allocator and the ratio
# glibc/hpmalloc (above 1: hpmalloc is faster), then callgrind's instruction
# counts of malloc-small.                                      MIT licence.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
so=$(cd "$build/lib" 2>/dev/null && pwd)/libhpmalloc.so
bin=$build/bench
REPS=${REPS:-5}
SMALL_N=${SMALL_N:-50000000}
CHURN_OPS=${CHURN_OPS:-10000000}
CALLGRIND_N=${CALLGRIND_N:-1000000}
[ -f "$so" ] || { echo "run-malloc-bench: $so not built (make BUILD=$build all)"; exit 1; }
for b in malloc-small malloc-churn; do
  [ -x "$bin/$b" ] || { echo "run-malloc-bench: $bin/$b not built (make BUILD=$build bench)"; exit 1; }
done
tmp=$(mktemp -d /tmp/hpmalloc-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD
HPENV=(LD_PRELOAD="$so")
[ -n "${HUGETLB:-}" ] && HPENV+=(GLIBC_TUNABLES=glibc.malloc.hugetlb=$HUGETLB)

# total_s from a RESULT line
result() { sed -n 's/^RESULT .* total_s=\([0-9.]*\).*/\1/p' "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "hpmalloc: $so ${HUGETLB:+(hugetlb=$HUGETLB)}"
echo

run_pair() { # name args...
  local name=$1; shift
  : >"$tmp/$name.glibc"; : >"$tmp/$name.hpm"
  for ((r = 1; r <= REPS; r++)); do
    # alternate which goes first, so drift in the machine's load hits both
    if ((r % 2)); then order="glibc hpm"; else order="hpm glibc"; fi
    for who in $order; do
      if [ $who = glibc ]; then "$bin/$name" "$@" >"$tmp/out" 2>&1
      else env "${HPENV[@]}" "$bin/$name" "$@" >"$tmp/out" 2>&1; fi
      rc=$?
      t=$(result "$tmp/out")
      if [ $rc -ne 0 ] || [ -z "$t" ]; then echo "$name under $who failed (status $rc):"; cat "$tmp/out"; return 1; fi
      echo "$t" >>"$tmp/$name.$who"
      printf '  %-13s rep %d %-6s %8.3f s\n' "$name" "$r" "$who" "$t"
    done
  done
  local g h
  g=$(median <"$tmp/$name.glibc"); h=$(median <"$tmp/$name.hpm")
  ratio=$(awk -v g="$g" -v h="$h" 'BEGIN { printf "%.2f", g / h }')
  summary+=("$(printf '%-13s glibc %8.3f s   hpmalloc %8.3f s   glibc/hpmalloc %s' "$name" "$g" "$h" "$ratio")")
}

summary=()
run_pair malloc-small "$SMALL_N"
run_pair malloc-churn "$CHURN_OPS"
echo
echo "medians of $REPS interleaved runs (wall clock):"
printf '  %s\n' "${summary[@]}"

if [ "$CALLGRIND_N" != 0 ] && command -v valgrind >/dev/null; then
  echo
  echo "callgrind, malloc-small, $CALLGRIND_N mallocs (instructions; per op = (Ir(N) - Ir(0)) / N, start-up not counted):"
  # callgrind does not replace malloc, so hpmalloc runs as it would natively.
  cg() { # who n pattern
    local out=$tmp/cg.$1.$2.$3
    if [ "$1" = glibc ]; then valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin/malloc-small" "$2" "$3" >"$out" 2>&1
    else env "${HPENV[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin/malloc-small" "$2" "$3" >"$out" 2>&1; fi
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out"
  }
  ig0=$(cg glibc 0 both); ih0=$(cg hpm 0 both)
  for pattern in both lifo batch; do
    ig=$(cg glibc "$CALLGRIND_N" $pattern); ih=$(cg hpm "$CALLGRIND_N" $pattern)
    if [ -n "$ig" ] && [ -n "$ih" ] && [ -n "$ig0" ] && [ -n "$ih0" ]; then
      awk -v p=$pattern -v g="$ig" -v g0="$ig0" -v h="$ih" -v h0="$ih0" -v n="$CALLGRIND_N" 'BEGIN {
        printf "  %-5s glibc %7.1f Ir/op   hpmalloc %7.1f Ir/op   glibc/hpmalloc %.2f\n", p, (g - g0) / n, (h - h0) / n, (g - g0) / (h - h0) }'
    else
      echo "  callgrind failed:"; tail -5 "$tmp"/cg.*
    fi
  done
  awk -v g="$ig0" -v h="$ih0" 'BEGIN { printf "  start-up: glibc %d Ir, hpmalloc %d Ir\n", g, h }' 
fi
