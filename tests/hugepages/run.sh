#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-hugepages: huge-page coverage of every path, read from the kernel's
# accounting (/proc/self/smaps_rollup, /proc/self/status, /proc/self/maps).
#   mode 1 (THP): heaps built by the main thread and by two threads, 3 MiB
#     blocks, and a block grown by realloc, each >= the share below;
#   mode 2 (hugetlbfs): with a pool (root: set /proc/sys/vm/nr_hugepages,
#     restored on exit) the heap is on hugetlb pages in a handful of
#     mappings; with a pool too small for the heap, every allocation still
#     succeeds, the rest lands on THP, and the fallbacks are counted;
#   the statistics (issue 13, item 4): on a 200 MB heap built by two
#     threads, the huge-page bytes HPMALLOC_STATS=1 reports at exit agree,
#     within one huge page, with what smaps says of the heap's mappings:
#     AnonHugePages in mode 1, Private_Hugetlb + Shared_Hugetlb in mode 2
#     (with a pool of its own, as above).
#   an empty root: a static program chrooted into a directory that holds
#     only itself (no /proc, no /sys) builds a 200 MB heap in modes 0, 1
#     and 2; in mode 1 the parent reads its smaps_rollup from outside:
#     >= 95% AnonHugePages; modes 0 and 2 allocate correctly.
# Skips, with the reason, what this machine cannot do.
# HPT_LINKED=1: the programs under $BUILD are linked with hpmalloc (the
# musl suite's static ones) and run without LD_PRELOAD.
set -u
BUILD=${BUILD:-build}
lib=$PWD/$BUILD/lib/libhpmalloc.so
preload=(LD_PRELOAD="$lib")
[ "${HPT_LINKED:-0}" = 1 ] && preload=()
bin=$PWD/$BUILD/tests/hugepages/coverage
pass=0; fail=0; skip=0
ok()   { echo "PASS  $*"; pass=$((pass+1)); }
bad()  { echo "FAIL  $*"; fail=$((fail+1)); }
skp()  { echo "SKIP  $*"; skip=$((skip+1)); }
field() { sed -n "s/.*\b$1=\(-\?[0-9]*\).*/\1/p" <<<"$2"; }

run() { # mode args...
  local mode=$1; shift
  env GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode "${preload[@]}" "$bin" "$@"
}

# The statistics against smaps.  The report's "total" row: a 10-column
# label, then 12-column cells; cell 5 is "THP backed", cell 7 "hugetlb
# backed" (malloc/stats.c).  Prints the cell in kB, or "unknown".
report_kb() { # cell report
  awk -v cell="$1" '/^total / { v = substr($0, 11 + cell * 12, 12)
    if (v ~ /\?/) { print "unknown"; exit }
    n = v + 0; u = v; sub(/^ *[0-9.]+ */, "", u)
    m = u == "KiB" ? 1 : u == "MiB" ? 1024 : u == "GiB" ? 1048576 : u == "B" ? 1 / 1024 : 0
    printf "%d\n", n * m; exit }' <<<"$2"
}
backed_bin=$PWD/$BUILD/tests/hugepages/backed
stats_check() { # mode cell smaps-key tolerance-kb what
  local mode=$1 cell=$2 key=$3 tol=$4 what=$5 rep out
  rep=$(mktemp)
  out=$(env HPMALLOC_STATS=1 GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode "${preload[@]}" "$backed_bin" 200 2 2>"$rep") ||
    { bad "statistics hugetlb=$mode: exited $?"; rm -f "$rep"; return; }
  local kern rkb; kern=$(field "$key" "$out"); rkb=$(report_kb "$cell" "$(cat "$rep")")
  local d=$(( ${rkb:-0} - ${kern:-0} )); d=${d#-}
  if [ -z "$rkb" ] || [ "$rkb" = unknown ]; then bad "statistics hugetlb=$mode: no $what figure in the report: $(cat "$rep")"
  elif [ "${kern:-0}" -lt $((150 * 1024)) ]; then bad "statistics hugetlb=$mode: smaps has only ${kern} kB of $what on the 200 MB heap: $out"
  elif [ "$d" -le "$tol" ]; then ok "statistics hugetlb=$mode: $what backed ${rkb} kB in HPMALLOC_STATS=1's report, ${kern} kB in smaps ($key of the heap's mappings), within ${tol} kB: $out"
  else bad "statistics hugetlb=$mode: $what backed ${rkb} kB in the report, ${kern} kB in smaps, more than ${tol} kB apart: $out"; cat "$rep"; fi
  rm -f "$rep"
}

expect_pct() { # min mode args...
  local min=$1; shift
  local out; out=$(run "$@") || { bad "hugetlb=$1 ${*:2}: exited $?"; return; }
  local pct; pct=$(field pct "$out")
  if [ "${pct:-0}" -ge "$min" ]; then ok "hugetlb=$1 ${*:2}: ${pct}% on huge pages (>= $min%): $out"
  else bad "hugetlb=$1 ${*:2}: ${pct}% on huge pages, wanted >= $min%: $out"; fi
}

thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo absent)
case "$thp" in
  *"[always]"*|*"[madvise]"*)
    expect_pct 95 1 small 300 0
    expect_pct 95 1 small 300 2
    expect_pct 90 1 large 300
    expect_pct 90 1 grow 128
    expect_pct 80 0 switch 200     # built on base pages, then switched to THP: collapsed
    pmd_kb=$(( $(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null || echo 2097152) / 1024 ))
    stats_check 1 5 smaps_thp_kb "$pmd_kb" "THP" ;;
  *) skp "mode 1: THP is '$thp' here (needs madvise or always)" ;;
esac

# x86_64 places heaps on 1 GiB boundaries in huge-page modes (sysdeps/x86_64)
if [ "$(uname -m)" = x86_64 ]; then
  for m in 1 2; do
    out=$(run $m place 0)
    if [ "$(field gib_aligned "$out")" = 1 ]; then ok "hugetlb=$m: the main heap starts on a 1 GiB boundary: $out"
    else bad "hugetlb=$m: the main heap is not 1 GiB aligned: $out"; fi
  done
else
  skp "1 GiB heap alignment: x86_64 only (this is $(uname -m))"
fi

hsz_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
pool=/proc/sys/vm/nr_hugepages
if [ "$(id -u)" != 0 ] || [ ! -w "$pool" ] || [ -z "$hsz_kb" ]; then
  skp "mode 2: needs root to size the hugetlb pool ($pool)"
else
  old=$(cat "$pool")
  trap 'echo "$old" > "$pool"' EXIT
  # The pool is machine-wide: pages others hold or have reserved stay
  # theirs; the sizes below are what this test gets on top of them.
  meminfo() { awk -v k="$1:" '$1 == k {print $2}' /proc/meminfo; }
  held=$(( $(meminfo HugePages_Total) - $(meminfo HugePages_Free) + $(meminfo HugePages_Rsvd) ))
  avail() { echo $(( $(meminfo HugePages_Free) - $(meminfo HugePages_Rsvd) )); }
  stats_want=$(( old + (320 * 1024 + hsz_kb - 1) / hsz_kb ))   # a 200 MB heap in two threads' arenas, and room
  echo "$stats_want" > "$pool"
  if [ "$(cat "$pool")" -lt "$stats_want" ]; then
    skp "statistics hugetlb=2: the kernel gave $(cat "$pool") of $stats_want huge pages (memory fragmented)"
  else
    stats_check 2 7 smaps_hugetlb_kb "$hsz_kb" "hugetlb"
  fi
  want=$(( old + 200 * 1024 / hsz_kb ))         # room for a 200 MiB heap
  echo "$want" > "$pool"
  if [ "$(cat "$pool")" -lt "$want" ]; then
    skp "mode 2: the kernel gave $(cat "$pool") of $want huge pages (memory fragmented)"
  else
    out=$(run 2 small 150 2) || bad "hugetlb=2 small 150 2: exited $?"
    htlb=$(field hugetlb_kb "$out"); maps=$(field hugetlb_maps "$out"); pct=$(field pct "$out")
    if [ "${pct:-0}" -ge 95 ] && [ "${htlb:-0}" -ge $((150 * 1024)) ] && [ "${maps:-99}" -le 8 ]; then
      ok "hugetlb=2 with a pool: ${htlb} kB on hugetlb pages in $maps mappings: $out"
    else
      bad "hugetlb=2 with a pool: wanted >= 150 MiB on hugetlb pages in <= 8 mappings: $out"
    fi
    expect_pct 95 2 large 150
    # a dry pool: 40 MiB of pages for a 200 MiB heap
    dry=$(( 40 * 1024 / hsz_kb ))
    echo $(( held + dry )) > "$pool"
    if [ "$(avail)" -gt "$dry" ]; then
      skp "hugetlb=2 dry pool: another process's pages could not be kept out ($(avail) free of $dry wanted)"
    else
    out=$(run 2 small 200 2) || bad "hugetlb=2 dry pool: an allocation failed (exit $?)"
    fb=$(field fallbacks "$out"); pct=$(field pct "$out")
    if [ "${fb:-0}" -ge 1 ] && [ "${pct:-0}" -ge 90 ]; then
      ok "hugetlb=2 with a dry pool: all allocations served, $fb fallbacks counted, ${pct}% huge: $out"
    else
      bad "hugetlb=2 with a dry pool: wanted fallbacks >= 1 and >= 90% huge: $out"
    fi
    fi
  fi
fi
# --- a static program in an empty root: no /proc, no /sys ---------------------
# hpmalloc cannot read the kernel's files there and asks the system calls
# (MADV_HUGEPAGE on a probe mapping, MAP_HUGETLB of the size); the parent
# reads the child's smaps_rollup from outside the root.
er_bin=$PWD/$BUILD/tests/hugepages/emptyroot
if [ "$(id -u)" != 0 ] || ! command -v chroot >/dev/null; then
  skp "empty root: needs root and chroot(8) to run a program in an empty root"
else
  er_root=$(mktemp -d /tmp/hpmalloc-root.XXXXXX)   # holds only the binary
  er_io=$(mktemp -d /tmp/hpmalloc-rootio.XXXXXX)   # the pipes, outside the root
  cp "$er_bin" "$er_root/emptyroot"
  mkfifo "$er_io/in" "$er_io/out"
  for m in 0 1 2; do
    GLIBC_TUNABLES=glibc.malloc.hugetlb=$m HPMALLOC_VERBOSE=1 chroot "$er_root" /emptyroot 200 \
      <"$er_io/in" >"$er_io/out" 2>"$er_io/err" &
    er_pid=$!
    exec 7>"$er_io/in"
    er_word=; er_cpid=
    read -r -t 300 er_word er_cpid <"$er_io/out"
    er_anon=$(awk '/^Anonymous:/ {print $2}' "/proc/$er_pid/smaps_rollup" 2>/dev/null)
    er_ahp=$(awk '/^AnonHugePages:/ {print $2}' "/proc/$er_pid/smaps_rollup" 2>/dev/null)
    er_htlb=$(awk '/^(Private|Shared)_Hugetlb:/ {n += $2} END {print n + 0}' "/proc/$er_pid/smaps_rollup" 2>/dev/null)
    exec 7>&-
    wait "$er_pid"; er_rc=$?
    er_line=$(head -n 1 "$er_io/err")
    er_pct=$(( ${er_ahp:-0} * 100 / (${er_anon:-0} > 0 ? ${er_anon:-1} : 1) ))
    er_what="empty root, hugetlb=$m: ${er_anon:-?} kB anonymous, ${er_ahp:-?} kB AnonHugePages (${er_pct}%), ${er_htlb:-?} kB hugetlb"
    if [ "$er_word" != ready ] || [ "$er_cpid" != "$er_pid" ] || [ "$er_rc" != 0 ]; then
      bad "$er_what: the program failed (said '$er_word $er_cpid' as pid $er_pid, exit $er_rc): $(cat "$er_io/err")"
    elif [ $(( ${er_anon:-0} + ${er_htlb:-0} )) -lt $((190 * 1024)) ]; then
      bad "$er_what: the 200 MB heap was not built"
    elif [ -e "$er_root/proc" ] || [ "$(ls "$er_root")" != emptyroot ]; then
      bad "$er_what: the root was not empty: $(ls "$er_root")"
    elif [ $m = 0 ]; then
      ok "$er_what; $er_line"
    elif [[ "$er_line" != *"/sys unreadable"* ]]; then
      bad "$er_what: the verbose line does not say /sys was unreadable: $er_line"
    elif [ $m = 2 ]; then
      ok "$er_what, every block intact (the pool may be empty: falls back); $er_line"
    elif grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
      skp "empty root, hugetlb=1: THP is disabled on this machine (enabled=never), nothing to measure; $er_line"
    elif [ "$er_pct" -ge 95 ]; then
      ok "$er_what >= 95%; $er_line"
    else
      bad "$er_what: wanted >= 95% on huge pages; $er_line"
    fi
  done
  rm -rf "$er_root" "$er_io"
fi

mkdir -p "$BUILD/summary"
echo "hugepages: $pass passed, $fail failed, $skip skipped" | tee "$BUILD/summary/hugepages.txt"
[ "$fail" -eq 0 ]
