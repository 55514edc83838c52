#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork() after two threads built a heap of small objects, under glibc
# hugetlb=0, glibc hugetlb=1 and hpmalloc hugetlb=1 (LD_PRELOAD),
# interleaved; prints a markdown table of each contender's median of its
# repetitions' median fork() time.                            MIT licence.
#   bench/run-forktime.sh [BUILD_DIR]          (make bench-fork runs it)
# Env: FORK_MIB (512), FORKS (9 forks a run), REPS (5 runs a contender).
set -u
build=${1:-build}
so=$(cd "$build/lib" 2>/dev/null && pwd)/libhpmalloc.so.0
bin=$build/bench/forktime
FORK_MIB=${FORK_MIB:-512}
FORKS=${FORKS:-9}
REPS=${REPS:-5}
[ -f "$so" ] || { echo "run-forktime: $so not built (make BUILD=$build all)"; exit 1; }
[ -x "$bin" ] || { echo "run-forktime: $bin not built (make BUILD=$build bench-fork)"; exit 1; }
tmp=$(mktemp -d /tmp/hpmalloc-fork.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD GLIBC_TUNABLES

names=(glibc-h0 glibc-h1 hpmalloc-h1)
run() { # contender
  case $1 in
    glibc-h0) env GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$bin" "$FORK_MIB" "$FORKS" ;;
    glibc-h1) env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$bin" "$FORK_MIB" "$FORKS" ;;
    hpmalloc-h1) env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 LD_PRELOAD="$so" "$bin" "$FORK_MIB" "$FORKS" ;;
  esac
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) cores, $(uname -r), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: bench/run-forktime.sh $build (FORK_MIB=$FORK_MIB FORKS=$FORKS REPS=$REPS)"
echo
for ((r = 0; r < REPS; r++)); do
  for ((i = 0; i < ${#names[@]}; i++)); do
    n=${names[$(( (i + r) % ${#names[@]} ))]}   # rotate who goes first
    run "$n" >>"$tmp/$n" || { echo "run-forktime: $n failed"; exit 1; }
  done
done
echo "| contender | fork() ms, median | fastest run | slowest run | huge pages (AnonHugePages) | RSS |"
echo "|---|---:|---:|---:|---:|---:|"
for n in "${names[@]}"; do
  printf '| %s | %.2f | %.2f | %.2f | %s MiB | %s MiB |\n' "$n" \
    "$(field fork_ms_median <"$tmp/$n" | median)" "$(field fork_ms_min <"$tmp/$n" | sort -g | head -1)" \
    "$(field fork_ms_max <"$tmp/$n" | sort -g | tail -1)" \
    "$(field anonhuge_mib <"$tmp/$n" | median)" "$(field rss_mib <"$tmp/$n" | median)"
done
