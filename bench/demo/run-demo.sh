#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: the TLB-heavy workload under glibc and hpmalloc, side by side.
# Runs every configuration REPS times, interleaved (timings on a shared
# machine are noisy), and prints medians.
#   DEMO_MB (1024)  heap size   DEMO_THREADS (2)   DEMO_READS (20000000)   DEMO_REPS (3)
#   DEMO_CONFIGS    allocator:mode list (default: glibc and hpmalloc, modes 0 and 1,
#                   and 2 when the pool can hold the heap); allocators: glibc,
#                   hpmalloc, jemalloc (mode "thp" = MALLOC_CONF=thp:always), mimalloc,
#                   tcmalloc (their mode is ignored unless stated)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-build}
lib="$top/$BUILD/lib/libhpmalloc.so"
bin="$top/$BUILD/bench/tlbdemo"
MB=${DEMO_MB:-1024}; T=${DEMO_THREADS:-2}; READS=${DEMO_READS:-20000000}; REPS=${DEMO_REPS:-3}
[ -x "$bin" ] && [ -f "$lib" ] || { echo "demo: build first (make demo does)" >&2; exit 1; }

hsz_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
if [ -n "${DEMO_CONFIGS:-}" ]; then
  read -r -a configs <<<"$DEMO_CONFIGS"
else
  configs=("glibc:0" "glibc:1" "hpmalloc:0" "hpmalloc:1")
  free_pages=$(cat /sys/kernel/mm/hugepages/hugepages-${hsz_kb}kB/free_hugepages 2>/dev/null || echo 0)
  need_pages=$(( (MB * 13 / 10 * 1024) / ${hsz_kb:-2048} ))
  if [ "${free_pages:-0}" -ge "$need_pages" ]; then
    configs+=("glibc:2" "hpmalloc:2")
  else
    echo "demo: hugetlb mode 2 skipped: the pool has ${free_pages:-0} free ${hsz_kb} kB pages, $need_pages needed"
    echo "      (as root: echo $need_pages > /proc/sys/vm/nr_hugepages, and put it back afterwards)"
  fi
fi
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null)
preload_of() { # allocator -> the library to preload ("" for glibc)
  case "$1" in
    glibc) echo "" ;;
    hpmalloc) echo "$lib" ;;
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    mimalloc) echo "$libdir/libmimalloc.so.2" ;;
    tcmalloc) echo "$libdir/libtcmalloc.so.4" ;;
    *) echo "demo: unknown allocator $1" >&2; exit 2 ;;
  esac
}
for c in "${configs[@]}"; do
  p=$(preload_of "${c%%:*}")
  [ -z "$p" ] || [ -f "$p" ] || { echo "demo: ${c%%:*} is not installed ($p); bash build-aux/deps.sh bench installs it" >&2; exit 1; }
done
echo "demo: ${MB} MiB of 100-byte objects built by $T threads, $READS random reads; $REPS interleaved runs each, medians"
echo "      THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo absent)"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for rep in $(seq 1 "$REPS"); do
  for c in "${configs[@]}"; do
    alloc=${c%%:*}; mode=${c##*:}
    pre=$(preload_of "$alloc"); conf=""; tun=""
    case "$mode" in thp) conf="thp:always,metadata_thp:always" ;; [0-9]*) tun="glibc.malloc.hugetlb=$mode" ;; esac
    if ! GLIBC_TUNABLES=$tun MALLOC_CONF=$conf LD_PRELOAD=$pre "$bin" "$MB" "$T" "$READS" >>"$tmp/$alloc-$mode" 2>"$tmp/err"; then
      echo "demo: $alloc hugetlb=$mode failed:"; cat "$tmp/err"; exit 1
    fi
  done
done

median() { # file key
  grep -o "$2=[0-9.]*" "$1" | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
base_cfg="${configs[0]}"
base_read=$(median "$tmp/${base_cfg%%:*}-${base_cfg##*:}" read_s)
printf '\n%-22s %9s %9s %9s %9s %9s %8s %12s\n' "allocator" "build s" "read s" "ns/read" "free s" "RSS MB" "huge %" "read speedup"
for c in "${configs[@]}"; do
  f="$tmp/${c%%:*}-${c##*:}"
  r=$(median "$f" read_s)
  printf '%-22s %9s %9s %9s %9s %9s %8s %11.2fx\n' "${c%%:*} ${c##*:}" "$(median "$f" build_s)" "$r" \
    "$(median "$f" ns_per_read)" "$(median "$f" free_s)" "$(median "$f" rss_mb)" "$(median "$f" huge_pct)" \
    "$(awk -v a="$base_read" -v b="$r" 'BEGIN {print (b > 0 ? a / b : 0)}')"
done
echo
echo "speedup: ${configs[0]} read time / this read time (the number after the allocator is glibc.malloc.hugetlb, or jemalloc's thp:always).  huge %: (AnonHugePages + HugetlbPages) / (Rss + HugetlbPages)."
